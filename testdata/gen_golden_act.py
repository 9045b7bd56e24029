#!/usr/bin/env python3
"""Generate golden values for nn's activations (torch.nn.functional.relu,
leaky_relu, silu, gelu with approximate none/tanh, torch.sigmoid, tanh):
forward, the input gradient of sum(G * act(x)^2) and its Hessian-vector
product.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_act.py

Writes testdata/act_golden.json.gz. Deterministic (fixed seed); the input
includes exact zeros. Only torch and golden_common.py are used.

JSON layout:

    {"torch": str, "op": "activation", "cases": [case, ...]}

    case = {"name": str, "op": str, "dtype": str, "param": float | str,
            "input_shape": [...], "input": [...], "grad_output": [...],
            "output": [...], "grad_input": [...], "v_input": [...], "hvp_input": [...]}
"""

import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, flat, out_path, write_json  # noqa: E402

OUT_PATH = out_path("act_golden.json.gz")

OPS = [
    ("relu", 0.0, lambda x, p: F.relu(x)),
    ("leaky_relu", 0.01, lambda x, p: F.leaky_relu(x, p)),
    ("leaky_relu", 0.2, lambda x, p: F.leaky_relu(x, p)),
    ("sigmoid", 0.0, lambda x, p: torch.sigmoid(x)),
    ("tanh", 0.0, lambda x, p: torch.tanh(x)),
    ("silu", 0.0, lambda x, p: F.silu(x)),
    ("gelu", "none", lambda x, p: F.gelu(x, approximate=p)),
    ("gelu", "tanh", lambda x, p: F.gelu(x, approximate=p)),
]


def main():
    gen = torch.Generator().manual_seed(29)
    cases = []
    for dname, dt in DTYPES:
        for op, p, f in OPS:
            x0 = torch.randn((3, 7), generator=gen, dtype=torch.float64) * 2
            x0[0, :3] = 0.0  # exact zeros: the kink of relu and leaky_relu
            x = x0.to(dt).requires_grad_()
            out = f(x, p)
            g = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dt)
            (gx,) = torch.autograd.grad((g * out * out).sum(), (x,), create_graph=True)
            v = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(dt)
            (hx,) = torch.autograd.grad((gx * v).sum(), (x,))
            cases.append({"name": f"{dname}/{op}/{p}", "op": op, "dtype": dname, "param": p,
                          "input_shape": list(x.shape), "input": flat(x), "grad_output": flat(g),
                          "output": flat(out), "grad_input": flat(gx), "v_input": flat(v), "hvp_input": flat(hx)})
    write_json(OUT_PATH, {"torch": torch.__version__, "op": "activation", "cases": cases})


if __name__ == "__main__":
    main()
