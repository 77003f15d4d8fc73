//! Element data: a [`Buffer`] per dtype and the shared, versioned
//! [`Storage`] tensors and their views point into.

use super::alloc;
use crate::dtype::{DType, Device, Element};
use crate::error::Result;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

/// Element data of one storage, one variant per dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    /// `bool` elements.
    Bool(Vec<bool>),
    /// `int32` elements.
    I32(Vec<i32>),
    /// `int64` elements.
    I64(Vec<i64>),
    /// `float32` elements.
    F32(Vec<f32>),
    /// `float64` elements.
    F64(Vec<f64>),
    /// A meta storage: a length, no data.
    Meta(usize),
}

/// Calls `$body` with `$v` bound to the typed `Vec` of a buffer and `$T` to its
/// element type; `$meta` handles meta buffers.
#[macro_export]
#[doc(hidden)]
macro_rules! with_buffer {
    ($buf:expr, $v:ident, $T:ident => $body:expr, meta => $meta:expr) => {
        match $buf {
            $crate::tensor::Buffer::Bool($v) => {
                #[allow(unused)]
                type $T = bool;
                $body
            }
            $crate::tensor::Buffer::I32($v) => {
                #[allow(unused)]
                type $T = i32;
                $body
            }
            $crate::tensor::Buffer::I64($v) => {
                #[allow(unused)]
                type $T = i64;
                $body
            }
            $crate::tensor::Buffer::F32($v) => {
                #[allow(unused)]
                type $T = f32;
                $body
            }
            $crate::tensor::Buffer::F64($v) => {
                #[allow(unused)]
                type $T = f64;
                $body
            }
            $crate::tensor::Buffer::Meta(_) => $meta,
        }
    };
}

/// Stamps `$body` once per dtype with `$T` bound to the element type.
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::tensor::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::tensor::DType::Int32 => {
                type $T = i32;
                $body
            }
            $crate::tensor::DType::Int64 => {
                type $T = i64;
                $body
            }
            $crate::tensor::DType::Float32 => {
                type $T = f32;
                $body
            }
            $crate::tensor::DType::Float64 => {
                type $T = f64;
                $body
            }
        }
    };
}

impl Buffer {
    /// A zero-filled buffer of `len` elements (a meta buffer on the meta device),
    /// or the allocator's error ([`alloc`]): beyond the allocation limit, or
    /// refused by the system allocator.
    pub fn try_zeros(dtype: DType, device: Device, len: usize) -> Result<Buffer> {
        if device == Device::Meta {
            return Ok(Buffer::Meta(len));
        }
        Ok(match dtype {
            DType::Bool => Buffer::Bool(alloc::try_zeroed(len)?),
            DType::Int32 => Buffer::I32(alloc::try_zeroed(len)?),
            DType::Int64 => Buffer::I64(alloc::try_zeroed(len)?),
            DType::Float32 => Buffer::F32(alloc::try_zeroed(len)?),
            DType::Float64 => Buffer::F64(alloc::try_zeroed(len)?),
        })
    }

    /// A zero-filled buffer of `len` elements (a meta buffer on the meta device).
    ///
    /// # Panics
    ///
    /// If the allocation is refused (see [`Buffer::try_zeros`], the form for a
    /// size a user controls).
    pub fn zeros(dtype: DType, device: Device, len: usize) -> Buffer {
        Buffer::try_zeros(dtype, device, len).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_buffer!(self, v, T => v.len(), meta => match self { Buffer::Meta(n) => *n, _ => 0 })
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Wraps a typed `Vec` into a buffer.
pub trait IntoBuffer: Element + alloc::Zeroable {
    /// The buffer holding `v`.
    fn into_buffer(v: Vec<Self>) -> Buffer;
    /// The typed data of a buffer of this element type.
    fn slice(b: &Buffer) -> Option<&[Self]>;
    /// The typed data of a buffer of this element type, mutably.
    fn slice_mut(b: &mut Buffer) -> Option<&mut Vec<Self>>;
}

macro_rules! into_buffer {
    ($t:ty, $v:ident) => {
        impl IntoBuffer for $t {
            fn into_buffer(v: Vec<Self>) -> Buffer {
                Buffer::$v(v)
            }
            fn slice(b: &Buffer) -> Option<&[Self]> {
                match b {
                    Buffer::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(b: &mut Buffer) -> Option<&mut Vec<Self>> {
                match b {
                    Buffer::$v(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
into_buffer!(bool, Bool);
into_buffer!(i32, I32);
into_buffer!(i64, I64);
into_buffer!(f32, F32);
into_buffer!(f64, F64);

/// Shared element storage. Cloning shares; [`Storage::ptr_eq`] tells whether two
/// tensors alias.
#[derive(Clone, Debug)]
pub struct Storage(Arc<Cell>);

/// A storage's buffer behind its lock, and the version counter of the tensors
/// over it; when the last handle goes, large memory goes back to the
/// allocator's cache ([`set_buffer_cache`]).
#[derive(Debug)]
struct Cell {
    buffer: RwLock<Buffer>,
    version: AtomicU64,
}

impl Drop for Cell {
    // Inline: the storage's drop runs once per tensor freed, from the
    // `Arc`'s drop in whichever module lets it go.
    #[inline]
    fn drop(&mut self) {
        let buffer = self.buffer.get_mut().unwrap_or_else(|e| e.into_inner());
        match std::mem::replace(buffer, Buffer::Meta(0)) {
            Buffer::Bool(v) => alloc::recycle(v),
            Buffer::I32(v) => alloc::recycle(v),
            Buffer::I64(v) => alloc::recycle(v),
            Buffer::F32(v) => alloc::recycle(v),
            Buffer::F64(v) => alloc::recycle(v),
            Buffer::Meta(_) => {}
        }
    }
}

impl Storage {
    /// A storage holding `buffer`.
    #[inline]
    pub fn new(buffer: Buffer) -> Storage {
        Storage(alloc::arc_in_place(|| Cell {
            buffer: RwLock::new(buffer),
            version: AtomicU64::new(0),
        }))
    }

    /// How many handles share this storage (tensors' geometries and other
    /// `Storage` clones).
    pub(crate) fn handle_count(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    /// Same storage?
    pub fn ptr_eq(&self, other: &Storage) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The version counter of the tensors over this storage (a base and its
    /// views share it, as in PyTorch): how many in-place writes they have
    /// had. Autograd compares it with the version a saved tensor saw.
    ///
    /// ```
    /// use opforge::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// let v = t.storage().version();
    /// t.storage().bump_version();
    /// assert_eq!(t.select(0, 1)?.storage().version(), v + 1);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn version(&self) -> u64 {
        self.0.version.load(Ordering::Acquire)
    }

    /// Counts one in-place write (what a kernel's `(a!)` outputs get).
    pub fn bump_version(&self) {
        self.0.version.fetch_add(1, Ordering::AcqRel);
    }

    /// Sets the count back to `version`, what it was when a kernel made the
    /// storage: the kernel's own writes while filling a result nothing else
    /// holds yet are not in-place writes anyone can observe (PyTorch's
    /// kernels write their fresh results below the layer that counts, so a
    /// fresh result is at version 0).
    pub(crate) fn restore_version(&self, version: u64) {
        self.0.version.store(version, Ordering::Release);
    }

    /// A number identifying the storage while it lives (its address): the
    /// order in which a kernel holding several storages' locks at once takes
    /// them, so that two such kernels never wait on each other in a cycle.
    pub fn lock_order(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// Read access to the buffer.
    pub fn read(&self) -> RwLockReadGuard<'_, Buffer> {
        // A kernel that panicked while writing leaves the data as it was written so
        // far; the lock itself stays usable.
        self.0.buffer.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Write access to the buffer. Taking it counts as one in-place write
    /// ([`Storage::bump_version`]): every kernel's write into an existing
    /// tensor (`(a!)` arguments, `out=`) goes through here, so autograd sees it.
    pub fn write(&self) -> std::sync::RwLockWriteGuard<'_, Buffer> {
        let guard = self.0.buffer.write().unwrap_or_else(|e| e.into_inner());
        self.bump_version();
        guard
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// True if the storage has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
