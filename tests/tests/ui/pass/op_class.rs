// `#[op]` with a custom-class argument: the kernel takes the value inside the
// object (`&Counter`) or the object (`&ScriptObject`); calls go typed and by
// name, and an object of another class is refused.
use opforge::classes;
use opforge::{custom_class, methods, op, Result, ScriptObject, Tensor, Value};
use std::sync::Mutex;

#[custom_class("uipass::Counter")]
pub struct Counter(Mutex<i64>);

#[methods]
impl Counter {
    pub fn new() -> Self {
        Counter(Mutex::new(0))
    }
    pub fn get(&self) -> i64 {
        *self.0.lock().unwrap()
    }
}

#[op("uipass::count(__torch__.torch.classes.uipass.Counter c, Tensor x) -> Tensor")]
fn count(c: &Counter, x: &Tensor) -> Result<Tensor> {
    *c.0.lock().unwrap() += 1;
    Ok(x.clone())
}

#[op("uipass::name_of(__torch__.torch.classes.uipass.Counter c) -> str")]
fn name_of(c: &ScriptObject) -> Result<String> {
    Ok(c.qualified_name().to_string())
}

fn main() {
    let c = classes::instantiate("uipass::Counter", &[]).unwrap();
    let x = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    count(&c, &x).unwrap();
    opforge::library::call(
        "uipass::count",
        &[Value::Object(c.clone()), Value::Tensor(x.clone())],
        &[],
    )
    .unwrap();
    assert_eq!(c.downcast_ref::<Counter>().unwrap().get(), 2);
    assert_eq!(name_of(&c).unwrap(), "uipass.Counter");
}
