//! `rand`, `randn` (and their `.generator` and `_like` forms), `ones_like`,
//! `zeros_like`, `detach`, `detach_` and `sum_to_size`, against numbers
//! recorded from PyTorch 2.15 (CPU, the AVX2 build: `torch.backends.cpu.get_cpu_capability()`
//! is `'AVX2'`), with the Python line that printed them next to each.
//!
//! `data/pytorch_2_15_random.txt` has one line per case `FN SEED N DTYPE
//! i:value ... sum:S`, printed by
//!
//! ```python
//! torch.manual_seed(SEED); v = torch.FN(N, dtype=torch.DTYPE).tolist()
//! ```
//!
//! every value for N ≤ 17, else the values at a few indices (the block edges
//! of `normal_fill`: 15, 16, 17, the redrawn tail) and the sum of all of them
//! in order (`s = 0.0; for x in v: s += x`), for seeds 0, 42, 1234 and 2^40 + 7
//! (only the low 32 bits reach the engine), sizes 1, 7, 16, 17, 100, 1000,
//! float32 and float64. Equality is exact.

use opforge::kernels::composite;
use opforge::{ops, torch, DType, Device, Generator, MemoryFormat, Tensor};
use std::sync::{Mutex, MutexGuard};

/// The tests that draw from the process-wide default generator run one at a
/// time.
fn default_generator() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn dtype(name: &str) -> DType {
    match name {
        "float32" => DType::Float32,
        "float64" => DType::Float64,
        other => panic!("unknown dtype {other}"),
    }
}

#[test]
fn rand_and_randn_reproduce_pytorch_exactly() {
    let _g = default_generator();
    let table = include_str!("data/pytorch_2_15_random.txt");
    let mut cases = 0;
    for line in table.lines() {
        let mut parts = line.split(' ');
        let (f, seed, n, dt) = (
            parts.next().unwrap(),
            parts.next().unwrap().parse::<u64>().unwrap(),
            parts.next().unwrap().parse::<i64>().unwrap(),
            dtype(parts.next().unwrap()),
        );
        opforge::manual_seed(seed);
        let t = match f {
            "rand" => ops::rand(&[n], Some(dt), None, None, None),
            "randn" => ops::randn(&[n], Some(dt), None, None, None),
            other => panic!("unknown function {other}"),
        }
        .unwrap();
        assert_eq!((t.shape(), t.dtype()), (vec![n as usize], dt));
        let got = vals(&t);
        for item in parts {
            let (k, v) = item.split_once(':').unwrap();
            let want: f64 = v.parse().unwrap();
            if k == "sum" {
                let sum = got.iter().fold(0.0f64, |s, &x| s + x);
                assert_eq!(sum, want, "{line}: sum");
            } else {
                let i: usize = k.parse().unwrap();
                assert_eq!(got[i], want, "{line}: element {i}");
            }
        }
        cases += 1;
    }
    assert_eq!(cases, 96);
}

#[test]
fn scalar_normals_share_the_cached_second_sample() {
    let _g = default_generator();
    // torch.manual_seed(0); a = torch.randn(1, dtype=torch.float64);
    // b = torch.randn(1, dtype=torch.float64); c = torch.randn(3)
    opforge::manual_seed(0);
    let a = ops::randn(&[1], Some(DType::Float64), None, None, None).unwrap();
    let b = ops::randn(&[1], Some(DType::Float64), None, None, None).unwrap();
    let c = torch::randn(&[3]).unwrap();
    assert_eq!(vals(&a), [1.5409961082440433]);
    assert_eq!(vals(&b), [-0.2934289057609464]);
    assert_eq!(
        vals(&c),
        [-2.1787893772125244, 0.5684312582015991, -1.0845223665237427]
    );
    // torch.manual_seed(0); a = torch.randn(1); b = torch.rand(1, dtype=torch.float64);
    // c = torch.randn(1, dtype=torch.float64): uniform draws leave the cache alone.
    opforge::manual_seed(0);
    let a = torch::randn(&[1]).unwrap();
    let b = ops::rand(&[1], Some(DType::Float64), None, None, None).unwrap();
    let c = ops::randn(&[1], Some(DType::Float64), None, None, None).unwrap();
    assert_eq!(vals(&a), [1.5409960746765137]);
    assert_eq!(vals(&b), [0.45938294312745087]);
    assert_eq!(vals(&c), [-0.2934289057609464]);
    // Reseeding forgets the cache: torch.manual_seed(0); torch.randn(1) twice over.
    opforge::manual_seed(0);
    let a = torch::randn(&[1]).unwrap();
    opforge::manual_seed(0);
    assert_eq!(vals(&torch::randn(&[1]).unwrap()), vals(&a));
    assert_eq!(opforge::manual_seed(3).initial_seed(), 3);
}

#[test]
fn explicit_generators_are_independent_of_the_default() {
    let _g = default_generator();
    // torch.manual_seed(5); g = torch.Generator().manual_seed(7)
    // torch.rand(5, generator=g); torch.randn(5, generator=g, dtype=torch.float64); torch.rand(2)
    opforge::manual_seed(5);
    let g = Generator::new(Device::Cpu);
    g.manual_seed(7);
    let a = ops::rand_generator(&[5], Some(&g), None, None, None, None).unwrap();
    let b = ops::randn_generator(&[5], Some(&g), Some(DType::Float64), None, None, None).unwrap();
    let c = torch::rand(&[2]).unwrap();
    assert_eq!(
        vals(&a),
        [
            0.5349225401878357,
            0.19880318641662598,
            0.6592116951942444,
            0.6568902730941772,
            0.23276156187057495
        ]
    );
    assert_eq!(
        vals(&b),
        [
            -0.22536929244715578,
            0.1626792085163303,
            0.3775096144989079,
            -0.9509123189308806,
            -1.191297169151267
        ]
    );
    assert_eq!(vals(&c), [0.8302518725395203, 0.12611091136932373]);
    // A new generator has PyTorch's default seed:
    // g = torch.Generator(); g.initial_seed(); torch.rand(3, generator=g)
    let g = Generator::new(Device::Cpu);
    assert_eq!(g.initial_seed(), 67280421310721);
    let r = ops::rand_generator(&[3], Some(&g), None, None, None, None).unwrap();
    assert_eq!(
        vals(&r),
        [0.267295241355896, 0.8725283145904541, 0.3352888226509094]
    );
    // `generator=None` is the default generator.
    opforge::manual_seed(0);
    let r = ops::rand_generator(&[1], None, None, None, None, None).unwrap();
    assert_eq!(vals(&r), [0.49625658988952637]);
}

#[test]
fn like_forms_fill_in_memory_order_and_pick_the_normal_path_by_contiguity() {
    let _g = default_generator();
    // torch.manual_seed(3); x = torch.empty(4, 5).t()
    // torch.randn_like(x) (dense, not contiguous: the scalar path, in memory order)
    // torch.rand_like(x); torch.randn_like(x, memory_format=torch.contiguous_format)
    opforge::manual_seed(3);
    let x = Tensor::zeros(&[4, 5], DType::Float32, Device::Cpu);
    let x = ops::t(&x).unwrap();
    let a = torch::randn_like(&x).unwrap();
    let b = torch::rand_like(&x).unwrap();
    let c = ops::randn_like(&x, None, None, None, None, Some(MemoryFormat::Contiguous)).unwrap();
    assert_eq!(
        (a.strides(), b.strides(), c.strides()),
        (vec![1, 5], vec![1, 5], vec![4, 1])
    );
    #[rustfmt::skip]
    let want_a = [
        0.8032760620117188, -1.3682591915130615, 0.5220499634742737, -0.0798543244600296,
        0.17483338713645935, 0.3374950885772705, 1.2379167079925537, 0.9264108538627625,
        0.08897809684276581, 1.0111159086227417, -0.8646355867385864, 0.8156775236129761,
        -0.6137180328369141, -1.435179352760315, 0.2989608347415924, 0.49518901109695435,
        0.04618244990706444, 0.9774317741394043, 0.41921865940093994, -0.16431698203086853,
    ];
    #[rustfmt::skip]
    let want_b = [
        0.5824220776557922, 0.3795475363731384, 0.7605790495872498, 0.624667227268219,
        0.4283205270767212, 0.1581416130065918, 0.29810619354248047, 0.32064181566238403,
        0.44330739974975586, 0.3795878291130066, 0.4290640950202942, 0.916038453578949,
        0.17471283674240112, 0.4301472306251526, 0.9418346881866455, 0.7142151594161987,
        0.7561529874801636, 0.9623028635978699, 0.8212183713912964, 0.2773125171661377,
    ];
    #[rustfmt::skip]
    let want_c = [
        0.20301233232021332, -0.20442277193069458, -0.412137895822525, 0.6873754262924194,
        0.18704281747341156, -0.18132281303405762, -0.09136279672384262, -0.7349227070808411,
        1.985876202583313, 0.3624759018421173, -1.3898112773895264, -0.1593458503484726,
        0.32896682620048523, 0.3323023319244385, 0.3025069236755371, -0.9811874628067017,
        1.1038459539413452, -0.01265676412731409, -0.685114860534668, -0.30938950181007385,
    ];
    assert_eq!(vals(&a), want_a);
    assert_eq!(vals(&b), want_b);
    assert_eq!(vals(&c), want_c);
    // torch.manual_seed(3); torch.randn(5, 4): 20 contiguous elements (normal_fill).
    opforge::manual_seed(3);
    let r = torch::randn(&[5, 4]).unwrap();
    #[rustfmt::skip]
    let want = [
        -0.07664429396390915, 0.35988152027130127, -0.7820168137550354, 0.07152773439884186,
        1.0460227727890015, 0.5221869945526123, -0.16680915653705597, 0.05303340032696724,
        0.4046071469783783, 0.6112996339797974, 0.7603904008865356, -0.03364326059818268,
        0.997922420501709, 0.45918044447898865, 2.436397075653076, -0.1468081772327423,
        0.4851140081882477, 0.2052343785762787, 0.33842819929122925, 1.35275399684906,
    ];
    assert_eq!(vals(&r), want);
}

#[test]
fn random_factories_check_dtypes_and_sizes() {
    let err = |r: opforge::Result<Tensor>| r.unwrap_err().to_string();
    // torch.rand(3, dtype=torch.long) / torch.randn(3, dtype=torch.long) /
    // torch.rand(3, dtype=torch.bool) / torch.rand(-1)
    assert_eq!(
        err(ops::rand(&[3], Some(DType::Int64), None, None, None)),
        "\"check_uniform_bounds\" not implemented for 'Long'"
    );
    assert_eq!(
        err(ops::randn(&[3], Some(DType::Int64), None, None, None)),
        "\"normal_kernel_cpu\" not implemented for 'Long'"
    );
    assert_eq!(
        err(ops::rand(&[3], Some(DType::Bool), None, None, None)),
        "\"check_uniform_bounds\" not implemented for 'Bool'"
    );
    assert_eq!(
        err(torch::rand(&[-1])),
        "Trying to create tensor with negative dimension -1: [-1]"
    );
    assert_eq!(torch::randn(&[0, 3]).unwrap().shape(), vec![0, 3]);
}

#[test]
fn meta_random_factories_give_shapes_and_draw_nothing() {
    let _g = default_generator();
    opforge::manual_seed(11);
    let m = ops::rand(&[2, 3], None, None, Some(Device::Meta), None).unwrap();
    let n = ops::randn(&[4], Some(DType::Float64), None, Some(Device::Meta), None).unwrap();
    let l = torch::randn_like(&m).unwrap();
    assert_eq!(
        (m.device(), m.shape(), m.dtype()),
        (Device::Meta, vec![2, 3], DType::Float32)
    );
    assert_eq!(
        (n.device(), n.shape(), n.dtype()),
        (Device::Meta, vec![4], DType::Float64)
    );
    assert_eq!((l.device(), l.shape()), (Device::Meta, vec![2, 3]));
    // The default generator did not move.
    let after = torch::rand(&[2]).unwrap();
    opforge::manual_seed(11);
    assert_eq!(vals(&after), vals(&torch::rand(&[2]).unwrap()));
}

#[test]
fn ones_like_and_zeros_like_keep_dense_strides() {
    // y = torch.ones(2, 2).t(); torch.ones_like(y).stride() == (1, 2);
    // torch.ones_like(y, memory_format=torch.contiguous_format).stride() == (2, 1)
    // torch.ones_like(torch.ones(2, 3, 4)[:, ::2]).stride() == (8, 4, 1)
    let y = ops::t(&Tensor::zeros(&[2, 2], DType::Float32, Device::Cpu)).unwrap();
    let o = torch::ones_like(&y).unwrap();
    assert_eq!((o.strides(), vals(&o)), (vec![1, 2], vec![1.0; 4]));
    let o = ops::ones_like(&y, None, None, None, None, Some(MemoryFormat::Contiguous)).unwrap();
    assert_eq!(o.strides(), vec![2, 1]);
    let base = Tensor::zeros(&[2, 3, 4], DType::Float32, Device::Cpu);
    let sliced = ops::slice_Tensor(&base, 1, None, None, 2).unwrap();
    assert_eq!(torch::zeros_like(&sliced).unwrap().strides(), vec![8, 4, 1]);
    // dtype / device keywords.
    let z = ops::zeros_like(&y, Some(DType::Int64), None, None, None, None).unwrap();
    assert_eq!((z.dtype(), vals(&z)), (DType::Int64, vec![0.0; 4]));
    let o = ops::ones_like(&y, Some(DType::Bool), None, Some(Device::Meta), None, None).unwrap();
    assert_eq!(
        (o.device(), o.dtype(), o.shape()),
        (Device::Meta, DType::Bool, vec![2, 2])
    );
    // Through the kernel directly, on a meta input: a meta result.
    let m = Tensor::zeros(&[3], DType::Float64, Device::Meta);
    let r = composite::ones_like(&m, None, None, None, None, None).unwrap();
    assert_eq!(
        (r.device(), r.shape(), r.dtype()),
        (Device::Meta, vec![3], DType::Float64)
    );
}

#[test]
fn detach_is_a_view_without_history() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    x.set_requires_grad(true).unwrap();
    let d = x.detach().unwrap();
    assert!(!d.is_same(&x) && d.shares_storage(&x));
    assert_eq!(
        (d.shape(), d.strides(), d.storage_offset()),
        (x.shape(), x.strides(), x.storage_offset())
    );
    assert!(!d.requires_grad());
    let t = ops::t(&Tensor::zeros(&[2, 3], DType::Float32, Device::Cpu)).unwrap();
    let d = torch::detach(&t).unwrap();
    assert_eq!(d.strides(), vec![1, 3]);
    let mut y = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
    let r = y.detach_().unwrap();
    assert!(r.is_same(&y));
}

#[test]
fn sum_to_size_follows_pytorch() {
    // x = torch.arange(24.).reshape(2, 3, 4)
    // x.sum_to_size(3, 1), x.sum_to_size(1, 3, 1), x.sum_to_size(4), x.sum_to_size([]), x.sum_to_size(1, 1, 1)
    let x = Tensor::from_vec((0..24).map(|i| i as f32).collect(), &[2, 3, 4]).unwrap();
    let r = x.sum_to_size(&[3, 1]).unwrap();
    assert_eq!((r.shape(), vals(&r)), (vec![3, 1], vec![60.0, 92.0, 124.0]));
    let r = x.sum_to_size(&[1, 3, 1]).unwrap();
    assert_eq!(
        (r.shape(), vals(&r)),
        (vec![1, 3, 1], vec![60.0, 92.0, 124.0])
    );
    let r = x.sum_to_size(&[4]).unwrap();
    assert_eq!(
        (r.shape(), vals(&r)),
        (vec![4], vec![60.0, 66.0, 72.0, 78.0])
    );
    let r = x.sum_to_size(&[]).unwrap();
    assert_eq!((r.shape(), vals(&r)), (vec![], vec![276.0]));
    let r = x.sum_to_size(&[1, 1, 1]).unwrap();
    assert_eq!((r.shape(), vals(&r)), (vec![1, 1, 1], vec![276.0]));
    // Its own size: `self` (PyTorch: x.sum_to_size(2, 3, 4) is x).
    assert!(x.sum_to_size(&[2, 3, 4]).unwrap().is_same(&x));
    // x.sum_to_size(3, 2) / x.sum_to_size(2, 2, 3, 4) / x.sum_to_size(2)
    for (bad, msg) in [
        (
            &[3i64, 2][..],
            "size {[3, 2]} is not expandable to size {[2, 3, 4]}.",
        ),
        (
            &[2, 2, 3, 4][..],
            "size {[2, 2, 3, 4]} is not expandable to size {[2, 3, 4]}.",
        ),
        (
            &[2][..],
            "size {[2]} is not expandable to size {[2, 3, 4]}.",
        ),
    ] {
        assert_eq!(x.sum_to_size(bad).unwrap_err().to_string(), msg);
    }
    // On meta tensors: the shape only.
    let m = Tensor::zeros(&[2, 3, 4], DType::Float32, Device::Meta);
    let r = m.sum_to_size(&[3, 1]).unwrap();
    assert_eq!((r.device(), r.shape()), (Device::Meta, vec![3, 1]));
}

#[test]
fn the_python_api_takes_a_generator_keyword() {
    use opforge::argparse::ApiTable;
    use opforge::overrides::call_dispatch;
    use opforge::Value;
    // g = torch.Generator().manual_seed(7); torch.rand(5, generator=g)[:2]
    let g = Generator::new(Device::Cpu);
    g.manual_seed(7);
    let r = call_dispatch(
        &ApiTable::builtin(),
        "torch.rand",
        vec![Value::IntList(vec![5])],
        vec![("generator".to_string(), Value::Generator(g))],
    )
    .unwrap();
    let [Value::Tensor(t)] = r.as_slice() else {
        panic!("expected a tensor, got {r:?}")
    };
    assert_eq!(vals(t)[..2], [0.5349225401878357, 0.19880318641662598]);
}
