#!/usr/bin/env python3
"""Generate golden values for nn.Permute (torch.permute): forward and the
input gradient of sum(G * permute(x)^2).

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_permute.py

Writes testdata/permute_golden.json.gz. Deterministic (fixed seed); the
same bytes on every run. Only torch and golden_common.py are used.

JSON layout:

    {"torch": str, "torchvision": str, "cases": [case, ...]}

    case = {"name": str, "dtype": str, "dims": [...], "input_shape": [...],
            "input": [...], "grad_output": [...], "output_shape": [...],
            "output": [...], "grad_input": [...]}
"""

import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, flat, normal, out_path, write_torchvision  # noqa: E402

OUT_PATH = out_path("permute_golden.json.gz")

# (name, input shape, dims): the detection heads' permute, a 2-D and a
# 3-D transpose, the identity, negative dims, a size-1 axis.
CASES = [
    ("heads_NAKHW", (2, 3, 4, 5, 3), (0, 3, 4, 1, 2)),
    ("matrix", (4, 7), (1, 0)),
    ("batched", (3, 5, 2), (0, 2, 1)),
    ("reverse", (2, 3, 4, 5), (3, 2, 1, 0)),
    ("identity", (3, 4), (0, 1)),
    ("negative", (2, 3, 4), (-1, 0, -2)),
    ("size1", (1, 5, 1, 3), (2, 3, 0, 1)),
]


def main():
    cases = []
    for dt_name, dt in DTYPES:
        gen = torch.Generator().manual_seed(28)
        rnd = normal(gen, dt)
        for name, shape, dims in CASES:
            x = rnd(*shape).requires_grad_()
            y = x.permute(*dims)
            g = rnd(*y.shape)
            (gx,) = torch.autograd.grad((g * y * y).sum(), [x])
            cases.append({"name": f"{name}/{dt_name}", "dtype": dt_name, "dims": list(dims),
                          "input_shape": list(shape), "input": flat(x), "grad_output": flat(g),
                          "output_shape": list(y.shape), "output": flat(y.contiguous()),
                          "grad_input": flat(gx)})
    write_torchvision(OUT_PATH, cases)


if __name__ == "__main__":
    main()
