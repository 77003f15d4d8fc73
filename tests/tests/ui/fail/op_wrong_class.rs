// `#[op]`: a custom-class parameter is `&T` of the type `#[custom_class]`
// names the schema's class with (or the `&ScriptObject`); `&T` of another
// class, or a type that is no class, is one error at the type, naming the
// class the schema wants.
use opforge::{custom_class, op, Result, Tensor};

#[custom_class("uifail::Queue")]
pub struct Queue;

#[custom_class("uifail::Stack")]
pub struct Stack;

#[op("uifail::push(__torch__.torch.classes.uifail.Queue q, Tensor x) -> ()")]
fn push(q: &Stack, x: &Tensor) -> Result<()> {
    let _ = (q, x);
    Ok(())
}

#[op("uifail::pop(__torch__.torch.classes.uifail.Queue q) -> Tensor")]
fn pop(q: &Tensor) -> Result<Tensor> {
    Ok(q.clone())
}

fn main() {}
