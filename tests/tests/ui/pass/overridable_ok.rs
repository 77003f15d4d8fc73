// `#[overridable]` with every kind of parameter and result, dispatchers in other
// modules, explicit lifetimes and `_`-prefixed dispatcher parameters.
use opforge::overrides::{resolve_name, Func};
use opforge::{dispatcher, overridable, DType, Result, Scalar, Tensor};

mod dispatchers {
    use opforge::{dispatcher, DType, Scalar, Tensor};

    #[dispatcher]
    pub fn many_dispatcher(
        x: &Tensor,
        bias: Option<&Tensor>,
        xs: &[Tensor],
        opt: &[Option<Tensor>],
        _k: i64,
        _f: f64,
        _b: bool,
        _s: Scalar,
        _sizes: &[i64],
        _name: &str,
        _dtype: Option<DType>,
    ) -> impl IntoIterator<Item = &Tensor> {
        std::iter::once(x)
            .chain(bias)
            .chain(xs)
            .chain(opt.iter().flatten())
    }
}

#[overridable(dispatcher = dispatchers::many_dispatcher)]
pub fn many(
    x: &Tensor,
    bias: Option<&Tensor>,
    xs: &[Tensor],
    opt: &[Option<Tensor>],
    k: i64,
    f: f64,
    b: bool,
    s: Scalar,
    sizes: &[i64],
    name: &str,
    dtype: Option<DType>,
) -> Result<(Tensor, Tensor)> {
    let _ = (bias, xs, opt, k, f, b, s, sizes, name, dtype);
    Ok((x.clone(), x.clone()))
}

#[dispatcher]
fn explicit<'a>(x: &'a Tensor, y: &'a Tensor) -> Vec<&'a Tensor> {
    vec![x, y]
}

/// Documented.
#[overridable(dispatcher = self::explicit)]
pub(crate) fn count<'a>(x: &'a Tensor, mut y: &'a Tensor) -> Result<i64> {
    if y.numel() == 0 {
        y = x;
    }
    Ok(y.numel() as i64)
}

#[dispatcher]
fn nothing_dispatcher() -> [&'static Tensor; 0] {
    []
}

#[overridable(dispatcher = nothing_dispatcher)]
fn nothing() -> Result<()> {
    Ok(())
}

fn main() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    let (a, _) = many(
        &x,
        None,
        &[],
        &[],
        1,
        2.0,
        true,
        Scalar::Int(3),
        &[2],
        "n",
        Some(DType::Float32),
    )?;
    assert!(a.is_same(&x) || a.shares_storage(&x));
    assert_eq!(count(&x, &x)?, 2);
    nothing()?;
    let f: Func = many_func();
    // `<crate>.many` (trybuild names the crate).
    assert!(resolve_name(f).ends_with(".many"), "{}", resolve_name(f));
    assert_eq!(
        f.signature(),
        "(x, bias=None, xs, opt, k, f, b, s, sizes, name, dtype=None)"
    );
    assert!(resolve_name(count_func()).ends_with(".count"));
    Ok(())
}
