"""The third batch of cases tests/record/grad_calls.py records (see there):
the unary pointwise operators of PyTorch's core set added after the first
two batches (acos ... trunc, sign, and the non-differentiable isnan,
logical_not, bitwise_not).

    cd tests/record && python grad_calls.py ../data/recorded/grad_calls_3.jsonl grad_cases_3 20260301 300
"""
import torch
from grad_calls import T, F, F32, I, B
from grad_cases import C, f32, f64, i64

# Inputs inside each operator's domain (multiples of 1/16, away from its
# edges): `None` is the default (any nonzero value in [-2, 2]).
UNIT = [-0.875, -0.5, -0.0625, 0.3125, 0.625, 0.9375]  # |x| < 1
ABOVE_ONE = [1.0625, 1.5, 2.0, 3.25, 1.25, 4.0]  # acosh
DOMAIN = {
    "acos": ("data", UNIT), "asin": ("data", UNIT), "atanh": ("data", UNIT),
    "acosh": ("data", ABOVE_ONE),
    "log10": ("kind", "pos"), "log2": ("kind", "pos"), "rsqrt": ("kind", "pos"),
    "log1p": ("kind", "pos"),
}
FLOAT_OPS = ["acos", "asin", "atan", "acosh", "asinh", "atanh", "cosh", "sinh", "tan",
             "erf", "expm1", "log10", "log1p", "log2", "reciprocal", "rsqrt"]
STEP_OPS = ["ceil", "floor", "round", "trunc", "sign"]


def arg(op, *shape, dtype=f64, **kw):
    how = DOMAIN.get(op)
    n = 1
    for d in shape:
        n *= d
    if how and how[0] == "data":
        kw["data"] = (how[1] * 4)[:n]
    elif how:
        kw["kind"] = how[1]
    else:
        kw.setdefault("kind", "odd")
    return T(shape, dtype=dtype, **kw)


def CASES():
    out = []
    add = out.append

    for op in FLOAT_OPS:
        add(C(op, "2x3", [arg(op, 2, 3)], gg=True, jvp=True))
        add(C(op, "f32_0d", [arg(op, dtype=f32)], gg=True, jvp=True))
        add(C(op, "f32_3x1x2", [arg(op, 3, 1, 2, dtype=f32)], gg=True))
        add(C(op, "empty_0x2", [arg(op, 0, 2)], jvp=True))
        add(C(op + "_", "clone", [arg(op, 2, 2, clone=True)], gg=op not in ("acosh", "asinh", "atanh")))
        add(C(op + "_", "leaf_inplace_err", [arg(op, 3)]))
        add(C(op, "int_input", [I([1, 2, 3])]))
    # Values outside the domains: NaN and infinite results and gradients.
    add(C("acos", "outside_domain", [F(4, data=[1.5, -2.0, 1.0, -1.0])], jvp=True))
    add(C("atanh", "at_poles", [F(3, data=[1.0, -1.0, 0.5])], jvp=True))
    add(C("log1p", "at_minus_one", [F(3, data=[-1.0, -1.5, 0.0])], jvp=True))
    add(C("rsqrt", "at_zero", [F(3, data=[0.0, -0.0, 4.0])], jvp=True))
    add(C("reciprocal", "at_zero", [F(2, data=[0.0, -2.0])], gg=True, jvp=True))
    add(C("erf", "wide", [F(5, data=[-6.0, -0.5, 0.0, 0.5, 6.0])], gg=True, jvp=True))
    add(C("tan", "f32_near_pole", [F32(3, data=[1.5, -1.5, 0.75])], gg=True, jvp=True))

    for op in STEP_OPS:
        data = [-1.5, -0.5, 0.5, 1.5, 2.5, -2.75] if op == "round" else None
        kw = {"data": data} if data else {"kind": "odd"}
        add(C(op, "2x3", [F(2, 3, **kw)], gg=True, jvp=True))
        add(C(op, "f32_0d", [F32(kind="odd")], jvp=True))
        add(C(op, "nonfinite", [F(3, data=[float("nan"), float("inf"), -0.0])], jvp=True))
        add(C(op + "_", "clone", [F(2, 2, clone=True, kind="odd")]))
        add(C(op, "int_input", [I([-2, 0, 3])]))
    add(C("sign_", "leaf_inplace_err", [F(3)]))

    # Not differentiable: bool or integer results.
    add(C("isnan", "requires_grad", [F(3, data=[float("nan"), 1.0, -0.5])]))
    add(C("isinf", "requires_grad", [F(3, data=[float("inf"), 1.0, -float("inf")])]))
    add(C("logical_not", "requires_grad", [F(3, data=[0.0, 1.0, -0.5])]))
    add(C("bitwise_not", "int_input", [I([1, -2, 0])]))
    add(C("bitwise_not", "float_err", [F(2)]))
    return out
