//! Bad input to the kernels: sizes beyond memory, and writes whose output shares
//! memory with an input. Each case asserts PyTorch's error word for word, or the
//! result PyTorch computes where it computes one (checked against PyTorch
//! 2.15). Nothing here allocates or walks gigabytes: huge requests are refused
//! by the allocation limit, which every test of this binary sets to the same
//! 16 GiB first (so the cases do not depend on the machine's memory, and tests
//! running in parallel never see another limit).

use opforge::tensor::set_allocation_limit;
use opforge::{ops, torch, DType, Device, Scalar, Tensor};
use std::sync::Once;

const OOM_64GIB: &str = "DefaultCPUAllocator: can't allocate memory: you tried to allocate 68719476736 bytes. Error code 12 (Cannot allocate memory)";
const OOM_128GIB: &str = "DefaultCPUAllocator: can't allocate memory: you tried to allocate 137438953472 bytes. Error code 12 (Cannot allocate memory)";
const PARTIAL: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";
const INTERNAL: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";

fn limit() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| set_allocation_limit(Some(16 << 30)));
}

fn err(r: opforge::Result<Tensor>) -> String {
    match r {
        Ok(t) => panic!("expected an error, got {t}"),
        Err(e) => e.to_string(),
    }
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// `arange(n)` as float32.
fn arange(n: i64) -> Tensor {
    ops::arange(Scalar::Int(n), Some(DType::Float32), None, None, None).unwrap()
}

/// `t[start:end]` along dimension 0.
fn slice(t: &Tensor, start: i64, end: Option<i64>) -> Tensor {
    ops::slice_Tensor(t, 0, Some(start), end, 1).unwrap()
}

// ---- Memory ---------------------------------------------------------------------

/// `torch.zeros(1 << 34)` and the other factories: PyTorch's allocator error,
/// not an aborted process.
#[test]
fn factories_beyond_memory_are_errors() {
    limit();
    let n = [1i64 << 34];
    assert_eq!(err(torch::zeros(&n)), OOM_64GIB);
    assert_eq!(err(torch::ones(&n)), OOM_64GIB);
    assert_eq!(err(torch::empty(&n)), OOM_64GIB);
    assert_eq!(err(torch::full(&n, Scalar::Float(2.0))), OOM_64GIB);
    // int64: 8 bytes an element.
    assert_eq!(err(torch::arange(Scalar::Int(1 << 34))), OOM_128GIB);
    let mut out = arange(2);
    assert_eq!(
        err(ops::arange_out(Scalar::Int(1 << 34), &mut out)),
        OOM_64GIB
    );
    assert_eq!(out.shape(), vec![2]);
    // A byte count beyond int64 is PyTorch's overflow error, on every device.
    let huge = [1i64 << 60];
    let f64s = Some(DType::Float64);
    assert_eq!(
        err(ops::zeros(&huge, f64s, None, None, None)),
        "Storage size calculation overflowed with sizes=[1152921504606846976]"
    );
    assert_eq!(
        err(ops::zeros(&huge, f64s, None, Some(Device::Meta), None)),
        "Storage size calculation overflowed with sizes=[1152921504606846976]"
    );
    // Meta tensors take no memory.
    let m = ops::zeros(&n, None, None, Some(Device::Meta), None).unwrap();
    assert_eq!(m.shape(), vec![1 << 34]);
}

/// The runtime's own constructors and in-place resizing.
#[test]
fn tensor_allocation_is_fallible() {
    limit();
    assert_eq!(
        err(Tensor::try_zeros(&[1 << 34], DType::Float32, Device::Cpu)),
        OOM_64GIB
    );
    assert_eq!(
        err(Tensor::try_full(
            &[1 << 34],
            Scalar::Int(1),
            DType::Float32,
            Device::Cpu
        )),
        OOM_64GIB
    );
    let t = arange(2);
    assert_eq!(t.resize_(&[1 << 34]).unwrap_err().to_string(), OOM_64GIB);
    assert_eq!(f32s(&t), vec![0.0, 1.0]);
    let mut out = arange(2);
    let x = arange(3);
    // `out=` resizing: the same error, and `out` as it was.
    let e = ops::add_out(
        &x,
        &x.expand(&[1 << 34, 3]).unwrap(),
        Scalar::Int(1),
        &mut out,
    );
    assert_eq!(
        err(e),
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate 206158430208 bytes. Error code 12 (Cannot allocate memory)"
    );
    assert_eq!(out.shape(), vec![2]);
}

/// Copies and pointwise results of an expanded view need its full element
/// count: refused like PyTorch's, before anything is materialized.
#[test]
fn copies_of_huge_expanded_views_are_errors() {
    limit();
    let x = torch::arange(Scalar::Int(1))
        .unwrap()
        .expand(&[1 << 34])
        .unwrap();
    assert_eq!(err(x.clone_tensor()), OOM_128GIB);
    assert_eq!(err(x.contiguous()), OOM_128GIB);
    assert_eq!(err(x.add(&x)), OOM_128GIB);
    assert_eq!(err(x.to_dtype_copy(DType::Float64)), OOM_128GIB);
    assert_eq!(err(x.deep_clone()), OOM_128GIB);
    // Picking a few elements reads the view in place, as PyTorch does.
    let idx = torch::arange(Scalar::Int(2)).unwrap();
    let picked = ops::index_select(&x, 0, &idx).unwrap();
    assert_eq!(picked.to_vec::<i64>().unwrap(), vec![0, 0]);
}

/// An element count beyond int64 is refused where the view is made, as in
/// PyTorch (it used to reach `sum` and panic with "capacity overflow").
#[test]
fn views_with_more_elements_than_int64_are_errors() {
    limit();
    let x = torch::arange(Scalar::Int(1)).unwrap();
    assert_eq!(
        err(x.expand(&[1 << 62, 3])),
        "numel: integer multiplication overflow"
    );
    let y = torch::arange(Scalar::Int(3)).unwrap();
    assert_eq!(
        err(y.strided_view(&[1 << 62, 3], &[0, 1], 0)),
        "numel: integer multiplication overflow"
    );
    // 2^62 elements do fit.
    assert_eq!(x.expand(&[1 << 62, 1]).unwrap().numel(), 1 << 62);
}

/// Strides beyond int64 (negative in PyTorch, and beyond `isize`, which ndarray
/// and the kernels take them as) are refused where the geometry is made, on a
/// dimension of size 1 and on an empty tensor too: before, such a view was
/// accepted, and reading it broke `ArrayView::from_shape_ptr`'s precondition
/// (a panic with debug assertions, undefined behaviour without).
#[test]
fn strides_and_offsets_beyond_int64_are_refused() {
    limit();
    let t = Tensor::from_vec(vec![0f32; 16], &[16]).unwrap();
    let max = i64::MAX as usize;
    for (shape, strides) in [
        (&[1usize, 4][..], &[usize::MAX, 1][..]),
        (&[1, 4], &[max + 1, 1]),
        (&[4, 1], &[1, usize::MAX]),
        (&[0, 4], &[usize::MAX, 1]),
        (&[2, 0], &[1, max + 1]),
        (&[1], &[usize::MAX]),
    ] {
        let e = err(t.strided_view(shape, strides, 0));
        assert!(
            e.starts_with(&format!("strides {strides:?}: "))
                && e.contains("is larger than the largest int64 (9223372036854775807)"),
            "{shape:?} {strides:?}: {e}"
        );
    }
    let e = err(t.strided_view(&[0], &[1], max + 1));
    assert!(
        e.starts_with("storage offset 9223372036854775808 is larger"),
        "{e}"
    );
    let e = err(t.strided_view(&[max + 1, 0], &[1, 1], 0));
    assert!(e.starts_with("sizes [9223372036854775808, 0]: "), "{e}");
    // int64's largest stride is fine where it reaches nothing, and every read
    // of such a view works.
    for (shape, strides) in [(&[1usize, 4][..], &[max, 1][..]), (&[0, 4], &[max, 1])] {
        let v = t.strided_view(shape, strides, 0).unwrap();
        let n = v.numel();
        assert_eq!(f32s(&v.contiguous().unwrap()), vec![0.0; n]);
        assert_eq!(f32s(&v.clone_tensor().unwrap()), vec![0.0; n]);
        assert_eq!(f32s(&v.add(&v).unwrap()), vec![0.0; n]);
        assert_eq!(v.to_dtype_copy(DType::Float64).unwrap().numel(), n);
        assert!(v.to_string().starts_with("tensor("));
        let out = Tensor::zeros(shape, DType::Float32, Device::Cpu);
        ops::copy_(&mut out.clone(), &v, false).unwrap();
        ops::add_out(&v, &v, Scalar::Int(1), &mut out.clone()).unwrap();
    }
}

/// Sizes above int64 on empty tensors, and sizes whose product (empty
/// dimensions counted as 1) leaves int64: refused by every constructor that
/// takes sizes. Before, `from_vec(vec![], &[0, 1 << 63, usize::MAX, 0])`,
/// `try_zeros` and the saved-tensor loader accepted them, and a later kernel
/// multiplying sizes overflowed (a panic with overflow checks, a silent wrap
/// without). PyTorch cannot express a size above int64, and refuses the
/// products with "Stride calculation overflowed" (`torch.empty(0, 2**62, 4)`,
/// `torch.empty(0, 1, 2**62) + torch.zeros(1).expand(1, 2**62, 1)`).
#[test]
fn sizes_beyond_int64_are_refused_on_empty_tensors_too() {
    limit();
    let too_big = |e: String, shape: &str| {
        assert!(
            e.starts_with(&format!("sizes {shape}: "))
                && e.contains("is larger than the largest int64 (9223372036854775807)"),
            "{e}"
        );
    };
    let strides = |e: String| {
        assert!(
            e.starts_with("Stride calculation overflowed: the sizes ")
                && e.contains("MAX_GEOMETRY"),
            "{e}"
        );
    };
    let huge = [0, 1 << 63, usize::MAX, 0];
    let shown = "[0, 9223372036854775808, 18446744073709551615, 0]";
    too_big(err(Tensor::from_vec(Vec::<f32>::new(), &huge)), shown);
    for dtype in DType::ALL {
        for device in [Device::Cpu, Device::Meta] {
            too_big(err(Tensor::try_zeros(&huge, dtype, device)), shown);
            too_big(
                err(Tensor::try_full(&huge, Scalar::Int(1), dtype, device)),
                shown,
            );
        }
    }
    let buffer = || opforge::tensor::Buffer::zeros(DType::Float32, Device::Cpu, 0);
    too_big(
        err(Tensor::from_buffer(
            buffer(),
            &huge,
            DType::Float32,
            Device::Cpu,
        )),
        shown,
    );
    // A buffer of the wrong length is refused too (it was taken as it was).
    assert_eq!(
        err(Tensor::from_buffer(
            buffer(),
            &[2],
            DType::Float32,
            Device::Cpu
        )),
        "shape [2] is invalid for input of size 0"
    );
    // The saved form (what a custom class's state and a saved graph hold).
    let saved = r#"{"dtype": "float32", "shape": [0, 9223372036854775808], "requires_grad": false, "data": []}"#;
    let e = serde_json::from_str::<Tensor>(saved)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("9223372036854775808 at dimension 1 is larger"),
        "{e}"
    );
    let t = Tensor::from_vec(vec![0f32; 4], &[4]).unwrap();
    too_big(
        err(t.strided_view(&[0, 1 << 63], &[1, 1], 0)),
        "[0, 9223372036854775808]",
    );
    // Sizes within int64 whose product is not.
    let product = [0, 1 << 62, 4];
    strides(err(Tensor::from_vec(Vec::<f32>::new(), &product)));
    strides(err(Tensor::try_zeros(&product, DType::Int64, Device::Cpu)));
    strides(err(t.strided_view(&product, &[1, 1, 1], 0)));
    let sizes = [0, 1 << 62, 4];
    strides(err(torch::zeros(&sizes)));
    strides(err(torch::empty(&sizes)));
    strides(err(torch::full(&sizes, Scalar::Float(1.0))));
    strides(err(ops::zeros(
        &sizes,
        None,
        None,
        Some(Device::Meta),
        None,
    )));
    strides(err(torch::randn(&sizes)));
    let r = torch::zeros(&[0]).unwrap();
    strides(r.resize_(&[0, 1 << 62, 4]).unwrap_err().to_string());
    // PyTorch's order: the byte count first.
    assert_eq!(
        err(torch::zeros(&[1 << 62, 4, 0])),
        "Storage size calculation overflowed with sizes=[4611686018427387904, 4, 0]"
    );
    // Views of an empty tensor, and the broadcast of two valid shapes.
    let z = torch::zeros(&[0]).unwrap();
    let e = err(z.view(&[0, 1 << 62, 1 << 62]));
    assert!(e.starts_with("view: the view's geometry overflows"), "{e}");
    let e = err(z.reshape(&[0, 1 << 62, 1 << 62]));
    assert!(
        e.starts_with("reshape: the view's geometry overflows"),
        "{e}"
    );
    let a = torch::empty(&[0, 1, 1 << 62]).unwrap();
    let b = torch::zeros(&[1])
        .unwrap()
        .expand(&[1, 1 << 62, 1])
        .unwrap();
    strides(err(a.add(&b)));
    strides(err(a.mul(&b)));
    strides(err(a.expand(&[0, 1 << 62, 1 << 62])));
    // What passes multiplies within int64: kernels on it neither overflow
    // nor walk 2^62 empty lines (softmax along dimension 0 and `cat` along
    // the last did: a hang).
    for shape in [[0, 1 << 31, 1 << 30], [1 << 31, 1 << 30, 0]] {
        let e = torch::empty(&shape).unwrap();
        for dim in 0..3 {
            assert_eq!(e.softmax(dim).unwrap().shape(), e.shape());
            assert_eq!(e.log_softmax(dim).unwrap().shape(), e.shape());
            assert_eq!(ops::cat(&[e.clone(), e.clone()], dim).unwrap().numel(), 0);
            let idx = Tensor::from_vec(vec![0i64], &[1]).unwrap();
            if let Ok(picked) = ops::index_select(&e, dim, &idx) {
                assert_eq!(picked.numel(), 0);
            }
            // A reduction whose result has 2^62 elements: PyTorch's error.
            match ops::sum_dim_IntList(&e, Some(&[dim]), false, None) {
                Ok(sum) => assert_eq!(sum.numel(), 0),
                Err(e) => assert_eq!(
                    e.to_string(),
                    "Storage size calculation overflowed with sizes=[2147483648, 1073741824]"
                ),
            }
        }
        assert_eq!(e.contiguous().unwrap().numel(), 0);
    }
    // Sizes that add up beyond int64 along `cat`'s dimension (a panic with
    // overflow checks, a wrap without).
    let big = torch::zeros(&[1]).unwrap().expand(&[1 << 62]).unwrap();
    strides(err(ops::cat(
        &[big.clone(), big.clone(), big.clone(), big],
        0,
    )));
}

/// Views compute their geometry in checked arithmetic: a size times a stride
/// beyond int64 is an error naming the view (it used to panic with overflow
/// checks, and to wrap silently without them).
#[test]
fn view_geometry_that_overflows_is_an_error() {
    limit();
    let t = Tensor::from_vec(vec![0f32; 16], &[16]).unwrap();
    let max = i64::MAX as usize;
    let empty = t.strided_view(&[5, 0], &[max, 1], 0).unwrap();
    let e = err(empty.unsqueeze(0));
    assert_eq!(
        e,
        "unsqueeze: the view's geometry overflows: 5 * 9223372036854775807 is larger than the largest int64 (9223372036854775807)"
    );
    // The same view with room to spare unsqueezes as PyTorch does.
    let fine = t.strided_view(&[1, 0], &[max, 1], 0).unwrap();
    assert_eq!(fine.unsqueeze(0).unwrap().strides(), vec![max, max, 1]);
    let e = err(empty.select(0, 3));
    assert!(
        e.starts_with("select: the view's geometry overflows: 3 * 9223372036854775807"),
        "{e}"
    );
    let e = err(ops::slice_Tensor(&empty, 0, Some(2), None, 1));
    assert!(e.starts_with("slice: the view's geometry overflows"), "{e}");
    let wide = t.strided_view(&[4, 0], &[1 << 62, 1], 0).unwrap();
    let e = err(ops::slice_Tensor(&wide, 0, None, None, 4));
    assert!(
        e.starts_with("slice: the view's geometry overflows: 4611686018427387904 * 4"),
        "{e}"
    );
    // A view of an empty tensor whose contiguous strides leave int64.
    let z = Tensor::zeros(&[0], DType::Float32, Device::Cpu);
    let e = err(z.view(&[1 << 40, 1 << 40, 1 << 40, 0]));
    assert!(e.starts_with("view: the view's geometry overflows"), "{e}");
    let e = err(z.reshape(&[1 << 40, 1 << 40, 1 << 40, 0]));
    assert!(
        e.starts_with("reshape: the view's geometry overflows"),
        "{e}"
    );
}

/// A thread count that cannot be honoured is refused at once, and the count
/// stays as it was: `set_num_threads(100000)` used to be accepted, and then
/// every parallel kernel tried to build a pool of 100,000 threads, failed, and
/// tried again on the next call (17-19 s per 1M-element add or sum).
#[test]
fn absurd_thread_counts_are_refused_and_change_nothing() {
    limit();
    let before = opforge::get_num_threads();
    let max = opforge::parallel::max_num_threads();
    assert!(max >= 1024);
    for n in [100_000, usize::MAX, max + 1] {
        let e = opforge::set_num_threads(n).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("set_num_threads({n}): at most {max} threads (opforge::parallel::max_num_threads: 1024, or the number of cores if more)")
        );
        assert_eq!(opforge::get_num_threads(), before);
    }
    // Parallel kernels still run with the count in place, and give the same
    // results as one thread.
    let x = arange(1 << 20);
    let sum = |t: &Tensor| ops::sum(t, None).unwrap().to_vec::<f32>().unwrap()[0];
    let (added, total) = (x.add(&x).unwrap(), sum(&x));
    assert_eq!(f32s(&added)[(1 << 20) - 1], 2.0 * ((1 << 20) - 1) as f32);
    opforge::set_num_threads(1).unwrap();
    assert_eq!(sum(&x), total);
    opforge::set_num_threads(before).unwrap();
}

// ---- Memory overlap -------------------------------------------------------------

/// `x[1:].add_(x[:-1])`: refused, and `x` is left as it was.
#[test]
fn in_place_ops_refuse_partially_overlapping_inputs() {
    limit();
    let x = arange(6);
    let mut dst = slice(&x, 1, None);
    assert_eq!(err(dst.add_(&slice(&x, 0, Some(-1)))), PARTIAL);
    assert_eq!(f32s(&x), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // With its own transpose (same elements, another order).
    let mut m = arange(4).view(&[2, 2]).unwrap();
    let mt = m.t().unwrap();
    assert_eq!(err(m.add_(&mt)), PARTIAL);
    // The same elements seen as another shape.
    let v = arange(6);
    let mut v23 = v.view(&[2, 3]).unwrap();
    let v32t = v.view(&[3, 2]).unwrap().t().unwrap();
    assert_eq!(err(v23.add_(&v32t)), PARTIAL);
}

/// `x[1:].copy_(x[:-1])`.
#[test]
fn copy_refuses_partially_overlapping_sources() {
    limit();
    let x = arange(6);
    let mut dst = slice(&x, 1, None);
    assert_eq!(err(dst.copy_(&slice(&x, 0, Some(-1)))), PARTIAL);
    assert_eq!(f32s(&x), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // Broadcasting a source that overlaps the destination.
    let mut whole = x.view(&[2, 3]).unwrap();
    assert_eq!(err(whole.copy_(&slice(&x, 0, Some(3)))), PARTIAL);
}

/// `out=` tensors that partly overlap an input, for pointwise, comparison and
/// unary kernels.
#[test]
fn out_arguments_refuse_partial_overlap() {
    limit();
    let x = arange(6);
    let mut out = ops::slice_Tensor(&x, 0, Some(1), Some(4), 1).unwrap();
    let (a, b) = (slice(&x, 0, Some(3)), slice(&x, 3, None));
    assert_eq!(err(ops::add_out(&a, &b, Scalar::Int(1), &mut out)), PARTIAL);
    let mut tail = slice(&x, 1, None);
    let head = slice(&x, 0, Some(-1));
    assert_eq!(
        err(ops::pow_Tensor_Scalar_out(&head, Scalar::Int(2), &mut tail)),
        PARTIAL
    );
    assert_eq!(
        err(ops::pow_Tensor_Tensor_out(&head, &tail.clone(), &mut tail)),
        PARTIAL
    );
    assert_eq!(err(ops::neg_out(&head, &mut tail)), PARTIAL);
    assert_eq!(
        err(ops::clamp_out(&head, Some(Scalar::Int(0)), None, &mut tail)),
        PARTIAL
    );
    let bools = torch::zeros(&[6])
        .unwrap()
        .to_dtype_copy(DType::Bool)
        .unwrap();
    let (bh, mut bt) = (slice(&bools, 0, Some(-1)), slice(&bools, 1, None));
    assert_eq!(err(ops::eq_Tensor_out(&bh, &bt.clone(), &mut bt)), PARTIAL);
    // A different view of the same elements as `out` (another shape).
    let mut as_matrix = x.view(&[2, 3]).unwrap();
    assert_eq!(
        err(ops::add_out(&x, &x, Scalar::Int(1), &mut as_matrix)),
        PARTIAL
    );
    assert_eq!(f32s(&x), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}

/// Writing into an expanded tensor: refused before anything else, also when
/// `out=` would be resized; filling one is fine.
#[test]
fn expanded_outputs_are_refused() {
    limit();
    let mut e = torch::zeros(&[1]).unwrap().expand(&[3]).unwrap();
    assert_eq!(err(e.add_(&torch::ones(&[3]).unwrap())), INTERNAL);
    assert_eq!(err(e.copy_(&torch::ones(&[3]).unwrap())), INTERNAL);
    assert_eq!(
        err(ops::add_out(
            &torch::ones(&[2]).unwrap(),
            &torch::ones(&[2]).unwrap(),
            Scalar::Int(1),
            &mut e
        )),
        INTERNAL
    );
    let mut m = torch::zeros(&[1]).unwrap().expand(&[2, 2]).unwrap();
    let ones = torch::ones(&[2, 2]).unwrap();
    assert_eq!(err(ops::mm_out(&ones, &ones, &mut m)), INTERNAL);
    let idx = torch::arange(Scalar::Int(2)).unwrap();
    let mut e2 = torch::zeros(&[1]).unwrap().expand(&[2]).unwrap();
    assert_eq!(
        err(ops::index_select_out(&arange(4), 0, &idx, &mut e2)),
        INTERNAL
    );
    e.fill_scalar_(Scalar::Float(2.0)).unwrap();
    assert_eq!(f32s(&e), vec![2.0; 3]);
}

/// `cat` and `stack` with `out=` among their inputs, and `index_select` into
/// its own input.
#[test]
fn cat_stack_and_index_select_refuse_aliasing_outputs() {
    limit();
    let (a, b) = (arange(4), arange(2));
    let mut out = a.clone();
    assert_eq!(
        err(ops::cat_out(&[a.clone(), b.clone()], 0, &mut out)),
        PARTIAL
    );
    let mut out = a.clone();
    assert_eq!(
        err(ops::stack_out(
            &[slice(&a, 0, Some(2)), b.clone()],
            0,
            &mut out
        )),
        PARTIAL
    );
    // Disjoint parts of one storage are fine.
    let x = arange(6);
    let mut dst = slice(&x, 2, None);
    ops::cat_out(&[slice(&x, 0, Some(2)), arange(2)], 0, &mut dst).unwrap();
    assert_eq!(f32s(&x), vec![0.0, 1.0, 0.0, 1.0, 0.0, 1.0]);
    let idx = torch::arange(Scalar::Int(2)).unwrap();
    let mut s = arange(4);
    assert_eq!(
        err(ops::index_select_out(&s.clone(), 0, &idx, &mut s)),
        PARTIAL
    );
    let mut i = idx.clone();
    let long = torch::arange(Scalar::Int(4)).unwrap();
    assert_eq!(err(ops::index_select_out(&long, 0, &idx, &mut i)), PARTIAL);
}

/// `mm(a, a, out=a)` used to panic (resizing `out` resized the input); the
/// product is now computed from the inputs before `out` is written.
#[test]
fn mm_into_its_own_input_gives_the_product() {
    limit();
    let a = arange(4).view(&[2, 2]).unwrap();
    let mut out = a.clone();
    ops::mm_out(&a, &a, &mut out).unwrap();
    assert_eq!(f32s(&a), vec![2.0, 3.0, 6.0, 11.0]);
    // `out` is the second operand.
    let (p, q) = (
        arange(4).view(&[2, 2]).unwrap(),
        torch::ones(&[2, 2]).unwrap(),
    );
    let mut out = q.clone();
    ops::mm_out(&p, &q, &mut out).unwrap();
    assert_eq!(f32s(&q), vec![1.0, 1.0, 5.0, 5.0]);
    // `out` must be resized: [2, 3] @ [3, 2] into the first operand.
    let r = arange(6).view(&[2, 3]).unwrap();
    let mut out = r.clone();
    ops::mm_out(&r, &torch::ones(&[3, 2]).unwrap(), &mut out).unwrap();
    assert_eq!(
        (r.shape(), f32s(&r)),
        (vec![2, 2], vec![3.0, 3.0, 12.0, 12.0])
    );
    // ... and into the second (this one panicked: "index (2, 0) out of bounds").
    let (r, ones) = (
        arange(6).view(&[2, 3]).unwrap(),
        torch::ones(&[3, 2]).unwrap(),
    );
    let mut out = ones.clone();
    ops::mm_out(&r, &ones, &mut out).unwrap();
    assert_eq!(
        (ones.shape(), f32s(&ones)),
        (vec![2, 2], vec![3.0, 3.0, 12.0, 12.0])
    );
    // `out` overlaps both operands in part.
    let w = arange(8).view(&[2, 4]).unwrap();
    let (l, rt) = (
        ops::slice_Tensor(&w, 1, Some(0), Some(2), 1).unwrap(),
        ops::slice_Tensor(&w, 1, Some(2), None, 1).unwrap(),
    );
    let mut out = l.clone();
    ops::mm_out(&l, &rt, &mut out).unwrap();
    assert_eq!(f32s(&w), vec![6.0, 7.0, 2.0, 3.0, 38.0, 47.0, 6.0, 7.0]);
    // matmul too (2-D and batched).
    let c = arange(4).view(&[2, 2]).unwrap();
    let mut out = c.clone();
    ops::matmul_out(&c, &c, &mut out).unwrap();
    assert_eq!(f32s(&c), vec![2.0, 3.0, 6.0, 11.0]);
    let d = arange(8).view(&[2, 2, 2]).unwrap();
    let mut out = d.clone();
    ops::matmul_out(&d, &d, &mut out).unwrap();
    assert_eq!(f32s(&d), vec![2.0, 3.0, 6.0, 11.0, 46.0, 55.0, 66.0, 79.0]);
}

/// What PyTorch allows: the same tensor (or the same view) as input and output,
/// disjoint parts of one storage, and layouts too hard to compare.
#[test]
fn full_overlap_and_disjoint_writes_are_allowed() {
    limit();
    let mut x = arange(6);
    let same = x.clone();
    x.add_(&same).unwrap();
    assert_eq!(f32s(&x), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    let mut out = x.clone();
    ops::add_out(&x, &x, Scalar::Int(1), &mut out).unwrap();
    assert_eq!(f32s(&x), vec![0.0, 4.0, 8.0, 12.0, 16.0, 20.0]);
    // Another handle on the same elements (an alias view).
    let alias = x.strided_view(&[6], &[1], 0).unwrap();
    x.add_(&alias).unwrap();
    assert_eq!(f32s(&x), vec![0.0, 8.0, 16.0, 24.0, 32.0, 40.0]);
    let mut out = alias.clone();
    ops::mul_out(&x, &x, &mut out).unwrap();
    x.copy_(&alias).unwrap();
    x.copy_(&x.clone()).unwrap();
    // Disjoint halves.
    let y = arange(6);
    slice(&y, 0, Some(3)).copy_(&slice(&y, 3, None)).unwrap();
    assert_eq!(f32s(&y), vec![3.0, 4.0, 5.0, 3.0, 4.0, 5.0]);
    // Interleaved strided views: not dense, too hard to tell, allowed.
    let z = arange(6);
    let mut even = z.strided_view(&[3], &[2], 0).unwrap();
    even.add_(&z.strided_view(&[3], &[2], 1).unwrap()).unwrap();
    assert_eq!(f32s(&z), vec![1.0, 1.0, 5.0, 3.0, 9.0, 5.0]);
    // An expanded source over the destination's own storage: too hard, allowed.
    let w = arange(6);
    let mut all = w.view(&[2, 3]).unwrap();
    all.copy_(&slice(&w, 3, None).expand(&[2, 3]).unwrap())
        .unwrap();
    assert_eq!(f32s(&w), vec![3.0, 4.0, 5.0, 3.0, 4.0, 5.0]);
    // Empty tensors overlap nothing.
    let mut empty = slice(&w, 2, Some(2));
    empty.add_(&slice(&w, 0, Some(0))).unwrap();
}

/// In-place writes and `out=` into an empty tensor with a stride-0 dimension
/// of size > 1 (`torch.zeros(0).expand(3, 0).add_(1)`): PyTorch writes
/// nothing and succeeds (a tensor of 0 elements is contiguous, so
/// `has_internal_overlap` finds no overlap); it was the internal-overlap
/// error. A non-empty expanded tensor is still refused.
#[test]
fn writes_into_empty_expanded_tensors_succeed() {
    limit();
    let e = || torch::zeros(&[0]).unwrap().expand(&[3, 0]).unwrap();
    let ones = torch::ones(&[3, 0]).unwrap();
    let mut t = e();
    t.add_(&ones).unwrap();
    t.mul_(&ones).unwrap();
    t.copy_(&ones).unwrap();
    t.fill_scalar_(Scalar::Float(1.0)).unwrap();
    t.zero_().unwrap();
    assert_eq!((t.shape(), t.strides()), (vec![3, 0], vec![0, 1]));
    ops::add_out(&ones, &ones, Scalar::Int(1), &mut e()).unwrap();
    let (a, b) = (
        torch::zeros(&[3, 2]).unwrap(),
        torch::zeros(&[2, 0]).unwrap(),
    );
    ops::mm_out(&a, &b, &mut e()).unwrap();
    // Every stride 0, and a transposed one.
    let base = torch::zeros(&[4]).unwrap();
    let mut z = base.strided_view(&[2, 0, 3], &[0, 0, 0], 0).unwrap();
    z.add_(&torch::ones(&[2, 0, 3]).unwrap()).unwrap();
    let mut tt = e().t().unwrap();
    tt.add_(&torch::ones(&[0, 3]).unwrap()).unwrap();
    assert_eq!(f32s(&base), vec![0.0; 4]);
    let mut one = torch::zeros(&[1]).unwrap().expand(&[3]).unwrap();
    assert_eq!(err(one.add_(&torch::ones(&[3]).unwrap())), INTERNAL);
}

/// Meta tensors have no memory: PyTorch checks no overlap for them.
#[test]
fn meta_tensors_are_not_checked_for_overlap() {
    limit();
    let x = ops::zeros(&[6], None, None, Some(Device::Meta), None).unwrap();
    let mut tail = slice(&x, 1, None);
    tail.add_(&slice(&x, 0, Some(-1))).unwrap();
    let mut e = x.expand(&[2, 6]).unwrap();
    e.add_(&x).unwrap();
    let mut out = x.clone();
    ops::cat_out(&[x.clone(), x.clone()], 0, &mut out).unwrap();
    assert_eq!(out.shape(), vec![12]);
}

/// Geometry arithmetic is checked: an overflowing extent is an error (in
/// debug and release builds alike: the arithmetic is explicit, never the
/// build's overflow checks), and no view ever reads outside its storage.
#[test]
fn overflowing_geometry_is_an_error_not_a_wrap() {
    let t = Tensor::from_vec(vec![1.0f32; 5], &[5]).unwrap();
    let e = t.strided_view(&[5], &[1 << 62], 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Storage size calculation overflowed with sizes=[5] and strides=[4611686018427387904]"
    );
    assert!(t.strided_view(&[2], &[1], usize::MAX).is_err());
    assert!(t.strided_view(&[usize::MAX, 3], &[0, 1], 0).is_err());
    assert!(t.strided_view(&[2, 2], &[1], 0).is_err());
    let e = t.strided_view(&[3], &[3], 0).unwrap_err().to_string();
    assert_eq!(e, "setStorage: sizes [3], strides [3], storage offset 0, and itemsize 4 requiring a storage size of 28 are out of bounds for storage of size 20");
    assert!(t.strided_view(&[3], &[2], 0).is_ok());
    assert!(t
        .strided_view(&[0, i64::MAX as usize], &[1 << 62, 1 << 62], 7)
        .is_ok());
    // Sizes are int64 in PyTorch, also on an empty tensor.
    assert!(t
        .strided_view(&[0, usize::MAX], &[1 << 62, 1 << 62], 7)
        .is_err());
    let mut g = t.geometry();
    g.strides = [1usize << 62].into_iter().collect();
    assert!(t.set_geometry(g).is_err());
    assert_eq!(t.strides(), vec![1]);
    assert!(t.resize_(&[usize::MAX, 2]).is_err());
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0; 5]);
}

/// Byte counts are int64 in PyTorch: what cannot be one is an error.
#[test]
fn byte_counts_must_fit_int64() {
    assert_eq!(
        opforge::tensor::alloc::storage_nbytes(&[2, 3], 4).unwrap(),
        24
    );
    assert_eq!(
        opforge::tensor::alloc::storage_nbytes(&[0, 1 << 62], 8).unwrap(),
        0
    );
    assert_eq!(opforge::tensor::alloc::storage_nbytes(&[], 8).unwrap(), 8);
    assert_eq!(
        opforge::tensor::alloc::storage_nbytes(&[1 << 60], 8)
            .unwrap_err()
            .to_string(),
        "Storage size calculation overflowed with sizes=[1152921504606846976]"
    );
    assert!(opforge::tensor::alloc::storage_nbytes(&[1 << 31, 1 << 31], 4).is_err());
    assert!(opforge::tensor::alloc::storage_nbytes(&[usize::MAX, 2], 1).is_err());
}

// ---- Losses ---------------------------------------------------------------------

/// `Class: message` of an error, as Python prints it (the class checked too).
fn py_err<T: std::fmt::Debug>(r: opforge::Result<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => format!("{}: {e}", e.python_class()),
    }
}

/// `nll_loss_forward` / `nll_loss` with a 2-D input and a 0-dim target
/// indexed the target's missing dimension (a panic, reachable from any saved
/// graph), and the other shape checks of `nll_loss`, `nll_loss_backward`,
/// `nll_loss_nd` and `cross_entropy` differed from PyTorch's in messages,
/// order and what they accept (a 1-D input with a 1-D target of one class;
/// `nll_loss2d`'s checks for inputs of 3 or more dimensions). Each expected
/// text is PyTorch 2.15's (`torch.ops.aten.*`, `F.cross_entropy`).
#[test]
fn nll_loss_and_cross_entropy_check_shapes_as_pytorch() {
    limit();
    let f = |v: &[f32], s: &[usize]| Tensor::from_vec(v.to_vec(), s).unwrap();
    let z = |s: &[usize]| Tensor::zeros(s, DType::Float32, Device::Cpu);
    let long = |v: &[i64], s: &[usize]| Tensor::from_vec(v.to_vec(), s).unwrap();
    let l0 = || long(&[1], &[]);
    let (x1, x2) = (f(&[-1.0, -2.0, -3.0], &[3]), z(&[2, 3]));
    let t2 = || long(&[1, 1], &[2]);
    let fw = |x: &Tensor, t: &Tensor, w: Option<&Tensor>, r: i64| {
        ops::nll_loss_forward(x, t, w, r, -100)
    };
    let dim0 = "IndexError: Dimension specified as 0 but tensor has no dimensions";
    let batch0 = "ValueError: Expected input batch_size (2) to match target batch_size (0).";
    // A 2-D input with a 0-dim target.
    assert_eq!(py_err(fw(&x2, &l0(), None, 1)), dim0);
    assert_eq!(py_err(ops::nll_loss(&x2, &l0(), None, 1, -100)), dim0);
    assert_eq!(py_err(ops::nll_loss_nd(&x2, &l0(), None, 1, -100)), batch0);
    for (reduction, smoothing) in [(1, 0.0), (0, 0.0), (1, 0.1)] {
        let r = ops::cross_entropy_loss(&x2, &l0(), None, reduction, -100, smoothing);
        assert_eq!(py_err(r), batch0);
    }
    // A 1-D input is one sample: of a 0-dim target, or a 1-D one of one class.
    let value = |r: opforge::Result<(Tensor, Tensor)>| {
        let (o, tw) = r.unwrap();
        (
            o.shape(),
            o.to_vec::<f32>().unwrap(),
            tw.to_vec::<f32>().unwrap(),
        )
    };
    assert_eq!(
        value(fw(&x1, &l0(), None, 1)),
        (vec![], vec![2.0], vec![1.0])
    );
    assert_eq!(
        value(fw(&x1, &l0(), None, 0)),
        (vec![], vec![2.0], vec![1.0])
    );
    assert_eq!(
        value(fw(&x1, &long(&[1], &[1]), None, 0)),
        (vec![], vec![2.0], vec![1.0])
    );
    let w3 = f(&[1.0, 2.0, 3.0], &[3]);
    assert_eq!(
        value(fw(&x1, &long(&[2], &[1]), Some(&w3), 1)),
        (vec![], vec![3.0], vec![3.0])
    );
    let x12 = f(&[-1.0, -2.0], &[2]);
    assert_eq!(
        value(fw(&x12, &long(&[1], &[1]), None, 1)),
        (vec![], vec![2.0], vec![1.0])
    );
    assert_eq!(
        py_err(fw(&x1, &long(&[1, 0, 2], &[3]), None, 1)),
        "ValueError: For 1D input, 1D target must have size 1, but got target size: 3"
    );
    assert_eq!(
        py_err(fw(&x1, &long(&[], &[0]), None, 1)),
        "ValueError: For 1D input, 1D target must have size 1, but got target size: 0"
    );
    // Any reduction but none and mean sums, as PyTorch's kernel reads it.
    let x2v = f(&[-1.0, -2.0, -3.0, -4.0, -5.0, -6.0], &[2, 3]);
    for r in [2, 7, -1] {
        assert_eq!(
            value(fw(&x2v, &t2(), None, r)),
            (vec![], vec![7.0], vec![2.0])
        );
    }
    // The forward's checks, in PyTorch's order.
    let cases: Vec<(opforge::Result<(Tensor, Tensor)>, &str)> = vec![
        (fw(&z(&[]), &f(&[1.0], &[]), None, 1), "RuntimeError: input tensor should be 1D or 2D"),
        (fw(&z(&[2, 3, 4]), &long(&[1, 1], &[2]).to_dtype_copy(DType::Int32).unwrap(), None, 1), "RuntimeError: input tensor should be 1D or 2D"),
        (fw(&x1, &f(&[1.0], &[1, 1]), None, 1), "RuntimeError: 0D or 1D target tensor expected, multi-target not supported"),
        (fw(&x1, &f(&[1.0, 0.0], &[2]), None, 1), "RuntimeError: expected target dtype to be Long or Byte, but got Float"),
        (fw(&x2, &f(&[1.0], &[]), None, 1), "RuntimeError: expected target dtype to be Long or Byte, but got Float"),
        (fw(&x2, &Tensor::from_vec(vec![true, false], &[2]).unwrap(), None, 1), "RuntimeError: expected target dtype to be Long or Byte, but got Bool"),
        (fw(&x1, &long(&[1, 1], &[2]), Some(&z(&[3]).to_dtype_copy(DType::Float64).unwrap()), 1), "ValueError: For 1D input, 1D target must have size 1, but got target size: 2"),
        (fw(&x2, &l0(), Some(&z(&[2])), 1), dim0),
        (fw(&x2, &long(&[1, 1, 1], &[3]), Some(&z(&[2])), 1), "RuntimeError: size mismatch (got input: [2, 3], target: [3])"),
        (fw(&x2, &t2(), Some(&z(&[2])), 1), "RuntimeError: weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: [2]"),
        (fw(&x2, &t2(), Some(&z(&[1, 3])), 1), "RuntimeError: weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: [1, 3]"),
        (fw(&z(&[2, 1]), &long(&[0, 0], &[2]), Some(&f(&[1.0], &[])), 1), "RuntimeError: weight tensor should be defined either for all 1 classes or no classes but got weight tensor of shape: []"),
        (fw(&x2.to_dtype_copy(DType::Int64).unwrap(), &t2(), Some(&z(&[2])), 1), "RuntimeError: weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: [2]"),
        (fw(&x2.to_dtype_copy(DType::Int64).unwrap(), &t2(), Some(&z(&[3])), 1), "NotImplementedError: \"nll_loss_out_frame\" not implemented for 'Long'"),
        (fw(&x2, &t2(), Some(&z(&[3]).to_dtype_copy(DType::Float64).unwrap()), 1), "RuntimeError: expected scalar type Float but found Double"),
        (fw(&x2, &t2(), Some(&z(&[3]).to_dtype_copy(DType::Int64).unwrap()), 1), "RuntimeError: expected scalar type Float but found Long"),
    ];
    for (i, (r, want)) in cases.into_iter().enumerate() {
        assert_eq!(py_err(r), want, "forward case {i}");
    }
    // The backward's: its own (older) rules and messages.
    let (g, tw) = (f(&[1.0], &[]), f(&[2.0], &[]));
    let bw = |g: &Tensor, x: &Tensor, t: &Tensor, w: Option<&Tensor>, r: i64, tw: &Tensor| {
        ops::nll_loss_backward(g, x, t, w, r, -100, tw)
    };
    let grad = bw(&g, &x1, &long(&[1, 0, 2], &[3]), None, 1, &tw).unwrap();
    assert_eq!(grad.to_vec::<f32>().unwrap(), [0.0, -0.5, 0.0]);
    let grad = bw(&g, &x2, &t2(), Some(&f(&[1.0; 3], &[1, 3])), 1, &tw).unwrap();
    assert_eq!(
        grad.to_vec::<f32>().unwrap(),
        [0.0, -0.5, 0.0, 0.0, -0.5, 0.0]
    );
    let grad = bw(&g, &x2, &t2(), None, 7, &tw).unwrap();
    assert_eq!(
        grad.to_vec::<f32>().unwrap(),
        [0.0, -1.0, 0.0, 0.0, -1.0, 0.0]
    );
    let f64s = |t: &Tensor| t.to_dtype_copy(DType::Float64).unwrap();
    let i32s = |t: &Tensor| t.to_dtype_copy(DType::Int32).unwrap();
    let i64s = |t: &Tensor| t.to_dtype_copy(DType::Int64).unwrap();
    let cases: Vec<(opforge::Result<Tensor>, &str)> = vec![
        (bw(&g, &x2, &l0(), None, 1, &tw), dim0),
        (bw(&g, &x2, &f(&[1.0], &[]), None, 1, &tw), dim0),
        (bw(&g, &x1, &long(&[1], &[1]), None, 1, &tw), "RuntimeError: size mismatch (got input: [3], target: [1])"),
        (bw(&g, &x2, &long(&[1, 1, 1], &[3]), None, 1, &z(&[0])), "RuntimeError: size mismatch (got input: [2, 3], target: [3])"),
        (bw(&g, &x2, &t2(), Some(&z(&[2])), 1, &z(&[0])), "RuntimeError: expected total_weight to be a  single element tensor, got: [0] (0 elements)"),
        (bw(&g, &x2, &t2(), Some(&z(&[2])), 1, &tw), "RuntimeError: weight tensor should be defined either for all or no classes"),
        (bw(&z(&[2]), &x2, &i32s(&t2()), None, 1, &tw), "RuntimeError: Expected a single element grad_output tensor, but got: [2]"),
        (bw(&z(&[1, 1]), &x2, &t2(), None, 1, &tw), "RuntimeError: Expected a single element grad_output tensor, but got: [1, 1]"),
        (bw(&z(&[2]), &x1, &l0(), None, 0, &tw), "RuntimeError: Expected a single element grad_output tensor, but got: [2]"),
        (bw(&z(&[3]), &x2, &t2(), None, 0, &tw), "RuntimeError: Expected a tensor of dimension 1 and tensor.size[0] == 2 but got: dimension 1 and tensor.size[0] = 3"),
        (bw(&z(&[2, 3]), &x2, &t2(), None, 0, &tw), "RuntimeError: Expected a tensor of dimension 1 and tensor.size[0] == 2 but got: dimension 2 and tensor.size[0] = 2"),
        (bw(&g, &x2, &t2(), None, 0, &tw), dim0),
        (bw(&g, &i64s(&x2), &i32s(&t2()), None, 1, &tw), "NotImplementedError: \"nll_loss_backward_out_frame\" not implemented for 'Long'"),
        (bw(&g, &x2, &i32s(&t2()), Some(&f64s(&z(&[3]))), 1, &tw), "RuntimeError: expected scalar type Long but found Int"),
        (bw(&g, &x2, &f(&[1.0, 1.0], &[2]), None, 1, &tw), "RuntimeError: expected scalar type Long but found Float"),
        (bw(&f64s(&g), &x2, &t2(), None, 1, &i64s(&tw)), "RuntimeError: expected scalar type Float but found Long"),
        (bw(&f64s(&g), &x2, &t2(), Some(&i32s(&z(&[3]))), 1, &tw), "RuntimeError: expected scalar type Float but found Int"),
        (bw(&f64s(&z(&[2])), &x2, &t2(), None, 0, &i64s(&tw)), "RuntimeError: expected scalar type Float but found Double"),
    ];
    for (i, (r, want)) in cases.into_iter().enumerate() {
        assert_eq!(py_err(r), want, "backward case {i}");
    }
    // `nll_loss_nd` and `nll_loss2d` for inputs of 3 or more dimensions.
    let nd = |x: &Tensor, t: &Tensor, w: Option<&Tensor>| ops::nll_loss_nd(x, t, w, 1, -100);
    let zl = |s: &[usize]| Tensor::zeros(s, DType::Int64, Device::Cpu);
    assert_eq!(
        nd(&z(&[2, 3, 4, 5]), &zl(&[2, 4, 5]), Some(&z(&[1, 3])))
            .unwrap()
            .shape(),
        Vec::<usize>::new()
    );
    assert_eq!(
        nd(&z(&[2, 3, 4]), &zl(&[2, 4]), Some(&z(&[1, 3])))
            .unwrap()
            .shape(),
        Vec::<usize>::new()
    );
    let none = ops::nll_loss_nd(&z(&[2, 3, 2, 2, 2]), &zl(&[2, 2, 2, 2]), None, 0, -100);
    assert_eq!(none.unwrap().shape(), vec![2, 2, 2, 2]);
    let cases: Vec<(opforge::Result<Tensor>, &str)> = vec![
        (nd(&z(&[]), &l0(), None), "ValueError: Expected 1 or more dimensions (got 0)"),
        (nd(&z(&[2, 3, 4, 5]), &l0(), None), batch0),
        (nd(&z(&[2, 3, 4, 5]), &zl(&[3, 4, 5]), None), "ValueError: Expected input batch_size (2) to match target batch_size (3)."),
        (nd(&z(&[2, 3, 4]), &zl(&[2]), None), "RuntimeError: Expected target size [2, 4], got [2]"),
        (nd(&z(&[2, 3, 4]), &zl(&[2, 4, 1]), None), "RuntimeError: Expected target size [2, 4], got [2, 4, 1]"),
        (nd(&z(&[0, 3, 4]), &l0(), None), "RuntimeError: ArrayRef: invalid slice, N = 1; size = 0"),
        (nd(&z(&[2, 3, 2, 2, 2]), &zl(&[2, 2, 2, 3]), None), "RuntimeError: Expected target size [2, 2, 2, 2], got [2, 2, 2, 3]"),
        (nd(&z(&[2, 3, 4, 5]), &zl(&[2, 4]), None), "RuntimeError: only batches of spatial targets supported (3D tensors) but got targets of dimension: 2"),
        (nd(&z(&[2, 3, 4, 5]), &i32s(&zl(&[2, 4])), None), "RuntimeError: only batches of spatial targets supported (3D tensors) but got targets of dimension: 2"),
        (nd(&z(&[2, 3, 4, 5]), &i32s(&zl(&[2, 4, 5])), Some(&z(&[2]))), "RuntimeError: expected target dtype to be Long or Byte, but got Int"),
        (nd(&z(&[2, 3, 4]), &z(&[2, 4]), None), "RuntimeError: expected target dtype to be Long or Byte, but got Float"),
        (nd(&z(&[2, 3, 4, 5]), &zl(&[2, 4, 5]), Some(&z(&[2]))), "RuntimeError: weight tensor should be defined either for all or no classes"),
        (nd(&i64s(&z(&[2, 3, 4])), &zl(&[2, 4]), Some(&z(&[2]))), "RuntimeError: weight tensor should be defined either for all or no classes"),
        (nd(&z(&[2, 3, 4, 5]), &zl(&[2, 4, 6]), Some(&f64s(&z(&[3])))), "RuntimeError: size mismatch (got input: [2, 3, 4, 5] , target: [2, 4, 6]"),
        (nd(&i64s(&z(&[2, 3, 4, 5])), &zl(&[2, 4, 5]), None), "NotImplementedError: \"nll_loss2d_forward_out_frame\" not implemented for 'Long'"),
        (nd(&z(&[2, 3, 4, 5]), &zl(&[2, 4, 5]), Some(&f64s(&z(&[3])))), "RuntimeError: expected scalar type Float but found Double"),
        (nd(&z(&[2, 3, 4, 5]), &long(&[5; 40], &[2, 4, 5]), None), "IndexError: Target 5 is out of bounds."),
    ];
    for (i, (r, want)) in cases.into_iter().enumerate() {
        assert_eq!(py_err(r), want, "nll_loss_nd case {i}");
    }
    // `cross_entropy`.
    let ce = |x: &Tensor, t: &Tensor, w: Option<&Tensor>, r: i64, ii: i64, ls: f64| {
        ops::cross_entropy_loss(x, t, w, r, ii, ls)
    };
    assert!(ce(&x2, &z(&[2, 3]), None, 1, -100, -0.5).is_ok());
    assert!(ce(&x2, &z(&[2, 3]), None, 1, -100, f64::NAN).is_ok());
    assert!(ce(&x2, &t2(), None, 1, -100, -0.5).is_ok());
    let cases: Vec<(opforge::Result<Tensor>, &str)> = vec![
        (ce(&x2, &z(&[2, 3]), None, 1, 0, 1.5), "RuntimeError: ignore_index is not supported for floating point target"),
        (ce(&x2, &zl(&[2, 3]), None, 1, 0, 0.0), "RuntimeError: Expected floating point type for target with class probabilities, got Long"),
        (ce(&z(&[]), &f(&[1.0], &[]), Some(&z(&[1])), 1, -100, 0.0), "IndexError: Dimension specified as 1 but tensor has no dimensions"),
        (ce(&z(&[]), &l0(), None, 1, -100, 0.0), "RuntimeError: Expected floating point type for target with class probabilities, got Long"),
        (ce(&x2, &z(&[2, 3]), Some(&z(&[2])), 1, -100, 1.5), "RuntimeError: cross_entropy: weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: [2]"),
        (ce(&x2, &z(&[2, 3]), Some(&z(&[1, 3])), 1, -100, 0.0), "RuntimeError: cross_entropy: weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: [1, 3]"),
        (ce(&x2, &z(&[2, 3]), None, 1, -100, 1.5), "RuntimeError: label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
        (ce(&x2, &t2(), None, 1, -100, 1.5), "RuntimeError: label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
        (ce(&x2, &z(&[2, 3]), Some(&z(&[3])), 7, -100, 0.0), "RuntimeError: Invalid reduction type encountered in cross_entropy: 7"),
        (ce(&x2, &t2(), None, 7, -100, 0.1), "RuntimeError: Invalid reduction type encountered in cross_entropy: 7"),
        (ce(&z(&[3]), &long(&[1], &[1]), None, 1, -100, 0.1), "RuntimeError: output with shape [] doesn't match the broadcast shape [1]"),
        (ce(&z(&[3]), &long(&[1, 1], &[2]), None, 1, -100, 0.1), "ValueError: For 1D input, 1D target must have size 1, but got target size: 2"),
        (ce(&x2, &t2(), Some(&z(&[2])), 1, -100, 0.1), "RuntimeError: weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: [2]"),
        (ce(&z(&[2, 3, 4, 5]), &zl(&[2, 4, 5]), Some(&z(&[2])), 1, -100, 0.0), "RuntimeError: weight tensor should be defined either for all or no classes"),
        (ce(&x2, &f(&[1.0], &[]), None, 1, -100, 0.0), batch0),
        (ce(&z(&[3]), &f(&[1.0], &[]), None, 1, -100, 0.0), "RuntimeError: expected target dtype to be Long or Byte, but got Float"),
    ];
    for (i, (r, want)) in cases.into_iter().enumerate() {
        assert_eq!(py_err(r), want, "cross_entropy case {i}");
    }
    assert_eq!(
        ce(&x1, &l0(), None, 1, -100, 0.0).unwrap().shape(),
        Vec::<usize>::new()
    );
}
