//! The partitioned meta blocks of a table (format version 4): writing a partitioned filter
//! (src/sst/partitioned_filter.rs) and a partitioned index (src/sst/partitioned_index.rs) at
//! [`TableBuilder::finish`].

use super::*;
use crate::filter::{FilterError, FilterKind};
use crate::sst::block::Block;
use crate::sst::partitioned_filter::PartitionCut;

impl TableBuilder {
    /// Writes a partitioned filter: one envelope per cut, then the top-level partition index
    /// (keyed by the separator of each partition's last data block, taken from the finished
    /// `index` block), whose handle becomes the footer's filter handle. Records the
    /// `filter_kind` (the first partition's), `filter_bytes` (partitions and top level) and
    /// `filter_partitions` properties.
    pub(super) fn write_partitions(
        &mut self,
        cuts: &[PartitionCut],
        src: &mut PartitionedFilterSource,
        index: &[u8],
    ) -> Result<()> {
        let index = Block::new(index.to_vec())?;
        let mut top = BlockBuilder::new(1);
        let mut total = 0u64;
        for (i, cut) in cuts.iter().enumerate() {
            let bytes = (src.build)(&self.hashes[cut.hashes.clone()])?;
            let tag = crate::filter::kind_tag(&bytes)
                .and_then(|t| match FilterKind::from_tag(t) {
                    Some(_) => Ok(t),
                    None => Err(FilterError::UnknownKind(t)),
                })
                .map_err(|e| Error::invalid(format!("filter partition is not a filter: {e}")))?;
            if i == 0 {
                self.props.filter_kind = tag;
            }
            total += bytes.len() as u64;
            let handle = self.write_block(&bytes, Compression::None)?;
            let (sep, _, _) = index.restart_entry_at(index.restart_point(cut.last_block)?)?;
            add_handle_entry(&mut top, sep, handle);
        }
        let top = top.finish();
        self.filter_handle = self.write_block(&top, Compression::None)?;
        total += top.len() as u64;
        self.props.filter_bytes = total;
        self.props.filter_partitions = cuts.len() as u64;
        if !self.hashes.is_empty() {
            self.props.filter_bits_per_key = total as f64 * 8.0 / self.hashes.len() as f64;
        }
        Ok(())
    }

    /// Writes the index partitions (`(last separator, contents)` in order) and then the
    /// top-level index over them (key = a partition's last separator, value = its handle);
    /// returns the top level's handle, the footer's index handle.
    pub(super) fn write_index_partitions(
        &mut self,
        parts: &[(Vec<u8>, Vec<u8>)],
    ) -> Result<BlockHandle> {
        let mut top = BlockBuilder::new(1);
        for (last, raw) in parts {
            let h = self.write_block(raw, Compression::None)?;
            add_handle_entry(&mut top, last, h);
        }
        self.write_block(&top.finish(), Compression::None)
    }
}
