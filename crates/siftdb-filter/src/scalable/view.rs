//! The zero-copy reader of a serialized scalable Bloom filter, and the stage-record parser the
//! owned decoder shares (docs/format.md#scalable-bloom).

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use super::{check_config, MAX_STAGES};
use crate::envelope::{self, Envelope, ParamReader};
use crate::error::{FilterError, Result};
use crate::standard::StandardBloomView;
use crate::FilterKind;

/// Splits a payload into `count` stage records `(capacity, envelope bytes)`, bounding every
/// length by the bytes left and requiring zero padding and no trailing bytes.
pub(super) fn stage_records(payload: &[u8], count: usize) -> Result<Vec<(u64, &[u8])>> {
    let bad =
        |what: String| FilterError::corruption(format!("scalable_bloom payload: {what}"), None);
    let mut out = Vec::with_capacity(count.min(MAX_STAGES));
    let mut rest = payload;
    for i in 0..count {
        let Some((capacity, len, body)) = stage_header(rest) else {
            return Err(bad(format!("stage {i} header truncated")));
        };
        let padded = len.div_ceil(8).saturating_mul(8);
        // `len <= padded`, so the record splits wherever its padded length fits the payload.
        let split = usize::try_from(padded)
            .ok()
            .and_then(|p| body.split_at_checked(p))
            .and_then(|(record, next)| Some((record.split_at_checked(len as usize)?, next)));
        let Some(((env, pad), next)) = split.filter(|_| capacity != 0) else {
            return Err(bad(format!("stage {i}: capacity {capacity}, length {len}")));
        };
        if pad.iter().any(|&b| b != 0) {
            return Err(bad(format!("stage {i} padding is not zero")));
        }
        out.push((capacity, env));
        rest = next;
    }
    if !rest.is_empty() {
        return Err(bad(format!("{} trailing payload bytes", rest.len())));
    }
    Ok(out)
}

/// A stage record's `capacity:u64 length:u64` header and the bytes after it; `None` if short.
fn stage_header(b: &[u8]) -> Option<(u64, u64, &[u8])> {
    let (capacity, b) = b.split_first_chunk::<8>()?;
    let (len, b) = b.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*capacity), u64::from_le_bytes(*len), b))
}

/// A scalable Bloom filter probed in place: one [`StandardBloomView`] per stage.
#[derive(Debug, Clone)]
pub struct ScalableBloomView<'a> {
    pub(super) target_fpr: f64,
    pub(super) ratio: f64,
    pub(super) growth: f64,
    pub(super) initial_capacity: u64,
    pub(super) stages: Vec<StandardBloomView<'a>>,
}

impl<'a> ScalableBloomView<'a> {
    /// Bytes the view requested from the allocator (its stage list's buffer).
    pub(crate) fn heap_request_bytes(&self) -> usize {
        self.stages.capacity() * std::mem::size_of::<StandardBloomView<'a>>()
    }

    /// Checks the parameters and every stage of a decoded envelope of kind `ScalableBloom`.
    pub fn parse(env: &Envelope<'a>) -> Result<ScalableBloomView<'a>> {
        let mut r = ParamReader::new(env);
        let target_fpr = r.f64("target_fpr")?;
        let ratio = r.f64("ratio")?;
        let growth = r.f64("growth")?;
        let initial_capacity = r.u64("initial_capacity")?;
        let stage_count = r.u32("stage_count")?;
        r.finish()?;
        let invalid = |e: String| ParamReader::new(env).invalid(e);
        check_config(target_fpr, ratio, growth, initial_capacity).map_err(invalid)?;
        if stage_count == 0 || stage_count as usize > MAX_STAGES {
            return Err(invalid(format!("stage_count {stage_count} is not in 1..={MAX_STAGES}")));
        }
        let mut stages = Vec::with_capacity(stage_count as usize);
        for (i, (_, bytes)) in
            stage_records(env.payload, stage_count as usize)?.into_iter().enumerate()
        {
            let stage_env = match envelope::decode(bytes) {
                Ok(e) if e.kind == FilterKind::StandardBloom => e,
                Ok(e) => {
                    return Err(FilterError::corruption(
                        format!("scalable_bloom stage {i} is a {} filter", e.kind),
                        None,
                    ))
                }
                Err(e) => {
                    return Err(FilterError::corruption(
                        format!("scalable_bloom stage {i}: {e}"),
                        None,
                    ))
                }
            };
            stages.push(StandardBloomView::parse(&stage_env)?);
        }
        Ok(ScalableBloomView { target_fpr, ratio, growth, initial_capacity, stages })
    }

    /// `false`: certainly absent (every stage says no); `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.stages.iter().rev().any(|s| s.contains_hash(hash))
    }

    /// Number of stages.
    pub fn stage_count(&self) -> usize {
        self.stages.len()
    }
}
