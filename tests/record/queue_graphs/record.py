"""Records PyTorch 2.15's graphs of the README's custom-class pattern, for
`my_ops/tests/ops.rs::the_queue_patterns_graphs_are_pytorchs`: the class
`mylib::Queue` (`queue.cpp`, a TorchBind class as `my_ops/src/queue.rs`
declares it), its fake class, the operator `mylib::for_each_add` taking it
and its fake kernel calling the fake object's method; the program
`for_each_add(q, inc); return inc * inc` captured by `make_fx` (real and
fake) and by `torch.export` (as traced, and functionalized by
`run_decompositions`, PyTorch's effect tokens); and a program calling the
queue's methods itself, `q.push(inc * inc); q.for_each_add_(inc); return
-inc`, captured by `make_fx` fake (mode `fake_methods`: each method call a
`call_torchbind` node; in real mode PyTorch 2.15 does not intercept
methods and records the ATen calls inside them instead). One JSON line per capture:
{"mode", "targets", "code"}.

    pip install torch==2.15.* ninja
    PATH=<venv>/bin:$PATH python record.py > my_ops/tests/data/queue_graphs.jsonl
"""
import json, sys, os
import torch
from torch.utils.cpp_extension import load
from torch.fx.experimental.proxy_tensor import make_fx

load(name="queue_ext", sources=[os.path.join(os.path.dirname(__file__), "queue.cpp")],
     is_python_module=False, verbose=False)

@torch._library.register_fake_class("mylib::Queue")
class FakeQueue:
    def __init__(self, queue):
        self.queue = queue
    @classmethod
    def __obj_unflatten__(cls, flat):
        return cls(**dict(flat))
    def push(self, x):
        self.queue.append(x)
    def size(self):
        return len(self.queue)
    def for_each_add_(self, inc):
        for x in self.queue:
            x.add_(inc)

@torch.library.register_fake("mylib::for_each_add")
def _(q, inc):
    q.for_each_add_(inc)

def program(q, inc):
    torch.ops.mylib.for_each_add(q, inc)
    return inc * inc

def targets(gm):
    out = []
    for n in gm.graph.nodes:
        if n.op == "call_function":
            t = n.target
            out.append(str(t) if not hasattr(t, "name") else t.name() if callable(getattr(t, "name", None)) else str(t))
    return out

def fresh():
    q = torch.classes.mylib.Queue()
    q.push(torch.tensor([1.0, -2.0, 3.0]))
    return q

inc = torch.ones(3)
for mode in ["real", "fake"]:
    gm = make_fx(program, tracing_mode=mode)(fresh(), inc)
    print(json.dumps({"mode": mode, "targets": [str(n.target) for n in gm.graph.nodes if n.op == "call_function"], "code": gm.code}))

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = fresh()
    def forward(self, inc):
        torch.ops.mylib.for_each_add(self.q, inc)
        return inc * inc

try:
    ep = torch.export.export(M(), (inc,), strict=False)
    gm = ep.graph_module
    print(json.dumps({"mode": "export", "targets": [str(n.target) for n in gm.graph.nodes if n.op == "call_function"], "code": gm.code}))
except Exception as e:
    print(json.dumps({"mode": "export", "error": repr(e)[:2000]}))

try:
    ep = torch.export.export(M(), (inc,), strict=False).run_decompositions()
    gm = ep.graph_module
    print(json.dumps({"mode": "export_decomposed", "targets": [str(n.target) for n in gm.graph.nodes if n.op == "call_function"], "code": gm.code, "signature": str(ep.graph_signature)}))
except Exception as e:
    print(json.dumps({"mode": "export_decomposed", "error": repr(e)[:2000]}))

def methods(q, inc):
    q.push(inc * inc)
    q.for_each_add_(inc)
    return -inc

gm = make_fx(methods, tracing_mode="fake")(fresh(), inc)
print(json.dumps({"mode": "fake_methods", "targets": [str(n.target) for n in gm.graph.nodes if n.op == "call_function"], "code": gm.code}))
