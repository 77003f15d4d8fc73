//! Forward-mode AD (PyTorch's `torch.autograd.forward_ad`): dual tensors
//! carry a tangent, and every Autograd kernel whose inputs carry tangents
//! computes its outputs' tangents from the operator's forward formula
//! (`result:` in `derivatives.yaml`, or derived from the backward formula for
//! `auto_element_wise` / `auto_linear`, as torchgen derives them).
//!
//! ```
//! use opforge::autograd::forward_ad;
//! use opforge::{at, Tensor};
//! let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
//! let v = Tensor::from_vec(vec![1.0f64, 0.5], &[2])?;
//! let _level = forward_ad::dual_level()?;
//! let dual = forward_ad::make_dual(&x, &v)?;
//! let y = at::mul_Tensor(&dual, &dual)?; // d(x²) = 2x·v
//! let t = forward_ad::unpack_dual(&y).tangent.unwrap();
//! assert_eq!(t.to_vec::<f64>()?, vec![2.0, 2.0]);
//! # Ok::<(), opforge::Error>(())
//! ```
//!
//! Levels: one at a time, as in PyTorch ("Nested forward mode AD is not
//! supported at the moment"). Unlike PyTorch's, whose level is global, a level
//! belongs to the thread that entered it (as grad mode does), so threads
//! differentiate independently. Leaving a level clears the tangents made in
//! it.

use super::mode::below_autograd;
use super::saved::shallow_detach;
use crate::error::{Error, Result};
use crate::tensor::{Tensor, WeakTensor};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_LEVEL: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The level in force on this thread (0: none, or suspended while a
    /// forward formula runs).
    static CURRENT: Cell<u64> = const { Cell::new(0) };
    /// The entered level (kept while formulas suspend `CURRENT`).
    static ENTERED: Cell<u64> = const { Cell::new(0) };
    /// The tensors given tangents at the entered level, cleared on exit.
    static REGISTERED: RefCell<Registered> = const { RefCell::new(Registered::new()) };
}

/// The tensors given tangents at the entered level, each once while it
/// lives: a tensor dropped since, or registered twice, is pruned once the
/// list has doubled since the last pruning, so the list stays proportional
/// to the dual tensors alive (each entry holds its dropped tensor's record
/// until it is pruned).
struct Registered {
    list: Vec<WeakTensor>,
    prune_at: usize,
}

impl Registered {
    const MIN_PRUNE: usize = 64;

    const fn new() -> Registered {
        Registered {
            list: Vec::new(),
            prune_at: Registered::MIN_PRUNE,
        }
    }

    fn push(&mut self, t: WeakTensor) {
        if self.list.len() >= self.prune_at {
            self.prune();
        }
        self.list.push(t);
    }

    fn prune(&mut self) {
        let mut seen = std::collections::HashSet::with_capacity(self.list.len());
        let mut kept: Vec<WeakTensor> = Vec::with_capacity(self.list.len());
        for t in self.list.drain(..) {
            if !t.is_dropped() && seen.insert(t.addr()) {
                kept.push(t);
            }
        }
        self.prune_at = (2 * kept.len()).max(Registered::MIN_PRUNE);
        self.list = kept;
    }

    fn take(&mut self) -> Vec<WeakTensor> {
        self.prune_at = Registered::MIN_PRUNE;
        std::mem::take(&mut self.list)
    }
}

/// The forward level in force on this thread, if any.
#[inline]
pub fn current_level() -> Option<u64> {
    match CURRENT.with(Cell::get) {
        0 => None,
        l => Some(l),
    }
}

/// A forward level, entered by [`dual_level`] and left when dropped (which
/// clears every tangent made at it). It belongs to the thread that entered
/// the level (not `Send`).
#[derive(Debug)]
#[must_use = "the level ends when this guard is dropped"]
pub struct DualLevel {
    level: u64,
    _thread: std::marker::PhantomData<*const ()>,
}

/// Enters a new forward level on this thread (`with fwAD.dual_level():`).
/// A second level while one is in force is PyTorch's error.
pub fn dual_level() -> Result<DualLevel> {
    if ENTERED.with(Cell::get) != 0 {
        return Err(Error::Runtime(
            "Nested forward mode AD is not supported at the moment".into(),
        ));
    }
    let level = NEXT_LEVEL.fetch_add(1, Ordering::Relaxed);
    ENTERED.with(|c| c.set(level));
    CURRENT.with(|c| c.set(level));
    Ok(DualLevel {
        level,
        _thread: std::marker::PhantomData,
    })
}

impl DualLevel {
    /// The level's number.
    pub fn level(&self) -> u64 {
        self.level
    }
}

impl Drop for DualLevel {
    fn drop(&mut self) {
        let tensors = REGISTERED.with(|r| r.borrow_mut().take());
        for t in tensors.iter().filter_map(WeakTensor::upgrade) {
            if t.autograd_meta()
                .and_then(|m| m.tangent(self.level))
                .is_some()
            {
                t.set_tangent(None);
            }
        }
        ENTERED.with(|c| c.set(0));
        CURRENT.with(|c| c.set(0));
    }
}

/// Turns forward mode off on this thread until dropped: what a forward
/// formula runs under, so that its primals (the dual inputs themselves) do
/// not propagate tangents of their own. It belongs to its thread (not
/// `Send`).
pub struct Suspended {
    level: u64,
    _thread: std::marker::PhantomData<*const ()>,
}

impl Drop for Suspended {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.level));
    }
}

/// See [`Suspended`].
pub fn suspend() -> Suspended {
    Suspended {
        level: CURRENT.with(|c| c.replace(0)),
        _thread: std::marker::PhantomData,
    }
}

/// The tangent of `t` at the level in force, if it has one.
pub fn tangent(t: &Tensor) -> Option<Tensor> {
    let level = current_level()?;
    t.autograd_meta()?.tangent(level)
}

/// What an Autograd kernel asks before it computes: `None` when no level is
/// in force or no input carries a tangent (nothing to propagate); otherwise
/// one tangent per input, zeros for an input without one (torchgen's
/// `_efficientzerotensor`).
#[inline]
pub fn tangents_of(inputs: &[&Tensor]) -> Result<Option<Vec<Tensor>>> {
    // The common case, forward mode off, without a call.
    if current_level().is_none() {
        return Ok(None);
    }
    tangents_of_present(inputs)
}

fn tangents_of_present(inputs: &[&Tensor]) -> Result<Option<Vec<Tensor>>> {
    let present: Vec<Option<&Tensor>> = inputs.iter().copied().map(Some).collect();
    // Every input is present, so every tangent is `Some`.
    Ok(tangents_of_optional(&present)?.map(|ts| ts.into_iter().flatten().collect()))
}

/// [`tangents_of`] for inputs that may be absent (`None` in, `None` out).
pub fn tangents_of_optional(inputs: &[Option<&Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> {
    let Some(level) = current_level() else {
        return Ok(None);
    };
    let found: Vec<Option<Tensor>> = inputs
        .iter()
        .map(|t| {
            t.and_then(|t| t.autograd_meta())
                .and_then(|m| m.tangent(level))
        })
        .collect();
    if found.iter().all(Option::is_none) {
        return Ok(None);
    }
    let _off = suspend();
    let _below = below_autograd();
    inputs
        .iter()
        .zip(found)
        .map(|(t, f)| match (t, f) {
            (_, Some(f)) => Ok(Some(f)),
            (Some(t), None) => crate::at::zeros_like(t, None, None, None, None, None).map(Some),
            (None, None) => Ok(None),
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// Gives `t` the tangent `tangent` at the level in force (what an Autograd
/// kernel does with the tangent its forward formula computed). Nothing
/// happens when no level is in force, or for a tensor that is not floating
/// point.
pub fn set_tangent(t: &Tensor, tangent: Tensor) -> Result<()> {
    let Some(level) = level_entered() else {
        return Ok(());
    };
    if !t.dtype().is_floating_point() {
        return Ok(());
    }
    check_tangent(t, &tangent)?;
    // Laid out as the primal is (PyTorch's `set_fw_grad` copies a tangent
    // that `has_same_meta` refuses into `_new_zeros_with_same_feature_meta`):
    // whatever a view does to the primal, it can do to the tangent.
    let tangent = match same_meta(&tangent, t) {
        true => tangent,
        false => {
            let _off = suspend();
            let _below = below_autograd();
            let mut laid_out = zeros_laid_out_as(t)?;
            crate::at::copy_(&mut laid_out, &tangent, false)?;
            laid_out
        }
    };
    t.set_tangent(Some((level, tangent)));
    REGISTERED.with(|r| r.borrow_mut().push(t.downgrade()));
    Ok(())
}

/// PyTorch's `has_same_meta` without the storage size: the same sizes and
/// offset, and the same strides wherever a dimension has more than one
/// element.
fn same_meta(a: &Tensor, b: &Tensor) -> bool {
    let shape = a.shape();
    a.storage_offset() == b.storage_offset()
        && shape == b.shape()
        && shape
            .iter()
            .zip(a.strides().iter().zip(b.strides().iter()))
            .all(|(&n, (x, y))| n <= 1 || x == y)
}

/// The level in force, suspended or not (what a kernel setting tangents
/// under [`suspend`] sets them at).
fn level_entered() -> Option<u64> {
    match (CURRENT.with(Cell::get), ENTERED.with(Cell::get)) {
        (0, 0) => None,
        (0, l) | (l, _) => Some(l),
    }
}

/// [`set_tangent`] for a tensor an in-place operation wrote (what a
/// generated in-place kernel calls). Written through a view, the tangent goes
/// into the view's place in its base's tangent (made, zero, if the base has
/// none), and the view's tangent is that place, as PyTorch keeps a view's
/// forward gradient a view of its base's.
pub fn set_tangent_in_place(t: &Tensor, tangent: Tensor) -> Result<()> {
    // Written into the tensor's own tangent, it has the tensor's dtype (a
    // float64 `other` does not make a float32 `self`'s tangent float64).
    let tangent = match t.dtype().is_floating_point() && tangent.dtype() != t.dtype() {
        true => {
            let _off = suspend();
            super::formulas::cast_to(tangent, t.dtype())?
        }
        false => tangent,
    };
    let Some(view) = t.view_of() else {
        return set_tangent(t, tangent);
    };
    let Some(level) = level_entered().filter(|_| t.dtype().is_floating_point()) else {
        return set_tangent(t, tangent);
    };
    check_tangent(t, &tangent)?;
    let base = view.base();
    let _off = suspend();
    let _below = below_autograd();
    let base_tangent = match base.autograd_meta().and_then(|m| m.tangent(level)) {
        // Laid out as the base is, so the view's geometry finds its place.
        Some(bt) if same_layout(&bt, base) => bt,
        old => {
            let bt = zeros_laid_out_as(base)?;
            if let Some(old) = old {
                crate::at::copy_(&mut bt.clone(), &old, false)?;
            }
            set_tangent(base, bt.clone())?;
            bt
        }
    };
    let mut place = base_tangent.strided_view(&t.shape(), &t.strides(), t.storage_offset())?;
    crate::at::copy_(&mut place, &tangent, false)?;
    set_tangent(t, place)
}

fn same_layout(a: &Tensor, b: &Tensor) -> bool {
    a.shape() == b.shape() && a.strides() == b.strides() && a.storage_offset() == b.storage_offset()
}

/// Zeros with `t`'s sizes, strides and offset, over a storage of their own.
fn zeros_laid_out_as(t: &Tensor) -> Result<Tensor> {
    let span = t
        .with_geometry(|g| crate::tensor::last_offset(&g.shape, &g.strides, g.offset))?
        .map_or(0, |last| last + 1);
    let flat = Tensor::zeros(&[span], t.dtype(), t.device());
    flat.strided_view(&t.shape(), &t.strides(), t.storage_offset())
}

fn check_tangent(primal: &Tensor, tangent: &Tensor) -> Result<()> {
    if primal.shape() != tangent.shape() {
        return Err(Error::Runtime(
            format!(
                "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {:?} while the given forward gradient is of size {:?}.",
                primal.sizes(),
                tangent.sizes()
            )
            .into(),
        ));
    }
    if !tangent.dtype().is_floating_point() {
        return Err(Error::Runtime(
            "Expected tangent to be floating point or complex, but got: int".into(),
        ));
    }
    Ok(())
}

/// `fwAD.make_dual(tensor, tangent)`: a view of `tensor` (same storage) that
/// carries `tangent` at the level in force. Outside a level it is PyTorch's
/// error.
pub fn make_dual(tensor: &Tensor, tangent: &Tensor) -> Result<Tensor> {
    if current_level().is_none() {
        return Err(Error::Runtime(
            "To create a dual Tensor, you must be inside a dual_level context (`with fwAD.dual_level():`)".into(),
        ));
    }
    if !tensor.dtype().is_floating_point() {
        return Err(Error::Runtime(
            format!(
                "Expected primal to be floating point or complex, but got: {}",
                tensor.dtype()
            )
            .into(),
        ));
    }
    check_tangent(tensor, tangent)?;
    let dual = shallow_detach(tensor)?;
    set_tangent(&dual, tangent.clone())?;
    Ok(dual)
}

/// What [`unpack_dual`] returns: the primal (a view without the tangent) and
/// the tangent at the level in force.
#[derive(Clone, Debug)]
pub struct UnpackedDual {
    /// The value.
    pub primal: Tensor,
    /// Its tangent, `None` if it has none at this level.
    pub tangent: Option<Tensor>,
}

/// `fwAD.unpack_dual(tensor)`: its primal and tangent.
pub fn unpack_dual(t: &Tensor) -> UnpackedDual {
    let tangent = tangent(t);
    let primal = match tangent {
        Some(_) => shallow_detach(t).unwrap_or_else(|_| t.clone()),
        None => t.clone(),
    };
    UnpackedDual { primal, tangent }
}
