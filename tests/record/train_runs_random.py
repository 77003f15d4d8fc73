"""Records training runs drawn at random from the README's lists, with
train_runs.py's recorder: what made tests/data/recorded/train_runs_random.jsonl.gz.

    cd tests/record && python train_runs_random.py OUT.jsonl 7 40 && gzip -9 OUT.jsonl

(arguments: the output, the seed of the draw, the number of runs).
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "train_runs.py")
# train_runs.py's definitions (data, build, run), not its list of runs.
g = {"__file__": PATH}
exec(compile(open(PATH).read().split("runs = [")[0], PATH, "exec"), g)
run = g["run"]
rnd = random.Random(int(sys.argv[2]))
acts = ["relu", "tanh", "sigmoid"]
out = open(sys.argv[1], "w")
for i in range(int(sys.argv[3])):
    dtype = rnd.choice(["float32", "float32", "float64"])
    depth = rnd.choice([0, 1, 1, 2, 3])
    sizes = [64] + [rnd.choice([8, 12, 16, 24, 32, 48]) for _ in range(depth)] + [10]
    model = []
    for k in range(len(sizes) - 1):
        model.append(["linear", sizes[k], sizes[k + 1], rnd.random() < 0.8])
        if k < len(sizes) - 2:
            model.append([rnd.choice(acts)])
    loss = rnd.choice(["cross_entropy", "nll_log_softmax", "mse_onehot"])
    t = rnd.choice(["SGD", "Adam", "AdamW"])
    if t == "SGD":
        o = {"type": "SGD", "lr": rnd.choice([0.01, 0.05, 0.1, 0.3, 0.5])}
        if rnd.random() < 0.6:
            o["momentum"] = rnd.choice([0.5, 0.9, 0.99])
            if rnd.random() < 0.4:
                o["nesterov"] = True
            elif rnd.random() < 0.5:
                o["dampening"] = rnd.choice([0.1, 0.5])
        if rnd.random() < 0.4:
            o["weight_decay"] = rnd.choice([1e-4, 1e-3, 0.01])
    else:
        o = {"type": t, "lr": rnd.choice([1e-3, 3e-3, 0.01, 0.02])}
        if rnd.random() < 0.4:
            o["betas"] = rnd.choice([[0.8, 0.99], [0.9, 0.95], [0.5, 0.9]])
        if rnd.random() < 0.3:
            o["eps"] = rnd.choice([1e-6, 1e-10])
        if rnd.random() < 0.5:
            o["weight_decay"] = rnd.choice([1e-4, 0.01, 0.1])
        if rnd.random() < 0.3:
            o["amsgrad"] = True
    bs = rnd.choice([1, 7, 50, 64, 100, 128, 500, 1500])
    steps = rnd.choice([10, 20, 30])
    r = run(f"rand/{i:03d}", dtype, model, loss, o, bs, steps, seed=1000 + i)
    out.write(json.dumps(r) + "\n")
