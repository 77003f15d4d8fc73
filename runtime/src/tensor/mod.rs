//! Tensors: cheap handles to shared, typed storage plus shape, strides and offset.
//!
//! A [`Tensor`] is an `Arc`; cloning it gives another handle to the *same* tensor
//! (same identity, as a Python reference would). A view (`view`, `t`, `select`, …)
//! is a new tensor sharing the [`Storage`] of its base, so a write through either
//! is seen by both. Element data lives in a per-dtype buffer behind a `RwLock`.
//! A kernel locks every storage it touches once (the output's for writing, each
//! other for reading; an input in the output's storage is read through the
//! write lock), in [`Storage::lock_order`], so no two calls wait on each other
//! in a cycle; aliasing inputs and outputs (`add_(t, t)`) is sound (see
//! `kernels::iter` for how the element loops keep it so).
//! Meta tensors have a storage with a size but no data.
//!
//! The kernels read and write storages through the iteration engines of
//! `kernels` (pointwise, reductions, GEMM); [`Tensor::with_view`] and
//! [`Tensor::to_array`] give ndarray views and copies for everything else.
//!
//! Element data is allocated fallibly ([`alloc`]): a size beyond the allocation
//! limit, or one the system allocator refuses, is an [`Error`] worded like
//! PyTorch's allocator error, never an aborted process. Constructors that take a
//! shape have `try_` forms returning `Result`; the plain forms are for sizes the
//! caller knows to be small.

// The buffer macros (`with_buffer!`, `with_dtype!`) are used below.
#[macro_use]
mod storage;
pub mod alloc;
mod class;
mod geometry;
mod grad;
mod locks;
mod objects;
mod print;
mod slots;
mod weak;

pub use crate::dtype::{DType, Device, Element, Layout, MemoryFormat, Scalar};
pub use alloc::{
    allocation_limit, buffer_cache, cached_bytes, huge_pages, release_cached_buffers,
    set_allocation_limit, set_buffer_cache, set_huge_pages,
};
pub use class::TensorClass;
pub(crate) use grad::SealedGraphNode;
pub use grad::{
    set_view_history, AutogradRecord, CreationMeta, GraphNode, History, ViewHistory, ViewOf,
    AUTOGRAD_KEYS,
};
pub use locks::{Reads, StorageLocks};
pub use objects::{Generator, QScheme, Stream};
pub use slots::LayerState;
pub use weak::WeakTensor;

pub(crate) use geometry::DIMS_INLINE;
pub use geometry::{
    check_sizes_product, checked_contiguous_dims, checked_numel, contiguous_dims,
    contiguous_strides, internal_overlap_error, is_contiguous_strides, is_dense_in_order,
    is_expanded, last_offset, numel, Dims, Geometry, Positions, MAX_GEOMETRY,
};
pub use print::torch_size;
pub use storage::{Buffer, IntoBuffer, Storage};

use crate::error::{Error, Result};
use crate::keys::KeySet;
use ndarray::{ArrayD, ArrayViewD, IxDyn, ShapeBuilder};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

/// The keys a tensor on `device` of the class of `ext` has before autograd
/// adds any: its backend and its class's keys.
fn class_keys(device: Device, ext: Option<&Ext>) -> KeySet {
    let ks = KeySet::for_device(device);
    match ext {
        None => ks,
        Some(ext) => ks | ext.keys,
    }
}

struct TensorInner {
    dtype: DType,
    device: Device,
    /// The dispatch keys the tensor contributes to a call ([`Tensor::key_set`],
    /// one load): its backend, its class's keys, and `Autograd` /
    /// `ADInplaceOrView` while it requires grad (`grad.rs` keeps them so).
    keys: AtomicU32,
    geometry: RwLock<Geometry>,
    /// How many times the geometry was replaced in place (`set_geometry`):
    /// what a fake's meta twin is checked against (`crate::fake`).
    geometry_changes: AtomicU32,
    /// Set for tensor subclasses, wrappers and duck tensor-likes.
    ext: Option<Arc<Ext>>,
    /// Autograd's record of the tensor, absent until autograd needs one
    /// ([`AutogradRecord`]); it does not make a tensor non-plain.
    autograd: std::sync::OnceLock<Box<dyn AutogradRecord>>,
    /// The tensor's history (`grad_fn`), if an Autograd kernel recorded it,
    /// and whether it has one ([`grad::HistoryCell`]).
    history: std::sync::Mutex<Option<History>>,
    has_history: std::sync::atomic::AtomicBool,
    /// A Python number given for a `Tensor` parameter (PyTorch's
    /// `is_wrapped_number`): it promotes as a number, not as a 0-dim tensor.
    wrapped_number: bool,
    /// Set on the result of a differentiable view operator: the tensor whose
    /// storage it views ([`grad::ViewOf`]); set once, on a fresh result.
    /// Boxed: one word in every tensor, the rest only in views.
    view: Option<Box<grad::ViewOf>>,
    /// A tensor a layer derived from this one and keeps with it, with a
    /// number of the layer's (`slots.rs`): a fake's meta twin, over its
    /// storage, that the Meta kernels of its calls run on, made on its first
    /// call, and the fake's `geometry_changes` when it was made (`crate::fake`).
    /// Empty for every other tensor.
    twin: once_cell::race::OnceBox<(Tensor, u32)>,
    /// A layer's state (`slots.rs`): what the dispatch layer that made the
    /// tensor keeps behind it (a fake's mode, a functional tensor's value,
    /// storage and views); set once, at construction.
    wrapped: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

/// What makes a tensor more than a plain tensor: its class (a tensor subclass or a
/// duck tensor-like type, see [`TensorClass`]), the dispatch keys the class
/// adds, and the instance's own data (a wrapper's inner tensor, a duck's fields).
#[doc(hidden)]
pub struct Ext {
    /// The class, and the type id of its concrete type (set together by
    /// [`Ext::new`], the only constructor, so [`Ext::class_as`] can trust it).
    class: Box<dyn TensorClass>,
    class_type: std::any::TypeId,
    pub(crate) keys: crate::keys::KeySet,
    pub(crate) payload: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl Ext {
    /// A tensor-like's class (of concrete type `C`), the keys it adds, and the
    /// instance's data.
    pub(crate) fn new<C: TensorClass>(
        class: C,
        keys: crate::keys::KeySet,
        payload: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Ext {
        Ext {
            class: Box::new(class),
            class_type: std::any::TypeId::of::<C>(),
            keys,
            payload,
        }
    }

    /// The class.
    #[inline]
    pub(crate) fn class(&self) -> &dyn TensorClass {
        &*self.class
    }

    /// The class as its concrete type, if it is a `C` (one comparison, no
    /// virtual call: the protocols ask on every call with a tensor-like).
    #[inline]
    pub(crate) fn class_as<C: TensorClass>(&self) -> Option<&C> {
        if self.class_type == std::any::TypeId::of::<C>() {
            let p: *const dyn TensorClass = &*self.class;
            // SAFETY: `class_type` is the `TypeId` of the concrete type behind
            // `class`: `Ext::new` sets both from one `C`, the fields are private to
            // this module, and `class` is never replaced. Equal ids: the trait
            // object points at a live `C` owned by `self`, borrowed for `&self`.
            Some(unsafe { &*p.cast::<C>() })
        } else {
            None
        }
    }

    /// The same class, keys and no payload.
    fn without_payload(&self) -> Ext {
        Ext {
            class: self.class.clone_class(),
            class_type: self.class_type,
            keys: self.keys,
            payload: None,
        }
    }
}

/// A tensor handle. `clone` is cheap and yields the same tensor (identity, not a
/// copy); use [`Tensor::deep_clone`] for a copy.
///
/// A tensor is a dtype, a device and a geometry (shape, strides, offset) over a
/// storage that its views share: writing through a view writes the base.
///
/// ```
/// use opforge::{DType, Device, Scalar, Tensor};
/// let t = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], &[2, 3])?;
/// assert_eq!((t.shape(), t.strides(), t.dtype()), (vec![2, 3], vec![3, 1], DType::Int64));
/// let col = t.select(1, 0)?; // a view: [1, 4]
/// let mut c = col.clone(); // the same tensor (a handle)
/// c.fill_scalar_(Scalar::Int(0))?; // `fill_` takes a 0-dim tensor
/// assert_eq!(t.to_vec::<i64>()?, vec![0, 2, 3, 0, 5, 6]);
/// let m = Tensor::zeros(&[2, 3], DType::Float32, Device::Meta); // shapes only
/// assert_eq!(opforge::torch::sum(&m)?.device(), Device::Meta);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor(Arc<TensorInner>);

impl Tensor {
    fn from_geometry(dtype: DType, device: Device, geometry: Geometry) -> Tensor {
        Tensor::with_geometry_and_keys(dtype, device, class_keys(device, None), geometry)
    }

    /// A plain tensor with these dispatch keys (a fake's include `Fake`).
    fn with_geometry_and_keys(
        dtype: DType,
        device: Device,
        keys: KeySet,
        geometry: Geometry,
    ) -> Tensor {
        Tensor::from_parts(dtype, device, keys, geometry, None, false)
    }

    /// The one constructor of a tensor's record: everything autograd, fake
    /// tensors and wrappers keep in it starts empty, and the record is
    /// written straight into its allocation ([`alloc::arc_in_place`]).
    #[inline]
    fn from_parts(
        dtype: DType,
        device: Device,
        keys: KeySet,
        geometry: Geometry,
        ext: Option<Arc<Ext>>,
        wrapped_number: bool,
    ) -> Tensor {
        Tensor(alloc::arc_in_place(move || TensorInner {
            dtype,
            device,
            keys: AtomicU32::new(keys.bits()),
            geometry: RwLock::new(geometry),
            geometry_changes: AtomicU32::new(0),
            ext,
            autograd: std::sync::OnceLock::new(),
            history: std::sync::Mutex::new(None),
            has_history: std::sync::atomic::AtomicBool::new(false),
            wrapped_number,
            view: None,
            twin: once_cell::race::OnceBox::new(),
            wrapped: None,
        }))
    }

    pub(crate) fn with_ext(dtype: DType, device: Device, geometry: Geometry, ext: Ext) -> Tensor {
        let keys = class_keys(device, Some(&ext));
        Tensor::from_parts(dtype, device, keys, geometry, Some(Arc::new(ext)), false)
    }

    /// A plain tensor: not a subclass instance, wrapper or duck tensor-like. Only
    /// these skip the override protocols without a look.
    #[inline]
    pub fn is_plain(&self) -> bool {
        self.0.ext.is_none()
    }

    #[inline]
    pub(crate) fn ext(&self) -> Option<&Ext> {
        self.0.ext.as_deref()
    }

    /// The class of a tensor-like (subclass, wrapper or duck) instance; `None`
    /// for a plain tensor.
    pub fn tensor_class(&self) -> Option<&dyn TensorClass> {
        self.0.ext.as_ref().map(|e| e.class())
    }

    #[inline]
    pub(crate) fn ext_arc(&self) -> Option<&Arc<Ext>> {
        self.0.ext.as_ref()
    }

    /// This tensor as an instance of the class of `ext` (whose payload, if any, is
    /// not taken): in place when this handle is the only one (a fresh result),
    /// else an alias with the same geometry.
    pub(crate) fn with_class_of(mut self, ext: &Arc<Ext>) -> Tensor {
        let ext = if ext.payload.is_none() {
            ext.clone()
        } else {
            Arc::new(ext.without_payload())
        };
        let keys = class_keys(self.0.device, Some(&*ext));
        if let Some(inner) = Arc::get_mut(&mut self.0) {
            let autograd = KeySet::from_bits(*inner.keys.get_mut()) & grad::AUTOGRAD_KEYS;
            *inner.keys.get_mut() = (keys | autograd).bits();
            inner.ext = Some(ext);
            return self;
        }
        Tensor::from_parts(
            self.0.dtype,
            self.0.device,
            keys,
            self.geometry(),
            Some(ext),
            self.0.wrapped_number,
        )
    }

    /// A contiguous CPU tensor holding `data` with `shape`.
    ///
    /// ```
    /// use opforge::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    /// assert_eq!(t.shape(), vec![2, 2]);
    /// assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    /// ```
    ///
    /// Sizes are checked as every tensor's are: each at most
    /// [`MAX_GEOMETRY`], also on an empty tensor, and their product with empty
    /// dimensions counted as 1 too ([`check_sizes_product`]).
    ///
    /// ```
    /// use opforge::Tensor;
    /// let e = Tensor::from_vec(Vec::<f32>::new(), &[0, 1 << 63]).unwrap_err();
    /// assert!(e.to_string().starts_with("sizes [0, 9223372036854775808]: 9223372036854775808 at dimension 1 is larger than the largest int64"));
    /// let e = Tensor::from_vec(Vec::<f32>::new(), &[0, 1 << 62, 4]).unwrap_err();
    /// assert!(e.to_string().starts_with("Stride calculation overflowed"));
    /// ```
    pub fn from_vec<T: IntoBuffer>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        Tensor::from_buffer(T::into_buffer(data), shape, T::DTYPE, Device::Cpu)
    }

    /// A 0-dim CPU tensor holding `x`.
    pub fn scalar<T: IntoBuffer>(x: T) -> Tensor {
        Tensor::new_contiguous(
            T::into_buffer(vec![x]),
            &[],
            Dims::new(),
            T::DTYPE,
            Device::Cpu,
        )
    }

    /// A Python number given for a `Tensor` parameter, as the kernel receives it
    /// (PyTorch's wrapped number): a 0-dim `bool`, `int64` or `float64` tensor that
    /// type promotion treats as a number (`int32 tensor + 2.5` is `float32`).
    ///
    /// ```
    /// use opforge::{Scalar, Tensor};
    /// let w = Tensor::wrapped_number(Scalar::Float(2.5));
    /// assert!(w.is_wrapped_number());
    /// assert_eq!(w.dim(), 0);
    /// assert!(!Tensor::scalar(2.5f64).is_wrapped_number());
    /// ```
    pub fn wrapped_number(value: Scalar) -> Tensor {
        let mut t = match value {
            Scalar::Bool(b) => Tensor::scalar(b),
            Scalar::Int(i) => Tensor::scalar(i),
            Scalar::Float(x) => Tensor::scalar(x),
        };
        if let Some(inner) = Arc::get_mut(&mut t.0) {
            inner.wrapped_number = true;
        }
        t
    }

    /// Is this a wrapped number ([`Tensor::wrapped_number`])?
    #[inline]
    pub fn is_wrapped_number(&self) -> bool {
        self.0.wrapped_number
    }

    /// A 0-dim tensor of `dtype` holding `s` (converted with C++ cast rules).
    pub fn from_scalar(s: Scalar, dtype: DType, device: Device) -> Tensor {
        let t = Tensor::zeros(&[], dtype, device);
        if device == Device::Cpu {
            let storage = t.storage();
            let mut b = storage.write();
            with_buffer!(&mut *b, v, T => v[0] = <T as Element>::from_scalar(s), meta => ());
        }
        t
    }

    /// A contiguous tensor over a new storage holding `buffer`, which must
    /// hold as many elements as `shape` (PyTorch's message otherwise). The
    /// sizes are checked as [`Tensor::from_vec`] checks them.
    pub fn from_buffer(
        buffer: Buffer,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let (strides, numel) = checked_contiguous_dims(shape)?;
        if buffer.len() != numel {
            return Err(Error::Runtime(
                format!(
                    "shape {shape:?} is invalid for input of size {}",
                    buffer.len()
                )
                .into(),
            ));
        }
        Ok(Tensor::new_contiguous(
            buffer, shape, strides, dtype, device,
        ))
    }

    /// A contiguous tensor over a new storage holding `buffer`: `strides`
    /// are `shape`'s contiguous strides, and the shape passed
    /// [`checked_contiguous_dims`] (or is known to: a 0-dim tensor, an
    /// ndarray's shape).
    #[inline(always)]
    fn new_contiguous(
        buffer: Buffer,
        shape: &[usize],
        strides: Dims,
        dtype: DType,
        device: Device,
    ) -> Tensor {
        Tensor::from_geometry(
            dtype,
            device,
            Geometry {
                storage: Storage::new(buffer),
                shape: Dims::from_slice(shape),
                strides,
                offset: 0,
            },
        )
    }

    /// An owned array as a contiguous tensor (no copy when the array is in
    /// standard layout, as the kernels' arrays are).
    ///
    /// # Panics
    ///
    /// If the array is not in standard layout and its copy is refused by the
    /// allocator ([`alloc`]).
    pub fn from_array<T: IntoBuffer>(a: ArrayD<T>) -> Tensor {
        let shape = a.shape().to_vec();
        let data: Vec<T> = if a.is_standard_layout() {
            a.into_raw_vec_and_offset().0
        } else {
            alloc::try_collect(a.len(), a.iter().copied()).unwrap_or_else(|e| panic!("{e}"))
        };
        // ndarray's shapes pass the same check ([`check_sizes_product`]): the
        // product of the non-zero lengths fits `isize`.
        let strides = contiguous_dims(&shape);
        Tensor::new_contiguous(T::into_buffer(data), &shape, strides, T::DTYPE, Device::Cpu)
    }

    /// A zero-filled contiguous tensor, or the allocator's error: the byte count
    /// overflows `int64` ("Storage size calculation overflowed with sizes=…", on
    /// every device), or exceeds the allocation limit or what the system
    /// allocator grants (PyTorch's `DefaultCPUAllocator` message, on the CPU).
    ///
    /// ```
    /// use opforge::{DType, Device, Tensor};
    /// let t = Tensor::try_zeros(&[2, 3], DType::Int64, Device::Cpu)?;
    /// assert_eq!(t.to_vec::<i64>()?, vec![0; 6]);
    /// let e = Tensor::try_zeros(&[1 << 62], DType::Float32, Device::Meta).unwrap_err();
    /// assert_eq!(e.to_string(), "Storage size calculation overflowed with sizes=[4611686018427387904]");
    /// assert!(Tensor::try_zeros(&[1 << 60], DType::Bool, Device::Cpu).is_err()); // 1 EiB
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn try_zeros(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        alloc::storage_nbytes(shape, dtype.itemsize())?;
        let (strides, numel) = checked_contiguous_dims(shape)?;
        let buffer = Buffer::try_zeros(dtype, device, numel)?;
        Ok(Tensor::new_contiguous(
            buffer, shape, strides, dtype, device,
        ))
    }

    /// A zero-filled tensor of these sizes and strides over a storage just
    /// large enough for them (PyTorch's `empty_strided`, zeroed), built in one
    /// step: the byte count is checked as by [`Tensor::try_zeros`], and the
    /// geometry as by [`Tensor::strided_view`].
    ///
    /// ```
    /// use opforge::{DType, Device, Tensor};
    /// let t = Tensor::try_empty_strided(&[2, 3], &[1, 2], DType::Float32, Device::Cpu)?;
    /// assert_eq!((t.strides(), t.storage().len()), (vec![1, 2], 6));
    /// let e = Tensor::try_empty_strided(&[2], &[1, 1], DType::Int64, Device::Cpu).unwrap_err();
    /// assert!(e.to_string().starts_with("mismatch in length of strides and shape"));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn try_empty_strided(
        shape: &[usize],
        strides: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        alloc::storage_nbytes(shape, dtype.itemsize())?;
        let len = last_offset(shape, strides, 0)?.map_or(0, |last| last + 1);
        let geometry = Geometry {
            storage: Storage::new(Buffer::try_zeros(dtype, device, len)?),
            shape: Dims::from_slice(shape),
            strides: Dims::from_slice(strides),
            offset: 0,
        };
        geometry.validate(dtype.itemsize())?;
        Ok(Tensor::from_geometry(dtype, device, geometry))
    }

    /// A zero-filled contiguous tensor.
    ///
    /// # Panics
    ///
    /// If the allocation is refused: use [`Tensor::try_zeros`] for a shape a
    /// user controls.
    pub fn zeros(shape: &[usize], dtype: DType, device: Device) -> Tensor {
        Tensor::try_zeros(shape, dtype, device).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A contiguous tensor filled with `value` (C++ cast rules), or the
    /// allocator's error as for [`Tensor::try_zeros`].
    pub fn try_full(
        shape: &[usize],
        value: Scalar,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let t = Tensor::try_zeros(shape, dtype, device)?;
        t.fill_scalar(value);
        Ok(t)
    }

    /// A contiguous tensor filled with `value`.
    ///
    /// # Panics
    ///
    /// If the allocation is refused: use [`Tensor::try_full`] for a shape a
    /// user controls.
    pub fn full(shape: &[usize], value: Scalar, dtype: DType, device: Device) -> Tensor {
        Tensor::try_full(shape, value, dtype, device).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Element type.
    #[inline]
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// Device.
    #[inline]
    pub fn device(&self) -> Device {
        self.0.device
    }

    /// The dispatch keys this tensor contributes to a call: its backend, its
    /// class's keys, and `Autograd` (with `ADInplaceOrView`) only while it
    /// requires grad. One load (two for a view: a view also has its base's
    /// autograd keys, as it requires grad while its base does, and the base
    /// may have come to require it after the view was made, by a write
    /// through another view of it).
    #[inline]
    pub fn key_set(&self) -> KeySet {
        let keys = KeySet::from_bits(self.0.keys.load(Ordering::Relaxed));
        match &self.0.view {
            None => keys,
            // A base is never a view: its own keys are all there is.
            Some(v) => {
                let base = KeySet::from_bits(v.base().0.keys.load(Ordering::Relaxed));
                keys | (base & grad::AUTOGRAD_KEYS)
            }
        }
    }

    /// A snapshot of the geometry (storage handle, shape, strides, offset).
    pub fn geometry(&self) -> Geometry {
        self.0
            .geometry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `f` on the geometry, read in place (no copy of shape and strides).
    pub(crate) fn with_geometry<R>(&self, f: impl FnOnce(&Geometry) -> R) -> R {
        f(&self.geom())
    }

    fn geom(&self) -> RwLockReadGuard<'_, Geometry> {
        self.0.geometry.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Sizes.
    pub fn shape(&self) -> Vec<usize> {
        self.geom().shape.to_vec()
    }

    /// Sizes as PyTorch's `int64`s.
    pub fn sizes(&self) -> Vec<i64> {
        self.geom().shape.iter().map(|&n| n as i64).collect()
    }

    /// Strides in elements.
    pub fn strides(&self) -> Vec<usize> {
        self.geom().strides.to_vec()
    }

    /// Offset of the first element in the storage.
    pub fn storage_offset(&self) -> usize {
        self.geom().offset
    }

    /// The storage handle.
    pub fn storage(&self) -> Storage {
        self.geom().storage.clone()
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.geom().shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        numel(&self.geom().shape)
    }

    /// Row-major contiguous (dimensions of size 1 may have any stride; an empty
    /// tensor is contiguous, as in PyTorch).
    pub fn is_contiguous(&self) -> bool {
        let g = self.geom();
        numel(&g.shape) == 0 || is_dense_in_order(&g.shape, &g.strides, (0..g.shape.len()).rev())
    }

    /// The same tensor (handle identity, like Python's `is`)?
    pub fn is_same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Do the two tensors share storage (one is a view of the other, or both of a
    /// third)?
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        self.geom().storage.ptr_eq(&other.geom().storage)
    }

    /// A view of the same storage with another geometry. Fails if it reaches outside
    /// the storage.
    pub fn strided_view(
        &self,
        shape: &[usize],
        strides: &[usize],
        offset: usize,
    ) -> Result<Tensor> {
        let geometry = Geometry {
            storage: self.storage(),
            shape: Dims::from_slice(shape),
            strides: Dims::from_slice(strides),
            offset,
        };
        geometry.validate(self.dtype().itemsize())?;
        Ok(Tensor::from_geometry(self.dtype(), self.device(), geometry))
    }

    /// Changes this tensor's geometry in place (every handle sees it): what `out=`
    /// resizing and `set_` do. A geometry reaching outside its storage (or whose
    /// extent overflows) is refused, as by [`Tensor::strided_view`].
    pub fn set_geometry(&self, geometry: Geometry) -> Result<()> {
        geometry.validate(self.dtype().itemsize())?;
        self.replace_geometry(geometry);
        Ok(())
    }

    /// Replaces the geometry in place, counting the change.
    pub(crate) fn replace_geometry(&self, geometry: Geometry) {
        let mut g = self.0.geometry.write().unwrap_or_else(|e| e.into_inner());
        *g = geometry;
        self.0.geometry_changes.fetch_add(1, Ordering::Release);
    }

    /// Resizes in place to `shape` with contiguous strides, keeping the storage if
    /// it is large enough (PyTorch's `resize_`); new elements are zero.
    pub fn resize_(&self, shape: &[usize]) -> Result<()> {
        let g = self.geometry();
        if g.shape.as_slice() == shape {
            return Ok(());
        }
        let itemsize = self.dtype().itemsize();
        alloc::storage_nbytes(shape, itemsize)?;
        let (strides, _) = checked_contiguous_dims(shape)?;
        let need = checked_numel(shape)
            .and_then(|n| n.checked_add(g.offset))
            .filter(|n| {
                n.checked_mul(itemsize)
                    .is_some_and(|b| b <= i64::MAX as usize)
            })
            .ok_or_else(|| {
                Error::Runtime(
                    format!("Storage size calculation overflowed with sizes={shape:?}").into(),
                )
            })?;
        let storage = if need <= g.storage.len() {
            g.storage
        } else {
            let mut b = Buffer::try_zeros(self.dtype(), self.device(), need)?;
            let old = g.storage.read();
            with_buffer!(&mut b, dst, T => {
                if let Some(src) = <T as IntoBuffer>::slice(&old) {
                    dst[..src.len()].copy_from_slice(src);
                }
            }, meta => ());
            drop(old);
            // Grow the existing storage so other views keep sharing it.
            *g.storage.write() = b;
            g.storage
        };
        self.set_geometry(Geometry {
            storage,
            shape: Dims::from_slice(shape),
            strides,
            offset: g.offset,
        })
    }

    /// Runs `f` on an ndarray view of the elements (no copy). `T` must be the
    /// tensor's element type.
    pub fn with_view<T: IntoBuffer, R>(&self, f: impl FnOnce(ArrayViewD<'_, T>) -> R) -> Result<R> {
        let g = self.geometry();
        let buf = g.storage.read();
        let data = T::slice(&buf).ok_or_else(|| self.no_data_error(T::DTYPE))?;
        if numel(&g.shape) == 0 {
            let empty: [T; 0] = [];
            let v = ArrayViewD::from_shape(IxDyn(&g.shape), &empty[..])
                .map_err(|e| Error::Runtime(e.to_string().into()))?;
            return Ok(f(v));
        }
        let end = last_offset(&g.shape, &g.strides, g.offset)?.unwrap_or(0);
        let fits = checked_numel(&g.shape).is_some_and(|n| n <= isize::MAX as usize);
        // ndarray takes strides as `isize` and requires them non-negative, on
        // every dimension (also those of size 1, which `end` does not see).
        let strides_fit = g.strides.iter().all(|&s| s <= isize::MAX as usize);
        if g.shape.len() != g.strides.len() || end >= data.len() || !fits || !strides_fit {
            return Err(Error::Runtime(
                "tensor view is out of bounds of its storage".into(),
            ));
        }
        // SAFETY: `from_shape_ptr`'s preconditions, each checked above: as many
        // strides as sizes; every stride non-negative as an `isize`; a non-zero
        // element count (the empty case returned above) that fits `isize`; every
        // element the view can reach lies in `data[offset..=end]` (checked
        // arithmetic), so the span between the least and greatest address is
        // inside one allocation and fits `isize` in bytes (a slice's length
        // does). The pointer is `data`'s, non-null and aligned. The view is
        // read-only and lives while the read lock is held; overlapping elements
        // (stride 0) are fine for a read-only view.
        let v = unsafe {
            ArrayViewD::from_shape_ptr(
                IxDyn(&g.shape).strides(IxDyn(&g.strides)),
                data.as_ptr().add(g.offset),
            )
        };
        Ok(f(v))
    }

    fn no_data_error(&self, want: DType) -> Error {
        if self.is_fake() {
            // Reading a fake's data is a data-dependent call, as PyTorch's
            // `item()` / `tolist()` on a fake are.
            Error::Fake(
                crate::error::FakeException::DataDependentOutput,
                "aten._local_scalar_dense.default".into(),
            )
        } else if self.device() == Device::Meta {
            Error::Runtime(
                "Cannot access data pointer of Tensor that doesn't have storage (a meta tensor)"
                    .into(),
            )
        } else if self.layer_state().is_some() {
            Error::Runtime(
                "Cannot access the data of a tensor a dispatch layer made to stand for another (a functional tensor): read it inside the layer, or read the value the layer returns"
                    .into(),
            )
        } else {
            Error::Runtime(
                format!(
                    "expected scalar type {} but found {}",
                    want.c10_name(),
                    self.dtype().c10_name()
                )
                .into(),
            )
        }
    }

    /// The elements in logical (row-major) order as an owned array of `T` in
    /// standard layout, converted from the tensor's dtype with C++ cast rules.
    /// The copy is allocated fallibly ([`alloc`]): an expanded view's copy
    /// takes its full element count.
    pub fn to_array<T: IntoBuffer>(&self) -> Result<ArrayD<T>> {
        crate::with_dtype!(self.dtype(), S => self.with_view(|v: ArrayViewD<S>| {
            let data = alloc::try_collect(v.len(), v.iter().map(|&x| cast::<S, T>(x)))?;
            ArrayD::from_shape_vec(v.raw_dim(), data).map_err(|e| Error::Runtime(e.to_string().into()))
        })?)
    }

    /// The elements in logical order as a `Vec<T>` (converted, allocated as
    /// [`Tensor::to_array`] is).
    ///
    /// ```
    /// use opforge::Tensor;
    /// let t = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], &[2, 3])?;
    /// assert_eq!(t.select(0, 1)?.to_vec::<f64>()?, [4.0, 5.0, 6.0]);
    /// assert_eq!(opforge::ops::t(&t)?.to_vec::<i32>()?, [1, 4, 2, 5, 3, 6]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn to_vec<T: IntoBuffer>(&self) -> Result<Vec<T>> {
        // Contiguous elements: one pass over the slice.
        let dense = self.with_geometry(|g| {
            if !is_contiguous_strides(&g.shape, &g.strides) {
                return None;
            }
            let n = numel(&g.shape);
            let buf = g.storage.read();
            crate::with_dtype!(self.dtype(), S => {
                let s = S::slice(&buf)?.get(g.offset..g.offset + n)?;
                Some(alloc::try_with_capacity(n).map(|mut v: Vec<T>| {
                    v.extend(s.iter().map(|&x| cast::<S, T>(x)));
                    v
                }))
            })
        });
        if let Some(v) = dense {
            return v;
        }
        crate::with_dtype!(self.dtype(), S => self.with_view(|v: ArrayViewD<S>| {
            alloc::try_collect(v.len(), v.iter().map(|&x| cast::<S, T>(x)))
        })?)
    }

    /// The single element of a one-element tensor.
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(Error::Runtime(
                format!(
                    "a Tensor with {} elements cannot be converted to Scalar",
                    self.numel()
                )
                .into(),
            ));
        }
        Ok(match self.dtype() {
            DType::Bool => Scalar::Bool(self.to_vec::<bool>()?[0]),
            DType::Int32 | DType::Int64 => Scalar::Int(self.to_vec::<i64>()?[0]),
            DType::Float32 | DType::Float64 => Scalar::Float(self.to_vec::<f64>()?[0]),
        })
    }

    /// Writes `src` (same shape) into this tensor's elements, converting to its
    /// dtype. Fails if the tensor has overlapping elements (an `expand`ed view).
    pub fn assign<S: IntoBuffer>(&self, src: ArrayViewD<'_, S>) -> Result<()> {
        let g = self.geometry();
        if src.shape() != g.shape.as_slice() {
            return Err(Error::Runtime(
                format!("assign: shape mismatch {:?} vs {:?}", src.shape(), g.shape).into(),
            ));
        }
        if self.device() == Device::Meta {
            return Ok(());
        }
        if is_expanded(&g.shape, &g.strides) {
            return Err(internal_overlap_error());
        }
        if let Some(end) = last_offset(&g.shape, &g.strides, g.offset)? {
            crate::ensure!(
                end < g.storage.len(),
                "tensor view is out of bounds of its storage"
            );
        }
        let mut buf = g.storage.write();
        with_buffer!(&mut *buf, data, T => {
            let positions = Positions::new(&g.shape, &g.strides, g.offset);
            for (pos, x) in positions.zip(src.iter()) {
                data[pos] = cast::<S, T>(*x);
            }
        }, meta => ());
        Ok(())
    }

    /// Sets every element to `value` (C++ cast rules). On an expanded view (several
    /// indices sharing an element) every shared element gets the same value, so
    /// this is well defined, unlike [`Tensor::assign`].
    pub fn fill_scalar(&self, value: Scalar) {
        // A view reaching outside its storage is left as it is; `try_fill`
        // reports it.
        let _ = self.try_fill(value);
    }

    /// Sets every element to `value` (C++ cast rules), as [`Tensor::fill_scalar`],
    /// or the error of a view that reaches outside its storage. A contiguous
    /// view is filled as one run, others position by position (no table of
    /// offsets).
    pub(crate) fn try_fill(&self, value: Scalar) -> Result<()> {
        if self.device() == Device::Meta {
            return Ok(());
        }
        let g = self.geometry();
        let Some(end) = last_offset(&g.shape, &g.strides, g.offset)? else {
            return Ok(());
        };
        let contiguous = is_contiguous_strides(&g.shape, &g.strides);
        let mut buf = g.storage.write();
        with_buffer!(&mut *buf, data, T => {
            crate::ensure!(end < data.len(), "tensor view is out of bounds of its storage");
            let x = <T as Element>::from_scalar(value);
            if contiguous {
                data[g.offset..=end].fill(x);
            } else {
                for pos in Positions::new(&g.shape, &g.strides, g.offset) {
                    data[pos] = x;
                }
            }
            Ok(())
        }, meta => Ok(()))
    }

    /// A contiguous copy with its own storage (allocated fallibly).
    pub fn deep_clone(&self) -> Result<Tensor> {
        self.to_dtype_copy(self.dtype())
    }

    /// A contiguous copy converted to `dtype` (allocated fallibly).
    pub fn to_dtype_copy(&self, dtype: DType) -> Result<Tensor> {
        let shape = self.shape();
        if self.device() == Device::Meta {
            return Tensor::try_zeros(&shape, dtype, Device::Meta);
        }
        alloc::storage_nbytes(&shape, dtype.itemsize())?;
        crate::with_dtype!(dtype, T => {
            let v = self.to_vec::<T>()?;
            Tensor::from_vec(v, &shape)
        })
    }
}

/// Converts one element with C++ cast rules.
#[inline]
pub fn cast<S: Element, T: Element>(x: S) -> T {
    match S::DTYPE {
        DType::Bool => T::from_bool(x.to_bool()),
        DType::Int32 | DType::Int64 => T::from_i64(x.to_i64()),
        DType::Float32 | DType::Float64 => T::from_f64(x.to_f64()),
    }
}

impl crate::keys::KeySet {
    /// The dispatch keys of one tensor ([`Tensor::key_set`]).
    pub fn of_tensor(t: &Tensor) -> crate::keys::KeySet {
        t.key_set()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn contiguous_dims_inline_and_spilled_agree_with_the_vec_form() {
        for shape in [
            &[][..],
            &[3],
            &[2, 0, 4],
            &[2, 3, 4, 5, 6],
            &[2, 1, 3, 1, 2, 2],
            &[1, 2, 3, 4, 5, 6, 7],
        ] {
            let d = super::contiguous_dims(shape);
            assert_eq!(&d[..], &super::contiguous_strides(shape)[..], "{shape:?}");
            assert_eq!(d.spilled(), shape.len() > 5, "{shape:?}");
        }
    }

    use super::*;

    struct Dummy(&'static str);
    impl TensorClass for Dummy {
        fn name(&self) -> &str {
            self.0
        }
        fn qualname(&self) -> String {
            format!("test.{}", self.0)
        }
        fn is_tensor_subclass(&self) -> bool {
            true
        }
        fn has_torch_function(&self) -> bool {
            false
        }
        fn repr_of(&self, _: &Tensor) -> Option<String> {
            None
        }
        fn clone_class(&self) -> Box<dyn TensorClass> {
            Box::new(Dummy(self.0))
        }
    }

    /// `Ext::class_as` gives the class back only as its own concrete type, also
    /// after the class data is copied without its payload.
    #[test]
    fn a_class_comes_back_only_as_its_own_type() {
        let ext = Ext::new(Dummy("D"), crate::keys::KeySet::EMPTY, None);
        assert_eq!(ext.class_as::<Dummy>().map(|d| d.0), Some("D"));
        struct Other;
        impl TensorClass for Other {
            fn name(&self) -> &str {
                "O"
            }
            fn qualname(&self) -> String {
                "O".into()
            }
            fn is_tensor_subclass(&self) -> bool {
                false
            }
            fn has_torch_function(&self) -> bool {
                false
            }
            fn repr_of(&self, _: &Tensor) -> Option<String> {
                None
            }
            fn clone_class(&self) -> Box<dyn TensorClass> {
                Box::new(Other)
            }
        }
        assert!(ext.class_as::<Other>().is_none());
        let copy = ext.without_payload();
        assert_eq!(copy.class_as::<Dummy>().map(|d| d.0), Some("D"));
        assert_eq!(copy.class().qualname(), "test.D");
    }

    #[test]
    fn views_alias_their_base() {
        let base = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        // The transpose: shape [3, 2], strides [1, 3].
        let t = base.strided_view(&[3, 2], &[1, 3], 0).unwrap();
        assert_eq!(
            t.to_vec::<f32>().unwrap(),
            vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
        );
        assert!(t.shares_storage(&base) && !t.is_same(&base));
        t.assign(ndarray::ArrayD::from_elem(IxDyn(&[3, 2]), 0.5f64).view())
            .unwrap();
        assert_eq!(base.to_vec::<f32>().unwrap(), vec![0.5; 6]);
        assert!(base.strided_view(&[3, 3], &[3, 1], 0).is_err());
    }

    #[test]
    fn casts_follow_cpp_rules() {
        let t = Tensor::from_vec(vec![-1.5f64, 0.0, 2.7], &[3]).unwrap();
        assert_eq!(t.to_vec::<i64>().unwrap(), vec![-1, 0, 2]);
        assert_eq!(t.to_vec::<bool>().unwrap(), vec![true, false, true]);
        assert_eq!(t.to_dtype_copy(DType::Int32).unwrap().dtype(), DType::Int32);
    }

    #[test]
    fn resize_keeps_identity_and_grows_storage() {
        let t = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
        let same = t.clone();
        t.resize_(&[2, 2]).unwrap();
        assert_eq!(same.shape(), vec![2, 2]);
        assert_eq!(same.to_vec::<i64>().unwrap(), vec![1, 2, 0, 0]);
    }

    #[test]
    fn a_view_of_a_storage_that_shrank_is_an_error() {
        let t = Tensor::from_vec(vec![1i64, 2, 3, 4], &[4]).unwrap();
        let v = t.strided_view(&[2], &[1], 2).unwrap();
        *t.storage().write() = Buffer::I64(vec![9]);
        assert!(v.to_vec::<i64>().is_err());
        assert!(t.to_vec::<i64>().is_err());
    }

    #[test]
    fn meta_tensors_have_no_data() {
        let m = Tensor::zeros(&[2, 3], DType::Float32, Device::Meta);
        assert_eq!(m.shape(), vec![2, 3]);
        assert!(m.to_vec::<f32>().is_err());
        assert!(format!("{m}").contains("meta"));
    }

    #[test]
    fn expanded_views_refuse_writes_but_read() {
        let t = Tensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap();
        let e = t.strided_view(&[2, 3], &[0, 1], 0).unwrap();
        assert_eq!(e.to_vec::<i32>().unwrap(), vec![1, 2, 3, 1, 2, 3]);
        assert!(e
            .assign(ndarray::ArrayD::<i32>::zeros(IxDyn(&[2, 3])).view())
            .is_err());
    }

    /// Printing reads only what it shows: more than 1,000 elements are
    /// summarised as PyTorch does (three items at each end of a long
    /// dimension), so a huge expanded view prints at once; an empty tensor
    /// with a huge dimension prints its size; a tensor of very high rank
    /// prints without recursion, on a 2 MiB thread. (The fuzzer's
    /// `boxed_call` target found the empty case: `[2^33, 0]` built 2^33
    /// strings and aborted.)
    #[test]
    fn printing_is_bounded_by_what_it_shows() {
        let small = Tensor::from_vec(vec![1i64, 2, 3, 4], &[2, 2]).unwrap();
        assert_eq!(
            small.to_string(),
            "tensor([[1, 2], [3, 4]], dtype=torch.int64)"
        );
        let v: Vec<f32> = (0..2000).map(|i| i as f32).collect();
        let long = Tensor::from_vec(v, &[2000]).unwrap();
        assert_eq!(
            long.to_string(),
            "tensor([0.0, 1.0, 2.0, ..., 1997.0, 1998.0, 1999.0], dtype=torch.float32)"
        );
        let v: Vec<i64> = (0..40 * 40).collect();
        let square = Tensor::from_vec(v, &[40, 40]).unwrap();
        assert_eq!(
            square.to_string(),
            "tensor([[0, 1, 2, ..., 37, 38, 39], [40, 41, 42, ..., 77, 78, 79], \
             [80, 81, 82, ..., 117, 118, 119], ..., \
             [1480, 1481, 1482, ..., 1517, 1518, 1519], \
             [1520, 1521, 1522, ..., 1557, 1558, 1559], \
             [1560, 1561, 1562, ..., 1597, 1598, 1599]], dtype=torch.int64)"
        );
        let one = Tensor::from_vec(vec![true], &[1, 1]).unwrap();
        let huge = one.strided_view(&[1 << 40, 1 << 20], &[0, 0], 0).unwrap();
        assert_eq!(
            huge.to_string(),
            "tensor([[True, True, True, ..., True, True, True], \
             [True, True, True, ..., True, True, True], \
             [True, True, True, ..., True, True, True], ..., \
             [True, True, True, ..., True, True, True], \
             [True, True, True, ..., True, True, True], \
             [True, True, True, ..., True, True, True]], dtype=torch.bool)"
        );
        let empty = Tensor::try_zeros(&[1 << 33, 0], DType::Float32, Device::Cpu).unwrap();
        assert_eq!(
            empty.to_string(),
            "tensor([], size=[8589934592, 0], dtype=torch.float32)"
        );
        let empty = Tensor::try_zeros(&[0], DType::Int32, Device::Cpu).unwrap();
        assert_eq!(empty.to_string(), "tensor([], dtype=torch.int32)");
        let scalar = Tensor::from_vec(vec![2.5f64], &[]).unwrap();
        assert_eq!(scalar.to_string(), "tensor(2.5, dtype=torch.float64)");
        let text = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let deep = Tensor::from_vec(vec![7i32], &vec![1; 100_000]).unwrap();
                deep.to_string()
            })
            .unwrap()
            .join()
            .unwrap();
        let brackets = "[".repeat(100_000);
        assert_eq!(
            text,
            format!(
                "tensor({brackets}7{}, dtype=torch.int32)",
                "]".repeat(100_000)
            )
        );
    }
}
