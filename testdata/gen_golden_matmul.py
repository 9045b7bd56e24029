#!/usr/bin/env python3
"""Generate golden values for nn.MatMul: torch.matmul (rank 2) and
torch.bmm (rank 3) of op(a) and op(b), op the transpose of the last two axes
when the case's flag is set; forward, first-order gradients and one
second-order term.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_matmul.py

Writes testdata/matmul_golden.json.gz. Deterministic (fixed seed). Only
torch and golden_common.py are used.

JSON layout:

    {"torch": str, "op": "matmul", "cases": [case, ...]}

    case = {
      "name": str,
      "dtype": "float32" | "float64",
      "trans_a": bool, "trans_b": bool,
      "a_shape": [...], "a": [...],          # flat, row-major, as stored (before op)
      "b_shape": [...], "b": [...],
      "grad_output": [...],                  # G, shape == output_shape
      "output_shape": [...], "output": [...],
      "grad_a": [...], "grad_b": [...],      # of sum(out * G)
      "v_a": [...],                          # V, shape == a_shape
      "grad2_b": [...],                      # d/db of sum(grad_a * V) (grad_a built with create_graph)
    }

All numbers are the exact tensor values as Python floats via .double().tolist();
float32 cases are computed in float32.
"""

import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, flat, out_path, write_json  # noqa: E402

OUT_PATH = out_path("matmul_golden.json.gz")

# (name, batch or None, m, n, k): sizes 1, primes, around the kernels' tiles.
SHAPES = [
    ("1x1x1", None, 1, 1, 1),
    ("3x5x7", None, 3, 5, 7),
    ("13x17x5", None, 13, 17, 5),
    ("batch2/4x6x3", 2, 4, 6, 3),
    ("batch3/5x3x2", 3, 5, 3, 2),
]


def stored(shape_op, trans):
    """The stored shape of a matrix whose op has shape shape_op."""
    if not trans:
        return list(shape_op)
    return list(shape_op[:-2]) + [shape_op[-1], shape_op[-2]]


def op(x, trans):
    return x.transpose(-1, -2) if trans else x


def main():
    gen = torch.Generator().manual_seed(12)
    cases = []
    for dname, dt in DTYPES:
        for name, batch, m, n, k in SHAPES:
            pre = [] if batch is None else [batch]
            for ta in (False, True):
                for tb in (False, True):
                    sa = stored(pre + [m, k], ta)
                    sb = stored(pre + [k, n], tb)
                    a = torch.randn(sa, generator=gen, dtype=torch.float64).to(dt).requires_grad_()
                    b = torch.randn(sb, generator=gen, dtype=torch.float64).to(dt).requires_grad_()
                    out = torch.matmul(op(a, ta), op(b, tb))
                    g = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dt)
                    ga, gb = torch.autograd.grad((out * g).sum(), (a, b), create_graph=True)
                    v = torch.randn(sa, generator=gen, dtype=torch.float64).to(dt)
                    (g2b,) = torch.autograd.grad((ga * v).sum(), (b,))
                    cases.append({
                        "name": f"{dname}/{name}/tA={int(ta)},tB={int(tb)}",
                        "dtype": dname, "trans_a": ta, "trans_b": tb,
                        "a_shape": sa, "a": flat(a), "b_shape": sb, "b": flat(b),
                        "grad_output": flat(g), "output_shape": list(out.shape), "output": flat(out),
                        "grad_a": flat(ga), "grad_b": flat(gb), "v_a": flat(v), "grad2_b": flat(g2b),
                    })
    write_json(OUT_PATH, {"torch": torch.__version__, "op": "matmul", "cases": cases})


if __name__ == "__main__":
    main()
