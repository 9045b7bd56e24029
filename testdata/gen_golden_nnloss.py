#!/usr/bin/env python3
"""Generate golden values for nn.Softmax, LogSoftmax, CrossEntropy,
MSELoss and CrossEntropy's row LogSumExp (torch.nn.functional.softmax,
log_softmax, cross_entropy, mse_loss, torch.logsumexp): forward, first-order gradients of sum(G * out) and a
Hessian-vector product w.r.t. the first input.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_nnloss.py

Writes testdata/nnloss_golden.json.gz. Deterministic (fixed seed). Only
torch, math and golden_common.py are used.

JSON layout:

    {"torch": str, "op": "loss", "cases": [case, ...]}

    case = {
      "name": str, "op": "softmax" | "log_softmax" | "cross_entropy" | "mse_loss" | "smooth_l1_loss" | "bce_with_logits" | "logsumexp",
      "dtype": "float32" | "float64",
      "axis": int,                                    # softmax, log_softmax, logsumexp (1: rows of [N, C])
      "input_shape": [...], "input": [...],           # logits for cross_entropy
      "target_shape": [...], "target": [...],         # ints for cross_entropy, floats for mse_loss
      "weight": [...] | null, "ignore_index": int, "label_smoothing": float,
      "weight_shape": [...] | null, "pos_weight": [...] | null,   # bce_with_logits
      "beta": float,                                  # smooth_l1_loss
      "reduction": "mean" | "sum" | "none",
      "grad_output": [...],                           # G, shape == output_shape ([] for a scalar)
      "output_shape": [...], "output": [...],
      "grad_input": [...], "grad_weight": null,       # of sum(G * out), or of out·G for a scalar
                                                      # (torch cannot differentiate cross_entropy w.r.t. weight)
      "v_input": [...], "hvp_input": [...],           # d/d input <grad_input, v>
      "nan": {"output": [i...], "grad_input": [...], "hvp_input": [...]},  # NaN positions (written as 0)
              # and "input": [i...], "input_neg_inf": [i...], the input's NaN and −Inf positions (written as 0), where it has any
    }

Squared outputs (softmax, log_softmax, logsumexp but its "special" case)
use sum(G * out^2) so that the
second derivative is not only the op's own.
"""

import math
import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, normal, out_path, write_json  # noqa: E402

OUT_PATH = out_path("nnloss_golden.json.gz")


def enc(t):
    v = t.detach().double().reshape(-1).tolist()
    nan = [i for i, x in enumerate(v) if math.isnan(x)]
    return [0.0 if math.isnan(x) else x for x in v], nan


def run(name, op, dt, dname, x, f, extra, gen, square=False, wrt_weight=None):
    x = x.clone().requires_grad_()
    wrt = (x,) if wrt_weight is None else (x, wrt_weight)
    out = f(x)
    g = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dt)
    loss = (g * out * out).sum() if square else (g * out).sum()
    grads = torch.autograd.grad(loss, wrt, create_graph=True)
    v = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(dt)
    (hx,) = torch.autograd.grad((grads[0] * v).sum(), (x,))
    o, onan = enc(out)
    gi, ginan = enc(grads[0])
    h, hnan = enc(hx)
    c = {"name": f"{dname}/{op}/{name}", "op": op, "dtype": dname, "input_shape": list(x.shape), "input": enc(x)[0],
         "grad_output": enc(g)[0], "output_shape": list(out.shape), "output": o, "grad_input": gi,
         "grad_weight": enc(grads[1])[0] if wrt_weight is not None else None, "v_input": enc(v)[0], "hvp_input": h,
         "nan": {"output": onan, "grad_input": ginan, "hvp_input": hnan}, "square": square}
    xs = x.detach().double().reshape(-1).tolist()
    ninf, xnan = [i for i, v in enumerate(xs) if v == -math.inf], enc(x)[1]
    if ninf or xnan:  # JSON has no −Inf or NaN: the input holds 0 there
        c["input"] = [0.0 if i in ninf else v for i, v in enumerate(c["input"])]
        c["nan"]["input"], c["nan"]["input_neg_inf"] = xnan, ninf
    c.update(extra)
    return c


def main():
    gen = torch.Generator().manual_seed(19)
    cases = []
    for dname, dt in DTYPES:
        rnd = normal(gen, dt)
        for name, shape, axis, mag in [("3x5/axis1", (3, 5), 1, 1.0), ("2x3x4/axis1", (2, 3, 4), 1, 1.0),
                                       ("2x3x4/axis-1", (2, 3, 4), -1, 1.0), ("4x3/axis0", (4, 3), 0, 1.0),
                                       ("large", (2, 6), 1, 300.0), ("vector", (7,), 0, 1.0)]:
            for op, f in [("softmax", F.softmax), ("log_softmax", F.log_softmax)]:
                cases.append(run(name, op, dt, dname, rnd(*shape) * mag, lambda t: f(t, dim=axis), {"axis": axis}, gen, square=True))
        n, c = 6, 4
        targets = torch.tensor([0, 3, 1, 2, 3, 1])
        for name, tgt, use_w, ignore, ls, red in [
            ("mean", targets, False, -100, 0.0, "mean"),
            ("sum", targets, False, -100, 0.0, "sum"),
            ("none", targets, False, -100, 0.0, "none"),
            ("weight/mean", targets, True, -100, 0.0, "mean"),
            ("ignore-100", torch.tensor([0, -100, 1, 2, -100, 1]), False, -100, 0.0, "mean"),
            ("ignore2/weight", targets, True, 2, 0.0, "mean"),
            ("smoothing0.1", targets, False, -100, 0.1, "mean"),
            ("smoothing0.2/weight/ignore", torch.tensor([0, 3, -100, 2, 3, 1]), True, -100, 0.2, "mean"),
            ("smoothing0.3/sum", targets, False, -100, 0.3, "sum"),
            ("smoothing0.1/none/ignore", torch.tensor([0, 3, -100, 2, 3, 1]), False, -100, 0.1, "none"),
            ("all-ignored/mean", torch.tensor([-100] * 6), False, -100, 0.0, "mean"),
            ("all-ignored/sum", torch.tensor([-100] * 6), True, -100, 0.0, "sum"),
        ]:
            x = rnd(n, c)
            w = (torch.rand(c, generator=gen, dtype=torch.float64) + 0.5).to(dt) if use_w else None
            f = lambda t: F.cross_entropy(t, tgt, weight=w, ignore_index=ignore, label_smoothing=ls, reduction=red)
            extra = {"target_shape": [n], "target": tgt.tolist(), "weight": enc(w)[0] if use_w else None,
                     "ignore_index": ignore, "label_smoothing": ls, "reduction": red}
            cases.append(run(name, "cross_entropy", dt, dname, x, f, extra, gen))
        for red in ["mean", "sum", "none"]:
            y = rnd(3, 4)
            cases.append(run(red, "mse_loss", dt, dname, rnd(3, 4), lambda t: F.mse_loss(t, y, reduction=red),
                             {"target_shape": [3, 4], "target": enc(y)[0], "reduction": red}, gen))
        for beta, red in [(1.0, "mean"), (0.5, "sum"), (0.0, "none"), (2.0, "mean")]:
            y = rnd(3, 5)
            cases.append(run(f"beta{beta}/{red}", "smooth_l1_loss", dt, dname, rnd(3, 5) * 2,
                             lambda t: F.smooth_l1_loss(t, y, reduction=red, beta=beta),
                             {"target_shape": [3, 5], "target": enc(y)[0], "reduction": red, "beta": beta}, gen))
        for name, wshape, pw, red, mag in [("plain", None, False, "mean", 1.0), ("weight-c/pos", (4,), True, "sum", 1.0),
                                           ("weight-full", (3, 4), False, "none", 1.0), ("large", None, True, "mean", 40.0)]:
            y = torch.rand((3, 4), generator=gen, dtype=torch.float64).to(dt)
            w = (torch.rand(wshape, generator=gen, dtype=torch.float64) + 0.5).to(dt) if wshape else None
            p = (torch.rand(4, generator=gen, dtype=torch.float64) * 2 + 0.5).to(dt) if pw else None
            f = lambda t: F.binary_cross_entropy_with_logits(t, y, weight=w, pos_weight=p, reduction=red)
            extra = {"target_shape": [3, 4], "target": enc(y)[0], "reduction": red,
                     "weight": enc(w)[0] if w is not None else None, "weight_shape": list(wshape) if wshape else None,
                     "pos_weight": enc(p)[0] if p is not None else None}
            cases.append(run(name, "bce_with_logits", dt, dname, rnd(3, 4) * mag, f, extra, gen))
    # logsumexp after the other cases, so that theirs are unchanged. The
    # special rows: −Inf entries, a NaN, a huge value (finite results only:
    # JSON has no ±Inf; the infinite ones are in nn's internal tests).
    for dname, dt in DTYPES:
        rnd = normal(gen, dt)
        for name, x in [("3x5", rnd(3, 5)), ("large", rnd(2, 6) * 300), ("2x1000", rnd(2, 1000) * 3)]:
            cases.append(run(name, "logsumexp", dt, dname, x, lambda t: torch.logsumexp(t, dim=1), {"axis": 1}, gen, square=True))
        inf, big = math.inf, 3e38 if dt == torch.float32 else 1e300
        x = torch.tensor([[1.0, -inf, 2.0, 0.5], [math.nan, 1.0, 2.0, 0.0], [big, 1.0, -big, 2.0], [-inf, -inf, 0.25, -inf]], dtype=dt)
        cases.append(run("special", "logsumexp", dt, dname, x, lambda t: torch.logsumexp(t, dim=1), {"axis": 1}, gen))
    write_json(OUT_PATH, {"torch": torch.__version__, "op": "loss", "cases": cases})


if __name__ == "__main__":
    main()
