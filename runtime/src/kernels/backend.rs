//! The backend kernel list, stamped once for `cpu` and once for `meta`.
//!
//! Every entry with both a `CPU:` and a `Meta:` kernel gets the same
//! device-agnostic body (the family implementations skip the arithmetic for meta
//! tensors). Each function carries its operator name, so registration can be
//! added here in one place: `backend_kernels!(CPU)` / `backend_kernels!(Meta)`.

/// `sin` / `sin_` / `sin.out` and the like.
macro_rules! unary_family {
    ($key:ident; $($op:literal: $f:ident, $f_:ident, $f_out:ident => $kind:ident;)*) => {$(
        #[doc = concat!("`", $op, "` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f(self_: &Tensor) -> Result<Tensor> {
            pointwise::unary(Unary::$kind, self_, Dest::New)
        }
        #[doc = concat!("`", $op, "_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f_(self_: &mut Tensor) -> Result<Tensor> {
            pointwise::unary(Unary::$kind, self_, Dest::Inplace)
        }
        #[doc = concat!("`", $op, ".out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f_out(self_: &Tensor, out: &mut Tensor) -> Result<Tensor> {
            pointwise::unary(Unary::$kind, self_, Dest::Out(out))
        }
    )*};
}

/// `eq.Scalar` / `eq.Scalar_out` / `eq.Tensor` / `eq.Tensor_out` and the like.
macro_rules! comparison_family {
    ($key:ident; $($op:literal: $s:ident, $s_out:ident, $t:ident, $t_out:ident => $kind:ident;)*) => {$(
        #[doc = concat!("`", $op, ".Scalar` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $s(self_: &Tensor, other: Scalar) -> Result<Tensor> {
            pointwise::compare(Cmp::$kind, Operand::Tensor(self_), Operand::Scalar(other), Dest::New)
        }
        #[doc = concat!("`", $op, ".Scalar_out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $s_out(self_: &Tensor, other: Scalar, out: &mut Tensor) -> Result<Tensor> {
            pointwise::compare(Cmp::$kind, Operand::Tensor(self_), Operand::Scalar(other), Dest::Out(out))
        }
        #[doc = concat!("`", $op, ".Tensor` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $t(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            pointwise::compare(Cmp::$kind, Operand::Tensor(self_), Operand::Tensor(other), Dest::New)
        }
        #[doc = concat!("`", $op, ".Tensor_out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $t_out(self_: &Tensor, other: &Tensor, out: &mut Tensor) -> Result<Tensor> {
            pointwise::compare(Cmp::$kind, Operand::Tensor(self_), Operand::Tensor(other), Dest::Out(out))
        }
    )*};
}

/// Binary arithmetic with `.Tensor`, `_.Tensor` and `.out` variants; `alpha`
/// for add/sub.
macro_rules! binary_family {
    ($key:ident; $($op:literal: $f:ident, $f_:ident, $f_out:ident => $kind:ident $(, $alpha:ident)?;)*) => {$(
        #[doc = concat!("`", $op, ".Tensor` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f(self_: &Tensor, other: &Tensor $(, $alpha: Scalar)?) -> Result<Tensor> {
            let a = $crate::kernels::backend::alpha_or_one!($($alpha)?);
            pointwise::binary(BinOp::$kind, Operand::Tensor(self_), Operand::Tensor(other), a, Dest::New)
        }
        #[doc = concat!("`", $op, "_.Tensor` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f_(self_: &mut Tensor, other: &Tensor $(, $alpha: Scalar)?) -> Result<Tensor> {
            let a = $crate::kernels::backend::alpha_or_one!($($alpha)?);
            pointwise::binary(BinOp::$kind, Operand::Tensor(self_), Operand::Tensor(other), a, Dest::Inplace)
        }
        #[doc = concat!("`", $op, ".out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f_out(self_: &Tensor, other: &Tensor $(, $alpha: Scalar)?, out: &mut Tensor) -> Result<Tensor> {
            let a = $crate::kernels::backend::alpha_or_one!($($alpha)?);
            pointwise::binary(BinOp::$kind, Operand::Tensor(self_), Operand::Tensor(other), a, Dest::Out(out))
        }
    )*};
}

/// Binary operators with a functional, an in-place and an `out=` form,
/// each named with its overload (`bitwise_and.Tensor`, `bitwise_and_.Tensor`,
/// `bitwise_and.Tensor_out`; `atan2`, `atan2_`, `atan2.out`).
macro_rules! binary_trio_family {
    ($key:ident; $($f:ident, $f_:ident, $f_out:ident ($d:literal, $d_:literal, $d_out:literal) => $kind:ident;)*) => {$(
        #[doc = concat!("`", $d, "` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            pointwise::binary(BinOp::$kind, Operand::Tensor(self_), Operand::Tensor(other), Scalar::Int(1), Dest::New)
        }
        #[doc = concat!("`", $d_, "` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f_(self_: &mut Tensor, other: &Tensor) -> Result<Tensor> {
            pointwise::binary(BinOp::$kind, Operand::Tensor(self_), Operand::Tensor(other), Scalar::Int(1), Dest::Inplace)
        }
        #[doc = concat!("`", $d_out, "` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f_out(self_: &Tensor, other: &Tensor, out: &mut Tensor) -> Result<Tensor> {
            pointwise::binary(BinOp::$kind, Operand::Tensor(self_), Operand::Tensor(other), Scalar::Int(1), Dest::Out(out))
        }
    )*};
}

/// `logical_and.out` and the like (the functional and in-place forms are
/// composite, over these).
macro_rules! logical_family {
    ($key:ident; $($op:literal: $f_out:ident => $kind:ident;)*) => {$(
        #[doc = concat!("`", $op, ".out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f_out(self_: &Tensor, other: &Tensor, out: &mut Tensor) -> Result<Tensor> {
            pointwise::compare(Cmp::$kind, Operand::Tensor(self_), Operand::Tensor(other), Dest::Out(out))
        }
    )*};
}

/// Every kernel that has both a `CPU:` and a `Meta:` entry.
/// Binary ops with a functional and an `.out` form only (`maximum`, `pow.Tensor_Tensor`).
macro_rules! binary_pair_family {
    ($key:ident; $($op:literal: $f:ident, $f_out:ident($a:ident, $b:ident) => $kind:ident;)*) => {$(
        #[doc = concat!("`", $op, "` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f($a: &Tensor, $b: &Tensor) -> Result<Tensor> {
            pointwise::binary(BinOp::$kind, Operand::Tensor($a), Operand::Tensor($b), Scalar::Int(1), Dest::New)
        }
        #[doc = concat!("`", $op, "` out= (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f_out($a: &Tensor, $b: &Tensor, out: &mut Tensor) -> Result<Tensor> {
            pointwise::binary(BinOp::$kind, Operand::Tensor($a), Operand::Tensor($b), Scalar::Int(1), Dest::Out(out))
        }
    )*};
}

macro_rules! backend_kernels {
    ($key:ident) => {
        use $crate::kernels::pointwise::{self, BinOp, Cmp, Dest, Unary};
        use $crate::kernels::promote::Operand;
        use $crate::kernels::{activation, copy, factory, linalg, reduce, shape, views};
        use $crate::tensor::{DType, Device, Layout, MemoryFormat, Scalar, Tensor};
        // `kernel` is for hand-written kernels beside the stamped ones.
        #[allow(unused_imports)]
        use $crate::{error::Result, kernel};

        $crate::kernels::backend::unary_family! {$key;
            "acos": acos, acos_, acos_out => Acos;
            "acosh": acosh, acosh_, acosh_out => Acosh;
            "asin": asin, asin_, asin_out => Asin;
            "asinh": asinh, asinh_, asinh_out => Asinh;
            "atan": atan, atan_, atan_out => Atan;
            "atanh": atanh, atanh_, atanh_out => Atanh;
            "bitwise_not": bitwise_not, bitwise_not_, bitwise_not_out => BitwiseNot;
            "ceil": ceil, ceil_, ceil_out => Ceil;
            "cos": cos, cos_, cos_out => Cos;
            "cosh": cosh, cosh_, cosh_out => Cosh;
            "erf": erf, erf_, erf_out => Erf;
            "exp": exp, exp_, exp_out => Exp;
            "expm1": expm1, expm1_, expm1_out => Expm1;
            "floor": floor, floor_, floor_out => Floor;
            "log": log, log_, log_out => Log;
            "log10": log10, log10_, log10_out => Log10;
            "log1p": log1p, log1p_, log1p_out => Log1p;
            "log2": log2, log2_, log2_out => Log2;
            "neg": neg, neg_, neg_out => Neg;
            "reciprocal": reciprocal, reciprocal_, reciprocal_out => Reciprocal;
            "round": round, round_, round_out => Round;
            "rsqrt": rsqrt, rsqrt_, rsqrt_out => Rsqrt;
            "sigmoid": sigmoid, sigmoid_, sigmoid_out => Sigmoid;
            "sign": sign, sign_, sign_out => Sign;
            "sin": sin, sin_, sin_out => Sin;
            "sinh": sinh, sinh_, sinh_out => Sinh;
            "sqrt": sqrt, sqrt_, sqrt_out => Sqrt;
            "tan": tan, tan_, tan_out => Tan;
            "tanh": tanh, tanh_, tanh_out => Tanh;
            "trunc": trunc, trunc_, trunc_out => Trunc;
        }

        $crate::kernels::backend::comparison_family! {$key;
            "eq": eq_Scalar, eq_Scalar_out, eq_Tensor, eq_Tensor_out => Eq;
            "ne": ne_Scalar, ne_Scalar_out, ne_Tensor, ne_Tensor_out => Ne;
            "ge": ge_Scalar, ge_Scalar_out, ge_Tensor, ge_Tensor_out => Ge;
            "le": le_Scalar, le_Scalar_out, le_Tensor, le_Tensor_out => Le;
            "gt": gt_Scalar, gt_Scalar_out, gt_Tensor, gt_Tensor_out => Gt;
            "lt": lt_Scalar, lt_Scalar_out, lt_Tensor, lt_Tensor_out => Lt;
        }

        $crate::kernels::backend::binary_family! {$key;
            "add": add_Tensor, add__Tensor, add_out => Add, alpha;
            "sub": sub_Tensor, sub__Tensor, sub_out => Sub, alpha;
            "mul": mul_Tensor, mul__Tensor, mul_out => Mul;
            "div": div_Tensor, div__Tensor, div_out => Div;
        }

        $crate::kernels::backend::binary_trio_family! {$key;
            bitwise_and_Tensor, bitwise_and__Tensor, bitwise_and_Tensor_out
                ("bitwise_and.Tensor", "bitwise_and_.Tensor", "bitwise_and.Tensor_out") => BitAnd;
            bitwise_or_Tensor, bitwise_or__Tensor, bitwise_or_Tensor_out
                ("bitwise_or.Tensor", "bitwise_or_.Tensor", "bitwise_or.Tensor_out") => BitOr;
            bitwise_xor_Tensor, bitwise_xor__Tensor, bitwise_xor_Tensor_out
                ("bitwise_xor.Tensor", "bitwise_xor_.Tensor", "bitwise_xor.Tensor_out") => BitXor;
            fmod_Tensor, fmod__Tensor, fmod_Tensor_out
                ("fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out") => Fmod;
            remainder_Tensor, remainder__Tensor, remainder_Tensor_out
                ("remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out") => Remainder;
            atan2, atan2_, atan2_out ("atan2", "atan2_", "atan2.out") => Atan2;
        }

        $crate::kernels::backend::logical_family! {$key;
            "logical_and": logical_and_out => And;
            "logical_or": logical_or_out => Or;
            "logical_xor": logical_xor_out => Xor;
        }

        #[doc = concat!("`pow.Scalar` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn pow_Scalar(self_: Scalar, exponent: &Tensor) -> Result<Tensor> {
            pointwise::pow_scalar_base(self_, exponent, Dest::New)
        }

        #[doc = concat!("`pow.Scalar_out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn pow_Scalar_out(
            self_: Scalar,
            exponent: &Tensor,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            pointwise::pow_scalar_base(self_, exponent, Dest::Out(out))
        }

        #[doc = concat!("`abs.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn abs_out(self_: &Tensor, out: &mut Tensor) -> Result<Tensor> {
            pointwise::unary(Unary::Abs, self_, Dest::Out(out))
        }

        #[doc = concat!("`logical_not.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn logical_not_out(self_: &Tensor, out: &mut Tensor) -> Result<Tensor> {
            pointwise::unary(Unary::LogicalNot, self_, Dest::Out(out))
        }

        #[doc = concat!("`isnan` (", stringify!($key), "): PyTorch's `self != self`.")]
        #[$crate::kernel($key)]
        pub fn isnan(self_: &Tensor) -> Result<Tensor> {
            pointwise::unary(Unary::IsNan, self_, Dest::New)
        }

        #[doc = concat!("`relu` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn relu(self_: &Tensor) -> Result<Tensor> {
            pointwise::unary(Unary::Relu, self_, Dest::New)
        }

        #[doc = concat!("`relu_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn relu_(self_: &mut Tensor) -> Result<Tensor> {
            pointwise::unary(Unary::Relu, self_, Dest::Inplace)
        }

        #[doc = concat!("`gelu` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn gelu(self_: &Tensor, approximate: &str) -> Result<Tensor> {
            activation::gelu(self_, approximate, Dest::New)
        }

        #[doc = concat!("`gelu_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn gelu_(self_: &mut Tensor, approximate: &str) -> Result<Tensor> {
            activation::gelu(self_, approximate, Dest::Inplace)
        }

        #[doc = concat!("`gelu.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn gelu_out(self_: &Tensor, approximate: &str, out: &mut Tensor) -> Result<Tensor> {
            activation::gelu(self_, approximate, Dest::Out(out))
        }

        #[doc = concat!("`leaky_relu` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn leaky_relu(self_: &Tensor, negative_slope: Scalar) -> Result<Tensor> {
            activation::leaky_relu(self_, negative_slope, Dest::New)
        }

        #[doc = concat!("`leaky_relu_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn leaky_relu_(self_: &mut Tensor, negative_slope: Scalar) -> Result<Tensor> {
            activation::leaky_relu(self_, negative_slope, Dest::Inplace)
        }

        #[doc = concat!("`leaky_relu.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn leaky_relu_out(
            self_: &Tensor,
            negative_slope: Scalar,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            activation::leaky_relu(self_, negative_slope, Dest::Out(out))
        }

        #[doc = concat!("`leaky_relu_backward` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn leaky_relu_backward(
            grad_output: &Tensor,
            self_: &Tensor,
            negative_slope: Scalar,
            self_is_result: bool,
        ) -> Result<Tensor> {
            activation::leaky_relu_backward(
                grad_output,
                self_,
                negative_slope,
                self_is_result,
                Dest::New,
            )
        }

        #[doc = concat!("`leaky_relu_backward.grad_input` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn leaky_relu_backward_grad_input(
            grad_output: &Tensor,
            self_: &Tensor,
            negative_slope: Scalar,
            self_is_result: bool,
            grad_input: &mut Tensor,
        ) -> Result<Tensor> {
            let dest = Dest::Out(grad_input);
            activation::leaky_relu_backward(
                grad_output,
                self_,
                negative_slope,
                self_is_result,
                dest,
            )
        }

        #[doc = concat!("`gelu_backward` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn gelu_backward(
            grad_output: &Tensor,
            self_: &Tensor,
            approximate: &str,
        ) -> Result<Tensor> {
            activation::gelu_backward(grad_output, self_, approximate, Dest::New)
        }

        #[doc = concat!("`gelu_backward.grad_input` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn gelu_backward_grad_input(
            grad_output: &Tensor,
            self_: &Tensor,
            approximate: &str,
            grad_input: &mut Tensor,
        ) -> Result<Tensor> {
            activation::gelu_backward(grad_output, self_, approximate, Dest::Out(grad_input))
        }

        #[doc = concat!("`div.Tensor_mode` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn div_Tensor_mode(
            self_: &Tensor,
            other: &Tensor,
            rounding_mode: Option<&str>,
        ) -> Result<Tensor> {
            let op = pointwise::div_mode(rounding_mode)?;
            pointwise::binary(
                op,
                Operand::Tensor(self_),
                Operand::Tensor(other),
                Scalar::Int(1),
                Dest::New,
            )
        }

        #[doc = concat!("`div.out_mode` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn div_out_mode(
            self_: &Tensor,
            other: &Tensor,
            rounding_mode: Option<&str>,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            let op = pointwise::div_mode(rounding_mode)?;
            pointwise::binary(
                op,
                Operand::Tensor(self_),
                Operand::Tensor(other),
                Scalar::Int(1),
                Dest::Out(out),
            )
        }

        $crate::kernels::backend::binary_pair_family! {$key;
            "maximum": maximum, maximum_out(self_, other) => Maximum;
            "minimum": minimum, minimum_out(self_, other) => Minimum;
            "pow.Tensor_Tensor": pow_Tensor_Tensor, pow_Tensor_Tensor_out(self_, exponent) => Pow;
        }

        #[doc = concat!("`pow.Tensor_Scalar` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn pow_Tensor_Scalar(self_: &Tensor, exponent: Scalar) -> Result<Tensor> {
            pointwise::pow_scalar(self_, exponent, Dest::New)
        }

        #[doc = concat!("`pow.Tensor_Scalar_out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn pow_Tensor_Scalar_out(
            self_: &Tensor,
            exponent: Scalar,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            pointwise::pow_scalar(self_, exponent, Dest::Out(out))
        }

        #[doc = concat!("`clamp` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn clamp(self_: &Tensor, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
            pointwise::clamp(self_, min, max, Dest::New)
        }

        #[doc = concat!("`clamp_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn clamp_(
            self_: &mut Tensor,
            min: Option<Scalar>,
            max: Option<Scalar>,
        ) -> Result<Tensor> {
            pointwise::clamp(self_, min, max, Dest::Inplace)
        }

        #[doc = concat!("`clamp.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn clamp_out(
            self_: &Tensor,
            min: Option<Scalar>,
            max: Option<Scalar>,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            pointwise::clamp(self_, min, max, Dest::Out(out))
        }

        #[doc = concat!("`clamp.Tensor` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn clamp_Tensor(
            self_: &Tensor,
            min: Option<&Tensor>,
            max: Option<&Tensor>,
        ) -> Result<Tensor> {
            pointwise::clamp_tensor(self_, min, max, Dest::New)
        }

        #[doc = concat!("`where.self` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn where_self(condition: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            pointwise::where_self(condition, self_, other)
        }

        #[doc = concat!("`fill_.Scalar` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn fill__Scalar(self_: &mut Tensor, value: Scalar) -> Result<Tensor> {
            copy::fill_(self_, value)
        }

        #[doc = concat!("`fill_.Tensor` (", stringify!($key), "): `value` is a 0-dim tensor.")]
        #[$crate::kernel($key)]
        pub fn fill__Tensor(self_: &mut Tensor, value: &Tensor) -> Result<Tensor> {
            $crate::ensure!(
                value.dim() == 0,
                "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
                value.dim()
            );
            // A Meta value has no data to read (a Meta kernel writes none).
            let value = match value.device() {
                Device::Meta => Scalar::Int(0),
                _ => value.item()?,
            };
            copy::fill_(self_, value)
        }

        #[doc = concat!("`zero_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn zero_(self_: &mut Tensor) -> Result<Tensor> {
            copy::fill_(self_, Scalar::Int(0))
        }

        #[doc = concat!("`sum.dim_IntList` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn sum_dim_IntList(
            self_: &Tensor,
            dim: Option<&[i64]>,
            keepdim: bool,
            dtype: Option<DType>,
        ) -> Result<Tensor> {
            reduce::accumulate(reduce::Accumulate::Sum, self_, dim, keepdim, dtype, None)
        }

        #[doc = concat!("`sum.IntList_out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn sum_IntList_out(
            self_: &Tensor,
            dim: Option<&[i64]>,
            keepdim: bool,
            dtype: Option<DType>,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            reduce::accumulate(
                reduce::Accumulate::Sum,
                self_,
                dim,
                keepdim,
                dtype,
                Some(out),
            )
        }

        #[doc = concat!("`prod` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn prod(self_: &Tensor, dtype: Option<DType>) -> Result<Tensor> {
            reduce::accumulate(reduce::Accumulate::Prod, self_, None, false, dtype, None)
        }

        #[doc = concat!("`prod.dim_int` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn prod_dim_int(
            self_: &Tensor,
            dim: i64,
            keepdim: bool,
            dtype: Option<DType>,
        ) -> Result<Tensor> {
            reduce::accumulate(
                reduce::Accumulate::Prod,
                self_,
                Some(&[dim]),
                keepdim,
                dtype,
                None,
            )
        }

        #[doc = concat!("`mean.dim` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn mean_dim(
            self_: &Tensor,
            dim: Option<&[i64]>,
            keepdim: bool,
            dtype: Option<DType>,
        ) -> Result<Tensor> {
            reduce::mean(self_, dim, keepdim, dtype, None)
        }

        #[doc = concat!("`mean.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn mean_out(
            self_: &Tensor,
            dim: Option<&[i64]>,
            keepdim: bool,
            dtype: Option<DType>,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            reduce::mean(self_, dim, keepdim, dtype, Some(out))
        }

        #[doc = concat!("`argmax` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn argmax(self_: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
            reduce::arg_extreme(self_, dim, keepdim, None, true)
        }

        #[doc = concat!("`argmax.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn argmax_out(
            self_: &Tensor,
            dim: Option<i64>,
            keepdim: bool,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            reduce::arg_extreme(self_, dim, keepdim, Some(out), true)
        }

        #[doc = concat!("`argmin` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn argmin(self_: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
            reduce::arg_extreme(self_, dim, keepdim, None, false)
        }

        #[doc = concat!("`argmin.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn argmin_out(
            self_: &Tensor,
            dim: Option<i64>,
            keepdim: bool,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            reduce::arg_extreme(self_, dim, keepdim, Some(out), false)
        }

        #[doc = concat!("`amax` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn amax(self_: &Tensor, dim: &[i64], keepdim: bool) -> Result<Tensor> {
            reduce::amax_amin(self_, dim, keepdim, None, true)
        }

        #[doc = concat!("`amax.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn amax_out(
            self_: &Tensor,
            dim: &[i64],
            keepdim: bool,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            reduce::amax_amin(self_, dim, keepdim, Some(out), true)
        }

        #[doc = concat!("`amin` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn amin(self_: &Tensor, dim: &[i64], keepdim: bool) -> Result<Tensor> {
            reduce::amax_amin(self_, dim, keepdim, None, false)
        }

        #[doc = concat!("`amin.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn amin_out(
            self_: &Tensor,
            dim: &[i64],
            keepdim: bool,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            reduce::amax_amin(self_, dim, keepdim, Some(out), false)
        }

        #[doc = concat!("`any` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn any(self_: &Tensor) -> Result<Tensor> {
            reduce::any(self_, None, false, None)
        }

        #[doc = concat!("`any.all_out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn any_all_out(self_: &Tensor, out: &mut Tensor) -> Result<Tensor> {
            reduce::any(self_, None, false, Some(out))
        }

        #[doc = concat!("`any.dim` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn any_dim(self_: &Tensor, dim: i64, keepdim: bool) -> Result<Tensor> {
            reduce::any(self_, Some(&[dim]), keepdim, None)
        }

        #[doc = concat!("`any.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn any_out(
            self_: &Tensor,
            dim: i64,
            keepdim: bool,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            reduce::any(self_, Some(&[dim]), keepdim, Some(out))
        }

        #[doc = concat!("`any.dims` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn any_dims(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
            reduce::any(self_, dim, keepdim, None)
        }

        #[doc = concat!("`any.dims_out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn any_dims_out(
            self_: &Tensor,
            dim: Option<&[i64]>,
            keepdim: bool,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            reduce::any(self_, dim, keepdim, Some(out))
        }

        #[doc = concat!("`var.correction` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn var_correction(
            self_: &Tensor,
            dim: Option<&[i64]>,
            correction: Option<Scalar>,
            keepdim: bool,
        ) -> Result<Tensor> {
            reduce::var(self_, dim, correction, keepdim, None)
        }

        #[doc = concat!("`var.correction_out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn var_correction_out(
            self_: &Tensor,
            dim: Option<&[i64]>,
            correction: Option<Scalar>,
            keepdim: bool,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            reduce::var(self_, dim, correction, keepdim, Some(out))
        }

        #[doc = concat!("`cumsum` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn cumsum(self_: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
            reduce::cumsum(self_, dim, dtype, reduce::ScanDest::New)
        }

        #[doc = concat!("`cumsum_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn cumsum_(self_: &mut Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
            reduce::cumsum(self_, dim, dtype, reduce::ScanDest::Inplace)
        }

        #[doc = concat!("`cumsum.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn cumsum_out(
            self_: &Tensor,
            dim: i64,
            dtype: Option<DType>,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            reduce::cumsum(self_, dim, dtype, reduce::ScanDest::Out(out))
        }

        #[doc = concat!("`max.dim` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn max_dim(self_: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
            reduce::extreme_dim(self_, dim, keepdim, true)
        }

        #[doc = concat!("`min.dim` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn min_dim(self_: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
            reduce::extreme_dim(self_, dim, keepdim, false)
        }

        #[doc = concat!("`mm` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn mm(self_: &Tensor, mat2: &Tensor) -> Result<Tensor> {
            linalg::mm(self_, mat2, None)
        }

        #[doc = concat!("`mm.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn mm_out(self_: &Tensor, mat2: &Tensor, out: &mut Tensor) -> Result<Tensor> {
            linalg::mm(self_, mat2, Some(out))
        }

        #[doc = concat!("`dot` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn dot(self_: &Tensor, tensor: &Tensor) -> Result<Tensor> {
            linalg::dot(self_, tensor)
        }

        #[doc = concat!("`bmm` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn bmm(self_: &Tensor, mat2: &Tensor) -> Result<Tensor> {
            linalg::bmm(self_, mat2, None)
        }

        #[doc = concat!("`bmm.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn bmm_out(self_: &Tensor, mat2: &Tensor, out: &mut Tensor) -> Result<Tensor> {
            linalg::bmm(self_, mat2, Some(out))
        }

        #[doc = concat!("`cat` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
            shape::cat(tensors, dim, None)
        }

        #[doc = concat!("`cat.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn cat_out(tensors: &[Tensor], dim: i64, out: &mut Tensor) -> Result<Tensor> {
            shape::cat(tensors, dim, Some(out))
        }

        #[doc = concat!("`index_select` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn index_select(self_: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
            shape::index_select(self_, dim, index, None)
        }

        #[doc = concat!("`index_select.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn index_select_out(
            self_: &Tensor,
            dim: i64,
            index: &Tensor,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            shape::index_select(self_, dim, index, Some(out))
        }

        #[doc = concat!("`as_strided` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn as_strided(
            self_: &Tensor,
            size: &[i64],
            stride: &[i64],
            storage_offset: Option<i64>,
        ) -> Result<Tensor> {
            views::as_strided(self_, size, stride, storage_offset)
        }

        #[doc = concat!("`view` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
            views::view(self_, size)
        }

        #[doc = concat!("`empty.memory_format` (", stringify!($key), "): the memory is zeroed.")]
        #[$crate::kernel($key)]
        pub fn empty_memory_format(
            size: &[i64],
            dtype: Option<DType>,
            layout: Option<Layout>,
            device: Option<Device>,
            pin_memory: Option<bool>,
            memory_format: Option<MemoryFormat>,
        ) -> Result<Tensor> {
            let _ = (layout, pin_memory, device);
            factory::empty(
                size,
                dtype,
                Some($crate::kernels::backend::device!($key)),
                memory_format,
            )
        }

        #[doc = concat!("`empty_strided` (", stringify!($key), "): the memory is zeroed.")]
        #[$crate::kernel($key)]
        pub fn empty_strided(
            size: &[i64],
            stride: &[i64],
            dtype: Option<DType>,
            layout: Option<Layout>,
            device: Option<Device>,
            pin_memory: Option<bool>,
        ) -> Result<Tensor> {
            let _ = (layout, pin_memory, device);
            factory::empty_strided_checked(
                size,
                stride,
                dtype,
                $crate::kernels::backend::device!($key),
            )
        }

        #[doc = concat!("`flip` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn flip(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
            shape::flip(self_, dims)
        }

        $crate::kernels::nn::nn_kernels!($key);
        $crate::kernels::optim::optim_kernels!($key);

        #[doc = concat!("`arange.start_out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn arange_start_out(
            start: Scalar,
            end: Scalar,
            step: Scalar,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            factory::arange(start, end, step, None, None, Some(out))
        }
    };
}

/// `alpha` if the operator has one, else 1.
macro_rules! alpha_or_one {
    () => {
        $crate::tensor::Scalar::Int(1)
    };
    ($alpha:ident) => {
        $alpha
    };
}

/// The device a backend's factory kernels allocate on.
macro_rules! device {
    (CPU) => {
        $crate::tensor::Device::Cpu
    };
    (Meta) => {
        $crate::tensor::Device::Meta
    };
}

pub(crate) use {
    alpha_or_one, backend_kernels, binary_family, binary_pair_family, binary_trio_family,
    comparison_family, device, logical_family, unary_family,
};
