"""Records what PyTorch's unary pointwise operators compute, for
tests/tests/unary_values.rs: per operator and input dtype, the input, the
result's dtype and values, or the error (type and message). Needs PyTorch
(2.15 made the file); the tests only read it.

    cd tests/record && python unary_values.py ../data/recorded/unary_values.jsonl
"""
import json
import math
import sys

import torch

torch.set_num_threads(1)

OPS = ["acos", "asin", "atan", "acosh", "asinh", "atanh", "cosh", "sinh", "tan", "erf",
       "expm1", "log10", "log1p", "log2", "reciprocal", "rsqrt", "ceil", "floor", "round",
       "trunc", "sign", "bitwise_not", "logical_not", "isnan", "isinf"]

# Special values, the domains' edges, both signs, large and tiny magnitudes,
# half-integers (round), and a spread of ordinary values.
FLOATS = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1.0, -1.0, 0.5, -0.5, 1.5,
          2.5, -2.5, 0.999, -0.999, 1e-8, -1e-8, 1e-30, 3.0, -3.0, 10.0, 20.0, 89.0, 100.0,
          710.0, -745.0, 1e10, -1e10, 1e300, 0.1, 0.7, -0.3, 1.25, 2.0, 4.0, 7.5, 0.875]
INTS = [0, 1, -1, 2, -3, 7, 100, -128, 2**31 - 1, -2**31]
BOOLS = [True, False]


def enc(x):
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


def main():
    out = sys.argv[1]
    n = 0
    with open(out, "w") as fh:
        for op in OPS:
            for dtype, values in [(torch.float64, FLOATS), (torch.float32, FLOATS),
                                  (torch.int64, INTS), (torch.int32, INTS), (torch.bool, BOOLS)]:
                x = torch.tensor(values, dtype=dtype)
                rec = {"op": op, "dtype": str(dtype)[6:], "input": [enc(v) for v in x.tolist()]}
                try:
                    y = getattr(torch, op)(x)
                    rec["expect"] = {"dtype": str(y.dtype)[6:], "data": [enc(v) for v in y.tolist()]}
                except Exception as e:  # noqa
                    rec["expect"] = {"error": type(e).__name__, "message": str(e)}
                fh.write(json.dumps(rec) + "\n")
                n += 1
    print("%d cases" % n)


if __name__ == "__main__":
    main()
