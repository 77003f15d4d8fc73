//! A method call is the dispatched call `higher_order::call_torchbind(obj,
//! method, *args)`. Alone in its process: it replaces that operator's
//! backend kernel, which every method call of the process runs.

use opforge::classes::{self, Class};
use opforge::dispatch::{dispatcher, DispatchKey, Kernel};
use opforge::Value;
use std::sync::Mutex;

struct Counter(Mutex<i64>);

/// The method call a program makes runs the kernel the dispatcher holds
/// for it: replaced at the backend, the replacement runs (`call_method`'s
/// direct path is taken only when the call would reach the runtime's own
/// kernel), and the runtime's runs again once the replacement is removed.
#[test]
fn a_replaced_backend_kernel_is_what_a_method_call_runs() {
    Class::<Counter>::new("mc_test", "Counter")
        .init(|| Counter(Mutex::new(1)))
        .def("get", |c: &Counter| *c.0.lock().unwrap())
        .register()
        .unwrap();
    let c = classes::instantiate("mc_test::Counter", &[]).unwrap();
    let op = dispatcher().find("higher_order::call_torchbind").unwrap();
    assert_eq!(c.call_method("get", &[]).unwrap().to_string(), "1");
    op.override_kernel(
        DispatchKey::CPU,
        Kernel::from_closure("test", |_, _, args| {
            assert!(matches!(args, [Value::Object(_), Value::Str(m)] if m == "get"));
            Ok(vec![Value::Int(7)])
        }),
    )
    .unwrap();
    let replaced = c.call_method("get", &[]);
    assert!(op.remove_kernel(DispatchKey::CPU));
    assert_eq!(replaced.unwrap().to_string(), "7");
    assert_eq!(c.call_method("get", &[]).unwrap().to_string(), "1");
}
