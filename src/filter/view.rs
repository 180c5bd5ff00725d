//! [`FilterView`]: any serialized filter, probed in place over borrowed bytes.
//!
//! This is what the engine holds for an SST's filter block: the block's bytes stay where they
//! were read, and `contains_hash` dispatches on the kind tag to that filter's probe code.

use crate::error::Result;
use crate::filter::codec::{self, Envelope};
use crate::filter::standard::StandardBloomView;
use crate::filter::two_bit::TwoBitBloomView;
use crate::filter::{Filter, FilterKind};

/// A serialized filter of any kind, probed without copying its payload.
#[derive(Debug, Clone, Copy)]
pub struct FilterView<'a> {
    bytes: &'a [u8],
    inner: Inner<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Inner<'a> {
    Standard(StandardBloomView<'a>),
    TwoBit(TwoBitBloomView<'a>),
}

impl<'a> FilterView<'a> {
    /// Parses and validates a serialized filter. Corrupt or truncated bytes are
    /// [`crate::Error::Corruption`]; a valid envelope of an unknown kind is
    /// [`crate::Error::UnknownFilterKind`].
    pub fn parse(bytes: &'a [u8]) -> Result<FilterView<'a>> {
        let env = codec::decode(bytes)?;
        Ok(FilterView { bytes, inner: Self::parse_inner(&env)? })
    }

    fn parse_inner(env: &Envelope<'a>) -> Result<Inner<'a>> {
        Ok(match env.kind {
            FilterKind::StandardBloom => Inner::Standard(StandardBloomView::parse(env)?),
            FilterKind::TwoBitBloom => Inner::TwoBit(TwoBitBloomView::parse(env)?),
            other => return Err(crate::Error::UnknownFilterKind(other.tag())),
        })
    }
}

impl Filter for FilterView<'_> {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        match &self.inner {
            Inner::Standard(v) => v.contains_hash(hash),
            Inner::TwoBit(v) => v.contains_hash(hash),
        }
    }

    fn kind(&self) -> FilterKind {
        match &self.inner {
            Inner::Standard(_) => FilterKind::StandardBloom,
            Inner::TwoBit(_) => FilterKind::TwoBitBloom,
        }
    }

    fn memory_bytes(&self) -> usize {
        self.bytes.len()
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.bytes.to_vec()
    }
}
