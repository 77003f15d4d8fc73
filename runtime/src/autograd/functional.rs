//! Functional transforms built on the engines (`torch.autograd.functional`,
//! `torch.func`).

use super::forward_ad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// `torch.func.jvp(f, primals, tangents)`: the outputs of `f` at `primals`
/// and their Jacobian-vector products with `tangents`, by forward mode (one
/// pass, at a new forward level). An output that does not depend on the
/// primals gets a zero tangent.
///
/// ```
/// use opforge::autograd::functional::jvp;
/// use opforge::{at, Tensor};
/// let x = Tensor::from_vec(vec![0.0f64, 1.0], &[2])?;
/// let v = Tensor::from_vec(vec![1.0f64, 1.0], &[2])?;
/// let (out, tangents) = jvp(|xs| Ok(vec![at::sin(&xs[0])?]), &[x], &[v])?;
/// assert_eq!(tangents[0].to_vec::<f64>()?, vec![1.0, 1.0f64.cos()]);
/// assert_eq!(out[0].to_vec::<f64>()?[0], 0.0);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn jvp(
    f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
    primals: &[Tensor],
    tangents: &[Tensor],
) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    if primals.len() != tangents.len() {
        return Err(Error::Runtime(
            format!(
                "jvp: Expected primals and tangents to have the same length but got {} primals and {} tangents",
                primals.len(),
                tangents.len()
            )
            .into(),
        ));
    }
    let _level = forward_ad::dual_level()?;
    let duals = primals
        .iter()
        .zip(tangents)
        .map(|(p, t)| forward_ad::make_dual(p, t))
        .collect::<Result<Vec<_>>>()?;
    let outs = f(&duals)?;
    let mut values = Vec::with_capacity(outs.len());
    let mut jvps = Vec::with_capacity(outs.len());
    for o in &outs {
        let u = forward_ad::unpack_dual(o);
        let t = match u.tangent {
            Some(t) => t,
            None => crate::at::zeros_like(&u.primal, None, None, None, None, None)?,
        };
        values.push(u.primal);
        jvps.push(t);
    }
    Ok((values, jvps))
}
