//! Kernel behaviour the numeric corpus does not record: the `out=` and in-place
//! variants of every family, `clamp.Tensor`, `prod.dim_int`, the meta kernels,
//! and views of non-contiguous tensors. Expected values follow PyTorch 2.15.

use opforge::kernels::{composite, cpu, meta};
use opforge::{DType, Device, MemoryFormat, Scalar, Tensor};

fn f32s(data: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}

fn i64s(data: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn err(r: opforge::Result<Tensor>) -> String {
    r.unwrap_err().to_string()
}

fn empty(dtype: DType) -> Tensor {
    Tensor::zeros(&[0], dtype, Device::Cpu)
}

#[test]
fn unary_float_family_out_and_inplace() {
    let x = f32s(&[0.5, -1.25, 2.0], &[3]);
    let mut out = Tensor::zeros(&[2, 2], DType::Float64, Device::Cpu);
    let r = cpu::sin_out(&x, &mut out).unwrap();
    assert!(r.is_same(&out));
    assert_eq!(out.shape(), vec![3]);
    // Computed in float32, then widened.
    let want: Vec<f64> = [0.5f32, -1.25, 2.0]
        .iter()
        .map(|v| v.sin() as f64)
        .collect();
    assert_eq!(vals(&out), want);

    let mut ints = i64s(&[1, 2], &[2]);
    assert_eq!(
        err(cpu::cos_(&mut ints)),
        "result type Float can't be cast to the desired output type Long"
    );
    let mut f = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
    cpu::tanh_out(&ints, &mut f).unwrap();
    assert_eq!(vals(&f), vec![(1f32).tanh() as f64, (2f32).tanh() as f64]);

    let mut s = Tensor::from_vec(vec![0.0f64, 40.0], &[2]).unwrap();
    let r = cpu::sigmoid_(&mut s).unwrap();
    assert!(r.is_same(&s));
    assert_eq!(vals(&s), vec![0.5, 1.0 / (1.0 + (-40f64).exp())]);

    let mut long_out = Tensor::zeros(&[3], DType::Int64, Device::Cpu);
    assert_eq!(
        err(cpu::neg_out(&x, &mut long_out)),
        "Found dtype Long but expected Float"
    );
    let mut same = Tensor::zeros(&[1], DType::Float32, Device::Cpu);
    cpu::abs_out(&x, &mut same).unwrap();
    assert_eq!(vals(&same), vec![0.5, 1.25, 2.0]);
    let mut e = empty(DType::Float32);
    cpu::sqrt_out(&f32s(&[4.0, -1.0], &[2]), &mut e).unwrap();
    assert_eq!(vals(&e)[0], 2.0);
    assert!(vals(&e)[1].is_nan());
}

#[test]
fn clamp_tensor_bounds() {
    let x = f32s(&[-2.0, 0.5, 3.0, f32::NAN], &[4]);
    let lo = f32s(&[-1.0], &[1]);
    let hi = f32s(&[1.0, 1.0, 2.0, 2.0], &[4]);
    let r = cpu::clamp_Tensor(&x, Some(&lo), Some(&hi)).unwrap();
    let v = vals(&r);
    assert_eq!(&v[..3], &[-1.0, 0.5, 2.0]);
    assert!(v[3].is_nan());
    // A NaN bound gives NaN.
    let nan_lo = f32s(&[f32::NAN, 0.0, 0.0, 0.0], &[4]);
    let r = cpu::clamp_Tensor(&x, Some(&nan_lo), Some(&hi)).unwrap();
    assert!(vals(&r)[0].is_nan());
    // Only min: maximum (NaN-propagating); only max: minimum.
    let r = cpu::clamp_Tensor(&x, Some(&nan_lo), None).unwrap();
    assert!(vals(&r)[0].is_nan() && vals(&r)[1] == 0.5);
    let r = cpu::clamp_Tensor(&x, None, Some(&hi)).unwrap();
    assert_eq!(&vals(&r)[..3], &[-2.0, 0.5, 2.0]);
    // Promotion: int64 self with float bounds gives float32.
    let xi = i64s(&[-3, 0, 3], &[3]);
    let r = cpu::clamp_Tensor(&xi, Some(&f32s(&[-0.5], &[])), None).unwrap();
    assert_eq!(r.dtype(), DType::Float32);
    assert_eq!(vals(&r), vec![-0.5, 0.0, 3.0]);
    assert_eq!(
        err(cpu::clamp_Tensor(&x, None, None)),
        "torch.clamp: At least one of 'min' or 'max' must not be None"
    );
    let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    assert_eq!(
        err(cpu::clamp_Tensor(&b, Some(&b), Some(&b))),
        "\"clamp_cpu\" not implemented for 'Bool'"
    );
    assert!(cpu::clamp_Tensor(&b, Some(&b), None).is_ok());
}

#[test]
fn clamp_scalar_inplace_and_out() {
    let mut x = i64s(&[-3, 0, 3], &[3]);
    assert_eq!(
        err(cpu::clamp_(&mut x, Some(Scalar::Float(0.5)), None)),
        "result type Float can't be cast to the desired output type long int"
    );
    let r = cpu::clamp_(&mut x, Some(Scalar::Int(-1)), Some(Scalar::Int(1))).unwrap();
    assert!(r.is_same(&x));
    assert_eq!(vals(&x), vec![-1.0, 0.0, 1.0]);
    let mut out = Tensor::zeros(&[3], DType::Float32, Device::Cpu);
    let xi = i64s(&[-3, 0, 3], &[3]);
    cpu::clamp_out(&xi, Some(Scalar::Float(0.5)), None, &mut out).unwrap();
    assert_eq!(vals(&out), vec![0.5, 0.5, 3.0]);
    let mut wrong = Tensor::zeros(&[3], DType::Int64, Device::Cpu);
    assert_eq!(
        err(cpu::clamp_out(
            &xi,
            Some(Scalar::Float(0.5)),
            None,
            &mut wrong
        )),
        "Found dtype Long but expected Float"
    );
    let small = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    assert_eq!(
        err(cpu::clamp(&small, Some(Scalar::Int(1 << 40)), None)),
        "value cannot be converted to type int without overflow"
    );
}

#[test]
fn prod_and_sum_variants() {
    let x = Tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let r = cpu::prod_dim_int(&x, 1, false, None).unwrap();
    assert_eq!((r.dtype(), r.shape()), (DType::Int64, vec![2]));
    assert_eq!(vals(&r), vec![6.0, 120.0]);
    let r = cpu::prod_dim_int(&x, -2, true, Some(DType::Float64)).unwrap();
    assert_eq!((r.dtype(), r.shape()), (DType::Float64, vec![1, 3]));
    assert_eq!(vals(&r), vec![4.0, 10.0, 18.0]);
    assert!(cpu::prod_dim_int(&x, 2, false, None).is_err());

    // sum.IntList_out: the out dtype decides when no dtype is given.
    let mut out = Tensor::zeros(&[7], DType::Int32, Device::Cpu);
    cpu::sum_IntList_out(&x, Some(&[0]), false, None, &mut out).unwrap();
    assert_eq!((out.dtype(), out.shape()), (DType::Int32, vec![3]));
    assert_eq!(vals(&out), vec![5.0, 7.0, 9.0]);
    assert_eq!(
        err(cpu::sum_IntList_out(
            &x,
            None,
            false,
            Some(DType::Int64),
            &mut out
        )),
        "Expected out tensor to have dtype long int, but got int instead"
    );
    let s = composite::sum(&x, None).unwrap();
    assert_eq!(
        (s.dtype(), s.shape(), vals(&s)),
        (DType::Int64, vec![], vec![21.0])
    );
}

#[test]
fn mean_and_argmax_out() {
    let x = f32s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let mut out = Tensor::zeros(&[5], DType::Float64, Device::Cpu);
    let r = cpu::mean_out(&x, Some(&[1]), true, None, &mut out).unwrap();
    assert!(r.is_same(&out));
    assert_eq!((out.shape(), vals(&out)), (vec![2, 1], vec![1.5, 3.5]));
    let mut iout = Tensor::zeros(&[2], DType::Int64, Device::Cpu);
    assert_eq!(
        err(cpu::mean_out(&x, Some(&[1]), false, None, &mut iout)),
        "result type Float can't be cast to the desired output type Long"
    );
    let mut idx = Tensor::zeros(&[], DType::Int64, Device::Cpu);
    cpu::argmax_out(&x, Some(0), false, &mut idx).unwrap();
    assert_eq!((idx.shape(), vals(&idx)), (vec![2], vec![1.0, 1.0]));
    let mut fidx = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
    assert_eq!(
        err(cpu::argmax_out(&x, None, false, &mut fidx)),
        "Expected out tensor to have dtype long int, but got float instead"
    );
}

#[test]
fn out_variants_of_shape_ops() {
    let a = f32s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let b = i64s(&[5, 6], &[1, 2]);
    let mut out = Tensor::zeros(&[1], DType::Float64, Device::Cpu);
    cpu::cat_out(&[a.clone(), b.clone()], 0, &mut out).unwrap();
    assert_eq!(
        (out.shape(), vals(&out)),
        (vec![3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    );
    let mut iout = empty(DType::Int64);
    assert_eq!(
        err(cpu::cat_out(&[a.clone(), b.clone()], 0, &mut iout)),
        "torch.cat(): input types can't be cast to the desired output type Long"
    );
    assert_eq!(
        err(cpu::cat(&[a.clone(), f32s(&[1.0; 3], &[1, 3])], 0)),
        "Sizes of tensors must match except in dimension 0. Expected size 2 but got size 3 for tensor number 1 in the list."
    );

    let mut sout = empty(DType::Float32);
    composite::stack_out(&[a.clone(), a.clone()], 1, &mut sout).unwrap();
    assert_eq!(sout.shape(), vec![2, 2, 2]);
    assert_eq!(vals(&sout), vec![1.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 4.0]);

    let mut xout = empty(DType::Float32);
    let idx = i64s(&[1, 1, 0], &[3]);
    cpu::index_select_out(&a, 1, &idx, &mut xout).unwrap();
    assert_eq!(vals(&xout), vec![2.0, 2.0, 1.0, 4.0, 4.0, 3.0]);
    let mut wrong = empty(DType::Float64);
    assert_eq!(
        err(cpu::index_select_out(&a, 1, &idx, &mut wrong)),
        "index_select(): self and result must have the same scalar type"
    );

    let mut mout = Tensor::zeros(&[9], DType::Float32, Device::Cpu);
    cpu::mm_out(&a, &a, &mut mout).unwrap();
    assert_eq!(
        (mout.shape(), vals(&mout)),
        (vec![2, 2], vec![7.0, 10.0, 15.0, 22.0])
    );
    let mut dout = empty(DType::Float64);
    assert_eq!(
        err(cpu::mm_out(&a, &a, &mut dout)),
        "Expected out tensor to have dtype float, but got double instead"
    );

    let v = f32s(&[1.0, 1.0], &[2]);
    let mut mmout = empty(DType::Float32);
    composite::matmul_out(&a, &v, &mut mmout).unwrap();
    assert_eq!((mmout.shape(), vals(&mmout)), (vec![2], vec![3.0, 7.0]));
    assert_eq!(
        err(composite::matmul_out(&a, &v, &mut dout)),
        "Expected out tensor to have dtype float, but got double instead"
    );
}

#[test]
fn arange_out_variants() {
    // Same element count: the out shape is kept.
    let mut out = Tensor::zeros(&[2, 2], DType::Float32, Device::Cpu);
    cpu::arange_start_out(Scalar::Int(0), Scalar::Int(4), Scalar::Int(1), &mut out).unwrap();
    assert_eq!(
        (out.shape(), vals(&out)),
        (vec![2, 2], vec![0.0, 1.0, 2.0, 3.0])
    );
    let mut out = Tensor::zeros(&[7], DType::Int32, Device::Cpu);
    composite::arange_out(Scalar::Float(2.5), &mut out).unwrap();
    assert_eq!((out.shape(), vals(&out)), (vec![3], vec![0.0, 1.0, 2.0]));
    let mut b = empty(DType::Bool);
    assert_eq!(
        err(composite::arange_out(Scalar::Int(3), &mut b)),
        "\"arange_cpu\" not implemented for 'Bool'"
    );
    let r = composite::arange(Scalar::Int(3), None, None, None, None).unwrap();
    assert_eq!((r.dtype(), vals(&r)), (DType::Int64, vec![0.0, 1.0, 2.0]));
    let r = composite::arange_start(Scalar::Float(1.0), Scalar::Int(3), None, None, None, None)
        .unwrap();
    assert_eq!((r.dtype(), vals(&r)), (DType::Float32, vec![1.0, 2.0]));
    assert_eq!(
        err(composite::arange_start_step(
            Scalar::Int(0),
            Scalar::Float(f64::INFINITY),
            Scalar::Int(1),
            Some(DType::Int64),
            None,
            None,
            None
        )),
        "value cannot be converted to type int64_t without overflow"
    );
}

#[test]
fn meta_kernels_compute_shapes_only() {
    let m = |shape: &[usize], d: DType| Tensor::zeros(shape, d, Device::Meta);
    let r = meta::add_Tensor(
        &m(&[2, 1], DType::Int32),
        &m(&[3], DType::Float32),
        Scalar::Int(1),
    )
    .unwrap();
    assert_eq!(
        (r.device(), r.shape(), r.dtype()),
        (Device::Meta, vec![2, 3], DType::Float32)
    );
    assert_eq!(
        err(meta::mm(
            &m(&[2, 3], DType::Float32),
            &m(&[2, 3], DType::Float32)
        )),
        "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"
    );
    let r = meta::arange_start_step(
        Scalar::Int(0),
        Scalar::Int(10),
        Scalar::Int(3),
        None,
        None,
        None,
        None,
    )
    .unwrap();
    assert_eq!(
        (r.device(), r.shape(), r.dtype()),
        (Device::Meta, vec![4], DType::Int64)
    );
    let r = meta::empty_memory_format(
        &[2, 3, 4, 5],
        None,
        None,
        None,
        None,
        Some(MemoryFormat::ChannelsLast),
    )
    .unwrap();
    assert_eq!(
        (r.device(), r.strides()),
        (Device::Meta, vec![60, 1, 15, 3])
    );
    let r = meta::ones(&[2], Some(DType::Int32), None, None, None).unwrap();
    assert_eq!((r.device(), r.dtype()), (Device::Meta, DType::Int32));
    let mut x = m(&[2, 3], DType::Float32);
    let r = meta::sin_(&mut x).unwrap();
    assert!(r.is_same(&x));
    let mut out = m(&[0], DType::Float32);
    meta::cat_out(
        &[m(&[2, 3], DType::Float32), m(&[1, 3], DType::Float32)],
        0,
        &mut out,
    )
    .unwrap();
    assert_eq!(out.shape(), vec![3, 3]);
    let r = meta::stack(&[m(&[2], DType::Int64), m(&[2], DType::Int64)], 1).unwrap();
    assert_eq!((r.device(), r.shape()), (Device::Meta, vec![2, 2]));
    let (v, i) = meta::max_dim(&m(&[4, 5], DType::Float64), 1, true).unwrap();
    assert_eq!(
        (v.shape(), v.dtype(), i.dtype()),
        (vec![4, 1], DType::Float64, DType::Int64)
    );
    let r = composite::matmul(
        &m(&[2, 1, 3, 4], DType::Float32),
        &m(&[5, 4, 2], DType::Float32),
    )
    .unwrap();
    assert_eq!((r.device(), r.shape()), (Device::Meta, vec![2, 5, 3, 2]));
    let r = composite::zeros(&[3], None, None, Some(Device::Meta), None).unwrap();
    assert_eq!(r.device(), Device::Meta);
    // PyTorch's meta kernel of an in-place binary operator is its Python
    // one (`torch/_refs`), in its words.
    assert_eq!(
        err(meta::add__Tensor(
            &mut m(&[3], DType::Float32),
            &m(&[2, 3], DType::Float32),
            Scalar::Int(1)
        )),
        "output with shape torch.Size([3]) doesn't match the broadcast shape (2, 3)"
    );
    assert_eq!(
        err(meta::mul__Tensor(
            &mut m(&[3, 1], DType::Float32),
            &m(&[2, 8], DType::Float32)
        )),
        "Attempting to broadcast a dimension of length 2 at -2! Mismatching argument at index 1 had torch.Size([2, 8]); but expected shape should be broadcastable to [3, 8]"
    );
}

#[test]
fn views_of_non_contiguous_tensors() {
    let base = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let t = composite::t(&base).unwrap();
    assert_eq!(
        err(cpu::view(&t, &[6])),
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
    );
    // reshape copies when it must, and views when it can.
    let r = composite::reshape(&t, &[6]).unwrap();
    assert!(!r.shares_storage(&base));
    assert_eq!(vals(&r), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let r = composite::reshape(&t, &[3, 1, 2]).unwrap();
    assert!(r.shares_storage(&base));
    assert_eq!(r.strides(), vec![1, 6, 3]);
    // contiguous copies; clone and to.dtype preserve a dense permutation.
    let c = composite::contiguous(&t, MemoryFormat::Contiguous).unwrap();
    assert_eq!((c.strides(), c.shares_storage(&base)), (vec![2, 1], false));
    let c = composite::clone(&t, None).unwrap();
    assert_eq!(c.strides(), vec![1, 3]);
    let d = composite::to_dtype(&t, DType::Float64, false, false, None).unwrap();
    assert_eq!((d.strides(), vals(&d)), (vec![1, 3], vals(&t)));
    // A non-dense view gets dense strides in the same order.
    let e = composite::expand(&f32s(&[1.0, 2.0], &[2, 1]), &[2, 3], false).unwrap();
    let c = composite::clone(&e, None).unwrap();
    assert_eq!((c.strides(), vals(&c)), (vec![3, 1], vals(&e)));
    // to() with the same dtype and a matching format returns self, even when
    // not contiguous.
    let s = composite::to_dtype(
        &t,
        DType::Float32,
        false,
        false,
        Some(MemoryFormat::Contiguous),
    )
    .unwrap();
    assert!(s.is_same(&t));
    assert_eq!(
        err(composite::expand(&base, &[3], false)),
        "expand(torch.FloatTensor{[2, 3]}, size=[3]): the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)"
    );
}

/// `copy_` between storages of one dtype (read in place, a row at a time)
/// over layouts: transposed and stepped destinations, expanded, stepped and
/// lower-rank sources, a 0-dim pair; the logical values are the source's
/// broadcast to the destination, whatever the layouts.
#[test]
fn copies_between_layouts() {
    let src = f32s(&(0..24).map(|x| x as f32).collect::<Vec<_>>(), &[2, 3, 4]);
    let t = |x: &Tensor| composite::transpose_int(x, -1, -2).unwrap();
    let sources = [
        src.clone(),
        t(&f32s(
            &(0..24).map(|x| x as f32).collect::<Vec<_>>(),
            &[2, 4, 3],
        )),
        composite::slice_Tensor(
            &f32s(&(0..48).map(|x| x as f32).collect::<Vec<_>>(), &[2, 3, 8]),
            2,
            Some(1),
            None,
            2,
        )
        .unwrap(),
        composite::expand(&f32s(&[1.0, 2.0, 3.0, 4.0], &[4]), &[2, 3, 4], false).unwrap(),
        composite::expand(&f32s(&[5.0, 6.0, 7.0], &[3, 1]), &[2, 3, 4], false).unwrap(),
        f32s(&[1.0, 2.0, 3.0, 4.0], &[4]),
        f32s(&[9.5], &[]),
    ];
    for (i, s) in sources.iter().enumerate() {
        let want = vals(&composite::expand(s, &[2, 3, 4], false).unwrap());
        for dst in [
            f32s(&[0.0; 24], &[2, 3, 4]),
            t(&f32s(&[0.0; 24], &[2, 4, 3])),
            composite::slice_Tensor(&f32s(&[0.0; 48], &[2, 3, 8]), 2, Some(0), None, 2).unwrap(),
        ] {
            let mut d = dst.clone();
            composite::copy_(&mut d, s, false).unwrap();
            assert_eq!(vals(&dst), want, "source {i}");
        }
    }
    let mut z = f32s(&[0.0], &[]);
    composite::copy_(&mut z, &f32s(&[4.0], &[]), false).unwrap();
    assert_eq!(vals(&z), vec![4.0]);
}

#[test]
fn writes_through_views() {
    let base = f32s(&[0.0; 6], &[2, 3]);
    let mut col = composite::select_int(&base, 1, 1).unwrap();
    composite::copy_(&mut col, &i64s(&[7, 8], &[2]), false).unwrap();
    assert_eq!(vals(&base), vec![0.0, 7.0, 0.0, 0.0, 8.0, 0.0]);
    // fill_ of an expanded view is fine (idempotent).
    let one = f32s(&[0.0], &[1]);
    let mut e = composite::expand(&one, &[4], false).unwrap();
    cpu::fill__Scalar(&mut e, Scalar::Float(2.5)).unwrap();
    assert_eq!(vals(&one), vec![2.5]);
    // add_ into a strided view.
    let mut row = composite::slice_Tensor(&base, 1, Some(0), None, 2).unwrap();
    cpu::add__Tensor(&mut row, &f32s(&[1.0], &[]), Scalar::Int(2)).unwrap();
    assert_eq!(vals(&base), vec![2.0, 7.0, 2.0, 2.0, 8.0, 2.0]);
    // Writing into an expanded view is refused.
    let mut e = composite::expand(&one, &[4], false).unwrap();
    assert!(cpu::add__Tensor(&mut e, &one, Scalar::Int(1)).is_err());
}

#[test]
fn pointwise_edge_rules() {
    let b = i64s(&[2, -2, 3], &[3]);
    let e = i64s(&[-1, -1, 2], &[3]);
    assert_eq!(
        vals(&cpu::pow_Tensor_Tensor(&b, &e).unwrap()),
        vec![0.0, 0.0, 9.0]
    );
    let small = Tensor::from_vec(vec![2i32], &[1]).unwrap();
    assert_eq!(
        err(cpu::pow_Tensor_Scalar(&small, Scalar::Int(1 << 40))),
        "value cannot be converted to type int without overflow"
    );
    let mut out = empty(DType::Int32);
    assert_eq!(
        err(cpu::pow_Tensor_Scalar_out(
            &small,
            Scalar::Float(0.5),
            &mut out
        )),
        "Found dtype Int but expected Float"
    );
    // Trunc division of ints into a float out; a zero divisor errors.
    let mut fout = empty(DType::Float32);
    cpu::div_out_mode(
        &i64s(&[7, -7], &[2]),
        &i64s(&[2], &[1]),
        Some("trunc"),
        &mut fout,
    )
    .unwrap();
    assert_eq!(vals(&fout), vec![3.0, -3.0]);
    // Comparisons into a float out.
    let mut cout = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
    cpu::lt_Scalar_out(&i64s(&[1, 3], &[2]), Scalar::Float(2.5), &mut cout).unwrap();
    assert_eq!(vals(&cout), vec![1.0, 0.0]);
    // where with all 0-dim.
    let c = Tensor::from_vec(vec![false], &[]).unwrap();
    let r = cpu::where_self(&c, &i64s(&[1], &[]), &f32s(&[0.5], &[])).unwrap();
    assert_eq!((r.dtype(), vals(&r)), (DType::Float32, vec![0.5]));
    // alpha=bool needs a bool result.
    assert_eq!(
        err(cpu::add_Tensor(&b, &b, Scalar::Bool(true))),
        "Boolean alpha only supported for Boolean results."
    );
    // Integer overflow wraps.
    let big = i64s(&[i64::MAX], &[1]);
    assert_eq!(
        cpu::add_Tensor(&big, &i64s(&[1], &[1]), Scalar::Int(1))
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![i64::MIN]
    );
}

/// `matmul` against a naive reference over every path (dot, mv, mm, folded,
/// batched with broadcasting, 1-D operands on either side).
#[test]
fn matmul_paths_agree_with_reference() {
    fn reference(a: &[f64], sa: &[usize], b: &[f64], sb: &[usize]) -> (Vec<usize>, Vec<f64>) {
        // Promote 1-D operands, broadcast batches, multiply, drop the added dims.
        let (mut sa2, mut sb2) = (sa.to_vec(), sb.to_vec());
        if sa.len() == 1 {
            sa2.insert(0, 1);
        }
        if sb.len() == 1 {
            sb2.push(1);
        }
        let (n, k, p) = (sa2[sa2.len() - 2], sa2[sa2.len() - 1], sb2[sb2.len() - 1]);
        let (ba, bb) = (&sa2[..sa2.len() - 2], &sb2[..sb2.len() - 2]);
        let nb = ba.len().max(bb.len());
        let pad = |b: &[usize]| -> Vec<usize> {
            let mut v = vec![1; nb - b.len()];
            v.extend_from_slice(b);
            v
        };
        let (pa, pb) = (pad(ba), pad(bb));
        let batch: Vec<usize> = pa
            .iter()
            .zip(&pb)
            .map(|(&x, &y)| if x == 1 { y } else { x })
            .collect();
        let total: usize = batch.iter().product();
        let offset = |idx: &[usize], dims: &[usize]| -> usize {
            idx.iter()
                .zip(dims)
                .fold(0, |acc, (&i, &d)| acc * d + if d == 1 { 0 } else { i })
        };
        let mut out = Vec::new();
        for bi in 0..total {
            let mut idx = vec![0; nb];
            let mut r = bi;
            for d in (0..nb).rev() {
                idx[d] = r % batch[d];
                r /= batch[d];
            }
            let (oa, ob) = (offset(&idx, &pa) * n * k, offset(&idx, &pb) * k * p);
            for i in 0..n {
                for j in 0..p {
                    out.push((0..k).map(|l| a[oa + i * k + l] * b[ob + l * p + j]).sum());
                }
            }
        }
        let mut shape = batch;
        if sa.len() > 1 {
            shape.push(n);
        }
        if sb.len() > 1 {
            shape.push(p);
        }
        (shape, out)
    }
    let shapes: &[(&[usize], &[usize])] = &[
        (&[3], &[3]),
        (&[2, 3], &[3]),
        (&[3], &[3, 2]),
        (&[2, 3], &[3, 4]),
        (&[2, 2, 3], &[3, 4]),
        (&[2, 2, 3], &[3]),
        (&[3], &[2, 3, 2]),
        (&[2, 3], &[4, 3, 2]),
        (&[2, 1, 2, 3], &[5, 3, 2]),
        (&[1, 2, 3], &[4, 3, 1]),
        (&[0, 2, 3], &[3, 2]),
        (&[2, 0, 3], &[2, 3, 2]),
    ];
    for (sa, sb) in shapes {
        let na: usize = sa.iter().product();
        let nb: usize = sb.iter().product();
        let a: Vec<f64> = (0..na).map(|i| ((i * 7 % 11) as f64 - 5.0) / 8.0).collect();
        let b: Vec<f64> = (0..nb).map(|i| ((i * 5 % 13) as f64 - 6.0) / 4.0).collect();
        let ta = Tensor::from_vec(a.clone(), sa).unwrap();
        let tb = Tensor::from_vec(b.clone(), sb).unwrap();
        let r = composite::matmul(&ta, &tb).unwrap();
        let (shape, want) = reference(&a, sa, &b, sb);
        assert_eq!(r.shape(), shape, "{sa:?} @ {sb:?}");
        assert_eq!(vals(&r), want, "{sa:?} @ {sb:?}");
    }
    let e = composite::matmul(&f32s(&[1.0; 6], &[2, 3]), &f32s(&[1.0; 8], &[2, 2, 2]));
    assert_eq!(
        err(e),
        "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 2]."
    );
    assert_eq!(
        err(composite::matmul(
            &f32s(&[1.0; 6], &[2, 3]),
            &f32s(&[1.0; 2], &[2])
        )),
        "size mismatch, got input (2), mat (2x3), vec (2)"
    );
}
