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
//! - The wrapper itself has the sizes, strides and storage offset the
//!   tensor has eagerly (PyTorch's "Note [Propagating strides in the
//!   functionalization pass]"): a view's are those of the view run on a
//!   meta copy of its base's wrapper (`mod.rs`), and they stay as they are
//!   when the value is replaced or made again (a `*_copy` value is
//!   contiguous whatever the view was), so what reads them — `contiguous`,
//!   `reshape`, `view`'s check, `is_contiguous` — decides as eagerly. Views'
//!   wrappers share their base's storage (without data).
//! - `as_strided` reads its base's storage, not its base: its value is made
//!   from the storage's base laid out as eagerly in memory (the storage
//!   keeps that layout, `base_meta`), and a write through it goes back into
//!   those positions (`as_strided_scatter`), whatever views came before it.

use super::views::ViewMeta;
use super::wrapper::FUNCTIONALIZE_KEY;
use crate::error::Result;
use crate::tensor::{Geometry, Tensor};
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
    /// A meta tensor with the base's eager geometry and storage size: where
    /// its elements lie in memory, for `as_strided`.
    base_meta: Tensor,
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
            base_meta: value.meta_like(),
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

/// A new functional tensor standing for `value` whose eager geometry is
/// `eager`'s (a meta tensor: the operator run on the inputs' eager
/// geometries), the base of a storage of its own.
pub(super) fn wrap_like(value: Tensor, eager: &Tensor) -> Tensor {
    let t = wrap(value);
    t.restride_wrapper(eager);
    if let Some(f) = functional(&t) {
        lock(&f.storage).base_meta = eager.clone();
    }
    t
}

/// A functional view of `of` (a functional tensor) whose value is `value`
/// and whose eager geometry is `eager`'s (the view run on a meta copy of
/// `of`'s wrapper): it shares `of`'s storage, and its views are `of`'s and
/// `meta`.
pub(super) fn wrap_view(value: Tensor, of: &Tensor, meta: ViewMeta, eager: &Tensor) -> Tensor {
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
    let g = eager.geometry();
    let geometry = Geometry {
        storage: of.storage(),
        ..g
    };
    let t = Tensor::layer_wrapper_with(&value, geometry, FUNCTIONALIZE_KEY, Arc::new(state));
    // A geometry past the base's storage (never, for a view of it) gets a
    // storage of its own.
    t.restride_wrapper(eager);
    t
}

/// The value of the view `meta` of `of` when it reads `of`'s storage rather
/// than `of` (`as_strided`): made from the storage's base, brought up to
/// date first.
pub(super) fn storage_view_value(of: &Tensor, meta: &ViewMeta) -> Result<Tensor> {
    let Some(f) = functional(of) else {
        return meta.forward(of);
    };
    sync(of)?;
    let storage = lock(&f.storage);
    meta.forward_from_storage(&storage.base, &storage.base_meta)
}

/// The value `t` stands for as it is now (not brought up to date); a tensor
/// that is not functional stands for itself.
pub(super) fn value(t: &Tensor) -> Tensor {
    match functional(t) {
        Some(f) => lock(&f.state).value.clone(),
        None => t.clone(),
    }
}

/// Is `t` a view of its storage's base (a view, or in-place viewed), with
/// no write ever made to that storage? Then PyTorch's value for it, its
/// views reapplied, is a view of the base itself.
pub(super) fn unwritten_view(t: &Tensor) -> bool {
    functional(t)
        .is_some_and(|f| !lock(&f.state).metas.is_empty() && lock(&f.storage).generation == 0)
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
    let (value, now) = {
        let mut storage = lock(&f.storage);
        if storage.generation == generation {
            return Ok(());
        }
        storage.apply_updates()?;
        (storage.replay(&metas)?, storage.generation)
    };
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

/// Makes `value` the value `t` stands for (PyTorch's `replace_`). The
/// wrapper keeps its eager geometry unless the value's shape is another
/// (an `out=` argument resized): then it takes the value's.
pub(super) fn replace(t: &Tensor, value: Tensor) {
    if let Some(f) = functional(t) {
        if value.shape() != t.shape() {
            t.mirror_geometry(&value);
        }
        lock(&f.state).value = value;
    }
}

/// Records `t`'s value as a write to its storage (PyTorch's
/// `commit_update`): its views, and other tensors of the storage, see it
/// once they are brought up to date. A write through an `as_strided` view
/// that is not the first view from the base is refused, with PyTorch's
/// message (`FunctionalStorageImpl::add_update`: `as_strided` does not
/// compose with the views before it).
pub(super) fn commit_update(t: &Tensor) -> Result<()> {
    if let Some(f) = functional(t) {
        let (value, metas) = {
            let st = lock(&f.state);
            (st.value.clone(), st.metas.clone())
        };
        if let Some(i) = (1..metas.len()).find(|&i| metas[i].is_storage_relative()) {
            return Err(crate::error::Error::Runtime(format!(
                "During torch.compile, encountered a mutation on a view chain of length {}, where view {i} was an as_strided() call. as_strided() is non-compositional, and therefore is not possible to functionalize properly today,so this behavior is banned in compile. As a workaround, you can either remove the mutation from the model code, or you can insert a graph break right before the mutation with torch._dynamo.graph_break(). If you would like this behavior to work properly, please comment on https://github.com/pytorch/pytorch/issues/104505.",
                metas.len()
            ).into()));
        }
        let mut storage = lock(&f.storage);
        if metas.is_empty() && storage.base_meta.shape() != t.shape() {
            // The base itself resized: its eager layout is its wrapper's.
            storage.base_meta = t.meta_like();
        }
        storage.updates.push(Update { value, metas });
        storage.generation += 1;
    }
    Ok(())
}

/// Makes `t` a view of what it was, in place (`t_`, `squeeze_`: PyTorch's
/// `mutate_view_meta`): the step is added to its views, its value replaced
/// by the step's `*_copy` of it (an `as_strided_`: made from the storage),
/// and its wrapper given `eager`'s geometry (the in-place view run on a meta
/// copy of the wrapper).
pub(super) fn mutate_view_meta(t: &Tensor, meta: ViewMeta, eager: &Tensor) -> Result<()> {
    let Some(f) = functional(t) else {
        return Ok(());
    };
    let value = if meta.is_storage_relative() {
        storage_view_value(t, &meta)?
    } else {
        let current = lock(&f.state).value.clone();
        meta.forward(&current)?
    };
    t.restride_wrapper(eager);
    let mut st = lock(&f.state);
    st.metas.push(meta);
    st.value = value;
    Ok(())
}

impl FunctionalStorage {
    /// Applies the pending writes to the base, in order.
    fn apply_updates(&mut self) -> Result<()> {
        for u in std::mem::take(&mut self.updates) {
            self.base = self.apply_update(&u)?;
        }
        Ok(())
    }

    /// The base seen through `metas`: from the last that reads the storage
    /// (`as_strided`) if any, else from the base, each step's `*_copy`.
    fn replay(&self, metas: &[ViewMeta]) -> Result<Tensor> {
        let (mut value, rest) = self.start(metas)?;
        for m in rest {
            value = m.forward(&value)?;
        }
        Ok(value)
    }

    /// Where a chain of views starts: the base, or the view of the storage
    /// the last `as_strided` among `metas` is; and the steps after it.
    fn start<'m>(&self, metas: &'m [ViewMeta]) -> Result<(Tensor, &'m [ViewMeta])> {
        match metas.iter().rposition(ViewMeta::is_storage_relative) {
            Some(k) => Ok((
                metas[k].forward_from_storage(&self.base, &self.base_meta)?,
                &metas[k + 1..],
            )),
            None => Ok((self.base.clone(), metas)),
        }
    }

    /// The base with one write applied: the written value put back through
    /// each view's inverse, innermost first (PyTorch's `apply_update`); from
    /// an `as_strided` back into the storage's positions.
    fn apply_update(&self, u: &Update) -> Result<Tensor> {
        let (start, rest) = self.start(&u.metas)?;
        let mut t = u.value.clone();
        if let Some((_, outer)) = rest.split_last() {
            // The start seen through each view but the last.
            let mut bases = vec![start];
            for m in outer {
                let next = m.forward(bases.last().unwrap_or(&self.base))?;
                bases.push(next);
            }
            for (m, b) in rest.iter().zip(&bases).rev() {
                t = m.reverse(b, &t)?;
            }
        }
        match u.metas.len() - rest.len() {
            0 => Ok(t),
            k => u.metas[k - 1].reverse_into_storage(&self.base, &self.base_meta, &t),
        }
    }
}
