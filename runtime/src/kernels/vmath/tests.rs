//! Accuracy and consistency tests of `vmath`: every function against a
//! reference (the `f64` std function rounded to `f32`, or the std function for
//! `f64`) on special values, a sweep over the bit patterns and dense samples
//! of the interesting ranges; every code path against the portable one.

use super::*;
use std::fmt::Debug;

/// A float type under test, with its distance in ulps.
trait Float: Copy + Debug + PartialEq + 'static {
    /// Monotonic integer image: adjacent floats differ by 1, `±0` map to 0.
    fn ord(self) -> i128;
    fn nan(self) -> bool;
    fn inf_or_zero(self) -> bool;
    fn bits(self) -> u64;
}

impl Float for f32 {
    fn ord(self) -> i128 {
        let b = self.to_bits() as i32;
        (if b < 0 { -(b & i32::MAX) } else { b }) as i128
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
    fn inf_or_zero(self) -> bool {
        self.is_infinite() || self == 0.0
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Float for f64 {
    fn ord(self) -> i128 {
        let b = self.to_bits() as i64;
        (if b < 0 { -(b & i64::MAX) } else { b }) as i128
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
    fn inf_or_zero(self) -> bool {
        self.is_infinite() || self == 0.0
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// The distance from `want`, in ulps; `u64::MAX` where it must be exact and
/// is not: NaN against a number, and a zero or infinity (with its sign)
/// against anything else.
fn distance<T: Float>(got: T, want: T) -> u64 {
    if want.nan() || got.nan() {
        return if want.nan() && got.nan() { 0 } else { u64::MAX };
    }
    if want.inf_or_zero() || got.inf_or_zero() {
        return if got.bits() == want.bits() {
            0
        } else {
            u64::MAX
        };
    }
    (got.ord() - want.ord()).unsigned_abs() as u64
}

/// The largest distance seen and where.
#[derive(Default)]
struct Worst {
    ulps: u64,
    at: String,
    count: usize,
}

impl Worst {
    fn see<T: Float>(&mut self, got: T, want: T, at: impl FnOnce() -> String) {
        let d = distance(got, want);
        self.count += 1;
        if d > self.ulps {
            self.ulps = d;
            self.at = format!("{}: got {got:?}, want {want:?}", at());
        }
    }
    fn check(&self, name: &str, bound: u64) {
        assert!(
            self.ulps <= bound,
            "{name}: {} ulps (bound {bound}) at {} ({} samples)",
            if self.ulps == u64::MAX {
                "not exact".to_string()
            } else {
                self.ulps.to_string()
            },
            self.at,
            self.count
        );
    }
}

fn unary<T: Float>(
    name: &str,
    f: fn(&[T], &mut [T]),
    reference: impl Fn(T) -> T,
    xs: &[T],
    bound: u64,
) {
    let mut out = vec![xs[0]; xs.len()];
    f(xs, &mut out);
    let mut w = Worst::default();
    for (&x, &got) in xs.iter().zip(&out) {
        w.see(got, reference(x), || format!("x = {x:?}"));
    }
    w.check(name, bound);
}

fn binary<T: Float>(
    name: &str,
    f: fn(&[T], &[T], &mut [T]),
    reference: impl Fn(T, T) -> T,
    xs: &[T],
    ys: &[T],
    bound: u64,
) {
    let mut out = vec![xs[0]; xs.len()];
    f(xs, ys, &mut out);
    let mut w = Worst::default();
    for ((&x, &y), &got) in xs.iter().zip(ys).zip(&out) {
        w.see(got, reference(x, y), || format!("x = {x:?}, y = {y:?}"));
    }
    w.check(name, bound);
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

const SPECIAL64: &[f64] = &[
    0.0,
    f64::MIN_POSITIVE,
    4.9e-324,
    2.225_073_858_507_201e-308,
    1e-300,
    1e-30,
    1.4e-45,
    1e-20,
    1e-10,
    1e-5,
    0.1,
    0.5,
    0.625,
    0.75,
    1.0,
    1.5,
    2.0,
    3.0,
    std::f64::consts::FRAC_PI_2,
    std::f64::consts::PI,
    9.0,
    9.1,
    10.0,
    18.0,
    19.1,
    20.0,
    36.0,
    40.0,
    50.0,
    87.33654,
    88.0,
    88.72283,
    88.72284,
    89.0,
    100.0,
    103.972,
    103.98,
    104.0,
    120.0,
    700.0,
    708.39,
    709.78,
    709.782712893384,
    709.7827128933841,
    710.0,
    744.44,
    745.1332191019411,
    745.1332191019412,
    746.0,
    800.0,
    1e5,
    1048575.9,
    1048576.0,
    1647099.0,
    1e10,
    1e22,
    1e30,
    1e300,
    f32::MAX as f64,
    f64::MAX,
    f64::INFINITY,
    f64::NAN,
];

fn special64() -> Vec<f64> {
    let mut v: Vec<f64> = SPECIAL64.iter().flat_map(|&x| [x, -x]).collect();
    for x in [1.0f64, 0.5, 2.0] {
        v.push(f64::from_bits(x.to_bits() + 1));
        v.push(f64::from_bits(x.to_bits() - 1));
    }
    v
}

fn special32() -> Vec<f32> {
    let mut v: Vec<f32> = special64().iter().map(|&x| x as f32).collect();
    for b in [1u32, 0x007f_ffff, 0x0080_0000, 0x3f80_0001, 0x3f7f_ffff] {
        v.push(f32::from_bits(b));
        v.push(-f32::from_bits(b));
    }
    v
}

/// `n` bit patterns spread over all of them (NaNs included).
fn sweep32(n: u64) -> Vec<f32> {
    let step = (1u64 << 32) / n;
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|i| f32::from_bits((i * step + r.next() % step) as u32))
        .collect()
}

fn sweep64(n: u64) -> Vec<f64> {
    let step = u64::MAX / n;
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|i| f64::from_bits(i * step + r.next() % step))
        .collect()
}

/// Dense samples where the functions change character: uniform in
/// `[-lo, lo]`, consecutive floats around 1, and floats next to multiples of
/// π/2.
fn dense64(n: usize, lo: f64) -> Vec<f64> {
    let mut r = Rng(42);
    let mut v: Vec<f64> = (0..n).map(|_| r.range(-lo, lo)).collect();
    v.extend((0..n / 4).map(|_| r.range(-1.0, 1.0)));
    v.extend((0..n / 4).map(|_| r.range(0.0, 3.0) * f64::powi(2.0, -((r.next() % 60) as i32))));
    v.extend((0..n / 8).map(|i| f64::from_bits(1f64.to_bits() - n as u64 / 16 + i as u64)));
    for k in 1..n as u64 / 64 {
        let c = k as f64 * std::f64::consts::FRAC_PI_2;
        for d in [-2i64, -1, 0, 1, 2] {
            v.push(f64::from_bits(c.to_bits().wrapping_add(d as u64)));
        }
    }
    v
}

fn dense32(n: usize, lo: f64) -> Vec<f32> {
    let mut v: Vec<f32> = dense64(n, lo).iter().map(|&x| x as f32).collect();
    v.extend((0..n as u32 / 8).map(|i| f32::from_bits(0x3f80_0000 - n as u32 / 16 + i)));
    for k in 1..n as u32 / 64 {
        let c = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
        for d in [-2i32, -1, 0, 1, 2] {
            v.push(f32::from_bits(c.to_bits().wrapping_add(d as u32)));
        }
    }
    v
}

fn inputs32() -> Vec<f32> {
    let mut v = special32();
    v.extend(sweep32(1 << 20));
    v.extend(dense32(1 << 16, 120.0));
    v
}

fn inputs64() -> Vec<f64> {
    let mut v = special64();
    v.extend(sweep64(1 << 19));
    v.extend(dense64(1 << 16, 800.0));
    v
}

/// Exponents: specials (zeros, halves, odd and even integers, infinities,
/// NaN, beyond 2^53).
const POW_Y: &[f64] = &[
    0.0,
    0.5,
    1.0,
    1.5,
    2.0,
    3.0,
    0.1,
    10.0,
    127.0,
    128.0,
    149.0,
    150.0,
    1023.0,
    1024.0,
    1074.0,
    1075.0,
    1e10,
    4503599627370497.0,
    9007199254740992.0,
    9007199254740994.0,
    16777215.0,
    16777216.0,
    1e300,
    f64::INFINITY,
    f64::NAN,
];

fn pow_pairs64() -> (Vec<f64>, Vec<f64>) {
    let (mut xs, mut ys) = (vec![], vec![]);
    let ysp: Vec<f64> = POW_Y.iter().flat_map(|&y| [y, -y]).collect();
    for &x in &special64() {
        for &y in &ysp {
            xs.push(x);
            ys.push(y);
        }
    }
    let mut r = Rng(7);
    for _ in 0..1 << 15 {
        // Bases near 1, 0 and large, exponents up to the overflow range.
        xs.push(r.range(0.0, 4.0));
        ys.push(r.range(-300.0, 300.0));
        xs.push(f64::from_bits(r.next() >> 1));
        ys.push(r.range(-4.0, 4.0));
        xs.push(1.0 + r.range(-1e-3, 1e-3));
        ys.push(r.range(-1e6, 1e6));
        xs.push(-r.range(0.0, 100.0));
        ys.push((r.next() % 200) as f64 - 100.0);
        xs.push(f64::from_bits(r.next()));
        ys.push(f64::from_bits(r.next()));
    }
    (xs, ys)
}

fn pow_pairs32() -> (Vec<f32>, Vec<f32>) {
    let (xs, ys) = pow_pairs64();
    let mut xs: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
    let mut ys: Vec<f32> = ys.iter().map(|&y| y as f32).collect();
    let mut r = Rng(9);
    for _ in 0..1 << 15 {
        xs.push(f32::from_bits(r.next() as u32));
        ys.push(f32::from_bits(r.next() as u32));
        xs.push(r.range(0.0, 3.0) as f32);
        ys.push(r.range(-100.0, 100.0) as f32);
    }
    (xs, ys)
}

// ---------------------------------------------------------------------------
// References
// ---------------------------------------------------------------------------

fn sigmoid_ref(x: f64) -> f64 {
    if x >= -1.0 {
        0.5 + 0.5 * (0.5 * x).tanh()
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

type Unary<T> = (&'static str, fn(&[T], &mut [T]), fn(f64) -> f64);

fn unaries32() -> [Unary<f32>; 7] {
    [
        (
            "exp",
            <f32 as VecMath>::exp as fn(&[f32], &mut [f32]),
            f64::exp as fn(f64) -> f64,
        ),
        ("ln", <f32 as VecMath>::ln, f64::ln),
        ("sin", <f32 as VecMath>::sin, f64::sin),
        ("cos", <f32 as VecMath>::cos, f64::cos),
        ("tanh", <f32 as VecMath>::tanh, f64::tanh),
        ("sigmoid", <f32 as VecMath>::sigmoid, sigmoid_ref),
        ("sqrt", <f32 as VecMath>::sqrt, f64::sqrt),
    ]
    .map(|(n, f, r)| (n, f as fn(&[f32], &mut [f32]), r as fn(f64) -> f64))
}

fn unaries64() -> [Unary<f64>; 7] {
    [
        (
            "exp",
            <f64 as VecMath>::exp as fn(&[f64], &mut [f64]),
            f64::exp as fn(f64) -> f64,
        ),
        (
            "ln",
            <f64 as VecMath>::ln as fn(&[f64], &mut [f64]),
            f64::ln,
        ),
        (
            "sin",
            <f64 as VecMath>::sin as fn(&[f64], &mut [f64]),
            f64::sin,
        ),
        (
            "cos",
            <f64 as VecMath>::cos as fn(&[f64], &mut [f64]),
            f64::cos,
        ),
        (
            "tanh",
            <f64 as VecMath>::tanh as fn(&[f64], &mut [f64]),
            f64::tanh,
        ),
        (
            "sigmoid",
            <f64 as VecMath>::sigmoid as fn(&[f64], &mut [f64]),
            sigmoid_ref,
        ),
        (
            "sqrt",
            <f64 as VecMath>::sqrt as fn(&[f64], &mut [f64]),
            f64::sqrt,
        ),
    ]
    .map(|(n, f, r)| (n, f as fn(&[f64], &mut [f64]), r as fn(f64) -> f64))
}

/// Max ulps from the reference for f32 (the reference is the f64 function
/// rounded once): `sigmoid` divides a rounded `e^-|x|` by a rounded
/// `1 + e^-|x|` (PyTorch's float sigmoid is 2.3 ulp off in [-80, 30]).
fn bound32(name: &str) -> u64 {
    match name {
        "sigmoid" => 2,
        _ => 1,
    }
}

/// Max ulps from the reference for f64. The references' own errors count:
/// glibc's `tanh` is off by up to about 1.6 ulp (at 0.49626353662317874 it
/// gives 0.45917355513648433, 1.6 ulp above the exact 0.459173555136484245…;
/// this module's 0.4591735551364842 is 0.4 ulp below), and `sigmoid_ref`
/// rounds a few times.
fn bound64(name: &str) -> u64 {
    match name {
        "tanh" | "sigmoid" => 2,
        _ => 1,
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[test]
fn f32_within_bounds() {
    let xs = inputs32();
    for (name, f, r) in unaries32() {
        unary(name, f, |x: f32| r(x as f64) as f32, &xs, bound32(name));
    }
}

#[test]
fn f64_within_bounds() {
    let xs = inputs64();
    for (name, f, r) in unaries64() {
        unary(name, f, r, &xs, bound64(name));
    }
}

#[test]
fn pow_within_bounds() {
    let (xs, ys) = pow_pairs32();
    binary(
        "pow f32",
        <f32 as VecMath>::pow,
        |x, y| (x as f64).powf(y as f64) as f32,
        &xs,
        &ys,
        1,
    );
    let (xs, ys) = pow_pairs64();
    binary("pow f64", <f64 as VecMath>::pow, f64::powf, &xs, &ys, 1);
}

#[test]
fn pow_scalar_matches_pow() {
    let (xs, _) = pow_pairs64();
    let xs = &xs[..4096];
    let xs32: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
    let ys: Vec<f64> = POW_Y
        .iter()
        .flat_map(|&y| [y, -y])
        .chain([0.7, -2.5])
        .collect();
    for &y in &ys {
        let mut a = vec![0.0; xs.len()];
        let mut b = vec![0.0; xs.len()];
        <f64 as VecMath>::pow_scalar(xs, y, &mut a);
        <f64 as VecMath>::pow(xs, &vec![y; xs.len()], &mut b);
        assert!(a.iter().zip(&b).all(|(p, q)| distance(*p, *q) == 0), "{y}");
        let y = y as f32;
        let mut a = vec![0.0; xs.len()];
        let mut b = vec![0.0; xs.len()];
        <f32 as VecMath>::pow_scalar(&xs32, y, &mut a);
        <f32 as VecMath>::pow(&xs32, &vec![y; xs.len()], &mut b);
        assert!(a.iter().zip(&b).all(|(p, q)| distance(*p, *q) == 0), "{y}");
    }
}

/// Exact special values, written out (not taken from a reference).
#[test]
fn special_values_exact() {
    let inf = f64::INFINITY;
    let cases: &[(&str, f64, f64)] = &[
        ("exp", 0.0, 1.0),
        ("exp", -0.0, 1.0),
        ("exp", inf, inf),
        ("exp", -inf, 0.0),
        ("exp", 1e6, inf),
        ("exp", -1e6, 0.0),
        ("ln", 1.0, 0.0),
        ("ln", 0.0, -inf),
        ("ln", -0.0, -inf),
        ("ln", inf, inf),
        ("ln", -1.0, f64::NAN),
        ("ln", -inf, f64::NAN),
        ("sin", 0.0, 0.0),
        ("sin", -0.0, -0.0),
        ("sin", inf, f64::NAN),
        ("cos", 0.0, 1.0),
        ("cos", -inf, f64::NAN),
        ("tanh", 0.0, 0.0),
        ("tanh", -0.0, -0.0),
        ("tanh", inf, 1.0),
        ("tanh", -inf, -1.0),
        ("tanh", 1e3, 1.0),
        ("sigmoid", 0.0, 0.5),
        ("sigmoid", inf, 1.0),
        ("sigmoid", -inf, 0.0),
        ("sigmoid", 1e3, 1.0),
        ("sigmoid", -1e4, 0.0),
        ("sqrt", -0.0, -0.0),
        ("sqrt", inf, inf),
        ("sqrt", -1.0, f64::NAN),
    ];
    let all_nan = [f64::NAN; 1];
    for &(name, x, want) in cases {
        let f64s = unaries64().into_iter().find(|u| u.0 == name).unwrap().1;
        let f32s = unaries32().into_iter().find(|u| u.0 == name).unwrap().1;
        let mut o = [0.0f64];
        f64s(&[x], &mut o);
        assert_eq!(distance(o[0], want), 0, "{name}({x}) f64: {}", o[0]);
        let mut o = [0.0f32];
        f32s(&[x as f32], &mut o);
        assert_eq!(distance(o[0], want as f32), 0, "{name}({x}) f32: {}", o[0]);
        f64s(&all_nan, &mut [0.0]);
    }
    for (name, f, _) in unaries64() {
        let mut o = [0.0];
        f(&[f64::NAN], &mut o);
        assert!(o[0].is_nan(), "{name}(NaN)");
    }
    // C pow: the rules of C99 F.9.4.4, for both types.
    let nan = f64::NAN;
    let pow_cases: &[(f64, f64, f64)] = &[
        (nan, 0.0, 1.0),
        (nan, -0.0, 1.0),
        (1.0, nan, 1.0),
        (1.0, inf, 1.0),
        (-1.0, inf, 1.0),
        (-1.0, -inf, 1.0),
        (nan, 1.0, nan),
        (2.0, nan, nan),
        (-2.0, 0.5, nan),
        (-2.0, 3.0, -8.0),
        (-2.0, 2.0, 4.0),
        (0.0, -3.0, inf),
        (-0.0, -3.0, -inf),
        (-0.0, -2.0, inf),
        (-0.0, -0.5, inf),
        (-0.0, -inf, inf),
        (0.0, 3.0, 0.0),
        (-0.0, 3.0, -0.0),
        (-0.0, 2.0, 0.0),
        (-0.0, 0.5, 0.0),
        (0.5, -inf, inf),
        (2.0, -inf, 0.0),
        (0.5, inf, 0.0),
        (-2.0, inf, inf),
        (-inf, -3.0, -0.0),
        (-inf, -2.0, 0.0),
        (-inf, 3.0, -inf),
        (-inf, 0.5, inf),
        (inf, -1.0, 0.0),
        (inf, 0.5, inf),
        (10.0, 400.0, inf),
        (10.0, -400.0, 0.0),
    ];
    for &(x, y, want) in pow_cases {
        let mut o = [0.0f64];
        <f64 as VecMath>::pow(&[x], &[y], &mut o);
        assert_eq!(distance(o[0], want), 0, "pow({x}, {y}) f64: {}", o[0]);
        let mut o = [0.0f32];
        <f32 as VecMath>::pow(&[x as f32], &[y as f32], &mut o);
        let want = if x == 10.0 { want } else { want as f32 as f64 };
        assert_eq!(
            distance(o[0], want as f32),
            0,
            "pow({x}, {y}) f32: {}",
            o[0]
        );
    }
}

/// Every level this CPU has gives the same bits as the portable code.
#[test]
fn code_paths_agree() {
    let levels = available_levels();
    let xs = inputs32();
    let xs = &xs[..xs.len().min(1 << 17)];
    let xd = inputs64();
    let xd = &xd[..xd.len().min(1 << 17)];
    let (px, py) = pow_pairs32();
    let (pxd, pyd) = pow_pairs64();
    type R32 = fn(Level, &[f32], &mut [f32]);
    type R64 = fn(Level, &[f64], &mut [f64]);
    let runs32: [(&str, R32); 7] = [
        ("exp", k32::exp::run),
        ("ln", k32::ln::run),
        ("sin", k32::sin::run),
        ("cos", k32::cos::run),
        ("tanh", k32::tanh::run),
        ("sigmoid", k32::sigmoid::run),
        ("sqrt", k32::sqrt::run),
    ];
    let runs64: [(&str, R64); 7] = [
        ("exp", k64::exp::run),
        ("ln", k64::ln::run),
        ("sin", k64::sin::run),
        ("cos", k64::cos::run),
        ("tanh", k64::tanh::run),
        ("sigmoid", k64::sigmoid::run),
        ("sqrt", k64::sqrt::run),
    ];
    fn same<T: Float>(what: &str, level: Level, a: &[T], b: &[T]) {
        let bad = a
            .iter()
            .zip(b)
            .position(|(p, q)| p.bits() != q.bits() && !(p.nan() && q.nan()));
        assert!(bad.is_none(), "{what} at {level:?} differs at {bad:?}");
    }
    let portable = |f: &dyn Fn(Level) -> Vec<f64>, what: &str| {
        let base = f(Level::Portable);
        for &l in &levels[1..] {
            same(what, l, &base, &f(l));
        }
    };
    let portable32 = |f: &dyn Fn(Level) -> Vec<f32>, what: &str| {
        let base = f(Level::Portable);
        for &l in &levels[1..] {
            same(what, l, &base, &f(l));
        }
    };
    for (name, run) in runs32 {
        portable32(
            &|l| {
                let mut o = vec![0.0; xs.len()];
                run(l, xs, &mut o);
                o
            },
            name,
        );
    }
    for (name, run) in runs64 {
        portable(
            &|l| {
                let mut o = vec![0.0; xd.len()];
                run(l, xd, &mut o);
                o
            },
            name,
        );
    }
    portable32(
        &|l| {
            let mut o = vec![0.0; px.len()];
            k32::pow::run(l, &px, &py, &mut o);
            o
        },
        "pow f32",
    );
    portable(
        &|l| {
            let mut o = vec![0.0; pxd.len()];
            k64::pow::run(l, &pxd, &pyd, &mut o);
            o
        },
        "pow f64",
    );
    portable32(
        &|l| {
            let mut o = vec![0.0; px.len()];
            k32::pow_scalar::run(l, &px, 2.5, &mut o);
            o
        },
        "pow_scalar f32",
    );
    portable(
        &|l| {
            let mut o = vec![0.0; pxd.len()];
            k64::pow_scalar::run(l, &pxd, -1.5, &mut o);
            o
        },
        "pow_scalar f64",
    );
}

#[test]
#[should_panic(expected = "vmath::exp: the input has 2 elements but the output has 1")]
fn length_mismatch_panics() {
    <f32 as VecMath>::exp(&[1.0, 2.0], &mut [0.0]);
}

/// Every `f32` input of every unary function against the reference; prints
/// the largest error and how many results are not the reference's bits. Run
/// in release: `cargo test --release -p opforge --lib vmath -- --ignored`
/// (about 15 minutes on 2 cores, most of it in the references; set
/// `VMATH_ONLY=exp,ln` to check some functions only).
#[test]
#[ignore]
fn exhaustive_f32() {
    use rayon::prelude::*;
    let only = std::env::var("VMATH_ONLY").ok();
    for (name, f, r) in unaries32() {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|n| n == name))
        {
            continue;
        }
        let start = std::time::Instant::now();
        let (ulps, differ, at) = (0..1u64 << 16)
            .into_par_iter()
            .map(|hi| {
                let xs: Vec<f32> = (0..1u32 << 16)
                    .map(|lo| f32::from_bits((hi as u32) << 16 | lo))
                    .collect();
                let mut out = vec![0.0; xs.len()];
                f(&xs, &mut out);
                let mut worst = (0u64, 0u64, 0f32);
                for (&x, &got) in xs.iter().zip(&out) {
                    let want = r(x as f64) as f32;
                    let d = distance(got, want);
                    worst.1 += (d != 0) as u64;
                    if d > worst.0 {
                        worst.0 = d;
                        worst.2 = x;
                    }
                }
                worst
            })
            .reduce(
                || (0, 0, 0.0),
                |a, b| (a.0.max(b.0), a.1 + b.1, if a.0 >= b.0 { a.2 } else { b.2 }),
            );
        println!(
            "{name:8} f32: max {ulps} ulp (at {at:e}), {differ} of 2^32 results differ from the reference, {:.1} s",
            start.elapsed().as_secs_f64()
        );
        assert!(ulps <= bound32(name), "{name}: {ulps} ulps at {at:e}");
    }
}

/// `f32` pow for every 16th `x` bit pattern (2^28 of them) and a set of
/// exponents, against the `f64` std `powf` rounded. Run in release with the
/// other ignored tests.
#[test]
#[ignore]
fn wide_pow_f32() {
    use rayon::prelude::*;
    let ys: &[f32] = &[
        2.5,
        -1.5,
        0.5,
        3.0,
        -2.0,
        1e3,
        -77.7,
        0.01,
        1.0 / 3.0,
        1e-7,
        9e6,
    ];
    for &y in ys {
        let (ulps, differ, at) = (0..1u64 << 12)
            .into_par_iter()
            .map(|hi| {
                let xs: Vec<f32> = (0..1u32 << 16)
                    .map(|lo| f32::from_bits((hi as u32) << 20 | lo << 4 | (hi as u32 & 15)))
                    .collect();
                let mut out = vec![0.0; xs.len()];
                <f32 as VecMath>::pow_scalar(&xs, y, &mut out);
                let mut worst = (0u64, 0u64, 0f32);
                for (&x, &got) in xs.iter().zip(&out) {
                    let want = (x as f64).powf(y as f64) as f32;
                    let d = distance(got, want);
                    worst.1 += (d != 0) as u64;
                    if d > worst.0 {
                        worst.0 = d;
                        worst.2 = x;
                    }
                }
                worst
            })
            .reduce(
                || (0, 0, 0.0),
                |a, b| (a.0.max(b.0), a.1 + b.1, if a.0 >= b.0 { a.2 } else { b.2 }),
            );
        println!("pow(x, {y:e}) f32: max {ulps} ulp (at {at:e}), {differ} of 2^28 differ");
        assert!(ulps <= 1, "pow(x, {y}): {ulps} ulps at {at:e}");
    }
}

/// The dispatch's safety rests on this: a level is reported only when every
/// CPU feature its copies are compiled with is present, and a requested level
/// above the detected one is capped (never run).
#[test]
fn levels_follow_detection() {
    let level = detected_level();
    #[cfg(target_arch = "x86_64")]
    {
        if level >= Level::Avx2 {
            assert!(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"));
        }
        if level == Level::Avx512 {
            for f in [
                is_x86_feature_detected!("avx512f"),
                is_x86_feature_detected!("avx512bw"),
                is_x86_feature_detected!("avx512dq"),
                is_x86_feature_detected!("avx512vl"),
            ] {
                assert!(f);
            }
        }
    }
    assert_eq!(detected_level(), level, "detected once, then cached");
    // Asking for the widest level on any CPU runs at most the detected one,
    // with the same bits as the baseline.
    let x: Vec<f32> = (0..1000).map(|i| i as f32 * 0.013 - 6.0).collect();
    let (mut wide, mut base) = (vec![0.0f32; 1000], vec![0.0f32; 1000]);
    k32::exp::run(Level::Avx512, &x, &mut wide);
    k32::exp::run(Level::Portable, &x, &mut base);
    assert_eq!(
        wide.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        base.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
}
