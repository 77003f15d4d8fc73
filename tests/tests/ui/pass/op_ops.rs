// `#[op]`: operators defined at compile time, called typed (through the
// dispatcher) and boxed by name.
use opforge::dispatch::DispatchKey;
use opforge::library::{self, Library, LibraryKind};
use opforge::{op, DType, Device, Result, Scalar, Tensor, Value};

/// Multiplies by `k`.
#[op("uipass::scale(Tensor x, float k=1.0) -> Tensor")]
pub fn scale(x: &Tensor, k: f64) -> Result<Tensor> {
    x * k
}

#[op("uipass::scale.int(Tensor x, int k) -> Tensor", key = CPU)]
fn scale_int(x: &Tensor, k: i64) -> Result<Tensor> {
    x * (k as f64)
}

#[op("uipass::fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)")]
fn fill_(self_: &mut Tensor, value: Scalar) -> Result<Tensor> {
    self_.fill_scalar(value);
    Ok(self_.clone())
}

#[op("uipass::ones(int[] size, *, Device? device=None) -> Tensor")]
fn ones(size: &[i64], device: Option<Device>) -> Result<Tensor> {
    let shape: Vec<usize> = size.iter().map(|&s| s as usize).collect();
    Ok(Tensor::full(
        &shape,
        Scalar::Int(1),
        DType::Float32,
        device.unwrap_or(Device::Cpu),
    ))
}

#[op("uipass::split2(Tensor x) -> (Tensor, Tensor)")]
fn split2(x: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x.clone(), x.clone()))
}

fn main() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    assert_eq!(scale(&x, 2.0)?.to_vec::<f32>()?, vec![2.0, 4.0]);
    assert_eq!(scale_int(&x, 3)?.to_vec::<f32>()?, vec![3.0, 6.0]);
    let mut y = x.deep_clone()?;
    fill_(&mut y, Scalar::Int(5))?;
    assert_eq!(y.to_vec::<f32>()?, vec![5.0, 5.0]);
    assert_eq!(ones(&[2], None)?.shape(), vec![2]);
    let (a, b) = split2(&x)?;
    assert!(a.is_same(&b));
    let out = library::call("uipass::scale", &[Value::Tensor(x.clone())], &[])?;
    let Value::Tensor(z) = &out[0] else { panic!() };
    assert_eq!(z.to_vec::<f32>()?, vec![1.0, 2.0]);
    // A run-time kernel for an `#[op]` operator: the typed entry point dispatches to it.
    let lib = Library::new("uipass", LibraryKind::Impl)?;
    lib.impl_("scale", DispatchKey::Python, |args: &[Value]| {
        Ok(vec![args[0].clone()])
    })?;
    let _python =
        opforge::dispatch::LocalKeys::include(opforge::dispatch::KeySet::of(DispatchKey::Python));
    assert!(scale(&x, 10.0)?.is_same(&x));
    Ok(())
}
