//! Functional tensors (PyTorch's `FunctionalTensorWrapper` and
//! `FunctionalStorageImpl`): a wrapper ([`Tensor::layer_wrapper`]) standing for a
//! plain value, and a storage its views share.
//!
//! - The storage holds the base value and the writes not yet applied to it
//!   (each with the view steps from the base to the written tensor), and a
//!   generation that each write bumps.
//! - A functional tensor holds its current value, its view steps from the
//!   base, and the generation it was last brought up to date at.
//! - `sync` brings one up to date: the storage applies its pending writes to
//!   its base (each through its views' inverses: `select_scatter`, …), and
//!   the tensor's value is made again from the new base through its views'
//!   `*_copy` operators.

use super::views::ViewMeta;
use crate::error::Result;
use crate::tensor::{Tensor, FUNCTIONALIZE_KEY};
use std::sync::{Arc, Mutex, MutexGuard};

/// The state behind a functional tensor.
pub(super) struct Functional {
    storage: Arc<Mutex<FunctionalStorage>>,
    state: Mutex<State>,
}

struct State {
    value: Tensor,
    metas: Vec<ViewMeta>,
    generation: u64,
}

/// What a functional tensor and its views share.
struct FunctionalStorage {
    /// The base's value (a plain tensor), as of the writes applied so far.
    base: Tensor,
    /// Writes not applied yet, in order.
    updates: Vec<Update>,
    /// Bumped by each write.
    generation: u64,
}

/// A write: the written tensor's new value and its views from the base.
struct Update {
    value: Tensor,
    metas: Vec<ViewMeta>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `t`'s functional state, if it is a functional tensor.
fn functional(t: &Tensor) -> Option<&Functional> {
    t.wrapper_state::<Functional>()
}

/// Is `t` a functional tensor?
pub fn is_functional(t: &Tensor) -> bool {
    functional(t).is_some()
}

/// A new functional tensor standing for `value`, the base of a storage of
/// its own (PyTorch's `to_functional_tensor`).
pub(super) fn wrap(value: Tensor) -> Tensor {
    let state = Functional {
        storage: Arc::new(Mutex::new(FunctionalStorage {
            base: value.clone(),
            updates: Vec::new(),
            generation: 0,
        })),
        state: Mutex::new(State {
            value: value.clone(),
            metas: Vec::new(),
            generation: 0,
        }),
    };
    Tensor::layer_wrapper(&value, FUNCTIONALIZE_KEY, Arc::new(state))
}

/// A functional view of `of` (a functional tensor) whose value is `value`:
/// it shares `of`'s storage, and its views are `of`'s and `meta`.
pub(super) fn wrap_view(value: Tensor, of: &Tensor, meta: ViewMeta) -> Tensor {
    let Some(f) = functional(of) else {
        return wrap(value);
    };
    let st = lock(&f.state);
    let mut metas = st.metas.clone();
    metas.push(meta);
    let state = Functional {
        storage: f.storage.clone(),
        state: Mutex::new(State {
            value: value.clone(),
            metas,
            generation: st.generation,
        }),
    };
    Tensor::layer_wrapper(&value, FUNCTIONALIZE_KEY, Arc::new(state))
}

/// The value `t` stands for as it is now (not brought up to date); a tensor
/// that is not functional stands for itself.
pub(super) fn value(t: &Tensor) -> Tensor {
    match functional(t) {
        Some(f) => lock(&f.state).value.clone(),
        None => t.clone(),
    }
}

/// Brings `t` up to date with its storage's writes (PyTorch's `sync_`).
pub(super) fn sync(t: &Tensor) -> Result<()> {
    let Some(f) = functional(t) else {
        return Ok(());
    };
    let (generation, metas) = {
        let st = lock(&f.state);
        (st.generation, st.metas.clone())
    };
    let (base, now) = {
        let mut storage = lock(&f.storage);
        if storage.generation == generation {
            return Ok(());
        }
        storage.apply_updates()?;
        (storage.base.clone(), storage.generation)
    };
    let mut value = base;
    for m in &metas {
        value = m.forward(&value)?;
    }
    t.mirror_geometry(&value);
    let mut st = lock(&f.state);
    st.value = value;
    st.generation = now;
    Ok(())
}

/// `t`'s value brought up to date (PyTorch's `sync` then `from_functional_tensor`).
pub(super) fn synced_value(t: &Tensor) -> Result<Tensor> {
    sync(t)?;
    Ok(value(t))
}

/// Makes `value` the value `t` stands for (PyTorch's `replace_`).
pub(super) fn replace(t: &Tensor, value: Tensor) {
    if let Some(f) = functional(t) {
        t.mirror_geometry(&value);
        lock(&f.state).value = value;
    }
}

/// Records `t`'s value as a write to its storage (PyTorch's
/// `commit_update`): its views, and other tensors of the storage, see it
/// once they are brought up to date.
pub(super) fn commit_update(t: &Tensor) {
    if let Some(f) = functional(t) {
        let (value, metas) = {
            let st = lock(&f.state);
            (st.value.clone(), st.metas.clone())
        };
        let mut storage = lock(&f.storage);
        storage.updates.push(Update { value, metas });
        storage.generation += 1;
    }
}

/// Makes `t` a view of what it was, in place (`t_`, `squeeze_`: PyTorch's
/// `mutate_view_meta`): the step is added to its views and its value
/// replaced by the step's `*_copy` of it.
pub(super) fn mutate_view_meta(t: &Tensor, meta: ViewMeta) -> Result<()> {
    let Some(f) = functional(t) else {
        return Ok(());
    };
    let current = lock(&f.state).value.clone();
    let value = meta.forward(&current)?;
    t.mirror_geometry(&value);
    let mut st = lock(&f.state);
    st.metas.push(meta);
    st.value = value;
    Ok(())
}

impl FunctionalStorage {
    /// Applies the pending writes to the base, in order.
    fn apply_updates(&mut self) -> Result<()> {
        for u in std::mem::take(&mut self.updates) {
            self.base = apply_update(&u, &self.base)?;
        }
        Ok(())
    }
}

/// `base` with one write applied: the written value put back through each
/// view's inverse, innermost first (PyTorch's `apply_update`).
fn apply_update(u: &Update, base: &Tensor) -> Result<Tensor> {
    let Some((_, outer)) = u.metas.split_last() else {
        return Ok(u.value.clone());
    };
    // The base seen through each view but the last.
    let mut bases = vec![base.clone()];
    for m in outer {
        let next = m.forward(bases.last().unwrap_or(base))?;
        bases.push(next);
    }
    let mut t = u.value.clone();
    for (m, b) in u.metas.iter().zip(&bases).rev() {
        t = m.reverse(b, &t)?;
    }
    Ok(t)
}
