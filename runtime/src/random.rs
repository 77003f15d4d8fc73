//! Random numbers as PyTorch's CPU generator makes them (data and arithmetic
//! only; the `Generator` handle lives in `tensor`, the kernels in `kernels`).
//!
//! Facts, from PyTorch's sources (`aten/src/ATen/core/MT19937RNGEngine.h`,
//! `CPUGeneratorImpl.cpp`, `TransformationHelper.h`, `DistributionsHelper.h`,
//! `native/cpu/DistributionTemplates.h`) and checked number for number against
//! PyTorch 2.15 (`runtime/tests/random_ops.rs`):
//!
//! - the engine is the standard 32-bit Mersenne Twister (mt19937) seeded with
//!   the low 32 bits of the 64-bit seed by the standard recurrence
//!   (`1812433253 * (s ^ (s >> 30)) + i`);
//! - `random()` is one 32-bit draw; `random64()` is two, the first one the
//!   high half;
//! - a uniform float in `[0, 1)` keeps the low 24 bits of `random()` times
//!   2^-24 (a double: the low 53 bits of `random64()` times 2^-53);
//! - reseeding forgets the cached second normal samples;
//! - `normal_` on CPU: a contiguous tensor of at least 16 elements goes through
//!   `normal_fill` (every element a uniform of the tensor's dtype, Box–Muller
//!   over each block of 16 — `x[j]`, `x[j + 8]` from `u1 = 1 - x[j]`,
//!   `u2 = x[j + 8]` — and the last 16 drawn again and transformed when the
//!   length is not a multiple of 16); float32 there takes the AVX2 build's
//!   vector path (`normal_fill_16_AVX2`, Cephes `log`/`sincos` of
//!   `avx_mathfun.h`), float64 the scalar one (libm `log`, `cos`, `sin`). Any
//!   other tensor is filled element by element from
//!   `normal_distribution<double>` (`u1`, `u2` uniform doubles,
//!   `r = sqrt(-2 log1p(-u2))`, `θ = 2π u1`, `r cos θ` returned and `r sin θ`
//!   cached for the next draw), rounded to the dtype.

/// The 32-bit Mersenne Twister (`std::mt19937`'s numbers).
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; N],
    index: usize,
}

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER: u32 = 0x8000_0000;
const LOWER: u32 = 0x7fff_ffff;

impl Mt19937 {
    /// Seeded by the standard recurrence.
    pub fn new(seed: u32) -> Mt19937 {
        let mut state = [0u32; N];
        state[0] = seed;
        for i in 1..N {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { state, index: N }
    }

    fn twist(&mut self) {
        for i in 0..N {
            let y = (self.state[i] & UPPER) | (self.state[(i + 1) % N] & LOWER);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            self.state[i] = self.state[(i + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

/// PyTorch's default seed (`default_rng_seed_val`).
pub const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// The state of a CPU generator: the seed it was given, the engine and the
/// second Box–Muller sample kept for the next scalar normal draw (PyTorch's
/// CPU kernels draw normals in double precision only, so only the double
/// cache is ever used).
#[derive(Clone)]
pub struct CpuGenerator {
    seed: u64,
    engine: Mt19937,
    next_double_normal: Option<f64>,
}

impl Default for CpuGenerator {
    fn default() -> CpuGenerator {
        CpuGenerator::new(DEFAULT_SEED)
    }
}

impl CpuGenerator {
    /// A generator seeded with `seed` (only its low 32 bits reach the engine).
    pub fn new(seed: u64) -> CpuGenerator {
        CpuGenerator {
            seed,
            engine: Mt19937::new(seed as u32),
            next_double_normal: None,
        }
    }

    /// Reseeds (`manual_seed`), forgetting cached normal samples.
    pub fn set_seed(&mut self, seed: u64) {
        *self = CpuGenerator::new(seed);
    }

    /// The seed last given (`initial_seed`).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// One 32-bit draw (`random()`).
    pub fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }

    /// Two 32-bit draws, the first the high half (`random64()`).
    pub fn random64(&mut self) -> u64 {
        let hi = self.engine.next_u32() as u64;
        let lo = self.engine.next_u32() as u64;
        (hi << 32) | lo
    }

    /// A float32 in `[0, 1)`: the low 24 bits of one draw.
    pub fn uniform_f32(&mut self) -> f32 {
        let v = self.random() & ((1 << 24) - 1);
        (v as f64 * (1.0 / (1u64 << 24) as f64)) as f32
    }

    /// A float64 in `[0, 1)`: the low 53 bits of a 64-bit draw.
    pub fn uniform_f64(&mut self) -> f64 {
        let v = self.random64() & ((1 << 53) - 1);
        v as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// One standard normal sample in double precision
    /// (`normal_distribution<double>`): the cached second sample if there is
    /// one, else Box–Muller over two uniform doubles, caching `r sin θ`.
    pub fn normal_f64(&mut self, mean: f64, std: f64) -> f64 {
        if let Some(v) = self.next_double_normal.take() {
            return v.mul_add(std, mean);
        }
        let u1 = self.uniform_f64();
        let u2 = self.uniform_f64();
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_double_normal = Some(r * theta.sin());
        (r * theta.cos()).mul_add(std, mean)
    }
}

/// Box–Muller over a block of 16 uniforms in place, in double precision
/// (`normal_fill_16` for float64): for `j < 8`, `u1 = 1 - x[j]`,
/// `u2 = x[j + 8]`, `x[j] = r cos θ · std + mean`, `x[j + 8] = r sin θ · std + mean`,
/// each with one fused multiply-add (PyTorch's AVX2 build contracts them;
/// `normal_(mean, std)` with float64 matches PyTorch 2.15 only so).
pub fn normal_fill_16_f64(x: &mut [f64], mean: f64, std: f64) {
    for j in 0..8 {
        let u1 = 1.0 - x[j];
        let u2 = x[j + 8];
        let r = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        x[j] = (r * theta.cos()).mul_add(std, mean);
        x[j + 8] = (r * theta.sin()).mul_add(std, mean);
    }
}

/// Box–Muller over a block of 16 float32 uniforms in place, as PyTorch's
/// AVX2 build computes it (`normal_fill_16_AVX2`): `u1 = 1 - x[j]`,
/// `r = sqrt(-2 · log(u1))` and `θ = 2π · x[j + 8]` in float32, the logarithm
/// and the sine/cosine pair by the Cephes polynomials of `avx_mathfun.h`
/// ([`log_cephes`], [`sincos_cephes`]), and the results `r cos θ · std + mean`,
/// `r sin θ · std + mean` each with one fused multiply-add. PyTorch's build
/// (GCC, `-mfma`, contraction on) fuses each product that feeds one addition;
/// the two helpers do the same, which is what makes every number equal.
pub fn normal_fill_16_f32(x: &mut [f32], mean: f32, std: f32) {
    let two_pi = (2.0f32 as f64 * std::f64::consts::PI) as f32;
    for j in 0..8 {
        let u1 = 1.0f32 - x[j];
        let u2 = x[j + 8];
        let r = (-2.0f32 * log_cephes(u1)).sqrt();
        let theta = two_pi * u2;
        let (s, c) = sincos_cephes(theta);
        x[j] = (r * c).mul_add(std, mean);
        x[j + 8] = (r * s).mul_add(std, mean);
    }
}

/// Cephes' single-precision logarithm, operation for operation as
/// `avx_mathfun.h`'s `log256_ps` (NaN at or below zero; denormals cut to the
/// smallest normal): `x = m · 2^e` with `m` in `[0.5, 1)`, moved to
/// `[sqrt(1/2), sqrt(2))`, a degree-9 polynomial in `m - 1` (Horner, fused),
/// and `e · ln 2` in two parts.
#[allow(clippy::excessive_precision)]
pub fn log_cephes(x: f32) -> f32 {
    const fn c(v: f64) -> f32 {
        v as f32
    }
    const P: [f32; 9] = [
        c(7.0376836292E-2),
        c(-1.1514610310E-1),
        c(1.1676998740E-1),
        c(-1.2420140846E-1),
        c(1.4249322787E-1),
        c(-1.6668057665E-1),
        c(2.0000714765E-1),
        c(-2.4999993993E-1),
        c(3.3333331174E-1),
    ];
    const Q1: f32 = c(-2.12194440e-4);
    const Q2: f32 = c(0.693359375);
    const SQRTHF: f32 = c(std::f64::consts::FRAC_1_SQRT_2);
    if x.is_nan() || x <= 0.0 {
        return f32::NAN;
    }
    let x = x.max(f32::MIN_POSITIVE);
    let bits = x.to_bits();
    let mut e = ((bits >> 23) as i32 - 0x7f) as f32 + 1.0;
    let mut m = f32::from_bits((bits & !0x7f80_0000) | 0.5f32.to_bits());
    let small = m < SQRTHF;
    let tmp = if small { m } else { 0.0 };
    m -= 1.0;
    if small {
        e -= 1.0;
    }
    m += tmp;
    let z = m * m;
    let mut y = P[0];
    for &p in &P[1..] {
        y = y.mul_add(m, p);
    }
    y *= m;
    y = y.mul_add(z, e * Q1);
    y = (-z).mul_add(0.5, y);
    e.mul_add(Q2, m + y)
}

/// Cephes' single-precision sine and cosine together, operation for operation
/// as `avx_mathfun.h`'s `sincos256_ps`: reduction by multiples of π/4 (the
/// octant rounded up to even, π/4 subtracted in three parts), one polynomial
/// for the cosine and one for the sine (fused where a product feeds an
/// addition), chosen and signed by the octant.
#[allow(clippy::excessive_precision)]
pub fn sincos_cephes(x: f32) -> (f32, f32) {
    const fn c(v: f64) -> f32 {
        v as f32
    }
    const DP1: f32 = c(-0.78515625);
    const DP2: f32 = c(-2.4187564849853515625e-4);
    const DP3: f32 = c(-3.77489497744594108e-8);
    const SINCOF: [f32; 3] = [c(-1.9515295891E-4), c(8.3321608736E-3), c(-1.6666654611E-1)];
    const COSCOF: [f32; 3] = [
        c(2.443315711809948E-005),
        c(-1.388731625493765E-003),
        c(4.166664568298827E-002),
    ];
    const FOPI: f32 = c(1.27323954473516);
    let sign_sin = x.to_bits() & 0x8000_0000;
    let mut x = x.abs();
    let j = (((x * FOPI) as i32).wrapping_add(1)) & !1;
    let y = j as f32;
    let swap_sin = ((j & 4) as u32) << 29;
    let poly_sin = j & 2 == 0;
    x = y.mul_add(DP1, x);
    x = y.mul_add(DP2, x);
    x = y.mul_add(DP3, x);
    let sign_cos = ((!(j.wrapping_sub(2)) & 4) as u32) << 29;
    let sign_sin = sign_sin ^ swap_sin;
    let z = x * x;
    let mut c = COSCOF[0].mul_add(z, COSCOF[1]);
    c = c.mul_add(z, COSCOF[2]);
    c *= z;
    c = c.mul_add(z, -(z * 0.5));
    c += 1.0;
    let mut s = SINCOF[0].mul_add(z, SINCOF[1]);
    s = s.mul_add(z, SINCOF[2]);
    s *= z;
    s = s.mul_add(x, x);
    let (ysin, ycos) = if poly_sin { (s, c) } else { (c, s) };
    (
        f32::from_bits((ysin + 0.0).to_bits() ^ sign_sin),
        f32::from_bits((ycos + 0.0).to_bits() ^ sign_cos),
    )
}

/// The block rule of `normal_fill`: every element a uniform, each whole block
/// of 16 transformed, and when the length is not a multiple of 16 the last 16
/// elements drawn again and transformed again.
pub fn normal_fill<T: Copy>(
    data: &mut [T],
    mut uniform: impl FnMut() -> T,
    mut block: impl FnMut(&mut [T]),
) {
    let n = data.len();
    for x in data.iter_mut() {
        *x = uniform();
    }
    let mut i = 0;
    while i + 16 <= n {
        block(&mut data[i..i + 16]);
        i += 16;
    }
    if !n.is_multiple_of(16) {
        let tail = &mut data[n - 16..];
        for x in tail.iter_mut() {
            *x = uniform();
        }
        block(tail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_matches_the_standard() {
        // The C++ standard's check: the 10000th number of a default-seeded
        // (5489) std::mt19937 is 4123659995.
        let mut e = Mt19937::new(5489);
        let mut v = 0;
        for _ in 0..10000 {
            v = e.next_u32();
        }
        assert_eq!(v, 4_123_659_995);
    }

    #[test]
    fn reseeding_forgets_the_cached_normal() {
        let mut g = CpuGenerator::new(3);
        let a = g.normal_f64(0.0, 1.0);
        g.set_seed(3);
        assert_eq!(g.normal_f64(0.0, 1.0), a);
    }
}
