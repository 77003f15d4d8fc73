// Kernels a downstream crate registers, one per shape of signature: every parameter
// and return type of the mapping, `_`-prefixed unused parameters, `'_`, full paths,
// aliases, a module, and one function under two keys. Registered under `Python` and
// `ADInplaceOrView`, keys no built-in kernel uses for these operators (the runtime's
// generated Autograd kernels take `Autograd` for every differentiable operator).
use opforge::dispatch::dispatcher;
use opforge::{kernel, DType, Device, Layout, Result, Scalar, Tensor};

#[kernel(Python, "add.Tensor")]
fn add(self_: &Tensor, _other: &Tensor, _alpha: Scalar) -> Result<Tensor> {
    Ok(self_.clone())
}

#[kernel(Python, "add.out")]
fn add_out(_self_: &Tensor, _other: &Tensor, _alpha: Scalar, out: &mut Tensor) -> Result<Tensor> {
    Ok(out.clone())
}

#[kernel(Python, "max.dim")]
fn max_dim(self_: &'_ Tensor, _dim: i64, _keepdim: bool) -> Result<(Tensor, Tensor)> {
    Ok((self_.clone(), self_.clone()))
}

#[kernel(ADInplaceOrView, "sum.dim_IntList")]
fn sum_dim(
    self_: &opforge::Tensor,
    _dim: Option<&[i64]>,
    _keepdim: bool,
    _dtype: Option<DType>,
) -> std::result::Result<opforge::Tensor, opforge::Error> {
    Ok(self_.clone())
}

#[kernel(Python, "cat")]
fn cat(tensors: &[Tensor], _dim: i64) -> Result<Tensor> {
    Ok(tensors[0].clone())
}

#[kernel(Python, "clamp")]
fn clamp(self_: &Tensor, _min: Option<Scalar>, _max: Option<Scalar>) -> Result<Tensor> {
    Ok(self_.clone())
}

#[kernel(Python, "div.Tensor_mode")]
fn div_mode(self_: &Tensor, _other: &Tensor, _rounding_mode: Option<&str>) -> Result<Tensor> {
    Ok(self_.clone())
}

type Ints<'a> = &'a [i64];

#[kernel(Python, "zeros")]
fn zeros(
    size: Ints<'_>,
    dtype: Option<DType>,
    _layout: Option<Layout>,
    _device: Option<Device>,
    _pin_memory: Option<bool>,
) -> Result<Tensor> {
    let shape: Vec<usize> = size.iter().map(|&n| n as usize).collect();
    Ok(Tensor::zeros(
        &shape,
        dtype.unwrap_or(DType::Float32),
        Device::Cpu,
    ))
}

// One function, two keys.
#[kernel(Python, "mul.Tensor")]
#[kernel(ADInplaceOrView, "mul.Tensor")]
fn mul(self_: &Tensor, _other: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

mod nested {
    use opforge::{kernel, Result, Tensor};

    #[kernel(Python, "neg")]
    pub(crate) fn neg(self_: &Tensor) -> Result<Tensor> {
        Ok(self_.clone())
    }
}

fn main() {
    let errors = dispatcher().registration_errors();
    assert!(errors.is_empty(), "{errors:?}");
    let _ = nested::neg;
}
