#!/usr/bin/env python3
"""Generate golden values for nn.FrozenBatchNorm2d
(torchvision.ops.misc.FrozenBatchNorm2d): forward, the gradients of
sum(G * out^2) w.r.t. input, weight, bias, running_mean and running_var,
and the Hessian-vector product w.r.t. input and weight.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_frozenbn.py

Writes testdata/frozenbn_golden.json.gz. Deterministic (fixed seed). Only
torch, torchvision and golden_common.py are used.

JSON layout: {"torchvision", "torch", "op": "frozen_batch_norm2d",
"cases": [case, ...]}, case = {"name", "dtype", "eps", "input_shape",
"input", "weight", "bias", "running_mean", "running_var", "grad_output",
"output", "grad_input", "grad_weight", "grad_bias", "grad_running_mean",
"grad_running_var", "v_input", "v_weight", "hvp_input", "hvp_weight"}
"""

import sys

import torch
from torchvision.ops.misc import FrozenBatchNorm2d

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, flat, normal, out_path, write_torchvision  # noqa: E402

OUT_PATH = out_path("frozenbn_golden.json.gz")

CASES = [  # name, input shape, eps
    ("eps1e-5", (2, 3, 4, 5), 1e-5),
    ("eps0", (2, 4, 3, 3), 0.0),
    ("batch1/1x1", (1, 5, 1, 1), 1e-5),
]


def main():
    gen = torch.Generator().manual_seed(28)
    cases = []
    for dname, dt in DTYPES:
        rnd = normal(gen, dt)
        for name, shape, eps in CASES:
            c = shape[1]
            x = (rnd(*shape) * 2 + 0.5).requires_grad_()
            w = (rnd(c) * 0.3 + 1).requires_grad_()
            b = rnd(c).requires_grad_()
            rm = (rnd(c) * 0.5).requires_grad_()
            rv = (torch.rand(c, generator=gen, dtype=torch.float64).to(dt) + 0.5).requires_grad_()
            m = FrozenBatchNorm2d(c, eps=eps)
            m.weight, m.bias, m.running_mean, m.running_var = w, b, rm, rv
            out = m(x)
            g = rnd(*out.shape)
            grads = torch.autograd.grad((g * out * out).sum(), [x, w, b, rm, rv], create_graph=True)
            vx, vw = rnd(*shape), rnd(c)
            hv = torch.autograd.grad((grads[0] * vx).sum() + (grads[1] * vw).sum(), [x, w])
            cases.append({"name": f"{dname}/{name}", "dtype": dname, "eps": eps, "input_shape": list(shape),
                          "input": flat(x), "weight": flat(w), "bias": flat(b), "running_mean": flat(rm),
                          "running_var": flat(rv), "grad_output": flat(g), "output": flat(out),
                          "grad_input": flat(grads[0]), "grad_weight": flat(grads[1]), "grad_bias": flat(grads[2]),
                          "grad_running_mean": flat(grads[3]), "grad_running_var": flat(grads[4]),
                          "v_input": flat(vx), "v_weight": flat(vw), "hvp_input": flat(hv[0]),
                          "hvp_weight": flat(hv[1])})
    write_torchvision(OUT_PATH, cases, "frozen_batch_norm2d")


if __name__ == "__main__":
    main()
