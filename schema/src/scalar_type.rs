//! Model: PyTorch's `ScalarType`s in one table — the integer code (what
//! TorchScript passes for a `ScalarType` argument), the Python name
//! (`torch.int64`), the short name schema defaults may also use (`long`) and the
//! C++ name (`Long`, as in `at::kLong` and error messages).
//!
//! Every user reads it from here: the validator (which names a `ScalarType`
//! default may use), the Python-binding derivation (`at::kLong` → `torch.int64`),
//! the generator (defaults in the typed API) and the runtime (`DType` names,
//! codes of boxed values).

/// A PyTorch scalar type (`c10::ScalarType`, the first 16, which are what
/// Python's `torch.dtype`s stand for); the discriminant is its code.
///
/// ```
/// use opforge_schema::scalar_type::ScalarType;
/// let long = ScalarType::from_name_or_alias("torch.long").unwrap();
/// assert_eq!((long.code(), long.name(), long.c10_name()), (4, "int64", "Long"));
/// assert_eq!(ScalarType::from_code(11), Some(ScalarType::Bool));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ScalarType {
    /// 0: `torch.uint8`
    Byte = 0,
    /// 1: `torch.int8`
    Char = 1,
    /// 2: `torch.int16`
    Short = 2,
    /// 3: `torch.int32`
    Int = 3,
    /// 4: `torch.int64`
    Long = 4,
    /// 5: `torch.float16`
    Half = 5,
    /// 6: `torch.float32`
    Float = 6,
    /// 7: `torch.float64`
    Double = 7,
    /// 8: `torch.complex32`
    ComplexHalf = 8,
    /// 9: `torch.complex64`
    ComplexFloat = 9,
    /// 10: `torch.complex128`
    ComplexDouble = 10,
    /// 11: `torch.bool`
    Bool = 11,
    /// 12: `torch.qint8`
    QInt8 = 12,
    /// 13: `torch.quint8`
    QUInt8 = 13,
    /// 14: `torch.qint32`
    QInt32 = 14,
    /// 15: `torch.bfloat16`
    BFloat16 = 15,
}

/// The table, by code: (type, Python name, short name, C++ name).
const TABLE: [(ScalarType, &str, Option<&str>, &str); 16] = {
    use ScalarType::*;
    [
        (Byte, "uint8", Some("byte"), "Byte"),
        (Char, "int8", Some("char"), "Char"),
        (Short, "int16", Some("short"), "Short"),
        (Int, "int32", Some("int"), "Int"),
        (Long, "int64", Some("long"), "Long"),
        (Half, "float16", Some("half"), "Half"),
        (Float, "float32", Some("float"), "Float"),
        (Double, "float64", Some("double"), "Double"),
        (ComplexHalf, "complex32", None, "ComplexHalf"),
        (ComplexFloat, "complex64", Some("cfloat"), "ComplexFloat"),
        (
            ComplexDouble,
            "complex128",
            Some("cdouble"),
            "ComplexDouble",
        ),
        (Bool, "bool", None, "Bool"),
        (QInt8, "qint8", None, "QInt8"),
        (QUInt8, "quint8", None, "QUInt8"),
        (QInt32, "qint32", None, "QInt32"),
        (BFloat16, "bfloat16", None, "BFloat16"),
    ]
};

impl ScalarType {
    /// Every scalar type, by code.
    pub const ALL: [ScalarType; 16] = {
        let mut all = [ScalarType::Byte; 16];
        let mut i = 0;
        while i < 16 {
            all[i] = TABLE[i].0;
            i += 1;
        }
        all
    };

    fn row(self) -> (ScalarType, &'static str, Option<&'static str>, &'static str) {
        TABLE[self as usize]
    }

    /// The code (`Long` → 4).
    pub const fn code(self) -> i64 {
        self as i64
    }

    /// The scalar type of a code, if it is one of the table's.
    pub fn from_code(code: i64) -> Option<ScalarType> {
        usize::try_from(code)
            .ok()
            .and_then(|i| TABLE.get(i))
            .map(|r| r.0)
    }

    /// The Python name without `torch.` (`int64`).
    pub fn name(self) -> &'static str {
        self.row().1
    }

    /// The short name (`long`, `float`, `byte`, …) a schema default may use
    /// instead of [`name`](Self::name); `None` for types that have none.
    pub fn alias(self) -> Option<&'static str> {
        self.row().2
    }

    /// The C++ name (`Long`), as in `at::kLong` and PyTorch's messages.
    pub fn c10_name(self) -> &'static str {
        self.row().3
    }

    /// A quantized type (`qint8`, `quint8`, `qint32`)?
    pub fn is_quantized(self) -> bool {
        matches!(
            self,
            ScalarType::QInt8 | ScalarType::QUInt8 | ScalarType::QInt32
        )
    }

    /// The type of a Python name (`int64`, or `torch.int64`).
    pub fn from_name(name: &str) -> Option<ScalarType> {
        let name = name.strip_prefix("torch.").unwrap_or(name);
        TABLE.iter().find(|r| r.1 == name).map(|r| r.0)
    }

    /// The type of a Python name or short name (`int64`, `long`, with or
    /// without `torch.`).
    pub fn from_name_or_alias(name: &str) -> Option<ScalarType> {
        let name = name.strip_prefix("torch.").unwrap_or(name);
        TABLE
            .iter()
            .find(|r| r.1 == name || r.2 == Some(name))
            .map(|r| r.0)
    }

    /// The type of a C++ name (`Long`).
    pub fn from_c10_name(name: &str) -> Option<ScalarType> {
        TABLE.iter().find(|r| r.3 == name).map(|r| r.0)
    }

    /// The names a `ScalarType` default in a schema file may use: the Python
    /// names of the non-quantized types, then the short names.
    pub fn default_names() -> impl Iterator<Item = &'static str> {
        let names = TABLE.iter().filter(|r| !r.0.is_quantized()).map(|r| r.1);
        names.chain(TABLE.iter().filter_map(|r| r.2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_indexed_by_code() {
        for (i, t) in ScalarType::ALL.into_iter().enumerate() {
            assert_eq!(t.code(), i as i64);
            assert_eq!(ScalarType::from_code(t.code()), Some(t));
            assert_eq!(ScalarType::from_name(t.name()), Some(t));
            assert_eq!(ScalarType::from_c10_name(t.c10_name()), Some(t));
            assert_eq!(format!("{t:?}"), t.c10_name());
            if let Some(a) = t.alias() {
                assert_eq!(ScalarType::from_name_or_alias(a), Some(t));
                assert_eq!(ScalarType::from_name(a), None);
            }
        }
        assert_eq!(ScalarType::from_code(16), None);
        assert_eq!(ScalarType::from_code(-1), None);
        let names: Vec<&str> = ScalarType::default_names().collect();
        assert_eq!(names.len(), 23);
        assert!(names.contains(&"long") && names.contains(&"bfloat16"));
        assert!(!names.contains(&"qint8"));
    }
}
