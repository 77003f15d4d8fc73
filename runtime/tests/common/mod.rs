//! What several integration tests share: a small deterministic generator.
// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

/// xorshift64*: deterministic, no dependency; a fixed seed gives every run the
/// same cases.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Heads or tails.
    pub fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }

    /// One of `xs` (not empty).
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}
