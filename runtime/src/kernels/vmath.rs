//! Vectorized transcendental functions over contiguous slices: the math stage
//! of the pointwise kernels ([`VecMath`] for `f32` and `f64`: `exp`, `ln`,
//! `sin`, `cos`, `tanh`, `sigmoid`, `sqrt`, `pow`, `pow_scalar`).
//!
//! # Accuracy
//!
//! - `f32`: within 1 ulp of the `f64` std function rounded to `f32`, for
//!   every one of the 2^32 inputs of each unary function but `sigmoid`
//!   (`exhaustive_f32`), and on the tests' samples for `pow`; `sigmoid`
//!   within 2 ulp of every input (2.9% of results are not the reference's
//!   bits; PyTorch's float sigmoid, `1/(1 + e^-x)` with a fast `exp`, is up
//!   to 2.3 ulp off on [-80, 30], measured, and far more near underflow);
//!   `sqrt` is exact.
//! - `f64`: within 1 ulp of the std function for `exp`, `ln`, `sin`, `cos`
//!   and `pow` on the tests' samples; `tanh` and `sigmoid` within 2 ulp of
//!   references that are themselves up to about 1.6 ulp off (glibc's `tanh`;
//!   each algorithm's error before its last rounding is below 1 ulp);
//!   `sqrt` is exact.
//!
//! Special values are exact: `±0`, `±inf`, NaN, subnormals, the overflow and
//! underflow thresholds of `exp` (rounding decides, as for the correctly
//! rounded result), `ln` of zero and of negative numbers, `tanh` and `sigmoid`
//! saturation, and C's `pow` special cases (`pow(x, ±0) = 1`, `pow(1, y) = 1`,
//! `pow(-1, ±inf) = 1`, signed zeros and infinities for odd integer `y`, NaN
//! for a finite negative base and a finite non-integer exponent). NaN payloads
//! are unspecified.
//!
//! # Algorithms
//!
//! Branch-free code: every element runs the same instructions and special
//! cases are selected at the end, so the loops vectorize.
//!
//! - `exp`: `x = k ln2 + r`, `|r| <= ln2/2` (Cody–Waite, `ln2` in two parts),
//!   `e^r = 1 + r + r² P(r)` (minimax, `P` of degree 4 for `f32`, 5 inside
//!   `f32` `tanh`, 10 for `f64`), scaled by `2^k` in two steps so that a subnormal result is
//!   rounded once. `f32` is evaluated in `f32`.
//! - `ln`: `x = 2^e m`, `m` in `[√½, √2)`, `s = (m-1)/(m+1)`,
//!   `ln m = 2s + s³ R(s²)` with fdlibm's polynomial and summation order
//!   (musl's `logf` and `log`).
//! - `sin`, `cos`: `x = n π/2 + r`, `|r| <= π/4`. `f32`: in `f64`, `π/2` in
//!   two parts, minimax polynomials. `f64`: fdlibm's medium-size reduction
//!   (`π/2` in three 33-bit parts, all three rounds always, each round's
//!   subtraction error kept) and fdlibm's kernels with the reduction's tail.
//!   Elements with `|x| >= 2^20` and non-finite ones are recomputed by the std
//!   function: a slice is scanned once for them (an integer max over the bit
//!   patterns).
//! - `tanh`: an odd polynomial below `0.55` (`f32`) or `0.625` (`f64`), above
//!   it `1 - 2/(1 + e^{2|x|})` with `1 + e^{2|x|}` carried as two floats and
//!   the quotient corrected for the denominator's tail.
//! - `sigmoid`: `f32`: `E = e^{-|x|}` (never overflows; `exp`'s algorithm
//!   with fused multiply-adds), `1/(1 + E)` for `x >= 0` and `E/(1 + E)`
//!   below, one division either way. `f64`:
//!   `e^{-x} = 2^k p`, `1/(1 + e^{-x}) = 2^-k / (2^-k + p)` with the
//!   denominator as two floats, so large negative `x` neither overflows nor
//!   loses accuracy.
//! - `sqrt`: the IEEE square root instruction (correctly rounded).
//! - `pow`: `f32`: `2^{y log2|x|}` in `f64`. `f64`: `ln|x|` as a double plus a
//!   tail (a 128-entry table of `1/c` and `ln c`), `y ln|x|` as two doubles,
//!   and `e^{hi + lo}` with a 128-entry table of `2^{i/128}`: the scheme of
//!   ARM's optimized-routines `pow` without fused multiply-adds, tables made
//!   by `vmath/gen_pow_tables.py`.
//!
//! Plain multiplications and additions are used, and fused multiply-adds only
//! through `mul_add` (`f32` `sigmoid`'s `exp`), which rounds once on every
//! level: an instruction with AVX2 and AVX-512, a correctly rounded library
//! call on the portable level (slow there, but the same bits). So every code
//! path computes the same roundings.
//!
//! # Dispatch
//!
//! Each kernel is one `#[inline(always)]` loop body compiled three times: in a
//! function with `#[target_feature(enable = "avx512f,avx512bw,avx512dq,
//! avx512vl,avx2,fma")]`, in one with `avx2,fma`, and without features (SSE2
//! on x86_64; the only version on other targets). The best level the CPU has
//! is detected once (`is_x86_feature_detected!`) and cached; the loops are
//! auto-vectorized by LLVM for each level (512-bit vectors with AVX-512). All
//! levels give bit-identical results (tested).

use std::sync::atomic::{AtomicU8, Ordering};

/// Element-wise math over slices of one float type, vectorized.
///
/// Every function requires `x.len() == out.len()` (and `y.len() == out.len()`
/// for `pow`) and panics otherwise, naming the function and both lengths.
pub(crate) trait VecMath: Copy {
    /// `e^x`.
    fn exp(x: &[Self], out: &mut [Self]);
    /// Natural logarithm (`-inf` at ±0, NaN below 0).
    fn ln(x: &[Self], out: &mut [Self]);
    /// Sine (radians).
    fn sin(x: &[Self], out: &mut [Self]);
    /// Cosine (radians).
    fn cos(x: &[Self], out: &mut [Self]);
    /// Hyperbolic tangent.
    fn tanh(x: &[Self], out: &mut [Self]);
    /// `1 / (1 + e^-x)`.
    fn sigmoid(x: &[Self], out: &mut [Self]);
    /// Square root (correctly rounded).
    fn sqrt(x: &[Self], out: &mut [Self]);
    /// Element-wise `x^y` with C `pow` semantics, special cases included.
    fn pow(x: &[Self], y: &[Self], out: &mut [Self]);
    /// `x^y` for one exponent `y` (the same results as [`VecMath::pow`]).
    fn pow_scalar(x: &[Self], y: Self, out: &mut [Self]);
}

// ---------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------

/// A set of CPU features the kernels are compiled for, in increasing order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Level {
    /// No features beyond the target's baseline (SSE2 on x86_64).
    Portable = 1,
    /// AVX2 and FMA.
    Avx2 = 2,
    /// AVX-512 F, BW, DQ and VL, with AVX2 and FMA.
    Avx512 = 3,
}

/// The detected level, 0 until the first call.
static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The best level this CPU supports, detected once.
pub(crate) fn detected_level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        3 => Level::Avx512,
        2 => Level::Avx2,
        1 => Level::Portable,
        _ => {
            let l = detect();
            LEVEL.store(l as u8, Ordering::Relaxed);
            l
        }
    }
}

fn detect() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        if avx2
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
        {
            return Level::Avx512;
        }
        if avx2 {
            return Level::Avx2;
        }
    }
    Level::Portable
}

/// Every level this CPU can run, lowest first (for tests and benchmarks).
#[cfg(test)]
pub(crate) fn available_levels() -> Vec<Level> {
    [Level::Portable, Level::Avx2, Level::Avx512]
        .into_iter()
        .filter(|&l| l <= detected_level())
        .collect()
}

/// Defines `avx512` and `avx2` copies of `$body` (a function inlined into
/// each, so its loops vectorize at that width) and `$vis fn $run(level, …)`,
/// which runs the copy for `level` capped at the detected one (the baseline
/// is `$body` itself). The one place the level is turned into code:
/// [`best_level!`] and `multiversion!` both stamp through it.
macro_rules! level_copies {
    (
        $vis:vis fn $run:ident<$($g:ident),*>($($arg:ident: $ty:ty),*) -> $ret:ty
        where { $($w:tt)* } => $body:path
    ) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
        fn avx512<$($g),*>($($arg: $ty),*) -> $ret where $($w)* {
            $body($($arg),*)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn avx2<$($g),*>($($arg: $ty),*) -> $ret where $($w)* {
            $body($($arg),*)
        }

        /// Runs the copy for `level`, capped at the detected level.
        #[inline(always)]
        $vis fn $run<$($g),*>(
            level: $crate::kernels::vmath::Level,
            $($arg: $ty),*
        ) -> $ret where $($w)* {
            use $crate::kernels::vmath::{detected_level, Level};
            match level.min(detected_level()) {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: the level is capped at `detected_level()`, which is
                // `Avx512` only when `is_x86_feature_detected!` found every
                // feature `avx512` enables (tested: `levels_follow_detection`).
                Level::Avx512 => unsafe { avx512($($arg),*) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as above: `Avx2` or higher was detected, so AVX2 and
                // FMA are present.
                Level::Avx2 => unsafe { avx2($($arg),*) },
                _ => $body($($arg),*),
            }
        }
    };
}

/// Defines a function whose body is compiled three times — for AVX-512, for
/// AVX2 with FMA, and for the baseline — and runs the copy for the level this
/// CPU has ([`detected_level`]). Meant for leaf loops: the body is inlined into
/// each copy (so its loops vectorize at that width), and so are small closures
/// it calls. (A closure handed to a target-feature function is compiled at the
/// baseline unless the optimizer inlines it, which it does not for large
/// ones: the level has to be chosen where the loop is.) Plain IEEE operations
/// round the same at every width and no fused multiply-add is formed, so the
/// result does not depend on the level.
///
/// ```ignore
/// best_level! {
///     /// Doc.
///     pub(crate) fn name<T, F>(x: &[T], f: F) -> () where { T: Copy, F: Fn(T) }
///     { for &v in x { f(v) } }
/// }
/// ```
macro_rules! best_level {
    (
        $(#[$m:meta])*
        $vis:vis fn $name:ident<$($g:ident),* $(,)?>($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty
        where { $($w:tt)* }
        $body:block
    ) => {
        $(#[$m])*
        #[inline(always)]
        $vis fn $name<$($g),*>($($arg: $ty),*) -> $ret where $($w)* {
            #[inline(always)]
            fn body<$($g),*>($($arg: $ty),*) -> $ret where $($w)* $body

            $crate::kernels::vmath::level_copies! {
                fn run<$($g),*>($($arg: $ty),*) -> $ret where { $($w)* } => body
            }
            run($crate::kernels::vmath::detected_level(), $($arg),*)
        }
    };
}
pub(crate) use {best_level, level_copies};

/// Stamps slice loops over scalar functions: `name(x, out)` writes `f(x[i])`
/// to `out[i]` (inlined into each level's compiled copy by `multiversion!`).
macro_rules! elementwise {
    ($t:ty: $($name:ident => $f:path),* $(,)?) => {$(
        #[inline(always)]
        fn $name(x: &[$t], out: &mut [$t]) {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = $f(v);
            }
        }
    )*};
}

/// Stamps, for each loop body, a module with the body compiled per level and
/// `run(level, args)`, which runs the version for `level` capped at the
/// detected one (through [`level_copies!`]).
macro_rules! multiversion {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) => $body:path;)*) => {$(
        pub(crate) mod $name {
            #[allow(unused_imports)]
            use super::*;

            $crate::kernels::vmath::level_copies! {
                pub(crate) fn run<>($($arg: $ty),*) -> () where {} => $body
            }
        }
    )*};
}

#[track_caller]
fn check_len(name: &str, what: &str, x: usize, out: usize) {
    assert!(
        x == out,
        "vmath::{name}: the {what} has {x} elements but the output has {out}"
    );
}

macro_rules! impl_vec_math {
    ($t:ty, $m:ident) => {
        impl VecMath for $t {
            fn exp(x: &[Self], out: &mut [Self]) {
                check_len("exp", "input", x.len(), out.len());
                $m::exp::run(detected_level(), x, out)
            }
            fn ln(x: &[Self], out: &mut [Self]) {
                check_len("ln", "input", x.len(), out.len());
                $m::ln::run(detected_level(), x, out)
            }
            fn sin(x: &[Self], out: &mut [Self]) {
                check_len("sin", "input", x.len(), out.len());
                $m::sin::run(detected_level(), x, out)
            }
            fn cos(x: &[Self], out: &mut [Self]) {
                check_len("cos", "input", x.len(), out.len());
                $m::cos::run(detected_level(), x, out)
            }
            fn tanh(x: &[Self], out: &mut [Self]) {
                check_len("tanh", "input", x.len(), out.len());
                $m::tanh::run(detected_level(), x, out)
            }
            fn sigmoid(x: &[Self], out: &mut [Self]) {
                check_len("sigmoid", "input", x.len(), out.len());
                $m::sigmoid::run(detected_level(), x, out)
            }
            fn sqrt(x: &[Self], out: &mut [Self]) {
                check_len("sqrt", "input", x.len(), out.len());
                $m::sqrt::run(detected_level(), x, out)
            }
            fn pow(x: &[Self], y: &[Self], out: &mut [Self]) {
                check_len("pow", "input", x.len(), out.len());
                check_len("pow", "exponent slice", y.len(), out.len());
                $m::pow::run(detected_level(), x, y, out)
            }
            fn pow_scalar(x: &[Self], y: Self, out: &mut [Self]) {
                check_len("pow_scalar", "input", x.len(), out.len());
                $m::pow_scalar::run(detected_level(), x, y, out)
            }
        }
    };
}

impl_vec_math!(f32, k32);
impl_vec_math!(f64, k64);

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

/// `1.5 * 2^52`: `v + MAGIC` rounds `v` (`|v| < 2^51`) to an integer `n`, held
/// in the low bits of the sum (`bits = MAGIC_BITS + n`, wrapping).
const MAGIC: f64 = 6755399441055744.0;
const MAGIC_BITS: u64 = 0x4338_0000_0000_0000;

/// `(n, bits)`: `v` rounded to the nearest integer (ties to even), as a float
/// and as the bits of `v + MAGIC`.
#[inline(always)]
fn round_int(v: f64) -> (f64, u64) {
    let t = v + MAGIC;
    (t - MAGIC, t.to_bits())
}

/// `n + 2048` from [`round_int`]'s bits, for `|n| < 2048`.
#[inline(always)]
fn biased(bits: u64) -> u64 {
    bits.wrapping_sub(MAGIC_BITS).wrapping_add(2048) & 0xfff
}

/// `2^n` for `n + 2048 = kp` and `-1022 <= n <= 1023`.
#[inline(always)]
fn pow2(kp: u64) -> f64 {
    f64::from_bits(kp.wrapping_sub(2048 - 1023) << 52)
}

/// `y * 2^n` for `n + 2048 = kp`, `-2044 <= n <= 2046`, in two exact steps
/// (`2^(n/2)` then `2^(n - n/2)`), so a subnormal result is rounded once.
#[inline(always)]
fn scale2(y: f64, kp: u64) -> f64 {
    let k1 = kp >> 1; // floor(n / 2) + 1024
    let s1 = f64::from_bits(k1.wrapping_sub(1) << 52);
    let s2 = f64::from_bits(kp.wrapping_sub(k1).wrapping_sub(1) << 52);
    y * s1 * s2
}

/// Horner's scheme (plain multiplications and additions).
#[inline(always)]
fn horner<const N: usize>(x: f64, c: &[f64; N]) -> f64 {
    let mut acc = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        acc = acc * x + c[i];
    }
    acc
}

/// `(integer, odd)` for `y`: whether it is an integer (infinities count as
/// even integers) and whether it is an odd one.
macro_rules! int_parity {
    ($name:ident, $t:ty, $two_p:expr) => {
        #[inline(always)]
        fn $name(y: $t) -> (bool, bool) {
            const TWO_P: $t = $two_p; // 2^(significand bits - 1)
            let a = y.abs();
            let t = a + TWO_P;
            let big = a >= TWO_P;
            let int = big || t - TWO_P == a;
            let low = if big { a.to_bits() } else { t.to_bits() } & 1;
            (int, int && a < 2.0 * TWO_P && low == 1)
        }
    };
}
int_parity!(int_parity, f64, 4503599627370496.0);
int_parity!(int_parity32, f32, 8388608.0);

/// C `pow`'s special cases, applied to `r = |x|^y` computed for finite,
/// nonzero `x` and `y` (and through `ln 0 = -inf`, `ln inf = inf`, which the
/// callers arrange, for zero and infinite `x` and infinite `y`).
macro_rules! pow_fixup {
    ($name:ident, $t:ident, $parity:ident) => {
        #[inline(always)]
        fn $name(x: $t, y: $t, r: $t) -> $t {
            let (int, odd) = $parity(y);
            let r = if odd && x.is_sign_negative() { -r } else { r };
            let r = if x < 0.0 && x > $t::NEG_INFINITY && !int && y.abs() < $t::INFINITY {
                $t::NAN
            } else {
                r
            };
            let r = if x.is_nan() || y.is_nan() { $t::NAN } else { r };
            let r = if x == -1.0 && y.abs() == $t::INFINITY {
                1.0
            } else {
                r
            };
            if y == 0.0 || x == 1.0 {
                1.0
            } else {
                r
            }
        }
    };
}
pow_fixup!(pow_fixup, f64, int_parity);
pow_fixup!(pow_fixup32, f32, int_parity32);

/// `ln x = e ln2 + ln m`: the parts `(e, f = m - 1)` for a positive normal
/// `x`, `m` in `[√½, √2)` (musl's reduction).
#[inline(always)]
fn log_reduce(x: f64) -> (f64, f64) {
    const SQRT_HALF_TOP: u64 = 0x3fe6_a09e_0000_0000;
    let u = x
        .to_bits()
        .wrapping_add(0x3ff0_0000_0000_0000 - SQRT_HALF_TOP);
    let eb = (u >> 52) & 0x7ff; // e + 1023
    let m = f64::from_bits((u & 0x000f_ffff_ffff_ffff) + SQRT_HALF_TOP);
    let e = f64::from_bits(0x4330_0000_0000_0000 | eb) - (4503599627370496.0 + 1023.0);
    (e, m - 1.0)
}

/// Fixes `ln`'s special values: `r` is the value computed for positive finite
/// `x`.
#[inline(always)]
fn log_fixup(x: f64, r: f64) -> f64 {
    let r = if x < f64::INFINITY { r } else { x }; // inf, NaN
    let r = if x == 0.0 { f64::NEG_INFINITY } else { r };
    if x < 0.0 {
        f64::NAN
    } else {
        r
    }
}

// ---------------------------------------------------------------------------
// f32 sin, cos, pow: evaluated in f64, rounded once
// ---------------------------------------------------------------------------

mod f32_impl {
    use super::*;
    use std::f64::consts::{FRAC_2_PI, LN_2, LOG2_E};

    /// `(e^r - 1 - r) / r²` on `|r| <= ln2/2`, error 2^-29.4 (2^-32 in `e^r`).
    const EXP_P: [f64; 6] = [
        0.5000000013457727,
        0.16666666681614256,
        0.04166646500604005,
        0.008333310934448869,
        0.0013933641031986701,
        0.00019890980869750327,
    ];
    /// `(2 atanh(√z)/√z - 2) / z` on `z <= (3 - 2√2)²`, error 2^-37.
    const LOG_R: [f64; 5] = [
        0.6666666666737509,
        0.3999999879733759,
        0.2857175453591449,
        0.22191400830308503,
        0.19362653714202008,
    ];
    /// `(sin √z - √z) / z^1.5` on `z <= (π/4)²`, error 2^-35.
    const SIN_S: [f64; 4] = [
        -0.1666666666385529,
        0.008333331874710208,
        -0.00019840086735384846,
        2.724992580305979e-06,
    ];
    /// `(cos √z - 1 + z/2) / z²` on `z <= (π/4)²`, error 2^-38.6.
    const COS_C: [f64; 4] = [
        0.0416666666643212,
        -0.001388888767201679,
        2.480060037715673e-05,
        -2.730095920390147e-07,
    ];
    /// π/2 = PIO2_1 + PIO2_1T; PIO2_1 has 33 bits, so `n * PIO2_1` is exact
    /// for `n < 2^20`.
    const PIO2_1: f64 = 1.570_796_326_734_125_6;
    const PIO2_1T: f64 = 6.077_100_506_506_192e-11;
    /// `|x|` from which `sin`/`cos` use the std functions: 2^20.
    pub(super) const TRIG_LIMIT_BITS: u32 = 0x4980_0000;

    /// `(sin x, cos x)` for `|x| < 2^20`; others give garbage (no UB).
    #[inline(always)]
    fn sincos(x: f32, cos: bool) -> f32 {
        let v = x as f64;
        let (nf, nb) = round_int(v * FRAC_2_PI);
        let r = (v - nf * PIO2_1) - nf * PIO2_1T;
        let z = r * r;
        let s = r + r * z * horner(z, &SIN_S);
        let s = if r == 0.0 { r } else { s }; // sin(-0) = -0
        let c = (1.0 - 0.5 * z) + z * z * horner(z, &COS_C);
        // sin: q = 0, 1, 2, 3 -> s, c, -s, -c; cos: c, -s, -c, s.
        let q = nb.wrapping_add(cos as u64);
        let res = if q & 1 == 0 { s } else { c };
        let neg = (q & 2) << 62;
        f64::from_bits(res.to_bits() ^ neg) as f32
    }

    /// `sin` or `cos` over `x`, then the elements with `|x| >= 2^20` (or
    /// non-finite) again with the std function.
    #[inline(always)]
    fn trig(x: &[f32], out: &mut [f32], cos: bool) {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = sincos(v, cos);
        }
        let max = x.iter().fold(0u32, |m, v| m.max(v.to_bits() & 0x7fff_ffff));
        if max >= TRIG_LIMIT_BITS {
            for (o, &v) in out.iter_mut().zip(x) {
                if v.to_bits() & 0x7fff_ffff >= TRIG_LIMIT_BITS {
                    let v = v as f64;
                    *o = if cos { v.cos() } else { v.sin() } as f32;
                }
            }
        }
    }

    #[inline(always)]
    pub(super) fn sin_slice(x: &[f32], out: &mut [f32]) {
        trig(x, out, false)
    }

    #[inline(always)]
    pub(super) fn cos_slice(x: &[f32], out: &mut [f32]) {
        trig(x, out, true)
    }

    #[inline(always)]
    pub(super) fn pow(x32: f32, y32: f32) -> f32 {
        let (x, y) = (x32 as f64, y32 as f64);
        let a = x.abs();
        // log2|x|, with ±inf for 0 and inf.
        let (e, f) = log_reduce(a);
        let s = f / (2.0 + f);
        let z = s * s;
        let l = e + (2.0 * s + s * z * horner(z, &LOG_R)) * LOG2_E;
        let l = if a == 0.0 { f64::NEG_INFINITY } else { l };
        let l = if a == f64::INFINITY { a } else { l };
        let w = y * l;
        let w = if w > 200.0 { 200.0 } else { w };
        let w = if w < -200.0 { -200.0 } else { w };
        let (kf, kb) = round_int(w);
        let r = (w - kf) * LN_2;
        let p = (1.0 + (r + r * r * horner(r, &EXP_P))) * pow2(biased(kb));
        // The special cases in f32 (twice the lanes): the same results.
        pow_fixup32(x32, y32, p as f32)
    }
}

// ---------------------------------------------------------------------------
// f32 exp, ln, tanh, sigmoid: in f32 (16 lanes per AVX-512 vector)
// ---------------------------------------------------------------------------

/// `exp`, `ln`, `tanh` and `sigmoid` for `f32`, evaluated in `f32`; `tanh`
/// carries `1 + e^x` and the denominator as two floats, so that the
/// division's rounding is the only large error before the last one (within 1
/// ulp on every input: `exhaustive_f32`; `sigmoid` within 2).
mod f32_native {
    /// `1.5 * 2^23`: `v + MAGIC` rounds `v` (`|v| < 2^22`) to an integer held
    /// in the low bits of the sum.
    const MAGIC: f32 = 12582912.0;
    const MAGIC_BITS: u32 = 0x4b40_0000;
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    /// ln2 = L1 + L2, L1 with 15 bits (`n * L1` exact for `|n| < 512`).
    const L1: f32 = 0.693_145_75;
    const L2: f32 = 1.428_606_8e-6;
    /// `(e^r - 1 - r) / r²` on `|r| <= ln2/2`, error 2^-29.4.
    const EXP_P: [f32; 6] = [
        0.5,
        0.166_666_67,
        0.041_666_465,
        0.008_333_311,
        0.001_393_364,
        0.000_198_909_8,
    ];
    /// `(tanh √z - √z) / z^1.5` on `z <= 0.55²`, relative error 2^-29.7.
    const TANH_P: [f32; 6] = [
        -0.333_333_33,
        0.133_333_24,
        -0.053_964_7,
        0.021_818_45,
        -0.008_526_333,
        0.002_526_390_7,
    ];

    #[inline(always)]
    fn horner<const N: usize>(x: f32, c: &[f32; N]) -> f32 {
        let mut acc = c[N - 1];
        let mut i = N - 1;
        while i > 0 {
            i -= 1;
            acc = acc * x + c[i];
        }
        acc
    }

    /// `y * 2^n` for `kp = n + 256`, `-252 <= n <= 254`, in two exact steps
    /// so that a subnormal result is rounded once.
    #[inline(always)]
    fn scale2(y: f32, kp: u32) -> f32 {
        let k1 = kp >> 1; // floor(n / 2) + 128
        let s1 = f32::from_bits(k1.wrapping_sub(1) << 23);
        let s2 = f32::from_bits(kp.wrapping_sub(k1).wrapping_sub(1) << 23);
        y * s1 * s2
    }

    /// `e^x = 2^n (1 + s)`, `(n + 256, s)`, for `|x| <= 110`; `s` is within
    /// 2^-25 of `e^r - 1` (`r = x - n ln2`, `|r| <= ln2/2`).
    #[inline(always)]
    fn exp_parts(x: f32) -> (u32, f32) {
        let t = x * LOG2E + MAGIC;
        let kf = t - MAGIC;
        let kp = t.to_bits().wrapping_sub(MAGIC_BITS).wrapping_add(256) & 0x1ff;
        let r_hi = x - kf * L1; // exact
        let r_lo = kf * L2;
        let r = r_hi - r_lo;
        (kp, r_hi + (r * r * horner(r, &EXP_P) - r_lo))
    }

    /// `(e^r - 1 - r) / r²` on `|r| <= ln2/2`, error 2^-23.9: enough for
    /// `exp` and `sigmoid` (within 1 and 2 ulp on every input), not for
    /// `tanh`, which uses [`EXP_P`] and the two-part reduction.
    const EXP_P4: [f32; 5] = [0.5, 0.16666578, 0.041666556, 0.008363173, 0.0013926176];

    #[inline(always)]
    pub(super) fn exp(x: f32) -> f32 {
        let x = if x > 89.0 { 89.0 } else { x };
        let x = if x < -104.0 { -104.0 } else { x };
        let t = x * LOG2E + MAGIC;
        let kf = t - MAGIC;
        let kp = t.to_bits().wrapping_sub(MAGIC_BITS).wrapping_add(256) & 0x1ff;
        let r = (x - kf * L1) - kf * L2;
        scale2(1.0 + (r + r * r * horner(r, &EXP_P4)), kp)
    }

    /// `1 + s = p_hi + p_lo` exactly, `|s| < 1` (fast two-sum).
    #[inline(always)]
    fn one_plus(s: f32) -> (f32, f32) {
        let p_hi = 1.0 + s;
        (p_hi, s - (p_hi - 1.0))
    }

    /// `e^x` for `x <= 0` with fused multiply-adds (`mul_add` rounds once on
    /// every level: an instruction with AVX2 and AVX-512, a correctly rounded
    /// library call on the portable level), for `sigmoid`.
    #[inline(always)]
    fn exp_nonpositive_fused(x: f32) -> f32 {
        let x = if x < -104.0 { -104.0 } else { x };
        let t = x.mul_add(LOG2E, MAGIC);
        let kf = t - MAGIC;
        let kp = t.to_bits().wrapping_sub(MAGIC_BITS).wrapping_add(256) & 0x1ff;
        let r = (-kf).mul_add(L2, (-kf).mul_add(L1, x));
        let mut p = EXP_P4[4];
        for &c in EXP_P4[..4].iter().rev() {
            p = p.mul_add(r, c);
        }
        scale2(1.0 + (r * r).mul_add(p, r), kp)
    }

    #[inline(always)]
    pub(super) fn sigmoid(x: f32) -> f32 {
        // E = e^-|x| in (0, 1] (never overflows; subnormal where the result
        // is): 1/(1 + E) for x >= 0, E/(1 + E) below, one division either
        // way. Within 2 ulp (`exhaustive_f32`); PyTorch's own float sigmoid
        // is 2.3 ulp off in [-80, 30] and further near underflow.
        let e = exp_nonpositive_fused(-x.abs());
        let n = if x < 0.0 { e } else { 1.0 };
        n / (1.0 + e)
    }

    #[inline(always)]
    pub(super) fn tanh(x: f32) -> f32 {
        let a = x.abs();
        // Below 0.55: odd polynomial.
        let z = a * a;
        let small = a + a * z * horner(z, &TANH_P);
        // Above: 1 - 2/(1 + E), E = e^{2a} = 2^n (p_hi + p_lo), 1 + E as
        // d_hi + d_lo.
        let b = if a > 10.0 { 10.0 } else { a };
        let (kp, s) = exp_parts(2.0 * b);
        let (p_hi, p_lo) = one_plus(s);
        let sc = f32::from_bits(kp.wrapping_sub(256 - 127) << 23);
        let e_hi = p_hi * sc;
        let d_hi = 1.0 + e_hi;
        let d_lo = (1.0 - (d_hi - e_hi)) + p_lo * sc;
        let q0 = 2.0 / d_hi;
        let q = q0 - 0.5 * q0 * q0 * d_lo;
        let large = 1.0 - q;
        let res = if a < 0.55 { small } else { large };
        res.copysign(x)
    }

    // musl's logf (from FreeBSD): ln2 = LN2_HI + LN2_LO and
    // `|(ln(1+s) - ln(1-s))/s - Lg(s)| < 2^-34.24`.
    const LN2_HI: f32 = 6.931_381e-1;
    const LN2_LO: f32 = 9.058_001e-6;
    const LG1: f32 = 11184810.0 / 16777216.0;
    const LG2: f32 = 13422099.0 / 33554432.0;
    const LG3: f32 = 9562606.0 / 33554432.0;
    const LG4: f32 = 16293414.0 / 67108864.0;

    #[inline(always)]
    pub(super) fn ln(x: f32) -> f32 {
        let sub = x < f32::MIN_POSITIVE;
        let v = if sub { x * 33554432.0 } else { x };
        // x = 2^k m, m in [√½, √2).
        let ix = v.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
        let kb = ((ix >> 23) & 0xff) as i32 - 127;
        let k = if sub { kb - 25 } else { kb };
        let m = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3);
        let f = m - 1.0;
        let s = f / (2.0 + f);
        let z = s * s;
        let w = z * z;
        let t1 = w * (LG2 + w * LG4);
        let t2 = z * (LG1 + w * LG3);
        let r = t2 + t1;
        let hfsq = 0.5 * f * f;
        let dk = k as f32;
        let res = s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
        let res = if x < f32::INFINITY { res } else { x }; // inf, NaN
        let res = if x == 0.0 { f32::NEG_INFINITY } else { res };
        if x < 0.0 {
            f32::NAN
        } else {
            res
        }
    }
}

mod k32 {
    use super::f32_impl as m;
    use super::f32_native as n;

    elementwise! {
        f32: exp_b => n::exp, ln_b => n::ln, tanh_b => n::tanh, sigmoid_b => n::sigmoid,
        sqrt_b => f32::sqrt
    }
    #[inline(always)]
    fn pow_b(x: &[f32], y: &[f32], out: &mut [f32]) {
        for ((o, &a), &b) in out.iter_mut().zip(x).zip(y) {
            *o = m::pow(a, b);
        }
    }
    #[inline(always)]
    fn pow_scalar_b(x: &[f32], y: f32, out: &mut [f32]) {
        for (o, &a) in out.iter_mut().zip(x) {
            *o = m::pow(a, y);
        }
    }

    multiversion! {
        fn exp(x: &[f32], out: &mut [f32]) => exp_b;
        fn ln(x: &[f32], out: &mut [f32]) => ln_b;
        fn sin(x: &[f32], out: &mut [f32]) => m::sin_slice;
        fn cos(x: &[f32], out: &mut [f32]) => m::cos_slice;
        fn tanh(x: &[f32], out: &mut [f32]) => tanh_b;
        fn sigmoid(x: &[f32], out: &mut [f32]) => sigmoid_b;
        fn sqrt(x: &[f32], out: &mut [f32]) => sqrt_b;
        fn pow(x: &[f32], y: &[f32], out: &mut [f32]) => pow_b;
        fn pow_scalar(x: &[f32], y: f32, out: &mut [f32]) => pow_scalar_b;
    }
}

// ---------------------------------------------------------------------------
// f64
// ---------------------------------------------------------------------------

mod f64_impl {
    use super::*;
    use std::f64::consts::{FRAC_2_PI, LOG2_E};

    /// fdlibm's split of ln2: `LN2_HI` has 32 bits, so `n * LN2_HI` is exact
    /// for `|n| < 2^21`.
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

    /// `(e^r - 1 - r) / r²` on `|r| <= ln2/2`, error 2^-58.4.
    const EXP_P: [f64; 11] = [
        0.5,
        0.1666666666666667,
        0.04166666666666667,
        0.008333333333326141,
        0.0013888888888883752,
        0.00019841269874800493,
        2.4801587325533363e-05,
        2.7557255425746435e-06,
        2.7557273661348637e-07,
        2.510520637395701e-08,
        2.0914679376583935e-09,
    ];

    /// `e^v = 2^n (1 + s + s_lo)`, `(n + 2048, s, s_lo)` for `|v| <= 1400`
    /// (`s_lo` is the last addition's rounding error).
    #[inline(always)]
    pub(super) fn exp_parts(v: f64) -> (u64, f64, f64) {
        let (kf, kb) = round_int(v * LOG2_E);
        let r_hi = v - kf * LN2_HI; // exact
        let r_lo = kf * LN2_LO;
        let r = r_hi - r_lo;
        let c = r * r * horner(r, &EXP_P) - r_lo;
        // two-sum r_hi + c
        let s = r_hi + c;
        let bb = s - r_hi;
        (biased(kb), s, (r_hi - (s - bb)) + (c - bb))
    }

    #[inline(always)]
    pub(super) fn exp(x: f64) -> f64 {
        let v = if x > 720.0 { 720.0 } else { x };
        let v = if v < -760.0 { -760.0 } else { v };
        let (kp, s, _) = exp_parts(v);
        scale2(1.0 + s, kp)
    }

    const LG1: f64 = 6.666_666_666_666_735e-1;
    const LG2: f64 = 3.999_999_999_940_942e-1;
    const LG3: f64 = 2.857_142_874_366_239e-1;
    const LG4: f64 = 2.222_219_843_214_978_4e-1;
    const LG5: f64 = 1.818_357_216_161_805e-1;
    const LG6: f64 = 1.531_383_769_920_937_3e-1;
    const LG7: f64 = 1.479_819_860_511_658_6e-1;

    /// musl's (fdlibm's) `log`, error below 1 ulp.
    #[inline(always)]
    pub(super) fn ln(x: f64) -> f64 {
        const TWO54: f64 = 18014398509481984.0;
        let sub = x < f64::MIN_POSITIVE;
        let v = if sub { x * TWO54 } else { x };
        let (e, f) = log_reduce(v);
        let dk = if sub { e - 54.0 } else { e };
        let hfsq = 0.5 * f * f;
        let s = f / (2.0 + f);
        let z = s * s;
        let w = z * z;
        let t1 = w * (LG2 + w * (LG4 + w * LG6));
        let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
        let r = t2 + t1;
        let res = s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
        log_fixup(x, res)
    }

    // fdlibm's π/2 = PIO2_1 + PIO2_2 + PIO2_3 + PIO2_3T, the first three
    // with 33 bits (products with n < 2^20 are exact).
    const PIO2_1: f64 = 1.570_796_326_734_125_6;
    const PIO2_2: f64 = 6.077_100_506_303_966e-11;
    const PIO2_3: f64 = 2.022_266_248_711_166_5e-21;
    const PIO2_3T: f64 = 8.478_427_660_368_9e-32;
    /// `|x|` from which `sin`/`cos` use the std functions: 2^20.
    pub(super) const TRIG_LIMIT_BITS: u64 = 0x4130_0000_0000_0000;

    const S1: f64 = -1.666_666_666_666_663_2e-01;
    const S2: f64 = 8.333_333_333_322_49e-03;
    const S3: f64 = -1.984_126_982_985_795e-04;
    const S4: f64 = 2.755_731_370_707_006_8e-06;
    const S5: f64 = -2.505_076_025_340_686_3e-08;
    const S6: f64 = 1.589_690_995_211_55e-10;
    const C1: f64 = 4.166_666_666_666_66e-2;
    const C2: f64 = -1.388_888_888_887_411e-03;
    const C3: f64 = 2.480_158_728_947_673e-05;
    const C4: f64 = -2.755_731_435_139_066_3e-07;
    const C5: f64 = 2.087_572_321_298_175e-09;
    const C6: f64 = -1.135_964_755_778_819_5e-11;

    /// fdlibm's `__kernel_sin(x, y, 1)`: `sin(x + y)`, `|x| <= π/4`.
    #[inline(always)]
    fn ksin(x: f64, y: f64) -> f64 {
        let z = x * x;
        let w = z * z;
        let r = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
        let v = z * x;
        x - ((z * (0.5 * y - v * r) - y) - v * S1)
    }

    /// fdlibm's `__kernel_cos(x, y)`: `cos(x + y)`, `|x| <= π/4`.
    #[inline(always)]
    fn kcos(x: f64, y: f64) -> f64 {
        let z = x * x;
        let w = z * z;
        let r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
        let hz = 0.5 * z;
        let w = 1.0 - hz;
        w + (((1.0 - w) - hz) + (z * r - x * y))
    }

    /// `sin x` or `cos x` for `|x| < 2^20`; others give garbage (no UB).
    #[inline(always)]
    fn sincos(x: f64, cos: bool) -> f64 {
        // fdlibm's medium-size reduction with all three rounds: each round's
        // subtraction error is recovered exactly (fast two-sum).
        let (nf, nb) = round_int(x * FRAC_2_PI);
        let t = x - nf * PIO2_1; // exact
        let w2 = nf * PIO2_2;
        let r2 = t - w2;
        let e2 = (t - r2) - w2; // the rounding error of `t - w2`, exactly
        let w3 = nf * PIO2_3;
        let r = r2 - w3;
        let e3 = (r2 - r) - w3;
        // x - n π/2 = r - w, to about 150 bits
        let w = nf * PIO2_3T - e3 - e2;
        let y0 = r - w;
        let y1 = (r - y0) - w;
        let s = ksin(y0, y1);
        let c = kcos(y0, y1);
        let q = nb.wrapping_add(cos as u64);
        let res = if q & 1 == 0 { s } else { c };
        f64::from_bits(res.to_bits() ^ ((q & 2) << 62))
    }

    #[inline(always)]
    fn trig(x: &[f64], out: &mut [f64], cos: bool) {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = sincos(v, cos);
        }
        let max = x
            .iter()
            .fold(0u64, |m, v| m.max(v.to_bits() & 0x7fff_ffff_ffff_ffff));
        if max >= TRIG_LIMIT_BITS {
            for (o, &v) in out.iter_mut().zip(x) {
                if v.to_bits() & 0x7fff_ffff_ffff_ffff >= TRIG_LIMIT_BITS {
                    *o = if cos { v.cos() } else { v.sin() };
                }
            }
        }
    }

    #[inline(always)]
    pub(super) fn sin_slice(x: &[f64], out: &mut [f64]) {
        trig(x, out, false)
    }

    #[inline(always)]
    pub(super) fn cos_slice(x: &[f64], out: &mut [f64]) {
        trig(x, out, true)
    }

    /// `(tanh √z - √z) / z^1.5` on `z <= 0.625²`, error 2^-55.6.
    const TANH_P: [f64; 12] = [
        -0.3333333333333333,
        0.13333333333333042,
        -0.05396825396789699,
        0.021869488519008305,
        -0.008863235103240878,
        0.0035921217511549622,
        -0.0014557754120478055,
        0.0005896606577757043,
        -0.0002375906496055562,
        9.257116129556769e-05,
        -3.12011014257974e-05,
        6.485163482793113e-06,
    ];

    #[inline(always)]
    pub(super) fn tanh(x: f64) -> f64 {
        let a = x.abs();
        // Small: odd polynomial.
        let z = a * a;
        let small = a + a * z * horner(z, &TANH_P);
        // Large: 1 - 2/(1 + E), E = e^{2a} = 2^n (p_hi + p_lo), 1 + E as
        // d_hi + d_lo.
        let b = if a > 40.0 { 40.0 } else { a };
        let (kp, s, s_lo) = exp_parts(2.0 * b);
        let p_hi = 1.0 + s;
        let p_lo = (s - (p_hi - 1.0)) + s_lo;
        let sc = pow2(kp);
        let e_hi = p_hi * sc;
        let d_hi = 1.0 + e_hi;
        let d_lo = (1.0 - (d_hi - e_hi)) + p_lo * sc;
        let q0 = 2.0 / d_hi;
        // 1 - q0 = t + t_lo exactly (fast two-sum), then the corrections.
        let t = 1.0 - q0;
        let t_lo = (1.0 - t) - q0;
        let large = t + (t_lo + 0.5 * q0 * q0 * d_lo);
        let res = if a < 0.625 { small } else { large };
        res.copysign(x)
    }

    #[inline(always)]
    pub(super) fn sigmoid(x: f64) -> f64 {
        // 1/(1 + E), E = e^{-x} = 2^n p: = 2^-n / (2^-n + p).
        let u = -x;
        let u = if u < -40.0 { -40.0 } else { u };
        let u = if u > 760.0 { 760.0 } else { u };
        let (kp, s, s_lo) = exp_parts(u);
        let p_hi = 1.0 + s;
        let p_lo = (s - (p_hi - 1.0)) + s_lo;
        // 2^-n, or 0 when it is below the normal range (then negligible).
        let a = if kp < 2048 + 1023 {
            f64::from_bits(3071u64.wrapping_sub(kp) << 52)
        } else {
            0.0
        };
        // two-sum a + p_hi
        let d_hi = a + p_hi;
        let bb = d_hi - a;
        let d_lo = ((a - (d_hi - bb)) + (p_hi - bb)) + p_lo;
        let q0 = 1.0 / d_hi;
        let q = q0 - q0 * q0 * d_lo;
        scale2(q, 4096u64.wrapping_sub(kp))
    }
}

mod k64 {
    use super::f64_impl as m;
    use super::pow_tab;

    elementwise! {
        f64: exp_b => m::exp, ln_b => m::ln, tanh_b => m::tanh, sigmoid_b => m::sigmoid,
        sqrt_b => f64::sqrt
    }

    multiversion! {
        fn exp(x: &[f64], out: &mut [f64]) => exp_b;
        fn ln(x: &[f64], out: &mut [f64]) => ln_b;
        fn sin(x: &[f64], out: &mut [f64]) => m::sin_slice;
        fn cos(x: &[f64], out: &mut [f64]) => m::cos_slice;
        fn tanh(x: &[f64], out: &mut [f64]) => tanh_b;
        fn sigmoid(x: &[f64], out: &mut [f64]) => sigmoid_b;
        fn sqrt(x: &[f64], out: &mut [f64]) => sqrt_b;
        fn pow(x: &[f64], y: &[f64], out: &mut [f64]) => pow_tab::pow_slice;
        fn pow_scalar(x: &[f64], y: f64, out: &mut [f64]) => pow_tab::pow_scalar_slice;
    }
}

mod pow_tables;

/// `|x|^y` for `f64` as `e^{y ln|x|}`: `ln|x|` as a double and a tail, their
/// product with `y` as two doubles, and `e^{hi + lo}` (the scheme of ARM's
/// optimized-routines `pow`, without fused multiply-adds; error about 0.52
/// ulp there).
mod pow_tab {
    use super::pow_tables::*;
    use super::{horner, pow_fixup, round_int, scale2, MAGIC_BITS};

    /// The subintervals of the log table start at `asdouble(OFF)` (≈ 0.7055).
    const OFF: u64 = 0x3fe6_9555_0000_0000;
    /// Keeps the sign, the exponent and the top 25 bits of the significand.
    const SPLIT: u64 = !0u64 << 27;
    const TWO52: f64 = 4503599627370496.0;
    const INV_LN2N: f64 = 184.664_965_233_787_3; // 128 / ln2
    /// Elements per round of table lookups.
    const CHUNK: usize = 64;

    /// `(bits of a, normalized: subnormals scaled by 2^52 with the exponent
    /// lowered by 52; bits minus OFF)`.
    #[inline(always)]
    fn ln_bits(a: f64) -> (u64, u64) {
        let ix = if a < f64::MIN_POSITIVE {
            (a * TWO52).to_bits().wrapping_sub(52 << 52)
        } else {
            a.to_bits()
        };
        (ix, ix.wrapping_sub(OFF))
    }

    /// The log table's row for `a`: `a = 2^k z`, `z` in
    /// `[asdouble(OFF), 2 asdouble(OFF))`, in subinterval `i`.
    #[inline(always)]
    fn ln_row(a: f64) -> usize {
        ((ln_bits(a).1 >> 45) & 127) as usize
    }

    /// `ln a = hi + lo` for positive finite `a` (garbage otherwise, no UB),
    /// given `LOG_T[ln_row(a)]`.
    #[inline(always)]
    fn ln_hilo(a: f64, (invc, logc, logctail): (f64, f64, f64)) -> (f64, f64) {
        let (ix, tmp) = ln_bits(a);
        let kb = (tmp >> 52).wrapping_add(2048) & 0xfff; // k + 2048
        let kd = f64::from_bits(0x4330_0000_0000_0000 | kb) - (TWO52 + 2048.0);
        let iz = ix.wrapping_sub(tmp & (0xfff << 52));
        let z = f64::from_bits(iz);
        // r = z/c - 1 (exactly representable) as rhi + rlo: rhi, rlo and
        // rhi² are exact.
        let zhi = f64::from_bits(iz.wrapping_add(1 << 31) & (!0u64 << 32));
        let zlo = z - zhi;
        let rhi = zhi * invc - 1.0;
        let rlo = zlo * invc;
        let r = rhi + rlo;
        // k ln2 + ln c + r - r²/2 + r³ Q(r), the leading terms with their
        // rounding errors.
        let t1 = kd * LN2_HI + logc; // exact
        let t2 = t1 + r;
        let lo1 = kd * LN2_LO + logctail;
        let lo2 = t1 - t2 + r;
        let ar = -0.5 * r;
        let arhi = -0.5 * rhi;
        let arhi2 = rhi * arhi;
        let hi = t2 + arhi2;
        let lo3 = rlo * (ar + arhi);
        let lo4 = t2 - hi + arhi2;
        let p = r * r * r * horner(r, &LOG_Q);
        let lo = lo1 + lo2 + lo3 + lo4 + p;
        let y = hi + lo;
        (y, hi - y + lo)
    }

    /// `y ln a = ehi + elo` (`ehi` exact), with `ln 0 = -inf` and
    /// `ln inf = inf`, given `LOG_T[ln_row(a)]`.
    #[inline(always)]
    fn y_ln(a: f64, y: f64, row: (f64, f64, f64)) -> (f64, f64) {
        let (hi, lo) = ln_hilo(a, row);
        let edge = a == 0.0 || a == f64::INFINITY;
        let hi = if a == 0.0 { f64::NEG_INFINITY } else { hi };
        let hi = if a == f64::INFINITY { a } else { hi };
        let lo = if edge { 0.0 } else { lo };
        let yhi = f64::from_bits(y.to_bits() & SPLIT);
        let ylo = y - yhi;
        let lhi = f64::from_bits(hi.to_bits() & SPLIT);
        let llo = hi - lhi + lo;
        (yhi * lhi, ylo * lhi + y * llo)
    }

    /// `e^(x + xtail)`'s argument clamped to `[-1000, 1000]` (0 and inf
    /// beyond), and `(k + 2048) * 128 + i` for `x = (128 k + i) ln2/128 + r`.
    #[inline(always)]
    fn exp_reduce(x: f64, xtail: f64) -> (f64, f64, f64, u64) {
        let xtail = if x.abs() <= 1000.0 { xtail } else { 0.0 };
        let x = if x > 1000.0 { 1000.0 } else { x };
        let x = if x < -1000.0 { -1000.0 } else { x };
        let (kd, kb) = round_int(x * INV_LN2N);
        let nb = kb.wrapping_sub(MAGIC_BITS).wrapping_add(1 << 20) & ((1 << 21) - 1);
        (x, xtail, kd, nb)
    }

    /// The exp table's row for `e^(x + xtail)`.
    #[inline(always)]
    fn exp_row(x: f64, xtail: f64) -> usize {
        (exp_reduce(x, xtail).3 & 127) as usize
    }

    /// `e^(x + xtail)`, `|xtail|` small against `|x|`, given
    /// `EXP_T[exp_row(x, xtail)]`.
    #[inline(always)]
    fn exp_hilo(x: f64, xtail: f64, (sbits, tail): (u64, f64)) -> f64 {
        let (x, xtail, kd, nb) = exp_reduce(x, xtail);
        let r = x - kd * LN2N_HI - kd * LN2N_LO;
        let r = r + xtail;
        let kp = (nb >> 7).wrapping_sub((1 << 13) - 2048); // k + 2048
        let r2 = r * r;
        let tmp = tail + r + r2 * (EXP_P[0] + r * EXP_P[1]) + r2 * r2 * (EXP_P[2] + r * EXP_P[3]);
        let scale = f64::from_bits(sbits);
        scale2(scale + scale * tmp, kp)
    }

    /// The table rows of a chunk, read in their own loops so that the
    /// arithmetic loops vectorize where gathers are slow or missing (AVX2,
    /// SSE2) as well.
    struct Rows {
        invc: [f64; CHUNK],
        logc: [f64; CHUNK],
        logctail: [f64; CHUNK],
        hi: [f64; CHUNK],
        lo: [f64; CHUNK],
        sbits: [u64; CHUNK],
        tail: [f64; CHUNK],
    }

    /// `pow(x[i], y[i])` for one chunk (`xs.len() <= CHUNK`).
    #[inline(always)]
    fn pow_chunk(t: &mut Rows, xs: &[f64], ys: impl Iterator<Item = f64> + Clone, os: &mut [f64]) {
        for (i, &v) in xs.iter().enumerate() {
            let (invc, logc, logctail) = LOG_T[ln_row(v.abs())];
            t.invc[i] = invc;
            t.logc[i] = logc;
            t.logctail[i] = logctail;
        }
        let rows = t.invc.iter().zip(&t.logc).zip(&t.logctail);
        let his = t.hi.iter_mut().zip(t.lo.iter_mut());
        for ((((hi, lo), ((&invc, &logc), &logctail)), &v), y) in
            his.zip(rows).zip(xs).zip(ys.clone())
        {
            (*hi, *lo) = y_ln(v.abs(), y, (invc, logc, logctail));
        }
        for i in 0..xs.len() {
            let (sbits, tail) = EXP_T[exp_row(t.hi[i], t.lo[i])];
            t.sbits[i] = sbits;
            t.tail[i] = tail;
        }
        let e = t.hi.iter().zip(&t.lo).zip(t.sbits.iter().zip(&t.tail));
        for (((o, &v), y), ((&hi, &lo), (&sbits, &tail))) in os.iter_mut().zip(xs).zip(ys).zip(e) {
            *o = pow_fixup(v, y, exp_hilo(hi, lo, (sbits, tail)));
        }
    }

    fn rows() -> Rows {
        Rows {
            invc: [0.0; CHUNK],
            logc: [0.0; CHUNK],
            logctail: [0.0; CHUNK],
            hi: [0.0; CHUNK],
            lo: [0.0; CHUNK],
            sbits: [0; CHUNK],
            tail: [0.0; CHUNK],
        }
    }

    #[inline(always)]
    pub(super) fn pow_slice(x: &[f64], y: &[f64], out: &mut [f64]) {
        let mut t = rows();
        for ((xs, ys), os) in x
            .chunks(CHUNK)
            .zip(y.chunks(CHUNK))
            .zip(out.chunks_mut(CHUNK))
        {
            pow_chunk(&mut t, xs, ys.iter().copied(), os);
        }
    }

    #[inline(always)]
    pub(super) fn pow_scalar_slice(x: &[f64], y: f64, out: &mut [f64]) {
        let mut t = rows();
        for (xs, os) in x.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            pow_chunk(&mut t, xs, std::iter::repeat(y), os);
        }
    }
}

#[cfg(test)]
mod tests;
