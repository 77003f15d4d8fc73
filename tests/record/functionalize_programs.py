"""Records random programs of views and in-place operators, run by PyTorch
eagerly and under `torch.func.functionalize`, for opforge's replay test
(`tests/tests/functionalize_recorded.rs`).

The programs come in the JSON form opforge's `view_programs` module writes
(`opforge_tests::view_programs::Program::to_json`), one a line:

    {"inputs": [{"shape": [2, 3], "perm": [1, 0]}],
     "steps": [{"op": "t", "x": 0, "args": []},
               {"op": "add_", "x": 0, "args": [1.0]},
               {"op": "copy_", "x": 1, "args": [], "tensor": 0}],
     "outputs": [1]}

Input i is float32 with its dimensions in memory in the order `perm`
(outermost first) and its elements, in memory order, 1, 2, 3, ... plus
100 * i. A view step appends its results to the program's tensors (inputs
first); an in-place step writes tensor `x`; `tensor` names a tensor operand.

Usage (the programs from opforge's generator, the records to stdout):

    cargo run -p opforge-tests --example view_programs -- emit 100000 400 > programs.jsonl
    python tests/record/functionalize_programs.py programs.jsonl > records.jsonl
    cargo run -p opforge-tests --example view_programs -- compare records.jsonl

Each record is {"program": ..., "eager": OUTCOME, "functionalized": OUTCOME}
with OUTCOME = {"outputs": [RECORD...], "inputs": [RECORD...], "error":
null | {"step": k, "message": "..."}} and RECORD = {"shape", "strides",
"values"} (values row-major), as opforge's `view_programs::Outcome`.
"""

import json
import sys
import warnings

import torch
from torch.func import functionalize

warnings.filterwarnings("ignore")


def make_input(i, spec):
    shape, perm = spec["shape"], spec["perm"]
    stored = [shape[d] for d in perm]
    n = 1
    for s in stored:
        n *= s
    base = (torch.arange(n, dtype=torch.float32) + 1 + 100 * i).reshape(stored)
    back = [0] * len(perm)
    for pos, d in enumerate(perm):
        back[d] = pos
    return base.permute(back)


class StepFailed(Exception):
    def __init__(self, step, error):
        super().__init__(str(error))
        self.step = step
        self.error = error


def apply(step, ts):
    op, x, args = step["op"], ts[step["x"]], step.get("args", [])
    other = ts[step["tensor"]] if "tensor" in step else None
    views = {
        "select": lambda: x.select(args[0], args[1]),
        "slice": lambda: torch.ops.aten.slice.Tensor(x, *args),
        "t": lambda: x.t(),
        "transpose": lambda: x.transpose(*args),
        "permute": lambda: x.permute(args[0]),
        "view": lambda: x.view(args[0]),
        "reshape": lambda: x.reshape(args[0]),
        "squeeze": lambda: x.squeeze(*args),
        "unsqueeze": lambda: x.unsqueeze(args[0]),
        "expand": lambda: x.expand(args[0]),
        "diagonal": lambda: x.diagonal(*args),
        "as_strided": lambda: x.as_strided(args[0], args[1], args[2]),
        "contiguous": lambda: x.contiguous(),
        "clone": lambda: x.clone(),
    }
    if op in views:
        ts.append(views[op]())
    elif op == "unbind":
        ts.extend(x.unbind(args[0]))
    elif op == "add_":
        x.add_(other if other is not None else args[0])
    elif op == "mul_":
        x.mul_(other if other is not None else args[0])
    elif op == "fill_":
        x.fill_(args[0])
    elif op == "zero_":
        x.zero_()
    elif op == "copy_":
        x.copy_(other)
    elif op == "t_":
        x.t_()
    elif op == "squeeze_":
        x.squeeze_(*args)
    elif op == "unsqueeze_":
        x.unsqueeze_(args[0])
    elif op == "transpose_":
        x.transpose_(*args)
    else:
        raise ValueError(f"unknown operator {op}")


def record(t):
    return {
        "shape": list(t.shape),
        "strides": list(t.stride()),
        "values": [float(v) for v in t.reshape(-1).tolist()],
    }


def body(program):
    def f(*inputs):
        ts = list(inputs)
        for k, step in enumerate(program["steps"]):
            try:
                apply(step, ts)
            except Exception as e:  # noqa: BLE001 (the failure is the record)
                raise StepFailed(k, e) from e
        return tuple(ts[o] for o in program["outputs"])

    return f


def run(program, functionalized):
    inputs = [make_input(i, s) for i, s in enumerate(program["inputs"])]
    f = body(program)
    if functionalized:
        f = functionalize(f)
    error, outputs = None, []
    try:
        outputs = [record(t) for t in f(*inputs)]
    except StepFailed as e:
        error = {"step": e.step, "message": str(e.error)}
    except Exception as e:  # noqa: BLE001 (after the last step)
        error = {"step": len(program["steps"]), "message": str(e)}
    return {
        "outputs": outputs if error is None else [],
        "inputs": [record(t) for t in inputs],
        "error": error,
    }


def main():
    torch.set_num_threads(1)
    with open(sys.argv[1]) as f:
        for line in f:
            if not line.strip():
                continue
            program = json.loads(line)
            out = {
                "program": program,
                "eager": run(program, False),
                "functionalized": run(program, True),
            }
            print(json.dumps(out, separators=(",", ":")))


if __name__ == "__main__":
    main()
