//! Tables that live in one place and are mapped elsewhere agree with their
//! mappings: the generator's `ScalarType` → `DType` spelling is the runtime's.

use opforge::DType;
use opforge_codegen::rust_types::dtype_variant;
use opforge_schema::scalar_type::ScalarType;

#[test]
fn generated_dtype_defaults_name_the_runtime_dtype() {
    for t in ScalarType::ALL {
        let runtime = DType::from_scalar_type(t).map(|d| format!("{d:?}"));
        assert_eq!(dtype_variant(t).map(str::to_string), runtime, "{t:?}");
    }
    for d in DType::ALL {
        assert_eq!(DType::from_scalar_type(d.scalar_type()), Some(d));
        assert_eq!(DType::from_code(d.code()), Some(d));
        assert_eq!(DType::from_name(d.name()), Some(d));
    }
}
