#!/usr/bin/env python3
"""Golden second-order MAML steps through torchvision's Faster R-CNN, the
model whose double backward torchvision refuses ("double backwards on
roi_align not supported"), for detection/rcnnmaml_golden_test.go.

torchvision's roi_align has no double backward, so the reference replaces
it, inside MultiScaleRoIAlign (torchvision.ops.poolers.roi_align), by
roi_align_torch below: torchvision's CPU algorithm (aligned=False) written
with differentiable torch ops (a gather of the four neighbours of each
sampling point, weighted). Before use it is checked against torchvision's
roi_align, forward and first-order gradient w.r.t. the features, to 1e-12
on random maps and RoIs (below one pixel, beyond the map). roi_align_vec
is the same vectorised over the RoIs, checked alike: the benchmarks'
reference.

The tiny Faster R-CNN of scripts/gen_detection_fasterrcnn_losses.py
(float64, train mode, trainable_layers=3's freezing), a support batch
and a query batch of two formula images with ground truth of that
script's cases, one inner SGD step of step size ALPHA on the support
loss (the sum of the loss dict), the query loss at the adapted
parameters (functional_call) and its meta-gradients w.r.t. every
trainable parameter: second order (double backward through the inner
gradient) and first order (the inner gradient a constant). The samplers'
torch.randperm draws are recorded per loss evaluation (the support's and
the query's; the first-order query replays the query's) so the Go test
replays them.

Writes testdata/detection/fasterrcnn_maml.json.gz. Run from the
repository root: /usr/bin/python3 scripts/gen_detection_fasterrcnn_maml.py
"""

import math
import os
import sys

import torch
import torchvision
from torch.nn.utils.stateless import functional_call

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_detection_fasterrcnn_losses as fl  # noqa: E402  (model, cases, recording randperm)
import gen_detection_losses as gl  # noqa: E402
import golden_common as gc  # noqa: E402

ALPHA = 0.01
SUPPORT, QUERY = "many", "duplicates"
SUPPORT_SEED, QUERY_SEED = 0.5, 1.75


def roi_align_torch(input, rois, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """torchvision.ops.roi_align (its CPU kernel's arithmetic) from
    differentiable torch ops; rois [K, 5] (batch index, x1, y1, x2, y2),
    constants. Differentiable to every order w.r.t. input."""
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    ph, pw = output_size
    n, c, height, width = input.shape
    out = []
    for r in rois.detach().tolist():
        b = int(r[0])
        off = 0.5 if aligned else 0.0
        x1, y1, x2, y2 = (v * spatial_scale - off for v in r[1:])
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / ph)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / pw)
        count = max(gh * gw, 1)
        idx, wts = [[], [], [], []], [[], [], [], []]
        for py in range(ph):
            for px in range(pw):
                for iy in range(gh):
                    y = y1 + py * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        x = x1 + px * bw + (ix + 0.5) * bw / gw
                        if y < -1.0 or y > height or x < -1.0 or x > width:
                            corners, ws = [(0, 0)] * 4, [0.0] * 4
                        else:
                            yy, xx = max(y, 0.0), max(x, 0.0)
                            yl, xl = int(yy), int(xx)
                            if yl >= height - 1:
                                yh = yl = height - 1
                                yy = float(yl)
                            else:
                                yh = yl + 1
                            if xl >= width - 1:
                                xh = xl = width - 1
                                xx = float(xl)
                            else:
                                xh = xl + 1
                            ly, lx = yy - yl, xx - xl
                            hy, hx = 1.0 - ly, 1.0 - lx
                            corners = [(yl, xl), (yl, xh), (yh, xl), (yh, xh)]
                            ws = [hy * hx, hy * lx, ly * hx, ly * lx]
                        for j in range(4):
                            idx[j].append(corners[j][0] * width + corners[j][1])
                            wts[j].append(ws[j])
        flat = input[b].reshape(c, height * width)
        acc = 0
        for j in range(4):
            w = torch.tensor(wts[j], dtype=input.dtype)
            acc = acc + flat[:, torch.tensor(idx[j])] * w
        out.append(acc.reshape(c, ph, pw, gh * gw).sum(-1) / count)
    if not out:
        return input.new_zeros((0, c, ph, pw))
    return torch.stack(out)


def roi_align_vec(input, rois, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """roi_align_torch vectorised over the RoIs and sample points (for a
    fixed sampling_ratio > 0, as MultiScaleRoIAlign's 2): the sample
    coordinates and bilinear weights as tensors, the four neighbours of
    every sample gathered from the channels-last map at once. The same
    arithmetic as torchvision's kernel (weights factorise into a y and an
    x part, each zero outside [-1, size]); differentiable to every order
    w.r.t. input. The benchmarks' reference (scripts/bench_torchvision.py):
    torch at its best where torchvision refuses."""
    assert sampling_ratio > 0, "roi_align_vec needs a fixed sampling_ratio"
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    ph, pw = output_size
    n, c, height, width = input.shape
    k = rois.shape[0]
    if k == 0:
        return input.new_zeros((0, c, ph, pw))
    r = rois.detach().to(input.dtype)
    g = sampling_ratio
    off = 0.5 if aligned else 0.0
    x1, y1 = r[:, 1] * spatial_scale - off, r[:, 2] * spatial_scale - off
    x2, y2 = r[:, 3] * spatial_scale - off, r[:, 4] * spatial_scale - off
    rw, rh = x2 - x1, y2 - y1
    if not aligned:
        rw, rh = rw.clamp(min=1.0), rh.clamp(min=1.0)
    bh, bw = rh / ph, rw / pw

    def axis(start, bin_size, bins, size):
        # sample coordinates [K, bins·g] (bin-major), then torchvision's
        # bilinear_interpolate along one axis: low and high indices, their
        # weights, zero outside [-1, size].
        p = torch.arange(bins, dtype=input.dtype).repeat_interleave(g)
        i = (torch.arange(g, dtype=input.dtype) + 0.5).repeat(bins)
        v = start[:, None] + p[None, :] * bin_size[:, None] + i[None, :] * bin_size[:, None] / g
        valid = ((v >= -1.0) & (v <= size)).to(input.dtype)
        v = v.clamp(min=0.0)
        low = v.floor().long()
        top = low >= size - 1
        low = torch.where(top, torch.full_like(low, size - 1), low)
        high = torch.where(top, low, low + 1)
        v = torch.where(top, low.to(input.dtype), v)
        lw = v - low.to(input.dtype)
        return low, high, (1.0 - lw) * valid, lw * valid

    yl, yh, wyl, wyh = axis(y1, bh, ph, height)  # [K, ph·g]
    xl, xh, wxl, wxh = axis(x1, bw, pw, width)  # [K, pw·g]
    flat = input.permute(0, 2, 3, 1).reshape(n * height * width, c)
    base = r[:, 0].long()[:, None, None] * (height * width)
    out = 0
    for ys, wy in ((yl, wyl), (yh, wyh)):
        for xs, wx in ((xl, wxl), (xh, wxh)):
            idx = base + ys[:, :, None] * width + xs[:, None, :]  # [K, ph·g, pw·g]
            w = wy[:, :, None] * wx[:, None, :]
            out = out + flat[idx.reshape(-1)].reshape(k, ph * g, pw * g, c) * w[..., None]
    out = out.reshape(k, ph, g, pw, g, c).sum(dim=(2, 4)) / (g * g)
    return out.permute(0, 3, 1, 2)


def check_roi_align():
    """roi_align_torch against torchvision's roi_align on random maps and
    boxes, forward and the gradient w.r.t. the maps, to 1e-12."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn((2, 5, 13, 17), generator=gen, dtype=torch.float64, requires_grad=True)
    boxes = torch.rand((12, 4), generator=gen, dtype=torch.float64) * torch.tensor([70, 50, 70, 50.0]) - 3
    boxes = torch.cat([boxes[:, :2], boxes[:, :2] + boxes[:, 2:].abs() / 2], 1)
    boxes[0] = torch.tensor([10.0, 10.0, 10.5, 10.2])  # below one pixel
    boxes[1] = torch.tensor([-20.0, -20.0, 90.0, 80.0])  # beyond the map
    rois = torch.cat([torch.tensor([[i % 2] for i in range(12)], dtype=torch.float64), boxes], 1)
    worst = 0.0
    for scale, ratio in ((0.25, 2), (0.125, 2), (0.25, 0), (0.5, -1), (0.5, 3)):
        a = torchvision.ops.roi_align(x, rois, (7, 7), scale, ratio, False)
        r = torch.randn(a.shape, generator=gen, dtype=torch.float64)
        ga, = torch.autograd.grad((a * r).sum(), x)
        for f in (roi_align_torch, roi_align_vec):
            if f is roi_align_vec and ratio <= 0:
                continue
            b = f(x, rois, (7, 7), scale, ratio, False)
            gb, = torch.autograd.grad((b * r).sum(), x)
            err = max((a - b).abs().max().item() / a.abs().max().item(),
                      (ga - gb).abs().max().item() / ga.abs().max().item())
            assert err < 1e-12, (f.__name__, scale, ratio, err)
            worst = max(worst, err)
    return worst


class Replay:
    """A torch.randperm that gives recorded draws in order."""

    def __init__(self, draws):
        self.draws = [list(d) for d in draws]

    def __call__(self, n, *args, **kwargs):
        d = self.draws.pop(0)
        assert len(d) == n, (len(d), n)
        return torch.tensor(d, dtype=torch.int64)


def recorded(f):
    """f() with every torch.randperm draw recorded: its result and the
    draws (the RPN's, then the box head's)."""
    fl.DRAWS.clear()
    torch.randperm = fl._recording_randperm
    out = f()
    draws = fl.DRAWS.get("rpn", []) + fl.DRAWS.get("roi", [])
    return out, draws


def replayed(draws, f):
    torch.randperm = Replay(draws)
    try:
        return f()
    finally:
        torch.randperm = fl._recording_randperm


def batch(case, seed):
    name, gmax, boxes = next(c for c in fl.CASES if c[0] == case)
    images = [gl.image(b, seed) for b in range(len(boxes))]
    golden = {"case": name, "gmax": gmax, "seed": seed, "height": gl.H, "width": gl.W,
              "boxes": [[list(b[:4]) for b in per] for per in boxes],
              "labels": [[b[4] for b in per] for per in boxes]}
    return images, gl.targets_of(boxes), golden


def main():
    torch.set_num_threads(1)
    torch.manual_seed(11)
    err = check_roi_align()
    print("roi_align_torch vs torchvision: %.3g" % err)
    torchvision.ops.poolers.roi_align = roi_align_torch
    model = fl.load_model().double()
    params = {k: p for k, p in model.named_parameters() if p.requires_grad}
    sup_images, sup_targets, sup = batch(SUPPORT, SUPPORT_SEED)
    qry_images, qry_targets, qry = batch(QUERY, QUERY_SEED)

    ls, sup_draws = recorded(lambda: sum(model(sup_images, sup_targets).values()))
    inner = torch.autograd.grad(ls, list(params.values()), create_graph=True, allow_unused=True)
    inner = [g if g is not None else torch.zeros_like(p) for g, p in zip(inner, params.values())]
    adapted = {k: p - ALPHA * g for (k, p), g in zip(params.items(), inner)}
    lq, qry_draws = recorded(lambda: sum(functional_call(model, adapted, (qry_images, qry_targets)).values()))
    second = torch.autograd.grad(lq, list(params.values()), allow_unused=True)

    fixed = {k: v.detach().requires_grad_(True) for k, v in adapted.items()}
    lq_fo = replayed(qry_draws, lambda: sum(functional_call(model, fixed, (qry_images, qry_targets)).values()))
    first = torch.autograd.grad(lq_fo, list(fixed.values()), allow_unused=True)

    def summaries(gs):
        return {k: gl.grad_summary(g if g is not None else torch.zeros_like(p))
                for (k, p), g in zip(params.items(), gs)}

    print("L_s %.6g L_q %.6g (first order %.6g)" % (ls.item(), lq.item(), lq_fo.item()))
    case = {"alpha": ALPHA, "support": sup, "query": qry, "support_draws": sup_draws, "query_draws": qry_draws,
            "pre_nms_top_n": fl.PRE_NMS, "post_nms_top_n": fl.POST_NMS, "box_batch_size_per_image": fl.BOX_BATCH,
            "roi_align_check": err, "support_loss": ls.item(), "query_loss": lq.item(),
            "meta_grads": summaries(second), "first_order_grads": summaries(first)}
    gc.write_torchvision(os.path.join(fl.OUT, "fasterrcnn_maml.json.gz"), [case], op="fasterrcnn MAML")


if __name__ == "__main__":
    main()
