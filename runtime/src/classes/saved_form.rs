//! Tensors through serde: what a custom class's pickled state holds
//! (`opforge::classes`, `def_pickle`). A tensor is saved as its dtype, shape,
//! `requires_grad` and elements in row-major order; floating elements as
//! their bit patterns, so that every value (NaN payloads, -0.0, infinities)
//! comes back exactly. Strides are not kept: a loaded tensor is contiguous.
//!
//! ```
//! use opforge::Tensor;
//! let t = Tensor::from_vec(vec![1.5f32, -0.0, f32::NAN], &[3])?;
//! let text = serde_json::to_string(&t).unwrap();
//! let back: Tensor = serde_json::from_str(&text).unwrap();
//! let bits = |t: &Tensor| -> Vec<u32> { t.to_vec::<f32>().unwrap().iter().map(|x| x.to_bits()).collect() };
//! assert_eq!((back.shape(), bits(&back)), (t.shape(), bits(&t)));
//! # Ok::<(), opforge::Error>(())
//! ```

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::{Device, Tensor};
use serde::{de, ser, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Value as Json};

impl Tensor {
    /// The saved form (see the module docs).
    fn saved_form(&self) -> Result<Json> {
        if self.device() == Device::Meta {
            return Err(Error::Runtime("a meta tensor has no data to save".into()));
        }
        let data = match self.dtype() {
            DType::Bool => json!(self.to_vec::<bool>()?),
            DType::Int32 | DType::Int64 => json!(self.to_vec::<i64>()?),
            DType::Float32 => {
                let xs = self.to_vec::<f32>()?;
                json!(xs.iter().map(|x| x.to_bits()).collect::<Vec<u32>>())
            }
            DType::Float64 => {
                let xs = self.to_vec::<f64>()?;
                json!(xs.iter().map(|x| x.to_bits()).collect::<Vec<u64>>())
            }
        };
        Ok(json!({
            "dtype": self.dtype().name(),
            "shape": self.shape(),
            "requires_grad": self.requires_grad(),
            "data": data,
        }))
    }

    /// A tensor from its saved form.
    fn from_saved_form(v: &Json) -> Result<Tensor> {
        let bad = |what: &str| Error::Runtime(format!("not a saved tensor: {what}").into());
        let dtype = v["dtype"]
            .as_str()
            .and_then(DType::from_name)
            .ok_or_else(|| bad("no known `dtype`"))?;
        let shape: Vec<usize> = v["shape"]
            .as_array()
            .and_then(|xs| xs.iter().map(|x| x.as_u64().map(|n| n as usize)).collect())
            .ok_or_else(|| bad("no `shape`"))?;
        let data = v["data"].as_array().ok_or_else(|| bad("no `data`"))?;
        let ints = || -> Result<Vec<i64>> {
            data.iter()
                .map(|x| x.as_i64().ok_or_else(|| bad("a non-integer element")))
                .collect()
        };
        let bits = || -> Result<Vec<u64>> {
            data.iter()
                .map(|x| {
                    x.as_u64()
                        .ok_or_else(|| bad("a float element that is not its bits"))
                })
                .collect()
        };
        let t = match dtype {
            DType::Bool => {
                let xs: Option<Vec<bool>> = data.iter().map(Json::as_bool).collect();
                Tensor::from_vec(xs.ok_or_else(|| bad("a non-bool element"))?, &shape)?
            }
            DType::Int64 => Tensor::from_vec(ints()?, &shape)?,
            DType::Int32 => {
                let xs: Option<Vec<i32>> =
                    ints()?.into_iter().map(|x| i32::try_from(x).ok()).collect();
                Tensor::from_vec(
                    xs.ok_or_else(|| bad("an int32 element out of range"))?,
                    &shape,
                )?
            }
            DType::Float32 => {
                let xs: Option<Vec<f32>> = bits()?
                    .into_iter()
                    .map(|b| u32::try_from(b).ok().map(f32::from_bits))
                    .collect();
                Tensor::from_vec(
                    xs.ok_or_else(|| bad("a float32 element's bits out of range"))?,
                    &shape,
                )?
            }
            DType::Float64 => {
                Tensor::from_vec(bits()?.into_iter().map(f64::from_bits).collect(), &shape)?
            }
        };
        if v["requires_grad"].as_bool() == Some(true) {
            t.set_requires_grad(true)?;
        }
        Ok(t)
    }
}

impl Serialize for Tensor {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.saved_form()
            .map_err(|e| <S::Error as ser::Error>::custom(e.to_string()))?
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Tensor {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Tensor, D::Error> {
        let v = Json::deserialize(d)?;
        Tensor::from_saved_form(&v).map_err(|e| <D::Error as de::Error>::custom(e.to_string()))
    }
}
