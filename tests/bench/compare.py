#!/usr/bin/env python3
"""Compares the kernel benchmark of opforge with PyTorch's, as a markdown table.

Runs both, back to back (PyTorch first, then opforge), or reads two saved
outputs. Python 3 standard library only; run it from anywhere:

    # run both (the opforge binary through `cargo run --release`):
    python3 tests/bench/compare.py [--python /work/venv-torch/bin/python] \\
        [--filter SUBSTR]... [--quick] [--save DIR]
    # a prebuilt binary instead of cargo:
    python3 tests/bench/compare.py --opforge-bin target/release/kernels
    # compare saved outputs (of `kernels` and of `kernels_torch.py`):
    python3 tests/bench/compare.py --torch-out torch.txt --opforge-out opforge.txt

`--filter` and `--quick` are passed to both benchmarks; `--save DIR` writes
their raw outputs to `DIR/torch.txt` and `DIR/opforge.txt` (with `--rounds`,
one pair per round, `torch-R.txt` and `opforge-R.txt`, and the combined
figures in the two plain names). `--rounds K` runs the pair K times, PyTorch
then opforge, and keeps each case's fastest median of each side: on a noisy
machine a case slowed by another process in one round is measured again in
the next, on both sides alike. `--torch-thp` runs PyTorch with
`THP_MEM_ALLOC_ENABLE=1`, its opt-in for what opforge does by default: advise
allocations of 2 MiB and more as transparent huge pages (see
`opforge::tensor::set_huge_pages`); without it the two sides fill fresh
memory of large results differently (10^7-element rows). The Python given to
`--python` needs PyTorch (default: $TORCH_PYTHON, else /work/venv-torch/bin/python).
Cargo honours $CARGO_TARGET_DIR as usual.

Both print lines `kernel <op> <size> <dtype> <threads> ns: <median>` (other
lines, `#` comments, are echoed above the table). The table has one row per
case of either side: PyTorch ns, opforge ns, ratio opforge / PyTorch, and a
verdict against the targets of issue 12:

- size >= 10^5 elements, and mm / matmul at n >= 256: ratio <= 1.2;
- size 10^3: ratio <= 1.5;
- size 1 and mm / matmul at n = 64: informational (`info`): at size 1 the
  PyTorch figure is mostly its Python call path (see kernels_torch.py).

The targets are for one thread; rows at more threads get `ok` or `over` (not
a target) and are counted apart.

A verdict is `ok`, `SLOW` (over the target), `info`, `n/a` when a side has no
figure (missing or `error`), or `noisy` when PyTorch's multi-threaded figure
is over 1.5x its own 1-thread figure for the same case: the baseline then
measured the machine (on a loaded machine, with another process on the cores,
OpenMP's workers wait for a scheduler tick, 4 ms multiples), not the kernel;
rerun on a quiet machine (each output's `# load average` line tells).
"""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^kernel (\S+) (\d+) (\S+) (\d+) (ns: (\S+)|error: (.*))$")
MATMUL_OPS = ("mm", "matmul_batched", "matmul_broadcast")
# PyTorch at N threads slower than this times its 1-thread figure: a loaded machine.
NOISY = 1.5


def parse(text):
    """(results by (op, size, dtype, threads), comment lines, keys in order)."""
    results, comments, order = {}, [], []
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if not m:
            if line.strip():
                comments.append(line.strip())
            continue
        key = (m.group(1), int(m.group(2)), m.group(3), int(m.group(4)))
        if key not in results:
            order.append(key)
        results[key] = float(m.group(6)) if m.group(6) is not None else None
    return results, comments, order


def target(op, size):
    """The ratio target of a case, or None if informational."""
    if op in MATMUL_OPS:
        return 1.2 if size >= 256 else None
    if size >= 100_000:
        return 1.2
    if size >= 1_000:
        return 1.5
    return None


def fmt_ns(ns):
    if ns is None:
        return "—"
    return f"{ns:,.0f}" if ns >= 100 else f"{ns:.1f}"


def fmt_ratio(r):
    return f"{r:.2f}" if r < 100 else f"{r:,.0f}"


def table(torch_res, opforge_res, order):
    rows = [
        "| op | size | dtype | threads | PyTorch ns | opforge ns | ratio | verdict |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    tally = {}
    for key in order:
        op, size, dtype, threads = key
        t, o = torch_res.get(key), opforge_res.get(key)
        goal = target(op, size)
        t1 = torch_res.get((op, size, dtype, 1))
        if t is None or o is None or t <= 0:
            ratio, verdict = "—", "n/a"
        else:
            r = o / t
            ratio = fmt_ratio(r)
            if threads > 1 and t1 is not None and t > NOISY * t1:
                verdict = "noisy"
            elif goal is None:
                verdict = "info"
            elif r <= goal:
                verdict = "ok"
            elif threads > 1:
                verdict = f"over (≤{goal}×; {threads} threads, not a target)"
            else:
                verdict = f"SLOW (≤{goal}×)"
        group = "1 thread" if threads == 1 else "more threads"
        tally.setdefault(group, {})
        word = verdict.split()[0]
        tally[group][word] = tally[group].get(word, 0) + 1
        rows.append(
            f"| {op} | {size} | {dtype} | {threads} | {fmt_ns(t)} | {fmt_ns(o)} | {ratio} | {verdict} |"
        )
    summary = "; ".join(
        f"{group}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        for group, counts in sorted(tally.items())
    )
    return "\n".join(rows) + f"\n\n{len(order)} cases; {summary}"


def fastest(texts):
    """One output's text from several rounds: each case's smallest median
    (an `error` in any round stays an error), comments of the first round."""
    best, first = {}, None
    for text in texts:
        res, comments, order = parse(text)
        if first is None:
            first = (comments, order)
        for k, v in res.items():
            if k not in best:
                best[k] = v
            elif best[k] is not None:
                best[k] = None if v is None else min(best[k], v)
    lines = [f"# {c.lstrip('# ')}" for c in first[0]]
    lines.append(f"# fastest of {len(texts)} rounds")
    for k in first[1] + [k for k in best if k not in first[1]]:
        op, size, dtype, threads = k
        v = best[k]
        tail = f"ns: {v}" if v is not None else "error: in some round"
        lines.append(f"kernel {op} {size} {dtype} {threads} {tail}")
    return "\n".join(lines) + "\n"


def run(cmd, cwd=None, env=None):
    shown = " ".join(f"{k}={v}" for k, v in (env or {}).items())
    print(f"# running: {shown + ' ' if shown else ''}{' '.join(cmd)}", file=sys.stderr, flush=True)
    full_env = {**os.environ, **env} if env else None
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, text=True, env=full_env)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed with status {p.returncode}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--torch-out", help="saved output of kernels_torch.py")
    ap.add_argument("--opforge-out", help="saved output of the kernels binary")
    ap.add_argument(
        "--python",
        default=os.environ.get("TORCH_PYTHON", "/work/venv-torch/bin/python"),
        help="a Python with PyTorch",
    )
    ap.add_argument("--opforge-bin", help="a built kernels binary (default: cargo run --release)")
    ap.add_argument("--filter", action="append", default=[], help="case label substring")
    ap.add_argument("--quick", action="store_true", help="smaller timing budget")
    ap.add_argument("--save", help="directory for the raw outputs")
    ap.add_argument("--rounds", type=int, default=1, help="run both K times, keep the fastest")
    ap.add_argument(
        "--torch-thp",
        action="store_true",
        help="run PyTorch with THP_MEM_ALLOC_ENABLE=1 (huge pages, as opforge by default)",
    )
    a = ap.parse_args()
    torch_env = {"THP_MEM_ALLOC_ENABLE": "1"} if a.torch_thp else None

    bench_args = [x for f in a.filter for x in ("--filter", f)] + (["--quick"] if a.quick else [])
    torch_texts, opforge_texts = [], []
    for _ in range(max(a.rounds, 1)):
        if a.torch_out:
            torch_texts.append(Path(a.torch_out).read_text())
        else:
            script = str(REPO / "tests" / "bench" / "kernels_torch.py")
            text = run([a.python, script, *bench_args], env=torch_env)
            if torch_env:
                text = "# PyTorch with THP_MEM_ALLOC_ENABLE=1\n" + text
            torch_texts.append(text)
        if a.opforge_out:
            opforge_texts.append(Path(a.opforge_out).read_text())
        elif a.opforge_bin:
            opforge_texts.append(run([a.opforge_bin, *bench_args]))
        else:
            cargo = ["cargo", "run", "--quiet", "--release", "-p", "opforge-tests", "--bin", "kernels"]
            opforge_texts.append(run([*cargo, "--", *bench_args], cwd=REPO))
        if a.torch_out and a.opforge_out:
            break
    if len(torch_texts) == 1:
        torch_text, opforge_text = torch_texts[0], opforge_texts[0]
    else:
        torch_text, opforge_text = fastest(torch_texts), fastest(opforge_texts)
    if a.save:
        d = Path(a.save)
        d.mkdir(parents=True, exist_ok=True)
        if len(torch_texts) > 1:
            for i, (t, o) in enumerate(zip(torch_texts, opforge_texts), 1):
                (d / f"torch-{i}.txt").write_text(t)
                (d / f"opforge-{i}.txt").write_text(o)
        (d / "torch.txt").write_text(torch_text)
        (d / "opforge.txt").write_text(opforge_text)

    torch_res, torch_comments, torch_order = parse(torch_text)
    opforge_res, opforge_comments, opforge_order = parse(opforge_text)
    order = opforge_order + [k for k in torch_order if k not in opforge_res]
    print("```text")
    for c in torch_comments + opforge_comments:
        print(c)
    print("```\n")
    print(table(torch_res, opforge_res, order))


if __name__ == "__main__":
    main()
