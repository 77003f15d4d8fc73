"""Records what PyTorch's binary pointwise operators of the core set compute,
for tests/tests/binary_values.rs: per overload (`torch.ops.aten.<op>.<overload>`)
and operand dtypes, the operands, the result's dtype and values, or the error
(type and message). Functional, `out=` and in-place overloads; tensor and
number operands. Needs PyTorch (2.15 made the file); the tests only read it.

    cd tests/record && python binary_values.py ../data/recorded/binary_values.jsonl
"""
import json
import math
import sys

import torch

torch.set_num_threads(1)

# Signs, zeros (both), NaN and the infinities, integral and fractional values,
# large and small magnitudes; the second operand is the first reversed and
# shifted, so every special value meets several others.
FLOATS = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1.0, -1.0, 0.5, -0.5, 1.5,
          2.5, -2.5, 3.0, -3.0, 7.0, -7.0, 10.0, 1e-8, 1e10, -1e10, 1e300, 0.1, 0.7, -0.3,
          5.5, -5.5, 2.0, 4.0]
INTS = [0, 1, -1, 2, -2, 3, -3, 5, -5, 7, -7, 100, -128, 2**31 - 1, -2**31, 13]
NONZERO_INTS = [v for v in INTS if v != 0]
BOOLS = [True, False, True, True, False, False]

VALUES = {torch.float64: FLOATS, torch.float32: FLOATS, torch.int64: INTS, torch.int32: INTS,
          torch.bool: BOOLS}
NAMES = {torch.float64: "float64", torch.float32: "float32", torch.int64: "int64",
         torch.int32: "int32", torch.bool: "bool"}

PAIRS = [(torch.float64, torch.float64), (torch.float32, torch.float32),
         (torch.int64, torch.int64), (torch.int32, torch.int32), (torch.bool, torch.bool),
         (torch.int32, torch.int64), (torch.bool, torch.int32), (torch.int64, torch.float32),
         (torch.float32, torch.float64), (torch.bool, torch.float64)]

SCALARS = [3, -2, 0, 2.5, -0.75, True, float("nan")]


def enc(x):
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        # As text: Python's repr is the shortest exact form, read back exactly.
        return repr(x)
    return x


def tensor(dtype, values):
    return torch.tensor(values, dtype=dtype)


def pair(da, db, nonzero=False):
    a = VALUES[da]
    b = VALUES[db]
    if nonzero and not db.is_floating_point and db != torch.bool:
        b = NONZERO_INTS
    n = min(len(a), len(b))
    b = list(reversed(b))
    b = b[1:] + b[:1]
    return tensor(da, a[:n]), tensor(db, b[:n])


def arg(v):
    if v is None:
        return {"none": None}
    if isinstance(v, torch.Tensor):
        return {"tensor": NAMES[v.dtype], "data": [enc(x) for x in v.tolist()]}
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    if isinstance(v, float):
        return {"float": enc(v)}
    if isinstance(v, str):
        return {"str": v}
    raise TypeError(v)


def record(fh, op, args, kwargs=None):
    kwargs = kwargs or {}
    name, overload = (op.split(".") + ["default"])[:2]
    fn = getattr(getattr(torch.ops.aten, name), overload)
    # In-place and out= calls write their tensors: record the operands first.
    rec = {"op": op, "args": [arg(a) for a in args],
           "kwargs": {k: arg(v) for k, v in kwargs.items()}}
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    kwargs = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
    try:
        y = fn(*args, **kwargs)
        rec["expect"] = {"dtype": NAMES[y.dtype], "shape": list(y.shape),
                         "data": [enc(v) for v in y.reshape(-1).tolist()]}
    except Exception as e:  # noqa
        rec["expect"] = {"error": type(e).__name__, "message": str(e)}
    fh.write(json.dumps(rec) + "\n")
    return 1


def main():
    out = sys.argv[1]
    n = 0
    with open(out, "w") as fh:
        for op in ["bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
                   "logical_xor", "fmod", "remainder", "atan2"]:
            tensor_overload = op + ".Tensor" if op.startswith(("bitwise", "fmod", "remainder")) else op
            for da, db in PAIRS:
                n += record(fh, tensor_overload, pair(da, db, nonzero=True))
            # Integer division by zero (fmod, remainder); broadcasting.
            n += record(fh, tensor_overload, [tensor(torch.int64, [5, -5, 7]), tensor(torch.int64, [2, 0, -3])])
            n += record(fh, tensor_overload, [tensor(torch.int32, [[1], [-6], [9]]), tensor(torch.int32, [4, -4])])
            n += record(fh, tensor_overload, [tensor(torch.float32, [[1.5], [-6.0]]), tensor(torch.float64, [4.0, -0.0, 0.0])])
            if op.startswith(("bitwise", "fmod", "remainder")):
                for dtype in [torch.int64, torch.int32, torch.bool, torch.float32, torch.float64]:
                    for s in SCALARS:
                        n += record(fh, op + ".Scalar", [tensor(dtype, VALUES[dtype]), s])
                        n += record(fh, op + "_.Scalar", [tensor(dtype, VALUES[dtype]), s])
                n += record(fh, op + ".Scalar_out", [tensor(torch.int64, INTS), 3],
                            {"out": torch.empty(0, dtype=torch.float64)})
                n += record(fh, op + ".Scalar_out", [tensor(torch.int64, INTS), 3],
                            {"out": torch.empty(0, dtype=torch.int32)})
                n += record(fh, op + ".Scalar_out", [tensor(torch.float32, FLOATS), 3],
                            {"out": torch.empty(0, dtype=torch.int64)})
            inplace = op + "_.Tensor" if op.startswith(("bitwise", "fmod", "remainder")) else op + "_"
            out = op + ".Tensor_out" if op.startswith(("bitwise", "fmod", "remainder")) else op + ".out"
            for da, db in [(torch.int64, torch.int32), (torch.int32, torch.int64),
                           (torch.bool, torch.int64), (torch.float32, torch.int64),
                           (torch.float64, torch.float32), (torch.int64, torch.float64)]:
                n += record(fh, inplace, pair(da, db, nonzero=True))
            for do in [torch.float64, torch.int32, torch.bool, torch.int64]:
                n += record(fh, out, pair(torch.int64, torch.int32, nonzero=True),
                            {"out": torch.empty(0, dtype=do)})
                n += record(fh, out, pair(torch.float32, torch.float64),
                            {"out": torch.empty(0, dtype=do)})
        for base in [2, -3, 0, 1, 2.5, -1.5, 0.0, 1.0, True, False, float("nan")]:
            for dtype in [torch.int64, torch.int32, torch.bool, torch.float32, torch.float64]:
                values = VALUES[dtype] if dtype != torch.int64 else [0, 1, -1, 2, -2, 3, 10, 40, 62, -5]
                if dtype == torch.int32:
                    values = [0, 1, -1, 2, -2, 3, 10, 30, -5]
                n += record(fh, "pow.Scalar", [base, tensor(dtype, values)])
        for do in [torch.float64, torch.int32, torch.int64]:
            n += record(fh, "pow.Scalar_out", [2, tensor(torch.int64, [0, 1, 3, -1])],
                        {"out": torch.empty(0, dtype=do)})
            n += record(fh, "pow.Scalar_out", [2.5, tensor(torch.int64, [0, 1, 3, -1])],
                        {"out": torch.empty(0, dtype=do)})
        for mode in [None, "trunc", "floor", "round"]:
            for dtype in [torch.int64, torch.int32, torch.bool, torch.float32, torch.float64]:
                for s in SCALARS:
                    n += record(fh, "div.Scalar_mode", [tensor(dtype, VALUES[dtype]), s],
                                {"rounding_mode": mode})
                    n += record(fh, "div_.Scalar_mode", [tensor(dtype, VALUES[dtype]), s],
                                {"rounding_mode": mode})
    print("%d cases" % n)


if __name__ == "__main__":
    main()
