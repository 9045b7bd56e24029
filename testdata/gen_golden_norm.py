#!/usr/bin/env python3
"""Generate golden values for nn.GroupNorm and nn.LayerNorm
(torch.nn.functional.group_norm, layer_norm): forward, the gradients of
sum(G * out^2) w.r.t. input, weight and bias, and the Hessian-vector
product w.r.t. input and weight.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_norm.py

Writes testdata/norm_golden.json.gz. Deterministic (fixed seed). Only
torch, json and gzip are used.

JSON layout:

    {"torch": str, "op": "norm", "cases": [case, ...]}

    case = {"name": str, "op": "group_norm" | "layer_norm", "dtype": str,
            "num_groups": int, "normalized_shape": [...], "eps": float,
            "input_shape": [...], "input": [...], "weight": [...] | null, "bias": [...] | null,
            "grad_output": [...], "output": [...],
            "grad_input": [...], "grad_weight": [...] | null, "grad_bias": [...] | null,
            "v_input": [...], "v_weight": [...] | null,
            "hvp_input": [...], "hvp_weight": [...] | null}
"""

import gzip
import json
import os

import torch
import torch.nn.functional as F

OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "norm_golden.json.gz")

CASES = [  # name, op, input shape, groups or normalized shape, affine, eps
    ("groups2/affine", "group_norm", (2, 4, 3, 3), 2, True, 1e-5),
    ("groups1/noaffine", "group_norm", (2, 3, 2, 5), 1, False, 1e-5),
    ("groups=channels/eps0.1", "group_norm", (1, 4, 3, 2), 4, True, 0.1),
    ("rank3", "group_norm", (3, 6, 5), 3, True, 1e-5),
    ("last/affine", "layer_norm", (3, 5), (5,), True, 1e-5),
    ("last2/noaffine", "layer_norm", (2, 3, 4), (3, 4), False, 1e-5),
    ("last2/affine/eps0.01", "layer_norm", (2, 3, 4), (3, 4), True, 0.01),
]


def flat(t):
    return None if t is None else t.detach().double().reshape(-1).tolist()


def main():
    gen = torch.Generator().manual_seed(31)
    cases = []
    for dname, dt in [("float32", torch.float32), ("float64", torch.float64)]:
        rnd = lambda *s: torch.randn(s, generator=gen, dtype=torch.float64).to(dt)
        for name, op, shape, p, affine, eps in CASES:
            x = (rnd(*shape) * 2 + 0.5).requires_grad_()
            pshape = (shape[1],) if op == "group_norm" else p
            w = (rnd(*pshape) + 1).requires_grad_() if affine else None
            b = rnd(*pshape).requires_grad_() if affine else None
            if op == "group_norm":
                out = F.group_norm(x, p, w, b, eps)
            else:
                out = F.layer_norm(x, p, w, b, eps)
            g = rnd(*out.shape)
            wrt = [x] + ([w, b] if affine else [])
            grads = torch.autograd.grad((g * out * out).sum(), wrt, create_graph=True)
            vx = rnd(*shape)
            vw = rnd(*pshape) if affine else None
            h = (grads[0] * vx).sum() + ((grads[1] * vw).sum() if affine else 0)
            hv = torch.autograd.grad(h, [x] + ([w] if affine else []))
            cases.append({"name": f"{dname}/{op}/{name}", "op": op, "dtype": dname,
                          "num_groups": p if op == "group_norm" else 0,
                          "normalized_shape": list(p) if op == "layer_norm" else [], "eps": eps,
                          "input_shape": list(shape), "input": flat(x), "weight": flat(w), "bias": flat(b),
                          "grad_output": flat(g), "output": flat(out), "grad_input": flat(grads[0]),
                          "grad_weight": flat(grads[1]) if affine else None, "grad_bias": flat(grads[2]) if affine else None,
                          "v_input": flat(vx), "v_weight": flat(vw), "hvp_input": flat(hv[0]),
                          "hvp_weight": flat(hv[1]) if affine else None})
    doc = {"torch": torch.__version__, "op": "norm", "cases": cases}
    with gzip.open(OUT_PATH, "wt") as f:
        json.dump(doc, f)
    print(f"wrote {len(cases)} cases to {OUT_PATH}")


if __name__ == "__main__":
    main()
