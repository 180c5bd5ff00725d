//! In-memory column values: what a caller appends and what a scan returns.

use crate::schema::ColumnType;
use siftdb::{Error, Result};
use std::cmp::Ordering;

/// One cell value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A null (only in nullable columns).
    Null,
    /// A `u64` cell.
    U64(u64),
    /// An `i64` cell.
    I64(i64),
    /// An `f64` cell.
    F64(f64),
    /// A `bytes` cell.
    Bytes(Vec<u8>),
}

impl Value {
    /// The column type this value belongs to (`None` for null).
    pub fn ty(&self) -> Option<ColumnType> {
        Some(match self {
            Value::Null => return None,
            Value::U64(_) => ColumnType::U64,
            Value::I64(_) => ColumnType::I64,
            Value::F64(_) => ColumnType::F64,
            Value::Bytes(_) => ColumnType::Bytes,
        })
    }

    /// Total order between two non-null values of the same type (`f64::total_cmp` for
    /// doubles); `None` when the types differ or either is null.
    pub fn cmp_same(&self, other: &Value) -> Option<Ordering> {
        Some(match (self, other) {
            (Value::U64(a), Value::U64(b)) => a.cmp(b),
            (Value::I64(a), Value::I64(b)) => a.cmp(b),
            (Value::F64(a), Value::F64(b)) => a.total_cmp(b),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            _ => return None,
        })
    }

    /// The Parquet split-block hash of the value's plain encoding (XXH64, seed 0), as stored in
    /// the chunk filters. Null has no hash.
    pub fn sbbf_hash(&self) -> Option<u64> {
        use siftdb::filter::SplitBlockBloom as S;
        Some(match self {
            Value::Null => return None,
            Value::U64(v) => S::hash_u64(*v),
            Value::I64(v) => S::hash_i64(*v),
            Value::F64(v) => S::hash_f64(*v),
            Value::Bytes(v) => S::hash_bytes(v),
        })
    }
}

/// The values of one column, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnData {
    /// `u64` values.
    U64(Vec<u64>),
    /// `i64` values.
    I64(Vec<i64>),
    /// `f64` values.
    F64(Vec<f64>),
    /// `bytes` values.
    Bytes(Vec<Vec<u8>>),
}

impl ColumnData {
    /// An empty column of type `ty`.
    pub fn empty(ty: ColumnType) -> ColumnData {
        match ty {
            ColumnType::U64 => ColumnData::U64(Vec::new()),
            ColumnType::I64 => ColumnData::I64(Vec::new()),
            ColumnType::F64 => ColumnData::F64(Vec::new()),
            ColumnType::Bytes => ColumnData::Bytes(Vec::new()),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            ColumnData::U64(v) => v.len(),
            ColumnData::I64(v) => v.len(),
            ColumnData::F64(v) => v.len(),
            ColumnData::Bytes(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The type of the values.
    pub fn ty(&self) -> ColumnType {
        match self {
            ColumnData::U64(_) => ColumnType::U64,
            ColumnData::I64(_) => ColumnType::I64,
            ColumnData::F64(_) => ColumnType::F64,
            ColumnData::Bytes(_) => ColumnType::Bytes,
        }
    }

    /// Value `i` (panics if out of range, like slice indexing).
    pub fn value(&self, i: usize) -> Value {
        match self {
            ColumnData::U64(v) => Value::U64(v[i]),
            ColumnData::I64(v) => Value::I64(v[i]),
            ColumnData::F64(v) => Value::F64(v[i]),
            ColumnData::Bytes(v) => Value::Bytes(v[i].clone()),
        }
    }

    /// Appends a value of the column's type, or the type's default (0, empty) for null.
    pub(crate) fn push(&mut self, v: &Value) -> Result<()> {
        match (self, v) {
            (ColumnData::U64(c), Value::U64(x)) => c.push(*x),
            (ColumnData::I64(c), Value::I64(x)) => c.push(*x),
            (ColumnData::F64(c), Value::F64(x)) => c.push(*x),
            (ColumnData::Bytes(c), Value::Bytes(x)) => c.push(x.clone()),
            (ColumnData::U64(c), Value::Null) => c.push(0),
            (ColumnData::I64(c), Value::Null) => c.push(0),
            (ColumnData::F64(c), Value::Null) => c.push(0.0),
            (ColumnData::Bytes(c), Value::Null) => c.push(Vec::new()),
            (c, v) => {
                return Err(Error::invalid(format!("value {v:?} in a {} column", c.ty().name())))
            }
        }
        Ok(())
    }
}

/// A column: values plus, for nullable columns, a validity vector (`false` = null; the value
/// slot of a null holds the type's default).
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The values.
    pub data: ColumnData,
    /// `Some(v)`: `v[i]` is false when row `i` is null. `None`: no nulls.
    pub validity: Option<Vec<bool>>,
}

impl Column {
    /// A column without nulls.
    pub fn new(data: ColumnData) -> Column {
        Column { data, validity: None }
    }

    /// A column with a validity vector (must have the same length).
    pub fn with_validity(data: ColumnData, validity: Vec<bool>) -> Result<Column> {
        if validity.len() != data.len() {
            return Err(Error::invalid("validity length differs from value count"));
        }
        Ok(Column { data, validity: Some(validity) })
    }

    /// An empty column of type `ty`.
    pub fn empty(ty: ColumnType, nullable: bool) -> Column {
        Column { data: ColumnData::empty(ty), validity: nullable.then(Vec::new) }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Whether row `i` is null.
    pub fn is_null(&self, i: usize) -> bool {
        self.validity.as_ref().is_some_and(|v| !v[i])
    }

    /// Row `i` as a [`Value`] (`Value::Null` for a null).
    pub fn get(&self, i: usize) -> Value {
        if self.is_null(i) {
            Value::Null
        } else {
            self.data.value(i)
        }
    }

    /// Appends a value (or null, if the column has a validity vector).
    pub(crate) fn push(&mut self, v: &Value) -> Result<()> {
        match (&mut self.validity, v) {
            (None, Value::Null) => return Err(Error::invalid("null in a non-nullable column")),
            (Some(val), v) => val.push(!matches!(v, Value::Null)),
            (None, _) => {}
        }
        self.data.push(v)
    }
}
