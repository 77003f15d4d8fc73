//! `Tensor` methods for subclasses, wrappers and duck tensor-likes, and the
//! Python-level properties and indexing, which go through the protocol.

use super::class::not_a_tensor_class;
use super::index::{apply_index, index_value, TensorIndex};
use super::members::{self, MEMBERS};
use super::{function_modes_active, typed_member, Class, Kwargs};
use crate::error::{Error, Result};
use crate::tensor::{Buffer, DType, Device, Ext, Geometry, Layout, Scalar, Storage, Tensor};
use crate::value::{ToValue, Value};
use std::any::Any;
use std::sync::Arc;

macro_rules! property {
    ($(#[$doc:meta])* $name:ident, $member:ident, $ret:ty, $fast:expr) => {
        $(#[$doc])*
        pub fn $name(&self) -> Result<$ret> {
            if self.is_plain() && !function_modes_active() {
                let f: fn(&Tensor) -> Result<$ret> = $fast;
                return f(self);
            }
            let fast: fn(&Tensor) -> Result<$ret> = $fast;
            let me = self;
            typed_member(
                &MEMBERS[members::$member],
                &[&(me,)],
                &|| (vec![ToValue::to_value(&me)], Kwargs::new()),
                &|| fast(me),
                &|| me.$name(),
            )
        }
    };
}

impl Tensor {
    /// The class of a subclass instance, wrapper or duck (`None` for a plain tensor).
    pub fn class(&self) -> Option<&Class> {
        self.ext().and_then(super::class::class_of)
    }

    /// `isinstance(self, cls)`.
    pub fn is_instance(&self, cls: &Class) -> bool {
        self.class().is_some_and(|c| c.is_subclass_of(cls))
    }

    /// A class attribute of this tensor's class (`t.a` for `class S(Tensor): a = 1`).
    pub fn class_attr(&self, name: &str) -> Option<Value> {
        self.class().and_then(|c| c.attr(name))
    }

    /// The instance data of a wrapper or duck, if it is a `T`.
    pub fn payload<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.ext()?.payload.as_deref()?.downcast_ref::<T>()
    }

    /// `Tensor.as_subclass(cls)`: a new tensor of class `cls` sharing this one's data
    /// (an alias with the same geometry; the handlers of `cls` apply to it). `cls`
    /// must be a tensor subclass.
    ///
    /// ```
    /// use opforge::overrides::Class;
    /// use opforge::Tensor;
    /// let sub = Class::subclass("Sub").build();
    /// let t = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    /// let s = t.as_subclass(&sub).unwrap();
    /// assert!(s.shares_storage(&t) && !s.is_same(&t) && s.is_instance(&sub));
    /// let duck = Class::duck("Duck").build();
    /// assert!(t.as_subclass(&duck).is_err());
    /// ```
    pub fn as_subclass(&self, cls: &Class) -> Result<Tensor> {
        if !cls.is_tensor_subclass() {
            return Err(not_a_tensor_class());
        }
        let payload = self.ext().and_then(|e| e.payload.clone());
        Ok(Tensor::with_ext(
            self.dtype(),
            self.device(),
            self.geometry(),
            Ext::new(cls.clone(), cls.keys(), payload),
        ))
    }

    /// A duck tensor-like: a value of class `cls` (made with [`Class::duck`]) that
    /// is not a tensor but can be passed wherever one is taken; every call with it
    /// goes to `cls`'s `__torch_function__`. Its fields are `payload`
    /// ([`Tensor::payload`]). Its own metadata (`dtype()`, `shape()`) is that of
    /// an empty meta tensor: ask through the protocol (`get_shape()`).
    pub fn duck<T: Any + Send + Sync>(cls: &Class, payload: T) -> Result<Tensor> {
        if cls.is_tensor_subclass() {
            return Err(Error::Type(
                format!(
                    "{} is a tensor subclass; make instances with as_subclass or wrapper",
                    cls.name()
                )
                .into(),
            ));
        }
        Ok(Tensor::with_ext(
            DType::Float32,
            Device::Meta,
            Geometry {
                storage: Storage::new(Buffer::Meta(0)),
                shape: smallvec::smallvec![0],
                strides: smallvec::smallvec![1],
                offset: 0,
            },
            Ext::new(cls.clone(), cls.keys(), Some(Arc::new(payload))),
        ))
    }

    /// A wrapper subclass instance (`Tensor._make_wrapper_subclass`): a tensor of
    /// class `cls` with `like`'s shape, strides, dtype and device but no storage of
    /// its own, holding `payload` (typically the wrapped tensor). Its class needs a
    /// `__torch_dispatch__` that unwraps, computes and wraps.
    pub fn wrapper<T: Any + Send + Sync>(cls: &Class, like: &Tensor, payload: T) -> Result<Tensor> {
        if !cls.is_tensor_subclass() {
            return Err(not_a_tensor_class());
        }
        let g = like.geometry();
        let len = g.storage.len();
        Ok(Tensor::with_ext(
            like.dtype(),
            like.device(),
            Geometry {
                storage: Storage::new(Buffer::Meta(len)),
                ..g
            },
            Ext::new(cls.clone(), cls.keys(), Some(Arc::new(payload))),
        ))
    }

    property!(
        /// `t.shape` through the protocol (`Tensor.shape.__get__`). [`Tensor::shape`]
        /// is the tensor's own metadata, which never dispatches.
        get_shape, SHAPE, Vec<i64>, |t| Ok(t.sizes())
    );
    property!(
        /// `t.dtype` through the protocol.
        get_dtype, DTYPE, DType, |t| Ok(t.dtype())
    );
    property!(
        /// `t.device` through the protocol.
        get_device, DEVICE, Device, |t| Ok(t.device())
    );
    property!(
        /// `t.ndim` through the protocol.
        get_ndim, NDIM, i64, |t| Ok(t.dim() as i64)
    );
    property!(
        /// `t.layout` through the protocol.
        get_layout, LAYOUT, Layout, |_| Ok(Layout::Strided)
    );
    property!(
        /// `t.is_meta` through the protocol.
        get_is_meta, IS_META, bool, |t| Ok(t.device() == Device::Meta)
    );
    property!(
        /// `t.T` through the protocol: the dimensions reversed (a view).
        get_t, T, Tensor, members::reversed
    );
    property!(
        /// `t.grad` through the protocol (the accumulated gradient, `None` if
        /// there is none); subclasses' default handler returns it unconverted.
        get_grad, GRAD, Option<Tensor>, |t| Ok(t.grad())
    );

    /// `t.backward()` through the protocol (`Tensor.backward`, PyTorch's
    /// `torch/_tensor.py` method: handlers and function modes see it, with
    /// its keyword arguments `gradient`, `retain_graph`, `create_graph`,
    /// `inputs`), then the engine ([`crate::autograd::backward`]). For a
    /// one-element tensor the gradient is implicitly 1.
    ///
    /// ```
    /// use opforge::{at, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// x.set_requires_grad(true)?;
    /// at::sum(&(&x * &x)?, None)?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![2.0, 4.0]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn backward(&self) -> Result<()> {
        self.backward_with(None, None, false, None)
    }

    /// [`Tensor::backward`] with PyTorch's arguments.
    pub fn backward_with(
        &self,
        gradient: Option<&Tensor>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&[Tensor]>,
    ) -> Result<()> {
        let run = || {
            crate::autograd::backward(
                std::slice::from_ref(self),
                &[gradient.cloned()],
                retain_graph,
                create_graph,
                inputs,
            )
        };
        if self.is_plain() && gradient.is_none_or(Tensor::is_plain) && !function_modes_active() {
            return run();
        }
        let boxed = || {
            let kwargs: Kwargs = vec![
                (
                    "gradient".into(),
                    gradient.map_or(Value::None, |g| Value::Tensor(g.clone())),
                ),
                (
                    "retain_graph".into(),
                    retain_graph.map_or(Value::None, Value::Bool),
                ),
                ("create_graph".into(), Value::Bool(create_graph)),
                (
                    "inputs".into(),
                    inputs.map_or(Value::None, |i| Value::TensorList(i.to_vec())),
                ),
            ];
            (vec![ToValue::to_value(&self)], kwargs)
        };
        let me = self;
        typed_member(
            &MEMBERS[members::BACKWARD],
            &[&(me,)],
            &boxed,
            &run,
            &|| me.backward_with(gradient, retain_graph, create_graph, inputs),
        )
    }
    property!(
        /// `len(t)` through the protocol (`Tensor.__len__`): the size of dimension 0.
        len_, LEN, i64, members::len
    );
    property!(
        /// `repr(t)` through the protocol (`Tensor.__repr__`).
        repr, REPR, String, |t| Ok(t.to_string())
    );
    property!(
        /// `bool(t)` through the protocol (`Tensor.__bool__`), for one-element tensors.
        to_bool, BOOL, bool, |t| members::item(t).map(|s| s.to_bool())
    );
    property!(
        /// `float(t)` through the protocol (`Tensor.__float__`), for one-element tensors.
        to_f64, FLOAT, f64, |t| members::item(t).map(|s| s.to_f64())
    );

    /// `t[index]` through the protocol (`Tensor.__getitem__`): one
    /// [`TensorIndex`] per leading dimension; the result is a view.
    ///
    /// ```
    /// use opforge::overrides::TensorIndex;
    /// use opforge::Tensor;
    /// let t = Tensor::from_vec((0..6i64).collect(), &[2, 3]).unwrap();
    /// let row = t.getitem(&[1.into()]).unwrap();
    /// assert_eq!(row.to_vec::<i64>().unwrap(), vec![3, 4, 5]);
    /// let col = t.getitem(&[(..).into(), (1..3).into()]).unwrap();
    /// assert_eq!(col.to_vec::<i64>().unwrap(), vec![1, 2, 4, 5]);
    /// ```
    pub fn getitem(&self, index: &[TensorIndex]) -> Result<Tensor> {
        if self.is_plain() && !function_modes_active() {
            return apply_index(self, index);
        }
        let me = self;
        typed_member(
            &MEMBERS[members::GETITEM],
            &[&(me,)],
            &|| {
                (
                    vec![ToValue::to_value(&me), index_value(index)],
                    Kwargs::new(),
                )
            },
            &|| apply_index(me, index),
            &|| me.getitem(index),
        )
    }

    /// `t[index] = value` through the protocol (`Tensor.__setitem__`): copies
    /// `value` (a tensor, broadcast) into the indexed view.
    pub fn setitem(&self, index: &[TensorIndex], value: &Tensor) -> Result<()> {
        let run = || members::setitem(self, index, value);
        if self.is_plain() && value.is_plain() && !function_modes_active() {
            return run();
        }
        let (me, v) = (self, value);
        typed_member(
            &MEMBERS[members::SETITEM],
            &[&(me, v)],
            &|| {
                (
                    vec![
                        ToValue::to_value(&me),
                        index_value(index),
                        ToValue::to_value(&v),
                    ],
                    Kwargs::new(),
                )
            },
            &run,
            &|| me.setitem(index, v),
        )
    }

    /// `t[index] = value` for a number.
    pub fn setitem_scalar(&self, index: &[TensorIndex], value: impl Into<Scalar>) -> Result<()> {
        let value = Tensor::from_scalar(value.into(), self.dtype(), Device::Cpu);
        self.setitem(index, &value)
    }
}
