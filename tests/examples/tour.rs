//! A tour of opforge: from a YAML entry to a dispatched call.
//!
//! Run with `cargo run --example tour`.

use opforge::dispatch::{dispatcher, DispatchKey, KeySet, LocalKeys};
use opforge::{kernel, ops, torch, DType, Device, OpId, Result, Scalar, Tensor, BINDINGS, OPS};

/// 2. A kernel of our own: `mul.Tensor` at the Python key (below autograd, above
/// the backends), logging and then computing with the CPU kernel. `#[kernel]`
/// checks this signature against the schema at compile time.
#[kernel(Python, "mul.Tensor")]
fn mul_logged(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    println!(
        "    [Python-key kernel] mul.Tensor({:?}, {:?})",
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
    println!(
        "opforge tour: {} operator overloads and {} Python bindings generated from native_functions.yaml\n",
        OPS.len(),
        BINDINGS.len()
    );

    println!("1. An operator from the YAML, as the generator derived it:");
    let add = OpId::from_name("add.Tensor").expect("in the YAML").schema();
    println!("  {}", add.schema);
    for k in add.kernels {
        println!("    kernel for {:<5} {}", k.key, k.kernel);
    }
    let binding = BINDINGS
        .iter()
        .find(|b| b.name == "torch.add")
        .expect("derived");
    for s in binding.signatures {
        println!("    torch.add parser signature: {}", s.text);
    }

    println!("\n2. A kernel registered with #[kernel] runs when its key is in the call's key set:");
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    let b = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], &[3])?;
    {
        let _python = LocalKeys::include(KeySet::of(DispatchKey::Python));
        println!("    a * b = {}", (&a * &b)?);
    }
    println!(
        "    (without the Python key, the CPU kernel runs directly) a * b = {}",
        (&a * &b)?
    );

    println!("\n3. Typed calls, methods and operators (schema defaults applied):");
    println!(
        "    ops::add_Tensor(a, b, alpha=2) = {}",
        ops::add_Tensor(&a, &b, Scalar::Int(2))?
    );
    println!(
        "    torch::add(a, b)              = {}",
        torch::add(&a, &b)?
    );
    println!("    a.sum()                       = {}", a.sum()?);
    println!("    &a + 0.5                      = {}", (&a + 0.5)?);
    println!("    a.max(1) values (max.dim)     = {}", a.max(1)?.0);
    let int_sum = torch::add(
        &Tensor::from_vec(vec![1i64, 2], &[2])?,
        &Tensor::scalar(0.5f64),
    )?;
    println!("    int64 tensor + 0-dim float64  = {int_sum} (type promotion)");

    println!("\n4. A view aliases its base: writing through it changes the base:");
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

    println!("\n5. Meta tensors carry shapes and dtypes, no data; the Meta kernels run:");
    let m1 = Tensor::zeros(&[2, 3], DType::Float32, Device::Meta);
    let m2 = Tensor::zeros(&[3, 4], DType::Float64, Device::Meta);
    match m1.matmul(&m2) {
        Ok(t) => println!("    matmul(float32 [2, 3], float64 [3, 4]) on meta -> {t}"),
        Err(e) => println!(
            "    matmul(float32 [2, 3], float64 [3, 4]) on meta -> {}: {e}",
            e.python_class()
        ),
    }
    let m2 = m2.to(DType::Float32)?;
    let mm = m1.matmul(&m2)?;
    println!("    matmul(float32 [2, 3], float32 [3, 4]) on meta -> {mm}");

    println!("\n6. Helpful errors, at run time and at compile time:");
    let c = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    match &a + &c {
        Ok(t) => println!("    (unexpected) {t}"),
        Err(e) => println!("    a [2, 3] + c [2] -> {}: {e}", e.python_class()),
    }
    let op = dispatcher().op(OpId::add_Tensor);
    let none = op.kernel(KeySet::EMPTY).err().map(|e| e.to_string());
    println!(
        "    dispatching with an empty key set: {}",
        none.unwrap_or_default()
    );
    println!("    a kernel whose parameter type does not match its schema does not compile:");
    for line in include_str!("../tests/ui/fail/params/wrong-type.stderr").lines() {
        println!("      | {line}");
    }
    Ok(())
}
