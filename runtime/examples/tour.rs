//! A tour of opforge in six steps: calling operators, views, where an
//! operator comes from (its YAML entry), adding a kernel, meta tensors, and
//! the errors you get.
//!
//! Run with `cargo run --example tour`.

use opforge::dispatch::{dispatcher, DispatchKey, KeySet, LocalKeys};
use opforge::{kernel, library, ops, torch, DType, Device, OpId, Result, Scalar, Tensor, Value};
use opforge::{BINDINGS, OPS};

/// Step 4: a kernel of our own for `mul.Tensor`, at the Python key (below
/// autograd, above the backends). It logs, then computes with the CPU kernel.
/// `#[kernel]` checks this signature against the schema at compile time.
#[kernel(Python, "mul.Tensor")]
fn mul_logged(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    println!(
        "    [our Python-key kernel] mul.Tensor({:?}, {:?})",
        self_.shape(),
        other.shape()
    );
    opforge::kernels::cpu::mul_Tensor(self_, other)
}

fn show(t: &Tensor) -> String {
    format!(
        "{t}  shape={:?} strides={:?} offset={}",
        t.shape(),
        t.strides(),
        t.storage_offset()
    )
}

fn main() -> Result<()> {
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    let b = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], &[3])?;

    println!("1. Calling operators: typed functions, methods and std operators");
    println!("    a = {a}\n    b = {b}");
    println!(
        "    torch::add(a, b)              = {}",
        torch::add(&a, &b)?
    );
    println!(
        "    ops::add_Tensor(a, b, alpha=2) = {}  (every argument, the exact overload)",
        ops::add_Tensor(&a, &b, Scalar::Int(2))?
    );
    println!("    a.sum()                       = {}", a.sum()?);
    println!("    &a + 0.5                      = {}", (&a + 0.5)?);
    println!("    a.max(1) values               = {}", a.max(1)?.0);
    let int_sum = torch::add(
        &Tensor::from_vec(vec![1i64, 2], &[2])?,
        &Tensor::scalar(0.5f64),
    )?;
    println!("    int64 tensor + 0-dim float64  = {int_sum} (PyTorch's type promotion)");
    let by_name = library::call("aten::mul", &[Value::Tensor(b.clone()), Value::Int(2)], &[])?;
    println!(
        "    by name, like torch.ops.aten.mul(b, 2): {:?}",
        by_name[0]
    );

    println!("\n2. A view shares its base's storage: writing through it changes the base");
    let base = a.deep_clone()?;
    let mut row = base.select(0, 1)?;
    println!("    row = base.select(0, 1): {}", show(&row));
    row.fill_scalar_(Scalar::Float(-1.0))?;
    println!("    after row.fill_(-1):  base = {base}");
    let t = base.t()?;
    println!(
        "    base.t(): {} (shares storage: {})",
        show(&t),
        t.shares_storage(&base)
    );

    println!(
        "\n3. Where an operator comes from: one YAML entry ({} overloads, {} Python bindings here)",
        OPS.len(),
        BINDINGS.len()
    );
    let add = OpId::from_name("add.Tensor").expect("in the YAML").schema();
    println!("    {}", add.schema);
    for k in add.kernels {
        println!("      kernel for {:<5} {}", k.key, k.kernel);
    }
    let binding = BINDINGS
        .iter()
        .find(|b| b.name == "torch.add")
        .expect("derived");
    for s in binding.signatures.iter().filter(|s| !s.deprecated) {
        println!("      torch.add's parser signature: {}", s.text);
    }

    println!("\n4. A kernel registered with #[kernel] runs when its key is in the call's key set");
    {
        let _python = LocalKeys::include(KeySet::of(DispatchKey::Python));
        println!("    a * b = {}", (&a * &b)?);
    }
    println!(
        "    (without the Python key, the CPU kernel runs directly) a * b = {}",
        (&a * &b)?
    );

    println!("\n5. Meta tensors have shapes and dtypes but no data; the Meta kernels run");
    let m1 = Tensor::zeros(&[2, 3], DType::Float32, Device::Meta);
    let m2 = Tensor::zeros(&[3, 4], DType::Float64, Device::Meta);
    match m1.matmul(&m2) {
        Ok(t) => println!("    matmul(float32 [2, 3], float64 [3, 4]) -> {t}"),
        Err(e) => println!(
            "    matmul(float32 [2, 3], float64 [3, 4]) -> {}: {e}",
            e.python_class()
        ),
    }
    let mm = m1.matmul(&m2.to(DType::Float32)?)?;
    println!("    matmul(float32 [2, 3], float32 [3, 4]) -> {mm}");

    println!("\n6. Errors say what went wrong, with PyTorch's words");
    let c = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    if let Err(e) = &a + &c {
        println!("    a [2, 3] + c [2] -> {}: {e}", e.python_class());
    }
    if let Err(e) = library::call("aten::mull", &[Value::Tensor(b.clone())], &[]) {
        println!("    library::call(\"aten::mull\", ..) -> {e}");
    }
    // The dispatcher picks a kernel by the keys the call's tensors bring (a CPU
    // tensor brings CPU). A call whose key set is empty (no tensor argument)
    // has no backend to run, and says so as PyTorch does.
    let op = dispatcher().op(OpId::add_Tensor);
    if let Err(e) = op.kernel(KeySet::EMPTY) {
        println!("    add.Tensor dispatched with an empty key set -> {e}");
    }
    println!(
        "    and a kernel whose Rust signature does not match its schema does not compile:\n    \
         see the cases in tests/tests/ui/fail/ and their messages (docs/your-own-crate.md, \"Adding an operator\")"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tour_runs() {
        super::main().expect("every step of the tour runs");
    }
}
