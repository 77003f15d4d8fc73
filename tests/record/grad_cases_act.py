"""The cases tests/record/grad_calls.py records (see there) for the
activation operators of PyTorch's core set: gelu (approximate 'none' and
'tanh', its in-place form) and gelu_backward, leaky_relu (its in-place
form) and leaky_relu_backward (gradients of gradients, forward mode).

    cd tests/record && python grad_calls.py ../data/recorded/grad_calls_act.jsonl grad_cases_act 20260401 900
"""
import torch
from grad_calls import T, F, F32, I
from grad_cases import C, f32, f64

APPROX = ["none", "tanh"]


def CASES():
    out = []
    add = out.append

    for ap in APPROX:
        kw = {"approximate": ap}
        add(C("gelu", "2x3_" + ap, [F(2, 3, kind="odd")], kw, gg=True, jvp=True))
        add(C("gelu", "f32_0d_" + ap, [F32(kind="odd")], kw, gg=True, jvp=True))
        add(C("gelu", "f32_3x1x2_" + ap, [F32(3, 1, 2, kind="odd")], kw, gg=True))
        add(C("gelu", "empty_0x2_" + ap, [F(0, 2)], kw, jvp=True))
        add(C("gelu", "wide_" + ap, [F(6, data=[-8.0, -3.0, -0.5, 0.0, 0.75, 6.0])], kw, gg=True, jvp=True))
        add(C("gelu_", "clone_" + ap, [F(2, 2, clone=True, kind="odd")], kw, gg=True))
        add(C("gelu_", "leaf_inplace_err_" + ap, [F(3)], kw))
        add(C("gelu_backward", "2x3_" + ap, [F(2, 3, kind="odd"), F(2, 3, kind="odd")], kw, gg=True, jvp=True))
        add(C("gelu_backward", "broadcast_" + ap, [F(3, 1, kind="odd"), F(1, 2, kind="odd")], kw, gg=True, jvp=True))
        add(C("gelu_backward", "f32_" + ap, [F32(4, kind="odd"), F32(4, kind="odd")], kw, gg=True))
    add(C("gelu", "default", [F(3, kind="odd")], gg=True, jvp=True))
    add(C("gelu", "int_input", [I([1, 2, 3])]))
    add(C("gelu", "bad_approximate", [F(3)], {"approximate": "exact"}))
    add(C("gelu_backward", "bad_approximate", [F(3), F(3)], {"approximate": "exact"}))

    for slope in [0.01, 0.2, -0.5]:
        kw = {"negative_slope": slope}
        tag = str(slope)
        add(C("leaky_relu", "2x3_" + tag, [F(2, 3, kind="odd")], kw, gg=True, jvp=True))
        add(C("leaky_relu", "f32_3x1_" + tag, [F32(3, 1, kind="odd")], kw, gg=True, jvp=True))
        add(C("leaky_relu_", "clone_" + tag, [F(2, 2, clone=True, kind="odd")], kw, gg=True))
        add(C("leaky_relu_backward", "2x3_" + tag, [F(2, 3, kind="odd"), F(2, 3, kind="odd"), slope, False], gg=True, jvp=True))
    add(C("leaky_relu", "default", [F(4, kind="odd")], gg=True, jvp=True))
    add(C("leaky_relu", "at_kinks", [F(4, data=[0.0, -0.0, 0.5, -0.5])], gg=True, jvp=True))
    add(C("leaky_relu", "empty_0x2", [F(0, 2)], jvp=True))
    add(C("leaky_relu_", "leaf_inplace_err", [F(3)]))
    add(C("leaky_relu", "int_input", [I([1, -2, 3])]))
    add(C("leaky_relu_backward", "self_is_result", [F(3, kind="odd"), F(3, kind="odd"), 0.1, True], gg=True, jvp=True))
    add(C("leaky_relu_backward", "self_is_result_negative_err", [F(3), F(3), -0.1, True]))
    return out
