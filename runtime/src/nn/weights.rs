//! State dicts as safetensors files (the format Rust and PyTorch users
//! exchange weights in; PyTorch writes one with
//! `safetensors.torch.save_file(model.state_dict(), path)`), through the
//! `safetensors` crate.
//!
//! Each entry is one tensor under its dotted name, its elements little
//! endian in the tensor's logical order. The dtypes are the runtime's:
//! `BOOL`, `I32`, `I64`, `F32`, `F64`; another in a file (`F16`, `BF16`, …)
//! is an error naming the entry.
//!
//! ```
//! use opforge::nn::{self, Linear, Module, Sequential, Tanh};
//! use opforge::Tensor;
//! let make = || -> opforge::Result<Sequential> {
//!     Ok(Sequential::new().append(Linear::new(4, 3, true)?).append(Tanh::new()))
//! };
//! let (a, b) = (make()?, make()?);
//! let bytes = a.state_dict().to_safetensors()?;
//! let state = nn::StateDict::from_safetensors(&bytes)?;
//! let keys = b.load_state_dict(&state, true)?;
//! assert!(keys.missing_keys.is_empty() && keys.unexpected_keys.is_empty());
//! let x = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.25], &[1, 4])?;
//! assert_eq!(a.forward(&x)?.to_vec::<f32>()?, b.forward(&x)?.to_vec::<f32>()?);
//! # Ok::<(), opforge::Error>(())
//! ```

use super::module::StateDict;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;
use std::path::Path;

fn error(what: impl std::fmt::Display) -> Error {
    Error::Runtime(format!("safetensors: {what}").into())
}

/// The file's dtype of a runtime dtype.
fn file_dtype(d: DType) -> Dtype {
    match d {
        DType::Bool => Dtype::BOOL,
        DType::Int32 => Dtype::I32,
        DType::Int64 => Dtype::I64,
        DType::Float32 => Dtype::F32,
        DType::Float64 => Dtype::F64,
    }
}

/// A tensor's elements as little-endian bytes, in logical order.
fn tensor_bytes(t: &Tensor) -> Result<Vec<u8>> {
    fn bytes<T: crate::tensor::IntoBuffer, const N: usize>(
        t: &Tensor,
        le: impl Fn(T) -> [u8; N],
    ) -> Result<Vec<u8>> {
        Ok(t.to_vec::<T>()?.into_iter().flat_map(le).collect())
    }
    match t.dtype() {
        DType::Bool => bytes::<bool, 1>(t, |b| [u8::from(b)]),
        DType::Int32 => bytes::<i32, 4>(t, i32::to_le_bytes),
        DType::Int64 => bytes::<i64, 8>(t, i64::to_le_bytes),
        DType::Float32 => bytes::<f32, 4>(t, f32::to_le_bytes),
        DType::Float64 => bytes::<f64, 8>(t, f64::to_le_bytes),
    }
}

/// A tensor from a file's entry.
fn tensor_of(name: &str, view: &TensorView<'_>) -> Result<Tensor> {
    fn elements<T: crate::tensor::IntoBuffer, const N: usize>(
        data: &[u8],
        shape: &[usize],
        from: impl Fn([u8; N]) -> T,
    ) -> Result<Tensor> {
        let v: Vec<T> = data
            .chunks_exact(N)
            .map(|c| from(c.try_into().unwrap_or([0; N])))
            .collect();
        Tensor::from_vec(v, shape)
    }
    let (data, shape) = (view.data(), view.shape());
    match view.dtype() {
        Dtype::BOOL => elements::<bool, 1>(data, shape, |[b]| b != 0),
        Dtype::I32 => elements(data, shape, i32::from_le_bytes),
        Dtype::I64 => elements(data, shape, i64::from_le_bytes),
        Dtype::F32 => elements(data, shape, f32::from_le_bytes),
        Dtype::F64 => elements(data, shape, f64::from_le_bytes),
        other => Err(error(format_args!(
            "{name}: dtype {other:?} has no opforge dtype (bool, int32, int64, float32, float64)"
        ))),
    }
}

impl StateDict {
    /// The state dict as the bytes of a safetensors file.
    pub fn to_safetensors(&self) -> Result<Vec<u8>> {
        let data = self
            .iter()
            .map(|(k, t)| Ok((k, t, tensor_bytes(t)?)))
            .collect::<Result<Vec<_>>>()?;
        let views = data
            .iter()
            .map(|(k, t, bytes)| {
                TensorView::new(file_dtype(t.dtype()), t.shape(), bytes)
                    .map(|v| (k.to_string(), v))
                    .map_err(|e| error(format_args!("{k}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        safetensors::serialize(views, None).map_err(error)
    }

    /// A state dict from the bytes of a safetensors file (PyTorch's
    /// `safetensors.torch.save_file` writes one), its entries by name, as
    /// safetensors' readers list them (a file keeps no order: the writers
    /// lay the data out by dtype); a file the crate cannot read, or an
    /// entry of a dtype the runtime has not, is an error naming it.
    pub fn from_safetensors(bytes: &[u8]) -> Result<StateDict> {
        let file = SafeTensors::deserialize(bytes).map_err(error)?;
        let mut entries = file.tensors();
        entries.sort_by(|(a, _), (b, _)| a.cmp(b));
        entries
            .iter()
            .map(|(name, view)| Ok((name.clone(), tensor_of(name, view)?)))
            .collect()
    }

    /// Writes the state dict to a safetensors file at `path`.
    pub fn save_safetensors(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.to_safetensors()?)
            .map_err(|e| error(format_args!("{}: {e}", path.display())))
    }

    /// Reads a state dict from the safetensors file at `path`.
    pub fn load_safetensors(path: impl AsRef<Path>) -> Result<StateDict> {
        let path = path.as_ref();
        let bytes =
            std::fs::read(path).map_err(|e| error(format_args!("{}: {e}", path.display())))?;
        StateDict::from_safetensors(&bytes)
    }
}
