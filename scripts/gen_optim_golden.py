#!/usr/bin/env python3
"""Generate golden values for package optim from torch.optim (torch 1.13):
SGD, Adam and AdamW updates over 20 steps, and the learning rates of the
lr_scheduler classes over 30 steps.

Run from the repository root with Debian's python (torch 1.13, CPU):

    /usr/bin/python3 scripts/gen_optim_golden.py

Writes testdata/optim/optim_golden.json.gz (compact JSON, gzip with a fixed
header: the same bytes on every run). Deterministic (fixed seed). Only
torch and testdata/golden_common.py are used.

Optimizers: three parameters of shapes [3, 4], [5] and [] (a scalar) start
from seeded normal values; step k feeds the gradients grads[k] (seeded
normal draws, scaled per step so that AMSGrad's maximum matters), except
that the scalar gets no gradient (p.grad = None, skipped by torch) at the
steps in NONE_STEPS. Each configuration runs with foreach=False (torch
1.13's single-tensor algorithm, its default on CPU) in float32 and in
float64; the float32 runs start from the float64 draws rounded to float32
and feed the gradients rounded to float32, and every value is stored as
the float64 of the value torch held.

JSON layout: {"torch": str,
 "shapes": [[3, 4], [5], []], "steps": 20, "none_steps": [..] (0-based
   steps at which parameter 2 has no gradient),
 "init": {dtype: [flat param, ...]},
 "grads": {dtype: [[flat grad | null per param] per step]},
 "optimizers": [{"name", "dtype", "kind": "sgd" | "adam" | "adamw",
   "opts": {lr, momentum, dampening, weight_decay, nesterov, maximize} for
     sgd, {lr, betas: [b1, b2], eps, weight_decay, amsgrad, maximize} for
     adam and adamw,
   "params": [[flat param per param] after each step],
   "state": {param index as str: {"step": float | absent,
     "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer": flat or
     absent (absent also for torch's momentum_buffer None)}}}],
 "schedulers": [{"name", "lr": optimizer lr before the scheduler,
   "lrs": [get_last_lr()[0] after construction, then after each step]}]}
"""

import os
import sys
import warnings

import torch
from torch.optim import lr_scheduler as S

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
from golden_common import DTYPES, flat, write_compact  # noqa: E402

OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "optim",
                        "optim_golden.json.gz")

SHAPES = [(3, 4), (5,), ()]
STEPS = 20
NONE_STEPS = [3, 10, 11]  # parameter 2 has no gradient at these steps

OPTIMIZERS = [  # name, kind, options
    ("sgd/plain", "sgd", dict(lr=0.1)),
    ("sgd/momentum", "sgd", dict(lr=0.05, momentum=0.9)),
    ("sgd/dampening", "sgd", dict(lr=0.05, momentum=0.8, dampening=0.3)),
    ("sgd/nesterov", "sgd", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("sgd/weight_decay", "sgd", dict(lr=0.07, momentum=0.5, weight_decay=0.01)),
    ("sgd/maximize", "sgd", dict(lr=0.03, momentum=0.7, weight_decay=0.02, maximize=True)),
    ("adam/default", "adam", dict(lr=0.01)),
    ("adam/amsgrad", "adam", dict(lr=0.01, amsgrad=True)),
    ("adam/weight_decay", "adam", dict(lr=0.02, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    ("adam/maximize", "adam", dict(lr=0.003, weight_decay=0.05, maximize=True)),
    ("adamw/default", "adamw", dict(lr=0.01)),
    ("adamw/amsgrad", "adamw", dict(lr=0.02, betas=(0.85, 0.99), weight_decay=0.1, amsgrad=True)),
]

SGD_DEFAULTS = dict(momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False)
ADAM_DEFAULTS = dict(betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False)


def draws():
    """The float64 initial parameters and per-step gradients (None where
    parameter 2 has no gradient)."""
    gen = torch.Generator().manual_seed(27)
    init = [torch.randn(s, generator=gen, dtype=torch.float64) for s in SHAPES]
    grads = []
    for k in range(STEPS):
        scale = 3.0 if k % 4 == 1 else (0.2 if k % 4 == 3 else 1.0)
        g = [scale * torch.randn(s, generator=gen, dtype=torch.float64) for s in SHAPES]
        if k in NONE_STEPS:
            g[2] = None
        grads.append(g)
    return init, grads


def run_optimizer(kind, opts, init, grads, dt):
    """Runs one configuration; returns the parameters after each step and
    the final state."""
    params = [p.to(dt).clone().requires_grad_() for p in init]
    if kind == "sgd":
        opt = torch.optim.SGD(params, foreach=False, **opts)
    elif kind == "adam":
        opt = torch.optim.Adam(params, foreach=False, **opts)
    else:
        opt = torch.optim.AdamW(params, foreach=False, **opts)
    after = []
    for g in grads:
        for p, gi in zip(params, g):
            p.grad = None if gi is None else gi.to(dt).clone()
        opt.step()
        after.append([flat(p) for p in params])
    state = {}
    for i, p in enumerate(params):
        st = opt.state.get(p, {})
        entry = {}
        for key, v in st.items():
            if v is None:
                continue
            entry[key] = float(v.item()) if key == "step" else flat(v)
        if entry:
            state[str(i)] = entry
    return after, state


def optimizer_cases(init, grads):
    cases = []
    for name, kind, opts in OPTIMIZERS:
        full = dict(SGD_DEFAULTS if kind == "sgd" else ADAM_DEFAULTS)
        if kind == "adamw":
            full["weight_decay"] = 1e-2  # AdamW's default
        full.update(opts)
        for dname, dt in DTYPES:
            after, state = run_optimizer(kind, full, init, grads, dt)
            o = dict(full)
            if "betas" in o:
                o["betas"] = list(o["betas"])
            cases.append({"name": name, "dtype": dname, "kind": kind, "opts": o,
                          "params": after, "state": state})
    return cases


def scheduler_lrs(make, steps=30, lr=0.1):
    """get_last_lr()[0] after constructing make(optimizer) and after each of
    steps scheduler steps (each after an optimizer step, as torch wants)."""
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=lr)
    sched = make(opt)
    lrs = [sched.get_last_lr()[0]]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
        assert lrs[-1] == opt.param_groups[0]["lr"]
    return lrs


SCHEDULERS = [  # name, constructor
    ("steplr/3/0.5", lambda o: S.StepLR(o, step_size=3, gamma=0.5)),
    ("steplr/7/0.1", lambda o: S.StepLR(o, step_size=7)),
    ("multisteplr/5,9,9,14/0.1", lambda o: S.MultiStepLR(o, milestones=[5, 9, 9, 14], gamma=0.1)),
    ("multisteplr/20,4/0.3", lambda o: S.MultiStepLR(o, milestones=[20, 4], gamma=0.3)),
    ("linearlr/default", lambda o: S.LinearLR(o)),
    ("linearlr/0.001,1,10", lambda o: S.LinearLR(o, start_factor=0.001, end_factor=1.0, total_iters=10)),
    ("linearlr/0.9,0.2,7", lambda o: S.LinearLR(o, start_factor=0.9, end_factor=0.2, total_iters=7)),
    ("cosine/10/0", lambda o: S.CosineAnnealingLR(o, T_max=10)),
    ("cosine/7/0.003", lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.003)),
    ("sequential/warmup5+multistep8,16", lambda o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.001, total_iters=5), S.MultiStepLR(o, milestones=[8, 16], gamma=0.1)],
        milestones=[5])),
    ("sequential/warmup4+cosine20", lambda o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.25, total_iters=4), S.CosineAnnealingLR(o, T_max=20, eta_min=0.001)],
        milestones=[4])),
    ("sequential/linear3+step4+cosine6", lambda o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.5, total_iters=3), S.StepLR(o, step_size=4, gamma=0.5),
            S.CosineAnnealingLR(o, T_max=6)],
        milestones=[3, 12])),
]


def main():
    warnings.simplefilter("ignore")
    init, grads = draws()
    doc = {"torch": torch.__version__, "shapes": [list(s) for s in SHAPES], "steps": STEPS,
           "none_steps": NONE_STEPS, "init": {}, "grads": {}}
    for dname, dt in DTYPES:
        doc["init"][dname] = [flat(p.to(dt)) for p in init]
        doc["grads"][dname] = [[None if g is None else flat(g.to(dt)) for g in gs] for gs in grads]
    doc["optimizers"] = optimizer_cases(init, grads)
    doc["schedulers"] = [{"name": name, "lr": 0.1, "lrs": scheduler_lrs(make)} for name, make in SCHEDULERS]
    os.makedirs(os.path.dirname(OUT_PATH), exist_ok=True)
    n = write_compact(OUT_PATH, doc)
    print("wrote %s: %d optimizer runs, %d schedulers, %d bytes gz (%d bytes json), torch %s" % (
        os.path.relpath(OUT_PATH), len(doc["optimizers"]), len(doc["schedulers"]),
        os.path.getsize(OUT_PATH), n, torch.__version__))


if __name__ == "__main__":
    main()
