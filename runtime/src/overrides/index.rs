//! Indexing through the protocol's members: [`TensorIndex`] (one index per
//! dimension, as Python's `t[i, a:b:c]`), its boxed form, and what
//! `__getitem__` applies (views through `select` and `slice`).

use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::value::Value;

/// One index of [`Tensor::getitem`] / [`Tensor::setitem`], per dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorIndex {
    /// `t[i]`: selects one position, removing the dimension (negative counts from the end).
    Int(i64),
    /// `t[start:stop:step]`: a strided range, keeping the dimension.
    Slice {
        /// First position (default 0).
        start: Option<i64>,
        /// One past the last (default: the end).
        stop: Option<i64>,
        /// Step (default 1).
        step: i64,
    },
}

impl From<i64> for TensorIndex {
    fn from(i: i64) -> TensorIndex {
        TensorIndex::Int(i)
    }
}

impl From<std::ops::Range<i64>> for TensorIndex {
    fn from(r: std::ops::Range<i64>) -> TensorIndex {
        TensorIndex::Slice {
            start: Some(r.start),
            stop: Some(r.end),
            step: 1,
        }
    }
}

impl From<std::ops::RangeFull> for TensorIndex {
    fn from(_: std::ops::RangeFull) -> TensorIndex {
        TensorIndex::Slice {
            start: None,
            stop: None,
            step: 1,
        }
    }
}

impl TensorIndex {
    /// The boxed form handlers see: an int, or `[start, stop, step]` for a slice.
    pub fn to_value(self) -> Value {
        match self {
            TensorIndex::Int(i) => Value::Int(i),
            TensorIndex::Slice { start, stop, step } => Value::List(
                vec![
                    start.map_or(Value::None, Value::Int),
                    stop.map_or(Value::None, Value::Int),
                    Value::Int(step),
                ]
                .into(),
            ),
        }
    }

    /// Reads the boxed form back.
    pub fn from_value(v: &Value) -> Result<TensorIndex> {
        let opt = |v: &Value| match v {
            Value::None => Ok(None),
            Value::Int(i) => Ok(Some(*i)),
            other => Err(Error::Type(
                format!(
                    "slice indices must be integers or None, not {}",
                    other.type_name()
                )
                .into(),
            )),
        };
        match v {
            Value::Int(i) => Ok(TensorIndex::Int(*i)),
            Value::List(parts) if parts.len() == 3 => Ok(TensorIndex::Slice {
                start: opt(&parts[0])?,
                stop: opt(&parts[1])?,
                step: opt(&parts[2])?.unwrap_or(1),
            }),
            other => Err(Error::Index(
                format!(
                    "only integers and slices are valid indices (got {})",
                    other.type_name()
                )
                .into(),
            )),
        }
    }
}

/// The index list as one boxed value (an int for a single int index).
pub(super) fn index_value(index: &[TensorIndex]) -> Value {
    match index {
        [TensorIndex::Int(i)] => Value::Int(*i),
        _ => Value::List(index.iter().map(|i| i.to_value()).collect()),
    }
}

pub(crate) fn index_list(v: &Value) -> Result<Vec<TensorIndex>> {
    match v {
        Value::List(items)
            if items
                .iter()
                .all(|i| matches!(i, Value::Int(_) | Value::List(_))) =>
        {
            if items.len() == 3 && !items.iter().any(|i| matches!(i, Value::List(_))) {
                // A bare [start, stop, step] is one slice.
                return Ok(vec![TensorIndex::from_value(v)?]);
            }
            items.iter().map(TensorIndex::from_value).collect()
        }
        Value::IntList(is) => Ok(is.iter().map(|&i| TensorIndex::Int(i)).collect()),
        other => Ok(vec![TensorIndex::from_value(other)?]),
    }
}

/// Applies an index to a plain tensor (views through `select` / `slice`).
pub(crate) fn apply_index(t: &Tensor, index: &[TensorIndex]) -> Result<Tensor> {
    let mut out = t.clone();
    let mut dim = 0i64;
    for ix in index {
        match *ix {
            TensorIndex::Int(i) => out = crate::at::select_int(&out, dim, i)?,
            TensorIndex::Slice { start, stop, step } => {
                out = crate::at::slice_Tensor(&out, dim, start, stop, step)?;
                dim += 1;
            }
        }
    }
    Ok(out)
}
