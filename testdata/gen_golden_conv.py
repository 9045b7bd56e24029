#!/usr/bin/env python3
"""Generate golden values for nn.Conv2d and nn.ConvTranspose2d:
torch.nn.functional.conv2d and conv_transpose2d, forward, first-order
gradients and a Hessian-vector product.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_conv.py

Writes testdata/conv_golden.json.gz. Deterministic (fixed seed). Only torch and
golden_common.py are used.

JSON layout:

    {"torch": str, "op": "conv", "cases": [case, ...]}

    case = {
      "name": str, "op": "conv2d" | "conv_transpose2d",
      "dtype": "float32" | "float64",
      "stride": [sh, sw], "padding": [ph, pw], "dilation": [dh, dw],
      "output_padding": [oh, ow],            # conv_transpose2d only
      "groups": int,
      "input_shape": [...], "input": [...],  # flat, row-major
      "weight_shape": [...], "weight": [...],
      "bias": [...] | null,
      "grad_output": [...],                  # G, shape == output_shape
      "output_shape": [...], "output": [...],
      "grad_input": [...], "grad_weight": [...], "grad_bias": [...] | null,   # of sum(out * G)
      "v_input": [...], "v_weight": [...],   # directions
      # the Hessian-vector product: gradients w.r.t. input and weight of
      # h = sum(grad_input * v_input) + sum(grad_weight * v_weight)
      "hvp_input": [...], "hvp_weight": [...],
    }

All numbers are the exact tensor values as Python floats via
.double().tolist(); float32 cases are computed in float32.
"""

import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, flat, normal, out_path, write_json  # noqa: E402

OUT_PATH = out_path("conv_golden.json.gz")

# (name, input [N, C, H, W], cout, kernel, stride, padding, dilation, groups, bias)
CONV = [
    ("3x3/pad1", (2, 3, 6, 7), 4, (3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    ("stride>kernel", (1, 2, 9, 8), 3, (2, 2), (3, 3), (0, 0), (1, 1), 1, True),
    ("dilation2/pad2", (2, 2, 7, 7), 2, (3, 3), (1, 1), (2, 2), (2, 2), 1, False),
    ("depthwise", (2, 4, 5, 6), 4, (3, 3), (1, 1), (1, 1), (1, 1), 4, True),
    ("groups2", (1, 4, 5, 5), 6, (3, 2), (2, 1), (1, 0), (1, 1), 2, True),
    ("pointwise", (3, 5, 4, 3), 2, (1, 1), (1, 1), (0, 0), (1, 1), 1, True),
    ("1x1/stride2", (1, 3, 5, 5), 2, (1, 1), (2, 2), (0, 0), (1, 1), 1, False),
    ("nonsquare", (1, 2, 4, 9), 3, (2, 4), (1, 2), (1, 2), (1, 1), 1, True),
    ("kernel=input", (2, 2, 3, 3), 2, (3, 3), (1, 1), (0, 0), (1, 1), 1, True),
]

# (name, input [N, Cin, H, W], cout, kernel, stride, padding, output_padding, dilation, groups, bias)
CONVT = [
    ("3x3/stride2/outpad1", (2, 3, 4, 5), 2, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1, True),
    ("4x4/stride2/pad1", (1, 2, 3, 3), 3, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), 1, True),
    ("dilation2/groups2", (1, 4, 3, 4), 2, (2, 3), (1, 2), (0, 1), (0, 1), (2, 1), 2, False),
    ("1x1", (2, 3, 3, 2), 4, (1, 1), (1, 1), (0, 0), (0, 0), (1, 1), 1, True),
]


def case(name, op, dt, dname, x, w, b, kw, gen):
    x.requires_grad_()
    w.requires_grad_()
    if b is not None:
        b.requires_grad_()
    f = F.conv2d if op == "conv2d" else F.conv_transpose2d
    out = f(x, w, b, **kw)
    g = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dt)
    wrt = (x, w) if b is None else (x, w, b)
    grads = torch.autograd.grad((out * g).sum(), wrt, create_graph=True)
    vx = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(dt)
    vw = torch.randn(w.shape, generator=gen, dtype=torch.float64).to(dt)
    h = (grads[0] * vx).sum() + (grads[1] * vw).sum()
    hx, hw = torch.autograd.grad(h, (x, w))
    c = {
        "name": f"{dname}/{op}/{name}", "op": op, "dtype": dname,
        "stride": list(kw["stride"]), "padding": list(kw["padding"]), "dilation": list(kw["dilation"]),
        "output_padding": list(kw.get("output_padding", (0, 0))), "groups": kw["groups"],
        "input_shape": list(x.shape), "input": flat(x), "weight_shape": list(w.shape), "weight": flat(w),
        "bias": flat(b), "grad_output": flat(g), "output_shape": list(out.shape), "output": flat(out),
        "grad_input": flat(grads[0]), "grad_weight": flat(grads[1]),
        "grad_bias": flat(grads[2]) if b is not None else None,
        "v_input": flat(vx), "v_weight": flat(vw), "hvp_input": flat(hx), "hvp_weight": flat(hw),
    }
    return c


def main():
    gen = torch.Generator().manual_seed(13)
    cases = []
    for dname, dt in DTYPES:
        rnd = normal(gen, dt)
        for name, shp, cout, k, s, p, d, groups, bias in CONV:
            x = rnd(*shp)
            w = rnd(cout, shp[1] // groups, *k)
            b = rnd(cout) if bias else None
            kw = {"stride": s, "padding": p, "dilation": d, "groups": groups}
            cases.append(case(name, "conv2d", dt, dname, x, w, b, kw, gen))
        for name, shp, cout, k, s, p, op, d, groups, bias in CONVT:
            x = rnd(*shp)
            w = rnd(shp[1], cout // groups, *k)
            b = rnd(cout) if bias else None
            kw = {"stride": s, "padding": p, "output_padding": op, "dilation": d, "groups": groups}
            cases.append(case(name, "conv_transpose2d", dt, dname, x, w, b, kw, gen))
    write_json(OUT_PATH, {"torch": torch.__version__, "op": "conv", "cases": cases})


if __name__ == "__main__":
    main()
