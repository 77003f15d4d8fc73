//! PyTorch's Core ATen opset: the overloads PyTorch 2.15's
//! `native_functions.yaml` tags `core`, the operators every other one
//! decomposes into (`torch/_decomp`, `torch.export`'s core IR). Each one that
//! is not in [`MISSING`] is an operator here that runs on CPU tensors and on
//! meta tensors (a backend kernel or a composite one), under PyTorch's schema.
//! [`MISSING`] only shrinks: an operator added here fails the test until it
//! leaves the list, so the list is always the opset's remainder.

use opforge::dispatch::dispatcher;
use opforge::{DType, Device, Tensor};
use opforge_schema::load;

/// The `core` overloads without a kernel here (`name.overload`, PyTorch's
/// spelling; `name` alone for the default overload), in the file's order.
const MISSING: &[&str] = &[
    "native_dropout",
    "avg_pool1d",
    "adaptive_avg_pool1d",
    "constant_pad_nd",
    "convolution",
    "convolution_backward",
    "embedding",
    "embedding_dense_backward",
    "_embedding_bag",
    "resize_",
    "grid_sampler_2d",
    "native_group_norm",
    "native_group_norm_backward",
    "_fft_r2c",
    "_fft_c2r",
    "index.Tensor",
    "index_put",
    "native_layer_norm",
    "native_layer_norm_backward",
    "_native_batch_norm_legit",
    "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit.no_stats",
    "_cdist_forward",
    "_pdist_forward",
    "randperm",
    "repeat",
    "sym_size.int",
    "sym_is_contiguous",
    "sym_numel",
    "sym_storage_offset",
    "split_with_sizes",
    "sym_stride.int",
    "_local_scalar_dense",
    "masked_scatter",
    "scatter.src",
    "scatter.value",
    "scatter_add",
    "scatter_reduce.two",
    "nonzero",
    "gather",
    "sort",
    "topk",
    "elu",
    "hardtanh",
    "_adaptive_avg_pool2d",
    "_adaptive_avg_pool2d_backward",
    "_adaptive_avg_pool3d",
    "avg_pool2d",
    "avg_pool2d_backward",
    "avg_pool3d",
    "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward",
    "max_pool3d_with_indices",
    "reflection_pad1d",
    "reflection_pad2d",
    "reflection_pad3d",
    "replication_pad2d",
    "replication_pad3d",
    "upsample_bilinear2d.vec",
    "upsample_nearest2d.vec",
    "col2im",
];

/// PyTorch's `core` overloads, `name.overload` as [`MISSING`] spells them.
fn core_overloads() -> Vec<String> {
    let path = opforge_tests::data_dir().join("pytorch/native_functions.yaml");
    let src = std::fs::read_to_string(&path).unwrap();
    let file = load::load_str("native_functions.yaml", &src).unwrap_or_else(|d| panic!("{d}"));
    file.entries
        .iter()
        .filter(|e| e.tags.iter().any(|t| t == "core"))
        .map(|e| {
            let name = &e.func.name;
            match name.overload.as_str() {
                "" => name.name.to_string(),
                o => format!("{}.{o}", name.name),
            }
        })
        .collect()
}

/// Whether `aten::overload` runs on CPU and on meta tensors here.
fn runs_here(overload: &str) -> bool {
    let Some(op) = dispatcher().find(&format!("aten::{overload}")) else {
        return false;
    };
    let cpu = Tensor::zeros(&[1], DType::Float32, Device::Cpu).key_set();
    let meta = Tensor::zeros(&[1], DType::Float32, Device::Meta).key_set();
    op.dispatch_key(cpu).is_some() && op.dispatch_key(meta).is_some()
}

#[test]
fn the_core_opset_runs_here_except_the_listed_remainder() {
    let core = core_overloads();
    assert_eq!(core.len(), 193, "PyTorch 2.15 tags 193 overloads `core`");
    let unknown: Vec<&&str> = MISSING
        .iter()
        .filter(|m| !core.iter().any(|c| c == **m))
        .collect();
    assert!(unknown.is_empty(), "not core overloads: {unknown:?}");
    let absent: Vec<&String> = core
        .iter()
        .filter(|c| !MISSING.contains(&c.as_str()) && !runs_here(c))
        .collect();
    assert!(
        absent.is_empty(),
        "core overloads without a kernel here: {absent:?}"
    );
    let added: Vec<&&str> = MISSING.iter().filter(|m| runs_here(m)).collect();
    assert!(
        added.is_empty(),
        "these run here now: take them out of MISSING: {added:?}"
    );
    println!(
        "{} of {} core overloads run here",
        core.len() - MISSING.len(),
        core.len()
    );
}

fn err(r: opforge::Result<Tensor>) -> String {
    r.map(|_| ()).unwrap_err().to_string()
}

/// `empty_strided`, `scalar_tensor`, `full_like`, `squeeze.dims`, `flip` and
/// `alias` against what PyTorch 2.15 gives for the same calls.
#[test]
fn shape_and_factory_operators_behave_as_pytorch() {
    use opforge::{at, Scalar};
    let f32_ = Some(DType::Float32);
    let t = at::empty_strided(&[2, 3], &[1, 2], None, None, None, None).unwrap();
    assert_eq!(
        (t.shape(), t.strides(), t.dtype(), t.storage().len()),
        (vec![2, 3], vec![1, 2], DType::Float32, 6)
    );
    let t = at::empty_strided(&[2, 0], &[1, 1], f32_, None, None, None).unwrap();
    assert_eq!(t.storage().len(), 0);
    assert_eq!(
        err(at::empty_strided(&[2], &[-1], None, None, None, None)),
        "Storage size calculation overflowed with sizes=[2] and strides=[-1]"
    );
    assert_eq!(
        err(at::empty_strided(&[-2], &[1], None, None, None, None)),
        "Trying to create tensor with negative dimension -2: [-2]"
    );
    assert_eq!(
        err(at::empty_strided(&[2, 3], &[1], None, None, None, None)),
        "dimensionality of sizes (2) must match dimensionality of strides (1)"
    );
    // The out= variants PyTorch generates (`autogen:`) for factories.
    let mut out = Tensor::zeros(&[1], DType::Int64, Device::Cpu);
    at::empty_strided_out(&[2, 3], &[3, 1], &mut out).unwrap();
    assert_eq!((out.shape(), out.dtype()), (vec![2, 3], DType::Int64));
    at::scalar_tensor_out(Scalar::Float(2.5), &mut out).unwrap();
    assert_eq!(out.to_vec::<i64>().unwrap(), [2]);
    let meta = at::empty_strided(&[2, 3], &[3, 1], None, None, Some(Device::Meta), None).unwrap();
    assert_eq!((meta.device(), meta.shape()), (Device::Meta, vec![2, 3]));

    let s = at::scalar_tensor(Scalar::Bool(true), None, None, None, None).unwrap();
    assert_eq!(
        (s.dim(), s.dtype(), s.to_vec::<f32>().unwrap()),
        (0, DType::Float32, vec![1.0])
    );
    let s = at::scalar_tensor(Scalar::Int(3), Some(DType::Int64), None, None, None).unwrap();
    assert_eq!(s.to_vec::<i64>().unwrap(), [3]);

    let ints = Tensor::from_vec(vec![1i64, 1], &[2]).unwrap();
    let full = at::full_like(&ints, Scalar::Float(2.7), None, None, None, None, None).unwrap();
    assert_eq!(full.to_vec::<i64>().unwrap(), [2, 2]);
    let i32s = Tensor::from_vec(vec![1i32, 1], &[2]).unwrap();
    assert_eq!(
        err(at::full_like(
            &i32s,
            Scalar::Int(1 << 40),
            None,
            None,
            None,
            None,
            None
        )),
        "value cannot be converted to type int without overflow"
    );

    let ones = Tensor::zeros(&[2, 1, 3, 1], DType::Float32, Device::Cpu);
    assert_eq!(at::squeeze_dims(&ones, &[1, 3, 0]).unwrap().shape(), [2, 3]);
    assert_eq!(at::squeeze_dims(&ones, &[-1]).unwrap().shape(), [2, 1, 3]);
    assert_eq!(
        err(at::squeeze_dims(&ones, &[3, 3])),
        "dim 3 appears multiple times in the list of dims"
    );
    assert_eq!(
        err(at::squeeze_dims(&ones, &[5])),
        "Dimension out of range (expected to be in range of [-4, 3], but got 5)"
    );
    let scalar = Tensor::zeros(&[], DType::Float32, Device::Cpu);
    assert_eq!(at::squeeze_dims(&scalar, &[0]).unwrap().dim(), 0);
    assert_eq!(
        err(at::squeeze_dims(&scalar, &[0, -1])),
        "dim 0 appears multiple times in the list of dims"
    );

    let x = Tensor::from_vec((0..12i64).collect(), &[2, 3, 2]).unwrap();
    assert_eq!(
        at::flip(&x, &[0, -1]).unwrap().to_vec::<i64>().unwrap(),
        [7, 6, 9, 8, 11, 10, 1, 0, 3, 2, 5, 4]
    );
    let t = at::t(&Tensor::from_vec((0..12i64).collect(), &[3, 4]).unwrap()).unwrap();
    assert_eq!(
        at::flip(&t, &[1]).unwrap().to_vec::<i64>().unwrap(),
        [8, 4, 0, 9, 5, 1, 10, 6, 2, 11, 7, 3]
    );
    assert_eq!(
        err(at::flip(&x, &[0, 0])),
        "dim 0 appears multiple times in the list of dims"
    );
    assert_eq!(
        err(at::flip(&x, &[3])),
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    );
    assert_eq!(
        at::flip(&x, &[]).unwrap().to_vec::<i64>().unwrap(),
        (0..12).collect::<Vec<_>>()
    );

    let a = at::alias(&x).unwrap();
    assert!(a.storage().ptr_eq(&x.storage()) && a.shape() == x.shape());
}
