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

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn byte_counts_must_fit_int64() {
        assert_eq!(storage_nbytes(&[2, 3], 4).unwrap(), 24);
        assert_eq!(storage_nbytes(&[0, 1 << 62], 8).unwrap(), 0);
        assert_eq!(storage_nbytes(&[], 8).unwrap(), 8);
        assert_eq!(
            storage_nbytes(&[1 << 60], 8).unwrap_err().to_string(),
            "Storage size calculation overflowed with sizes=[1152921504606846976]"
        );
        assert!(storage_nbytes(&[1 << 31, 1 << 31], 4).is_err());
        assert!(storage_nbytes(&[usize::MAX, 2], 1).is_err());
    }
}
