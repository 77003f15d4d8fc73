"""Records training runs from PyTorch in `train_runs.jsonl`'s format (see
../shared/conformance/README.md, "Training runs"): what made
tests/data/recorded/train_runs.jsonl, runs of the README's kinds that the
sample does not have. Needs PyTorch (2.15 made the file).

    cd tests/record && python train_runs.py ../data/recorded/train_runs.jsonl
"""
import gzip
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
import os
import sys
HERE = os.path.dirname(os.path.abspath(__file__))
DIGITS = os.path.join(HERE, '..', 'data', 'conformance', 'digits.csv.gz')
rows = [list(map(float, l.split(','))) for l in gzip.open(DIGITS, 'rt') if l[0].isdigit()]
def data(dtype):
    X = torch.tensor([r[:64] for r in rows], dtype=dtype) / 16
    y = torch.tensor([int(r[64]) for r in rows], dtype=torch.int64)
    return X[:1500], y[:1500], X[1500:], y[1500:]
def build(model, dtype):
    layers = []
    for l in model:
        if l[0]=='linear': layers.append(nn.Linear(l[1], l[2], bias=l[3], dtype=dtype))
        elif l[0]=='relu': layers.append(nn.ReLU())
        elif l[0]=='tanh': layers.append(nn.Tanh())
        elif l[0]=='sigmoid': layers.append(nn.Sigmoid())
    return nn.Sequential(*layers)
def run(id, dtype, model, loss, optim, bs, steps, seed):
    torch.manual_seed(seed)
    dt = getattr(torch, dtype)
    m = build(model, dt)
    init = {k: v.tolist() for k,v in m.state_dict().items()}
    Xtr,ytr,Xte,yte = data(dt)
    o = dict(optim); t = o.pop('type')
    kw = {k: (tuple(v) if isinstance(v, list) else v) for k,v in o.items()}
    opt = getattr(torch.optim, t)(m.parameters(), foreach=False, **kw)
    nb = math.ceil(1500/bs); losses=[]
    for k in range(steps):
        b = k % nb; x = Xtr[b*bs:(b+1)*bs]; y = ytr[b*bs:(b+1)*bs]
        opt.zero_grad(); out = m(x)
        if loss=='cross_entropy': L = F.cross_entropy(out, y)
        elif loss=='nll_log_softmax': L = F.nll_loss(torch.log_softmax(out,1), y)
        else: L = F.mse_loss(out, F.one_hot(y,10).to(dt))
        L.backward(); opt.step(); losses.append(L.item())
    with torch.no_grad():
        tr = (m(Xtr).argmax(1)==ytr).double().mean().item(); te=(m(Xte).argmax(1)==yte).double().mean().item()
    return dict(id=id, dtype=dtype, model=model, loss=loss, optim=optim, batch_size=bs, steps=steps, init=init,
                expect=dict(losses=losses, state={k: v.tolist() for k,v in m.state_dict().items()}, train_accuracy=tr, test_accuracy=te))
runs = [
 ('x/nll_sgd_dampening', 'float32', [['linear',64,20,True],['tanh'],['linear',20,10,True]], 'nll_log_softmax', {'type':'SGD','lr':0.2,'momentum':0.8,'dampening':0.3}, 128, 30),
 ('x/adam_amsgrad_f64', 'float64', [['linear',64,16,True],['relu'],['linear',16,10,True]], 'cross_entropy', {'type':'Adam','lr':0.01,'amsgrad':True,'weight_decay':0.01}, 200, 25),
 ('x/adamw_betas_eps_nobias', 'float32', [['linear',64,24,False],['sigmoid'],['linear',24,10,True]], 'cross_entropy', {'type':'AdamW','lr':0.003,'betas':[0.8,0.95],'eps':1e-6}, 64, 40),
 ('x/mse_sgd_f64_single', 'float64', [['linear',64,10,True]], 'mse_onehot', {'type':'SGD','lr':0.3,'weight_decay':0.005}, 1500, 20),
 ('x/adamw_amsgrad_tanh3', 'float32', [['linear',64,30,True],['tanh'],['linear',30,15,False],['sigmoid'],['linear',15,10,True]], 'nll_log_softmax', {'type':'AdamW','lr':0.01,'amsgrad':True,'weight_decay':0.1}, 333, 20),
 ('x/sgd_nesterov_mse', 'float32', [['linear',64,12,True],['relu'],['linear',12,10,True]], 'mse_onehot', {'type':'SGD','lr':0.5,'momentum':0.5,'nesterov':True}, 700, 15),
 ('x/adam_mse_f64', 'float64', [['linear',64,8,True],['sigmoid'],['linear',8,10,False]], 'mse_onehot', {'type':'Adam','lr':0.02,'betas':[0.85,0.99]}, 50, 35),
 ('x/sgd_plain_nll_f64', 'float64', [['linear',64,32,True],['relu'],['linear',32,32,True],['relu'],['linear',32,10,True]], 'nll_log_softmax', {'type':'SGD','lr':0.1}, 100, 30),
]
with open(sys.argv[1],'w') as f:
    for i,r in enumerate(runs): f.write(json.dumps(run(*r, seed=100+i))+'\n')
