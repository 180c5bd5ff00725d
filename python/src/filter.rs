//! The filter library with numpy: `Filter.build(kind, keys)` from a numpy `uint64` array of key
//! hashes or from byte keys, whole-array probes into a numpy bool array with the GIL released,
//! and the engine's stable serialization (docs/format.md#filter-encoding), so a filter written
//! here is read by Rust's `FilterView::parse` and back.

use crate::buf::{buf, bufs, Buf};
use crate::errors::{filter_err, InvalidArgumentError};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use siftdb::filter::prelude::*;
use siftdb::filter::{
    hash_key, BinaryFuse16, BinaryFuse4Wise16, BinaryFuse4Wise8, BinaryFuse8, BlockedBloom,
    BloomBuilder, BumpedRibbon, CountingBloom, Cuckoo, FilterError, FilterKind, FilterView,
    PackedBinaryFuse, Ribbon, ScalableBloom, Sizing, SplitBlockBloom, StandardBloom, TwoBitBloom,
    Xor16, Xor8,
};
use std::borrow::Cow;
use std::path::PathBuf;

type FResult<T> = Result<T, FilterError>;

/// A point filter of any kind, built or loaded, immutable from Python.
#[pyclass(frozen, module = "siftdb._siftdb", name = "Filter")]
pub struct PyFilter {
    f: Box<dyn Filter>,
    kind: FilterKind,
    /// Keys it holds, where the filter records it (Bloom kinds, cuckoo, ribbons) or it was built
    /// here.
    keys: Option<u64>,
    bits_per_key: Option<f64>,
    expected_fpr: f64,
}

/// Sizing parameters of `Filter.build`.
#[derive(Clone, Copy)]
struct Params {
    fpr: Option<f64>,
    bits_per_key: Option<f64>,
    fingerprint_bits: Option<u32>,
}

impl Params {
    /// The target FPR (default 1%); bits per key is for the Bloom kinds only.
    fn fpr(&self, kind: FilterKind) -> FResult<f64> {
        if self.bits_per_key.is_some() {
            return Err(FilterError::invalid(format!(
                "{kind} is sized from fpr, not bits_per_key (bits_per_key sizes the Bloom kinds)"
            )));
        }
        let p = self.fpr.unwrap_or(0.01);
        if !(p.is_finite() && p > 0.0 && p < 1.0) {
            return Err(FilterError::invalid(format!("false-positive rate {p} is not in (0, 1)")));
        }
        Ok(p)
    }

    fn sizing(&self) -> FResult<Sizing> {
        match (self.fpr, self.bits_per_key) {
            (Some(_), Some(_)) => Err(FilterError::invalid("give fpr or bits_per_key, not both")),
            (_, Some(b)) => Ok(Sizing::BitsPerKey(b)),
            (p, None) => Ok(Sizing::FalsePositiveRate(p.unwrap_or(0.01))),
        }
    }

    /// For the kinds whose FPR is fixed by their fingerprint width.
    fn none(&self, kind: FilterKind, fixed: &str) -> FResult<()> {
        if self.fpr.is_some() || self.bits_per_key.is_some() {
            return Err(FilterError::invalid(format!(
                "{kind} has a fixed FPR of {fixed}: give neither fpr nor bits_per_key"
            )));
        }
        Ok(())
    }
}

fn wrap_insert<T: InsertFilter + 'static>(f: T) -> PyFilter {
    let info = f.info();
    let bits = f.memory_bytes() as f64 * 8.0;
    let keys = info.keys_inserted;
    PyFilter {
        kind: f.kind(),
        keys: Some(keys),
        bits_per_key: (keys > 0).then(|| bits / keys as f64),
        expected_fpr: info.estimated_fpr,
        f: Box::new(f),
    }
}

fn wrap_cuckoo(f: Cuckoo) -> PyFilter {
    let keys = f.len();
    let bits = f.memory_bytes() as f64 * 8.0;
    PyFilter {
        kind: FilterKind::Cuckoo,
        keys: Some(keys),
        bits_per_key: (keys > 0).then(|| bits / keys as f64),
        expected_fpr: f.theoretical_fpr(),
        f: Box::new(f),
    }
}

fn wrap_static<T: Filter + 'static>(f: T, keys: Option<u64>, bpk: f64, fpr: f64) -> PyFilter {
    PyFilter { kind: f.kind(), keys, bits_per_key: Some(bpk), expected_fpr: fpr, f: Box::new(f) }
}

fn bloom<T: BloomShape + InsertFilter + 'static>(p: Params, h: &[u64]) -> FResult<PyFilter> {
    let mut f = BloomBuilder::<T>::new(p.sizing()?).expected_items(h.len() as u64)?;
    f.insert_batch(h);
    Ok(wrap_insert(f))
}

fn width_for(fpr: f64) -> u32 {
    (-fpr.log2()).ceil().clamp(1.0, 32.0) as u32
}

fn build(kind: FilterKind, p: Params, h: &[u64]) -> FResult<PyFilter> {
    if p.fingerprint_bits.is_some() && kind != FilterKind::PackedBinaryFuse {
        return Err(FilterError::invalid("fingerprint_bits is for packed_binary_fuse only"));
    }
    let n = h.len() as u64;
    Ok(match kind {
        FilterKind::StandardBloom => bloom::<StandardBloom>(p, h)?,
        FilterKind::BlockedBloom => bloom::<BlockedBloom>(p, h)?,
        FilterKind::TwoBitBloom => bloom::<TwoBitBloom>(p, h)?,
        FilterKind::SplitBlockBloom => bloom::<SplitBlockBloom>(p, h)?,
        FilterKind::CountingBloom => bloom::<CountingBloom>(p, h)?,
        FilterKind::ScalableBloom => {
            let mut f = ScalableBloom::new(n.max(1), p.fpr(kind)?)?;
            for &x in h {
                f.try_insert_hash(x)?;
            }
            wrap_insert(f)
        }
        FilterKind::Cuckoo => {
            let mut f = Cuckoo::with_false_pos(p.fpr(kind)?).expected_items(n)?;
            for &x in h {
                f.insert_hash(x)?;
            }
            wrap_cuckoo(f)
        }
        FilterKind::Ribbon => {
            let f = Ribbon::with_false_pos(p.fpr(kind)?).build(h)?;
            let (k, b, r) = (f.num_keys(), f.bits_per_key(), f.fpr());
            wrap_static(f, Some(k), b, r)
        }
        FilterKind::BumpedRibbon => {
            let f = BumpedRibbon::with_false_pos(p.fpr(kind)?).build(h)?;
            let (k, b, r) = (f.num_keys(), f.bits_per_key(), f.fpr());
            wrap_static(f, Some(k), b, r)
        }
        FilterKind::Xor8 => {
            p.none(kind, "2^-8")?;
            let f = Xor8::build(h)?;
            let b = f.bits_per_key();
            wrap_static(f, Some(n), b, 1.0 / 256.0)
        }
        FilterKind::Xor16 => {
            p.none(kind, "2^-16")?;
            let f = Xor16::build(h)?;
            let b = f.bits_per_key();
            wrap_static(f, Some(n), b, 1.0 / 65536.0)
        }
        FilterKind::BinaryFuse8 => {
            p.none(kind, "2^-8")?;
            let f = BinaryFuse8::build(h)?;
            let b = f.bits_per_key();
            wrap_static(f, Some(n), b, 1.0 / 256.0)
        }
        FilterKind::BinaryFuse16 => {
            p.none(kind, "2^-16")?;
            let f = BinaryFuse16::build(h)?;
            let b = f.bits_per_key();
            wrap_static(f, Some(n), b, 1.0 / 65536.0)
        }
        FilterKind::BinaryFuse4Wise8 => {
            p.none(kind, "2^-8")?;
            let f = BinaryFuse4Wise8::build(h)?;
            let b = f.bits_per_key();
            wrap_static(f, Some(n), b, 1.0 / 256.0)
        }
        FilterKind::BinaryFuse4Wise16 => {
            p.none(kind, "2^-16")?;
            let f = BinaryFuse4Wise16::build(h)?;
            let b = f.bits_per_key();
            wrap_static(f, Some(n), b, 1.0 / 65536.0)
        }
        FilterKind::PackedBinaryFuse => {
            let w = match p.fingerprint_bits {
                Some(w) if p.fpr.is_some() || p.bits_per_key.is_some() => {
                    return Err(FilterError::invalid(format!(
                        "give fingerprint_bits ({w}) or fpr, not both"
                    )))
                }
                Some(w) => w,
                None => width_for(p.fpr(kind)?),
            };
            let f = PackedBinaryFuse::build(h, w)?;
            let (b, r) = (f.bits_per_key(), f.fpr());
            wrap_static(f, Some(n), b, r)
        }
        FilterKind::Grafite => {
            return Err(FilterError::invalid(
                "grafite is a range filter (\"any key in [lo, hi]?\"), not a point filter",
            ))
        }
        other => return Err(FilterError::invalid(format!("filter kind {other} is not supported"))),
    })
}

fn load(bytes: &[u8]) -> FResult<PyFilter> {
    let view = FilterView::parse(bytes)?;
    let kind = view.kind();
    let fixed = view.parameter_fpr();
    let stat = |bpk: f64, keys: Option<u64>| (bpk, keys, fixed.unwrap_or(1.0));
    Ok(match kind {
        FilterKind::StandardBloom => wrap_insert(StandardBloom::from_bytes(bytes)?),
        FilterKind::BlockedBloom => wrap_insert(BlockedBloom::from_bytes(bytes)?),
        FilterKind::TwoBitBloom => wrap_insert(TwoBitBloom::from_bytes(bytes)?),
        FilterKind::SplitBlockBloom => wrap_insert(SplitBlockBloom::from_bytes(bytes)?),
        FilterKind::CountingBloom => wrap_insert(CountingBloom::from_bytes(bytes)?),
        FilterKind::ScalableBloom => wrap_insert(ScalableBloom::from_bytes(bytes)?),
        FilterKind::Cuckoo => wrap_cuckoo(Cuckoo::from_bytes(bytes)?),
        FilterKind::Ribbon => {
            let f = Ribbon::from_bytes(bytes)?;
            let (k, b, r) = (f.num_keys(), f.bits_per_key(), f.fpr());
            wrap_static(f, Some(k), b, r)
        }
        FilterKind::BumpedRibbon => {
            let f = BumpedRibbon::from_bytes(bytes)?;
            let (k, b, r) = (f.num_keys(), f.bits_per_key(), f.fpr());
            wrap_static(f, Some(k), b, r)
        }
        FilterKind::Xor8 => {
            let f = Xor8::from_bytes(bytes)?;
            let (b, k, r) = stat(f.bits_per_key(), None);
            wrap_static(f, k, b, r)
        }
        FilterKind::Xor16 => {
            let f = Xor16::from_bytes(bytes)?;
            let (b, k, r) = stat(f.bits_per_key(), None);
            wrap_static(f, k, b, r)
        }
        FilterKind::BinaryFuse8 => {
            let f = BinaryFuse8::from_bytes(bytes)?;
            let (b, k, r) = stat(f.bits_per_key(), None);
            wrap_static(f, k, b, r)
        }
        FilterKind::BinaryFuse16 => {
            let f = BinaryFuse16::from_bytes(bytes)?;
            let (b, k, r) = stat(f.bits_per_key(), None);
            wrap_static(f, k, b, r)
        }
        FilterKind::BinaryFuse4Wise8 => {
            let f = BinaryFuse4Wise8::from_bytes(bytes)?;
            let (b, k, r) = stat(f.bits_per_key(), None);
            wrap_static(f, k, b, r)
        }
        FilterKind::BinaryFuse4Wise16 => {
            let f = BinaryFuse4Wise16::from_bytes(bytes)?;
            let (b, k, r) = stat(f.bits_per_key(), None);
            wrap_static(f, k, b, r)
        }
        FilterKind::PackedBinaryFuse => {
            let f = PackedBinaryFuse::from_bytes(bytes)?;
            let (b, r) = (f.bits_per_key(), f.fpr());
            wrap_static(f, None, b, r)
        }
        other => return Err(FilterError::invalid(format!("filter kind {other} is not supported"))),
    })
}

fn parse_kind(kind: &str) -> PyResult<FilterKind> {
    FilterKind::from_name(kind).ok_or_else(|| {
        let names: Vec<&str> = FilterKind::ALL.iter().map(|k| k.name()).collect();
        InvalidArgumentError::new_err(format!(
            "invalid argument: unknown filter kind {kind:?} (kinds: {})",
            names.join(", ")
        ))
    })
}

/// The hash a byte key is inserted and probed under: XXH3-64 (`hash_key`), except the
/// split-block Bloom filter, which uses Parquet's XXH64 so Parquet readers agree.
fn hash_for(kind: FilterKind, key: &[u8]) -> u64 {
    match kind {
        FilterKind::SplitBlockBloom => SplitBlockBloom::hash(key),
        _ => hash_key(key),
    }
}

/// The `uint64` values of a one-dimensional numpy array, in place when contiguous.
fn u64s<'a>(arr: &'a PyReadonlyArray1<'_, u64>) -> Cow<'a, [u64]> {
    match arr.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(arr.as_array().iter().copied().collect()),
    }
}

/// Hashes of `keys`: a numpy `uint64` array is taken as hashes already; any other iterable is
/// byte keys, hashed as `kind` hashes keys.
fn key_hashes(py: Python<'_>, kind: FilterKind, keys: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if let Ok(arr) = keys.cast::<numpy::PyUntypedArray>() {
        let Ok(arr) = arr.cast::<PyArray1<u64>>() else {
            return Err(PyTypeError::new_err(format!(
                "a numpy array of keys must be one-dimensional uint64 (key hashes), not {} of {} \
                 dimensions: integer keys are hashed with siftdb.filter.hash_u64(keys)",
                arr.dtype(),
                arr.ndim()
            )));
        };
        let ro = arr.readonly();
        return Ok(u64s(&ro).into_owned());
    }
    let keys: Vec<Buf<'_>> = bufs(keys, "key")?;
    let slices: Vec<&[u8]> = keys.iter().map(Buf::as_slice).collect();
    Ok(py.detach(|| slices.iter().map(|k| hash_for(kind, k)).collect()))
}

#[pymethods]
impl PyFilter {
    /// Builds a filter of `kind` (a name of `KINDS`) holding `keys`: a one-dimensional numpy
    /// `uint64` array of 64-bit key hashes (use `hash_keys` / `hash_u64` to get them), or any
    /// iterable of bytes-like keys. Sized by `fpr` (default 0.01) or, for the Bloom kinds,
    /// `bits_per_key`; `packed_binary_fuse` also takes `fingerprint_bits`; the xor and binary
    /// fuse kinds have fixed FPRs and take neither.
    #[staticmethod]
    #[pyo3(signature = (kind, keys, *, fpr = None, bits_per_key = None, fingerprint_bits = None))]
    fn build(
        py: Python<'_>,
        kind: &str,
        keys: &Bound<'_, PyAny>,
        fpr: Option<f64>,
        bits_per_key: Option<f64>,
        fingerprint_bits: Option<u32>,
    ) -> PyResult<PyFilter> {
        let kind = parse_kind(kind)?;
        let params = Params { fpr, bits_per_key, fingerprint_bits };
        if let Ok(arr) = keys.cast::<PyArray1<u64>>() {
            // The hashes are read in place, with the GIL released, no copy.
            let ro = arr.readonly();
            let h = u64s(&ro);
            return py.detach(|| build(kind, params, &h)).map_err(filter_err);
        }
        let h = key_hashes(py, kind, keys)?;
        py.detach(|| build(kind, params, &h)).map_err(filter_err)
    }

    /// Reads a serialized filter (the engine's stable format); `CorruptionError` for bad bytes.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<PyFilter> {
        let b = buf(data, "data")?;
        let s = b.as_slice();
        py.detach(|| load(s)).map_err(filter_err)
    }

    /// Reads a filter file written by `save` (or by Rust's `Filter::to_bytes`).
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<PyFilter> {
        py.detach(|| {
            let bytes = std::fs::read(&path).map_err(|e| {
                crate::errors::Error::new_err(format!("reading {}: {e}", path.display()))
            })?;
            load(&bytes).map_err(filter_err)
        })
    }

    /// The stable serialization (kind tag, parameters, payload, CRC-32).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let b = py.detach(|| self.f.to_bytes());
        PyBytes::new(py, &b)
    }

    /// Writes `to_bytes()` to `path`.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| {
            std::fs::write(&path, self.f.to_bytes()).map_err(|e| {
                crate::errors::Error::new_err(format!("writing {}: {e}", path.display()))
            })
        })
    }

    /// Whether the filter may hold `key` (bytes-like; hashed as `build` hashes byte keys).
    fn contains(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = buf(key, "key")?;
        Ok(self.f.contains_hash(hash_for(self.kind, k.as_slice())))
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.contains(key)
    }

    /// Whether the filter may hold the key of 64-bit hash `h`.
    fn contains_hash(&self, h: u64) -> bool {
        self.f.contains_hash(h)
    }

    /// Probes every hash of a one-dimensional numpy `uint64` array at once (GIL released, the
    /// filter's batch probe with prefetching): a numpy bool array of the same length.
    fn contains_hashes<'py>(
        &self,
        py: Python<'py>,
        hashes: PyReadonlyArray1<'py, u64>,
    ) -> Bound<'py, PyArray1<bool>> {
        let h = u64s(&hashes);
        let out = py.detach(|| {
            let mut out = Vec::with_capacity(h.len());
            self.f.contains_batch(&h, &mut out);
            out
        });
        PyArray1::from_vec(py, out)
    }

    /// Probes every key of an iterable of bytes-like keys: a numpy bool array.
    fn contains_keys<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let h = key_hashes(py, self.kind, keys)?;
        let out = py.detach(|| {
            let mut out = Vec::with_capacity(h.len());
            self.f.contains_batch(&h, &mut out);
            out
        });
        Ok(PyArray1::from_vec(py, out))
    }

    /// The kind's name (one of `KINDS`).
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// Bytes of memory the filter's table takes.
    #[getter]
    fn size_bytes(&self) -> usize {
        self.f.memory_bytes()
    }

    /// Keys the filter holds, where known (`None` for a loaded xor or binary fuse filter,
    /// whose format does not record it).
    #[getter]
    fn keys(&self) -> Option<u64> {
        self.keys
    }

    /// Bits of table per key (`None` for an empty Bloom or cuckoo filter).
    #[getter]
    fn bits_per_key(&self) -> Option<f64> {
        self.bits_per_key
    }

    /// The false-positive rate the filter should show on keys it does not hold: fixed by the
    /// parameters for the static kinds (`2^-r` for ribbon, `2^-w` for xor and fuse), the fill's
    /// estimate for the Bloom kinds, the cuckoo table's `2 * bucket_size / 2^f` bound.
    #[getter]
    fn expected_fpr(&self) -> f64 {
        self.expected_fpr
    }

    fn __repr__(&self) -> String {
        format!(
            "siftdb.filter.Filter(kind={:?}, keys={}, size_bytes={}, expected_fpr={:.3e})",
            self.kind.name(),
            self.keys.map_or("unknown".to_string(), |k| k.to_string()),
            self.f.memory_bytes(),
            self.expected_fpr
        )
    }
}

/// XXH3-64 of every byte key of an iterable: the hashes `Filter.build` takes (and the engine
/// hashes keys with), as a numpy `uint64` array.
#[pyfunction]
fn hash_keys<'py>(
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    Ok(PyArray1::from_vec(py, key_hashes(py, FilterKind::BlockedBloom, keys)?))
}

/// XXH3-64 of every integer key of a numpy `uint64` array, each taken as its 8 little-endian
/// bytes: integer keys (ids, sequential or clustered) into the well-mixed hashes filters need.
#[pyfunction]
fn hash_u64<'py>(py: Python<'py>, keys: PyReadonlyArray1<'py, u64>) -> Bound<'py, PyArray1<u64>> {
    let k = u64s(&keys);
    let out: Vec<u64> = py.detach(|| k.iter().map(|x| hash_key(&x.to_le_bytes())).collect());
    PyArray1::from_vec(py, out)
}

/// Registers the filter API (re-exported by the Python module `siftdb.filter`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFilter>()?;
    m.add_function(wrap_pyfunction!(hash_keys, m)?)?;
    m.add_function(wrap_pyfunction!(hash_u64, m)?)?;
    let kinds: Vec<&str> =
        FilterKind::ALL.iter().filter(|k| **k != FilterKind::Grafite).map(|k| k.name()).collect();
    m.add("FILTER_KINDS", kinds)?;
    Ok(())
}
