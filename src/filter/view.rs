//! [`FilterView`]: any serialized filter, probed in place over borrowed bytes.
//!
//! This is what the engine holds for an SST's filter block: the block's bytes stay where they
//! were read, and `contains_hash` dispatches on the kind tag to that filter's probe code.

use crate::error::Result;
use crate::filter::codec::{self, Envelope};
use crate::filter::standard::StandardBloomView;
use crate::filter::xor::{BinaryFuseView, XorView};
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
    Xor8(XorView<'a, u8>),
    Xor16(XorView<'a, u16>),
    BinaryFuse8(BinaryFuseView<'a, u8>),
    BinaryFuse16(BinaryFuseView<'a, u16>),
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
            FilterKind::Xor8 => Inner::Xor8(XorView::parse(env)?),
            FilterKind::Xor16 => Inner::Xor16(XorView::parse(env)?),
            FilterKind::BinaryFuse8 => Inner::BinaryFuse8(BinaryFuseView::parse(env)?),
            FilterKind::BinaryFuse16 => Inner::BinaryFuse16(BinaryFuseView::parse(env)?),
            other => return Err(crate::Error::UnknownFilterKind(other.tag())),
        })
    }
}

impl Filter for FilterView<'_> {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        match &self.inner {
            Inner::Standard(v) => v.contains_hash(hash),
            Inner::Xor8(v) => v.contains_hash(hash),
            Inner::Xor16(v) => v.contains_hash(hash),
            Inner::BinaryFuse8(v) => v.contains_hash(hash),
            Inner::BinaryFuse16(v) => v.contains_hash(hash),
        }
    }

    fn kind(&self) -> FilterKind {
        match &self.inner {
            Inner::Standard(_) => FilterKind::StandardBloom,
            Inner::Xor8(_) => FilterKind::Xor8,
            Inner::Xor16(_) => FilterKind::Xor16,
            Inner::BinaryFuse8(_) => FilterKind::BinaryFuse8,
            Inner::BinaryFuse16(_) => FilterKind::BinaryFuse16,
        }
    }

    fn memory_bytes(&self) -> usize {
        self.bytes.len()
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.bytes.to_vec()
    }
}
