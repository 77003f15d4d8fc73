//! Intra-op parallelism: PyTorch's `at::parallel_for`, `set_num_threads` and
//! `get_num_threads`, over a rayon pool of the chosen size.
//!
//! A kernel splits its work into ranges with [`parallel_for`] (element ranges
//! of a pointwise loop) or [`map_chunks`] (partial results combined in order).
//! Work of at most [`GRAIN_SIZE`] elements, a thread count of one, or a call
//! from inside a parallel region runs inline on the caller's thread: small calls
//! never pay for threads.
//!
//! Results never depend on the thread count: [`map_chunks`] cuts its range at
//! boundaries fixed by the chunk size alone, and callers combine the partial
//! results in order, so a float sum gives the same bits on 1 thread or 64.
//!
//! A thread count is honoured or refused, never half-kept: [`set_num_threads`]
//! builds the pool of that many threads before it answers, and a count above
//! [`max_num_threads`] or one the system cannot start is an error that leaves
//! the previous count in place. (PyTorch accepts any positive count and then
//! runs every parallel kernel with it.)
//!
//! ```
//! opforge::set_num_threads(2)?;
//! assert_eq!(opforge::get_num_threads(), 2);
//! let e = opforge::set_num_threads(0).unwrap_err();
//! assert_eq!(e.to_string(), "set_num_threads expects a positive integer");
//! assert!(opforge::set_num_threads(usize::MAX).is_err());
//! assert_eq!(opforge::get_num_threads(), 2);
//! # Ok::<(), opforge::Error>(())
//! ```

use crate::error::Result;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// PyTorch's `at::internal::GRAIN_SIZE`: below this many elements a kernel runs
/// on one thread.
pub const GRAIN_SIZE: usize = 32_768;

/// The chosen thread count; 0 until [`set_num_threads`] is called.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// The pool for the current thread count.
static POOL: Pools = Pools::new();

/// The most threads [`set_num_threads`] accepts: 1,024, or the number of cores
/// this process may run on if that is more. Intra-op work never gains from
/// more threads than cores; the bound keeps an absurd count (100,000, or
/// `usize::MAX`) from spending seconds starting threads the system then
/// refuses.
pub fn max_num_threads() -> usize {
    default_threads().max(1024)
}

/// Sets the number of threads intra-op parallel kernels use (PyTorch's
/// `torch.set_num_threads`), and starts them: the count is in effect when this
/// returns. A count of zero, one above [`max_num_threads`], or one the system
/// cannot start threads for is an error, and the previous count stays.
///
/// ```
/// let e = opforge::set_num_threads(100_000).unwrap_err();
/// assert!(e.to_string().starts_with("set_num_threads(100000): at most "));
/// ```
pub fn set_num_threads(n: usize) -> Result<()> {
    crate::ensure!(n > 0, "set_num_threads expects a positive integer");
    let max = max_num_threads();
    crate::ensure!(
        n <= max,
        "set_num_threads({n}): at most {max} threads (opforge::parallel::max_num_threads: 1024, or the number of cores if more)"
    );
    let mut state = POOL.state.lock().unwrap_or_else(|e| e.into_inner());
    if n > 1 {
        match &*state {
            Some((m, Some(_))) if *m == n => {}
            _ => {
                let pool = build_pool(n).map_err(|e| {
                    crate::error::Error::Runtime(
                        format!(
                            "set_num_threads({n}): the system could not start {n} threads: {e}"
                        )
                        .into(),
                    )
                })?;
                POOL.builds.fetch_add(1, Ordering::Relaxed);
                *state = Some((n, Some(Arc::new(pool))));
            }
        }
    }
    THREADS.store(n, Ordering::Relaxed);
    Ok(())
}

/// The number of threads intra-op parallel kernels use: the value given to
/// [`set_num_threads`], by default the number of cores this process may run on.
pub fn get_num_threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => default_threads(),
        n => n,
    }
}

fn default_threads() -> usize {
    static DEFAULT: AtomicUsize = AtomicUsize::new(0);
    match DEFAULT.load(Ordering::Relaxed) {
        0 => {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            DEFAULT.store(n, Ordering::Relaxed);
            n
        }
        n => n,
    }
}

/// Is the caller one of the pool's threads (inside a parallel region)?
fn in_parallel_region() -> bool {
    rayon::current_thread_index().is_some()
}

/// The intra-op pool: built for one thread count at a time, by
/// [`set_num_threads`] or, for the default count, on first use. A build the
/// system refuses is remembered (`(n, None)`), so that the work runs inline
/// (the same results) instead of every call trying again.
struct Pools {
    state: Mutex<Option<(usize, Option<Arc<rayon::ThreadPool>>)>>,
    /// Pools built so far (for the tests).
    builds: AtomicUsize,
}

impl Pools {
    const fn new() -> Pools {
        Pools {
            state: Mutex::new(None),
            builds: AtomicUsize::new(0),
        }
    }

    /// The pool for `n` threads, built by `build` if there is none for `n`
    /// yet and no build for `n` failed before; `None` if the build failed.
    fn get(
        &self,
        n: usize,
        build: impl FnOnce(usize) -> std::result::Result<rayon::ThreadPool, String>,
    ) -> Option<Arc<rayon::ThreadPool>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match &*state {
            Some((m, pool)) if *m == n => pool.clone(),
            _ => {
                let pool = build(n).ok().map(Arc::new);
                self.builds.fetch_add(1, Ordering::Relaxed);
                *state = Some((n, pool.clone()));
                pool
            }
        }
    }
}

fn build_pool(n: usize) -> std::result::Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("opforge-intraop-{i}"))
        .build()
        .map_err(|e| e.to_string())
}

/// The pool for `n` threads, or `None` if the system refused to start them:
/// the work then runs inline, which gives the same results.
fn pool(n: usize) -> Option<Arc<rayon::ThreadPool>> {
    POOL.get(n, build_pool)
}

/// How many tasks a range of `len` elements is cut into with `grain` elements
/// at least per task (1: run inline).
fn tasks_for(len: usize, grain: usize) -> usize {
    if len <= grain.max(1) || in_parallel_region() {
        return 1;
    }
    get_num_threads().min(len.div_ceil(grain.max(1)))
}

/// Runs `job(0)`, …, `job(tasks - 1)` on `pool`'s threads and waits for them.
/// Not generic: rayon's scope and job machinery is compiled once for every
/// caller (instantiated per closure, it was a fifth of the crate's LLVM IR).
#[inline(never)]
fn run_tasks(pool: &rayon::ThreadPool, tasks: usize, job: &(dyn Fn(usize) + Sync)) {
    pool.scope(|s| {
        for t in 0..tasks {
            s.spawn(move |_| job(t));
        }
    });
}

/// Each of `parts` handed to one task of [`run_tasks`] as `f(t, part)`: a
/// part sits in a slot its task takes it from, so the tasks share one
/// non-generic job.
fn run_parts<P: Send>(pool: &rayon::ThreadPool, parts: Vec<P>, f: &(dyn Fn(usize, P) + Sync)) {
    let slots: Vec<Mutex<Option<P>>> = parts.into_iter().map(|p| Mutex::new(Some(p))).collect();
    run_tasks(pool, slots.len(), &|t| {
        let part = slots[t].lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(part) = part {
            f(t, part);
        }
    });
}

/// Calls `f` on sub-ranges covering `range` (PyTorch's `at::parallel_for`):
/// inline when the range has at most `grain` elements, else on up to
/// [`get_num_threads`] threads, each task at least `grain` elements.
///
/// `f` must not depend on how the range is cut (each element's result is its
/// own); for partial results combined afterwards, use [`map_chunks`].
#[inline]
pub fn parallel_for(range: Range<usize>, grain: usize, f: impl Fn(Range<usize>) + Sync) {
    // One task: the caller's closure runs here, inlined (the common case of
    // a small tensor pays no indirect call).
    let len = range.end.saturating_sub(range.start);
    if tasks_for(len, grain) <= 1 {
        if len > 0 {
            f(range);
        }
        return;
    }
    parallel_for_dyn(range, grain, &f)
}

/// [`parallel_for`] compiled once: the caller's closure is its only generic
/// part, called through a reference.
fn parallel_for_dyn(range: Range<usize>, grain: usize, f: &(dyn Fn(Range<usize>) + Sync)) {
    let len = range.end.saturating_sub(range.start);
    let tasks = tasks_for(len, grain);
    if tasks <= 1 {
        if len > 0 {
            f(range);
        }
        return;
    }
    let Some(pool) = pool(get_num_threads()) else {
        f(range);
        return;
    };
    let step = len.div_ceil(tasks);
    run_tasks(&pool, tasks, &|t| {
        let lo = range.start + t * step;
        let hi = (lo + step).min(range.end);
        if lo < hi {
            f(lo..hi);
        }
    });
}

/// `f(start, part)` on parts of `data` that cover it once (`start`: the
/// part's index in `data`): inline when `data` has at most `grain` elements,
/// else one part per thread, each at least `grain` long.
#[inline]
pub fn for_each_part_mut<T: Send>(
    data: &mut [T],
    grain: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    if tasks_for(data.len(), grain) <= 1 {
        if !data.is_empty() {
            f(0, data);
        }
        return;
    }
    for_each_part_dyn(data, grain, &f)
}

/// [`for_each_part_mut`] compiled once per element type.
fn for_each_part_dyn<T: Send>(data: &mut [T], grain: usize, f: &(dyn Fn(usize, &mut [T]) + Sync)) {
    let tasks = tasks_for(data.len(), grain);
    let pool = if tasks > 1 {
        pool(get_num_threads())
    } else {
        None
    };
    let Some(pool) = pool else {
        if !data.is_empty() {
            f(0, data);
        }
        return;
    };
    let step = data.len().div_ceil(tasks);
    run_parts(&pool, data.chunks_mut(step).collect(), &|t, part| {
        f(t * step, part)
    });
}

/// `f` on each chunk of `0..len` cut every `chunk` elements (the last may be
/// shorter), the results in chunk order. The cut depends on `chunk` alone, so
/// combining the results in order gives the same value on any thread count;
/// the chunks run in parallel when `len` exceeds [`GRAIN_SIZE`].
pub fn map_chunks<T: Send>(
    len: usize,
    chunk: usize,
    f: impl Fn(Range<usize>) -> T + Sync,
) -> Vec<T> {
    map_chunks_dyn(len, chunk, &f)
}

/// [`map_chunks`] compiled once per result type.
fn map_chunks_dyn<T: Send>(
    len: usize,
    chunk: usize,
    f: &(dyn Fn(Range<usize>) -> T + Sync),
) -> Vec<T> {
    let chunk = chunk.max(1);
    let count = len.div_ceil(chunk);
    let cut = |i: usize| i * chunk..((i + 1) * chunk).min(len);
    let mut out: Vec<Option<T>> = (0..count).map(|_| None).collect();
    let tasks = tasks_for(len, GRAIN_SIZE).min(count);
    match (tasks > 1).then(|| pool(get_num_threads())).flatten() {
        Some(pool) => {
            let per = count.div_ceil(tasks);
            run_parts(&pool, out.chunks_mut(per).collect(), &|t, slots| {
                for (j, slot) in slots.iter_mut().enumerate() {
                    *slot = Some(f(cut(t * per + j)));
                }
            });
        }
        None => {
            for (i, slot) in out.iter_mut().enumerate() {
                *slot = Some(f(cut(i)));
            }
        }
    }
    out.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_failed_pool_build_is_not_retried() {
        let pools = Pools::new();
        let fail = |_: usize| Err("refused".to_string());
        assert!(pools.get(3, fail).is_none());
        assert!(pools.get(3, |_| panic!("built again")).is_none());
        assert_eq!(pools.builds.load(Ordering::Relaxed), 1);
        if cfg!(miri) {
            // crossbeam-epoch, under rayon's workers, trips Stacked Borrows.
            return;
        }
        // Another count is tried once, and kept.
        let p = pools.get(2, build_pool).expect("two threads");
        assert_eq!(p.current_num_threads(), 2);
        assert!(pools.get(2, |_| panic!("built again")).is_some());
        assert_eq!(pools.builds.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn small_ranges_run_inline_once() {
        let calls = Mutex::new(Vec::new());
        parallel_for(0..100, GRAIN_SIZE, |r| calls.lock().unwrap().push(r));
        assert_eq!(*calls.lock().unwrap(), vec![0..100]);
        parallel_for(5..5, 1, |_| panic!("an empty range runs nothing"));
    }

    #[test]
    fn large_ranges_are_covered_exactly_once() {
        let n = 10 * GRAIN_SIZE + 7;
        let seen: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        parallel_for(0..n, GRAIN_SIZE, |r| {
            for i in r {
                seen[i].fetch_add(1, Ordering::Relaxed);
            }
        });
        assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn parts_cover_the_slice_once() {
        let mut v = vec![0usize; 4 * GRAIN_SIZE + 3];
        for_each_part_mut(&mut v, GRAIN_SIZE, |start, part| {
            for (i, x) in part.iter_mut().enumerate() {
                *x += start + i;
            }
        });
        assert!(v.iter().enumerate().all(|(i, &x)| x == i));
    }

    #[test]
    fn chunks_are_fixed_by_the_chunk_size() {
        let n = 3 * GRAIN_SIZE + 11;
        let ranges = map_chunks(n, 1000, |r| r);
        assert_eq!(ranges.len(), n.div_ceil(1000));
        assert_eq!(ranges[0], 0..1000);
        assert_eq!(ranges.last().unwrap().end, n);
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        assert!(map_chunks(0, 10, |r| r).is_empty());
    }
}
