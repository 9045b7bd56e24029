#!/usr/bin/env python3
"""Generate golden values for nn.Linear (torch.nn.functional.linear) and for
nn's initialisers (torch.nn.init and the reset_parameters of torch.nn.Linear
and torch.nn.Conv2d).

Run from the repository root with Debian's Python (torch 1.13, CPU):

    /usr/bin/python3 scripts/gen_linear_golden.py

Writes testdata/linear_golden.json.gz and testdata/init_golden.json.gz
(deterministic: fixed seeds, gzip without a time stamp). Only torch and
testdata/golden_common.py are used.

linear_golden.json.gz:

    {"torch": str, "op": "linear", "cases": [case, ...]}

    case = {
      "name": str, "dtype": "float32" | "float64",
      "x_shape": [...], "x": [...],            # flat, row-major
      "weight_shape": [out, in], "weight": [...],
      "bias": [...] | null,                    # [out], null: no bias
      "grad_output": [...],                    # G, shape == output_shape
      "output_shape": [...], "output": [...],  # F.linear(x, weight, bias)
      "grad_x": [...], "grad_weight": [...], "grad_bias": [...] | null,
                                               # of L = sum(G * out^2)
      "v_x": [...], "v_weight": [...], "v_bias": [...] | null,
      "hvp_x": [...], "hvp_weight": [...], "hvp_bias": [...] | null,
                                               # d/d(x, weight, bias) of
                                               # <grads, v> (double backward)
    }

init_golden.json.gz:

    {"torch": str, "fans": [fan, ...], "gains": [gain, ...],
     "bounds": [bound, ...], "modules": [module, ...]}

    fan    = {"shape": [...], "fan_in": int, "fan_out": int}
             (torch.nn.init._calculate_fan_in_and_fan_out; shapes of rank >= 2)
    gain   = {"nonlinearity": str, "param": float | null, "gain": float}
             (calculate_gain; param null is torch's default)
    bound  = {"init": "kaiming_uniform" | "kaiming_normal" | "xavier_uniform"
                      | "xavier_normal" | "trunc_normal",
              "shape": [...], "a": float, "mode": str, "nonlinearity": str,
              "gain": float, "mean": float, "std": float, "lo": float, "hi": float,
              "bound": float,           # uniform: the half-width torch draws in;
                                        # normal: the standard deviation
              "sample_mean": float, "sample_var": float,
              "sample_min": float, "sample_max": float}
             (bound from torch's own fan and gain functions and formulas;
              sample_* of torch's draw into a tensor of the shape)
    module = {"module": "linear" | "conv2d", "in": int, "out": int,
              "kernel": [kh, kw], "groups": int,
              "weight_shape": [...], "weight_bound": float, "bias_bound": float,
              "weight_max": float, "bias_max": float, "weight_var": float}
             (torch.nn.Linear / Conv2d's reset_parameters: the bounds from
              its formulas, max |w|, max |b| and var(w) of torch's draw)
"""

import math
import os
import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
from golden_common import DTYPES, flat, normal, out_path, write_compact  # noqa: E402

import torch.nn.functional as F  # noqa: E402
import torch.nn.init as init  # noqa: E402

# (name, x shape, out, bias): sizes 1, batch 0, no bias, 1-D and 3-D x.
LINEAR_SHAPES = [
    ("4x3->5", [4, 3], 5, True),
    ("4x3->5/nobias", [4, 3], 5, False),
    ("in1", [3, 1], 2, True),
    ("out1", [3, 4], 1, True),
    ("n1", [1, 4], 3, True),
    ("n0", [0, 4], 3, True),
    ("n0/nobias", [0, 4], 3, False),
    ("1d", [3], 2, True),
    ("1d/nobias", [4], 3, False),
    ("3d", [2, 3, 4], 5, True),
    ("7x13->9", [7, 13], 9, True),
]


def linear_cases():
    gen = torch.Generator().manual_seed(27)
    cases = []
    for dname, dt in DTYPES:
        rnd = normal(gen, dt)
        for name, xs, out, has_bias in LINEAR_SHAPES:
            fin = xs[-1]
            x = rnd(*xs).requires_grad_()
            w = rnd(out, fin).requires_grad_()
            b = rnd(out).requires_grad_() if has_bias else None
            y = F.linear(x, w, b)
            g = rnd(*y.shape)
            params = [x, w] + ([b] if has_bias else [])
            grads = torch.autograd.grad((g * y * y).sum(), params, create_graph=True)
            vs = [rnd(*p.shape) for p in params]
            h = sum((gr * v).sum() for gr, v in zip(grads, vs))
            hvp = torch.autograd.grad(h, params, allow_unused=True)
            hvp = [torch.zeros_like(p) if hv is None else hv for p, hv in zip(params, hvp)]
            opt = lambda lst: flat(lst[2]) if has_bias else None  # noqa: E731
            cases.append({
                "name": f"{dname}/{name}", "dtype": dname,
                "x_shape": xs, "x": flat(x), "weight_shape": [out, fin], "weight": flat(w),
                "bias": flat(b), "grad_output": flat(g),
                "output_shape": list(y.shape), "output": flat(y),
                "grad_x": flat(grads[0]), "grad_weight": flat(grads[1]), "grad_bias": opt(grads),
                "v_x": flat(vs[0]), "v_weight": flat(vs[1]), "v_bias": opt(vs),
                "hvp_x": flat(hvp[0]), "hvp_weight": flat(hvp[1]), "hvp_bias": opt(hvp),
            })
    return cases


FAN_SHAPES = [[3, 5], [1, 1], [7, 2, 3], [16, 3, 5, 5], [8, 4, 3, 3], [2, 3, 4, 5, 6], [0, 4], [4, 0, 3, 3]]

GAINS = [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None),
         ("conv_transpose1d", None), ("conv_transpose2d", None), ("conv_transpose3d", None),
         ("sigmoid", None), ("tanh", None), ("relu", None), ("leaky_relu", None),
         ("leaky_relu", 0.0), ("leaky_relu", 0.2), ("leaky_relu", math.sqrt(5)), ("selu", None)]

# The distribution cases: torch's draws, large enough for sample statistics.
BOUND_SHAPES = [[512, 256], [64, 32, 3, 3]]


def sample_stats(t):
    t = t.double()
    return {"sample_mean": t.mean().item(), "sample_var": t.var(unbiased=False).item(),
            "sample_min": t.min().item(), "sample_max": t.max().item()}


def bounds():
    torch.manual_seed(5)
    out = []
    for shape in BOUND_SHAPES:
        fin, fout = init._calculate_fan_in_and_fan_out(torch.empty(shape))
        for a, mode, nl in [(0.0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"),
                            (0.0, "fan_out", "relu"), (0.1, "fan_out", "leaky_relu"), (0.0, "fan_in", "tanh")]:
            fan = init._calculate_correct_fan(torch.empty(shape), mode)
            gain = init.calculate_gain(nl, a)
            std = gain / math.sqrt(fan)
            for kind in ("kaiming_uniform", "kaiming_normal"):
                t = torch.empty(shape, dtype=torch.float64)
                getattr(init, kind + "_")(t, a=a, mode=mode, nonlinearity=nl)
                b = math.sqrt(3.0) * std if kind == "kaiming_uniform" else std
                out.append(dict({"init": kind, "shape": shape, "a": a, "mode": mode, "nonlinearity": nl,
                                 "gain": gain, "mean": 0.0, "std": std, "lo": 0.0, "hi": 0.0, "bound": b},
                                **sample_stats(t)))
        for gain in (1.0, 5.0 / 3):
            std = gain * math.sqrt(2.0 / float(fin + fout))
            for kind in ("xavier_uniform", "xavier_normal"):
                t = torch.empty(shape, dtype=torch.float64)
                getattr(init, kind + "_")(t, gain=gain)
                b = math.sqrt(3.0) * std if kind == "xavier_uniform" else std
                out.append(dict({"init": kind, "shape": shape, "a": 0.0, "mode": "", "nonlinearity": "",
                                 "gain": gain, "mean": 0.0, "std": std, "lo": 0.0, "hi": 0.0, "bound": b},
                                **sample_stats(t)))
        for mean, std, lo, hi in [(0.0, 1.0, -2.0, 2.0), (0.5, 0.02, 0.47, 0.56)]:
            t = torch.empty(shape, dtype=torch.float64)
            init.trunc_normal_(t, mean=mean, std=std, a=lo, b=hi)
            out.append(dict({"init": "trunc_normal", "shape": shape, "a": 0.0, "mode": "", "nonlinearity": "",
                             "gain": 0.0, "mean": mean, "std": std, "lo": lo, "hi": hi, "bound": std},
                            **sample_stats(t)))
    return out


def modules():
    torch.manual_seed(6)
    out = []
    for kind, fin, fout, kernel, groups in [("linear", 784, 256, [1, 1], 1), ("linear", 3, 1000, [1, 1], 1),
                                            ("conv2d", 16, 32, [3, 3], 1), ("conv2d", 32, 64, [5, 3], 4),
                                            ("conv2d", 64, 64, [3, 3], 64)]:
        torch.manual_seed(6)
        if kind == "linear":
            m = torch.nn.Linear(fin, fout, dtype=torch.float64)
        else:
            m = torch.nn.Conv2d(fin, fout, kernel, groups=groups, dtype=torch.float64)
        w, b = m.weight.detach(), m.bias.detach()
        # reset_parameters: kaiming_uniform_(w, a=sqrt(5)), then the bias in
        # U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
        fan_in, _ = init._calculate_fan_in_and_fan_out(w)
        gain = init.calculate_gain("leaky_relu", math.sqrt(5))
        out.append({"module": kind, "in": fin, "out": fout, "kernel": kernel, "groups": groups,
                    "weight_shape": list(w.shape), "weight_bound": math.sqrt(3.0) * gain / math.sqrt(fan_in),
                    "bias_bound": 1 / math.sqrt(fan_in), "weight_max": w.abs().max().item(),
                    "bias_max": b.abs().max().item(), "weight_var": w.var(unbiased=False).item()})
    return out


def main():
    cases = linear_cases()
    n = write_compact(out_path("linear_golden.json.gz"), {"torch": torch.__version__, "op": "linear", "cases": cases})
    print(f"wrote {len(cases)} cases ({n} bytes json) to testdata/linear_golden.json.gz")
    fans = []
    for s in FAN_SHAPES:
        fin, fout = init._calculate_fan_in_and_fan_out(torch.empty(s))
        fans.append({"shape": s, "fan_in": fin, "fan_out": fout})
    gains = [{"nonlinearity": nl, "param": p, "gain": float(init.calculate_gain(nl, p))} for nl, p in GAINS]
    doc = {"torch": torch.__version__, "fans": fans, "gains": gains, "bounds": bounds(), "modules": modules()}
    n = write_compact(out_path("init_golden.json.gz"), doc)
    print(f"wrote {len(fans)} fans, {len(gains)} gains, {len(doc['bounds'])} bounds, "
          f"{len(doc['modules'])} modules ({n} bytes json) to testdata/init_golden.json.gz")


if __name__ == "__main__":
    main()
