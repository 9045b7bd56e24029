#!/usr/bin/env python3
"""Generate golden values for nn.MaxPool2d, AvgPool2d, AdaptiveMaxPool2d and
AdaptiveAvgPool2d (torch.nn.functional.max_pool2d, avg_pool2d,
adaptive_max_pool2d, adaptive_avg_pool2d): forward, the input gradient of
sum(G * pool(x)^2) and its Hessian-vector product.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_nnpool.py

Writes testdata/nnpool_golden.json.gz. Deterministic (fixed seed). Only
torch, math and golden_common.py are used.

JSON layout:

    {"torch": str, "op": "pool", "cases": [case, ...]}

    case = {
      "name": str, "op": "max_pool2d" | "avg_pool2d" | "adaptive_max_pool2d" | "adaptive_avg_pool2d",
      "dtype": "float32" | "float64",
      "kernel_size", "stride", "padding", "dilation": [h, w],   # not for the adaptive ops
      "ceil_mode": bool, "count_include_pad": bool, "divisor_override": int (0: none),
      "output_size": [h, w],                 # adaptive ops only
      "input_shape": [...], "input": [...],  # flat, row-major; NaN and -Inf written as 0
      "input_nan": [i, ...], "input_neginf": [i, ...],   # flat indices holding NaN / -Inf
      "grad_output": [...],                  # G, shape == output_shape
      "output_shape": [...], "output": [...], "output_nan": [i, ...], "output_neginf": [i, ...],
      "square": bool,                        # false for the NaN/-Inf case
      "grad_input": [...],                   # of sum(G * pool(x)^2), or sum(G * pool(x)) if not square
      "v_input": [...], "hvp_input": [...],  # d/dx <grad_input, v>
    }

All numbers are the exact tensor values as Python floats via
.double().tolist(); float32 cases are computed in float32.
"""

import math
import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, flat, out_path, write_json  # noqa: E402

OUT_PATH = out_path("nnpool_golden.json.gz")

MAX = [  # name, input shape, kernel, stride, padding, dilation, ceil_mode, special
    ("k3s2p1", (2, 3, 7, 6), (3, 3), (2, 2), (1, 1), (1, 1), False, None),
    ("k2s2/ceil/odd", (1, 2, 5, 7), (2, 2), (2, 2), (0, 0), (1, 1), True, None),
    ("k3s2p1/ceil", (1, 2, 6, 6), (3, 3), (2, 2), (1, 1), (1, 1), True, None),
    ("dilation2", (1, 2, 7, 7), (2, 3), (1, 2), (1, 1), (2, 2), False, None),
    ("stride>kernel", (1, 1, 9, 9), (2, 2), (3, 4), (0, 0), (1, 1), False, None),
    ("ties", (1, 2, 4, 4), (2, 2), (1, 1), (0, 0), (1, 1), False, "ties"),
    ("neginf/nan", (1, 2, 4, 4), (2, 2), (2, 2), (0, 0), (1, 1), False, "special"),
]
AVG = [  # name, input shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    ("k3s2p1", (2, 3, 7, 6), (3, 3), (2, 2), (1, 1), False, True, 0),
    ("k3s2p1/exclude", (2, 3, 7, 6), (3, 3), (2, 2), (1, 1), False, False, 0),
    ("k3s2p1/ceil", (1, 2, 6, 6), (3, 3), (2, 2), (1, 1), True, True, 0),
    ("k3s2p1/ceil/exclude", (1, 2, 6, 6), (3, 3), (2, 2), (1, 1), True, False, 0),
    ("k2/divisor3", (1, 2, 5, 4), (2, 2), (2, 1), (1, 0), False, True, 3),
    ("nonsquare", (1, 1, 5, 8), (2, 4), (1, 3), (1, 2), True, False, 0),
]
ADAPTIVE = [("7x5->3x2", (2, 2, 7, 5), (3, 2)), ("4x4->4x4", (1, 2, 4, 4), (4, 4)), ("5x6->1x1", (1, 3, 5, 6), (1, 1)),
            ("3x3->5x4", (1, 1, 3, 3), (5, 4))]


def clean(t):
    """Flat values with NaN and -Inf as 0, and the indices of each."""
    v = flat(t)
    nan = [i for i, x in enumerate(v) if math.isnan(x)]
    neginf = [i for i, x in enumerate(v) if x == -math.inf]
    return [0.0 if (math.isnan(x) or math.isinf(x)) else x for x in v], nan, neginf


def run(f, x, gen, dt, square=True):
    """square: the loss is sum(G * out^2); else (inputs with NaN or -Inf)
    sum(G * out), whose input gradient is finite, and the HVP is zero."""
    x = x.clone().requires_grad_()
    out = f(x)
    g = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dt)
    loss = (g * out * out).sum() if square else (g * out).sum()
    (gx,) = torch.autograd.grad(loss, (x,), create_graph=True)
    v = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(dt)
    if square:
        (hx,) = torch.autograd.grad((gx * v).sum(), (x,))
    else:
        hx = torch.zeros_like(x)
    xi, xnan, xneg = clean(x)
    o, onan, oneg = clean(out)
    return {"input_shape": list(x.shape), "input": xi, "input_nan": xnan, "input_neginf": xneg,
            "grad_output": flat(g), "output_shape": list(out.shape), "output": o, "output_nan": onan,
            "output_neginf": oneg, "square": square, "grad_input": flat(gx), "v_input": flat(v), "hvp_input": flat(hx)}


def main():
    gen = torch.Generator().manual_seed(17)
    cases = []
    for dname, dt in DTYPES:
        rnd = lambda s: torch.randn(s, generator=gen, dtype=torch.float64).to(dt)
        for name, shp, k, s, p, d, ceil, special in MAX:
            x = rnd(shp)
            if special == "ties":
                x = torch.round(x * 2) / 2  # many equal values
            if special == "special":
                x = x.clone()
                x[0, 0, 0:2, 0:2] = -math.inf      # a window of -Inf
                x[0, 1, 0, 1] = math.nan           # a window with NaN
                x[0, 1, 1, 0] = math.nan           # two NaN in one window
                x[0, 0, 2, 3] = -math.inf
            c = run(lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode=ceil), x, gen, dt, special != "special")
            c.update({"name": f"{dname}/max_pool2d/{name}", "op": "max_pool2d", "dtype": dname, "kernel_size": list(k),
                      "stride": list(s), "padding": list(p), "dilation": list(d), "ceil_mode": ceil})
            cases.append(c)
        for name, shp, k, s, p, ceil, inc, div in AVG:
            c = run(lambda t: F.avg_pool2d(t, k, s, p, ceil_mode=ceil, count_include_pad=inc,
                                           divisor_override=div or None), rnd(shp), gen, dt)
            c.update({"name": f"{dname}/avg_pool2d/{name}", "op": "avg_pool2d", "dtype": dname, "kernel_size": list(k),
                      "stride": list(s), "padding": list(p), "dilation": [1, 1], "ceil_mode": ceil,
                      "count_include_pad": inc, "divisor_override": div})
            cases.append(c)
        for name, shp, out in ADAPTIVE:
            for op, f in [("adaptive_max_pool2d", F.adaptive_max_pool2d), ("adaptive_avg_pool2d", F.adaptive_avg_pool2d)]:
                c = run(lambda t: f(t, out), rnd(shp), gen, dt)
                c.update({"name": f"{dname}/{op}/{name}", "op": op, "dtype": dname, "output_size": list(out)})
                cases.append(c)
    write_json(OUT_PATH, {"torch": torch.__version__, "op": "pool", "cases": cases})


if __name__ == "__main__":
    main()
