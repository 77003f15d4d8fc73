//! The autograd engine end to end, through the generated Autograd kernels of
//! `mul.Tensor`, `mul_.Tensor`, `mul.out`, `add.Tensor` and `sum` (from
//! `runtime/derivatives.yaml`): each begins a recording, redispatches below
//! autograd and finishes the recording.
//!
//! The tests share one process-wide figure (`live_nodes`), so they run one at
//! a time (`serial`).

use opforge::autograd::{
    self, enable_grad, inference_mode, is_grad_enabled, live_nodes, no_grad, set_grad_enabled,
    Backward, BackwardCtx, Grads, Recording, SavedTensor, TensorAutograd, BACKWARD_TWICE,
    LEAF_INPLACE,
};
use opforge::{at, DType, Device, Result, Scalar, Tensor};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::{Arc, Mutex, MutexGuard};

/// Counts the heap bytes live on each thread of this test process (storages,
/// nodes, saved tensors and everything else) for the memory test: what a
/// thread allocated minus what it freed. Per thread, not process-wide, because
/// the test harness allocates on its own threads at any moment (captured
/// output, the next test's thread); the engine runs backward on the caller's
/// thread, so a test's graphs are all counted on its own thread.
struct Counting;

thread_local! {
    // A `Cell` of a plain integer, initialised by a constant: reading or
    // writing it never allocates and it has no destructor, so the allocator
    // can use it without recursion, even while a thread is being torn down.
    static THREAD_BYTES: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = THREAD_BYTES.try_with(|b| b.set(b.get() + delta));
}

/// Bytes allocated and not yet freed by the calling thread.
fn thread_bytes() -> isize {
    THREAD_BYTES.with(Cell::get)
}

// SAFETY: the invariant is that `Counting` never makes or frees memory
// itself: every call goes to `System` with the caller's own layout and
// pointer, so `System`'s guarantees (alignment, size, no aliasing) are the
// caller's; the counter is arithmetic on the side and never read by the
// allocator. `counting_allocator_forwards_every_layout` tries odd sizes and
// large alignments through it.
unsafe impl GlobalAlloc for Counting {
    // SAFETY (of callers): `layout` has a non-zero size, as `GlobalAlloc::alloc`
    // requires; passed on unchanged.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed through.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    // SAFETY (of callers): `ptr` was returned by `alloc` above for `layout`.
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The counting allocator hands out what `System` does: aligned as asked
/// (up to a page), writable over the whole size, and every byte counted is
/// uncounted when freed.
#[test]
fn counting_allocator_forwards_every_layout() {
    let _s = serial();
    let before = thread_bytes();
    for (size, align) in [(1, 1), (3, 2), (17, 8), (1000, 64), (5000, 4096)] {
        let layout = Layout::from_size_align(size, align).unwrap();
        // SAFETY: `layout` has a non-zero size; the block is freed below with
        // the same layout.
        let p = unsafe { std::alloc::alloc(layout) };
        assert!(!p.is_null() && (p as usize).is_multiple_of(align));
        assert_eq!(thread_bytes(), before + size as isize, "counted on alloc");
        // SAFETY: `p` points at `size` writable bytes.
        unsafe { std::ptr::write_bytes(p, 0xAB, size) };
        // SAFETY: `p` came from `alloc` with `layout`.
        unsafe { std::alloc::dealloc(p, layout) };
    }
    assert_eq!(thread_bytes(), before);
}

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

// The Autograd kernels of `mul.Tensor`, `mul_.Tensor`, `mul.out`, `add.Tensor`
// and `sum` are the generated ones (runtime/derivatives.yaml); this file once
// registered hand-written ones, which would now be duplicates.

// ---- helpers ----------------------------------------------------------------

fn leaf(v: Vec<f32>) -> Tensor {
    let n = v.len();
    let t = Tensor::from_vec(v, &[n]).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

fn plain(v: Vec<f32>) -> Tensor {
    let n = v.len();
    Tensor::from_vec(v, &[n]).unwrap()
}

fn two() -> Tensor {
    Tensor::scalar(2.0f32)
}

fn grad_of(t: &Tensor) -> Vec<f32> {
    t.grad().expect("a gradient").to_vec::<f32>().unwrap()
}

fn mul(a: &Tensor, b: &Tensor) -> Tensor {
    at::mul_Tensor(a, b).unwrap()
}

fn sum(a: &Tensor) -> Tensor {
    at::sum(a, None).unwrap()
}

// ---- tests ----------------------------------------------------------------

#[test]
fn mul_then_sum_backward_gives_the_gradient() {
    let _s = serial();
    let a = leaf(vec![0.5; 10]);
    let b = mul(&a, &two());
    assert!(b.requires_grad() && !b.is_leaf());
    assert_eq!(b.grad_fn().unwrap().node.name(), "MulBackward0");
    let s = sum(&b);
    assert_eq!(s.grad_fn().unwrap().node.name(), "SumBackward0");
    s.backward().unwrap();
    assert_eq!(grad_of(&a), vec![2.0; 10]);
    // Not retained on a non-leaf.
    assert!(b.grad().is_none());
    // The stored gradient has no history and does not require grad.
    assert!(!a.grad().unwrap().requires_grad());
}

#[test]
fn gradients_accumulate_over_backward_calls() {
    let _s = serial();
    let a = leaf(vec![1.0, 2.0, 3.0]);
    for _ in 0..2 {
        sum(&mul(&a, &two())).backward().unwrap();
    }
    assert_eq!(grad_of(&a), vec![4.0; 3]);
    // Later gradients are added in place (PyTorch's `add_`): a `.grad`
    // handed out earlier is the same tensor and sees the sum.
    let before = a.grad().unwrap();
    sum(&mul(&a, &two())).backward().unwrap();
    assert_eq!(before.to_vec::<f32>().unwrap(), vec![6.0; 3]);
    assert!(a.grad().unwrap().is_same(&before));
    // Under create_graph the sum is a new tensor (out of place, as PyTorch:
    // `y.grad is g` is False there).
    sum(&mul(&a, &two()))
        .backward_with(None, None, true, None)
        .unwrap();
    assert_eq!(before.to_vec::<f32>().unwrap(), vec![6.0; 3]);
    assert_eq!(grad_of(&a), vec![8.0; 3]);
    assert!(!a.grad().unwrap().is_same(&before));
}

#[test]
fn a_diamond_sums_the_gradients_of_both_paths() {
    let _s = serial();
    // y = x*x + x*2: dy/dx = 2x + 2, x reaching the sum along three edges.
    let x = leaf(vec![1.0, -2.0, 3.0]);
    let y = at::add_Tensor(&mul(&x, &x), &mul(&x, &two()), Scalar::Int(1)).unwrap();
    sum(&y).backward().unwrap();
    assert_eq!(grad_of(&x), vec![4.0, -2.0, 8.0]);

    // Two outputs of one graph in one call: both roots' gradients arrive.
    let z = leaf(vec![1.0, 1.0]);
    let p = mul(&z, &two());
    let q = sum(&mul(&p, &p)); // d/dz = 8z
    let r = sum(&p); // d/dz = 2
    autograd::backward(&[q, r], &[], None, false, None).unwrap();
    assert_eq!(grad_of(&z), vec![10.0, 10.0]);
}

#[test]
fn a_freed_graph_cannot_be_run_again() {
    let _s = serial();
    let a = leaf(vec![1.0, 2.0]);
    let w = plain(vec![3.0, 4.0]);
    let weak_w = w.downgrade();
    let s = sum(&mul(&a, &w));
    drop(w);
    s.backward_with(None, Some(true), false, None).unwrap();
    s.backward().unwrap();
    assert_eq!(grad_of(&a), vec![6.0, 8.0]);
    // The saved `w` was released by the second call, while `s` still holds
    // the graph.
    assert!(weak_w.upgrade().is_none(), "saved tensors are freed");
    let e = s.backward().unwrap_err();
    assert_eq!(e.to_string(), BACKWARD_TWICE);
    assert!(BACKWARD_TWICE.starts_with("Trying to backward through the graph a second time"));
    // A graph that saved nothing can be run again, as in PyTorch.
    let t = sum(&at::add_Tensor(&a, &a, Scalar::Int(1)).unwrap());
    t.backward().unwrap();
    t.backward().unwrap();
    assert_eq!(grad_of(&a), vec![10.0, 12.0]);
}

#[test]
fn an_in_place_write_to_a_saved_tensor_is_reported() {
    let _s = serial();
    // A saved plain tensor, written in place by the CPU kernel.
    let x = leaf(vec![1.0; 10]);
    let mut w = plain(vec![2.0; 10]);
    let v0 = w.storage().version();
    let y = sum(&mul(&x, &w));
    at::mul__Tensor(&mut w, &two()).unwrap();
    assert_eq!(
        w.storage().version(),
        v0 + 1,
        "an in-place write bumps the version"
    );
    let e = y.backward().unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [10]] is at version {}; expected version {} instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).",
            v0 + 1,
            v0
        )
    );

    // A saved non-leaf, written in place through the Autograd kernel (which
    // rebases its history): the message names its node.
    let x = leaf(vec![1.0; 10]);
    let mut b = mul(&x, &two());
    let y = sum(&mul(&b, &b));
    at::mul__Tensor(&mut b, &two()).unwrap();
    let e = y.backward().unwrap_err().to_string();
    assert!(
        e.starts_with("one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [10]], which is output 0 of Mul, is at version 1; expected version 0 instead. Hint: "),
        "{e}"
    );
}

#[test]
fn in_place_on_a_leaf_is_refused_and_on_a_result_rebases() {
    let _s = serial();
    let mut a = leaf(vec![1.0, 2.0]);
    let e = at::mul__Tensor(&mut a, &two()).unwrap_err();
    assert_eq!(e.to_string(), LEAF_INPLACE);
    assert_eq!(
        a.to_vec::<f32>().unwrap(),
        vec![1.0, 2.0],
        "nothing written"
    );
    // Under no_grad it is allowed (an optimizer's update) and records nothing.
    {
        let _g = no_grad();
        at::mul__Tensor(&mut a, &two()).unwrap();
    }
    assert!(a.is_leaf() && a.requires_grad());
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);

    // A non-leaf's history is rebased onto the in-place node.
    let x = leaf(vec![1.0, 2.0]);
    let mut y = mul(&x, &two());
    let old = y.grad_fn().unwrap();
    at::mul__Tensor(&mut y, &Tensor::scalar(3.0f32)).unwrap();
    let new = y.grad_fn().unwrap();
    assert!(!Arc::ptr_eq(&old.node, &new.node));
    assert_eq!(new.node.name(), "MulBackward0");
    sum(&y).backward().unwrap();
    assert_eq!(grad_of(&x), vec![6.0, 6.0]);
}

#[test]
fn no_grad_records_nothing() {
    let _s = serial();
    let a = leaf(vec![1.0, 2.0]);
    let before = live_nodes();
    let b = {
        let _g = no_grad();
        assert!(!is_grad_enabled());
        {
            let _e = enable_grad();
            assert!(is_grad_enabled());
        }
        assert!(!is_grad_enabled());
        sum(&mul(&a, &two()))
    };
    assert!(is_grad_enabled());
    assert!(!b.requires_grad() && b.grad_fn().is_none());
    assert_eq!(live_nodes(), before);
    assert!(b.backward().is_err());
    {
        let _g = set_grad_enabled(false);
        assert!(!sum(&a).requires_grad());
    }
    {
        let _g = inference_mode();
        assert!(!is_grad_enabled() && autograd::is_inference_mode_enabled());
        assert!(!sum(&a).requires_grad());
    }
    assert!(sum(&a).requires_grad());
}

#[test]
fn grad_mode_is_per_thread() {
    let _s = serial();
    let a = leaf(vec![1.0, 2.0]);
    let _g = no_grad();
    let other = {
        let a = a.clone();
        std::thread::spawn(move || {
            assert!(is_grad_enabled());
            let s = sum(&mul(&a, &two()));
            assert!(s.requires_grad());
            let _g = no_grad();
            assert!(!is_grad_enabled());
        })
    };
    other.join().unwrap();
    assert!(!is_grad_enabled());
    assert!(!sum(&a).requires_grad());
}

#[test]
fn create_graph_allows_double_backward() {
    let _s = serial();
    let x = leaf(vec![2.0, -1.0]);
    let y = sum(&mul(&mul(&x, &x), &x));
    let g = autograd::grad(&[y], std::slice::from_ref(&x), &[], None, true, false).unwrap();
    let g = g[0].clone().unwrap();
    // 3x²
    assert_eq!(g.to_vec::<f32>().unwrap(), vec![12.0, 3.0]);
    assert!(g.requires_grad(), "the backward pass was recorded");
    let gg = autograd::grad(
        &[sum(&g)],
        std::slice::from_ref(&x),
        &[],
        None,
        false,
        false,
    )
    .unwrap();
    // 6x
    assert_eq!(
        gg[0].as_ref().unwrap().to_vec::<f32>().unwrap(),
        vec![12.0, -6.0]
    );
    // grad() leaves .grad alone.
    assert!(x.grad().is_none());

    // backward(create_graph=true): .grad keeps its history.
    let x = leaf(vec![3.0]);
    sum(&mul(&x, &x))
        .backward_with(None, None, true, None)
        .unwrap();
    let gx = x.grad().unwrap();
    assert_eq!(gx.to_vec::<f32>().unwrap(), vec![6.0]);
    assert!(gx.requires_grad());
    // (Break the cycle .grad → history → x, as PyTorch users must.)
    x.set_grad(None).unwrap();
}

#[test]
fn grad_reports_unused_inputs_unless_allowed() {
    let _s = serial();
    let x = leaf(vec![1.0, 2.0]);
    let unused = leaf(vec![5.0]);
    let y = sum(&mul(&x, &two()));
    let e = autograd::grad(
        std::slice::from_ref(&y),
        &[x.clone(), unused.clone()],
        &[],
        Some(true),
        false,
        false,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
    );
    let g = autograd::grad(&[y], &[x.clone(), unused.clone()], &[], None, false, true).unwrap();
    assert_eq!(
        g[0].as_ref().unwrap().to_vec::<f32>().unwrap(),
        vec![2.0, 2.0]
    );
    assert!(g[1].is_none());
    assert!(x.grad().is_none() && unused.grad().is_none());

    let p = plain(vec![1.0]);
    let y = sum(&mul(&x, &two()));
    let e = autograd::grad(&[y], &[p], &[], None, false, false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "One of the differentiated Tensors does not require grad"
    );
}

#[test]
fn pytorchs_messages_for_bad_roots() {
    let _s = serial();
    let x = leaf(vec![1.0, 2.0]);
    let y = mul(&x, &two());
    let e = y.backward().unwrap_err();
    assert_eq!(
        e.to_string(),
        "grad can be implicitly created only for scalar outputs"
    );
    let e = plain(vec![1.0]).backward().unwrap_err();
    assert_eq!(
        e.to_string(),
        "element 0 of tensors does not require grad and does not have a grad_fn"
    );
    let e = y
        .backward_with(Some(&plain(vec![1.0; 3])), None, false, None)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) and output[0] has a shape of torch.Size([2])."
    );
    // An explicit gradient for a non-scalar output.
    y.backward_with(Some(&plain(vec![1.0, 10.0])), None, false, None)
        .unwrap();
    assert_eq!(grad_of(&x), vec![2.0, 20.0]);
}

#[test]
fn hooks_and_retained_gradients() {
    let _s = serial();
    let x = leaf(vec![1.0, 2.0]);
    x.register_hook(|g| Ok(Some(at::mul_Tensor(g, &Tensor::scalar(10.0f32))?)))
        .unwrap();
    let b = mul(&x, &two());
    b.retain_grad().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    b.register_hook(move |g| {
        seen2.lock().unwrap().push(g.to_vec::<f32>()?);
        Ok(None)
    })
    .unwrap();
    sum(&b).backward().unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![vec![1.0, 1.0]]);
    assert_eq!(grad_of(&b), vec![1.0, 1.0]);
    assert_eq!(grad_of(&x), vec![20.0, 20.0]);
    assert!(plain(vec![1.0]).retain_grad().is_err());
    assert!(plain(vec![1.0]).register_hook(|_| Ok(None)).is_err());

    // backward(inputs=…): only those get a gradient.
    let p = leaf(vec![1.0]);
    let q = leaf(vec![1.0]);
    let s = sum(&mul(&p, &q));
    s.backward_with(None, None, false, Some(std::slice::from_ref(&q)))
        .unwrap();
    assert!(p.grad().is_none());
    assert_eq!(grad_of(&q), vec![1.0]);
}

/// `register_hook` returns PyTorch's `RemovableHandle`: a removed hook no
/// longer runs (on a leaf and on a non-leaf), removing twice does nothing,
/// and a hook that captured its own tensor (a cycle, as in PyTorch) frees
/// the graph once removed.
#[test]
fn hooks_are_removed_by_their_handles() {
    let _s = serial();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let log = |name: &'static str| {
        let calls = calls.clone();
        move |_: &Tensor| {
            calls.lock().unwrap().push(name);
            Ok(None)
        }
    };
    let x = leaf(vec![1.0, 2.0]);
    let on_leaf = x.register_hook(log("leaf")).unwrap();
    let kept = x.register_hook(log("kept")).unwrap();
    let b = mul(&x, &two());
    let on_b = b.register_hook(log("b")).unwrap();
    sum(&b)
        .backward_with(None, Some(true), false, None)
        .unwrap();
    assert_eq!(*calls.lock().unwrap(), vec!["b", "leaf", "kept"]);
    on_leaf.remove();
    on_b.remove();
    on_b.remove();
    calls.lock().unwrap().clear();
    sum(&b).backward().unwrap();
    assert_eq!(*calls.lock().unwrap(), vec!["kept"]);
    drop(kept);
    assert_eq!(grad_of(&x), vec![4.0, 4.0]);

    // One hook per step, each removed: backward stays one hook long.
    let w = leaf(vec![1.0]);
    for _ in 0..100 {
        let h = w.register_hook(|_| Ok(None)).unwrap();
        sum(&mul(&w, &two())).backward().unwrap();
        h.remove();
    }
    assert!(w.autograd_meta().unwrap().hooks().is_empty());

    // A hook holding its own tensor keeps the graph until it is removed.
    let nodes = live_nodes();
    let y = mul(&leaf(vec![1.0]), &two());
    let held = y.clone();
    let handle = y
        .register_hook(move |_| {
            let _ = &held;
            Ok(None)
        })
        .unwrap();
    drop(y);
    assert!(live_nodes() > nodes, "the cycle keeps the node");
    handle.remove();
    assert_eq!(live_nodes(), nodes, "removed, the graph is freed");
}

#[test]
fn detach_shares_data_without_history() {
    let _s = serial();
    let x = leaf(vec![1.0, 2.0]);
    let y = mul(&x, &two());
    let d = y.detach().unwrap();
    assert!(!d.requires_grad() && d.is_leaf());
    assert!(d.shares_storage(&y));
    assert_eq!(d.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
}

#[test]
fn graphs_are_freed_and_a_training_loop_keeps_memory_flat() {
    let _s = serial();
    let start = live_nodes();
    let w = leaf(vec![0.5; 8]);
    let x = plain(vec![1.0; 8]);
    let mut during = Vec::new();
    // No freed buffers kept for reuse: what is live is what is held.
    opforge::tensor::set_buffer_cache(Some(0));
    let mut bytes_after_warmup = 0;
    for step in 0..1000 {
        if step == 10 {
            bytes_after_warmup = thread_bytes();
        }
        let loss = sum(&mul(&mul(&w, &x), &w));
        loss.backward().unwrap();
        {
            let _g = no_grad();
            let mut w2 = w.clone();
            at::mul__Tensor(&mut w2, &Tensor::scalar(1.0f32)).unwrap();
        }
        if step % 100 == 0 {
            during.push(live_nodes() - start);
        }
        drop(loss);
        // What stays is w's accumulator, which lives as long as w.
        assert_eq!(
            live_nodes(),
            start + 1,
            "step {step}: the graph outlived its output"
        );
    }
    // While an output lives, its graph does: 3 functions and the accumulator.
    assert!(during.iter().all(|&n| n == 4), "{during:?}");
    // And the heap: 990 steps later (each allocating and freeing a graph, its
    // saved tensors and gradients), the live bytes are what they were.
    let grown = thread_bytes() - bytes_after_warmup;
    assert!(
        grown.abs() < 1024,
        "{grown} bytes more live after 990 steps"
    );
    // A graph kept by a retained output is freed with it.
    let kept = sum(&mul(&w, &x));
    assert_eq!(live_nodes(), start + 3);
    drop(kept);
    assert_eq!(live_nodes(), start + 1);
    // A saved output (re-attached on unpack) makes no cycle either: a node
    // saving its own output is freed with the output.
    struct SelfSaving(Option<SavedTensor>);
    impl Backward for SelfSaving {
        fn apply(&mut self, _: Grads, _: &BackwardCtx) -> Result<Grads> {
            let out = self.0.as_ref().unwrap().unpack()?;
            assert!(out.grad_fn().is_some(), "re-attached to its node");
            Ok(Grads::from_elem(Some(out), 1))
        }
        fn release(&mut self) {
            if let Some(s) = &mut self.0 {
                s.release();
            }
        }
    }
    let out = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
    let rec = Recording::begin(&[&w]).unwrap();
    rec.finish("SelfSavingBackward", &[&out], |s| {
        Ok(SelfSaving(Some(s.output(0)?)))
    })
    .unwrap();
    assert_eq!(live_nodes(), start + 2);
    drop(out);
    assert_eq!(live_nodes(), start + 1);
    drop(w);
    assert_eq!(live_nodes(), start);
}

/// Builds a chain of 20,000 nodes from a leaf on a thread with a small stack
/// (`build` returns its last tensor), then drops it: dropping that many
/// nodes recursively would overflow the stack. Every node goes with the
/// chain but the leaf's accumulator, which goes with the leaf.
fn drop_a_chain_on_a_small_stack(build: impl FnOnce(&Tensor) -> Tensor + Send + 'static) {
    let start = live_nodes();
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let w = leaf(vec![1.0]);
            let last = build(&w);
            assert_eq!(
                live_nodes(),
                start + 20_002,
                "the chain and w's accumulator"
            );
            drop(last);
            assert_eq!(live_nodes(), start + 1, "w's accumulator lives with w");
            drop(w);
            assert_eq!(live_nodes(), start);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_long_graph_is_dropped_without_deep_recursion() {
    let _s = serial();
    // Held together through edges and through the saved inputs' histories.
    drop_a_chain_on_a_small_stack(|w| {
        let mut y = mul(w, w);
        for _ in 0..20_000 {
            y = mul(&y, w);
        }
        y
    });
}

/// A graph held together only by what nodes saved (no edge between them):
/// a saved tensor's history, and a custom Function's state holding a tensor,
/// are handed to the dropping loop too, not dropped recursively.
#[test]
fn a_chain_held_by_saved_tensors_and_function_state_is_dropped_without_deep_recursion() {
    let _s = serial();
    /// Saves the previous link, which is not one of its inputs.
    struct Keeps(SavedTensor);
    impl Backward for Keeps {
        fn apply(&mut self, _: Grads, _: &BackwardCtx) -> Result<Grads> {
            Ok(Grads::from_elem(None, 1))
        }
        fn release(&mut self) {
            self.0.release();
        }
    }
    /// Keeps the previous link in its state (PyTorch's `ctx.prev = prev`).
    struct Link;
    impl autograd::Function for Link {
        // A `Vec<Tensor>` is a plain value, not an input: no edge to `prev`.
        type Args = (Tensor, Vec<Tensor>);
        type Output = Tensor;
        type State = Vec<Tensor>;
        fn forward_with_ctx(
            ctx: &mut autograd::FunctionCtx<Vec<Tensor>>,
            (w, prev): &(Tensor, Vec<Tensor>),
        ) -> Result<Tensor> {
            ctx.state = prev.clone();
            at::mul_Tensor(w, &two())
        }
    }
    // One chain of each kind (a chain mixing them would be dropped without
    // deep recursion even if one kind were dropped in place).
    drop_a_chain_on_a_small_stack(|w| {
        let mut prev = mul(w, &two());
        for _ in 0..20_000 {
            let out = mul(w, &two());
            let rec = Recording::begin(&[w]).unwrap();
            let kept = SavedTensor::input(&prev);
            rec.finish("KeepsBackward", &[&out], |_| Ok(Keeps(kept)))
                .unwrap();
            prev = out;
        }
        prev
    });
    drop_a_chain_on_a_small_stack(|w| {
        let mut prev = mul(w, &two());
        for _ in 0..20_000 {
            prev = <Link as autograd::Function>::apply((w.clone(), vec![prev])).unwrap();
        }
        prev
    });
}

#[test]
fn backward_on_separate_graphs_in_threads_matches_one_thread() {
    let _s = serial();
    let run = |k: f32| -> Vec<f32> {
        let x = leaf((0..16).map(|i| i as f32 * k).collect());
        let y = at::add_Tensor(&mul(&x, &x), &mul(&x, &two()), Scalar::Int(1)).unwrap();
        sum(&mul(&y, &x)).backward().unwrap();
        grad_of(&x)
    };
    let expected: Vec<Vec<f32>> = (1..=4).map(|k| run(k as f32)).collect();
    for _ in 0..5 {
        let threads: Vec<_> = (1..=4)
            .map(|k| std::thread::spawn(move || run(k as f32)))
            .collect();
        let got: Vec<Vec<f32>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(got, expected);
    }
}

/// Eight threads run backward into the same fresh leaf at once: every
/// contribution lands. The first gradient is stored, later ones added, and
/// the read of `.grad` and the write after it are one step (PyTorch holds
/// `AccumulateGrad`'s mutex across them); a lost update would leave 7.
#[test]
fn concurrent_backward_into_a_fresh_leaf_loses_no_gradient() {
    let _s = serial();
    const THREADS: usize = 8;
    const ROUNDS: usize = 400;
    let leaves: Vec<Tensor> = (0..ROUNDS).map(|_| leaf(vec![1.0; 3])).collect();
    let barrier = std::sync::Barrier::new(THREADS);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for x in &leaves {
                    let y = sum(&mul(x, &two()));
                    barrier.wait();
                    y.backward().unwrap();
                }
            });
        }
    });
    let lost: Vec<usize> = leaves
        .iter()
        .enumerate()
        .filter(|(_, x)| grad_of(x) != vec![2.0 * THREADS as f32; 3])
        .map(|(i, _)| i)
        .collect();
    assert!(lost.is_empty(), "rounds that lost a gradient: {lost:?}");
    // `retain_grad` on a shared non-leaf: the same, through the node.
    for _ in 0..50 {
        let x = leaf(vec![1.0; 3]);
        let h = mul(&x, &two());
        autograd::TensorAutograd::retain_grad(&h).unwrap();
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    let y = sum(&mul(&h, &two()));
                    barrier.wait();
                    y.backward_with(None, Some(true), false, None).unwrap();
                });
            }
        });
        assert_eq!(grad_of(&h), vec![2.0 * THREADS as f32; 3]);
        assert_eq!(grad_of(&x), vec![4.0 * THREADS as f32; 3]);
    }
}

#[test]
fn out_calls_refuse_tensors_that_require_grad() {
    let _s = serial();
    let x = leaf(vec![1.0, 2.0]);
    let mut out = plain(vec![0.0, 0.0]);
    let e = at::mul_out(&x, &two(), &mut out).unwrap_err();
    assert_eq!(
        e.to_string(),
        "mul(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
    );
    let v = out.storage().version();
    {
        let _g = no_grad();
        at::mul_out(&x, &two(), &mut out).unwrap();
    }
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    assert_eq!(
        out.storage().version(),
        v + 1,
        "an out= write bumps the version"
    );
    assert!(!out.requires_grad());
}

#[test]
fn a_retained_gradient_follows_an_in_place_rebase() {
    let _s = serial();
    let x = leaf(vec![1.0, 2.0]);
    let mut y = mul(&x, &two());
    y.retain_grad().unwrap();
    at::mul__Tensor(&mut y, &Tensor::scalar(3.0f32)).unwrap();
    sum(&mul(&y, &two())).backward().unwrap();
    // The gradient of y's new value (d/dy 2y = 2), stored once.
    assert_eq!(grad_of(&y), vec![2.0, 2.0]);
    assert_eq!(grad_of(&x), vec![12.0, 12.0]);
}

#[test]
fn a_tensor_prints_its_autograd_state_as_pytorch_does() {
    let _s = serial();
    let a = leaf(vec![1.0, 2.0]);
    assert_eq!(
        a.to_string(),
        "tensor([1.0, 2.0], dtype=torch.float32, requires_grad=True)"
    );
    let b = mul(&a, &two());
    assert_eq!(
        b.to_string(),
        "tensor([2.0, 4.0], dtype=torch.float32, grad_fn=<MulBackward0>)"
    );
    assert_eq!(
        plain(vec![1.0]).to_string(),
        "tensor([1.0], dtype=torch.float32)"
    );
}

#[test]
fn a_gradient_laid_out_unlike_its_leaf_is_copied_into_grad() {
    let _s = serial();
    // sum's backward expands one element (stride 0) and add's passes it on:
    // taken over as it is, `.grad` would be a broadcast view, and the next
    // backward's in-place accumulation would write one element three times.
    // PyTorch's AccumulateGrad copies a gradient that does not have its
    // leaf's strides.
    let x = leaf(vec![1.0, 2.0, 3.0]);
    let y = leaf(vec![1.0, 1.0, 1.0]);
    for _ in 0..2 {
        sum(&at::add_Tensor(&x, &y, Scalar::Int(1)).unwrap())
            .backward()
            .unwrap();
    }
    for t in [&x, &y] {
        assert_eq!(grad_of(t), vec![2.0; 3]);
        assert_eq!(t.grad().unwrap().strides(), vec![1]);
    }
}

#[test]
fn the_engine_checks_every_gradient_against_the_input_it_reaches() {
    let _s = serial();
    // A node whose backward returns what it was built with, whatever the
    // shapes: the engine sums a gradient that expands to its input back to
    // it, casts it to the input's dtype, and refuses any other shape with
    // PyTorch's message (its `validate_outputs`).
    struct Returns(Option<Tensor>);
    impl Backward for Returns {
        fn apply(&mut self, _: Grads, _: &BackwardCtx) -> Result<Grads> {
            Ok(Grads::from_elem(self.0.take(), 1))
        }
        fn release(&mut self) {}
    }
    let run = |w: &Tensor, g: Tensor| {
        let out = Tensor::zeros(&[], DType::Float32, Device::Cpu);
        let rec = Recording::begin(&[w]).unwrap();
        rec.finish("ReturnsBackward", &[&out], |_| Ok(Returns(Some(g))))
            .unwrap();
        out.backward()
    };
    let w = leaf(vec![1.0, 2.0]);
    let g = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap();
    run(&w, g).unwrap();
    let got = w.grad().unwrap();
    assert_eq!(got.dtype(), DType::Float32, "cast to the leaf's dtype");
    assert_eq!(
        got.to_vec::<f32>().unwrap(),
        vec![9.0, 12.0],
        "summed to [2]"
    );
    let wrong = Tensor::from_vec(vec![1.0f32; 3], &[3]).unwrap();
    assert_eq!(
        run(&w, wrong).unwrap_err().to_string(),
        "Function ReturnsBackward returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]"
    );
    // Through a node with a history: checked against the output it made.
    let x = leaf(vec![1.0, 2.0]);
    let y = mul(&x, &two());
    let wrong = Tensor::from_vec(vec![1.0f32; 4], &[2, 2]).unwrap();
    run(&y, wrong).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![4.0, 4.0]);
}

#[test]
fn a_leaf_keeps_its_accumulator_while_it_stops_requiring_grad() {
    let _s = serial();
    let w = leaf(vec![1.0, 2.0]);
    // A graph recorded before the leaf stops requiring grad still sends it
    // its gradient (as PyTorch's, whose graph holds the accumulator).
    let old = sum(&mul(&w, &two()));
    w.set_requires_grad(false).unwrap();
    assert!(!w.requires_grad());
    assert!(!sum(&mul(&w, &two())).requires_grad(), "nothing recorded");
    old.backward().unwrap();
    assert_eq!(grad_of(&w), vec![2.0, 2.0]);
    // Requiring grad again: the same accumulator, gradients add up.
    w.set_requires_grad(true).unwrap();
    let a = mul(&w, &two());
    let b = mul(&w, &two());
    let (ea, eb) = (a.grad_fn().unwrap(), b.grad_fn().unwrap());
    let next = |g: &opforge::autograd::GradFn| g.node.next_edges()[0].clone().unwrap().node;
    assert!(Arc::ptr_eq(&next(&ea), &next(&eb)), "one accumulator");
    sum(&a).backward().unwrap();
    assert_eq!(grad_of(&w), vec![4.0, 4.0]);
}

#[test]
fn live_nodes_counts_nodes_made_and_dropped_on_other_threads() {
    let _s = serial();
    let start = live_nodes();
    let w = leaf(vec![1.0, 2.0]);
    // Made here, dropped on a thread that then ends.
    let y = sum(&mul(&w, &two()));
    assert_eq!(live_nodes(), start + 3, "mul, sum, w's accumulator");
    std::thread::spawn(move || drop(y)).join().unwrap();
    assert_eq!(live_nodes(), start + 1);
    // Made on a thread that ends, dropped here.
    let w2 = w.clone();
    let y = std::thread::spawn(move || sum(&mul(&w2, &two())))
        .join()
        .unwrap();
    assert_eq!(live_nodes(), start + 3);
    drop(y);
    drop(w);
    assert_eq!(live_nodes(), start);
}

/// `finish` writes the history of a result only the kernel holds without the
/// tensor's locks, and of one another handle reaches under them: every kind
/// ends the same. A second handle sees the history; a view's reads as current
/// (not remade from its base); a result that keeps its gradient has it moved
/// to the new node; each later call on them records, and backward reaches the
/// leaf through each.
#[test]
fn finish_gives_fresh_and_shared_results_the_same_history() {
    let _s = serial();
    /// Passes the gradient through.
    struct Through;
    impl Backward for Through {
        fn apply(&mut self, grads: Grads, _: &BackwardCtx) -> Result<Grads> {
            Ok(grads)
        }
        fn release(&mut self) {}
    }
    let w = leaf(vec![1.0, 2.0]);
    let record = |out: &mut Tensor| {
        Recording::begin(&[&w])
            .unwrap()
            .finish("ThroughBackward", [out], |_| Ok(Through))
            .unwrap()
    };
    // Fresh: only `fresh` reaches it.
    let mut fresh = mul(&plain(vec![1.0, 2.0]), &two());
    record(&mut fresh);
    // Shared: `other` is a second handle to the same tensor.
    let mut shared = plain(vec![3.0, 4.0]);
    let other = shared.clone();
    record(&mut shared);
    // A fresh view of a base that requires grad, whose storage is written
    // after the view is made: the history set now must read as current
    // (a stale one would be remade from the base's).
    let b = leaf(vec![1.0, 2.0, 3.0, 4.0]);
    let mut base = at::view(&mul(&b, &two()), &[2, 2]).unwrap();
    let mut view = base.select(0, 1).unwrap();
    {
        let _off = no_grad();
        at::mul__Tensor(&mut base, &two()).unwrap();
    }
    record(&mut view);
    // One strong handle, and its node's weak one (it keeps its gradient):
    // recorded again, the retained gradient follows it to the new node.
    let mut kept = mul(&w, &two());
    kept.retain_grad().unwrap();
    record(&mut kept);
    for (what, t) in [
        ("fresh", &fresh),
        ("shared", &shared),
        ("second handle", &other),
        ("view", &view),
        ("kept", &kept),
    ] {
        let g = t.grad_fn().unwrap_or_else(|| panic!("{what}: no history"));
        assert_eq!(g.node.name(), "ThroughBackward", "{what}");
        assert!(t.requires_grad() && !t.is_leaf(), "{what}");
        // The autograd keys are set: the next call records.
        assert!(sum(t).grad_fn().is_some(), "{what}: sum not recorded");
    }
    for (what, t) in [
        ("fresh", &fresh),
        ("shared", &shared),
        ("view", &view),
        ("kept", &kept),
    ] {
        w.set_grad(None).unwrap();
        sum(t).backward().unwrap();
        assert_eq!(grad_of(&w), vec![1.0, 1.0], "{what}");
    }
    assert_eq!(grad_of(&kept), vec![1.0, 1.0], "kept's retained gradient");
}

/// A forward level's bookkeeping stays proportional to the dual tensors
/// alive: 20,000 operations on a dual tensor, each result dropped, leave the
/// thread's heap as it was after the first 2,000 (each once kept a handle to
/// its dropped result until the level ended).
#[test]
fn a_forward_level_keeps_memory_flat_over_many_operations() {
    let _s = serial();
    use autograd::forward_ad;
    let x = Tensor::from_vec(vec![1.0f64; 4], &[4]).unwrap();
    let v = Tensor::from_vec(vec![0.5f64; 4], &[4]).unwrap();
    let _level = forward_ad::dual_level().unwrap();
    let dual = forward_ad::make_dual(&x, &v).unwrap();
    let mut after_warmup = 0;
    for i in 0..20_000 {
        let y = at::mul_Tensor(&dual, &dual).unwrap();
        assert!(forward_ad::unpack_dual(&y).tangent.is_some());
        if i == 2_000 {
            after_warmup = thread_bytes();
        }
    }
    let grown = thread_bytes() - after_warmup;
    assert!(
        grown < 64 * 1024,
        "the level grew {grown} bytes over 18,000 operations"
    );
}

/// Guards that restore their thread's state when dropped are not `Send`:
/// dropped on another thread (or held across an `.await` on a threaded
/// executor), they would restore that thread's state and strand their own.
/// Checked at compile time: `check` is ambiguous, so this does not compile,
/// for a type that is `Send`.
#[test]
fn thread_affine_guards_are_not_send() {
    trait AmbiguousIfSend<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfSend<()> for T {}
    impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}
    <autograd::forward_ad::DualLevel as AmbiguousIfSend<_>>::check();
    <autograd::forward_ad::Suspended as AmbiguousIfSend<_>>::check();
    <autograd::GradModeGuard as AmbiguousIfSend<_>>::check();
    <opforge::keys::LocalKeysGuard as AmbiguousIfSend<_>>::check();
    <opforge::fake::FakeModeGuard as AmbiguousIfSend<_>>::check();
    <opforge::overrides::FunctionModeGuard as AmbiguousIfSend<_>>::check();
    <opforge::overrides::DisableGuard as AmbiguousIfSend<_>>::check();
    <opforge::overrides::DispatchModeGuard as AmbiguousIfSend<_>>::check();
}
