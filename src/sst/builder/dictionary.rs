//! The writing side of per-table zstd dictionaries (design.md#zstd-dictionaries): the data
//! blocks a table builder holds back uncompressed until it has enough of them to train on,
//! and the training.
//!
//! Memory is bounded by the training target ([`TableOptions::zstd_max_train_bytes`], or
//! `max_dict_bytes` without training) plus one block: the blocks are kept concatenated, as
//! zstd's trainer reads them, and written out (compressed with the dictionary) as soon as the
//! target is reached or the table ends.

use crate::sst::compression::EncoderDict;
use crate::sst::{Compression, TableOptions};

/// Where a table builder is with its dictionary.
pub(super) enum DictState {
    /// No dictionary: another codec, dictionaries off, or training gave none (too few
    /// samples): data blocks are compressed as without the option.
    Off,
    /// Collecting the table's first data blocks to train on; none is written yet.
    Buffering(Samples),
    /// Data blocks are compressed with `encoder`, digested from `bytes` (written to the
    /// dictionary block at `finish`).
    Ready {
        /// The dictionary as stored.
        bytes: Vec<u8>,
        /// The dictionary digested for compression at the table's zstd level.
        encoder: EncoderDict,
    },
}

/// The data blocks held back for training, in table order.
pub(super) struct Samples {
    /// The blocks' raw contents, concatenated.
    pub data: Vec<u8>,
    /// Per block: its length in `data`, and its index separator once the next key is known
    /// (only the last block can still lack one).
    pub blocks: Vec<(usize, Option<Vec<u8>>)>,
    /// Training starts once `data` holds this many bytes.
    pub target: usize,
    /// The table's zstd level (the encoder dictionary is digested for it).
    pub level: i32,
}

/// Raw-content dictionaries shorter than this are not written: zstd ignores a dictionary of 8
/// bytes or less, and a few dozen bytes of history save nothing worth a format-8 table.
const MIN_RAW_DICT: usize = 64;

impl DictState {
    /// The state a table written with `opts` starts in.
    pub fn new(opts: &TableOptions) -> DictState {
        match opts.compression {
            Compression::Zstd { level } if opts.max_dict_bytes > 0 => {
                let target = match opts.zstd_max_train_bytes {
                    0 => opts.max_dict_bytes,
                    n => n,
                };
                DictState::Buffering(Samples {
                    data: Vec::new(),
                    blocks: Vec::new(),
                    target,
                    level,
                })
            }
            _ => DictState::Off,
        }
    }

    /// Bytes of data blocks held back (0 unless buffering).
    pub fn buffered_bytes(&self) -> usize {
        match self {
            DictState::Buffering(s) => s.data.len(),
            _ => 0,
        }
    }

    /// The encoder dictionary data blocks are compressed with, once trained.
    pub fn encoder(&self) -> Option<&EncoderDict> {
        match self {
            DictState::Ready { encoder, .. } => Some(encoder),
            _ => None,
        }
    }
}

/// The dictionary for a table whose first data blocks are `samples`, at most
/// `opts.max_dict_bytes`: trained by zstd when `opts.zstd_max_train_bytes > 0` (with its trainer,
/// or finalized from the samples' last bytes: `opts.use_zstd_dict_trainer`), else the samples'
/// first bytes as raw content. `None` when there is none to be had (zstd refuses too few or too
/// small samples; a table too small for even a raw dictionary).
pub(super) fn train(samples: &Samples, opts: &TableOptions) -> Option<Vec<u8>> {
    let max_dict_bytes = opts.max_dict_bytes;
    if opts.zstd_max_train_bytes == 0 {
        // Raw content starts with a data block, whose first byte is its first entry's shared
        // key length, 0; zstd's dictionary magic starts with 0x37, so zstd (writer and reader
        // alike) takes these bytes as raw content, never as a formatted dictionary.
        let n = samples.data.len().min(max_dict_bytes);
        return (n >= MIN_RAW_DICT).then(|| samples.data.get(..n).unwrap_or_default().to_vec());
    }
    let sizes: Vec<usize> = samples.blocks.iter().map(|b| b.0).collect();
    if !opts.use_zstd_dict_trainer {
        return finalize(samples, &sizes, max_dict_bytes);
    }
    zstd::dict::from_continuous(&samples.data, &sizes, max_dict_bytes).ok()
}

/// A dictionary of the samples' last `max_dict_bytes` as content, with the entropy tables zstd
/// derives from compressing the samples with it (`ZDICT_finalizeDictionary`; RocksDB's
/// `use_zstd_dict_trainer = false`).
fn finalize(samples: &Samples, sizes: &[usize], max_dict_bytes: usize) -> Option<Vec<u8>> {
    use zstd::zstd_safe::zstd_sys;
    let content = &samples.data[samples.data.len().saturating_sub(max_dict_bytes)..];
    // As for raw content: a few dozen bytes of history are not worth a format-8 table.
    if content.len() < MIN_RAW_DICT {
        return None;
    }
    let mut out = vec![0u8; max_dict_bytes];
    let params = zstd_sys::ZDICT_params_t {
        compressionLevel: samples.level,
        notificationLevel: 0,
        dictID: 0,
    };
    let n_samples = u32::try_from(sizes.len()).ok()?;
    // SAFETY: every pointer is to a live buffer of the length passed with it; `sizes` sums to
    // `samples.data.len()`; zstd writes at most `out.len()` bytes.
    let n = unsafe {
        zstd_sys::ZDICT_finalizeDictionary(
            out.as_mut_ptr().cast(),
            out.len(),
            content.as_ptr().cast(),
            content.len(),
            samples.data.as_ptr().cast(),
            sizes.as_ptr(),
            n_samples,
            params,
        )
    };
    // SAFETY: a pure function of the code.
    if unsafe { zstd_sys::ZDICT_isError(n) } != 0 {
        return None;
    }
    out.truncate(n);
    Some(out)
}
