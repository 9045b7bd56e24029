#!/usr/bin/env python3
"""Generate golden values for nn.BatchNorm (torch.nn.functional.batch_norm),
training and eval: forward, gradients of sum(G * out^2) w.r.t. input,
weight and bias, the Hessian-vector product w.r.t. input and weight, and
the running statistics after one training run.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_batchnorm.py

Writes testdata/batchnorm_golden.json.gz. Deterministic (fixed seed). Only
torch and golden_common.py are used.

JSON layout: {"torch": str, "op": "batch_norm", "cases": [case, ...]}, case =
{"name", "dtype", "training": bool, "momentum", "eps", "input_shape", "input",
 "weight" | null, "bias" | null, "running_mean", "running_var" (before),
 "running_mean_after", "running_var_after", "grad_output", "output",
 "grad_input", "grad_weight" | null, "grad_bias" | null, "v_input",
 "v_weight" | null, "hvp_input", "hvp_weight" | null}
"""

import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, affine_params, flat, norm_grads_hvp, normal, out_path, write_json  # noqa: E402

OUT_PATH = out_path("batchnorm_golden.json.gz")

CASES = [  # name, input shape, training, affine, momentum, eps
    ("train/affine", (4, 3, 2, 3), True, True, 0.1, 1e-5),
    ("train/noaffine/momentum0.3", (3, 2, 5), True, False, 0.3, 1e-3),
    ("train/rank2", (6, 4), True, True, 0.1, 1e-5),
    ("eval/affine", (2, 3, 2, 2), False, True, 0.1, 1e-5),
    ("eval/batch1", (1, 3, 2, 2), False, True, 0.1, 1e-5),
]


def main():
    gen = torch.Generator().manual_seed(37)
    cases = []
    for dname, dt in DTYPES:
        rnd = normal(gen, dt)
        for name, shape, training, affine, momentum, eps in CASES:
            c = shape[1]
            x = (rnd(*shape) * 2 + 1).requires_grad_()
            w, b = affine_params(rnd, (c,), affine)
            rm = rnd(c) * 0.5
            rv = torch.rand(c, generator=gen, dtype=torch.float64).to(dt) + 0.5
            rm0, rv0 = rm.clone(), rv.clone()
            out = F.batch_norm(x, rm, rv, w, b, training=training, momentum=momentum, eps=eps)
            g, grads, vx, vw, hv = norm_grads_hvp(out, x, w, b, shape, (c,), rnd)
            cases.append({"name": f"{dname}/{name}", "dtype": dname, "training": training, "momentum": momentum,
                          "eps": eps, "input_shape": list(shape), "input": flat(x), "weight": flat(w), "bias": flat(b),
                          "running_mean": flat(rm0), "running_var": flat(rv0), "running_mean_after": flat(rm),
                          "running_var_after": flat(rv), "grad_output": flat(g), "output": flat(out),
                          "grad_input": flat(grads[0]), "grad_weight": flat(grads[1]) if affine else None,
                          "grad_bias": flat(grads[2]) if affine else None, "v_input": flat(vx), "v_weight": flat(vw),
                          "hvp_input": flat(hv[0]), "hvp_weight": flat(hv[1]) if affine else None})
    write_json(OUT_PATH, {"torch": torch.__version__, "op": "batch_norm", "cases": cases})


if __name__ == "__main__":
    main()
