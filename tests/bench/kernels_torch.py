#!/usr/bin/env python3
"""PyTorch side of the kernel benchmark: the cases of `tests/src/bin/kernels.rs`
(see its module documentation for the case list, shapes and timing rules),
timed the same way and printed in the same format:

    kernel <op> <size> <dtype> <threads> ns: <median>

Usage (a Python with PyTorch installed; never a dependency of the tests):

    /work/venv-torch/bin/python tests/bench/kernels_torch.py [--filter SUBSTR]... [--quick]

`--filter SUBSTR` keeps the cases whose label `<op> <size> <dtype>` contains
SUBSTR (repeatable: any of them); `--quick` uses a tenth of the timing budget.
Every case runs at 1 thread and at `os.cpu_count()`-style "all" threads
(`len(os.sched_getaffinity(0))`, what Rust's `available_parallelism()` reports
on Linux), set with `torch.set_num_threads`; all cases at one count, then at
the next.

Call path. Each case calls the ATen op through its Python binding, as a user
would (`torch.add(a, b)`, `torch.mean(x, -1)`, `a.to(torch.float64)`, ...):
the binding's argument parsing and dispatch are part of the figure, as
opforge's typed `torch::*` call path (with its override-protocol check) is part
of its figure. The timing loop itself adds Python interpreter overhead per call
(a `for` iteration and a `fn(*args)` call, some tens of ns on top of the
binding's ~1 us): that is noise at 10^5 elements and above, but at size 1 (and
partly at 10^3) the PyTorch figure is mostly the Python call path while the
opforge figure is a Rust call. The `size 1` rows are informational for that
reason. A `# loop overhead` line reports the loop's cost with a no-op callee.

Inputs come from `torch.rand` under a fixed seed with the same ranges as the
Rust side ([-2, 2), a divisor in [0.5, 1.5), `log` in [0.1, 2.1)): the same
distributions, not bit-identical data (numpy is not needed, and pure-Python
xorshift over 10^7 elements would take minutes). No case's speed depends on
the exact values.
"""

import math
import os
import sys
import time
import warnings

# Without numpy installed, importing torch warns; the benchmark does not need it.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402

SIZES = [1, 1_000, 100_000, 1_000_000, 10_000_000]
MM_SIDES = [64, 256, 512, 1024]
MATMUL_SIDES = [64, 256]
CAT_MANY_COUNTS = [1000, 40000]
BATCH = 8

FULL = dict(warmup=10e-3, sample=500e-6, total=50e-3)
QUICK = dict(warmup=1e-3, sample=50e-6, total=5e-3)
MIN_SAMPLES = 3
MAX_SAMPLES = 100


def uniform(shape, dtype, lo, hi, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, dtype=dtype, generator=g) * (hi - lo) + lo


def data(shape, dtype, seed):
    return uniform(shape, dtype, -2.0, 2.0, seed)


def shape2d(n):
    """The 2-D shape of the reduction, cat and index_select cases (as in Rust)."""
    if n >= 100_000:
        return [n // 1000, 1000]
    if n >= 1000:
        return [n // 100, 100]
    return [1, n]


def side(n):
    return int(round(n**0.5))


# Each builder returns (fn, args): the timed call is fn(*args).


def binary(fn, lo, hi):
    def build(n, dt):
        return fn, (data([n], dt, 1), uniform([n], dt, lo, hi, 2))

    return build


def unary(fn, lo=-2.0, hi=2.0):
    def build(n, dt):
        return fn, (uniform([n], dt, lo, hi, 1),)

    return build


def add_t(n, dt):
    s = side(n)
    m = data([s, s], dt, 1)
    return torch.add, (m, m.t())


def mean_dim(n, dt):
    return torch.mean, (data(shape2d(n), dt, 1), -1)


def sum_dim0(n, dt):
    return torch.sum, (data(shape2d(n), dt, 1), 0)


def max_dim(n, dt):
    return torch.max, (data(shape2d(n), dt, 1), -1)


def cat(n, dt):
    rows, cols = shape2d(n)
    half = [max(rows // 2, 1), cols]
    return torch.cat, ([data(half, dt, 1), data(half, dt, 2)],)


def cat_many(n, dt):
    return torch.cat, ([data([1], dt, k) for k in range(n)],)


def index_select(n, dt):
    shape = shape2d(n)
    x = data(shape, dt, 1)
    g = torch.Generator().manual_seed(0x5EED)
    idx = torch.randint(0, shape[0], (max(shape[0] // 2, 1),), generator=g)
    return torch.index_select, (x, 0, idx)


def to_dtype(n, dt):
    a = data([n], dt, 1)
    return a.to, (torch.float64,)


def mm(n, dt):
    return torch.mm, (data([n, n], dt, 1), data([n, n], dt, 2))


def matmul_batched(n, dt):
    return torch.matmul, (data([BATCH, n, n], dt, 1), data([BATCH, n, n], dt, 2))


def matmul_broadcast(n, dt):
    return torch.matmul, (data([BATCH, n, n], dt, 1), data([n, n], dt, 2))


F32, F64 = torch.float32, torch.float64
BY_SIZE = [
    ("add", F32, binary(torch.add, -2.0, 2.0)),
    ("add", F64, binary(torch.add, -2.0, 2.0)),
    ("add_t", F32, add_t),
    ("mul", F32, binary(torch.mul, -2.0, 2.0)),
    ("div", F32, binary(torch.div, 0.5, 1.5)),
    ("sum", F32, unary(torch.sum)),
    ("sum", F64, unary(torch.sum)),
    ("mean_dim", F32, mean_dim),
    ("sum_dim0", F32, sum_dim0),
    ("max_dim", F32, max_dim),
    ("exp", F32, unary(torch.exp)),
    ("sigmoid", F32, unary(torch.sigmoid)),
    ("tanh", F32, unary(torch.tanh)),
    ("log", F32, unary(torch.log, 0.1, 2.1)),
    ("sin", F32, unary(torch.sin)),
    ("cat", F32, cat),
    ("index_select", F32, index_select),
    ("to_dtype", F32, to_dtype),
]


def dtype_name(dt):
    return str(dt).removeprefix("torch.")


def cases():
    """Every case as (op, size, dtype, build), in the Rust binary's order."""
    out = [(op, n, dt, b) for op, dt, b in BY_SIZE for n in SIZES]
    out += [("mm", n, dt, mm) for dt in (F32, F64) for n in MM_SIDES]
    out += [
        (op, n, F32, b)
        for op, b in (("matmul_batched", matmul_batched), ("matmul_broadcast", matmul_broadcast))
        for n in MATMUL_SIDES
    ]
    out += [("cat_many", n, F32, cat_many) for n in CAT_MANY_COUNTS]
    return out


def measure(fn, args, budget):
    """Median over samples of the mean ns per call in a sample (kernels.rs's rules)."""
    clock = time.perf_counter_ns
    start = clock()
    calls = 0
    while calls == 0 or clock() - start < budget["warmup"] * 1e9:
        fn(*args)
        calls += 1
    per_call = (clock() - start) / 1e9 / calls
    batch = max(1, math.ceil(budget["sample"] / per_call))
    samples = int(budget["total"] / (per_call * batch))
    samples = min(max(samples, MIN_SAMPLES), MAX_SAMPLES)
    rng = range(batch)
    times = []
    for _ in range(samples):
        t = clock()
        for _ in rng:
            fn(*args)
        times.append((clock() - t) / batch)
    times.sort()
    return times[len(times) // 2]


def usage():
    print("usage: kernels_torch.py [--filter SUBSTR]... [--quick]", file=sys.stderr)
    sys.exit(2)


def main(argv):
    filters, budget = [], FULL
    it = iter(argv)
    for a in it:
        if a == "--filter":
            f = next(it, None)
            if f is None:
                usage()
            filters.append(f)
        elif a == "--quick":
            budget = QUICK
        else:
            usage()
    label = lambda c: f"{c[0]} {c[1]} {dtype_name(c[2])}"
    selected = [c for c in cases() if not filters or any(f in label(c) for f in filters)]
    all_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    counts = [1] + ([all_threads] if all_threads > 1 else [])
    print(
        f"# torch {torch.__version__} kernels: {len(selected)} cases, threads {counts}"
        + (", quick" if budget is QUICK else ""),
        flush=True,
    )
    if os.path.exists("/proc/loadavg"):
        # A loaded machine (other processes on the cores) makes the
        # multi-threaded figures of both sides unreliable.
        with open("/proc/loadavg") as f:
            print(f"# load average: {f.read().strip()}", flush=True)
    print(f"# loop overhead ns: {measure(lambda: None, (), budget):.1f}", flush=True)
    for threads in counts:
        torch.set_num_threads(threads)
        for c in selected:
            prefix = f"kernel {label(c)} {threads}"
            fn = args = None  # free the previous case's inputs first
            try:
                fn, args = c[3](c[1], c[2])
                ns = measure(fn, args, budget)
                print(f"{prefix} ns: {ns:.1f}", flush=True)
            except Exception as e:  # report and go on, as the Rust side does
                print(f"{prefix} error: {e}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
