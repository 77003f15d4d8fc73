//! The `implements` / `HANDLED_FUNCTIONS` pattern of the "Extending PyTorch"
//! notes: a table from overridden function to its implementation for one
//! tensor-like type, consulted by the type's `__torch_function__`.

use super::{Class, Func, FunctionCall, Handled};
use crate::error::Result;
use crate::value::Value;
use std::collections::HashMap;
use std::sync::Arc;

type Implementation = Arc<dyn Fn(&FunctionCall<'_>) -> Result<Value> + Send + Sync>;

/// Implementations of overridden functions for one tensor-like type.
///
/// ```
/// use opforge::overrides::{Class, Func, HandledFunctions, Handled};
/// use opforge::{Tensor, Value};
/// use std::sync::Arc;
///
/// struct ScalarTensor { n: usize, value: f64 }
/// let mut handled = HandledFunctions::new();
/// handled.implements(Func::named("torch.mean").unwrap(), |call| {
///     let s = call.args()[0].as_tensor().and_then(|t| t.payload::<ScalarTensor>()).unwrap();
///     Ok(Value::Float(s.value / s.n as f64))
/// });
/// let handled = Arc::new(handled);
/// let class = Class::duck("ScalarTensor")
///     .torch_function(move |cls, call| handled.handle(cls, &[], call))
///     .build();
/// let d = Tensor::duck(&class, ScalarTensor { n: 5, value: 2.0 }).unwrap();
/// let mean = opforge::overrides::call("torch.mean", &[Value::Tensor(d)], &[]).unwrap();
/// assert!(matches!(mean, Value::Float(x) if x == 0.4));
/// ```
#[derive(Default, Clone)]
pub struct HandledFunctions {
    table: HashMap<Func, Implementation>,
}

impl HandledFunctions {
    /// An empty table.
    pub fn new() -> HandledFunctions {
        HandledFunctions::default()
    }

    /// `@implements(func)`: registers the implementation of `func`.
    pub fn implements(
        &mut self,
        func: Func,
        f: impl Fn(&FunctionCall<'_>) -> Result<Value> + Send + Sync + 'static,
    ) -> &mut HandledFunctions {
        self.table.insert(func, Arc::new(f));
        self
    }

    /// Is there an implementation for `func`?
    pub fn contains(&self, func: Func) -> bool {
        self.table.contains_key(&func)
    }

    /// The handler body of the notes: `NotImplemented` unless `func` is in the
    /// table and every type in `call.types()` is `cls`, a tensor subclass or one of
    /// `also` (a subclass of any); else the registered implementation's result.
    pub fn handle(&self, cls: &Class, also: &[Class], call: &FunctionCall<'_>) -> Result<Handled> {
        let Some(f) = self.table.get(&call.func()) else {
            return Ok(Handled::NotImplemented);
        };
        let accepted = |t: &Class| {
            t.is_tensor_subclass()
                || t.is_subclass_of(cls)
                || also.iter().any(|a| t.is_subclass_of(a))
        };
        if !call.types().iter().all(accepted) {
            return Ok(Handled::NotImplemented);
        }
        f(call).map(Handled::Value)
    }
}
