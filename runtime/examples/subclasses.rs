//! PyTorch's subclass examples at the function level (`__torch_function__`):
//! RFC-0001's `SubTensor` with a class attribute, the `LoggingTensor` of its
//! "Extending PyTorch" notes
//! (logs every call, then does what `Tensor.__torch_function__` does) and
//! `MetadataTensor` (a duck wrapper carrying a metadata dict through every call).
//!
//! Run: `cargo run -p opforge --example subclasses`.

use opforge::overrides::{Class, Handled};
use opforge::{torch, Result, Tensor, Value};
use std::sync::{Arc, Mutex};

/// `class SubTensor(torch.Tensor): a = 1`
fn sub_tensor() -> Class {
    Class::subclass("SubTensor")
        .attr("a", Value::Int(1))
        .build()
}

/// `LoggingTensor`: logs `func` and its arguments, then `super().__torch_function__`.
fn logging_tensor(log: Arc<Mutex<Vec<String>>>) -> Class {
    Class::subclass("LoggingTensor")
        .torch_function(move |cls, call| {
            let args: Vec<String> = call.args().iter().map(|a| format!("{a:?}")).collect();
            log.lock().expect("log lock").push(format!(
                "func: {}, args: ({})",
                call.func(),
                args.join(", ")
            ));
            call.default(cls)
        })
        .build()
}

/// `MetadataTensor`'s instance data: the wrapped tensor and its metadata.
struct Metadata {
    t: Tensor,
    metadata: Vec<(String, String)>,
}

/// `MetadataTensor`: unwraps its instances, calls the function, wraps the result
/// with the first argument's metadata.
fn metadata_tensor() -> Class {
    Class::duck("MetadataTensor")
        .torch_function(|cls, call| {
            let metadata = call
                .args()
                .iter()
                .find_map(|a| a.as_tensor()?.payload::<Metadata>())
                .map(|m| m.metadata.clone())
                .ok_or_else(|| opforge::Error::Runtime("no MetadataTensor argument".into()))?;
            let args = opforge::overrides::map_tensors(call.args(), &mut |t| {
                t.payload::<Metadata>()
                    .map_or_else(|| t.clone(), |m| m.t.clone())
            });
            let ret = call.func().call(&args, call.kwargs())?;
            let t = ret
                .as_tensor()
                .cloned()
                .ok_or_else(|| opforge::Error::Runtime("expected a tensor result".into()))?;
            Ok(Handled::Value(Value::Tensor(Tensor::duck(
                cls,
                Metadata { t, metadata },
            )?)))
        })
        .repr(|t| {
            let m = t.payload::<Metadata>().expect("a MetadataTensor");
            format!("Metadata:\n{:?}\n\ndata:\n{}", m.metadata, m.t)
        })
        .build()
}

fn main() -> Result<()> {
    let sub = sub_tensor();
    let t = Tensor::from_vec(vec![1.0f32], &[1])?.as_subclass(&sub)?;
    let s = t.sum()?;
    println!(
        "t.sum() is a SubTensor: {}, s.a = {:?}",
        s.is_instance(&sub),
        s.class_attr("a")
    );

    let log = Arc::new(Mutex::new(Vec::new()));
    let logging = logging_tensor(log.clone());
    let l = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.as_subclass(&logging)?;
    let _ = (&l * 2.0)?.sum()?;
    for line in log.lock().expect("log lock").iter() {
        println!("{line}");
    }

    let class = metadata_tensor();
    let m = Tensor::duck(
        &class,
        Metadata {
            t: Tensor::from_vec(vec![1i64, 2, 3, 4], &[2, 2])?,
            metadata: vec![("owner".into(), "Ministry of Silly Walks".into())],
        },
    )?;
    let t = Tensor::from_vec(vec![1i64, 2, 1, 2], &[2, 2])?;
    println!("{}", torch::add(&t, &m)?);
    println!("{}", torch::mul(&t, &m)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use opforge::overrides::TensorIndex;

    #[test]
    fn rfc_subtensor() {
        let sub = sub_tensor();
        let t = Tensor::from_vec(vec![1.0f32], &[1])
            .unwrap()
            .as_subclass(&sub)
            .unwrap();
        let other = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
        for x in [
            t.sum().unwrap(),
            t.getitem(&[TensorIndex::Int(0)]).unwrap(),
            (&t + &other).unwrap(),
            (&other + &t).unwrap(),
        ] {
            assert!(x.is_instance(&sub));
            assert!(matches!(x.class_attr("a"), Some(Value::Int(1))));
        }
    }

    #[test]
    fn logging_tensor_logs_and_keeps_its_class() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let logging = logging_tensor(log.clone());
        let l = Tensor::from_vec(vec![1.0f32, 2.0], &[2])
            .unwrap()
            .as_subclass(&logging)
            .unwrap();
        let s = (&l * 2.0).unwrap().sum().unwrap();
        assert!(s.is_instance(&logging));
        assert_eq!(s.to_vec::<f32>().unwrap(), vec![6.0]);
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 2);
        assert!(log[0].starts_with("func: torch.Tensor.mul, args: ("));
        assert!(log[1].starts_with("func: torch.Tensor.sum, args: ("));
    }

    #[test]
    fn metadata_tensor_propagates_metadata() {
        let class = metadata_tensor();
        let m = Tensor::duck(
            &class,
            Metadata {
                t: Tensor::from_vec(vec![1i64, 2, 3, 4], &[2, 2]).unwrap(),
                metadata: vec![("owner".into(), "Ministry of Silly Walks".into())],
            },
        )
        .unwrap();
        let t = Tensor::from_vec(vec![1i64, 2, 1, 2], &[2, 2]).unwrap();
        for (out, want) in [
            (torch::add(&t, &m).unwrap(), vec![2, 4, 4, 6]),
            (torch::mul(&t, &m).unwrap(), vec![1, 4, 3, 8]),
        ] {
            let md = out.payload::<Metadata>().unwrap();
            assert_eq!(md.metadata[0].1, "Ministry of Silly Walks");
            assert_eq!(md.t.to_vec::<i64>().unwrap(), want);
        }
        assert!(torch::add(&t, &m)
            .unwrap()
            .to_string()
            .starts_with("Metadata:\n[(\"owner\", \"Ministry of Silly Walks\")]"));
    }
}
