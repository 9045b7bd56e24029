#!/usr/bin/env python3
"""Generate golden values for nn.Interpolate (torch.nn.functional.interpolate,
modes nearest and bilinear): forward, the input gradient of sum(G * out^2)
and its Hessian-vector product.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_interp.py

Writes testdata/interp_golden.json.gz. Deterministic (fixed seed). Only
torch and golden_common.py are used.

JSON layout:

    {"torch": str, "op": "interpolate", "cases": [case, ...]}

    case = {
      "name": str, "dtype": "float32" | "float64",
      "mode": "nearest" | "bilinear", "align_corners": bool,
      "size": [h, w] | null, "scale_factor": [sh, sw] | null,
      "input_shape": [...], "input": [...],
      "grad_output": [...], "output_shape": [...], "output": [...],
      "grad_input": [...], "v_input": [...], "hvp_input": [...],
    }
"""

import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, flat, out_path, write_json  # noqa: E402

OUT_PATH = out_path("interp_golden.json.gz")

CASES = [  # name, input shape, mode, align_corners, size, scale_factor
    ("nearest/x2", (2, 3, 4, 5), "nearest", False, None, (2.0, 2.0)),
    ("nearest/5x6->7x4", (1, 2, 5, 6), "nearest", False, (7, 4), None),
    ("nearest/scale0.5x1.7", (1, 2, 6, 5), "nearest", False, None, (0.5, 1.7)),
    ("bilinear/x2", (2, 2, 4, 5), "bilinear", False, None, (2.0, 2.0)),
    ("bilinear/5x6->7x4", (1, 2, 5, 6), "bilinear", False, (7, 4), None),
    ("bilinear/5x6->7x4/align", (1, 2, 5, 6), "bilinear", True, (7, 4), None),
    ("bilinear/down/align", (1, 1, 9, 7), "bilinear", True, (4, 3), None),
    ("bilinear/scale1.5", (1, 2, 4, 3), "bilinear", False, None, (1.5, 1.5)),
    ("bilinear/to1x1/align", (1, 2, 3, 4), "bilinear", True, (1, 1), None),
    ("bilinear/to1x1", (1, 2, 3, 4), "bilinear", False, (1, 1), None),
    ("nearest/30->22", (1, 1, 30, 30), "nearest", False, (22, 22), None),
    ("nearest/scale1x3.7", (1, 1, 3, 11), "nearest", False, None, (1.0, 3.7)),
    ("nearest/scale1.1-same-size", (1, 1, 4, 4), "nearest", False, None, (1.1, 1.1)),
    ("bilinear/scale1.1-same-size", (1, 2, 4, 4), "bilinear", False, None, (1.1, 1.1)),
    ("bilinear/scale0.6x0.45", (1, 1, 7, 9), "bilinear", False, None, (0.6, 0.45)),
]


def main():
    gen = torch.Generator().manual_seed(23)
    cases = []
    for dname, dt in DTYPES:
        for name, shape, mode, align, size, sf in CASES:
            x = torch.randn(shape, generator=gen, dtype=torch.float64).to(dt).requires_grad_()
            kw = {"mode": mode}
            if mode == "bilinear":
                kw["align_corners"] = align
            out = F.interpolate(x, size=size, scale_factor=sf, **kw)
            g = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dt)
            (gx,) = torch.autograd.grad((g * out * out).sum(), (x,), create_graph=True)
            v = torch.randn(shape, generator=gen, dtype=torch.float64).to(dt)
            (hx,) = torch.autograd.grad((gx * v).sum(), (x,))
            cases.append({"name": f"{dname}/{name}", "dtype": dname, "mode": mode, "align_corners": align,
                          "size": list(size) if size else None, "scale_factor": list(sf) if sf else None,
                          "input_shape": list(shape), "input": flat(x), "grad_output": flat(g),
                          "output_shape": list(out.shape), "output": flat(out), "grad_input": flat(gx),
                          "v_input": flat(v), "hvp_input": flat(hx)})
    write_json(OUT_PATH, {"torch": torch.__version__, "op": "interpolate", "cases": cases})


if __name__ == "__main__":
    main()
