#!/usr/bin/env python3
"""Generate golden values for nn.GroupNorm and nn.LayerNorm
(torch.nn.functional.group_norm, layer_norm): forward, the gradients of
sum(G * out^2) w.r.t. input, weight and bias, and the Hessian-vector
product w.r.t. input and weight.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_norm.py

Writes testdata/norm_golden.json.gz. Deterministic (fixed seed). Only
torch and golden_common.py are used.

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

import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, affine_params, flat, norm_grads_hvp, normal, out_path, write_json  # noqa: E402

OUT_PATH = out_path("norm_golden.json.gz")

CASES = [  # name, op, input shape, groups or normalized shape, affine, eps
    ("groups2/affine", "group_norm", (2, 4, 3, 3), 2, True, 1e-5),
    ("groups1/noaffine", "group_norm", (2, 3, 2, 5), 1, False, 1e-5),
    ("groups=channels/eps0.1", "group_norm", (1, 4, 3, 2), 4, True, 0.1),
    ("rank3", "group_norm", (3, 6, 5), 3, True, 1e-5),
    ("last/affine", "layer_norm", (3, 5), (5,), True, 1e-5),
    ("last2/noaffine", "layer_norm", (2, 3, 4), (3, 4), False, 1e-5),
    ("last2/affine/eps0.01", "layer_norm", (2, 3, 4), (3, 4), True, 0.01),
]


def main():
    gen = torch.Generator().manual_seed(31)
    cases = []
    for dname, dt in DTYPES:
        rnd = normal(gen, dt)
        for name, op, shape, p, affine, eps in CASES:
            x = (rnd(*shape) * 2 + 0.5).requires_grad_()
            pshape = (shape[1],) if op == "group_norm" else p
            w, b = affine_params(rnd, pshape, affine)
            if op == "group_norm":
                out = F.group_norm(x, p, w, b, eps)
            else:
                out = F.layer_norm(x, p, w, b, eps)
            g, grads, vx, vw, hv = norm_grads_hvp(out, x, w, b, shape, pshape, rnd)
            cases.append({"name": f"{dname}/{op}/{name}", "op": op, "dtype": dname,
                          "num_groups": p if op == "group_norm" else 0,
                          "normalized_shape": list(p) if op == "layer_norm" else [], "eps": eps,
                          "input_shape": list(shape), "input": flat(x), "weight": flat(w), "bias": flat(b),
                          "grad_output": flat(g), "output": flat(out), "grad_input": flat(grads[0]),
                          "grad_weight": flat(grads[1]) if affine else None, "grad_bias": flat(grads[2]) if affine else None,
                          "v_input": flat(vx), "v_weight": flat(vw), "hvp_input": flat(hv[0]),
                          "hvp_weight": flat(hv[1]) if affine else None})
    write_json(OUT_PATH, {"torch": torch.__version__, "op": "norm", "cases": cases})


if __name__ == "__main__":
    main()
