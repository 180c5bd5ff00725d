//! Data blocks kept inside pages (`TableOptions::block_align`, docs/format.md#aligned-data-blocks).
//!
//! A direct read transfers every 4 KiB page a block touches, so a 2.3 KiB block that straddles a
//! page boundary costs an 8 KiB device read. With alignment the builder cuts each data block
//! where its framed bytes are predicted to fill the room left in the current page, and when a
//! block still does not fit (the prediction erred), zero padding moves it to the next page.
//! Blocks thus pack pages: two LZ4 blocks per page where one is 4 KiB of raw entries and the
//! next takes the rest, with little padding. Invariant: a data block whose framed size is at
//! most a page lies within one page. Readers follow block handles only, so padding between
//! blocks changes nothing for them.

use crate::sst::format::BLOCK_TRAILER_LEN;
use crate::storage::direct::ALIGN as PAGE;

/// Predicts a data block's framed size from its raw size, to cut blocks at page ends.
pub(super) struct PageFit {
    /// Framed bytes per raw byte of the last data block, with a margin when compressed: the
    /// next block is assumed to compress like the last one did.
    ratio: f64,
    /// Blocks are stored raw: a framed block is its raw bytes plus the trailer, exactly.
    exact: bool,
    /// The smallest raw size worth a block of its own (a quarter of `block_size`): room in a
    /// page too small for one is left as padding and the next block starts a new page.
    min_raw: usize,
}

/// Margin on a compressed block's predicted size: LZ4 blocks of one table vary by a few
/// percent in ratio, and an overflow costs the rest of the page in padding.
const MARGIN: f64 = 1.03;

impl PageFit {
    pub fn new(compressed: bool, block_size: usize) -> PageFit {
        PageFit { ratio: 1.0, exact: !compressed, min_raw: block_size / 4 }
    }

    /// Bytes the next block should fit in when the table has `offset` bytes: the rest of the
    /// current page, or a whole page when the rest is too small to be worth a block.
    fn room(&self, offset: u64) -> usize {
        let rest = PAGE - (offset % PAGE as u64) as usize;
        let raw = rest.saturating_sub(BLOCK_TRAILER_LEN) as f64 / self.ratio;
        if rest < PAGE && (raw as usize) < self.min_raw {
            PAGE
        } else {
            rest
        }
    }

    /// Whether a block of `raw` raw bytes (the current block with the next entry) would
    /// probably not fit the room at `offset`: the block is then cut before that entry.
    pub fn should_cut(&self, offset: u64, raw: usize) -> bool {
        (raw as f64 * self.ratio).ceil() as usize + BLOCK_TRAILER_LEN > self.room(offset)
    }

    /// Zero bytes to write before a framed block of `framed` bytes at `offset` so it lies
    /// within one page: none when it fits the rest of the page or is larger than a page.
    pub fn padding_before(offset: u64, framed: usize) -> usize {
        let rest = PAGE - (offset % PAGE as u64) as usize;
        if framed <= rest || framed > PAGE {
            0
        } else {
            rest
        }
    }

    /// Records a finished block's raw and framed sizes.
    pub fn record(&mut self, raw: usize, framed: usize) {
        if !self.exact && raw > 0 {
            self.ratio = framed.saturating_sub(BLOCK_TRAILER_LEN) as f64 / raw as f64 * MARGIN;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_that_fits_the_rest_of_its_page_is_not_padded() {
        assert_eq!(PageFit::padding_before(0, PAGE), 0);
        assert_eq!(PageFit::padding_before(1000, PAGE - 1000), 0);
        assert_eq!(PageFit::padding_before(1000, PAGE - 999), PAGE - 1000);
        // Larger than a page: it straddles anyway, padding would only waste.
        assert_eq!(PageFit::padding_before(1000, PAGE + 1), 0);
    }

    #[test]
    fn raw_blocks_are_cut_to_end_at_the_page_exactly() {
        let fit = PageFit::new(false, 4096);
        let fits = PAGE - BLOCK_TRAILER_LEN;
        assert!(!fit.should_cut(0, fits));
        assert!(fit.should_cut(0, fits + 1));
        assert!(!fit.should_cut(PAGE as u64 + 100, fits - 100));
        assert!(fit.should_cut(PAGE as u64 + 100, fits - 99));
        // 500 bytes left hold less than a quarter of a 4 KiB block: the next block gets a page.
        assert!(!fit.should_cut(PAGE as u64 - 500, fits));
    }

    #[test]
    fn compressed_blocks_are_predicted_from_the_last_ratio_with_a_margin() {
        let mut fit = PageFit::new(true, 4096);
        fit.record(4000, 2000 + BLOCK_TRAILER_LEN);
        let ratio = 0.5 * MARGIN;
        // 2100 bytes left: a block of up to about (2100 - 5) / ratio raw bytes.
        let at = PAGE as u64 - 2100;
        let most = ((2100 - BLOCK_TRAILER_LEN) as f64 / ratio) as usize;
        assert!(!fit.should_cut(at, most - 1));
        assert!(fit.should_cut(at, most + 1));
    }
}
