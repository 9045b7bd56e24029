#!/usr/bin/env python3
"""Generate golden values for gops' box functions (torchvision.ops.box_area,
box_convert, clip_boxes_to_image, box_iou, generalized_box_iou,
distance_box_iou, complete_box_iou, generalized_box_iou_loss,
distance_box_iou_loss, complete_box_iou_loss, sigmoid_focal_loss, nms,
batched_nms, remove_small_boxes).

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_boxops.py

Writes testdata/boxops_golden.json.gz. Deterministic (fixed seed). Only
torch, torchvision, math and golden_common.py are used.

JSON layout:

    {"torch": str, "torchvision": str, "cases": [case, ...]}

    differentiable ops:
    case = {
      "name": str, "dtype": "float32" | "float64",
      "op": "box_area" | "box_convert" | "clip_boxes_to_image" | "box_iou" |
            "generalized_box_iou" | "distance_box_iou" | "complete_box_iou" |
            "generalized_box_iou_loss" | "distance_box_iou_loss" |
            "complete_box_iou_loss" | "sigmoid_focal_loss",
      "in_fmt": str, "out_fmt": str,                    # box_convert
      "size": [h, w],                                   # clip_boxes_to_image
      "eps": float, "reduction": str,                   # IoU functions and losses
      "alpha": float, "gamma": float,                   # sigmoid_focal_loss
      "shape1": [...], "x1": [...],                     # boxes1 (or boxes, or focal inputs)
      "shape2": [...] | null, "x2": [...] | null,       # boxes2 (or focal targets)
      "output_shape": [...], "output": [...],           # [] for a scalar
      "grad_output": [...],                             # G
      "grad1": [...], "grad2": [...] | null,            # of sum(G * out)
      "v1": [...], "v2": [...] | null,
      "hvp1": [...], "hvp2": [...] | null,              # of <grad1, v1> + <grad2, v2>
      "nan": {"output": [i...], "grad1": [...], "grad2": [...], "hvp1": [...], "hvp2": [...]},
                                                        # NaN positions (written as 0); ±Inf as ±1e308
      "exact_output": [...], "exact_grad1": [...]       # only focal large-logit cases with gamma 0:
    }                                                   # exact float64 values (exact_focal)

    selection ops:
    case = {"name": str, "dtype": str, "op": "nms" | "batched_nms" | "remove_small_boxes",
            "boxes_shape": [K, 4], "boxes": [...], "scores": [...], "idxs": [...],
            "iou_threshold": float, "min_size": float, "keep": [int...]}

Box sets cover identical, disjoint, touching, contained, zero-area, inverted
and large boxes, and (degenerate cases) every pair of zero-width,
zero-height, point and inverted zero boxes; focal cases include large
|logits| with hard targets; NMS cases cover ties in scores, IoU exactly at the
threshold (in float32 and float64: 0.3 is 0.30000001192... in float32,
above the threshold 0.3), NaN scores, the two batched_nms strategies and no
boxes.
"""

import math
import sys

import torch
import torchvision
from torchvision import ops

# ±Inf is written as ±1e308 (JSON has no infinity).
INF = 1e308

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, out_path, write_json  # noqa: E402

OUT_PATH = out_path("boxops_golden.json.gz")


def enc(t):
    v = t.detach().double().reshape(-1).tolist()
    v = [math.copysign(INF, x) if math.isinf(x) else x for x in v]
    return [0.0 if math.isnan(x) else x for x in v], [i for i, x in enumerate(v) if math.isnan(x)]


def corner_boxes():
    # identical (0 and 1), disjoint (2), touching 0 at x = 4 (3), contained
    # in 0 (4), zero-area (5), inverted (6), large coordinates (7).
    return [[0.5, 1.0, 4.0, 3.5], [0.5, 1.0, 4.0, 3.5], [10.0, 11.0, 13.0, 15.0], [4.0, 1.5, 6.0, 3.0],
            [1.0, 1.5, 2.5, 3.0], [2.0, 2.0, 2.0, 3.0], [3.0, 2.5, 1.0, 1.25],
            [1.0e4, 2.0e4, 1.0e4 + 37.0, 2.0e4 + 21.0]]


def generic_boxes(n, gen, scale=10.0):
    p = torch.rand(n, 2, generator=gen, dtype=torch.float64) * scale
    s = torch.rand(n, 2, generator=gen, dtype=torch.float64) * scale * 0.6 + 0.5
    return torch.cat([p, p + s], dim=1)


def run(name, op, dt, dname, f, x1, x2, gen, extra, wrt2=True):
    x1 = x1.to(dt).clone().requires_grad_()
    wrt = [x1]
    if x2 is not None:
        x2 = x2.to(dt).clone().requires_grad_(wrt2)
        if wrt2:
            wrt.append(x2)
    out = f(x1, x2)
    g = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dt)
    c = {"name": f"{dname}/{op}/{name}", "op": op, "dtype": dname, "shape1": list(x1.shape), "x1": enc(x1)[0],
         "shape2": list(x2.shape) if x2 is not None else None, "x2": enc(x2)[0] if x2 is not None else None,
         "output_shape": list(out.shape), "grad_output": enc(g)[0]}
    c.update(extra)
    o, onan = enc(out)
    c["output"], c["nan"] = o, {"output": onan}
    if out.numel() == 0 or not out.requires_grad:
        return c
    grads = torch.autograd.grad((g * out).sum(), wrt, create_graph=True, allow_unused=True)
    grads = [torch.zeros_like(w) if gr is None else gr for w, gr in zip(wrt, grads)]
    vs = [torch.randn(w.shape, generator=gen, dtype=torch.float64).to(dt) for w in wrt]
    s = sum((gr * v).sum() for gr, v in zip(grads, vs))
    if s.requires_grad:
        hs = torch.autograd.grad(s, wrt, allow_unused=True)
        hs = [torch.zeros_like(w) if h is None else h for w, h in zip(wrt, hs)]
    else:
        hs = [torch.zeros_like(w) for w in wrt]
    for k, (gr, v, h) in enumerate(zip(grads, vs, hs)):
        c[f"grad{k + 1}"], c["nan"][f"grad{k + 1}"] = enc(gr)
        c[f"v{k + 1}"] = enc(v)[0]
        c[f"hvp{k + 1}"], c["nan"][f"hvp{k + 1}"] = enc(h)
    return c


def differentiable_cases(gen):
    cases = []
    corners = torch.tensor(corner_boxes(), dtype=torch.float64)
    # boxes2 for the pairwise functions: no zero-area box (a zero-area pair
    # has a zero union: NaN, which would poison whole gradient rows).
    corners2 = torch.cat([corners[[0, 2, 3, 4, 6, 7]], generic_boxes(2, gen)])
    generic1, generic2 = generic_boxes(5, gen), generic_boxes(4, gen)
    for dname, dt in DTYPES:
        for bname, b in [("corners", corners), ("generic", generic1)]:
            cases.append(run(bname, "box_area", dt, dname, lambda a, _: ops.box_area(a), b, None, gen, {}))
            for fi in ["xyxy", "xywh", "cxcywh"]:
                for fo in ["xyxy", "xywh", "cxcywh"]:
                    cases.append(run(f"{bname}/{fi}-{fo}", "box_convert", dt, dname,
                                     lambda a, _, fi=fi, fo=fo: ops.box_convert(a, fi, fo), b, None, gen,
                                     {"in_fmt": fi, "out_fmt": fo}))
        clip = torch.tensor([[-3.0, 2.0, 12.5, 25.0], [0.0, 0.0, 30.0, 20.0], [5.5, -1.0, 31.0, 7.0],
                             [40.0, 30.0, 50.0, 45.0], [10.0, 5.0, 8.0, 4.0]], dtype=torch.float64)
        cases.append(run("bounds", "clip_boxes_to_image", dt, dname, lambda a, _: ops.clip_boxes_to_image(a, (20, 30)),
                         clip, None, gen, {"size": [20, 30]}))
        pairwise = [("box_iou", lambda a, b, eps: ops.box_iou(a, b)),
                    ("generalized_box_iou", lambda a, b, eps: ops.generalized_box_iou(a, b)),
                    ("distance_box_iou", lambda a, b, eps: ops.distance_box_iou(a, b, eps)),
                    ("complete_box_iou", lambda a, b, eps: ops.complete_box_iou(a, b, eps))]
        for op, f in pairwise:
            for bname, a, b in [("corners", corners, corners2), ("generic", generic1, generic2)]:
                for eps in ([1e-7, 0.5] if op in ("distance_box_iou", "complete_box_iou") else [1e-7]):
                    cases.append(run(f"{bname}/eps={eps}", op, dt, dname, lambda x, y, f=f, eps=eps: f(x, y, eps),
                                     a, b, gen, {"eps": eps}))
            cases.append(run("empty", op, dt, dname, lambda x, y, f=f: f(x, y, 1e-7), torch.zeros(0, 4),
                             generic2, gen, {"eps": 1e-7}))
        # loss pairs: identical, disjoint, touching, contained, zero-area vs
        # normal, inverted vs normal, large, generic.
        la = torch.cat([corners[[0, 0, 0, 0, 5, 6, 7]], generic_boxes(3, gen)])
        lb = torch.cat([corners[[1, 2, 3, 4, 0, 0]], torch.tensor([[1.0e4 + 3, 2.0e4 - 2, 1.0e4 + 30, 2.0e4 + 25]],
                                                                   dtype=torch.float64), generic_boxes(3, gen)])
        losses = [("generalized_box_iou_loss", ops.generalized_box_iou_loss),
                  ("distance_box_iou_loss", ops.distance_box_iou_loss),
                  ("complete_box_iou_loss", ops.complete_box_iou_loss)]
        for op, f in losses:
            for red in ["none", "mean", "sum"]:
                for eps in [1e-7, 0.25]:
                    cases.append(run(f"pairs/{red}/eps={eps}", op, dt, dname,
                                     lambda x, y, f=f, red=red, eps=eps: f(x, y, red, eps), la, lb, gen,
                                     {"reduction": red, "eps": eps}))
                cases.append(run(f"empty/{red}", op, dt, dname, lambda x, y, f=f, red=red: f(x, y, red, 1e-7),
                                 torch.zeros(0, 4), torch.zeros(0, 4), gen, {"reduction": red, "eps": 1e-7}))
        logits = torch.randn(3, 5, generator=gen, dtype=torch.float64) * 3
        targets = (torch.rand(3, 5, generator=gen, dtype=torch.float64) > 0.5).double()
        targets[0, :2] = torch.tensor([0.3, 0.8], dtype=torch.float64)  # soft labels
        for alpha, gamma in [(0.25, 2.0), (-1.0, 0.0), (0.5, 1.5), (0.75, 1.0), (0.25, 3.0)]:
            for red in ["none", "mean", "sum"]:
                cases.append(run(f"alpha={alpha}/gamma={gamma}/{red}", "sigmoid_focal_loss", dt, dname,
                                 lambda x, t, alpha=alpha, gamma=gamma, red=red: ops.sigmoid_focal_loss(x, t, alpha, gamma, red),
                                 logits, targets, gen, {"alpha": alpha, "gamma": gamma, "reduction": red}))
        for red in ["none", "mean", "sum"]:
            cases.append(run(f"empty/{red}", "sigmoid_focal_loss", dt, dname,
                             lambda x, t, red=red: ops.sigmoid_focal_loss(x, t, 0.25, 2.0, red),
                             torch.zeros(0, 3), torch.zeros(0, 3), gen, {"alpha": 0.25, "gamma": 2.0, "reduction": red}))
    return cases


def degenerate_boxes():
    # inverted with zero height (the reviewer's [2, 0, 0, 0]), a point at the
    # origin, zero height, a point, zero width, inverted with zero height,
    # inverted with zero width, and two normal boxes.
    return torch.tensor([[2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 3.0, 2.0, 3.0], [2.0, 1.0, 2.0, 1.0],
                         [1.0, 0.0, 1.0, 2.0], [3.0, 2.0, 1.0, 2.0], [1.0, 3.0, 1.0, 0.5], [0.0, 0.0, 1.0, 1.0],
                         [3.0, 1.0, 4.0, 2.0]], dtype=torch.float64)


def degenerate_cases(gen):
    """Zero-width, zero-height and inverted zero boxes: divisions 0/0 and
    x/0 (NaN and ±Inf), in values and derivatives. Added after the other
    cases, with their own generator, so that those stay as they were."""
    cases = []
    d = degenerate_boxes()
    k = d.shape[0]
    # every ordered pair of boxes, for the losses (row i of boxes1 with row i of boxes2)
    la, lb = d.repeat_interleave(k, dim=0), d.repeat(k, 1)
    for dname, dt in DTYPES:
        for op, f in [("box_iou", lambda a, b, eps: ops.box_iou(a, b)),
                      ("generalized_box_iou", lambda a, b, eps: ops.generalized_box_iou(a, b)),
                      ("distance_box_iou", lambda a, b, eps: ops.distance_box_iou(a, b, eps)),
                      ("complete_box_iou", lambda a, b, eps: ops.complete_box_iou(a, b, eps))]:
            # all pairs (mostly NaN: a zero union), and each degenerate box
            # with the normal ones only, so that the gradient rows are not
            # all poisoned by the NaN pairs.
            for bname, a, b in [("degenerate", d, d), ("degenerate-normal", d, d[7:]), ("normal-degenerate", d[7:], d)]:
                cases.append(run(f"{bname}/eps=1e-07", op, dt, dname, lambda x, y, f=f: f(x, y, 1e-7), a, b, gen,
                                 {"eps": 1e-7}))
        for op, f in [("generalized_box_iou_loss", ops.generalized_box_iou_loss),
                      ("distance_box_iou_loss", ops.distance_box_iou_loss),
                      ("complete_box_iou_loss", ops.complete_box_iou_loss)]:
            for red in ["none", "sum"]:
                cases.append(run(f"degenerate/{red}/eps=1e-07", op, dt, dname,
                                 lambda x, y, f=f, red=red: f(x, y, red, 1e-7), la, lb, gen,
                                 {"reduction": red, "eps": 1e-7}))
    return cases


def exact_focal(x, t, alpha):
    """sigmoid_focal_loss with gamma 0 in float64 without cancellation:
    alpha_t * ((1 - t) * softplus(x) + t * softplus(-x)), softplus(z) =
    max(z, 0) + log1p(exp(-|z|)); torch's own binary_cross_entropy_with_logits
    computes (1 - t) * x + log(exp(-m) + exp(-x - m)), which loses the
    small losses of confident correct logits (float32: 1 % at x = 12)."""
    def sp(z):
        return z.clamp_min(0) + torch.log1p(torch.exp(-z.abs()))
    ce = (1 - t) * sp(x) + t * sp(-x)
    if alpha >= 0:
        ce = (alpha * t + (1 - alpha) * (1 - t)) * ce
    return ce


def focal_precision_cases(gen):
    """Large |logits| with hard targets (and one soft row): besides torch's
    values, exact_output and exact_grad1 hold the exact loss and its
    gradient in the logits (float64, on the case's rounded inputs), which
    the Go result must match to a few ulps of its dtype."""
    cases = []
    xs = [12.02, -12.02, 20.0, -20.0, 30.0, -30.0, 50.0, -50.0, 90.0, -90.0, 0.5, -3.0]
    logits = torch.tensor([xs, xs, xs], dtype=torch.float64)
    targets = torch.tensor([[1.0] * len(xs), [0.0] * len(xs), [0.25] * len(xs)], dtype=torch.float64)
    for dname, dt in DTYPES:
        for alpha, gamma in [(0.25, 0.0), (-1.0, 0.0), (0.25, 2.0)]:
            for red in ["none", "sum"]:
                c = run(f"large-logits/alpha={alpha}/gamma={gamma}/{red}", "sigmoid_focal_loss", dt, dname,
                        lambda x, t, alpha=alpha, gamma=gamma, red=red: ops.sigmoid_focal_loss(x, t, alpha, gamma, red),
                        logits, targets, gen, {"alpha": alpha, "gamma": gamma, "reduction": red})
                if gamma == 0.0:
                    x = logits.to(dt).double().requires_grad_()
                    t = targets.to(dt).double()
                    loss = exact_focal(x, t, alpha)
                    if red == "sum":
                        loss = loss.sum()
                    g = torch.tensor(c["grad_output"], dtype=torch.float64).reshape(loss.shape)
                    (gx,) = torch.autograd.grad((g * loss).sum(), [x])
                    c["exact_output"], c["exact_grad1"] = enc(loss)[0], enc(gx)[0]
                cases.append(c)
    return cases


def selection_case(name, op, dname, boxes, scores=None, idxs=None, thr=0.0, min_size=0.0):
    if op == "nms":
        keep = ops.nms(boxes, scores, thr)
    elif op == "batched_nms":
        keep = ops.batched_nms(boxes, scores, idxs, thr)
    else:
        keep = ops.remove_small_boxes(boxes, min_size)
    return {"name": f"{dname}/{op}/{name}", "op": op, "dtype": dname, "boxes_shape": list(boxes.shape),
            "boxes": boxes.double().reshape(-1).tolist(),
            "scores": enc(scores)[0] if scores is not None else None,
            "scores_nan": enc(scores)[1] if scores is not None else None,
            "idxs": idxs.tolist() if idxs is not None else None,
            "iou_threshold": thr, "min_size": min_size, "keep": keep.tolist()}


def random_detections(n, gen, dt, size=200.0, ties=False):
    xy = torch.rand(n, 2, generator=gen, dtype=torch.float64) * size
    wh = torch.rand(n, 2, generator=gen, dtype=torch.float64) * size * 0.2 + 1
    boxes = torch.cat([xy, xy + wh], dim=1).to(dt)
    scores = torch.rand(n, generator=gen, dtype=torch.float64)
    if ties:
        scores = (scores * 5).floor() / 5
    return boxes, scores.to(dt)


def selection_cases(gen):
    cases = []
    for dname, dt in DTYPES:
        for n, ties in [(60, False), (300, True), (1200, True)]:
            b, s = random_detections(n, gen, dt, ties=ties)
            for thr in ([0.0, 0.3, 0.5, 0.7, 1.0] if n < 1000 else [0.5]):
                cases.append(selection_case(f"random{n}/ties={ties}/thr={thr}", "nms", dname, b, s, thr=thr))
        # IoU exactly at the threshold: 1/2 (exact in both dtypes) and 3/10
        # (0.3 in float32 is above the float64 threshold 0.3).
        at = torch.tensor([[0, 0, 2, 1], [0, 0, 1, 1], [10, 10, 20, 20], [10, 10, 20, 13], [30, 30, 40, 40],
                           [30, 30, 40, 40]], dtype=dt)
        sc = torch.tensor([0.9, 0.8, 0.7, 0.6, 0.5, 0.5], dtype=dt)
        for thr in [0.5, 0.3, 0.29999999, 0.30000001, 1.0 / 3.0]:
            cases.append(selection_case(f"at-threshold/thr={thr}", "nms", dname, at, sc, thr=thr))
        nan_scores = torch.tensor([0.5, float("nan"), 0.9, 0.1, float("nan")], dtype=dt)
        nb = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 1], [0.1, 0, 1, 1], [5, 5, 6, 6], [5, 5, 6, 6.5]], dtype=dt)
        cases.append(selection_case("nan-scores", "nms", dname, nb, nan_scores, thr=0.5))
        cases.append(selection_case("empty", "nms", dname, torch.zeros(0, 4, dtype=dt), torch.zeros(0, dtype=dt), thr=0.5))
        for n, ties in [(80, True), (400, False), (1500, False)]:
            b, s = random_detections(n, gen, dt, ties=ties)
            idxs = torch.randint(0, 4, (n,), generator=gen)
            for thr in ([0.3, 0.6] if n < 1000 else [0.5]):
                cases.append(selection_case(f"random{n}/ties={ties}/thr={thr}", "batched_nms", dname, b, s, idxs, thr=thr))
        cases.append(selection_case("empty", "batched_nms", dname, torch.zeros(0, 4, dtype=dt), torch.zeros(0, dtype=dt),
                                    torch.zeros(0, dtype=torch.int64), thr=0.5))
        rb = torch.tensor([[0, 0, 1, 1], [0, 0, 0.5, 3], [2, 2, 1, 5], [0, 0, 0.1, 0.1], [3, 3, 3.1, 3.3],
                           [0, 0, 10, 10]], dtype=dt)
        for m in [0.0, 0.1, 0.5, 1.0, 2.0]:
            cases.append(selection_case(f"min={m}", "remove_small_boxes", dname, rb, min_size=m))
        cases.append(selection_case("empty", "remove_small_boxes", dname, torch.zeros(0, 4, dtype=dt), min_size=1.0))
    return cases


def main():
    gen = torch.Generator().manual_seed(14)
    cases = differentiable_cases(gen) + selection_cases(gen)
    gen2 = torch.Generator().manual_seed(15)
    cases += degenerate_cases(gen2) + focal_precision_cases(gen2)
    write_json(OUT_PATH, {"torch": torch.__version__, "torchvision": torchvision.__version__, "cases": cases})


if __name__ == "__main__":
    main()
