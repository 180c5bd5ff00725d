//! [`TableBuilder`]: writes one SST from entries given in internal-key order.
//!
//! Data blocks are cut when they reach `block_size`; each finished block's index entry is
//! written lazily, when the next key is known, so the separator can be shortened (LevelDB's
//! `FindShortestSeparator`): between user keys `abcd..` and `abzz..` the index stores `abd`
//! with the largest sequence number, which sorts after every key of the block and before every
//! key of the next one. The filter is built (or handed over) at `finish`, after all user-key
//! hashes are known; a partitioned filter (src/sst/partitioned_filter.rs) is cut along the
//! data blocks' ranges of hashes recorded as the blocks are finished.
//!
//! Blocks are framed straight into a write buffer that goes to the file in pieces of about
//! [`WRITE_BUFFER`] bytes (RocksDB's `WritableFileWriter` does the same): one `write` per 4 KiB
//! block cost a system call and a file-system round trip per block, 18% of an LZ4 compaction's
//! time. Nothing reads a table before `finish` has written and synced all of it, so holding
//! the bytes back changes no guarantee.
//!
//! With a zstd dictionary ([`TableOptions::max_dict_bytes`], src/sst/builder/dictionary.rs) the
//! first data blocks are held back uncompressed, their index separators with them, until there
//! are enough to train on; then the dictionary is trained and they are written, compressed with
//! it, as every later block is. Their offsets are known only then, so the index entries wait too.

use crate::error::{Error, Result};
use crate::filter::hash_key;
use crate::ikey::{self, ValueKind};
use crate::range_del::{Fragments, RangeTombstone};
use crate::sst::block::BlockBuilder;
use crate::sst::compression::EncoderDict;
use crate::sst::format::{
    format_version_for, frame_block_with, BlockHandle, Footer, TableFeatures, BLOCK_TRAILER_LEN,
    MAX_BLOCK_LEN,
};
use crate::sst::partitioned_filter::{self, PartitionedFilterSource};
use crate::sst::partitioned_index;
use crate::sst::properties::TableProperties;
use crate::sst::scan_filters::{ScanFilterCollector, ScanFilterSpec};
use crate::sst::{Compression, TableOptions};
use crate::storage::WritableFile;
use std::cmp::Ordering;
use std::ops::Range;

mod dictionary;
mod page_fit;
mod partitions;

use dictionary::DictState;

use page_fit::PageFit;

/// Largest key + value of one entry (keeps every block below `MAX_BLOCK_LEN`).
const MAX_ENTRY_LEN: usize = MAX_BLOCK_LEN / 2;
/// Largest allowed `block_size` option.
const MAX_BLOCK_SIZE: usize = 256 << 20;
/// The write buffer is handed to the file once it holds this many bytes.
pub(crate) const WRITE_BUFFER: usize = 256 << 10;

/// A closure that builds serialized filter bytes from the table's user-key hashes (one per
/// distinct user key, in key order).
pub type FilterBuildFn = Box<dyn FnOnce(&[u64]) -> Result<Vec<u8>> + Send>;

/// Where the table's filter block comes from, chosen at [`TableBuilder::finish`].
pub enum FilterBlockSource {
    /// No filter: every lookup reads the index and a data block.
    None,
    /// Ready serialized filter bytes (a filter envelope, e.g. the memtable's two-bit Bloom
    /// written as is). Must contain every user key of the table.
    Bytes(Vec<u8>),
    /// Build the filter from the collected hashes (e.g. a ribbon filter for compaction outputs).
    Build(FilterBuildFn),
    /// Build a partitioned filter (format version 4, src/sst/partitioned_filter.rs): one
    /// envelope per run of data blocks and a top-level partition index. A table whose filter
    /// fits one partition gets one whole filter instead, written exactly as `Build` writes it.
    Partitioned(PartitionedFilterSource),
}

impl FilterBlockSource {
    /// [`FilterBlockSource::Build`] from a closure.
    pub fn build(f: impl FnOnce(&[u64]) -> Result<Vec<u8>> + Send + 'static) -> FilterBlockSource {
        FilterBlockSource::Build(Box::new(f))
    }
}

impl std::fmt::Debug for FilterBlockSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilterBlockSource::None => f.write_str("None"),
            FilterBlockSource::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            FilterBlockSource::Build(_) => f.write_str("Build(..)"),
            FilterBlockSource::Partitioned(p) => write!(f, "Partitioned({p:?})"),
        }
    }
}

/// What the manifest needs to know about a finished table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSummary {
    /// File size in bytes.
    pub file_size: u64,
    /// Entries (puts and tombstones) plus range tombstones.
    pub entries: u64,
    /// The keyspace of every key (0 for an empty table unless set with
    /// [`TableBuilder::set_keyspace`]).
    pub keyspace: u32,
    /// Smallest user key (empty for an empty table), range tombstone starts included.
    pub smallest_key: Vec<u8>,
    /// Largest user key, covering the range tombstones' extents
    /// (docs/format.md#range-deletion-block: an exclusive end counts as an inclusive bound unless
    /// it ends in a 0 byte).
    pub largest_key: Vec<u8>,
    /// Smallest sequence number of any entry or range tombstone.
    pub smallest_seq: u64,
    /// Largest sequence number of any entry or range tombstone.
    pub largest_seq: u64,
    /// Filter kind tag (0 = no filter).
    pub filter_kind: u8,
    /// Filter block bytes.
    pub filter_bytes: u64,
    /// Everything the properties block records (internal-key bounds, counts, ...).
    pub properties: TableProperties,
}

/// Writes one SST. See the module documentation.
pub struct TableBuilder {
    file: Box<dyn WritableFile>,
    /// Entries of kind `BlobIndex` added (a table with any is format version 7).
    blob_refs: u64,
    opts: TableOptions,
    data: BlockBuilder,
    index: BlockBuilder,
    /// Bytes of the table so far: written to `file` plus waiting in `buf`.
    offset: u64,
    /// Framed blocks not yet handed to `file`.
    buf: Vec<u8>,
    last_key: Vec<u8>,
    /// Handle of the last finished data block, awaiting its index entry.
    pending: Option<BlockHandle>,
    hashes: Vec<u64>,
    /// Per finished data block, its range of `hashes` (the first entry's user key to one past
    /// the last's; a key whose versions span a block boundary is in both ranges). Partitioned
    /// filters are cut along these.
    block_hashes: Vec<Range<usize>>,
    /// The `hashes` index of the current data block's first user key.
    block_first_hash: usize,
    props: TableProperties,
    /// Range tombstones added, fragmented into the range-deletion block at `finish`.
    range_dels: Vec<RangeTombstone>,
    /// The table's keyspace: set explicitly, or by the first key (`None` until then).
    keyspace: Option<u32>,
    /// Values carry write times ([`TableBuilder::set_write_times`]).
    write_times: bool,
    /// Set after a failed write: the file's contents are unknown, so nothing more is written.
    failed: bool,
    /// The footer's filter handle once a partitioned filter's top level is written.
    filter_handle: BlockHandle,
    /// `Some(bytes)`: partition the index into blocks of about `bytes` ([`Self::partition_index`]).
    index_partition_bytes: Option<usize>,
    /// What the scan filters are built from ([`Self::set_scan_filters`]).
    scan: Option<ScanFilterCollector>,
    /// `Some` with [`TableOptions::block_align`]: where data blocks are cut and placed.
    fit: Option<PageFit>,
    /// The zstd dictionary: off, collecting blocks to train on, or trained.
    dict: DictState,
}

impl TableBuilder {
    /// A builder appending to `file` (normally new and empty). `block_size` outside
    /// `64..=256 MiB` is [`Error::InvalidArgument`].
    pub fn new(file: Box<dyn WritableFile>, opts: TableOptions) -> Result<TableBuilder> {
        if !(64..=MAX_BLOCK_SIZE).contains(&opts.block_size) {
            return Err(Error::invalid(format!(
                "block_size {} not in 64..=256 MiB",
                opts.block_size
            )));
        }
        crate::options_validate::check_dictionary(opts.max_dict_bytes, opts.zstd_max_train_bytes)?;
        let offset = file.len();
        Ok(TableBuilder {
            file,
            data: BlockBuilder::new(opts.restart_interval),
            index: BlockBuilder::new(1),
            offset,
            buf: Vec::with_capacity(WRITE_BUFFER + opts.block_size + opts.block_size / 8 + 64),
            last_key: Vec::new(),
            pending: None,
            hashes: Vec::new(),
            block_hashes: Vec::new(),
            block_first_hash: 0,
            blob_refs: 0,
            props: TableProperties {
                format_version: format_version_for(TableFeatures {
                    compression: opts.compression,
                    keyspaces: false,
                    write_times: false,
                    merges: false,
                    range_deletions: false,
                    partitioned_filter: false,
                    partitioned_index: false,
                    scan_filters: false,
                    blob_refs: false,
                    dictionary: false,
                }),
                compression: opts.compression.tag(),
                block_size: opts.block_size as u64,
                restart_interval: opts.restart_interval.max(1) as u64,
                smallest_seq: u64::MAX,
                ..Default::default()
            },
            opts,
            range_dels: Vec::new(),
            keyspace: None,
            write_times: false,
            failed: false,
            filter_handle: BlockHandle::default(),
            index_partition_bytes: None,
            scan: None,
            fit: opts
                .block_align
                .then(|| PageFit::new(opts.compression != Compression::None, opts.block_size)),
            dict: DictState::new(&opts),
        })
    }

    /// Sets the keyspace of the table (its entries and range tombstones) before anything is
    /// added: a table holding only range tombstones has no key to take it from.
    pub fn set_keyspace(&mut self, keyspace: u32) {
        self.keyspace = Some(keyspace);
    }

    /// Adds a range tombstone of the table's keyspace (any order; overlaps are fragmented at
    /// `finish`). An empty or inverted range is [`Error::InvalidArgument`].
    pub fn add_range_tombstone(&mut self, t: RangeTombstone) -> Result<()> {
        self.check_usable()?;
        if t.start >= t.end {
            return Err(Error::invalid("table builder given a range tombstone with start >= end"));
        }
        if t.start.len() + t.end.len() > MAX_ENTRY_LEN {
            return Err(Error::invalid("range tombstone larger than 512 MiB"));
        }
        self.range_dels.push(t);
        Ok(())
    }

    /// Adds an entry. `internal_key` must decode ([`crate::ikey::decode_in`]), sort strictly
    /// after the previous key and be of the table's keyspace (a table holds one keyspace: the
    /// one set with [`TableBuilder::set_keyspace`], else the first key's); otherwise
    /// [`Error::InvalidArgument`] and nothing is added.
    pub fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        self.check_usable()?;
        let (keyspace, user_key, seq, kind) = ikey::decode_in(internal_key)
            .map_err(|e| Error::invalid(format!("table builder given a bad internal key: {e}")))?;
        if kind == ValueKind::RangeDelete {
            return Err(Error::invalid("range tombstones go through add_range_tombstone"));
        }
        let first = self.props.entries == 0;
        if !first && ikey::compare(&self.last_key, internal_key) != Ordering::Less {
            return Err(Error::invalid("table builder keys must be strictly increasing"));
        }
        if let Some(table_ks) = self.keyspace.filter(|&k| k != keyspace) {
            return Err(Error::invalid(format!(
                "table builder given keyspace {keyspace} in a table of keyspace {table_ks}: a \
                 table holds one"
            )));
        }
        if internal_key.len() + value.len() > MAX_ENTRY_LEN {
            return Err(Error::invalid("entry larger than 512 MiB"));
        }
        // Blocks held back for the dictionary have no offset yet: they are cut by size alone,
        // and placed (padded) within pages when they are written.
        let placed = !matches!(self.dict, DictState::Buffering(_));
        if let Some(fit) = self.fit.as_ref().filter(|_| placed) {
            // Worst case of the entry's bytes: three varints and a restart point.
            let raw = self.data.size_estimate() + internal_key.len() + value.len() + 19;
            if !self.data.is_empty() && fit.should_cut(self.offset, raw) {
                self.flush_data()?;
            }
        }
        if let Some(handle) = self.pending.take() {
            let sep = separator(&self.last_key, internal_key);
            self.add_index_entry(&sep, handle);
        } else if let DictState::Buffering(samples) = &mut self.dict {
            if let Some((_, sep @ None)) = samples.blocks.last_mut() {
                *sep = Some(separator(&self.last_key, internal_key));
            }
        }
        if first || user_key != ikey::user_key(&self.last_key) {
            self.hashes.push(hash_key(user_key));
            if let Some(scan) = &mut self.scan {
                scan.add(user_key);
            }
        }
        if self.data.is_empty() {
            self.block_first_hash = self.hashes.len() - 1;
        }
        self.keyspace = Some(keyspace);
        let p = &mut self.props;
        if first {
            p.smallest_key = internal_key.to_vec();
        }
        p.entries += 1;
        p.deletions += (kind == ValueKind::Delete) as u64;
        p.merges += (kind == ValueKind::Merge) as u64;
        self.blob_refs += (kind == ValueKind::BlobIndex) as u64;
        p.raw_key_bytes += internal_key.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.smallest_seq = p.smallest_seq.min(seq);
        p.largest_seq = p.largest_seq.max(seq);
        if self.write_times && matches!(kind, ValueKind::Put | ValueKind::Merge) {
            if let Ok((_, t)) = crate::compaction_filter::split_time(value) {
                let (old, new) = p.write_times.unwrap_or((u64::MAX, 0));
                p.write_times = Some((old.min(t), new.max(t)));
            }
        }
        self.data.add(internal_key, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(internal_key);
        if self.data.size_estimate() >= self.opts.block_size {
            self.flush_data()?;
        }
        Ok(())
    }

    /// Whether values carry a write time (a TTL keyspace, design.md#ttl): the properties then
    /// record the oldest and newest (format version 6).
    pub fn set_write_times(&mut self, on: bool) {
        self.write_times = on;
    }

    /// Records `name` as the merge operator of the table's operands (the `merge_operator`
    /// property, written only if the table holds operands). The engine calls this before
    /// adding operands: the configured operator's name, or `""` when none is configured.
    pub fn set_merge_operator(&mut self, name: &str) {
        self.props.merge_operator = Some(name.to_string());
    }

    /// Writes the scan filters `spec` asks for (format version 5, src/sst/scan_filters.rs).
    /// Call before adding entries; an empty spec writes none.
    pub fn set_scan_filters(&mut self, spec: ScanFilterSpec) {
        self.scan = (!spec.is_empty()).then(|| ScanFilterCollector::new(spec));
    }

    /// Writes the index as a top-level index over index partitions of about `bytes` bytes each
    /// (format version 4, src/sst/partitioned_index.rs) when it is larger than that; a smaller
    /// index stays one block, byte for byte as without this call.
    pub fn partition_index(&mut self, bytes: usize) {
        self.index_partition_bytes = Some(bytes.max(1));
    }

    #[cfg(test)]
    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.props.entries
    }

    /// Bytes the file would have if the current data block were written now (for cutting
    /// compaction outputs at a target size; excludes filter, properties, index and footer).
    pub fn estimated_size(&self) -> u64 {
        // Blocks held back for the dictionary count at their raw size (an upper bound).
        self.offset + (self.data.size_estimate() + self.dict.buffered_bytes()) as u64
    }

    /// Writes the remaining data block, the filter, properties and index blocks and the footer,
    /// then syncs the file. An invalid filter (bytes that are not a filter envelope, or a build
    /// closure that fails) is an error and the file must be discarded.
    pub fn finish(mut self, filter: FilterBlockSource) -> Result<TableSummary> {
        self.check_usable()?;
        if !self.data.is_empty() {
            self.flush_data()?;
        }
        // A table smaller than the training target trains on all its blocks.
        self.end_buffering()?;
        if let Some(handle) = self.pending.take() {
            let last = std::mem::take(&mut self.last_key);
            self.add_index_entry(&last, handle);
            self.last_key = last;
        }
        if let DictState::Ready { bytes, .. } = std::mem::replace(&mut self.dict, DictState::Off) {
            self.props.compression_dict_block = self.write_block(&bytes, Compression::None)?;
        }
        let index = self.index.finish();
        let mut cuts = Vec::new();
        let filter_bytes = match filter {
            FilterBlockSource::None => None,
            FilterBlockSource::Bytes(b) => Some(b),
            FilterBlockSource::Build(f) => Some(f(&self.hashes)?),
            FilterBlockSource::Partitioned(mut p) => {
                cuts =
                    partitioned_filter::plan(&self.block_hashes, p.bits_per_key, p.partition_bytes);
                if cuts.len() < 2 {
                    cuts.clear();
                    Some((p.build)(&self.hashes)?)
                } else {
                    self.write_partitions(&cuts, &mut p, &index)?;
                    None
                }
            }
        };
        let mut filter_handle = self.filter_handle;
        if let Some(bytes) = filter_bytes {
            let tag = crate::filter::kind_tag(&bytes)
                .map_err(|e| Error::invalid(format!("filter block is not a filter: {e}")))?;
            self.props.filter_kind = tag;
            self.props.filter_bytes = bytes.len() as u64;
            if !self.hashes.is_empty() {
                self.props.filter_bits_per_key =
                    bytes.len() as f64 * 8.0 / self.hashes.len() as f64;
            }
            filter_handle = self.write_block(&bytes, Compression::None)?;
        }
        if let Some(scan) = self.scan.take() {
            let built = scan.finish()?;
            if let Some((bytes, name)) = built.prefix {
                self.props.prefix_filter_block = self.write_block(&bytes, Compression::None)?;
                self.props.prefix_extractor = Some(name);
            }
            if let Some(bytes) = built.range {
                self.props.range_filter_block = self.write_block(&bytes, Compression::None)?;
            }
        }
        let keyspace = self.keyspace.unwrap_or(ikey::DEFAULT_KEYSPACE);
        let frags = Fragments::new(&std::mem::take(&mut self.range_dels));
        if !frags.is_empty() {
            let (raw, n) = crate::sst::range_del_block::encode(&frags, keyspace);
            self.props.range_del_block = self.write_block(&raw, Compression::None)?;
            self.props.range_deletions = n;
        }
        if self.props.entries == 0 {
            self.props.smallest_seq = 0;
        }
        self.props.largest_key = self.last_key.clone();
        self.props.distinct_keys = self.hashes.len() as u64;
        let index_parts = match self.index_partition_bytes {
            Some(bytes) if index.len() > bytes => partitioned_index::split(&index, bytes)?,
            _ => Vec::new(),
        };
        let index_parts = if index_parts.len() < 2 { Vec::new() } else { index_parts };
        self.props.index_partitions = index_parts.len() as u64;
        let version = format_version_for(TableFeatures {
            compression: self.opts.compression,
            keyspaces: keyspace != ikey::DEFAULT_KEYSPACE,
            merges: self.props.merges > 0,
            range_deletions: !frags.is_empty(),
            partitioned_filter: !cuts.is_empty(),
            partitioned_index: !index_parts.is_empty(),
            scan_filters: self.props.prefix_filter_block.size > 0
                || self.props.range_filter_block.size > 0,
            write_times: self.props.write_times.is_some(),
            blob_refs: self.blob_refs > 0,
            dictionary: self.props.compression_dict_block.size > 0,
        });
        self.props.format_version = version;
        if self.props.merges == 0 {
            self.props.merge_operator = None;
        } else if self.props.merge_operator.is_none() {
            self.props.merge_operator = Some(String::new());
        }
        let props_handle = self.write_block(&self.props.encode(), Compression::None)?;
        let index_handle = if index_parts.is_empty() {
            self.write_block(&index, Compression::None)?
        } else {
            self.write_index_partitions(&index_parts)?
        };
        let footer = Footer {
            filter: filter_handle,
            properties: props_handle,
            index: index_handle,
            version,
        };
        self.buf.extend_from_slice(&footer.encode());
        self.offset += crate::sst::format::FOOTER_LEN as u64;
        self.write_out()?;
        if crate::testing::enabled("sst.sync") {
            self.file.sync()?;
        }
        let p = self.props;
        let (mut smallest_key, mut largest_key) =
            (ikey::user_key(&p.smallest_key).to_vec(), ikey::user_key(&p.largest_key).to_vec());
        let (mut smallest_seq, mut largest_seq) = (p.smallest_seq, p.largest_seq);
        if let (Some(lo), Some(hi)) = (frags.smallest_key(), frags.largest_key()) {
            let seqs = frags.fragments().iter().flat_map(|f| f.seqs.iter().copied());
            let (min_seq, max_seq) = seqs.fold((u64::MAX, 0), |(a, b), s| (a.min(s), b.max(s)));
            if p.entries == 0 {
                (smallest_key, largest_key, smallest_seq, largest_seq) =
                    (lo.to_vec(), hi.clone(), min_seq, max_seq);
            } else {
                smallest_key = smallest_key.min(lo.to_vec());
                largest_key = largest_key.max(hi);
                smallest_seq = smallest_seq.min(min_seq);
                largest_seq = largest_seq.max(max_seq);
            }
        }
        Ok(TableSummary {
            file_size: self.offset,
            entries: p.entries + p.range_deletions,
            keyspace,
            smallest_key,
            largest_key,
            smallest_seq,
            largest_seq,
            filter_kind: p.filter_kind,
            filter_bytes: p.filter_bytes,
            properties: p,
        })
    }

    fn check_usable(&self) -> Result<()> {
        if self.failed {
            return Err(Error::invalid("table builder used after a failed write"));
        }
        Ok(())
    }

    fn add_index_entry(&mut self, key: &[u8], handle: BlockHandle) {
        add_handle_entry(&mut self.index, key, handle);
    }

    fn flush_data(&mut self) -> Result<()> {
        let raw = self.data.finish();
        self.props.data_blocks += 1;
        self.block_hashes.push(self.block_first_hash..self.hashes.len());
        if let DictState::Buffering(samples) = &mut self.dict {
            samples.data.extend_from_slice(&raw);
            samples.blocks.push((raw.len(), None));
            self.data.recycle(raw);
            if samples.data.len() >= samples.target {
                self.end_buffering()?;
            }
            return Ok(());
        }
        let handle = self.write_data_block(&raw);
        // The block's buffer serves the next block: no regrowth from empty per block.
        self.data.recycle(raw);
        self.pending = Some(handle?);
        Ok(())
    }

    /// Writes one data block (compressed, with the dictionary once there is one), returning
    /// its handle.
    fn write_data_block(&mut self, raw: &[u8]) -> Result<BlockHandle> {
        let start = self.offset;
        let handle = match self.fit.is_some() {
            true => self.write_aligned_block(raw)?,
            false => {
                let dict = self.dict.encoder();
                let compression = self.opts.compression;
                frame_into(&mut self.buf, &mut self.offset, raw, compression, dict)?
            }
        };
        self.props.data_size += self.offset - start;
        if self.buf.len() >= WRITE_BUFFER {
            self.write_out()?;
        }
        Ok(handle)
    }

    /// Ends the collection of blocks to train on, if it is under way: trains the dictionary
    /// (none when zstd's trainer gives none) and writes the held-back blocks with their index
    /// entries; the last one's entry waits for the next key as usual (`pending`).
    fn end_buffering(&mut self) -> Result<()> {
        if !matches!(self.dict, DictState::Buffering(_)) {
            return Ok(());
        }
        let DictState::Buffering(samples) = std::mem::replace(&mut self.dict, DictState::Off)
        else {
            return Ok(());
        };
        if let Some(bytes) = dictionary::train(&samples, &self.opts) {
            if let Some(encoder) = EncoderDict::new(&bytes, samples.level) {
                self.dict = DictState::Ready { bytes, encoder };
            }
        }
        let mut at = 0;
        for (len, sep) in samples.blocks {
            let raw = samples.data.get(at..at + len).unwrap_or_default();
            at += len;
            let handle = self.write_data_block(raw)?;
            match sep {
                Some(sep) => self.add_index_entry(&sep, handle),
                None => self.pending = Some(handle),
            }
        }
        Ok(())
    }

    /// Frames one block into the write buffer, returning its handle.
    fn write_block(&mut self, raw: &[u8], compression: Compression) -> Result<BlockHandle> {
        frame_into(&mut self.buf, &mut self.offset, raw, compression, None)
    }

    /// Frames one data block into the write buffer behind the padding that keeps it within a
    /// page ([`PageFit`]), returning its handle.
    fn write_aligned_block(&mut self, raw: &[u8]) -> Result<BlockHandle> {
        let start = self.buf.len();
        let dict = self.dict.encoder();
        if let Err(e) = frame_block_with(raw, self.opts.compression, dict, &mut self.buf) {
            self.buf.truncate(start);
            return Err(e);
        }
        let framed = self.buf.len() - start;
        let pad = PageFit::padding_before(self.offset, framed);
        if pad > 0 {
            self.buf.splice(start..start, std::iter::repeat_n(0u8, pad));
            self.offset += pad as u64;
        }
        if let Some(fit) = &mut self.fit {
            fit.record(raw.len(), framed);
        }
        let handle = BlockHandle { offset: self.offset, size: (framed - BLOCK_TRAILER_LEN) as u64 };
        self.offset += framed as u64;
        Ok(handle)
    }

    /// Hands the write buffer to the file.
    fn write_out(&mut self) -> Result<()> {
        if let Err(e) = self.file.append(&self.buf) {
            self.failed = true;
            return Err(e);
        }
        self.buf.clear();
        Ok(())
    }
}

/// Frames one block into the write buffer `buf` of a table of `offset` bytes (advanced past
/// it), returning its handle; a zstd block is compressed with `dict` when given.
fn frame_into(
    buf: &mut Vec<u8>,
    offset: &mut u64,
    raw: &[u8],
    compression: Compression,
    dict: Option<&EncoderDict>,
) -> Result<BlockHandle> {
    let start = buf.len();
    if let Err(e) = frame_block_with(raw, compression, dict, buf) {
        buf.truncate(start);
        return Err(e);
    }
    let framed = (buf.len() - start) as u64;
    let handle = BlockHandle { offset: *offset, size: framed - BLOCK_TRAILER_LEN as u64 };
    *offset += framed;
    Ok(handle)
}

/// An index key `s` with `a <= s < b` in internal-key order, shorter than `a` when their user
/// keys allow it: the common prefix plus one incremented byte, tagged with the largest sequence
/// number (the smallest internal key of that user key) and `a`'s keyspace. Falls back to `a`,
/// also when the keyspaces differ.
fn separator(a: &[u8], b: &[u8]) -> Vec<u8> {
    let ((ka, ua), (kb, ub)) = (ikey::split(a), ikey::split(b));
    if ka != kb {
        return a.to_vec();
    }
    let n = ua.iter().zip(ub).take_while(|(x, y)| x == y).count();
    if n < ua.len() && n < ub.len() && ua[n] < 0xff && ua[n] + 1 < ub[n] {
        let mut s = ua[..=n].to_vec();
        s[n] += 1;
        return ikey::encode_in(ka, &s, ikey::MAX_SEQ, ValueKind::Put);
    }
    a.to_vec()
}

/// Adds `key -> handle` to an index-shaped block (the index, and the top levels of partitioned
/// filters and indexes): the value is the encoded block handle.
fn add_handle_entry(block: &mut BlockBuilder, key: &[u8], handle: BlockHandle) {
    let mut v = Vec::with_capacity(20);
    handle.encode_to(&mut v);
    block.add(key, &v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separator_sorts_between_its_inputs() {
        let k = |u: &[u8], s| ikey::encode(u, s, ValueKind::Put);
        let cases: [(&[u8], &[u8]); 5] =
            [(b"abcd", b"abzz"), (b"abc", b"abd"), (b"ab", b"abc"), (b"a\xff", b"b"), (b"", b"x")];
        for (a, b) in cases {
            let (ka, kb) = (k(a, 5), k(b, 9));
            let s = separator(&ka, &kb);
            assert_ne!(ikey::compare(&ka, &s), Ordering::Greater, "{a:?} {b:?}");
            assert_eq!(ikey::compare(&s, &kb), Ordering::Less, "{a:?} {b:?}");
        }
        assert_eq!(ikey::user_key(&separator(&k(b"abcd", 1), &k(b"abzz", 1))), b"abd");
        // Same user key in both (versions split across blocks): falls back to `a`.
        assert_eq!(separator(&k(b"q", 9), &k(b"q", 3)), k(b"q", 9));
    }

    #[test]
    fn separator_keeps_the_keyspace_of_its_inputs() {
        let k = |ks, u: &[u8]| ikey::encode_in(ks, u, 4, ValueKind::Put);
        let s = separator(&k(5, b"abcd"), &k(5, b"abzz"));
        assert_eq!(ikey::split(&s), (5, &b"abd"[..]));
        assert_eq!(ikey::compare(&s, &k(5, b"abzz")), Ordering::Less);
        assert_eq!(separator(&k(5, b"a"), &k(6, b"z")), k(5, b"a"));
    }
}
