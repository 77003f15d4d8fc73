"""Records gradient cases from PyTorch in `grad_calls.jsonl`'s format (see
tests/data/conformance/README.md, "Gradients"): what made
tests/data/recorded/grad_calls.jsonl. Needs PyTorch (2.15 made the file);
the tests only read the file.

    cd tests/record && python grad_calls.py ../data/recorded/grad_calls.jsonl
    python grad_calls.py ../data/recorded/grad_calls_2.jsonl grad_cases_2 20250917 200
    python grad_calls.py ../data/recorded/grad_calls_3.jsonl grad_cases_3 20260301 300

(arguments: the output, the module of cases, the seed of the values, the
first case number).
"""
import json
import math
import sys
import warnings

import torch

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

GEN = torch.Generator().manual_seed(20240615)


def rint(lo, hi):
    return int(torch.randint(lo, hi + 1, (1,), generator=GEN).item())


def rvals(n, kind="any"):
    """n multiples of 1/16 in [-2, 2] of the given kind."""
    out = []
    for _ in range(n):
        if kind == "any":  # any nonzero
            v = 0
            while v == 0:
                v = rint(-32, 32)
        elif kind == "all":  # zero allowed
            v = rint(-32, 32)
        elif kind == "odd":  # odd multiples of 1/16: never 0, never a "nice" bound
            v = 2 * rint(-16, 15) + 1
        elif kind == "even":
            v = 2 * rint(-16, 16)
            while v == 0:
                v = 2 * rint(-16, 16)
        elif kind == "pos":  # [0.25, 2]
            v = rint(4, 32)
        elif kind == "big":  # |x| in [0.5, 2] (denominators)
            v = rint(8, 32) * (1 if rint(0, 1) else -1)
        elif kind == "distinct":
            raise ValueError
        else:
            raise ValueError(kind)
        out.append(v / 16.0)
    return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class T:
    """An input tensor of a case."""

    def __init__(self, shape, dtype=torch.float64, rg=True, clone=False, data=None, kind="any"):
        self.shape = list(shape)
        self.dtype = dtype
        self.rg = rg
        self.clone = clone
        n = numel(shape)
        if data is None:
            if kind == "distinct":
                pool = list(range(-32, 33))
                perm = torch.randperm(len(pool), generator=GEN).tolist()
                data = [pool[i] / 16.0 for i in perm[:n]]
            else:
                data = rvals(n, kind)
        assert len(data) == n, (shape, data)
        self.data = data

    def build(self):
        return torch.tensor(self.data, dtype=self.dtype).reshape(self.shape)


def F(*shape, **kw):
    return T(shape, **kw)


def F32(*shape, **kw):
    return T(shape, dtype=torch.float32, **kw)


def I(data, shape=None):
    return T(shape if shape is not None else [len(data)], dtype=torch.int64, rg=False, data=list(data))


def B(data, shape):
    return T(shape, dtype=torch.bool, rg=False, data=list(data))


# ---------------------------------------------------------------- encoding

def enc_float(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def enc_data(t):
    t = t.detach()
    if t._is_zerotensor():
        t = torch.zeros(t.shape, dtype=t.dtype)
    flat = t.reshape(-1).tolist()
    if t.dtype == torch.bool:
        return [bool(x) for x in flat]
    if t.is_floating_point():
        return [enc_float(float(x)) for x in flat]
    return [int(x) for x in flat]


def dtype_name(d):
    return str(d).replace("torch.", "")


def enc_out(t):
    if t is None:
        return None
    return {"id": None, "dtype": dtype_name(t.dtype), "shape": list(t.shape), "data": enc_data(t)}


def dec(j):
    if j is None:
        return None
    dt = getattr(torch, j["dtype"])
    data = [float(x) if isinstance(x, str) else x for x in j["data"]]
    return torch.tensor(data, dtype=dt).reshape(j["shape"])


def rand_like(t):
    vals = rvals(t.numel(), "all")
    return torch.tensor(vals, dtype=t.dtype).reshape(t.shape)


class Case:
    def __init__(self, overload, label, args, kwargs=None, gg=False, jvp=False, fixed=None):
        self.fixed = fixed  # replay: {"grad_outputs": [...], "weights": [...], "tangents": [...]}
        self.overload = overload
        self.label = label
        self.args = args
        self.kwargs = kwargs or {}
        self.gg = gg
        self.jvp = jvp


def walk(v, fn):
    if isinstance(v, T):
        fn(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            walk(x, fn)


def get_op(overload):
    name, _, ov = overload.partition(".")
    return getattr(getattr(torch.ops.aten, name), ov or "default")


def record(case, number):
    # ids in order of first appearance
    ids = {}
    order = []

    def assign(t):
        if id(t) not in ids:
            ids[id(t)] = "t%d" % len(ids)
            order.append(t)

    for a in case.args:
        walk(a, assign)
    for a in case.kwargs.values():
        walk(a, assign)

    def enc(v):
        if v is None:
            return None
        if isinstance(v, T):
            d = {"id": ids[id(v)], "dtype": dtype_name(v.dtype), "shape": v.shape,
                 "data": enc_data(v.build())}
            if v.rg:
                d["requires_grad"] = True
                if v.clone:
                    d["clone_of_leaf"] = True
            return {"tensor": d}
        if isinstance(v, bool):
            return {"bool": v}
        if isinstance(v, int):
            return {"int": v}
        if isinstance(v, float):
            return {"float": enc_float(v)}
        if isinstance(v, str):
            return {"str": v}
        if isinstance(v, torch.dtype):
            return {"dtype": dtype_name(v)}
        if isinstance(v, (list, tuple)):
            return {"list": [enc(x) for x in v]}
        raise TypeError(v)

    rec = {
        "id": "grad/%s/%04d/%s" % (case.overload, number, case.label),
        "overload": case.overload,
        "args": [enc(a) for a in case.args],
        "kwargs": {k: enc(v) for k, v in case.kwargs.items()},
    }
    op = get_op(case.overload)
    leaf_ts = [t for t in order if t.rg]

    def materialise(subst):
        """subst: T -> tensor to pass."""
        def m(v):
            if isinstance(v, T):
                return subst[id(v)]
            if isinstance(v, list):
                return [m(x) for x in v]
            if isinstance(v, tuple):
                return tuple(m(x) for x in v)
            return v
        return [m(a) for a in case.args], {k: m(v) for k, v in case.kwargs.items()}

    base = {id(t): t.build() for t in order}
    leaves = {}
    subst = {}
    for t in order:
        if t.rg:
            leaf = base[id(t)].clone().requires_grad_(True)
            leaves[id(t)] = leaf
            subst[id(t)] = leaf.clone() if t.clone else leaf
        else:
            subst[id(t)] = base[id(t)]
    leaf_list = [leaves[id(t)] for t in leaf_ts]

    def flat(out):
        if isinstance(out, torch.Tensor):
            return [out]
        if isinstance(out, (list, tuple)):
            r = []
            for o in out:
                r += flat(o)
            return r
        return []

    gos = None
    try:
        args, kwargs = materialise(subst)
        out = op(*args, **kwargs)
        outs = flat(out)
        diff = [o for o in outs if o.is_floating_point() and o.requires_grad]
        if not diff:
            torch.autograd.grad(outs, leaf_list, allow_unused=True)
            raise AssertionError("autograd.grad did not raise")
        gos = [rand_like(o) for o in diff]
        if case.fixed:
            gos = [dec(x) for x in case.fixed["grad_outputs"]]
        grads = torch.autograd.grad(diff, leaf_list, gos, allow_unused=True, create_graph=case.gg)
    except AssertionError:
        raise
    except Exception as e:  # noqa
        if gos is not None:  # raised by the backward: keep the seeds it ran with
            rec["grad_outputs"] = [enc_out(g) for g in gos]
        rec["expect"] = {"error": type(e).__name__, "message": str(e)}
        return rec

    rec["grad_outputs"] = [enc_out(g) for g in gos]
    expect = {"grads": {ids[id(t)]: enc_out(g) for t, g in zip(leaf_ts, grads)}}
    if case.gg:
        weights = [None if g is None else rand_like(g) for g in grads]
        if case.fixed:
            weights = [dec(x) for x in case.fixed["weights"]]
        try:
            terms = [(g * w).sum() for g, w in zip(grads, weights)
                     if g is not None and g.requires_grad]
            if terms:
                total = terms[0]
                for x in terms[1:]:
                    total = total + x
                ggs = torch.autograd.grad(total, leaf_list, allow_unused=True)
            else:
                ggs = [None] * len(leaf_list)
            rec["grad_grad_weights"] = [enc_out(w) for w in weights]
            expect["grad_grads"] = {ids[id(t)]: enc_out(g) for t, g in zip(leaf_ts, ggs)}
        except Exception as e:  # noqa
            print("  (no grad_grads for %s: %s)" % (rec["id"], str(e)[:80]), file=sys.stderr)
    if case.jvp:
        tans = [rand_like(leaves[id(t)]) for t in leaf_ts]
        if case.fixed:
            tans = [dec(x) for x in case.fixed["tangents"]]

        def f(*prims):
            s = dict(subst)
            for t, p in zip(leaf_ts, prims):
                s[id(t)] = p.clone() if t.clone else p
            a, k = materialise(s)
            o = flat(op(*a, **k))
            return tuple(x for x in o if x.is_floating_point())

        try:
            prim = tuple(leaves[id(t)].detach() for t in leaf_ts)
            _, jv = torch.func.jvp(f, prim, tuple(tans))
            rec["tangents"] = [enc_out(x) for x in tans]
            expect["jvp"] = [enc_out(x) for x in jv]
        except Exception as e:  # noqa
            print("  (no jvp for %s: %s)" % (rec["id"], str(e)[:80]), file=sys.stderr)
    rec["expect"] = expect
    return rec


def main():
    import importlib
    outp = sys.argv[1] if len(sys.argv) > 1 else "extra.jsonl"
    module = sys.argv[2] if len(sys.argv) > 2 else "grad_cases"
    GEN.manual_seed(int(sys.argv[3]) if len(sys.argv) > 3 else 20240615)
    first = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    CASES = importlib.import_module(module).CASES
    counters = {}
    n_err = 0
    with open(outp, "w") as fh:
        for c in CASES():
            counters[c.overload] = counters.get(c.overload, 0) + 1
            r = record(c, first + counters[c.overload])
            if "error" in r["expect"]:
                n_err += 1
            fh.write(json.dumps(r) + "\n")
    print("%d cases, %d overloads, %d errors" % (sum(counters.values()), len(counters), n_err))


if __name__ == "__main__":
    import grad_calls  # the module grad_cases.py imports (not __main__)
    grad_calls.main()
