//! Kernel benchmark: the CPU kernels through the public API (`opforge::torch::*`
//! and `Tensor` methods), one line per case:
//!
//! ```text
//! kernel <op> <size> <dtype> <threads> ns: <median>
//! ```
//! the median, over timed samples, of the mean nanoseconds per call in a sample.
//! `tests/bench/kernels_torch.py` times the same cases with PyTorch and prints
//! the same lines; `tests/bench/compare.py` runs both and prints a table.
//!
//! ```text
//! cargo run --release -p opforge-tests --bin kernels [-- --filter SUBSTR] [--quick]
//! ```
//! - `--filter SUBSTR`: only the cases whose label `<op> <size> <dtype>` (e.g.
//!   `add_t 1000000 float32`) contains `SUBSTR` (repeatable: any of them);
//! - `--quick`: a tenth of the timing budget, for smoke tests.
//!
//! Every case runs at 1 thread and at `available_parallelism()` threads
//! (`opforge::set_num_threads`), all cases at one count, then at the next.
//!
//! # Cases
//! `size` is the number of elements of the (first) input, at 1, 10^3, 10^5,
//! 10^6 and 10^7; float32 unless said.
//! - `add`, `mul`, `div` (`torch::add(a, b)` …, contiguous 1-D), `add` also in
//!   float64;
//! - `add_t`: `torch::add(m, mt)` with `mt = m.t()` made before timing, `m`
//!   square with the side `round(sqrt(size))`: 1, 32, 316, 1000, 3162;
//! - `sum` (all-reduce, also float64), `exp`, `sigmoid`, `tanh`, `log` (of data
//!   in [0.1, 2.1)), `sin`, `to_dtype` (`a.to(Float64)`), all 1-D;
//! - 2-D cases on the shape `[rows, cols]` = `[1, 1]`, `[10, 100]`,
//!   `[100, 1000]`, `[1000, 1000]`, `[10000, 1000]` (`cols` = 1000 from 10^5,
//!   100 at 10^3): `mean_dim` (`torch::mean_dim(x, [-1])`), `sum_dim0`
//!   (`torch::sum_dim_int_list(x, [0])`), `max_dim` (`torch::max(x, -1)`,
//!   values and indices), `cat` (`torch::cat([a, b])` along dim 0, each half
//!   `[max(rows / 2, 1), cols]`, so size 1 concatenates two 1-element tensors),
//!   `index_select` (`torch::index_select(x, 0, idx)`, `max(rows / 2, 1)`
//!   random int64 row indices);
//! - `mm`: square `[n, n] @ [n, n]`, float32 and float64, n = 64, 256, 512,
//!   1024 (`size` is n); `matmul_batched`: `[8, n, n] @ [8, n, n]`;
//!   `matmul_broadcast`: `[8, n, n] @ [n, n]`, n = 64, 256;
//! - `cat_many`: `torch::cat` of `size` one-element tensors (1,000 and
//!   40,000): the cost per input, which must not grow with their number.
//!
//! Inputs are deterministic pseudo-random (xorshift64), uniform in [-2, 2)
//! unless said (a divisor: [0.5, 1.5)).
//!
//! # Timing
//! Warm-up: calls for about 10 ms (at least one), which also gives an estimate
//! `t` of one call. A sample is a batch of calls lasting at least 0.5 ms (one
//! call if `t` is longer); the case takes as many samples as fit in about 50 ms,
//! between 3 and 100. A slow call (`t` > 17 ms) thus gets 3 samples: the run
//! stays within minutes while the kernels are slow. Each call's result is
//! passed through `black_box` and dropped (freed) inside the timed loop, as the
//! Python side drops its result.

use opforge::{torch, DType, Tensor};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The element counts of the elementwise and reduction cases.
const SIZES: [usize; 5] = [1, 1_000, 100_000, 1_000_000, 10_000_000];
/// The matrix sides of `mm`.
const MM_SIDES: [usize; 4] = [64, 256, 512, 1024];
/// The matrix sides of the batched and broadcast `matmul` cases.
const MATMUL_SIDES: [usize; 2] = [64, 256];
/// How many one-element tensors `cat_many` joins.
const CAT_MANY_COUNTS: [usize; 2] = [1000, 40_000];
/// The batch of `matmul_batched` and `matmul_broadcast`.
const BATCH: usize = 8;

/// The timing budget of one case.
struct Budget {
    warmup: Duration,
    sample: Duration,
    total: Duration,
}

const FULL: Budget = Budget {
    warmup: Duration::from_millis(10),
    sample: Duration::from_micros(500),
    total: Duration::from_millis(50),
};
const QUICK: Budget = Budget {
    warmup: Duration::from_millis(1),
    sample: Duration::from_micros(50),
    total: Duration::from_millis(5),
};
const MIN_SAMPLES: usize = 3;
const MAX_SAMPLES: usize = 100;

/// One timed call; its result is black-boxed and dropped inside.
type Call = Box<dyn FnMut() -> opforge::Result<()>>;

/// Builds a case's call from its size and dtype.
type Build = fn(usize, DType) -> opforge::Result<Call>;

/// A case: its op, size, dtype, and how to build its call (inputs included, so
/// they live only while the case runs).
struct Case {
    op: &'static str,
    size: usize,
    dtype: DType,
    build: Build,
}

impl Case {
    fn label(&self) -> String {
        format!("{} {} {}", self.op, self.size, dtype_name(self.dtype))
    }
}

fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::Float32 => "float32",
        DType::Float64 => "float64",
        DType::Int64 => "int64",
        DType::Int32 => "int32",
        DType::Bool => "bool",
    }
}

/// xorshift64: deterministic pseudo-random numbers.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A tensor of `shape` and `dtype` with values uniform in [lo, hi).
fn uniform(shape: &[usize], dtype: DType, lo: f64, hi: f64, seed: u64) -> opforge::Result<Tensor> {
    let n: usize = shape.iter().product();
    let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut value = move || lo + (hi - lo) * rng.unit();
    match dtype {
        DType::Float64 => Tensor::from_vec((0..n).map(|_| value()).collect::<Vec<f64>>(), shape),
        _ => Tensor::from_vec((0..n).map(|_| value() as f32).collect::<Vec<f32>>(), shape),
    }
}

/// The default inputs: uniform in [-2, 2).
fn data(shape: &[usize], dtype: DType, seed: u64) -> opforge::Result<Tensor> {
    uniform(shape, dtype, -2.0, 2.0, seed)
}

/// The 2-D shape of the reduction, `cat` and `index_select` cases of `n`
/// elements.
fn shape2d(n: usize) -> [usize; 2] {
    if n >= 100_000 {
        [n / 1000, 1000]
    } else if n >= 1000 {
        [n / 100, 100]
    } else {
        [1, n]
    }
}

/// The side of the square matrix of about `n` elements.
fn side(n: usize) -> usize {
    (n as f64).sqrt().round() as usize
}

/// Builds a call of a binary op on two 1-D inputs, the second in [lo, hi).
macro_rules! binary {
    ($f:expr, $lo:expr, $hi:expr) => {
        |n, dt| {
            let a = data(&[n], dt, 1)?;
            let b = uniform(&[n], dt, $lo, $hi, 2)?;
            Ok(Box::new(move || {
                black_box($f(black_box(&a), black_box(&b))?);
                Ok(())
            }) as Call)
        }
    };
}

/// Builds a call of a unary op on a 1-D input uniform in [lo, hi).
macro_rules! unary {
    ($f:expr) => {
        unary!($f, -2.0, 2.0)
    };
    ($f:expr, $lo:expr, $hi:expr) => {
        |n, dt| {
            let a = uniform(&[n], dt, $lo, $hi, 1)?;
            Ok(Box::new(move || {
                black_box($f(black_box(&a))?);
                Ok(())
            }) as Call)
        }
    };
}

/// Builds a call of an op on one 2-D input of shape [`shape2d`].
macro_rules! on2d {
    ($f:expr) => {
        |n, dt| {
            let x = data(&shape2d(n), dt, 1)?;
            Ok(Box::new(move || {
                black_box($f(black_box(&x))?);
                Ok(())
            }) as Call)
        }
    };
}

fn add_t(n: usize, dt: DType) -> opforge::Result<Call> {
    let s = side(n);
    let m = data(&[s, s], dt, 1)?;
    let mt = m.t()?;
    Ok(Box::new(move || {
        black_box(torch::add(black_box(&m), black_box(&mt))?);
        Ok(())
    }))
}

fn cat(n: usize, dt: DType) -> opforge::Result<Call> {
    let [rows, cols] = shape2d(n);
    let half = [(rows / 2).max(1), cols];
    let parts = [data(&half, dt, 1)?, data(&half, dt, 2)?];
    Ok(Box::new(move || {
        black_box(torch::cat(black_box(&parts))?);
        Ok(())
    }))
}

fn cat_many(n: usize, dt: DType) -> opforge::Result<Call> {
    let parts = (0..n)
        .map(|k| data(&[1], dt, k as u64))
        .collect::<opforge::Result<Vec<_>>>()?;
    Ok(Box::new(move || {
        black_box(torch::cat(black_box(&parts))?);
        Ok(())
    }))
}

fn index_select(n: usize, dt: DType) -> opforge::Result<Call> {
    let shape = shape2d(n);
    let x = data(&shape, dt, 1)?;
    let mut rng = XorShift(0x5eed);
    let picks = (shape[0] / 2).max(1);
    let idx: Vec<i64> = (0..picks)
        .map(|_| (rng.next() % shape[0] as u64) as i64)
        .collect();
    let idx = Tensor::from_vec(idx, &[picks])?;
    Ok(Box::new(move || {
        black_box(torch::index_select(black_box(&x), 0, black_box(&idx))?);
        Ok(())
    }))
}

fn mm(n: usize, dt: DType) -> opforge::Result<Call> {
    let a = data(&[n, n], dt, 1)?;
    let b = data(&[n, n], dt, 2)?;
    Ok(Box::new(move || {
        black_box(torch::mm(black_box(&a), black_box(&b))?);
        Ok(())
    }))
}

fn matmul_batched(n: usize, dt: DType) -> opforge::Result<Call> {
    let a = data(&[BATCH, n, n], dt, 1)?;
    let b = data(&[BATCH, n, n], dt, 2)?;
    Ok(Box::new(move || {
        black_box(torch::matmul(black_box(&a), black_box(&b))?);
        Ok(())
    }))
}

fn matmul_broadcast(n: usize, dt: DType) -> opforge::Result<Call> {
    let a = data(&[BATCH, n, n], dt, 1)?;
    let b = data(&[n, n], dt, 2)?;
    Ok(Box::new(move || {
        black_box(torch::matmul(black_box(&a), black_box(&b))?);
        Ok(())
    }))
}

/// Every case, in the order they run (the Python script's order).
fn cases() -> Vec<Case> {
    let f32 = DType::Float32;
    let f64 = DType::Float64;
    let by_size: [(&str, DType, Build); 18] = [
        ("add", f32, binary!(torch::add, -2.0, 2.0)),
        ("add", f64, binary!(torch::add, -2.0, 2.0)),
        ("add_t", f32, add_t),
        ("mul", f32, binary!(torch::mul, -2.0, 2.0)),
        ("div", f32, binary!(torch::div, 0.5, 1.5)),
        ("sum", f32, unary!(torch::sum)),
        ("sum", f64, unary!(torch::sum)),
        (
            "mean_dim",
            f32,
            on2d!(|x| torch::mean_dim(x, Some(&[-1][..]))),
        ),
        (
            "sum_dim0",
            f32,
            on2d!(|x| torch::sum_dim_int_list(x, Some(&[0][..]))),
        ),
        ("max_dim", f32, on2d!(|x| torch::max(x, -1))),
        ("exp", f32, unary!(torch::exp)),
        ("sigmoid", f32, unary!(torch::sigmoid)),
        ("tanh", f32, unary!(torch::tanh)),
        ("log", f32, unary!(torch::log, 0.1, 2.1)),
        ("sin", f32, unary!(torch::sin)),
        ("cat", f32, cat),
        ("index_select", f32, index_select),
        ("to_dtype", f32, unary!(|a: &Tensor| a.to(DType::Float64))),
    ];
    let mut cases = Vec::new();
    for (op, dtype, build) in by_size {
        for size in SIZES {
            cases.push(Case {
                op,
                size,
                dtype,
                build,
            });
        }
    }
    for dtype in [f32, f64] {
        for size in MM_SIDES {
            cases.push(Case {
                op: "mm",
                size,
                dtype,
                build: mm,
            });
        }
    }
    for (op, build) in [
        ("matmul_batched", matmul_batched as Build),
        ("matmul_broadcast", matmul_broadcast),
    ] {
        for size in MATMUL_SIDES {
            cases.push(Case {
                op,
                size,
                dtype: f32,
                build,
            });
        }
    }
    for size in CAT_MANY_COUNTS {
        cases.push(Case {
            op: "cat_many",
            size,
            dtype: f32,
            build: cat_many,
        });
    }
    cases
}

/// The median over samples of the mean time per call in a sample, in ns (see
/// the module's "Timing").
fn measure(call: &mut Call, budget: &Budget) -> opforge::Result<f64> {
    let start = Instant::now();
    let mut calls = 0u32;
    while calls == 0 || start.elapsed() < budget.warmup {
        call()?;
        calls += 1;
    }
    let per_call = start.elapsed().as_secs_f64() / f64::from(calls);
    let batch = ((budget.sample.as_secs_f64() / per_call).ceil() as usize).max(1);
    let samples = ((budget.total.as_secs_f64() / (per_call * batch as f64)) as usize)
        .clamp(MIN_SAMPLES, MAX_SAMPLES);
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        for _ in 0..batch {
            call()?;
        }
        times.push(t.elapsed().as_nanos() as f64 / batch as f64);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn usage() -> ! {
    eprintln!("usage: kernels [--filter SUBSTR]... [--quick]");
    std::process::exit(2)
}

fn main() {
    let mut filters = Vec::new();
    let mut quick = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--filter" => filters.push(args.next().unwrap_or_else(|| usage())),
            "--quick" => quick = true,
            "-h" | "--help" => usage(),
            other => {
                eprintln!("unknown argument `{other}`");
                usage()
            }
        }
    }
    let budget = if quick { &QUICK } else { &FULL };
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut thread_counts = vec![1];
    if all > 1 {
        thread_counts.push(all);
    }
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.label().contains(f.as_str())))
        .collect();
    println!(
        "# opforge kernels: {} cases, threads {thread_counts:?}{}",
        cases.len(),
        if quick { ", quick" } else { "" }
    );
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        // A loaded machine (other processes on the cores) makes the
        // multi-threaded figures of both sides unreliable.
        println!("# load average: {}", load.trim());
    }
    for threads in thread_counts {
        opforge::set_num_threads(threads).expect("a positive thread count");
        for case in &cases {
            let prefix = format!("kernel {} {threads}", case.label());
            match (case.build)(case.size, case.dtype)
                .and_then(|mut call| measure(&mut call, budget))
            {
                Ok(ns) => println!("{prefix} ns: {ns:.1}"),
                Err(e) => println!("{prefix} error: {e}"),
            }
        }
    }
}
