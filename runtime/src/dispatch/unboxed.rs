//! [`Unboxed`]: a kernel's function pointer with the identity of its type,
//! alone in this file so that its fields are private to the two functions
//! that write and read them (`new`, `get`), which the `unsafe` below relies
//! on.

/// A kernel's unboxed entry point: a function pointer together with the
/// identity of its type. A typed call gets the pointer back only as the exact
/// type it was made from ([`Unboxed::get`]), so a kernel registered for one
/// schema can never be called through another schema's signature.
///
/// ```
/// use opforge::dispatch::Unboxed;
/// fn double(x: i64) -> i64 { 2 * x }
/// let u = Unboxed::new(double as fn(i64) -> i64);
/// assert_eq!(u.get::<fn(i64) -> i64>().map(|f| f(21)), Some(42));
/// assert!(u.get::<fn(f64) -> f64>().is_none()); // another type: refused
/// ```
///
/// Only pointer-sized values fit:
///
/// ```compile_fail
/// opforge::dispatch::Unboxed::new([0u64; 2]);
/// ```
///
/// and only values that may cross threads (the dispatcher is shared), and be
/// shared between them:
///
/// ```compile_fail
/// opforge::dispatch::Unboxed::new(std::ptr::null::<u8>());
/// ```
///
/// ```compile_fail
/// // `Copy` and `Send`, not `Sync`.
/// #[derive(Clone, Copy)]
/// struct NotSync(usize, std::marker::PhantomData<std::cell::Cell<()>>);
/// opforge::dispatch::Unboxed::new(NotSync(0, std::marker::PhantomData));
/// ```
///
/// A value of a pointer's size but a smaller alignment does not fit either:
///
/// ```compile_fail
/// opforge::dispatch::Unboxed::new([0u32; 2]);
/// ```
#[derive(Clone, Copy)]
pub struct Unboxed {
    ty: std::any::TypeId,
    /// The bytes of a value of type `ty` (a function pointer): written by
    /// [`Unboxed::new`], read back only by [`Unboxed::get`] with that type.
    bits: std::mem::MaybeUninit<*const ()>,
}

// SAFETY: `bits` holds a value of a type that is `Send` (a bound of
// `Unboxed::new`, the only constructor; the fields are private) and is only ever
// copied out as that type, so moving the bytes to another thread moves an `F`.
unsafe impl Send for Unboxed {}
// SAFETY: `bits` holds a value of a type that is `Sync` (a bound of
// `Unboxed::new`); `&Unboxed` only copies it out (`get`), never writes it, so
// sharing the bytes between threads shares an `F`.
unsafe impl Sync for Unboxed {}

impl Unboxed {
    /// Erases `f` (a function pointer, or any `Copy` value of a pointer's size
    /// and alignment; anything else does not compile).
    pub fn new<F: Copy + Send + Sync + 'static>(f: F) -> Unboxed {
        const {
            assert!(
                std::mem::size_of::<F>() == std::mem::size_of::<*const ()>()
                    && std::mem::align_of::<F>() == std::mem::align_of::<*const ()>(),
                "Unboxed holds function pointers: a value of a pointer's size and alignment"
            )
        };
        let mut bits = std::mem::MaybeUninit::<*const ()>::uninit();
        // SAFETY: `bits` has the size and alignment of `F` (checked at compile
        // time above), so it is valid for one write of an `F`; `MaybeUninit`
        // may hold any bytes, padding included.
        unsafe { bits.as_mut_ptr().cast::<F>().write(f) };
        Unboxed {
            ty: std::any::TypeId::of::<F>(),
            bits,
        }
    }

    /// The function pointer, if it was made from an `F` (else `None`).
    #[inline(always)]
    pub fn get<F: Copy + 'static>(&self) -> Option<F> {
        if self.ty == std::any::TypeId::of::<F>() {
            // SAFETY: equal type ids: `new::<F>` wrote an `F` into `bits`, and
            // nothing writes them afterwards (the field is private, the value
            // `Copy`); reading it back as `F` reads a valid `F`.
            Some(unsafe { self.bits.as_ptr().cast::<F>().read() })
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add_one(x: i64) -> i64 {
        x + 1
    }

    fn as_float(x: i64) -> f64 {
        x as f64
    }

    /// Types of the same size and alignment as the one stored are refused:
    /// another function pointer type, a plain pointer-sized value, the same
    /// function's item type (not a pointer).
    #[test]
    fn only_the_stored_type_comes_back() {
        let u = Unboxed::new(add_one as fn(i64) -> i64);
        assert!(u.get::<fn(i64) -> f64>().is_none());
        assert!(u.get::<fn(u64) -> i64>().is_none());
        assert!(u.get::<usize>().is_none());
        assert!(u.get::<&'static u8>().is_none());
        assert_eq!(u.get::<fn(i64) -> i64>().map(|f| f(1)), Some(2));
        let v = Unboxed::new(as_float as fn(i64) -> f64);
        assert!(v.get::<fn(i64) -> i64>().is_none());
        assert_eq!(v.get::<fn(i64) -> f64>().map(|f| f(3)), Some(3.0));
    }

    /// Copies read on other threads, while the original is read here, get
    /// the value back whole.
    #[test]
    fn copies_on_other_threads_read_the_value() {
        let u = Unboxed::new(add_one as fn(i64) -> i64);
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    for i in 0..10_000 {
                        let f = u.get::<fn(i64) -> i64>().unwrap();
                        assert_eq!(f(i + t), i + t + 1);
                    }
                });
            }
            for i in 0..10_000 {
                assert_eq!(u.get::<fn(i64) -> i64>().map(|f| f(i)), Some(i + 1));
            }
        });
    }
}
