"""Cases of the Core ATen binary pointwise operators for
tests/record/grad_calls.py (see there): atan2, fmod and remainder (.Tensor and
.Scalar), pow.Scalar and div.Scalar_mode with their in-place and out= forms,
at float64 and float32, broadcast, 0-dim and empty; and the
non-differentiable bitwise and logical operators.

    cd tests/record && python grad_calls.py ../data/recorded/grad_calls_binary.jsonl grad_cases_binary 20261208 900
"""
import torch
from grad_calls import F, F32, I, B
from grad_cases import C, f32, f64, i64


def CASES():
    out = []
    add = out.append

    # ------------------------------------------------------------ atan2
    add(C("atan2", "2x3", [F(2, 3), F(2, 3)], gg=True, jvp=True))
    add(C("atan2", "bcast", [F(2, 3), F(3)], gg=True, jvp=True))
    add(C("atan2", "f32_0d", [F32(), F32(2)], gg=True, jvp=True))
    add(C("atan2", "mixed_f32_f64", [F32(3), F(3)], jvp=True))
    add(C("atan2", "axes", [F(4, data=[0.0, 0.0, 1.0, -1.0]), F(4, data=[1.0, -1.0, 0.0, 0.0])], jvp=True))
    add(C("atan2", "origin", [F(2, data=[0.0, -0.0]), F(2, data=[0.0, 0.0])]))
    add(C("atan2", "empty_0x2", [F(0, 2), F(0, 2)], jvp=True))
    add(C("atan2", "int_input", [I([1, -2, 3]), I([2, 2, -1])]))
    add(C("atan2", "self_only", [F(3), F(3, rg=False)], gg=True, jvp=True))
    add(C("atan2_", "clone", [F(2, 2, clone=True), F(2, 2)], gg=True, jvp=True))
    add(C("atan2_", "leaf_inplace_err", [F(3), F(3)]))
    add(C("atan2.out", "out_err", [F(3), F(3)], {"out": F(3, rg=False)}))

    # ------------------------------------------------------------ fmod, remainder
    for op in ["fmod", "remainder"]:
        add(C(op + ".Tensor", "2x3", [F(2, 3), F(2, 3, kind="big")], gg=True, jvp=True))
        add(C(op + ".Tensor", "bcast", [F(2, 3), F(3, kind="big")], gg=True, jvp=True))
        add(C(op + ".Tensor", "exact_multiples",
              [F(4, data=[1.5, -1.5, 2.0, -0.75]), F(4, data=[0.75, 0.75, -0.5, 0.25])], jvp=True))
        add(C(op + ".Tensor", "f32", [F32(3), F32(3, kind="big")], jvp=True))
        add(C(op + ".Tensor", "zero_divisor", [F(3), F(3, data=[0.0, 1.0, -0.0])], jvp=True))
        add(C(op + ".Tensor", "empty", [F(0, 3), F(3, kind="big")], jvp=True))
        add(C(op + ".Tensor", "int_input", [I([7, -7, 5]), I([3, 3, -2])]))
        add(C(op + ".Tensor", "int_zero_err", [I([7, -7]), I([0, 3])]))
        add(C(op + "_.Tensor", "clone", [F(2, 2, clone=True), F(2, 2, kind="big")], gg=True, jvp=True))
        add(C(op + "_.Tensor", "leaf_inplace_err", [F(3), F(3, kind="big")]))
        add(C(op + ".Tensor_out", "out_err", [F(3), F(3, kind="big")], {"out": F(3, rg=False)}))
        add(C(op + ".Scalar", "2x3", [F(2, 3), 0.75], gg=True, jvp=True))
        add(C(op + ".Scalar", "neg_int", [F(3), -1], gg=True, jvp=True))
        add(C(op + ".Scalar", "f32_0d", [F32(), 1.5], jvp=True))
        add(C(op + ".Scalar", "zero", [F(3), 0.0], jvp=True))
        add(C(op + ".Scalar", "int_input", [I([7, -7, 5]), 3]))
        add(C(op + ".Scalar", "int_zero_err", [I([7, -7]), 0]))
        add(C(op + ".Scalar", "bool_err", [B([True, False], [2]), True]))
        add(C(op + "_.Scalar", "clone", [F(2, 2, clone=True), 0.5], gg=True, jvp=True))

    # ------------------------------------------------------------ pow.Scalar
    add(C("pow.Scalar", "2x3", [2.5, F(2, 3)], gg=True, jvp=True))
    add(C("pow.Scalar", "int_base", [3, F(3)], gg=True, jvp=True))
    add(C("pow.Scalar", "f32_0d", [0.5, F32()], gg=True, jvp=True))
    add(C("pow.Scalar", "base_zero", [0.0, F(4, data=[-1.0, 0.0, 0.5, 2.0])], jvp=True))
    add(C("pow.Scalar", "base_one", [1, F(3)], gg=True, jvp=True))
    add(C("pow.Scalar", "neg_base", [-2.0, F(3, data=[2.0, 0.5, -1.0])], jvp=True))
    add(C("pow.Scalar", "int_exponent", [2, I([0, 1, 3])]))
    add(C("pow.Scalar", "empty", [2.0, F(0, 2)], jvp=True))
    add(C("pow.Scalar_out", "out_err", [2.0, F(3)], {"out": F(3, rg=False)}))

    # ------------------------------------------------------------ div.Scalar_mode
    for mode in [None, "trunc", "floor"]:
        label = mode or "none"
        add(C("div.Scalar_mode", label, [F(2, 3), 0.75], {"rounding_mode": mode}, gg=True, jvp=True))
        add(C("div.Scalar_mode", label + "_int_other", [F32(3), -2], {"rounding_mode": mode}, jvp=True))
        add(C("div_.Scalar_mode", label + "_clone", [F(2, 2, clone=True), 1.5],
              {"rounding_mode": mode}, gg=True, jvp=True))
    add(C("div.Scalar_mode", "int_floor", [I([7, -7, 5]), 2], {"rounding_mode": "floor"}))
    add(C("div.Scalar_mode", "bad_mode_err", [F(3), 2.0], {"rounding_mode": "round"}))
    add(C("div.Scalar_mode", "int_zero_err", [I([7, -7]), 0], {"rounding_mode": "trunc"}))

    # ------------------------------------------------------------ not differentiable
    for op in ["logical_and", "logical_or", "logical_xor"]:
        add(C(op, "requires_grad", [F(3, data=[0.0, 1.0, -0.5]), F(3, data=[0.0, 0.0, 2.0])]))
        add(C(op + "_", "clone", [F(3, clone=True, data=[0.0, 1.0, -0.5]), F(3, data=[0.0, 0.0, 2.0])]))
    for op in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
        add(C(op + ".Tensor", "int_input", [I([12, -3, 0]), I([10, 5, -1])]))
        add(C(op + ".Scalar", "int_input", [I([12, -3, 0]), 6]))
        add(C(op + ".Tensor", "float_err", [F(2), F(2)]))
        add(C(op + ".Scalar", "bool_input", [B([True, False], [2]), True]))
    return out
