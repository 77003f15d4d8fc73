//! Printing tensors as PyTorch prints them (`tensor([1., 2.])`,
//! `torch.Size([2, 3])`).

use super::{cast, Buffer, IntoBuffer, Tensor};
use crate::dtype::{DType, Device};
use ndarray::{ArrayViewD, IxDyn};
use std::fmt;

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// PyTorch's `torch.Size([2, 3])` of a shape, as its messages print it.
pub fn torch_size(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(ToString::to_string).collect();
    format!("torch.Size([{}])", parts.join(", "))
}

/// PyTorch-like printing on one line: `tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float32)`.
impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_fake() {
            return self.fmt_fake(f);
        }
        if let Some(ext) = self.ext() {
            if let Some(r) = ext.class().repr_of(self) {
                return f.write_str(&r);
            }
            if !ext.class().is_tensor_subclass() {
                return write!(f, "<{} object>", ext.class().qualname());
            }
            if self.device() != Device::Meta && matches!(*self.storage().read(), Buffer::Meta(_)) {
                // A wrapper subclass: no data of its own.
                return match self.payload::<Tensor>() {
                    Some(inner) => write!(f, "{}({inner})", ext.class().name()),
                    None => write!(
                        f,
                        "{}(..., size={:?}, dtype={})",
                        ext.class().name(),
                        self.shape(),
                        self.dtype()
                    ),
                };
            }
        }
        let shape = self.shape();
        if self.device() == Device::Meta {
            return write!(
                f,
                "tensor(..., device='meta', size={shape:?}, dtype={}{})",
                self.dtype(),
                self.autograd_suffix()
            );
        }
        if shape.contains(&0) {
            // No elements: PyTorch prints the size unless the tensor is `[0]`.
            return if shape.len() == 1 {
                write!(
                    f,
                    "tensor([], dtype={}{})",
                    self.dtype(),
                    self.autograd_suffix()
                )
            } else {
                write!(
                    f,
                    "tensor([], size={shape:?}, dtype={}{})",
                    self.dtype(),
                    self.autograd_suffix()
                )
            };
        }
        let body = crate::with_dtype!(self.dtype(), S => self.with_view(|v: ArrayViewD<S>| {
            nested_elements(&v, |x: S| element_text(x, self.dtype()))
        }));
        match body {
            Ok(body) => write!(
                f,
                "tensor({body}, dtype={}{})",
                self.dtype(),
                self.autograd_suffix()
            ),
            // The elements cannot be read.
            Err(_) => write!(
                f,
                "tensor(..., size={shape:?}, dtype={}{})",
                self.dtype(),
                self.autograd_suffix()
            ),
        }
    }
}

/// Above this many elements a printed tensor is summarised (PyTorch's
/// `threshold` print option).
const PRINT_THRESHOLD: usize = 1000;
/// Elements printed at each end of a summarised dimension (`edgeitems`).
const PRINT_EDGE_ITEMS: usize = 3;

/// One element as PyTorch prints it in a list: `True`/`False`, integers,
/// floats with a decimal point.
fn element_text<S: IntoBuffer>(x: S, dtype: DType) -> String {
    match dtype {
        DType::Bool => if cast::<S, bool>(x) { "True" } else { "False" }.to_string(),
        DType::Int32 | DType::Int64 => cast::<S, i64>(x).to_string(),
        DType::Float32 => format!("{:?}", cast::<S, f32>(x)),
        DType::Float64 => format!("{:?}", cast::<S, f64>(x)),
    }
}

/// The elements of a non-empty view as nested lists, `[[a, b], [c, d]]`.
/// Above [`PRINT_THRESHOLD`] elements, a dimension longer than twice
/// [`PRINT_EDGE_ITEMS`] shows its first and last items around `...`, as
/// PyTorch summarises: only the shown elements are read, so an expanded view
/// of any size prints in time and memory bounded by its rank. Iterative (no
/// recursion over the dimensions).
fn nested_elements<S: Copy>(v: &ArrayViewD<'_, S>, text: impl Fn(S) -> String) -> String {
    let shape = v.shape();
    let ndim = shape.len();
    let summarise = v.len() > PRINT_THRESHOLD;
    // The entries shown along each dimension; `None` is the `...`.
    let shown: Vec<Vec<Option<usize>>> = shape
        .iter()
        .map(|&n| {
            if summarise && n > 2 * PRINT_EDGE_ITEMS {
                let head = (0..PRINT_EDGE_ITEMS).map(Some);
                let tail = (n - PRINT_EDGE_ITEMS..n).map(Some);
                head.chain([None]).chain(tail).collect()
            } else {
                (0..n).map(Some).collect()
            }
        })
        .collect();
    if ndim == 0 {
        return text(v[IxDyn(&[])]);
    }
    let mut out = String::from("[");
    let mut index = vec![0usize; ndim];
    let mut pos = vec![0usize; ndim];
    let mut d = 0;
    loop {
        if pos[d] > 0 {
            out.push_str(", ");
        }
        match shown[d][pos[d]] {
            None => out.push_str("..."),
            Some(i) => {
                index[d] = i;
                if d + 1 < ndim {
                    d += 1;
                    pos[d] = 0;
                    out.push('[');
                    continue;
                }
                out.push_str(&text(v[IxDyn(&index)]));
            }
        }
        // Next entry at this depth, closing the lists that are done.
        loop {
            pos[d] += 1;
            if pos[d] < shown[d].len() {
                break;
            }
            out.push(']');
            if d == 0 {
                return out;
            }
            d -= 1;
        }
    }
}

impl Tensor {
    /// A fake's `repr`, as PyTorch prints a `FakeTensor`:
    /// `FakeTensor(..., size=(2,))`, with the device unless it is the CPU, the
    /// dtype unless it is the default, and autograd's suffix.
    fn fmt_fake(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FakeTensor(...")?;
        if self.device() != Device::Cpu {
            write!(f, ", device='{}'", self.device())?;
        }
        write!(f, ", size={}", crate::pyfmt::repr_tuple(&self.shape()))?;
        if self.dtype() != DType::Float32 {
            write!(f, ", dtype={}", self.dtype())?;
        }
        write!(f, "{})", self.autograd_suffix())
    }
}
