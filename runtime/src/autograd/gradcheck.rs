//! Gradient checking: [`gradcheck`] and [`gradgradcheck`] (PyTorch's
//! `torch.autograd.gradcheck` / `gradgradcheck`), comparing the gradients the
//! backward engine computes with finite differences.
//!
//! - Slow mode (the default): the whole Jacobian of every differentiable
//!   output with respect to every input that requires grad, numerically by
//!   central differences (`(f(x + eps) - f(x - eps)) / (2 eps)`, one element
//!   perturbed at a time, in a copy of the input that takes its place in the
//!   call: PyTorch perturbs `x.data` in place, which has a version counter of
//!   its own; here the counter lives in the storage, so writing to the input
//!   would invalidate the graph being checked) and analytically by one [`super::grad`] call
//!   per output element with a one-hot gradient; then compared element-wise
//!   with `|a - n| <= atol + rtol * |n|` (`torch.allclose`).
//! - Fast mode (`fast_mode`): random unit vectors `u` (per input) and `v` (per
//!   output); `v^T J u` numerically (one perturbation along `u`) and
//!   analytically (`(v^T J) u`, one backward per output). On a mismatch the
//!   Jacobians are recomputed in slow mode for the message, as PyTorch does.
//!
//! Both also check, as PyTorch's do, that backward is reentrant (two runs
//! agree within `nondet_tol`), that gradients have their input's size (and
//! dtype, with `check_grad_dtypes`), that a zero gradient gives zero input
//! gradients, and (`check_undefined_grad`) that backward accepts zero output
//! gradients. This engine has no undefined gradient (PyTorch's
//! `UndefinedGrad`): an output's gradient is always a tensor, so the
//! undefined-gradient check passes zero tensors where PyTorch passes
//! undefined ones.
//!
//! With `check_forward_ad`, the Jacobians (slow mode) or `v^T J u` (fast
//! mode) are computed by forward mode too ([`super::forward_ad`]: one
//! Jacobian-vector product per input element, or per input along `u`) and
//! compared with the numerical ones, with PyTorch's "Jacobian computed with
//! forward mode mismatch" message.
//!
//! A failed check is an [`Error::Gradcheck`] (PyTorch's `GradcheckError`)
//! with PyTorch's message, or `Ok(false)` with `raise_exception: false`.
//! Errors of another kind (the function failing, an unsupported option) are
//! returned in either case.

use super::engine::grad;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::tensor::{torch_size, DType, Tensor};

/// The options of [`gradcheck`], with PyTorch's defaults ([`Default`]); set
/// them with the builder methods of the same names:
/// `GradcheckOptions::default().atol(1e-4).raise_exception(false)`.
///
/// Not supported yet (setting them to `true` makes [`gradcheck`] return an
/// [`Error::NotImplemented`] naming the option; they are never ignored):
/// `check_batched_grad` and `check_batched_forward_grad` (they need `vmap`,
/// which this runtime does not have), and `masked: Some(true)` (it concerns
/// sparse tensors, which this runtime does not have).
#[derive(Clone, Debug, PartialEq)]
pub struct GradcheckOptions {
    /// Perturbation of the finite differences (1e-6).
    pub eps: f64,
    /// Absolute tolerance (1e-5).
    pub atol: f64,
    /// Relative tolerance (1e-3).
    pub rtol: f64,
    /// Return a failed check as an [`Error::Gradcheck`] (true) or as
    /// `Ok(false)`.
    pub raise_exception: bool,
    /// Tolerance for nondeterminism: two backward passes with the same input
    /// and gradient must agree within it (0.0: exactly).
    pub nondet_tol: f64,
    /// Check that backward accepts zero (PyTorch: undefined) output gradients
    /// and gives zero input gradients for them (true).
    pub check_undefined_grad: bool,
    /// Check that each gradient has its input's dtype (false).
    pub check_grad_dtypes: bool,
    /// Batched gradients through vmap (false; `true` is not supported yet).
    pub check_batched_grad: bool,
    /// Batched forward gradients through vmap (false; `true` is not
    /// supported yet).
    pub check_batched_forward_grad: bool,
    /// Forward-mode gradients (false): with `true`, each input's Jacobian
    /// is also computed by forward-mode AD (a `jvp` per input element,
    /// `crate::autograd::forward_ad`) and compared with the numerical one.
    pub check_forward_ad: bool,
    /// Backward-mode gradients (true).
    pub check_backward_ad: bool,
    /// Compare `v^T J u` for random `u`, `v` instead of whole Jacobians
    /// (false).
    pub fast_mode: bool,
    /// Masked semantics for sparse inputs (None; `Some(true)` is not
    /// supported: there are no sparse tensors).
    pub masked: Option<bool>,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
            raise_exception: true,
            nondet_tol: 0.0,
            check_undefined_grad: true,
            check_grad_dtypes: false,
            check_batched_grad: false,
            check_batched_forward_grad: false,
            check_forward_ad: false,
            check_backward_ad: true,
            fast_mode: false,
            masked: None,
        }
    }
}

macro_rules! builder {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {
        $(
            $(#[$doc])*
            #[must_use]
            pub fn $name(mut self, $name: $ty) -> Self {
                self.$name = $name;
                self
            }
        )*
    };
}

impl GradcheckOptions {
    builder! {
        /// Sets `eps`.
        eps: f64;
        /// Sets `atol`.
        atol: f64;
        /// Sets `rtol`.
        rtol: f64;
        /// Sets `raise_exception`.
        raise_exception: bool;
        /// Sets `nondet_tol`.
        nondet_tol: f64;
        /// Sets `check_undefined_grad`.
        check_undefined_grad: bool;
        /// Sets `check_grad_dtypes`.
        check_grad_dtypes: bool;
        /// Sets `check_batched_grad` (`true` is not supported yet).
        check_batched_grad: bool;
        /// Sets `check_batched_forward_grad` (`true` is not supported yet).
        check_batched_forward_grad: bool;
        /// Sets `check_forward_ad`.
        check_forward_ad: bool;
        /// Sets `check_backward_ad`.
        check_backward_ad: bool;
        /// Sets `fast_mode`.
        fast_mode: bool;
        /// Sets `masked` (`Some(true)` is not supported).
        masked: Option<bool>;
    }

    /// PyTorch's assertions on the combination, then the options this
    /// runtime cannot honour.
    fn validate(&self) -> Result<()> {
        if !self.check_forward_ad && !self.check_backward_ad {
            return Err(Error::Runtime(
                "Expected at least one of check_forward_ad or check_backward_ad to be True".into(),
            ));
        }
        if self.check_batched_grad && !self.check_backward_ad {
            return Err(Error::Runtime(
                "Setting check_batched_grad=True requires check_backward_ad to be True".into(),
            ));
        }
        if self.check_batched_forward_grad && !self.check_forward_ad {
            return Err(Error::Runtime(
                "Setting check_batched_forward_grad=True requires check_forward_ad to be True"
                    .into(),
            ));
        }
        let unsupported = |option: &str, why: &str| {
            Err(Error::NotImplemented(
                format!("gradcheck: {option}=true is not supported yet: {why}; leave it false")
                    .into(),
            ))
        };
        if self.check_batched_grad {
            return unsupported(
                "check_batched_grad",
                "batched gradients need vmap, which opforge does not have",
            );
        }
        if self.check_batched_forward_grad {
            return unsupported(
                "check_batched_forward_grad",
                "batched gradients need vmap, which opforge does not have",
            );
        }
        if self.masked == Some(true) {
            return unsupported(
                "masked",
                "masked semantics concern sparse tensors, which opforge does not have",
            );
        }
        Ok(())
    }
}

/// The options of [`gradgradcheck`], with PyTorch's defaults ([`Default`]);
/// builder methods of the same names set them.
///
/// `check_fwd_over_rev` and `check_batched_grad` set to `true` are not
/// supported yet (forward-mode AD and vmap are not built): [`gradgradcheck`]
/// returns an [`Error::NotImplemented`] naming the option.
#[derive(Clone, Debug)]
pub struct GradgradcheckOptions {
    /// The gradients of the outputs (one per differentiable output); `None`:
    /// random ones in `[-1, 1)` of each output's dtype (float64 for a
    /// non-floating output) that require grad.
    pub grad_outputs: Option<Vec<Tensor>>,
    /// Perturbation of the finite differences (1e-6).
    pub eps: f64,
    /// Absolute tolerance (1e-5).
    pub atol: f64,
    /// Relative tolerance (1e-3).
    pub rtol: f64,
    /// Make the random `grad_outputs` non-contiguous (false).
    pub gen_non_contig_grad_outputs: bool,
    /// As [`GradcheckOptions::raise_exception`] (true).
    pub raise_exception: bool,
    /// As [`GradcheckOptions::nondet_tol`] (0.0).
    pub nondet_tol: f64,
    /// As [`GradcheckOptions::check_undefined_grad`] (true).
    pub check_undefined_grad: bool,
    /// As [`GradcheckOptions::check_grad_dtypes`] (false).
    pub check_grad_dtypes: bool,
    /// As [`GradcheckOptions::check_batched_grad`] (false; `true` is not
    /// supported yet).
    pub check_batched_grad: bool,
    /// Forward over reverse (false; `true` is not supported yet).
    pub check_fwd_over_rev: bool,
    /// Reverse over reverse (true).
    pub check_rev_over_rev: bool,
    /// As [`GradcheckOptions::fast_mode`] (false).
    pub fast_mode: bool,
    /// As [`GradcheckOptions::masked`] (false; `true` is not supported).
    pub masked: bool,
}

impl Default for GradgradcheckOptions {
    fn default() -> Self {
        GradgradcheckOptions {
            grad_outputs: None,
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
            gen_non_contig_grad_outputs: false,
            raise_exception: true,
            nondet_tol: 0.0,
            check_undefined_grad: true,
            check_grad_dtypes: false,
            check_batched_grad: false,
            check_fwd_over_rev: false,
            check_rev_over_rev: true,
            fast_mode: false,
            masked: false,
        }
    }
}

impl GradgradcheckOptions {
    builder! {
        /// Sets `grad_outputs`.
        grad_outputs: Option<Vec<Tensor>>;
        /// Sets `eps`.
        eps: f64;
        /// Sets `atol`.
        atol: f64;
        /// Sets `rtol`.
        rtol: f64;
        /// Sets `gen_non_contig_grad_outputs`.
        gen_non_contig_grad_outputs: bool;
        /// Sets `raise_exception`.
        raise_exception: bool;
        /// Sets `nondet_tol`.
        nondet_tol: f64;
        /// Sets `check_undefined_grad`.
        check_undefined_grad: bool;
        /// Sets `check_grad_dtypes`.
        check_grad_dtypes: bool;
        /// Sets `check_batched_grad` (`true` is not supported yet).
        check_batched_grad: bool;
        /// Sets `check_fwd_over_rev` (`true` is not supported yet).
        check_fwd_over_rev: bool;
        /// Sets `check_rev_over_rev`.
        check_rev_over_rev: bool;
        /// Sets `fast_mode`.
        fast_mode: bool;
        /// Sets `masked` (`true` is not supported).
        masked: bool;
    }
}

fn fail(msg: impl Into<String>) -> Error {
    Error::Gradcheck(msg.into().into())
}

fn values(t: &Tensor) -> Result<Vec<f64>> {
    t.to_vec::<f64>()
}

/// The storage offset of element `k` (in row-major logical order).
fn element_offset(t: &Tensor, mut k: usize) -> usize {
    let shape = t.shape();
    let strides = t.strides();
    let mut off = t.storage_offset();
    for d in (0..shape.len()).rev() {
        let size = shape[d].max(1);
        off += (k % size) * strides[d];
        k /= size;
    }
    off
}

/// A zero-dimensional view of element `k`, without history.
fn element(t: &Tensor, k: usize) -> Result<Tensor> {
    t.strided_view(&[], &[], element_offset(t, k))
}

fn scalar_f64(t: &Tensor) -> Result<f64> {
    Ok(match t.item()? {
        Scalar::Float(x) => x,
        Scalar::Int(i) => i as f64,
        Scalar::Bool(b) => f64::from(u8::from(b)),
    })
}

/// A Jacobian: `rows` (input elements) × `cols` (output elements), row-major,
/// in the input's dtype.
struct Jacobian {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
    dtype: DType,
}

impl Jacobian {
    fn zeros(rows: usize, cols: usize, dtype: DType) -> Jacobian {
        Jacobian {
            rows,
            cols,
            data: vec![0.0; rows * cols],
            dtype,
        }
    }

    /// Rounds to the dtype, as PyTorch's Jacobian tensors of the input's dtype.
    fn round(&mut self) {
        if self.dtype == DType::Float32 {
            for x in &mut self.data {
                *x = *x as f32 as f64;
            }
        }
    }

    fn tensor(&self) -> Result<Tensor> {
        Tensor::from_vec(self.data.clone(), &[self.rows, self.cols])?.to_dtype_copy(self.dtype)
    }

    fn text(&self) -> String {
        self.tensor()
            .map_or_else(|e| format!("<{e}>"), |t| t.to_string())
    }
}

fn allclose(a: &[f64], n: &[f64], rtol: f64, atol: f64) -> bool {
    a.iter().zip(n).all(|(&a, &n)| {
        if a == n {
            return true;
        }
        let d = (a - n).abs();
        d.is_finite() && d <= atol + rtol * n.abs()
    })
}

/// PyTorch's message for a forward-mode Jacobian that differs from the
/// numerical one.
fn forward_notallclose_msg(a: &str, n: &str, output: usize, input: usize) -> String {
    format!(
        "Jacobian computed with forward mode mismatch for output {output} with respect to input {input},\nnumerical:{n}\nanalytical:{a}\n"
    )
}

fn notallclose_msg(a: &str, n: &str, output: usize, input: usize) -> String {
    format!(
        "Jacobian mismatch for output {output} with respect to input {input},\nnumerical:{n}\nanalytical:{a}\n"
    )
}

const FAILED_NONDET_MSG: &str =
    "\n\nNOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
";

const FAST_FAIL_SLOW_OK_MSG: &str =
    "Fast gradcheck failed but element-wise differences are small. This means that the
test might've passed in slow_mode!

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck:

If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `fast_mode=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_fast_mode=False`
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_fast_mode=False`";

const UNDEFINED_NOTE: &str =
    "Please look at \"Notes about undefined output gradients\" in \"tools/autograd/derivatives.yaml\"";

/// One result of the function: shape, dtype, values.
type OutputValues = (Vec<usize>, DType, Vec<f64>);

/// A vector-Jacobian product's rows (one per input that requires grad,
/// `None` for an unused one), whether their sizes and their dtypes are the
/// inputs'.
type Vjp = (Vec<Option<Vec<f64>>>, bool, bool);

/// What one check run works on.
struct Check<'a, F> {
    f: &'a F,
    inputs: &'a [Tensor],
    /// Indices (into `inputs`) of the inputs that require grad.
    diff: Vec<usize>,
    eps: f64,
    rtol: f64,
    atol: f64,
    nondet_tol: f64,
    check_grad_dtypes: bool,
    check_backward_ad: bool,
    check_forward_ad: bool,
}

impl<F> Check<'_, F>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    fn diff_inputs(&self) -> Vec<Tensor> {
        self.diff.iter().map(|&i| self.inputs[i].clone()).collect()
    }

    /// Calls the function on `args`, keeping the results' shapes, dtypes and
    /// values.
    fn call_values(&self, args: &[Tensor]) -> Result<Vec<OutputValues>> {
        (self.f)(args)?
            .iter()
            .map(|o| Ok((o.shape(), o.dtype(), values(o)?)))
            .collect()
    }

    /// `(f(x + delta) - f(x - delta)) / (2 norm)` for every output (None for
    /// a non-floating output), where `delta` (`(element, value)` pairs of
    /// input `which`) perturbs a copy of the input that takes its place in
    /// the call and requires grad as it does. (PyTorch perturbs `x.data` in
    /// place; here the version counter lives in the storage, so a write to
    /// the input itself would invalidate the graph being checked.)
    fn central_difference(
        &self,
        which: usize,
        delta: &[(usize, f64)],
        norm: f64,
        index: Option<usize>,
    ) -> Result<Vec<Option<Vec<f64>>>> {
        let x = &self.inputs[which];
        let copy = x.deep_clone()?;
        if x.requires_grad() {
            copy.set_requires_grad(true)?;
        }
        let mut args = self.inputs.to_vec();
        args[which] = copy.clone();
        let mut orig = Vec::with_capacity(delta.len());
        for &(k, _) in delta {
            let e = element(&copy, k)?;
            orig.push((e.clone(), scalar_f64(&e)?));
        }
        let set = |sign: f64| {
            for ((e, o), &(_, d)) in orig.iter().zip(delta) {
                e.fill_scalar(Scalar::Float(o + sign * d));
            }
        };
        set(-1.0);
        let a = self.call_values(&args)?;
        set(1.0);
        let b = self.call_values(&args)?;
        let on_index = index.map_or(String::new(), |i| format!("on index {i} "));
        let eps_text = if delta.len() == 1 {
            format!("{}", self.eps)
        } else {
            format!("eps * u (eps={})", self.eps)
        };
        a.into_iter()
            .zip(b)
            .map(|((sa, ta, va), (sb, tb, vb))| {
                if sa != sb {
                    return Err(Error::Runtime(format!(
                        "Expected `func` to return outputs with the same shape when inputs are perturbed {on_index}by {eps_text}, but got: shapes {} and {}.",
                        torch_size(&sa), torch_size(&sb)
                    ).into()));
                }
                if ta != tb {
                    return Err(Error::Runtime(format!(
                        "Expected `func` to return outputs with the same dtype when inputs are perturbed {on_index}by {eps_text}, but got: dtypes {} and {}.",
                        ta, tb
                    ).into()));
                }
                Ok(ta.is_floating_point().then(|| {
                    va.iter().zip(&vb).map(|(a, b)| (b - a) / (2.0 * norm)).collect()
                }))
            })
            .collect()
    }

    /// The numerical Jacobians with respect to input `which` (one per
    /// output, `None` for a non-floating output).
    fn numerical(&self, which: usize, outputs: &[Tensor]) -> Result<Vec<Option<Jacobian>>> {
        let x = &self.inputs[which];
        let rows = x.numel();
        let mut jac: Vec<Option<Jacobian>> = outputs
            .iter()
            .map(|o| {
                o.dtype()
                    .is_floating_point()
                    .then(|| Jacobian::zeros(rows, o.numel(), x.dtype()))
            })
            .collect();
        for k in 0..rows {
            let cols = self.central_difference(which, &[(k, self.eps)], self.eps, Some(k))?;
            for (j, col) in jac.iter_mut().zip(cols) {
                if let (Some(j), Some(col)) = (j, col) {
                    let n = j.cols.min(col.len());
                    j.data[k * j.cols..k * j.cols + n].copy_from_slice(&col[..n]);
                }
            }
        }
        for j in jac.iter_mut().flatten() {
            j.round();
        }
        Ok(jac)
    }

    /// `autograd::grad(output, diff inputs, grad_output)`'s values, checked
    /// for size and dtype: `(rows per input, sizes ok, types ok)`.
    fn vjp(&self, output: &Tensor, grad_output: Tensor) -> Result<Vjp> {
        let diff = self.diff_inputs();
        let got = grad(
            std::slice::from_ref(output),
            &diff,
            &[Some(grad_output)],
            Some(true),
            false,
            true,
        )?;
        let mut sizes_ok = true;
        let mut types_ok = true;
        let mut rows = Vec::with_capacity(got.len());
        for (g, x) in got.iter().zip(&diff) {
            match g {
                None => rows.push(None),
                Some(g) => {
                    if g.shape() != x.shape() {
                        sizes_ok = false;
                    } else if g.dtype() != x.dtype() {
                        types_ok = false;
                    }
                    rows.push(Some(values(g)?));
                }
            }
        }
        Ok((rows, sizes_ok, types_ok))
    }

    /// The attribute checks after two analytical computations (PyTorch's
    /// `_check_analytical_jacobian_attributes`).
    fn check_attributes(
        &self,
        first: &[Jacobian],
        second: &[Jacobian],
        sizes_ok: bool,
        types_ok: bool,
    ) -> Result<()> {
        let reentrant = first.iter().zip(second).all(|(a, b)| {
            a.data.is_empty()
                || a.data
                    .iter()
                    .zip(&b.data)
                    .map(|(x, y)| (x - y).abs())
                    .fold(0.0, f64::max)
                    <= self.nondet_tol
        });
        if !types_ok && self.check_grad_dtypes {
            return Err(fail("Gradient has dtype mismatch"));
        }
        if !sizes_ok {
            return Err(fail("Analytical gradient has incorrect size"));
        }
        if !reentrant {
            return Err(fail(format!(
                "Backward is not reentrant, i.e., running backward with same input and grad_output multiple times gives different values, although analytical gradient matches numerical gradient.The tolerance for nondeterminism was {}.{FAILED_NONDET_MSG}",
                crate::pyfmt::repr_float(self.nondet_tol)
            )));
        }
        Ok(())
    }

    /// The analytical Jacobians of `output` with respect to each input that
    /// requires grad, computed twice (reentrancy) and checked.
    fn analytical(&self, output: &Tensor) -> Result<Vec<Jacobian>> {
        let cols = output.numel();
        let once = || -> Result<(Vec<Jacobian>, bool, bool)> {
            let mut jac: Vec<Jacobian> = self
                .diff
                .iter()
                .map(|&i| Jacobian::zeros(self.inputs[i].numel(), cols, self.inputs[i].dtype()))
                .collect();
            let (mut sizes_ok, mut types_ok) = (true, true);
            let mut one_hot = vec![0.0f64; cols];
            for m in 0..cols {
                one_hot.iter_mut().for_each(|x| *x = 0.0);
                one_hot[m] = 1.0;
                let go = Tensor::from_vec(one_hot.clone(), &output.shape())?
                    .to_dtype_copy(output.dtype())?;
                let (rows, s, t) = self.vjp(output, go)?;
                sizes_ok &= s;
                types_ok &= t;
                for (j, row) in jac.iter_mut().zip(rows) {
                    if let Some(row) = row {
                        for (k, v) in row.iter().take(j.rows).enumerate() {
                            j.data[k * cols + m] = *v;
                        }
                    }
                }
            }
            for j in &mut jac {
                j.round();
            }
            Ok((jac, sizes_ok, types_ok))
        };
        let (first, sizes_ok, types_ok) = once()?;
        let (second, _, _) = once()?;
        self.check_attributes(&first, &second, sizes_ok, types_ok)?;
        Ok(first)
    }

    fn slow(&self, func_out: &[Tensor], outputs: &[usize]) -> Result<()> {
        // numerical[input][output of func_out]
        let numerical: Vec<Vec<Option<Jacobian>>> = self
            .diff
            .iter()
            .map(|&i| self.numerical(i, func_out))
            .collect::<Result<_>>()?;
        if outputs.is_empty() {
            return no_differentiable_outputs(&numerical);
        }
        if self.check_backward_ad {
            for (i, &o) in outputs.iter().enumerate() {
                let analytical = self.analytical(&func_out[o])?;
                for (j, a) in analytical.iter().enumerate() {
                    let Some(n) = &numerical[j][o] else { continue };
                    if (!a.data.is_empty() || !n.data.is_empty())
                        && !allclose(&a.data, &n.data, self.rtol, self.atol)
                    {
                        return Err(fail(notallclose_msg(&a.text(), &n.text(), i, j)));
                    }
                }
            }
        }
        if self.check_forward_ad {
            for (j, &which) in self.diff.iter().enumerate() {
                let x = &self.inputs[which];
                let rows = x.numel();
                let mut forward: Vec<Jacobian> = outputs
                    .iter()
                    .map(|&o| Jacobian::zeros(rows, func_out[o].numel(), x.dtype()))
                    .collect();
                let mut one_hot = vec![0.0; rows];
                for k in 0..rows {
                    one_hot.iter_mut().for_each(|v| *v = 0.0);
                    one_hot[k] = 1.0;
                    let cols = self.jvp(j, &one_hot)?;
                    for (jac, &o) in forward.iter_mut().zip(outputs) {
                        let col = &cols[o];
                        let n = jac.cols.min(col.len());
                        jac.data[k * jac.cols..k * jac.cols + n].copy_from_slice(&col[..n]);
                    }
                }
                for (i, (a, &o)) in forward.iter_mut().zip(outputs).enumerate() {
                    a.round();
                    let Some(n) = &numerical[j][o] else { continue };
                    if !allclose(&a.data, &n.data, self.rtol, self.atol) {
                        return Err(fail(forward_notallclose_msg(&a.text(), &n.text(), i, j)));
                    }
                }
            }
        }
        Ok(())
    }

    /// The output tangents (values per output; zeros for an output without
    /// one) of the function at the inputs, with `tangent` on the `j`-th input
    /// that requires grad and zeros on the others: one Jacobian-vector
    /// product by forward mode.
    fn jvp(&self, j: usize, tangent: &[f64]) -> Result<Vec<Vec<f64>>> {
        let _level = super::forward_ad::dual_level()?;
        let mut args = self.inputs.to_vec();
        for (jj, &i) in self.diff.iter().enumerate() {
            let x = &self.inputs[i];
            let t = if jj == j {
                Tensor::from_vec(tangent.to_vec(), &x.shape())?.to_dtype_copy(x.dtype())?
            } else {
                crate::at::zeros_like(x, None, None, None, None, None)?
            };
            args[i] = super::forward_ad::make_dual(x, &t)?;
        }
        (self.f)(&args)?
            .iter()
            .map(|o| match super::forward_ad::unpack_dual(o).tangent {
                Some(t) => values(&t),
                None => Ok(vec![0.0; o.numel()]),
            })
            .collect()
    }

    fn fast(&self, func_out: &[Tensor], outputs: &[usize]) -> Result<()> {
        let mut rng = SplitMix(0x5eed_9c4e_c7ed_0001);
        let all_u: Vec<Vec<f64>> = self
            .diff
            .iter()
            .map(|&i| rng.unit(self.inputs[i].numel()))
            .collect();
        let all_v: Vec<Vec<f64>> = outputs
            .iter()
            .map(|&o| rng.unit(func_out[o].numel()))
            .collect();
        // Numerically: J u per input, then v^T (J u) per output.
        let mut numerical = vec![vec![0.0; self.diff.len()]; outputs.len()];
        for (j, (&which, u)) in self.diff.iter().zip(&all_u).enumerate() {
            let delta: Vec<(usize, f64)> = u
                .iter()
                .enumerate()
                .map(|(k, &x)| (k, self.eps * x))
                .collect();
            let norm = if u.is_empty() { 1.0 } else { self.eps };
            let ju = self.central_difference(which, &delta, norm, None)?;
            if outputs.is_empty() {
                if ju.iter().flatten().flatten().any(|&x| x != 0.0) {
                    return Err(fail("Numerical gradient for function expected to be zero"));
                }
                continue;
            }
            for (i, (&o, v)) in outputs.iter().zip(&all_v).enumerate() {
                numerical[i][j] = ju[o].as_ref().map_or(0.0, |ju| dot(ju, v));
            }
        }
        if outputs.is_empty() {
            return Ok(());
        }
        if self.check_forward_ad {
            // By forward mode: v^T (J u), one Jacobian-vector product per input.
            for (j, u) in all_u.iter().enumerate() {
                let ju = self.jvp(j, u)?;
                for (i, (&o, v)) in outputs.iter().zip(&all_v).enumerate() {
                    let a = dot(&ju[o], v);
                    let n = numerical[i][j];
                    if !allclose(&[a], &[n], self.rtol, self.atol) {
                        return Err(fail(forward_notallclose_msg(
                            &crate::pyfmt::repr_float(a),
                            &crate::pyfmt::repr_float(n),
                            i,
                            j,
                        )));
                    }
                }
            }
        }
        if !self.check_backward_ad {
            return Ok(());
        }
        // Analytically: (v^T J) u.
        for (i, (&o, v)) in outputs.iter().zip(&all_v).enumerate() {
            let out = &func_out[o];
            let go = Tensor::from_vec(v.clone(), &out.shape())?.to_dtype_copy(out.dtype())?;
            let once = || -> Result<(Vec<Jacobian>, bool, bool)> {
                let (rows, s, t) = self.vjp(out, go.clone())?;
                let jac = rows
                    .into_iter()
                    .zip(&self.diff)
                    .map(|(r, &x)| {
                        let x = &self.inputs[x];
                        let mut j = Jacobian::zeros(x.numel(), 1, x.dtype());
                        if let Some(r) = r {
                            for (d, v) in j.data.iter_mut().zip(r) {
                                *d = v;
                            }
                        }
                        j
                    })
                    .collect();
                Ok((jac, s, t))
            };
            let (first, sizes_ok, types_ok) = once()?;
            let (second, _, _) = once()?;
            self.check_attributes(&first, &second, sizes_ok, types_ok)?;
            for (j, (vj, u)) in first.iter().zip(&all_u).enumerate() {
                let a = dot(&vj.data, u);
                let n = numerical[i][j];
                if !allclose(&[a], &[n], self.rtol, self.atol) {
                    let mut msg = notallclose_msg(
                        &crate::pyfmt::repr_float(a),
                        &crate::pyfmt::repr_float(n),
                        i,
                        j,
                    );
                    msg.push_str(&self.slow_mode_message(func_out, o, self.diff[j], j)?);
                    return Err(fail(msg));
                }
            }
        }
        Ok(())
    }

    /// PyTorch's `_run_slow_mode_and_get_error`: the whole Jacobians of one
    /// output and input, for a fast-mode failure's message.
    fn slow_mode_message(
        &self,
        func_out: &[Tensor],
        output: usize,
        input: usize,
        j: usize,
    ) -> Result<String> {
        let numerical = self.numerical(input, func_out)?.swap_remove(output);
        let analytical = self
            .analytical(&func_out[output])
            .map(|mut a| a.swap_remove(j));
        let (Some(n), Ok(a)) = (numerical, analytical) else {
            return Ok(String::new());
        };
        let max_diff = a
            .data
            .iter()
            .zip(&n.data)
            .map(|(a, n)| (n - a).abs())
            .fold(0.0, f64::max);
        let mut msg = format!(
            "\nThe above quantities relating the numerical and analytical jacobians are computed \nin fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \nabout fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\nNumerical:\n {}\nAnalytical:\n{}\n\nThe max per-element difference (slow mode) is: {}.\n",
            n.text(),
            a.text(),
            crate::pyfmt::repr_float(max_diff)
        );
        if allclose(&a.data, &n.data, self.rtol, self.atol) {
            msg.push_str(FAST_FAIL_SLOW_OK_MSG);
        }
        Ok(msg)
    }

    /// PyTorch's `_test_backward_mul_by_grad_output`: zero output gradients
    /// give zero input gradients of the inputs' dtype and size.
    fn backward_mul_by_grad_output(&self, outputs: &[Tensor]) -> Result<()> {
        if outputs.is_empty() {
            return Ok(());
        }
        let diff = self.diff_inputs();
        let zeros: Vec<Option<Tensor>> = outputs
            .iter()
            .map(|o| Some(Tensor::zeros(&o.shape(), o.dtype(), o.device())))
            .collect();
        let got = grad(outputs, &diff, &zeros, None, false, true)?;
        for (gi, di) in got.iter().zip(&diff) {
            let Some(gi) = gi else { continue };
            if values(gi)?.iter().any(|&x| x != 0.0) {
                return Err(fail("backward not multiplied by grad_output"));
            }
            if gi.dtype() != di.dtype() {
                return Err(fail("grad is incorrect type"));
            }
            if gi.device() != di.device() {
                return Err(fail("grad is incorrect device"));
            }
            if gi.shape() != di.shape() {
                return Err(fail("grad is incorrect size"));
            }
        }
        Ok(())
    }

    /// PyTorch's `_test_undefined_backward_mode`, with zero tensors standing
    /// for undefined gradients (see the module docs): every output's
    /// gradient zero, and, with several outputs, each one's in turn (the
    /// others' computed afresh).
    fn undefined_grad(&self, outputs_len: usize) -> Result<()> {
        let diff = self.diff_inputs();
        let warn_bc_breaking = || {
            crate::warnings::warn(
                "Backwards compatibility: New undefined gradient support checking feature is enabled by default, but it may break existing callers of this function. If this is true for you, you can call this function with \"check_undefined_grad=False\" to disable the feature",
            )
        };
        let check = |outputs: Vec<Tensor>| -> Result<()> {
            let zeros: Vec<Option<Tensor>> = outputs
                .iter()
                .map(|o| Some(Tensor::zeros(&o.shape(), o.dtype(), o.device())))
                .collect();
            let got = match grad(&outputs, &diff, &zeros, None, false, true) {
                Ok(g) => g,
                // PyTorch catches `RuntimeError` (NotImplementedError is one).
                Err(Error::Runtime(_) | Error::NotImplemented(_) | Error::NoKernel(_)) => {
                    warn_bc_breaking();
                    return Err(fail(format!(
                        "Expected backward function to handle undefined output grads. {UNDEFINED_NOTE}"
                    )));
                }
                Err(e) => return Err(e),
            };
            for gi in got.iter().flatten() {
                if values(gi)?.iter().any(|&x| x != 0.0) {
                    warn_bc_breaking();
                    return Err(fail(format!(
                        "Expected all input grads to be undefined or zero when all output grads are undefined or zero. {UNDEFINED_NOTE}"
                    )));
                }
            }
            Ok(())
        };
        let differentiable = |out: Vec<Tensor>| -> Vec<Tensor> {
            out.into_iter().filter(Tensor::requires_grad).collect()
        };
        let first = differentiable((self.f)(self.inputs)?);
        let several = first.len() > 1;
        check(first)?;
        if several {
            for _ in 0..outputs_len {
                check(differentiable((self.f)(self.inputs)?))?;
            }
        }
        Ok(())
    }
}

fn no_differentiable_outputs(numerical: &[Vec<Option<Jacobian>>]) -> Result<()> {
    if numerical
        .iter()
        .flatten()
        .flatten()
        .any(|j| j.data.iter().any(|&x| x != 0.0))
    {
        return Err(fail("Numerical gradient for function expected to be zero"));
    }
    Ok(())
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

/// The random unit vectors of fast mode, from a generator of gradcheck's own
/// (the user's generator is left alone, as PyTorch leaves it with a
/// `torch.Generator()` of its own).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `torch.rand(n)` divided by its norm.
    fn unit(&mut self, n: usize) -> Vec<f64> {
        let mut v: Vec<f64> = (0..n).map(|_| self.next()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

/// PyTorch's `_check_inputs`: the non-double warning, no overlapping
/// inputs, at least one input that requires grad. Returns the indices of the
/// inputs that require grad.
fn check_inputs(inputs: &[Tensor]) -> Result<Vec<usize>> {
    let mut diff = Vec::new();
    for (idx, inp) in inputs.iter().enumerate() {
        if !inp.requires_grad() {
            continue;
        }
        if inp.dtype() != DType::Float64 {
            crate::warnings::warn(&format!(
                "Input #{idx} requires gradient and is not a double precision floating point or complex. This check will likely fail if all the inputs are not of double precision floating point or complex. "
            ));
        }
        if !inp
            .strides()
            .iter()
            .zip(inp.shape())
            .all(|(&st, sz)| st > 0 || sz <= 1)
        {
            return Err(Error::Runtime(format!(
                "The {idx}th input has a dimension with stride 0. gradcheck only supports inputs that are non-overlapping to be able to compute the numerical gradients correctly. You should call .contiguous on the input before passing it to gradcheck."
            ).into()));
        }
        diff.push(idx);
    }
    if diff.is_empty() {
        return Err(Error::Value(
            "gradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True.".into(),
        ));
    }
    Ok(diff)
}

/// Checks the gradients of `f` at `inputs` (those that require grad are
/// differentiated) against finite differences: PyTorch's
/// `torch.autograd.gradcheck` (see the module docs and [`GradcheckOptions`]).
///
/// Returns `Ok(true)` when every check passes. A failed check is an
/// [`Error::Gradcheck`] with PyTorch's message (`Jacobian mismatch for output
/// 0 with respect to input 0,\nnumerical:…\nanalytical:…\n`), or `Ok(false)`
/// with `raise_exception(false)`; other errors (from `f`, from an option that
/// is not supported) are returned either way. An input that requires grad
/// and is not float64 gets PyTorch's warning on stderr (once).
///
/// ```
/// use opforge::autograd::{gradcheck, GradcheckOptions, TensorAutograd};
/// use opforge::{at, Tensor};
/// let x = Tensor::from_vec(vec![0.5f64, -1.25, 2.0], &[3])?;
/// x.set_requires_grad(true)?;
/// let cube = |xs: &[Tensor]| -> opforge::Result<Vec<Tensor>> {
///     let x2 = at::mul_Tensor(&xs[0], &xs[0])?;
///     Ok(vec![at::mul_Tensor(&x2, &xs[0])?])
/// };
/// assert!(gradcheck(cube, &[x.clone()], &GradcheckOptions::default())?);
///
/// // x * x.detach(): the analytical gradient is x, the numerical one 2x.
/// let wrong = |xs: &[Tensor]| -> opforge::Result<Vec<Tensor>> {
///     Ok(vec![at::mul_Tensor(&xs[0], &xs[0].detach()?)?])
/// };
/// let opts = GradcheckOptions::default().raise_exception(false);
/// assert!(!gradcheck(wrong, &[x.clone()], &opts)?);
/// let err = gradcheck(wrong, &[x], &GradcheckOptions::default()).unwrap_err();
/// assert_eq!(err.python_class(), "GradcheckError");
/// assert!(err.to_string().starts_with("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn gradcheck<F>(f: F, inputs: &[Tensor], opts: &GradcheckOptions) -> Result<bool>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    opts.validate()?;
    match gradcheck_helper(&f, inputs, opts) {
        Ok(()) => Ok(true),
        Err(Error::Gradcheck(_)) if !opts.raise_exception => Ok(false),
        Err(e) => Err(e),
    }
}

fn gradcheck_helper<F>(f: &F, inputs: &[Tensor], opts: &GradcheckOptions) -> Result<()>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let diff = check_inputs(inputs)?;
    let func_out = f(inputs)?;
    let outputs: Vec<usize> = (0..func_out.len())
        .filter(|&i| func_out[i].requires_grad())
        .collect();
    let check = Check {
        f,
        inputs,
        diff,
        eps: opts.eps,
        rtol: opts.rtol,
        atol: opts.atol,
        nondet_tol: opts.nondet_tol,
        check_grad_dtypes: opts.check_grad_dtypes,
        check_backward_ad: opts.check_backward_ad,
        check_forward_ad: opts.check_forward_ad,
    };
    if opts.fast_mode {
        check.fast(&func_out, &outputs)?;
    } else {
        check.slow(&func_out, &outputs)?;
    }
    if !opts.check_backward_ad {
        return Ok(());
    }
    let diff_outputs: Vec<Tensor> = outputs.iter().map(|&i| func_out[i].clone()).collect();
    check.backward_mul_by_grad_output(&diff_outputs)?;
    if opts.check_undefined_grad {
        check.undefined_grad(diff_outputs.len())?;
    }
    Ok(())
}

/// Random `[-1, 1)` values of `shape` and `dtype` that require grad
/// (`torch.testing.make_tensor(..., low=-1, high=1, requires_grad=True)`),
/// non-contiguous (every other element of a buffer twice as long in the last
/// dimension) if asked and possible.
fn random_grad_output(shape: &[usize], dtype: DType, noncontiguous: bool) -> Result<Tensor> {
    let numel: usize = shape.iter().product();
    let sizes: Vec<i64> = vec![numel as i64 * if noncontiguous && numel > 1 { 2 } else { 1 }];
    let r = crate::at::rand(&sizes, Some(DType::Float64), None, None, None)?;
    let v: Vec<f64> = values(&r)?.iter().map(|x| 2.0 * x - 1.0).collect();
    let base = Tensor::from_vec(v, &[v_len(&sizes)])?.to_dtype_copy(dtype)?;
    let t = if noncontiguous && numel > 1 {
        let mut strides = vec![0usize; shape.len()];
        let mut acc = 2usize;
        for d in (0..shape.len()).rev() {
            strides[d] = acc;
            acc *= shape[d];
        }
        base.strided_view(shape, &strides, 0)?
    } else {
        base.strided_view(shape, &crate::tensor::contiguous_strides(shape), 0)?
    };
    t.set_requires_grad(true)?;
    Ok(t)
}

fn v_len(sizes: &[i64]) -> usize {
    sizes.iter().map(|&s| s as usize).product()
}

/// Checks second derivatives: PyTorch's `torch.autograd.gradgradcheck`.
/// Runs [`gradcheck`] on `(inputs, grad_outputs) ↦ autograd::grad(f(inputs),
/// inputs that require grad, grad_outputs, create_graph = true)` (the
/// gradients that are defined), with random `grad_outputs` that require grad
/// unless [`GradgradcheckOptions::grad_outputs`] gives them.
///
/// ```
/// use opforge::autograd::{gradgradcheck, GradgradcheckOptions};
/// use opforge::{at, Tensor};
/// let x = Tensor::from_vec(vec![0.5f64, -1.25, 2.0], &[3])?;
/// x.set_requires_grad(true)?;
/// let cube = |xs: &[Tensor]| -> opforge::Result<Vec<Tensor>> {
///     let x2 = at::mul_Tensor(&xs[0], &xs[0])?;
///     Ok(vec![at::mul_Tensor(&x2, &xs[0])?])
/// };
/// assert!(gradgradcheck(cube, &[x], &GradgradcheckOptions::default())?);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn gradgradcheck<F>(f: F, inputs: &[Tensor], opts: &GradgradcheckOptions) -> Result<bool>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    if !opts.check_fwd_over_rev && !opts.check_rev_over_rev {
        return Err(Error::Runtime(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True".into(),
        ));
    }
    if opts.check_undefined_grad && !opts.check_rev_over_rev {
        return Err(Error::Runtime(
            "Setting check_undefined_grad=True and check_rev_over_rev=False is not supported. Please set check_undefined_grad=False".into(),
        ));
    }
    if opts.check_fwd_over_rev {
        return Err(Error::NotImplemented(
            "gradgradcheck: check_fwd_over_rev=true is not supported yet: forward mode through a backward graph (the first-order gradients as functions of dual inputs) is not wired up; leave it false (gradcheck's check_forward_ad works)".into(),
        ));
    }
    let gc = GradcheckOptions {
        eps: opts.eps,
        atol: opts.atol,
        rtol: opts.rtol,
        raise_exception: opts.raise_exception,
        nondet_tol: opts.nondet_tol,
        check_undefined_grad: opts.check_undefined_grad,
        check_grad_dtypes: opts.check_grad_dtypes,
        check_batched_grad: opts.check_batched_grad,
        check_batched_forward_grad: false,
        check_forward_ad: opts.check_fwd_over_rev,
        check_backward_ad: opts.check_rev_over_rev,
        fast_mode: opts.fast_mode,
        masked: Some(opts.masked),
    };
    gc.validate()?;
    let grad_outputs = match &opts.grad_outputs {
        Some(g) => g.clone(),
        None => f(inputs)?
            .iter()
            .filter(|o| o.requires_grad())
            .map(|o| {
                let dtype = if o.dtype().is_floating_point() {
                    o.dtype()
                } else {
                    DType::Float64
                };
                random_grad_output(&o.shape(), dtype, opts.gen_non_contig_grad_outputs)
            })
            .collect::<Result<_>>()?,
    };
    let n_in = inputs.len();
    let diff: Vec<usize> = (0..n_in).filter(|&i| inputs[i].requires_grad()).collect();
    let new_func = |args: &[Tensor]| -> Result<Vec<Tensor>> {
        let (xs, gos) = args.split_at(n_in);
        let outputs: Vec<Tensor> = f(xs)?.into_iter().filter(Tensor::requires_grad).collect();
        let diff_xs: Vec<Tensor> = diff.iter().map(|&i| xs[i].clone()).collect();
        let gos: Vec<Option<Tensor>> = gos.iter().cloned().map(Some).collect();
        Ok(grad(&outputs, &diff_xs, &gos, None, true, true)?
            .into_iter()
            .flatten()
            .collect())
    };
    let mut all = inputs.to_vec();
    all.extend(grad_outputs);
    gradcheck(new_func, &all, &gc)
}
