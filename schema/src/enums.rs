//! Model: the enum-like values a schema names besides `ScalarType`s
//! ([`crate::scalar_type`]) in one table — `MemoryFormat`s, `Layout`s and the
//! `int reduction` codes (`at::Reduction`): the name a schema default uses
//! (`contiguous_format`, `strided`, `Mean`), the integer TorchScript passes
//! (c10's enumerator value), the enumerator, the C++ spelling PyTorch's
//! bindings print (`c10::MemoryFormat::Contiguous`, `at::kStrided`,
//! `at::Reduction::Mean`) and the Python value it stands for
//! (`torch.contiguous_format`, `1`).
//!
//! Every user reads it from here: the validator (which names a default may
//! use), the JIT-schema printer (codes), the overridable-function lists (C++ →
//! Python), the generator (defaults in the typed API) and the runtime
//! (`MemoryFormat`, `Layout` and `Reduction` names and codes).
//!
//! ```
//! use opforge_schema::enums::{self, EnumKind};
//! let cl = enums::by_name(EnumKind::MemoryFormat, "channels_last").unwrap();
//! assert_eq!((cl.code, cl.enumerator, cl.python), (2, "ChannelsLast", "torch.channels_last"));
//! let mean = enums::by_cpp("at::Reduction::Mean").unwrap();
//! assert_eq!((mean.name, mean.code, mean.python), ("Mean", 1, "1"));
//! ```

/// Which enum a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EnumKind {
    /// `MemoryFormat` (`c10::MemoryFormat`, `torch.memory_format`).
    MemoryFormat,
    /// `Layout` (`c10::Layout`, `torch.layout`).
    Layout,
    /// An `int reduction` (`at::Reduction::Reduction`; Python passes the int).
    Reduction,
}

/// One value of an enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumValue {
    /// Its enum.
    pub kind: EnumKind,
    /// The name a schema default uses (`contiguous_format`, `strided`,
    /// `Mean`).
    pub name: &'static str,
    /// c10's enumerator value: what TorchScript passes as an int.
    pub code: i64,
    /// The enumerator (`Contiguous`, `Strided`, `Mean`); the runtime's Rust
    /// variants have these names.
    pub enumerator: &'static str,
    /// The C++ expression PyTorch's bindings print for it
    /// (`c10::MemoryFormat::Contiguous`, `at::kStrided`,
    /// `at::Reduction::Mean`).
    pub cpp: &'static str,
    /// The Python value it stands for (`torch.contiguous_format`, `1`).
    pub python: &'static str,
    /// Does TorchScript's schema parser take the name as a default
    /// (`contiguous_format`, `strided`, `Mean`; `preserve_format` is an
    /// "invalid numeric default value" there)?
    pub jit_default: bool,
}

const fn row(
    kind: EnumKind,
    name: &'static str,
    code: i64,
    enumerator: &'static str,
    cpp: &'static str,
    python: &'static str,
    jit_default: bool,
) -> EnumValue {
    EnumValue {
        kind,
        name,
        code,
        enumerator,
        cpp,
        python,
        jit_default,
    }
}

/// The table: per enum, in code order.
#[rustfmt::skip]
pub const VALUES: &[EnumValue] = {
    use EnumKind::*;
    &[
        row(MemoryFormat, "contiguous_format", 0, "Contiguous", "c10::MemoryFormat::Contiguous", "torch.contiguous_format", true),
        row(MemoryFormat, "preserve_format", 1, "Preserve", "c10::MemoryFormat::Preserve", "torch.preserve_format", false),
        row(MemoryFormat, "channels_last", 2, "ChannelsLast", "c10::MemoryFormat::ChannelsLast", "torch.channels_last", false),
        row(MemoryFormat, "channels_last_3d", 3, "ChannelsLast3d", "c10::MemoryFormat::ChannelsLast3d", "torch.channels_last_3d", false),
        row(Layout, "strided", 0, "Strided", "at::kStrided", "torch.strided", true),
        row(Layout, "sparse_coo", 1, "Sparse", "at::kSparse", "torch.sparse_coo", false),
        row(Layout, "sparse_csr", 2, "SparseCsr", "at::kSparseCsr", "torch.sparse_csr", false),
        row(Layout, "mkldnn", 3, "Mkldnn", "at::kMkldnn", "torch._mkldnn", false),
        row(Layout, "sparse_csc", 4, "SparseCsc", "at::kSparseCsc", "torch.sparse_csc", false),
        row(Layout, "sparse_bsr", 5, "SparseBsr", "at::kSparseBsr", "torch.sparse_bsr", false),
        row(Layout, "sparse_bsc", 6, "SparseBsc", "at::kSparseBsc", "torch.sparse_bsc", false),
        row(Layout, "jagged", 7, "Jagged", "at::kJagged", "torch.jagged", false),
        row(Reduction, "None", 0, "None", "at::Reduction::None", "0", false),
        row(Reduction, "Mean", 1, "Mean", "at::Reduction::Mean", "1", true),
        row(Reduction, "Sum", 2, "Sum", "at::Reduction::Sum", "2", false),
    ]
};

/// The values of one enum, in code order.
pub fn of(kind: EnumKind) -> impl Iterator<Item = &'static EnumValue> {
    VALUES.iter().filter(move |v| v.kind == kind)
}

/// The value of `kind` a schema default names (`channels_last`).
pub fn by_name(kind: EnumKind, name: &str) -> Option<&'static EnumValue> {
    of(kind).find(|v| v.name == name)
}

/// The value of `kind` with code `code`.
pub fn by_code(kind: EnumKind, code: i64) -> Option<&'static EnumValue> {
    of(kind).find(|v| v.code == code)
}

/// The value a C++ expression spells (`at::Reduction::Sum`).
pub fn by_cpp(cpp: &str) -> Option<&'static EnumValue> {
    VALUES.iter().find(|v| v.cpp == cpp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_enum_is_in_code_order_without_gaps() {
        for kind in [
            EnumKind::MemoryFormat,
            EnumKind::Layout,
            EnumKind::Reduction,
        ] {
            for (i, v) in of(kind).enumerate() {
                assert_eq!(v.code, i as i64, "{v:?}");
                assert_eq!(by_name(kind, v.name), Some(v));
                assert_eq!(by_code(kind, v.code), Some(v));
                assert_eq!(by_cpp(v.cpp), Some(v));
            }
        }
        assert_eq!(by_name(EnumKind::Layout, "Mean"), None);
        let jit: Vec<&str> = VALUES
            .iter()
            .filter(|v| v.jit_default)
            .map(|v| v.name)
            .collect();
        assert_eq!(jit, ["contiguous_format", "strided", "Mean"]);
    }
}
