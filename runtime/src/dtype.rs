//! Element types, scalars and devices.

use opforge_schema::enums::{self, EnumKind, EnumValue};
use opforge_schema::scalar_type::ScalarType;
use std::fmt;

/// A tensor element type (PyTorch's `ScalarType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `torch.bool`
    Bool,
    /// `torch.int32`
    Int32,
    /// `torch.int64`
    Int64,
    /// `torch.float32`
    Float32,
    /// `torch.float64`
    Float64,
}

impl DType {
    /// Every dtype.
    pub const ALL: [DType; 5] = [
        DType::Bool,
        DType::Int32,
        DType::Int64,
        DType::Float32,
        DType::Float64,
    ];

    /// Its PyTorch scalar type, which holds its code and names
    /// ([`opforge_schema::scalar_type`]).
    pub const fn scalar_type(self) -> ScalarType {
        match self {
            DType::Bool => ScalarType::Bool,
            DType::Int32 => ScalarType::Int,
            DType::Int64 => ScalarType::Long,
            DType::Float32 => ScalarType::Float,
            DType::Float64 => ScalarType::Double,
        }
    }

    /// The dtype of a scalar type, if this runtime has it.
    pub fn from_scalar_type(t: ScalarType) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.scalar_type() == t)
    }

    /// The PyTorch `ScalarType` code (`int64` → 4).
    pub const fn code(self) -> i64 {
        self.scalar_type().code()
    }

    /// The dtype of a PyTorch `ScalarType` code, if this runtime has it.
    pub fn from_code(code: i64) -> Option<DType> {
        ScalarType::from_code(code).and_then(DType::from_scalar_type)
    }

    /// The Python name without `torch.` (`float32`).
    pub fn name(self) -> &'static str {
        self.scalar_type().name()
    }

    /// The C++ `ScalarType` name PyTorch uses in messages (`Float`, `Long`).
    pub fn c10_name(self) -> &'static str {
        self.scalar_type().c10_name()
    }

    /// The `caffe2::TypeMeta` name (`float`, `long int`), which some
    /// PyTorch messages print instead of the `ScalarType` name.
    pub fn typemeta_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::Int32 => "int",
            DType::Int64 => "long int",
            DType::Float32 => "float",
            DType::Float64 => "double",
        }
    }

    /// Parses a Python name (`float32`, `float`, `int64`, `long`, …).
    pub fn from_name(s: &str) -> Option<DType> {
        ScalarType::from_name_or_alias(s).and_then(DType::from_scalar_type)
    }

    /// Floating point.
    pub fn is_floating_point(self) -> bool {
        matches!(self, DType::Float32 | DType::Float64)
    }

    /// Integral (`bool` counts only if `include_bool`).
    pub fn is_integral(self, include_bool: bool) -> bool {
        match self {
            DType::Bool => include_bool,
            DType::Int32 | DType::Int64 => true,
            _ => false,
        }
    }

    /// Size of one element in bytes.
    pub fn itemsize(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::Int32 | DType::Float32 => 4,
            DType::Int64 | DType::Float64 => 8,
        }
    }

    /// The category used by type promotion: 0 bool, 1 integral, 2 floating.
    pub fn category(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::Int32 | DType::Int64 => 1,
            DType::Float32 | DType::Float64 => 2,
        }
    }

    /// PyTorch's `promoteTypes` on the dtypes this runtime has: the smallest dtype
    /// that can hold both (bool < int32 < int64 < float32 < float64 along the lattice).
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        match (a, b) {
            (x, y) if x == y => x,
            (Bool, y) | (y, Bool) => y,
            (Float64, _) | (_, Float64) => Float64,
            (Float32, _) | (_, Float32) => Float32,
            _ => Int64,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "torch.{}", self.name())
    }
}

/// A device. Meta tensors carry shape and dtype but no data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Device {
    /// Host memory.
    Cpu,
    /// No memory: shapes and dtypes only.
    Meta,
}

impl Device {
    /// `cpu` / `meta`.
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Meta => "meta",
        }
    }

    /// Parses `cpu`, `cpu:0`, `meta`.
    pub fn from_name(s: &str) -> Option<Device> {
        match s.split(':').next()? {
            "cpu" => Some(Device::Cpu),
            "meta" => Some(Device::Meta),
            _ => None,
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `torch.layout` (only strided tensors exist here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `torch.strided`
    Strided,
}

/// `torch.memory_format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryFormat {
    /// `torch.contiguous_format`
    Contiguous,
    /// `torch.preserve_format`
    Preserve,
    /// `torch.channels_last` (4-d)
    ChannelsLast,
    /// `torch.channels_last_3d` (5-d)
    ChannelsLast3d,
}

/// How a loss reduces its per-element values (PyTorch's `reduction=`; the
/// operators take its integer code, `at::Reduction`).
///
/// ```
/// use opforge::Reduction;
/// let sum: Reduction = "sum".parse()?;
/// assert_eq!((sum.code(), sum.name()), (2, "sum"));
/// assert_eq!(Reduction::from_code(1), Some(Reduction::Mean));
/// assert_eq!(
///     "avg".parse::<Reduction>().unwrap_err().to_string(),
///     "avg is not a valid value for reduction"
/// );
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Every element's loss.
    None,
    /// Their mean (PyTorch's default).
    #[default]
    Mean,
    /// Their sum.
    Sum,
}

/// The Rust enums of the schema's enum table
/// ([`opforge_schema::enums`]): each variant is named by its c10
/// enumerator, and names and codes are read from the table.
macro_rules! schema_enum {
    ($ty:ident, $kind:ident, [$($v:ident),*]) => {
        impl $ty {
            /// Every variant, in code order.
            pub const ALL: &'static [$ty] = &[$($ty::$v),*];

            fn row(self) -> &'static EnumValue {
                let enumerator = match self { $($ty::$v => stringify!($v)),* };
                enums::of(EnumKind::$kind)
                    .find(|v| v.enumerator == enumerator)
                    .expect("every variant is in the schema's enum table")
            }

            /// c10's code (what TorchScript passes as an int).
            pub fn code(self) -> i64 {
                self.row().code
            }

            /// The variant of a code.
            pub fn from_code(code: i64) -> Option<$ty> {
                let e = enums::by_code(EnumKind::$kind, code)?.enumerator;
                $ty::ALL.iter().copied().find(|v| v.row().enumerator == e)
            }
        }
    };
}
schema_enum!(Layout, Layout, [Strided]);
schema_enum!(
    MemoryFormat,
    MemoryFormat,
    [Contiguous, Preserve, ChannelsLast, ChannelsLast3d]
);
schema_enum!(Reduction, Reduction, [None, Mean, Sum]);

impl Layout {
    /// The Python name without `torch.` (`strided`).
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// Parses `strided` (with or without `torch.`).
    pub fn from_name(s: &str) -> Option<Layout> {
        let v = enums::by_name(EnumKind::Layout, s.strip_prefix("torch.").unwrap_or(s))?;
        Layout::from_code(v.code)
    }
}

impl MemoryFormat {
    /// The Python name without `torch.` (`contiguous_format`).
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// Parses `contiguous_format`, `preserve_format`, `channels_last`,
    /// `channels_last_3d` (with or without `torch.`).
    pub fn from_name(s: &str) -> Option<MemoryFormat> {
        let v = enums::by_name(
            EnumKind::MemoryFormat,
            s.strip_prefix("torch.").unwrap_or(s),
        )?;
        MemoryFormat::from_code(v.code)
    }
}

impl Reduction {
    /// Python's name: `none`, `mean`, `sum` (the schema default's name in
    /// lower case).
    pub fn name(self) -> &'static str {
        match self {
            Reduction::None => "none",
            Reduction::Mean => "mean",
            Reduction::Sum => "sum",
        }
    }
}

/// A Python-like number: what `Scalar` arguments hold. Numbers convert into
/// one, and it promotes as a Python number does (an int with a float tensor
/// stays float; a float with an int tensor gives the default float dtype).
///
/// ```
/// use opforge::{DType, Scalar, Tensor};
/// assert_eq!(Scalar::from(2.5), Scalar::Float(2.5));
/// let ints = Tensor::from_vec(vec![1i32, 2], &[2])?;
/// let r = opforge::torch::add_scalar(&ints, Scalar::Float(0.5))?;
/// assert_eq!((r.dtype(), r.to_vec::<f32>()?), (DType::Float32, vec![1.5, 2.5]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// `True` / `False`
    Bool(bool),
    /// A Python `int`.
    Int(i64),
    /// A Python `float`.
    Float(f64),
}

impl Scalar {
    /// As f64.
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(i) => i as f64,
            Scalar::Float(x) => x,
        }
    }

    /// As i64 (floats truncate toward zero, as C++ casts do).
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => i64::from(b),
            Scalar::Int(i) => i,
            Scalar::Float(x) => x as i64,
        }
    }

    /// As bool (non-zero is true).
    pub fn to_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(x) => x != 0.0,
        }
    }

    /// The dtype PyTorch gives a tensor made from this number (default dtypes:
    /// int64 and float32).
    pub fn default_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::Int64,
            Scalar::Float(_) => DType::Float32,
        }
    }

    /// True for `Float`.
    pub fn is_floating_point(self) -> bool {
        matches!(self, Scalar::Float(_))
    }
}

impl From<f64> for Scalar {
    fn from(x: f64) -> Scalar {
        Scalar::Float(x)
    }
}

impl From<i64> for Scalar {
    fn from(x: i64) -> Scalar {
        Scalar::Int(x)
    }
}

impl From<bool> for Scalar {
    fn from(x: bool) -> Scalar {
        Scalar::Bool(x)
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x:?}"),
        }
    }
}

/// Rust element types a tensor can hold.
pub trait Element: Copy + Send + Sync + PartialEq + fmt::Debug + 'static {
    /// The matching dtype.
    const DTYPE: DType;
    /// Converts from f64 (C++ cast semantics: truncation toward zero for integers,
    /// non-zero for bool).
    fn from_f64(x: f64) -> Self;
    /// Converts from i64.
    fn from_i64(x: i64) -> Self;
    /// Converts from bool.
    fn from_bool(x: bool) -> Self;
    /// To f64.
    fn to_f64(self) -> f64;
    /// To i64 (truncating).
    fn to_i64(self) -> i64;
    /// To bool (non-zero).
    fn to_bool(self) -> bool;
    /// From a scalar with C++ cast semantics.
    fn from_scalar(s: Scalar) -> Self {
        match s {
            Scalar::Bool(b) => Self::from_bool(b),
            Scalar::Int(i) => Self::from_i64(i),
            Scalar::Float(x) => Self::from_f64(x),
        }
    }
}

macro_rules! element_num {
    ($t:ty, $d:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn from_i64(x: i64) -> Self {
                x as $t
            }
            fn from_bool(x: bool) -> Self {
                u8::from(x) as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn to_bool(self) -> bool {
                self != (0 as $t)
            }
        }
    };
}
element_num!(i32, Int32);
element_num!(i64, Int64);
element_num!(f32, Float32);
element_num!(f64, Float64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn from_f64(x: f64) -> Self {
        x != 0.0
    }
    fn from_i64(x: i64) -> Self {
        x != 0
    }
    fn from_bool(x: bool) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    fn to_bool(self) -> bool {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_lattice() {
        use DType::*;
        assert_eq!(DType::promote(Bool, Int32), Int32);
        assert_eq!(DType::promote(Int32, Int64), Int64);
        assert_eq!(DType::promote(Int64, Float32), Float32);
        assert_eq!(DType::promote(Float32, Float64), Float64);
        assert_eq!(DType::promote(Bool, Bool), Bool);
        for a in DType::ALL {
            for b in DType::ALL {
                assert_eq!(DType::promote(a, b), DType::promote(b, a));
            }
        }
    }
}
