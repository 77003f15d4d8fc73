"""Records what PyTorch's activation operators (gelu, leaky_relu and their
backward operators) compute, for
tests/tests/activation_values.rs: per operator, options and input dtype, the
inputs, the result's dtype and values, or the error (type and message).
Needs PyTorch (2.15 made the file); the tests only read it.

    cd tests/record && python activation_values.py ../data/recorded/activation_values.jsonl
"""
import json
import math
import sys

import torch

torch.set_num_threads(1)

# Special values, both signs, the tails (where float32's `1 + erf(x/√2)`
# cancels), tiny and large magnitudes, and a spread of ordinary values.
FLOATS = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1.0, -1.0, 0.5, -0.5,
          1e-8, -1e-8, 1e-30, 3.0, -3.0, 5.0, -5.0, 5.5, -5.5, -6.0, -7.5, 8.0, -8.0, -10.0,
          10.0, 20.0, -20.0, -40.0, 1e10, -1e10, 1e300, -1e300, 0.1, 0.7, -0.3, 1.25, -2.25,
          2.0, 4.0, -4.0, 0.875] + [i / 8 - 6 for i in range(97)]
GRADS = [1.0, -0.5, 2.0, 0.25, -3.0]
INTS = [0, 1, -1, 2, -3, 7]
BOOLS = [True, False]
OPTIONS = [{}, {"approximate": "none"}, {"approximate": "tanh"}]


def enc(x):
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


def run(fh, op, kwargs, inputs):
    rec = {"op": op, "kwargs": kwargs,
           "inputs": [{"dtype": str(x.dtype)[6:], "data": [enc(v) for v in x.tolist()]}
                      for x in inputs]}
    try:
        y = getattr(torch.ops.aten, op)(*inputs, **kwargs)
        rec["expect"] = {"dtype": str(y.dtype)[6:], "data": [enc(v) for v in y.tolist()]}
    except Exception as e:  # noqa
        rec["expect"] = {"error": type(e).__name__, "message": str(e)}
    fh.write(json.dumps(rec) + "\n")


def main():
    out = sys.argv[1]
    n = 0
    with open(out, "w") as fh:
        for kwargs in OPTIONS + [{"approximate": "erf"}]:
            for dtype, values in [(torch.float64, FLOATS), (torch.float32, FLOATS),
                                  (torch.int64, INTS), (torch.bool, BOOLS)]:
                x = torch.tensor(values, dtype=dtype)
                run(fh, "gelu", kwargs, [x])
                g = torch.tensor((GRADS * len(values))[:len(values)], dtype=dtype)
                run(fh, "gelu_backward", kwargs, [g, x])
                n += 2
            # Mixed dtypes promote.
            x = torch.tensor(FLOATS, dtype=torch.float32)
            g = torch.tensor((GRADS * len(FLOATS))[:len(FLOATS)], dtype=torch.float64)
            run(fh, "gelu_backward", kwargs, [g, x])
            run(fh, "gelu_backward", kwargs, [g.float(), torch.tensor(INTS * 23)[:len(FLOATS)]])
            n += 2
        for kwargs in [{}, {"negative_slope": 0.2}, {"negative_slope": -1.5}]:
            for dtype, values in [(torch.float64, FLOATS), (torch.float32, FLOATS),
                                  (torch.int64, INTS), (torch.bool, BOOLS)]:
                x = torch.tensor(values, dtype=dtype)
                run(fh, "leaky_relu", kwargs, [x])
                g = torch.tensor((GRADS * len(values))[:len(values)], dtype=dtype)
                slope = kwargs.get("negative_slope", 0.01)
                run(fh, "leaky_relu_backward", {"negative_slope": slope, "self_is_result": False}, [g, x])
                n += 2
        x = torch.tensor(FLOATS, dtype=torch.float32)
        g = torch.tensor((GRADS * len(FLOATS))[:len(FLOATS)], dtype=torch.float64)
        run(fh, "leaky_relu_backward", {"negative_slope": 0.5, "self_is_result": True}, [g, x])
        run(fh, "leaky_relu_backward", {"negative_slope": -0.5, "self_is_result": True}, [g, x])
        n += 2
    print("%d cases" % n)


if __name__ == "__main__":
    main()
