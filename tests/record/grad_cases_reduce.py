"""Cases of the Core ATen reductions for tests/record/grad_calls.py (see
there): amax / amin, argmin, any, mean, var, cumsum, at ties, NaN, empty and
0-dim inputs, with their dims, keepdim, dtype and correction arguments, and
their errors.

    cd tests/record && python grad_calls.py ../data/recorded/grad_calls_reduce.jsonl grad_cases_reduce 20251204 800
"""
import torch
from grad_calls import F, F32, I, B
from grad_cases import C, f32, f64, i64

nan = float("nan")


def CASES():
    out = []
    add = out.append

    # ------------------------------------------------------------ amax / amin
    for op in ["amax", "amin"]:
        add(C(op, "all_dims", [F(2, 3, kind="distinct")], gg=True, jvp=True))
        add(C(op, "dim1", [F(2, 3, kind="distinct"), [1]], gg=True, jvp=True))
        add(C(op, "neg_dims_keep", [F(2, 3, 2, kind="distinct"), [-1, 0], True], gg=True, jvp=True))
        add(C(op, "ties_row", [F(2, 3, data=[1.0, 1.0, -0.5, 0.25, 0.25, 0.25]), [1]], gg=True, jvp=True))
        add(C(op, "ties_all", [F(2, 2, data=[0.5, 0.5, -0.5, 0.5])], jvp=True))
        add(C(op, "f32_keep", [F32(3, 2, kind="distinct"), [0], True], jvp=True))
        add(C(op, "0d", [F(), [0]], gg=True, jvp=True))
        add(C(op, "nan", [F(2, 2, data=[nan, 1.0, 0.5, -0.5]), [1]]))
        add(C(op, "empty_kept_dim", [F(0, 3), [1]]))
        add(C(op, "empty_dim_err", [F(0, 3), [0]]))
        add(C(op, "empty_all_err", [F(0, 3)]))
        add(C(op, "empty_neg_dim_err", [F(0, 3), [-2]]))
        add(C(op, "dup_dim_err", [F(2, 3), [0, -2]]))
        add(C(op, "dim_range_err", [F(2, 3), [2]]))
        add(C(op, "int_input", [I([3, -1, 2]), [0]]))
        add(C(op, "bool_input", [B([True, False, False, False], [2, 2]), [1]]))
    # ------------------------------------------------------------ argmin
    add(C("argmin", "dim_not_differentiable", [F(2, 3, kind="distinct"), 1]))
    add(C("argmin", "all_not_differentiable", [F(2, 3, kind="distinct")]))
    add(C("argmin", "empty_err", [F(0, 3)]))
    add(C("argmin", "empty_dim_err", [F(0, 3), 0]))
    add(C("argmin", "bool_err", [B([True, False], [2])]))
    # ------------------------------------------------------------ any
    add(C("any", "not_differentiable", [F(2, 3)]))
    add(C("any.dim", "not_differentiable", [F(2, 3), 1]))
    add(C("any.dims", "not_differentiable", [F(2, 3), [0, 1]]))
    add(C("any.dim", "dim_range_err", [F(2, 3), 2]))
    # ------------------------------------------------------------ mean
    add(C("mean", "2x3", [F(2, 3)], gg=True, jvp=True))
    add(C("mean", "f32_3d", [F32(2, 1, 3)], jvp=True))
    add(C("mean", "0d", [F()], gg=True, jvp=True))
    add(C("mean", "dtype_f64_from_f32", [F32(4)], {"dtype": f64}, jvp=True))
    add(C("mean", "empty", [F(0, 2)]))
    add(C("mean", "int_err", [I([1, 2])]))
    add(C("mean", "int_dtype_err", [F(3)], {"dtype": i64}))
    # ------------------------------------------------------------ var
    add(C("var.correction", "default", [F(2, 3)], gg=True, jvp=True))
    add(C("var.correction", "dim1", [F(2, 3), [1]], gg=True, jvp=True))
    add(C("var.correction", "dims_keep_corr0", [F(2, 3, 2), [0, -1]], {"correction": 0, "keepdim": True}, gg=True, jvp=True))
    add(C("var.correction", "float_corr", [F(3, 4), [0]], {"correction": 1.5}, gg=True, jvp=True))
    add(C("var.correction", "f32_one_output", [F32(3, 1), [0]], jvp=True))
    add(C("var.correction", "f32_rows", [F32(2, 5), [1]], jvp=True))
    add(C("var.correction", "0d", [F()], jvp=True))
    add(C("var.correction", "dof_zero", [F(3, 1), [1]]))
    add(C("var.correction", "dof_zero_all", [F(2)], {"correction": 2}))
    add(C("var.correction", "empty", [F(0, 3), [0]]))
    add(C("var.correction", "int_err", [I([1, 2, 3])]))
    add(C("var.correction", "dup_dim_err", [F(2, 3), [1, 1]]))
    add(C("var.dim", "unbiased", [F(2, 3), [1]], gg=True, jvp=True))
    add(C("var.dim", "biased_keep", [F(3, 2), [0], False, True], gg=True, jvp=True))
    add(C("var.dim", "none_dim", [F(2, 2), None], jvp=True))
    # ------------------------------------------------------------ cumsum
    add(C("cumsum", "dim1", [F(2, 3), 1], gg=True, jvp=True))
    add(C("cumsum", "neg_dim_3d", [F(2, 3, 2), -3], gg=True, jvp=True))
    add(C("cumsum", "f32_to_f64", [F32(4), 0], {"dtype": f64}, gg=True, jvp=True))
    add(C("cumsum", "f64_to_f32", [F(2, 3), 0], {"dtype": f32}, jvp=True))
    add(C("cumsum", "0d", [F(), 0], gg=True, jvp=True))
    add(C("cumsum", "size1_dim", [F(3, 1), 1], jvp=True))
    add(C("cumsum", "empty", [F(0, 3), 1]))
    add(C("cumsum", "int_input", [I([1, 2, 3]), 0]))
    add(C("cumsum", "dim_err", [F(2, 3), 2]))
    add(C("cumsum_", "clone", [F(2, 3, clone=True), 1], gg=True))
    add(C("cumsum_", "leaf_inplace_err", [F(3), 0]))
    add(C("cumsum_", "dtype_mismatch_err", [F(3, clone=True), 0], {"dtype": f32}))
    return out
