//! Element arithmetic with C++/PyTorch semantics: wrapping integer arithmetic,
//! IEEE floats, `bool` as a one-bit integer (`+` is or, `*` is and), and the
//! float-only math functions. Kernels are generic over these traits and stamped
//! per dtype with `with_dtype!` / [`float_dtype!`](crate::float_dtype).

use crate::tensor::{IntoBuffer, Scalar};

/// Arithmetic every dtype supports (bool, i32, i64, f32, f64).
pub(crate) trait Num: IntoBuffer + PartialOrd {
    /// 0 / false.
    fn zero() -> Self;
    /// 1 / true.
    fn one() -> Self;
    /// `a + b` (wrapping for integers, `or` for bool).
    fn add(self, o: Self) -> Self;
    /// `a - b` (wrapping).
    fn sub(self, o: Self) -> Self;
    /// `a * b` (wrapping for integers, `and` for bool).
    fn mul(self, o: Self) -> Self;
    /// `-a` (wrapping).
    fn neg(self) -> Self;
    /// `|a|` (wrapping: `abs(i64::MIN) == i64::MIN`).
    fn absolute(self) -> Self;
    /// NaN?
    fn is_nan(self) -> bool;
    /// Truncating division (integers: caller checks for zero divisors).
    fn trunc_div(self, o: Self) -> Self;
    /// Floor division with PyTorch's `div_floor_*` algorithms.
    fn floor_div(self, o: Self) -> Self;
    /// `pow`: `std::pow` for floats, `powi` (negative exponents give 0, 1 or -1)
    /// for integers.
    fn power(self, o: Self) -> Self;
    /// `max_nan`: NaN-propagating for floats.
    fn max_nan(self, o: Self) -> Self {
        if self.is_nan() {
            self
        } else if o.is_nan() || self < o {
            o
        } else {
            self
        }
    }
    /// `min_nan`: NaN-propagating for floats.
    fn min_nan(self, o: Self) -> Self {
        if self.is_nan() {
            self
        } else if o.is_nan() || o < self {
            o
        } else {
            self
        }
    }
}

macro_rules! num_int {
    ($t:ty) => {
        impl Num for $t {
            fn zero() -> Self {
                0
            }
            fn one() -> Self {
                1
            }
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            fn absolute(self) -> Self {
                self.wrapping_abs()
            }
            fn is_nan(self) -> bool {
                false
            }
            fn trunc_div(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self.wrapping_div(o)
                }
            }
            fn floor_div(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let q = self.wrapping_div(o);
                if (self < 0) != (o < 0) && self.wrapping_rem(o) != 0 {
                    q.wrapping_sub(1)
                } else {
                    q
                }
            }
            fn power(self, b: Self) -> Self {
                if b < 0 {
                    return match self {
                        1 => 1,
                        -1 if b % 2 != 0 => -1,
                        -1 => 1,
                        _ => 0,
                    };
                }
                let (mut a, mut b, mut r) = (self, b, 1 as $t);
                while b != 0 {
                    if b & 1 != 0 {
                        r = r.wrapping_mul(a);
                    }
                    b /= 2;
                    a = a.wrapping_mul(a);
                }
                r
            }
        }
    };
}
num_int!(i32);
num_int!(i64);

macro_rules! num_float {
    ($t:ty) => {
        impl Num for $t {
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn sub(self, o: Self) -> Self {
                self - o
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn neg(self) -> Self {
                -self
            }
            fn absolute(self) -> Self {
                <$t>::abs(self)
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn trunc_div(self, o: Self) -> Self {
                (self / o).trunc()
            }
            fn floor_div(self, o: Self) -> Self {
                // PyTorch's div_floor_floating.
                if o == 0.0 {
                    return self / o;
                }
                let m = self % o;
                let mut div = (self - m) / o;
                if m != 0.0 && (o < 0.0) != (m < 0.0) {
                    div -= 1.0;
                }
                if div != 0.0 {
                    let mut f = div.floor();
                    if div - f > 0.5 {
                        f += 1.0;
                    }
                    f
                } else {
                    (0.0 as $t).copysign(self / o)
                }
            }
            fn power(self, o: Self) -> Self {
                self.powf(o)
            }
        }
    };
}
num_float!(f32);
num_float!(f64);

impl Num for bool {
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn add(self, o: Self) -> Self {
        self | o
    }
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    fn mul(self, o: Self) -> Self {
        self & o
    }
    fn neg(self) -> Self {
        self
    }
    fn absolute(self) -> Self {
        self
    }
    fn is_nan(self) -> bool {
        false
    }
    fn trunc_div(self, o: Self) -> Self {
        self & o
    }
    fn floor_div(self, o: Self) -> Self {
        self & o
    }
    fn power(self, o: Self) -> Self {
        self | !o
    }
}

/// Float-only arithmetic (f32, f64); the math functions are the inherent ones.
pub(crate) trait Float: Num {
    /// From f64 (rounding).
    fn of(x: f64) -> Self;
    /// `a / b`
    fn div(self, o: Self) -> Self;
}

macro_rules! float_impl {
    ($t:ty) => {
        impl Float for $t {
            fn of(x: f64) -> Self {
                x as $t
            }
            fn div(self, o: Self) -> Self {
                self / o
            }
        }
    };
}
float_impl!(f32);
float_impl!(f64);

/// Stamps `$body` for the floating dtypes with `$T` bound to `f32` / `f64`; any
/// other dtype evaluates `$other`.
#[macro_export]
#[doc(hidden)]
macro_rules! float_dtype {
    ($dtype:expr, $T:ident => $body:expr, _ => $other:expr) => {
        match $dtype {
            $crate::tensor::DType::Float32 => {
                type $T = f32;
                $body
            }
            $crate::tensor::DType::Float64 => {
                type $T = f64;
                $body
            }
            _ => $other,
        }
    };
}

/// `Scalar::equal(x)` as PyTorch defines it: a bool scalar never equals a number.
pub(crate) fn scalar_equals(s: Scalar, x: f64) -> bool {
    match s {
        Scalar::Bool(_) => false,
        Scalar::Int(i) => i as f64 == x,
        Scalar::Float(f) => f == x,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_semantics() {
        assert_eq!(7i64.floor_div(-2), -4);
        assert_eq!((-7i64).floor_div(2), -4);
        assert_eq!((-7i64).trunc_div(2), -3);
        assert_eq!(2i64.power(-1), 0);
        assert_eq!((-1i64).power(-3), -1);
        assert_eq!(3i32.power(3), 27);
        assert_eq!(i64::MIN.absolute(), i64::MIN);
        assert_eq!(i64::MAX.add(1), i64::MIN);
    }

    #[test]
    fn float_semantics() {
        assert_eq!((-7.5f32).floor_div(2.0), -4.0);
        assert_eq!(7.5f64.floor_div(-2.0), -4.0);
        assert!((-0.5f64).floor_div(2.0) == -1.0);
        assert!(1.0f32.max_nan(f32::NAN).is_nan());
        assert!(f64::NAN.min_nan(1.0).is_nan());
        assert!(true.add(true));
        assert!(!true.mul(false));
    }
}
