//! State dicts as safetensors files: a file PyTorch 2.15 wrote
//! (`tests/record/safetensors_mlp.py`) loads into the same architecture
//! built here and gives PyTorch's outputs; every runtime dtype round-trips
//! bit for bit; a dtype the runtime has not, and a mismatched architecture,
//! are errors naming the entry.

use opforge::nn::{Linear, Module, Sequential, StateDict, Tanh};
use opforge::{DType, Tensor};
use std::path::PathBuf;

fn data(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/recorded/safetensors")
        .join(file)
}

fn mlp(hidden: usize) -> Sequential {
    Sequential::new()
        .append(Linear::new(4, hidden, true).unwrap())
        .append(Tanh::new())
        .append(Linear::new(hidden, 2, true).unwrap())
}

#[test]
fn a_state_dict_pytorch_wrote_gives_pytorchs_outputs() {
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("mlp.json")).unwrap()).unwrap();
    let model = mlp(3);
    let keys = model
        .load_safetensors(data("mlp.safetensors"), true)
        .unwrap();
    assert!(keys.missing_keys.is_empty() && keys.unexpected_keys.is_empty());
    let state = StateDict::load_safetensors(data("mlp.safetensors")).unwrap();
    // By name, as safetensors' readers list a file's entries.
    let order: Vec<&str> = state.keys().collect();
    assert_eq!(order, ["0.bias", "0.weight", "2.bias", "2.weight"]);
    let mut theirs: Vec<&str> = record["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    theirs.sort();
    assert_eq!(order, theirs);
    let input: Vec<f32> = record["input"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
        })
        .collect();
    let x = Tensor::from_vec(input, &[2, 4]).unwrap();
    let y = model.forward(&x).unwrap().to_vec::<f32>().unwrap();
    let want: Vec<f32> = record["output"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
        })
        .collect();
    for (a, b) in y.iter().zip(&want) {
        assert!((a - b).abs() <= 1e-6, "{y:?} against PyTorch's {want:?}");
    }
}

#[test]
fn every_dtype_round_trips_bit_for_bit() {
    let mut state = StateDict::new();
    state.insert(
        "b",
        Tensor::from_vec(vec![true, false, true], &[3]).unwrap(),
    );
    state.insert(
        "i32",
        Tensor::from_vec(vec![i32::MIN, -1, 7], &[3]).unwrap(),
    );
    state.insert("i64", Tensor::from_vec(vec![i64::MAX, 0], &[2, 1]).unwrap());
    state.insert(
        "f64",
        Tensor::from_vec(vec![f64::NAN, -0.0, 1e-300], &[3]).unwrap(),
    );
    // A transposed (non-contiguous) tensor is written in its logical order.
    let m = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    state.insert("f32_t", m.t().unwrap());
    state.insert("scalar", Tensor::scalar(2.5f32));
    let back = StateDict::from_safetensors(&state.to_safetensors().unwrap()).unwrap();
    let keys: Vec<&str> = back.keys().collect();
    assert_eq!(keys, ["b", "f32_t", "f64", "i32", "i64", "scalar"]);
    for (k, t) in state.iter() {
        let u = back.get(k).unwrap();
        assert_eq!((u.dtype(), u.shape()), (t.dtype(), t.shape()), "{k}");
        assert_eq!(bits(u), bits(t), "{k}");
    }
    assert_eq!(
        back.get("f32_t").unwrap().to_vec::<f32>().unwrap(),
        [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    );
}

/// A tensor's elements as bits, whatever its dtype.
fn bits(t: &Tensor) -> Vec<u64> {
    fn each<T: opforge::tensor::IntoBuffer>(t: &Tensor, f: fn(T) -> u64) -> Vec<u64> {
        t.to_vec::<T>().unwrap().into_iter().map(f).collect()
    }
    match t.dtype() {
        DType::Bool => each(t, |v: bool| v.into()),
        DType::Int32 => each(t, |v: i32| v as u64),
        DType::Int64 => each(t, |v: i64| v as u64),
        DType::Float32 => each(t, |v: f32| v.to_bits().into()),
        DType::Float64 => each(t, f64::to_bits),
    }
}

/// A safetensors file by hand: the header's length, the JSON header, the
/// data.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn what_the_runtime_cannot_hold_is_an_error_naming_it() {
    let half = file(
        r#"{"w":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}}"#,
        &[0, 60],
    );
    let e = StateDict::from_safetensors(&half).unwrap_err().to_string();
    assert!(
        e.starts_with("safetensors: w: dtype F16 has no opforge dtype"),
        "{e}"
    );
    let e = StateDict::from_safetensors(b"not a file")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("safetensors: "), "{e}");
    let e = StateDict::load_safetensors(data("no_such.safetensors"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no_such.safetensors"), "{e}");
    // PyTorch's load_state_dict message for another architecture.
    let e = mlp(5)
        .load_safetensors(data("mlp.safetensors"), true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("size mismatch for 0.weight: copying a param with shape torch.Size([3, 4]) from checkpoint, the shape in current model is torch.Size([5, 4])."),
        "{e}"
    );
}

#[test]
fn a_module_saved_here_loads_into_another() {
    let dir = std::env::temp_dir().join(format!("opforge-safetensors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mlp.safetensors");
    let (a, b) = (mlp(3), mlp(3));
    a.save_safetensors(&path).unwrap();
    b.load_safetensors(&path, true).unwrap();
    let x = Tensor::from_vec(vec![0.1f32, 0.2, 0.3, 0.4], &[1, 4]).unwrap();
    assert_eq!(
        a.forward(&x).unwrap().to_vec::<f32>().unwrap(),
        b.forward(&x).unwrap().to_vec::<f32>().unwrap()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
