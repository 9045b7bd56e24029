#!/usr/bin/env python3
"""Generate golden values for nn.BatchNorm (torch.nn.functional.batch_norm),
training and eval: forward, gradients of sum(G * out^2) w.r.t. input,
weight and bias, the Hessian-vector product w.r.t. input and weight, and
the running statistics after one training run.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_batchnorm.py

Writes testdata/batchnorm_golden.json.gz. Deterministic (fixed seed). Only
torch, json and gzip are used.

JSON layout: {"torch": str, "op": "batch_norm", "cases": [case, ...]}, case =
{"name", "dtype", "training": bool, "momentum", "eps", "input_shape", "input",
 "weight" | null, "bias" | null, "running_mean", "running_var" (before),
 "running_mean_after", "running_var_after", "grad_output", "output",
 "grad_input", "grad_weight" | null, "grad_bias" | null, "v_input",
 "v_weight" | null, "hvp_input", "hvp_weight" | null}
"""

import gzip
import json
import os

import torch
import torch.nn.functional as F

OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "batchnorm_golden.json.gz")

CASES = [  # name, input shape, training, affine, momentum, eps
    ("train/affine", (4, 3, 2, 3), True, True, 0.1, 1e-5),
    ("train/noaffine/momentum0.3", (3, 2, 5), True, False, 0.3, 1e-3),
    ("train/rank2", (6, 4), True, True, 0.1, 1e-5),
    ("eval/affine", (2, 3, 2, 2), False, True, 0.1, 1e-5),
    ("eval/batch1", (1, 3, 2, 2), False, True, 0.1, 1e-5),
]


def flat(t):
    return None if t is None else t.detach().double().reshape(-1).tolist()


def main():
    gen = torch.Generator().manual_seed(37)
    cases = []
    for dname, dt in [("float32", torch.float32), ("float64", torch.float64)]:
        rnd = lambda *s: torch.randn(s, generator=gen, dtype=torch.float64).to(dt)
        for name, shape, training, affine, momentum, eps in CASES:
            c = shape[1]
            x = (rnd(*shape) * 2 + 1).requires_grad_()
            w = (rnd(c) + 1).requires_grad_() if affine else None
            b = rnd(c).requires_grad_() if affine else None
            rm = rnd(c) * 0.5
            rv = torch.rand(c, generator=gen, dtype=torch.float64).to(dt) + 0.5
            rm0, rv0 = rm.clone(), rv.clone()
            out = F.batch_norm(x, rm, rv, w, b, training=training, momentum=momentum, eps=eps)
            g = rnd(*out.shape)
            wrt = [x] + ([w, b] if affine else [])
            grads = torch.autograd.grad((g * out * out).sum(), wrt, create_graph=True)
            vx = rnd(*shape)
            vw = rnd(c) if affine else None
            h = (grads[0] * vx).sum() + ((grads[1] * vw).sum() if affine else 0)
            hv = torch.autograd.grad(h, [x] + ([w] if affine else []))
            cases.append({"name": f"{dname}/{name}", "dtype": dname, "training": training, "momentum": momentum,
                          "eps": eps, "input_shape": list(shape), "input": flat(x), "weight": flat(w), "bias": flat(b),
                          "running_mean": flat(rm0), "running_var": flat(rv0), "running_mean_after": flat(rm),
                          "running_var_after": flat(rv), "grad_output": flat(g), "output": flat(out),
                          "grad_input": flat(grads[0]), "grad_weight": flat(grads[1]) if affine else None,
                          "grad_bias": flat(grads[2]) if affine else None, "v_input": flat(vx), "v_weight": flat(vw),
                          "hvp_input": flat(hv[0]), "hvp_weight": flat(hv[1]) if affine else None})
    doc = {"torch": torch.__version__, "op": "batch_norm", "cases": cases}
    with gzip.open(OUT_PATH, "wt") as f:
        json.dump(doc, f)
    print(f"wrote {len(cases)} cases to {OUT_PATH}")


if __name__ == "__main__":
    main()
