"""Records a state dict PyTorch writes as safetensors, for
tests/tests/safetensors.rs: an MLP (Linear(4, 3), Tanh, Linear(3, 2)) made
with torch.manual_seed(0), its state dict saved with
safetensors.torch.save_file, and its output on a fixed float32 input.

    /work/venv/bin/python tests/record/safetensors_mlp.py

writes tests/data/recorded/safetensors/mlp.safetensors and mlp.json.
"""
import json
import os

import torch
from safetensors.torch import save_file

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "..", "data", "recorded", "safetensors")
os.makedirs(out, exist_ok=True)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
save_file(model.state_dict(), os.path.join(out, "mlp.safetensors"))
x = torch.tensor([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.75, 3.0]], dtype=torch.float32)
with torch.no_grad():
    y = model(x)
record = {
    "torch": torch.__version__,
    "keys": list(model.state_dict().keys()),
    "input": x.tolist(),
    "output": y.tolist(),
    "output_bits": [[v.item() for v in row.view(torch.int32)] for row in y],
}
with open(os.path.join(out, "mlp.json"), "w") as f:
    json.dump(record, f, indent=1)
print(record)
