//! Fallible allocation of element data: the one path every allocation whose size
//! a user controls goes through (factories, `out=` resizing, kernel results and
//! intermediates, copies and casts).
//!
//! Sizes are checked twice, as PyTorch checks them:
//! - **arithmetic**: the byte count of a shape must fit in `int64`
//!   ([`storage_nbytes`]; PyTorch's "Storage size calculation overflowed with
//!   sizes=[…]"), on every device;
//! - **memory** (CPU only): the byte count must not exceed the allocation limit
//!   ([`allocation_limit`]), and the allocation itself is made with
//!   `try_reserve`, so a refusal by the system allocator is an error too. Both
//!   give PyTorch's allocator message ([`alloc_error`]), never an aborted process.
//!
//! The limit is per allocation (one tensor or intermediate), like the system
//! allocator's own refusal: by default the machine's memory (Linux: `MemTotal`
//! of `/proc/meminfo`, or a cgroup's `memory.max` if lower; elsewhere 64 GiB),
//! settable with [`set_allocation_limit`].
//!
//! Large allocations (from [`HUGE_PAGE_BYTES`] on) are advised to the kernel
//! as candidates for transparent huge pages (Linux `madvise(MADV_HUGEPAGE)`,
//! what PyTorch does when `THP_MEM_ALLOC_ENABLE=1` is set): fresh memory of a
//! 40 MB result then arrives in 20 page faults instead of 10,000, about four
//! times faster to fill. On by default; [`set_huge_pages`] or the environment
//! variable `OPFORGE_HUGE_PAGES=0` turns it off.
//!
//! Freed large blocks (from [`HUGE_PAGE_BYTES`] on) are kept, up to a budget,
//! for the next allocation of the same size ([`set_buffer_cache`]): a loop
//! that makes and drops a 40 MB result each step then reuses one block
//! instead of mapping fresh memory (and taking its page faults) every time,
//! as glibc's heap does for PyTorch when the block fits in it.

use crate::error::{Error, Result};
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The limit in force, in bytes; [`UNREAD`] until first used (then the
/// machine's memory, unless a limit was set).
static LIMIT: AtomicUsize = AtomicUsize::new(UNREAD);

/// [`LIMIT`] before anything set or read it.
const UNREAD: usize = usize::MAX;

/// The default limit where the machine's memory cannot be read.
const FALLBACK_LIMIT: usize = 64 << 30;

/// Sets the most one allocation of element data may take, in bytes, or with
/// `None` goes back to the default (the machine's memory). Process-wide: it
/// applies to every thread from the next allocation on.
///
/// ```
/// use opforge::tensor::{allocation_limit, set_allocation_limit};
/// use opforge::torch;
/// set_allocation_limit(Some(1 << 20)); // 1 MiB
/// assert_eq!(allocation_limit(), 1 << 20);
/// let err = torch::zeros(&[1 << 20]).unwrap_err(); // 4 MiB of float32
/// assert_eq!(
///     err.to_string(),
///     "DefaultCPUAllocator: can't allocate memory: you tried to allocate 4194304 bytes. \
///      Error code 12 (Cannot allocate memory)"
/// );
/// // Reductions read views in place: an expanded view larger than the limit sums.
/// let big = torch::ones(&[1])?.expand(&[1 << 20])?;
/// assert_eq!(big.sum()?.item()?, opforge::Scalar::Float((1 << 20) as f64));
/// set_allocation_limit(None);
/// assert!(allocation_limit() > 1 << 20);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn set_allocation_limit(limit: Option<usize>) {
    // `usize::MAX` would read as "unread": one byte less is the same in practice.
    let v = limit.map_or_else(machine_memory, |n| n.min(UNREAD - 1));
    LIMIT.store(v, Ordering::Relaxed);
}

/// The most one allocation of element data may take now, in bytes: the user's
/// limit ([`set_allocation_limit`]) or the machine's memory.
#[inline]
pub fn allocation_limit() -> usize {
    match LIMIT.load(Ordering::Relaxed) {
        UNREAD => first_limit(),
        n => n,
    }
}

/// The machine's memory, as the limit unless one was set meanwhile.
#[cold]
fn first_limit() -> usize {
    let m = machine_memory();
    match LIMIT.compare_exchange(UNREAD, m, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => m,
        Err(set) => set,
    }
}

/// The machine's memory in bytes, read once.
fn machine_memory() -> usize {
    static MEMORY: OnceLock<usize> = OnceLock::new();
    let m = *MEMORY.get_or_init(|| {
        let total = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| meminfo_total(&s));
        let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok());
        match (total, cgroup) {
            (Some(t), Some(c)) => t.min(c),
            (Some(t), None) => t,
            (None, Some(c)) => c,
            (None, None) => FALLBACK_LIMIT,
        }
    });
    m.min(UNREAD - 1)
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn meminfo_total(text: &str) -> Option<usize> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut parts = line["MemTotal:".len()..].split_whitespace();
    let n: usize = parts.next()?.parse().ok()?;
    let unit = match parts.next() {
        Some("kB") => 1024,
        None => 1,
        Some(_) => return None,
    };
    n.checked_mul(unit)
}

/// PyTorch's CPU allocator error for a request of `bytes`.
#[cold]
pub fn alloc_error(bytes: usize) -> Error {
    Error::Runtime(
        format!(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes. Error code 12 (Cannot allocate memory)"
        )
        .into(),
    )
}

/// PyTorch's error for a shape whose byte count does not fit in `int64`.
#[cold]
fn overflow_error(shape: &[usize]) -> Error {
    Error::Runtime(format!("Storage size calculation overflowed with sizes={shape:?}").into())
}

/// The byte count of a contiguous tensor of `shape` (`computeStorageNbytesContiguous`):
/// an error if it does not fit in `int64`, on every device.
pub fn storage_nbytes(shape: &[usize], itemsize: usize) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .and_then(|n| n.checked_mul(itemsize))
        .filter(|&b| b <= i64::MAX as usize)
        .ok_or_else(|| overflow_error(shape))
}

/// Refuses an allocation of `bytes` above the limit.
#[inline(always)]
pub fn check_bytes(bytes: usize) -> Result<()> {
    if bytes > allocation_limit() {
        return Err(alloc_error(bytes));
    }
    Ok(())
}

/// Allocations of at least this many bytes are advised as candidates for
/// transparent huge pages (when [`huge_pages`] is on): the huge page size of
/// x86-64 and of most Linux systems, below which no huge page fits.
pub const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Huge-page advice: 0 before first use (the environment not yet read), 1 off, 2 on.
static HUGE: AtomicU8 = AtomicU8::new(0);

/// Turns the huge-page advice for large allocations on or off (process-wide,
/// from the next allocation on). It changes speed only, never results.
///
/// ```
/// use opforge::tensor::{huge_pages, set_huge_pages};
/// set_huge_pages(false);
/// assert!(!huge_pages());
/// let t = opforge::torch::ones(&[1 << 20])?; // 4 MiB, ordinary pages
/// assert_eq!(t.sum()?.item()?, opforge::Scalar::Float((1 << 20) as f64));
/// set_huge_pages(true);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn set_huge_pages(on: bool) {
    HUGE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

/// Whether large allocations are advised as huge-page candidates: on unless
/// [`set_huge_pages`] turned it off or, before any call to it, the
/// environment variable `OPFORGE_HUGE_PAGES` was `0`.
pub fn huge_pages() -> bool {
    match HUGE.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var_os("OPFORGE_HUGE_PAGES").is_none_or(|v| v != "0");
            // A racing `set_huge_pages` wins over the environment.
            let _ = HUGE.compare_exchange(
                0,
                if on { 2 } else { 1 },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            HUGE.load(Ordering::Relaxed) == 2
        }
        v => v == 2,
    }
}

/// Advises the whole huge pages inside the `bytes` bytes at `ptr` (memory this
/// module just allocated) as transparent huge-page candidates.
#[inline]
fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(all(target_os = "linux", not(miri)))]
    if bytes >= HUGE_PAGE_BYTES && huge_pages() {
        let start = (ptr as usize).next_multiple_of(HUGE_PAGE_BYTES);
        let end = (ptr as usize + bytes) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
        if end > start {
            // SAFETY: `start..end` lies inside the caller's allocation and is
            // page-aligned; `MADV_HUGEPAGE` only tells the kernel how to back
            // those pages: contents, validity and ownership of the memory do
            // not change, whatever the call returns (an error, e.g. a kernel
            // without huge pages, leaves the memory as it was: ignored).
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    let _ = (ptr, bytes);
}

/// The cache budget in force, in bytes; [`UNREAD`] until first used.
static CACHE_BUDGET: AtomicUsize = AtomicUsize::new(UNREAD);

/// The default cache budget: a sixteenth of the machine's memory, at most
/// 1 GiB.
fn default_cache_budget() -> usize {
    (machine_memory() / 16).min(1 << 30)
}

/// At most this many blocks are kept, whatever their size (a lookup walks
/// them all).
const CACHE_BLOCKS: usize = 16;

/// Sets the most freed memory kept for reuse, in bytes (`Some(0)`: keep none),
/// or with `None` goes back to the default (a sixteenth of the machine's
/// memory, at most 1 GiB; the environment variable `OPFORGE_BUFFER_CACHE`, in
/// bytes, sets it before any call). Only blocks of [`HUGE_PAGE_BYTES`] and
/// more are kept, at most 16 of them; a new allocation of exactly a kept
/// block's size takes it back (its contents are never read: it arrives as
/// capacity to write). Lowering the budget frees what is over it at once.
///
/// ```
/// use opforge::tensor::{buffer_cache, cached_bytes, set_buffer_cache};
/// set_buffer_cache(Some(0));
/// drop(opforge::torch::ones(&[1 << 20])?); // 4 MiB, freed at once
/// assert_eq!(cached_bytes(), 0);
/// set_buffer_cache(None);
/// assert!(buffer_cache() > 0);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn set_buffer_cache(bytes: Option<usize>) {
    let v = bytes.map_or_else(default_cache_budget, |n| n.min(UNREAD - 1));
    CACHE_BUDGET.store(v, Ordering::Relaxed);
    let evicted = lock_cache().shrink(v, CACHE_BLOCKS);
    drop(evicted);
}

/// The most freed memory kept for reuse now, in bytes (see
/// [`set_buffer_cache`]).
pub fn buffer_cache() -> usize {
    match CACHE_BUDGET.load(Ordering::Relaxed) {
        UNREAD => {
            let from_env = std::env::var("OPFORGE_BUFFER_CACHE")
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
            let v = from_env.map_or_else(default_cache_budget, |n| n.min(UNREAD - 1));
            // A racing `set_buffer_cache` wins over the environment.
            match CACHE_BUDGET.compare_exchange(UNREAD, v, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => v,
                Err(set) => set,
            }
        }
        n => n,
    }
}

/// The bytes of freed memory kept for reuse at this moment.
pub fn cached_bytes() -> usize {
    lock_cache().bytes
}

/// Frees every block kept for reuse (the budget stays as it is).
pub fn release_cached_buffers() {
    let evicted = lock_cache().shrink(0, 0);
    drop(evicted);
}

/// A freed block: memory from the global allocator with `layout`, owned by
/// the cache.
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: a block is memory no one else refers to (its `Vec` was given up to
// the cache); it has no tie to the thread that freed it.
unsafe impl Send for Block {}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated by the global allocator with `layout`
        // (a `Vec`'s buffer, recorded with that `Vec`'s layout in `recycle`)
        // and is owned by this block alone: freed once, here.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// The kept blocks, oldest first, and their total size.
struct Cache {
    blocks: Vec<Block>,
    bytes: usize,
}

impl Cache {
    /// Takes out the oldest blocks until at most `bytes` and `count` remain;
    /// the caller drops (frees) them after releasing the lock.
    fn shrink(&mut self, bytes: usize, count: usize) -> Vec<Block> {
        let mut out = 0;
        let mut total = self.bytes;
        while out < self.blocks.len() && (total > bytes || self.blocks.len() - out > count) {
            total -= self.blocks[out].layout.size();
            out += 1;
        }
        self.bytes = total;
        self.blocks.drain(..out).collect()
    }
}

static CACHE: Mutex<Cache> = Mutex::new(Cache {
    blocks: Vec::new(),
    bytes: 0,
});

fn lock_cache() -> std::sync::MutexGuard<'static, Cache> {
    // The cache's state is consistent between statements: a panic elsewhere
    // while it was held leaves it usable.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Frees `v`'s memory, or keeps it for reuse when it is large and fits the
/// budget ([`set_buffer_cache`]).
/// Element types without drop glue only (`Copy`): the block is kept
/// without its elements ever being dropped.
#[inline]
pub(crate) fn recycle<T: Copy>(v: Vec<T>) {
    // Most buffers are small: freed here, without the layout's checks (an
    // existing `Vec`'s byte size does not overflow).
    if v.capacity() * std::mem::size_of::<T>() < HUGE_PAGE_BYTES {
        return;
    }
    recycle_large(v)
}

/// [`recycle`] of a block of at least [`HUGE_PAGE_BYTES`].
#[cold]
#[inline(never)]
fn recycle_large<T: Copy>(v: Vec<T>) {
    let Ok(layout) = Layout::array::<T>(v.capacity()) else {
        return;
    };
    if layout.size() < HUGE_PAGE_BYTES {
        return;
    }
    let budget = buffer_cache();
    if layout.size() > budget {
        return;
    }
    // The `Vec` gives its memory up to the block (its `Copy` elements need no
    // drop): it is never used or freed again.
    let mut v = std::mem::ManuallyDrop::new(v);
    let block = Block {
        ptr: NonNull::new(v.as_mut_ptr().cast::<u8>()).expect("an allocated Vec"),
        layout,
    };
    let size = layout.size();
    let evicted = {
        let mut c = lock_cache();
        let evicted = c.shrink(budget - size, CACHE_BLOCKS - 1);
        c.blocks.push(block);
        c.bytes += size;
        evicted
    };
    drop(evicted);
}

/// A kept block of exactly `len` elements of `T`, as an empty `Vec`.
fn reuse<T>(len: usize) -> Option<Vec<T>> {
    let layout = Layout::array::<T>(len).ok()?;
    if layout.size() < HUGE_PAGE_BYTES {
        return None;
    }
    let block = {
        let mut c = lock_cache();
        let i = c.blocks.iter().rposition(|b| b.layout == layout)?;
        c.bytes -= layout.size();
        c.blocks.remove(i)
    };
    let block = std::mem::ManuallyDrop::new(block);
    // SAFETY: the block's memory was allocated by the global allocator with
    // exactly the layout of `[T; len]` (size and alignment compared above),
    // which is what a `Vec<T>` of capacity `len` frees it with; the `Vec` is
    // its only owner (the block was taken out of the cache and is never
    // dropped: `ManuallyDrop`), and its length 0 claims no initialised
    // element.
    Some(unsafe { Vec::from_raw_parts(block.ptr.as_ptr().cast::<T>(), 0, len) })
}

/// Below this many bytes an allocation is made as every other small allocation
/// of the program is (`Vec::with_capacity`: a process that cannot get 4 KiB
/// cannot go on anyway); from it on, with `try_reserve_exact`. It keeps the
/// typical one-element call from the slower growth path.
const SMALL: usize = 4 << 10;

/// An empty `Vec` with room for `len` elements, within the limit and allocated
/// with `try_reserve` (a refusal is an error, not an abort).
#[inline(always)]
pub fn try_with_capacity<T>(len: usize) -> Result<Vec<T>> {
    let bytes = len
        .checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| alloc_error(usize::MAX))?;
    check_bytes(bytes)?;
    if bytes < SMALL {
        return Ok(Vec::with_capacity(len));
    }
    if let Some(v) = reuse::<T>(len) {
        return Ok(v);
    }
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(len).map_err(|_| alloc_error(bytes))?;
    advise_huge_pages(v.as_mut_ptr().cast(), bytes);
    Ok(v)
}

/// `len` copies of `value`, allocated as [`try_with_capacity`] does.
pub fn try_filled<T: Clone>(len: usize, value: T) -> Result<Vec<T>> {
    let mut v = try_with_capacity(len)?;
    v.resize(len, value);
    Ok(v)
}

/// Element types whose all-zero bit pattern is a valid value, their zero
/// (`false`, `0`, `+0.0`). Sealed: implemented for the tensor element types.
pub trait Zeroable: Copy + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! zeroable {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Zeroable for $t {}
    )*};
}
zeroable!(bool, i32, i64, f32, f64);

/// `len` zeros, allocated zeroed by the allocator (a large block comes from the
/// operating system already zero, so nothing walks over it before the kernel
/// writes it), within the limit; a refusal is an error.
pub fn try_zeroed<T: Zeroable>(len: usize) -> Result<Vec<T>> {
    let bytes = len
        .checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| alloc_error(usize::MAX))?;
    check_bytes(bytes)?;
    if bytes == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| alloc_error(bytes))?;
    // SAFETY: `layout` has a non-zero size (checked above).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(alloc_error(bytes));
    }
    advise_huge_pages(ptr.cast(), bytes);
    // SAFETY: `ptr` comes from the global allocator with the layout of
    // `[T; len]`, so a `Vec` of capacity `len` may own it; its `len` elements
    // are initialised, all bytes zero, which is a valid `T` (`Zeroable`'s
    // contract, sealed to bool, integers and floats).
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// The items of an iterator that yields exactly `len` of them, allocated as
/// [`try_with_capacity`] does (never reallocating).
#[inline]
pub fn try_collect<T>(len: usize, items: impl IntoIterator<Item = T>) -> Result<Vec<T>> {
    let mut v = try_with_capacity(len)?;
    for x in items.into_iter().take(len) {
        v.push(x);
    }
    Ok(v)
}

/// `Arc::new(make())`, with the value written straight into the new
/// allocation instead of built on the stack and copied in.
///
/// For the small structs every call makes (a tensor's inner record, a
/// storage's cell), the copy `Arc::new` does is not only more work: built
/// field by field on the stack and reread in wider loads that straddle those
/// stores, the value waits for the stores to reach the cache (a load the
/// store buffer cannot forward), several times per tensor. Allocating first
/// lets the fields be stored where they stay.
///
/// If `make` panics, the allocation is freed and nothing is leaked or read.
#[inline(always)]
pub(crate) fn arc_in_place<T>(make: impl FnOnce() -> T) -> std::sync::Arc<T> {
    // `Arc::new` of an uninitialised value, not `Arc::new_uninit`: the
    // former's layout is a constant, the latter computes it out of line.
    let arc = std::sync::Arc::new(std::mem::MaybeUninit::<T>::uninit());
    let ptr = std::sync::Arc::as_ptr(&arc).cast_mut().cast::<T>();
    // SAFETY: two invariants, both held by this function's shape.
    // - The write is the only access to the value: `arc` is local, made
    //   just above and never cloned or lent (`make` cannot reach it), so no
    //   other handle, reference or pointer to the value exists. `ptr` comes
    //   from the `Arc`'s own raw pointer (`as_ptr`, not through a shared
    //   reference) and is valid and aligned for a `MaybeUninit<T>`, which has
    //   `T`'s layout; `write` reads and drops nothing there.
    // - `assume_init` follows a write of a whole `T`: if `make` panics, the
    //   write and `assume_init` are never reached and `arc` is dropped as the
    //   `MaybeUninit` it is (freed, nothing read or dropped).
    unsafe {
        ptr.write(make());
        arc.assume_init()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arc_in_place_writes_the_value_once_and_frees_it_on_panic() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Counted([u64; 9], u8);
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::Relaxed);
            }
        }
        let a = arc_in_place(|| Counted([7; 9], 3));
        assert_eq!((a.0, a.1), ([7; 9], 3));
        assert_eq!(
            (
                std::sync::Arc::strong_count(&a),
                std::sync::Arc::weak_count(&a)
            ),
            (1, 0)
        );
        let b = a.clone();
        drop(a);
        assert_eq!(DROPS.load(Ordering::Relaxed), 0);
        drop(b);
        assert_eq!(
            DROPS.load(Ordering::Relaxed),
            1,
            "dropped once, with its last handle"
        );
        // A panic while the value is made: the allocation is freed (Miri
        // checks it), no value is dropped (none was written).
        let panicked = std::panic::catch_unwind(|| {
            arc_in_place::<Counted>(|| panic!("making the value failed"))
        });
        assert!(panicked.is_err());
        assert_eq!(DROPS.load(Ordering::Relaxed), 1);
        // Layouts at the edges: a zero-sized value, an over-aligned one, and
        // a value whose making makes another in place first.
        let unit = arc_in_place(|| ());
        assert_eq!(*unit, ());
        #[repr(align(64))]
        struct Line([u8; 3]);
        let line = arc_in_place(|| Line([1, 2, 3]));
        assert_eq!(std::sync::Arc::as_ptr(&line) as usize % 64, 0);
        assert_eq!(line.0, [1, 2, 3]);
        let nested = arc_in_place(|| (arc_in_place(|| Counted([1; 9], 1)), 5u8));
        assert_eq!((nested.0 .1, nested.1), (1, 5));
        drop(nested);
        assert_eq!(DROPS.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text = "MemTotal:       24684084 kB\nMemFree:        1 kB\n";
        assert_eq!(meminfo_total(text), Some(24684084 * 1024));
        assert_eq!(meminfo_total("MemFree: 1 kB\n"), None);
        assert_eq!(meminfo_total("MemTotal: x kB\n"), None);
    }

    /// The default limit is the machine's memory: no machine has 4 PiB, so the
    /// request is refused before any allocation (this test never changes the
    /// limit, so it holds whatever else runs in this binary).
    #[test]
    fn requests_beyond_the_machine_are_errors() {
        assert!(machine_memory() > 0);
        let e = try_with_capacity::<u8>(1 << 52).unwrap_err();
        assert_eq!(
            e.to_string(),
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate 4503599627370496 bytes. Error code 12 (Cannot allocate memory)"
        );
        assert!(try_with_capacity::<f64>(usize::MAX / 4).is_err());
        assert_eq!(try_filled(3, 7u8).unwrap(), vec![7, 7, 7]);
        assert_eq!(try_collect(2, [1, 2, 3]).unwrap(), vec![1, 2]);
    }

    /// A dropped storage's large block comes back to the next allocation of
    /// exactly its size, of any element type with the same layout, and to no
    /// other; a budget of 0 keeps nothing, lowering the budget frees what is
    /// over it, and releasing empties the cache. (The sizes are odd enough
    /// that no other test of this binary allocates them; this is the one
    /// test that changes the budget.)
    #[test]
    fn freed_large_blocks_are_reused_at_the_same_size() {
        use crate::tensor::{Buffer, Storage};
        let n = (HUGE_PAGE_BYTES + 4 * 12_347) / 4;
        let stored = |v: Vec<f32>| Storage::new(Buffer::F32(v));
        let found = |size: usize| lock_cache().blocks.iter().any(|b| b.layout.size() == size);
        set_buffer_cache(Some(64 << 20));

        let mut v = try_with_capacity::<f32>(n).unwrap();
        v.resize(n, 1.5);
        let first = v.as_ptr() as usize;
        drop(stored(v));
        assert!(found(n * 4));
        assert!(cached_bytes() >= n * 4);
        // Another size does not take it.
        let other = try_with_capacity::<f32>(n + 1).unwrap();
        assert_ne!(other.as_ptr() as usize, first);
        assert!(found(n * 4));
        // The same bytes at another alignment do not: a float32 block of
        // 2k elements stays when k float64 are asked for.
        let even = n - 1;
        drop(stored(try_filled(even, 1.0f32).unwrap()));
        let wide = try_with_capacity::<f64>(even / 2).unwrap();
        assert!(found(even * 4));
        drop(wide);
        // The same bytes as i32 do, empty, with the full capacity.
        let again = try_with_capacity::<i32>(n).unwrap();
        assert_eq!(again.as_ptr() as usize, first);
        assert_eq!((again.len(), again.capacity()), (0, n));
        assert!(!found(n * 4));
        drop(Storage::new(Buffer::I32(again)));
        assert!(found(n * 4));

        // A lower budget frees what is over it; a budget of 0 keeps nothing.
        set_buffer_cache(Some(HUGE_PAGE_BYTES));
        assert!(!found(n * 4));
        set_buffer_cache(Some(0));
        let w = try_filled::<f64>(n, 2.0).unwrap();
        drop(Storage::new(Buffer::F64(w)));
        assert!(!found(n * 8));
        assert_eq!(cached_bytes(), 0);

        // Small blocks are never kept; releasing empties the cache.
        set_buffer_cache(Some(64 << 20));
        drop(stored(vec![0.0; 1000]));
        assert!(!found(4000));
        drop(stored(try_filled(n, 0.5).unwrap()));
        assert!(found(n * 4));
        release_cached_buffers();
        assert!(!found(n * 4));
        set_buffer_cache(None);
        assert!(buffer_cache() > 0);
    }

    /// The `THPeligible` flag of the mapping holding `addr` (Linux smaps).
    #[cfg(target_os = "linux")]
    fn thp_eligible(addr: usize) -> Option<bool> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = first.split_once('-') {
                if let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = (lo..hi).contains(&addr);
                    continue;
                }
            }
            if inside {
                if let Some(v) = line.strip_prefix("THPeligible:") {
                    return Some(v.trim() == "1");
                }
            }
        }
        None
    }

    /// Large allocations are advised as huge-page candidates: where the
    /// system gives huge pages only on request (`madvise` mode), the mapping
    /// of an 8 MiB buffer becomes eligible. With the advice off, the
    /// allocations behave the same (contents, limit).
    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn large_allocations_are_advised_as_huge_pages() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
        let requested_only = mode.is_ok_and(|m| m.contains("[madvise]"));
        let len = 8 << 20;
        set_huge_pages(true);
        let mut a = try_with_capacity::<u8>(len).unwrap();
        let z = try_zeroed::<i32>(len / 4).unwrap();
        for v in [a.as_mut_ptr() as usize, z.as_ptr() as usize] {
            let inside = v.next_multiple_of(HUGE_PAGE_BYTES);
            if requested_only {
                assert_eq!(thp_eligible(inside), Some(true), "{inside:#x}");
            }
        }
        assert!(z.iter().all(|&x| x == 0));
        a.resize(len, 1);
        set_huge_pages(false);
        assert!(!huge_pages());
        let z = try_zeroed::<i32>(len / 4).unwrap();
        assert!(z.iter().all(|&x| x == 0));
        assert_eq!(try_filled(len, 2u8).unwrap()[len - 1], 2);
        set_huge_pages(true);
        assert!(huge_pages());
    }

    #[test]
    fn zeroed_vectors_hold_zeros_and_respect_the_limit() {
        assert_eq!(try_zeroed::<f32>(3).unwrap(), vec![0.0; 3]);
        assert_eq!(try_zeroed::<bool>(2).unwrap(), vec![false; 2]);
        assert_eq!(try_zeroed::<i64>(0).unwrap(), Vec::<i64>::new());
        let big = try_zeroed::<f64>(1 << 20).unwrap();
        assert!(big.iter().all(|&x| x.to_bits() == 0) && big.capacity() == 1 << 20);
        assert!(try_zeroed::<bool>(1 << 52).is_err());
        assert!(try_zeroed::<f64>(usize::MAX / 4).is_err());
    }
}
