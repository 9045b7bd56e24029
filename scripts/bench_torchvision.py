#!/usr/bin/env python3
"""Time torchvision CPU ops, for comparison with the Go benchmarks.

Run with Debian's python (needs python3-torchvision):

    /usr/bin/python3 scripts/bench_torchvision.py [--only NAME] [--repeats N] [--warmup N]

Prints one JSON object to stdout, mapping each benchmark name to its time in
milliseconds (the min of the timed runs, or their median with --stat median),
plus the process's peak RSS:

    {"RoIAlign/forward": 12.3, "RoIAlign/forward+backward": 45.6,
     "maxrss_kib": 456789}   # resource.getrusage(RUSAGE_SELF).ru_maxrss, KiB on Linux

Each benchmark is warmed up for --warmup runs and at least --warmup-seconds
(default 1 s: oneDNN picks and caches its kernels, the allocator settles)
before --repeats timed runs. Give torch its best from the environment: the
thread count (--threads), glibc keeping freed blocks (MALLOC_MMAP_MAX_=0 and
a large MALLOC_TRIM_THRESHOLD_, or jemalloc through LD_PRELOAD) and
OPENBLAS_CORETYPE; scripts/bench.sh runs every combination and keeps the best.

Versions, thread count and per-benchmark progress go to stderr.

To add a benchmark, add an entry to BENCHMARKS: name -> (setup, run), where
setup() returns a state object and run(state) performs one timed iteration.
"""

import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torchvision
from torchvision.ops import MultiScaleRoIAlign, ps_roi_align, ps_roi_pool, roi_align, roi_pool

SEED = 0

# Faster R-CNN-like setting: an 800x1088 image, feature map at stride 16.
IMG_H, IMG_W = 800, 1088
FEAT_SHAPE = (2, 256, 50, 68)  # N, C, H, W
NUM_BOXES = 512
SPATIAL_SCALE = 1.0 / 16.0


def random_boxes(n, img_h, img_w, batch, gen):
    """Valid (x1 <= x2, y1 <= y2) boxes in image coordinates, rows (b, x1, y1, x2, y2)."""
    xs = torch.rand(n, 2, generator=gen) * img_w
    ys = torch.rand(n, 2, generator=gen) * img_h
    x1, _ = xs.min(dim=1)
    x2, _ = xs.max(dim=1)
    y1, _ = ys.min(dim=1)
    y2, _ = ys.max(dim=1)
    b = (torch.arange(n) % batch).to(torch.float32)
    return torch.stack([b, x1, y1, x2, y2], dim=1).contiguous()


# ---------------------------------------------------------------- RoIAlign

ROI_ALIGN_ARGS = dict(output_size=(7, 7), spatial_scale=SPATIAL_SCALE,
                      sampling_ratio=2, aligned=True)


def setup_roi_align(requires_grad):
    """RoIAlign's inputs: setup_pool's, at FEAT_SHAPE with NUM_BOXES boxes."""
    return setup_pool(FEAT_SHAPE, NUM_BOXES, FEAT_SHAPE[1], requires_grad)


# ------------------------------------------ RoIPool, PSRoIAlign, PSRoIPool

# RoIPool at the RoIAlign size; PSRoIAlign and PSRoIPool with 490 = 10 * 7 * 7
# channels (R-FCN-like: 10 output channels per bin) and 256 boxes.
ROI_POOL_ARGS = dict(output_size=(7, 7), spatial_scale=SPATIAL_SCALE)
PS_FEAT_SHAPE = (2, 490, 50, 68)
PS_NUM_BOXES = 256
PS_ROI_ALIGN_ARGS = dict(output_size=(7, 7), spatial_scale=SPATIAL_SCALE, sampling_ratio=2)
PS_ROI_POOL_ARGS = dict(output_size=(7, 7), spatial_scale=SPATIAL_SCALE)


def setup_pool(feat_shape, num_boxes, out_channels, requires_grad):
    def setup():
        gen = torch.Generator().manual_seed(SEED)
        x = torch.randn(feat_shape, generator=gen, dtype=torch.float32)
        boxes = random_boxes(num_boxes, IMG_H, IMG_W, feat_shape[0], gen)
        grad = torch.randn((num_boxes, out_channels, 7, 7), generator=gen, dtype=torch.float32)
        if requires_grad:
            x.requires_grad_(True)
        return {"x": x, "boxes": boxes, "grad": grad}
    return setup


def pool_runs(fn, args):
    def forward(s):
        with torch.no_grad():
            fn(s["x"], s["boxes"], **args)

    def forward_backward(s):
        x = s["x"]
        x.grad = None
        fn(x, s["boxes"], **args).backward(s["grad"])
    return forward, forward_backward


run_roi_align_forward, run_roi_align_forward_backward = pool_runs(roi_align, ROI_ALIGN_ARGS)
run_roi_pool_forward, run_roi_pool_forward_backward = pool_runs(roi_pool, ROI_POOL_ARGS)
run_ps_roi_align_forward, run_ps_roi_align_forward_backward = pool_runs(ps_roi_align,
                                                                        PS_ROI_ALIGN_ARGS)
run_ps_roi_pool_forward, run_ps_roi_pool_forward_backward = pool_runs(ps_roi_pool, PS_ROI_POOL_ARGS)


# ------------------------------------------------------ MultiScaleRoIAlign

# Mask R-CNN's box-head pooler: the four FPN levels (strides 4..32) of one
# 800x1088 image, 512 boxes, 7x7, sampling 2. The boxes are the same numbers
# as gops/bench_test.go's benchPyramidBoxes.
PYRAMID_SHAPES = [(1, 256, 200, 272), (1, 256, 100, 136), (1, 256, 50, 68), (1, 256, 25, 34)]
PYRAMID_BOXES = 512


def pyramid_boxes(n):
    def frac(x):
        return x - math.floor(x)
    rows = []
    for i in range(n):
        s = 32 * 28 ** frac(i * 0.6180339887498949)
        a = math.sqrt(2 ** (2 * frac(i * 1.4142135623730951) - 1))
        w, h = s * a, s / a
        cx, cy = frac(i * 0.7548776662466927) * IMG_W, frac(i * 0.5698402909980532) * IMG_H
        rows.append((max(cx - w / 2, 0), max(cy - h / 2, 0), min(cx + w / 2, IMG_W), min(cy + h / 2, IMG_H)))
    return torch.tensor(rows, dtype=torch.float32)


def setup_multiscale(requires_grad):
    def setup():
        gen = torch.Generator().manual_seed(SEED)
        feats = {str(i): torch.randn(s, generator=gen, dtype=torch.float32).requires_grad_(requires_grad)
                 for i, s in enumerate(PYRAMID_SHAPES)}
        pooler = MultiScaleRoIAlign(list(feats), output_size=7, sampling_ratio=2)
        grad = torch.randn((PYRAMID_BOXES, 256, 7, 7), generator=gen, dtype=torch.float32)
        return {"x": feats, "boxes": [pyramid_boxes(PYRAMID_BOXES)], "sizes": [(IMG_H, IMG_W)],
                "pooler": pooler, "grad": grad}
    return setup


def run_multiscale_forward(s):
    with torch.no_grad():
        s["pooler"](s["x"], s["boxes"], s["sizes"])


def run_multiscale_forward_backward(s):
    for x in s["x"].values():
        x.grad = None
    s["pooler"](s["x"], s["boxes"], s["sizes"]).backward(s["grad"])


# ------------------------------------------------- gradients w.r.t. boxes

# torchvision gives boxes no gradient. A torch user who wants one with
# torchvision's sampling writes roi_align over gathers and lets autograd
# differentiate it: gather_roi_align is that, vectorised over boxes and
# sample points (aligned, a fixed sampling ratio: the RoIAlign benchmark's
# options; torchvision's clamps of y <= 0 and of the last row included). Its
# forward is checked against torchvision's roi_align once per setup. The
# timed run takes the value and the input gradient from roi_align itself and
# only the box gradient from the gathers, the fastest way torch offers.


def gather_roi_align(x, rois, output_size, spatial_scale, sampling_ratio, aligned):
    assert aligned and sampling_ratio > 0
    N, C, H, W = x.shape
    PH, PW = output_size
    g = sampling_ratio
    K = rois.shape[0]
    n = rois[:, 0].detach().long()
    x1, y1 = rois[:, 1] * spatial_scale - 0.5, rois[:, 2] * spatial_scale - 0.5
    x2, y2 = rois[:, 3] * spatial_scale - 0.5, rois[:, 4] * spatial_scale - 0.5
    bh, bw = (y2 - y1) / PH, (x2 - x1) / PW
    dt = x.dtype
    fy = torch.arange(PH, dtype=dt).repeat_interleave(g) + (torch.arange(g, dtype=dt).repeat(PH) + 0.5) / g
    fx = torch.arange(PW, dtype=dt).repeat_interleave(g) + (torch.arange(g, dtype=dt).repeat(PW) + 0.5) / g
    Y = (y1[:, None] + fy * bh[:, None])[:, :, None].expand(K, PH * g, PW * g)
    X = (x1[:, None] + fx * bw[:, None])[:, None, :].expand(K, PH * g, PW * g)
    valid = ((Y >= -1) & (Y <= H) & (X >= -1) & (X <= W)).detach()
    Y = torch.where(Y.detach() <= 0, torch.zeros_like(Y), Y)
    X = torch.where(X.detach() <= 0, torch.zeros_like(X), X)
    yl, xl = torch.floor(Y.detach()).long(), torch.floor(X.detach()).long()
    ylast, xlast = yl >= H - 1, xl >= W - 1
    Y = torch.where(ylast, torch.full_like(Y, H - 1), Y)
    X = torch.where(xlast, torch.full_like(X, W - 1), X)
    yl = torch.where(ylast, torch.full_like(yl, H - 1), yl).clamp(0, H - 1)
    xl = torch.where(xlast, torch.full_like(xl, W - 1), xl).clamp(0, W - 1)
    yh = torch.where(ylast, yl, yl + 1).clamp(0, H - 1)
    xh = torch.where(xlast, xl, xl + 1).clamp(0, W - 1)
    ly, lx = Y - yl.to(dt), X - xl.to(dt)
    hy, hx = 1 - ly, 1 - lx
    xf = x.permute(0, 2, 3, 1).reshape(N * H * W, C)  # channels last
    base = n[:, None, None] * H

    def tap(yy, xx):
        return xf[((base + yy) * W + xx).reshape(-1)].reshape(K, PH * g, PW * g, C)

    v = ((hy * hx)[..., None] * tap(yl, xl) + (hy * lx)[..., None] * tap(yl, xh) +
         (ly * hx)[..., None] * tap(yh, xl) + (ly * lx)[..., None] * tap(yh, xh))
    v = torch.where(valid[..., None], v, torch.zeros_like(v))
    out = v.reshape(K, PH, g, PW, g, C).sum(dim=(2, 4)) / (g * g)
    return out.permute(0, 3, 1, 2)


def setup_roi_align_boxes():
    def setup():
        s = setup_roi_align(True)()
        with torch.no_grad():
            ref = gather_roi_align(s["x"], s["boxes"], **ROI_ALIGN_ARGS)
            tv = roi_align(s["x"], s["boxes"], **ROI_ALIGN_ARGS)
        err = (ref - tv).abs().max().item()
        assert err < 1e-4, "gather_roi_align differs from roi_align by %g" % err
        s["boxes"].requires_grad_(True)
        return s
    return setup


def run_roi_align_boxes_forward_backward(s):
    # torch at its best: the value and the input gradient from torchvision's
    # roi_align kernels, only the box gradient from the gathers (their x
    # detached: no index_put backward into x).
    x, boxes = s["x"], s["boxes"]
    x.grad = None
    boxes.grad = None
    ref = gather_roi_align(x.detach(), boxes, **ROI_ALIGN_ARGS)
    out = roi_align(x, boxes.detach(), **ROI_ALIGN_ARGS) + (ref - ref.detach())
    out.backward(s["grad"])


# ------------------------------------------------------------ DeformConv2d

# torchvision.ops.deform_conv2d at ResNet-like sizes; "v1" = no mask,
# "v2" = modulated (with mask). Conv2d is the plain GEMM-only floor at the
# same size as v1/v2. forward+backward computes gradients w.r.t. every
# differentiable input (input, offset, mask, weight, bias).
DEFORM_CONFIGS = {
    # name: (input shape N,C,H,W; weight shape Cout,Cin,kh,kw; padding; use mask)
    "v1": ((4, 64, 56, 56), (64, 64, 3, 3), 1, False),
    "v2": ((4, 64, 56, 56), (64, 64, 3, 3), 1, True),
    "v2-256": ((2, 256, 32, 32), (256, 256, 3, 3), 1, True),
}


def setup_deform_conv(cfg, requires_grad, plain=False):
    in_shape, w_shape, pad, use_mask = DEFORM_CONFIGS[cfg]

    def setup():
        gen = torch.Generator().manual_seed(SEED)
        n, _, h, w = in_shape
        cout, _, kh, kw = w_shape
        out_h = h + 2 * pad - kh + 1
        out_w = w + 2 * pad - kw + 1
        s = {
            "x": torch.randn(in_shape, generator=gen, dtype=torch.float32),
            "weight": torch.randn(w_shape, generator=gen, dtype=torch.float32) * 0.05,
            "bias": torch.randn((cout,), generator=gen, dtype=torch.float32),
            "offset": None,
            "mask": None,
            "pad": pad,
        }
        if not plain:
            s["offset"] = torch.randn((n, 2 * kh * kw, out_h, out_w), generator=gen,
                                      dtype=torch.float32)
            if use_mask:
                s["mask"] = torch.rand((n, kh * kw, out_h, out_w), generator=gen,
                                       dtype=torch.float32)
        s["grad"] = torch.randn((n, cout, out_h, out_w), generator=gen, dtype=torch.float32)
        s["leaves"] = [s[k] for k in ("x", "weight", "bias", "offset", "mask")
                       if s[k] is not None]
        if requires_grad:
            for t in s["leaves"]:
                t.requires_grad_(True)
        return s
    return setup


def _deform_conv_call(s):
    if s["offset"] is None:
        return torch.nn.functional.conv2d(s["x"], s["weight"], s["bias"], padding=s["pad"])
    return torchvision.ops.deform_conv2d(s["x"], s["offset"], s["weight"], s["bias"],
                                         padding=(s["pad"], s["pad"]), mask=s["mask"])


def run_deform_conv_forward(s):
    with torch.no_grad():
        _deform_conv_call(s)


def run_deform_conv_forward_backward(s):
    for t in s["leaves"]:
        t.grad = None
    out = _deform_conv_call(s)
    out.backward(s["grad"])


# ------------------------------------------------------------ package nn

# torch.nn.functional at the sizes of nn/bench_test.go (float32).
NN_CONV = {  # name: (input N, C, H, W; Cout; kernel; padding)
    "resnet-64": ((8, 64, 56, 56), 64, 3, 1),
    "resnet-256": ((8, 256, 14, 14), 256, 3, 1),
    "pointwise-1024": ((8, 256, 14, 14), 1024, 1, 0),
    "stem": ((4, 3, 224, 224), 64, 7, 3, 2),  # the ResNet stem: stride 2
}


def setup_nn(make, requires_grad):
    """make(gen) -> (leaves, fn): fn() computes the output from the leaves.

    For a forward-only benchmark torch gets its faster mode: under
    torch.no_grad() or with autograd recording (on leaves that require no
    grad); oneDNN picks different paths for the two, and either can win
    by a factor of several (a 3x3 conv on [8, 64, 56, 56]: 41 ms under
    no_grad, 5 ms without it, in one run on this machine)."""
    def setup():
        gen = torch.Generator().manual_seed(SEED)
        leaves, fn = make(gen)
        if requires_grad:
            for t in leaves:
                t.requires_grad_(True)
        out = fn()
        grad = torch.randn(out.shape, generator=gen, dtype=torch.float32).to(out.dtype) if out.dim() else None
        s = {"leaves": leaves, "fn": fn, "grad": grad, "no_grad": True}
        if not requires_grad:
            def timed(no_grad):
                s["no_grad"] = no_grad
                for _ in range(2):
                    run_nn_forward(s)
                ts = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    run_nn_forward(s)
                    ts.append(time.perf_counter() - t0)
                return statistics.median(ts)
            s["no_grad"] = timed(True) <= timed(False)
        return s
    return setup


def run_nn_forward(s):
    if s["no_grad"]:
        with torch.no_grad():
            s["fn"]()
    else:
        s["fn"]()


def run_nn_forward_backward(s):
    for t in s["leaves"]:
        t.grad = None
    out = s["fn"]()
    out.backward(s["grad"])


def nn_conv(cfg):
    shape, cout, k, p, stride = (NN_CONV[cfg] + (1,))[:5]

    def make(gen):
        x = torch.randn(shape, generator=gen, dtype=torch.float32)
        w = torch.randn((cout, shape[1], k, k), generator=gen, dtype=torch.float32) * 0.05
        b = torch.randn((cout,), generator=gen, dtype=torch.float32)
        return [x, w, b], lambda: torch.nn.functional.conv2d(x, w, b, stride=stride, padding=p)
    return make


def nn_depthwise(dtype):
    """The depthwise 3x3 convolution of [8, 128, 28, 28], 128 groups,
    padding 1, with bias (nn's BenchmarkConv2dDepthwise)."""
    def make(gen):
        x = torch.randn((8, 128, 28, 28), generator=gen, dtype=torch.float32).to(dtype)
        w = (torch.randn((128, 1, 3, 3), generator=gen, dtype=torch.float32) * 0.3).to(dtype)
        b = torch.randn((128,), generator=gen, dtype=torch.float32).to(dtype)
        return [x, w, b], lambda: torch.nn.functional.conv2d(x, w, b, padding=1, groups=128)
    return make


def nn_unary(shape, fn, dtype):
    """fn of one standard-normal input of shape and dtype."""
    def make(gen):
        x = torch.randn(shape, generator=gen, dtype=torch.float32).to(dtype)
        return [x], lambda: fn(x)
    return make


# Name: (input shape, function); rows NAME/float32/... and NAME/float64/...
# (nn's BenchmarkResample, BenchmarkReLU, BenchmarkAdaptiveAvgPool2d).
NN_UNARY = {
    "Resample/nearest-x2": ((2, 256, 50, 68),
                            lambda x: torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest")),
    "Resample/avgpool-2x2": ((8, 256, 28, 28), lambda x: torch.nn.functional.avg_pool2d(x, 2)),
    "ReLU": ((8, 64, 112, 112), torch.nn.functional.relu),
    "AdaptiveAvgPool2d": ((8, 2048, 7, 7), lambda x: torch.nn.functional.adaptive_avg_pool2d(x, 1)),
}


def nn_batch_norm(training, dtype):
    """BatchNorm of [8, 64, 56, 56] with weight, bias and running
    statistics (training: batch statistics, the running ones updated)."""
    def make(gen):
        x = torch.randn((8, 64, 56, 56), generator=gen, dtype=torch.float32).to(dtype)
        w = torch.randn((64,), generator=gen, dtype=torch.float32).to(dtype)
        b = torch.randn((64,), generator=gen, dtype=torch.float32).to(dtype)
        rm, rv = torch.zeros(64, dtype=dtype), torch.ones(64, dtype=dtype)
        return [x, w, b], lambda: torch.nn.functional.batch_norm(x, rm, rv, w, b, training=training)
    return make


def nn_pool(fn):
    def make(gen):
        x = torch.randn((8, 64, 112, 112), generator=gen, dtype=torch.float32)
        return [x], lambda: fn(x, 3, 2, 1)
    return make


def nn_logits(fn):
    def make(gen):
        x = torch.randn((256, 1000), generator=gen, dtype=torch.float32) * 2
        target = torch.tensor([(i * 37) % 1000 for i in range(256)])
        return [x], lambda: fn(x, target)
    return make


NN_INTERPOLATE = {  # name: (input N, C, H, W; F.interpolate's keyword arguments), scale factor 2
    "nearest-fpn": ((8, 256, 50, 68), dict(mode="nearest")),
    "bilinear": ((8, 64, 56, 56), dict(mode="bilinear", align_corners=False)),
}


def nn_interpolate(cfg):
    shape, kw = NN_INTERPOLATE[cfg]

    def make(gen):
        x = torch.randn(shape, generator=gen, dtype=torch.float32)
        return [x], lambda: torch.nn.functional.interpolate(x, scale_factor=2, **kw)
    return make


def nn_linear(gen):
    """F.linear of [128, 784] to 256 features, with bias (an MNIST MLP's
    first layer)."""
    x = torch.randn((128, 784), generator=gen, dtype=torch.float32)
    w = torch.randn((256, 784), generator=gen, dtype=torch.float32) * 0.03
    b = torch.randn((256,), generator=gen, dtype=torch.float32)
    return [x, w, b], lambda: torch.nn.functional.linear(x, w, b)


def nn_group_norm(gen):
    """32 groups of an FPN level [8, 256, 50, 68], weight and bias."""
    x = torch.randn((8, 256, 50, 68), generator=gen, dtype=torch.float32)
    w = torch.randn((256,), generator=gen, dtype=torch.float32)
    b = torch.randn((256,), generator=gen, dtype=torch.float32)
    return [x, w, b], lambda: torch.nn.functional.group_norm(x, 32, w, b)


def nn_sigmoid_focal_loss(gen):
    """gops' BenchmarkSigmoidFocalLoss: RetinaNet's classification loss at
    its training step's size at 256x256, logits [2, 12276, 91] ~ N(0, 9),
    targets 0 but one class of one anchor in 100, alpha 0.25, gamma 2,
    weighted per element (1) and summed; gradient w.r.t. the logits only."""
    shape = (2, 12276, 91)
    x = torch.randn(shape, generator=gen, dtype=torch.float32) * 3
    t = torch.zeros(shape)
    rows = torch.arange(0, shape[0] * shape[1], 100)
    t.view(-1, 91)[rows, torch.randint(0, 91, (len(rows),), generator=gen)] = 1
    w = torch.ones(shape)
    return [x], lambda: (torchvision.ops.sigmoid_focal_loss(x, t, 0.25, 2, "none") * w).sum()


def nn_grid_sample(gen):
    """Issue 16's size: bilinear, zeros padding, align_corners=False, input
    [8, 64, 64, 64] at a grid [8, 64, 64, 2] uniform in [-1.1, 1.1]."""
    x = torch.randn((8, 64, 64, 64), generator=gen, dtype=torch.float32)
    grid = torch.rand((8, 64, 64, 2), generator=gen, dtype=torch.float32) * 2.2 - 1.1
    return [x, grid], lambda: torch.nn.functional.grid_sample(
        x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


# ConvStackSecondOrder: nn/bench_test.go's convStackGraph, x [8, 64, 28, 28]
# -> conv 3x3 64->64 pad 1 + bias -> relu -> the same again ->
# adaptive_avg_pool2d(1) -> [8, 64] @ fc [64, 10] -> mean cross_entropy L.
# first-order: dL/d(weights); second-order: dL/d(weights, x) with
# create_graph, then d(sum(dL/dx ** 2))/d(weights).
def setup_conv_stack():
    gen = torch.Generator().manual_seed(SEED)
    x = torch.randn((8, 64, 28, 28), generator=gen, dtype=torch.float32)
    weights = [torch.randn((64, 64, 3, 3), generator=gen, dtype=torch.float32) * 0.05,
               torch.randn((64,), generator=gen, dtype=torch.float32) * 0.1,
               torch.randn((64, 64, 3, 3), generator=gen, dtype=torch.float32) * 0.05,
               torch.randn((64,), generator=gen, dtype=torch.float32) * 0.1,
               torch.randn((64, 10), generator=gen, dtype=torch.float32) * 0.1]
    for t in weights:
        t.requires_grad_(True)
    target = torch.tensor([(i * 3) % 10 for i in range(8)])
    return {"x": x, "weights": weights, "target": target}


def _conv_stack_loss(s):
    f = torch.nn.functional
    w1, b1, w2, b2, fc = s["weights"]
    h = f.relu(f.conv2d(s["x"], w1, b1, padding=1))
    h = f.relu(f.conv2d(h, w2, b2, padding=1))
    h = f.adaptive_avg_pool2d(h, 1).reshape(8, 64)
    return f.cross_entropy(h @ fc, s["target"])


def run_conv_stack_first_order(s):
    s["x"].requires_grad_(False)
    torch.autograd.grad(_conv_stack_loss(s), s["weights"])


def run_conv_stack_second_order(s):
    x = s["x"].requires_grad_(True)
    grads = torch.autograd.grad(_conv_stack_loss(s), s["weights"] + [x], create_graph=True)
    penalty = grads[-1].pow(2).sum()
    torch.autograd.grad(penalty, s["weights"])


NN_BENCHMARKS = {}
for _cfg in NN_CONV:
    NN_BENCHMARKS["Conv2d/%s/forward" % _cfg] = (setup_nn(nn_conv(_cfg), False), run_nn_forward)
    NN_BENCHMARKS["Conv2d/%s/forward+backward" % _cfg] = (setup_nn(nn_conv(_cfg), True), run_nn_forward_backward)
for _name, _make in [("MaxPool2d", nn_pool(torch.nn.functional.max_pool2d)),
                     ("AvgPool2d", nn_pool(torch.nn.functional.avg_pool2d)),
                     ("Softmax", nn_logits(lambda x, t: torch.nn.functional.softmax(x, dim=1))),
                     ("CrossEntropy", nn_logits(torch.nn.functional.cross_entropy))]:
    NN_BENCHMARKS[_name + "/forward"] = (setup_nn(_make, False), run_nn_forward)
    NN_BENCHMARKS[_name + "/forward+backward"] = (setup_nn(_make, True), run_nn_forward_backward)
for _cfg in NN_INTERPOLATE:
    NN_BENCHMARKS["Interpolate/%s/forward" % _cfg] = (setup_nn(nn_interpolate(_cfg), False), run_nn_forward)
    NN_BENCHMARKS["Interpolate/%s/forward+backward" % _cfg] = (setup_nn(nn_interpolate(_cfg), True), run_nn_forward_backward)
for _name, _make in [("Conv2dDepthwise/float32", nn_depthwise(torch.float32)),
                     ("Conv2dDepthwise/float64", nn_depthwise(torch.float64)),
                     ("BatchNorm/training/float32", nn_batch_norm(True, torch.float32)),
                     ("BatchNorm/training/float64", nn_batch_norm(True, torch.float64)),
                     ("BatchNorm/eval/float32", nn_batch_norm(False, torch.float32)),
                     ("BatchNorm/eval/float64", nn_batch_norm(False, torch.float64))]:
    NN_BENCHMARKS[_name + "/forward"] = (setup_nn(_make, False), run_nn_forward)
    NN_BENCHMARKS[_name + "/forward+backward"] = (setup_nn(_make, True), run_nn_forward_backward)
for _name, (_shape, _fn) in NN_UNARY.items():
    for _dt in (torch.float32, torch.float64):
        _key = "%s/%s" % (_name, str(_dt).split(".")[1])
        NN_BENCHMARKS[_key + "/forward"] = (setup_nn(nn_unary(_shape, _fn, _dt), False), run_nn_forward)
        NN_BENCHMARKS[_key + "/forward+backward"] = (setup_nn(nn_unary(_shape, _fn, _dt), True),
                                                     run_nn_forward_backward)
NN_BENCHMARKS["GridSample/forward"] = (setup_nn(nn_grid_sample, False), run_nn_forward)
NN_BENCHMARKS["GridSample/forward+backward"] = (setup_nn(nn_grid_sample, True), run_nn_forward_backward)
NN_BENCHMARKS["Linear/forward"] = (setup_nn(nn_linear, False), run_nn_forward)
NN_BENCHMARKS["Linear/forward+backward"] = (setup_nn(nn_linear, True), run_nn_forward_backward)
NN_BENCHMARKS["GroupNorm/forward"] = (setup_nn(nn_group_norm, False), run_nn_forward)
NN_BENCHMARKS["GroupNorm/forward+backward"] = (setup_nn(nn_group_norm, True), run_nn_forward_backward)
NN_BENCHMARKS["SigmoidFocalLoss/forward"] = (setup_nn(nn_sigmoid_focal_loss, False), run_nn_forward)
NN_BENCHMARKS["SigmoidFocalLoss/forward+backward"] = (setup_nn(nn_sigmoid_focal_loss, True), run_nn_forward_backward)
# gops times these families three times, the second time as
# FAMILY/reuse/... with ad.ReuseResults on (each run writes its results
# into the memory of the run before last), the third as FAMILY/inplace/...
# with ad.ReuseResultsInPlace (into the previous run's memory, as torch's
# caching allocator hands out the block just freed): the same torch work,
# timed again under the other names.
for _key in [k for k in NN_BENCHMARKS if k.split("/")[0] in (
        "MaxPool2d", "AvgPool2d", "Softmax", "CrossEntropy", "Interpolate", "GridSample", "GroupNorm",
        "BatchNorm", "Conv2dDepthwise", "Resample", "ReLU", "AdaptiveAvgPool2d", "Linear")]:
    _family, _rest = _key.split("/", 1)
    NN_BENCHMARKS[_family + "/reuse/" + _rest] = NN_BENCHMARKS[_key]
    NN_BENCHMARKS[_family + "/inplace/" + _rest] = NN_BENCHMARKS[_key]
NN_BENCHMARKS["ConvStackSecondOrder/first-order"] = (setup_conv_stack, run_conv_stack_first_order)
NN_BENCHMARKS["ConvStackSecondOrder/second-order"] = (setup_conv_stack, run_conv_stack_second_order)


# ---------------------------------------------------------------- NMS

def nms_boxes(k):
    """gops/nms_bench_test.go's nmsBenchData: float32 boxes from a 32-bit LCG."""
    x = 12345
    vals = []
    for _ in range(5 * k):
        x = (1664525 * x + 1013904223) % 4294967296
        vals.append(x / 4294967296.0)
    u = torch.tensor(vals, dtype=torch.float64).to(torch.float32).reshape(k, 5)
    cx, cy = u[:, 0] * 1088, u[:, 1] * 800
    w, h = 16 + u[:, 2] * 240, 16 + u[:, 3] * 240
    boxes = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=1).contiguous()
    return boxes, u[:, 4].contiguous()


def setup_nms(k):
    def setup():
        return nms_boxes(k)
    return setup


def run_nms(s):
    torchvision.ops.nms(s[0], s[1], 0.5)


def build_detector(kind, depth, size):
    """A random-init torchvision detector (seeded): FCOS, RetinaNet v1 or
    v2, or Faster R-CNN v1 or v2 on a ResNet-18 or -50 FPN
    (FrozenBatchNorm2d, as the COCO builders; BatchNorm2d for Faster R-CNN
    v2), 91 classes, the transform's min_size and max_size size. Faster
    R-CNN's backbone is resnet_fpn_backbone's (three trainable stages,
    layers 1-4, LastLevelMaxPool), its heads FasterRCNN's defaults
    (fasterrcnn_resnet50_fpn's), or v2's with a BatchNorm2d FPN, a
    two-conv RPN head and FastRCNNConvFCHead."""
    from torchvision.models import resnet18, resnet50
    from torchvision.models.detection import FCOS, FasterRCNN, RetinaNet
    from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
    from torchvision.models.detection.retinanet import RetinaNetHead, _default_anchorgen
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7
    from torchvision.ops.misc import FrozenBatchNorm2d
    import functools
    torch.manual_seed(SEED)
    body = {"resnet18": resnet18, "resnet50": resnet50}[depth](norm_layer=FrozenBatchNorm2d)
    opts = dict(min_size=size, max_size=size)
    if kind == "fasterrcnn":
        # returned_layers None: [1, 2, 3, 4]; extra_blocks None: LastLevelMaxPool.
        return FasterRCNN(_resnet_fpn_extractor(body, 3), 91, **opts)
    if kind == "fasterrcnn_v2":
        # fasterrcnn_resnet50_fpn_v2's parts on this body (BatchNorm2d).
        from torchvision.models.detection.faster_rcnn import FastRCNNConvFCHead
        from torchvision.models.detection.rpn import RPNHead
        torch.manual_seed(SEED)
        body = {"resnet18": resnet18, "resnet50": resnet50}[depth]()
        bb = _resnet_fpn_extractor(body, 3, norm_layer=torch.nn.BatchNorm2d)
        box_head = FastRCNNConvFCHead((256, 7, 7), [256, 256, 256, 256], [1024], norm_layer=torch.nn.BatchNorm2d)
        return FasterRCNN(bb, 91, rpn_head=RPNHead(256, 3, conv_depth=2), box_head=box_head, **opts)
    c5 = body.inplanes
    extra = LastLevelP6P7(c5, 256) if kind == "retinanet_v2" else LastLevelP6P7(256, 256)
    backbone = _resnet_fpn_extractor(body, 3, returned_layers=[2, 3, 4], extra_blocks=extra)
    if kind == "fcos":
        return FCOS(backbone, 91, **opts)
    if kind == "retinanet":
        return RetinaNet(backbone, 91, **opts)
    anchors = _default_anchorgen()
    head = RetinaNetHead(256, anchors.num_anchors_per_location()[0], 91,
                         norm_layer=functools.partial(torch.nn.GroupNorm, 32))
    return RetinaNet(backbone, 91, anchor_generator=anchors, head=head, **opts)


def setup_detector(kind, depth):
    """detection's BenchmarkDetector: build_detector in eval mode, two
    512x512 images, min_size = max_size = 512 so no resizing happens."""
    def setup():
        model = build_detector(kind, depth, 512)
        gen = torch.Generator().manual_seed(SEED)
        return model.eval(), [torch.rand((3, 512, 512), generator=gen) for _ in range(2)]
    return setup


def run_detector(s):
    with torch.no_grad():
        s[0](s[1])


DETECTOR_BENCHMARKS = {
    "Detector/%s/%s/inference" % (kind, depth): (setup_detector(kind, depth), run_detector)
    for kind in ("fcos", "retinanet", "retinanet_v2") for depth in ("resnet18", "resnet50")
}
for _kind in ("fasterrcnn", "fasterrcnn_v2"):
    DETECTOR_BENCHMARKS["Detector/%s/resnet18/inference" % _kind] = (setup_detector(_kind, "resnet18"),
                                                                    run_detector)

# detection's benchTrainTargets: two 256x256 images' boxes and labels
# (all >= 1: Faster R-CNN, whose class 0 is the background, takes them as
# they are).
TRAIN_TARGETS = [
    ([[20, 30, 120, 150], [100, 40, 220, 200], [10, 10, 60, 50]], [1, 5, 17]),
    ([[50, 60, 200, 240], [0, 0, 256, 256]], [3, 42]),
]
assert all(l >= 1 for _, ls in TRAIN_TARGETS for l in ls)


def setup_train_step(kind, depth):
    """detection's BenchmarkTrainStep: build_detector in train mode, two
    256x256 images (min_size = max_size = 256), TRAIN_TARGETS, SGD with
    torchvision's recipe for 2 images (lr 0.0025, momentum 0.9, weight
    decay 1e-4) and its LinearLR warm-up (1000 iterations from 0.001)."""
    def setup():
        model = build_detector(kind, depth, 256).train()
        gen = torch.Generator().manual_seed(SEED)
        images = [torch.rand((3, 256, 256), generator=gen) for _ in range(2)]
        targets = [{"boxes": torch.tensor(b, dtype=torch.float32), "labels": torch.tensor(l)}
                   for b, l in TRAIN_TARGETS]
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.SGD(params, lr=0.01 * 2 / 8, momentum=0.9, weight_decay=1e-4)
        warmup = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.001, total_iters=1000)
        return model, images, targets, opt, warmup
    return setup


def run_train_step(s):
    model, images, targets, opt, warmup = s
    loss_dict = model(images, targets)
    loss = sum(loss for loss in loss_dict.values())
    opt.zero_grad()
    loss.backward()
    opt.step()
    warmup.step()


TRAIN_BENCHMARKS = {
    "TrainStep/%s/resnet18" % kind: (setup_train_step(kind, "resnet18"), run_train_step)
    for kind in ("fcos", "retinanet", "fasterrcnn", "fasterrcnn_v2")
}
# detection's mamlBenchBoxes: per image (x1, y1, x2, y2, label); images 0,
# 1 are the support batch, 2, 3 the query batch. Labels all >= 1, as
# Faster R-CNN needs.
MAML_BOXES = [
    [(20, 30, 120, 140, 1), (150, 60, 230, 200, 5)],
    [(10, 10, 250, 250, 3)],
    [(40, 40, 90, 80, 7), (100, 120, 200, 240, 2), (5, 180, 60, 250, 1)],
    [(60, 20, 180, 160, 4)],
]
assert all(b[4] >= 1 for per in MAML_BOXES for b in per)


def setup_maml(kind):
    """detection's BenchmarkMAMLStep: build_detector's model on a ResNet-18
    FPN in train mode, four 256x256 images with MAML_BOXES."""
    def setup():
        model = build_detector(kind, "resnet18", 256)
        gen = torch.Generator().manual_seed(SEED)
        images = [torch.rand((3, 256, 256), generator=gen) for _ in range(4)]
        targets = [{"boxes": torch.tensor([b[:4] for b in per], dtype=torch.float32),
                    "labels": torch.tensor([b[4] for b in per], dtype=torch.int64)}
                   for per in MAML_BOXES]
        params = {k: p for k, p in model.named_parameters() if p.requires_grad}
        return model.train(), images, targets, params
    return setup


def run_maml(s, alpha=0.01):
    """One second-order MAML step: the support loss's gradient with
    create_graph=True, the query loss at the adapted parameters
    (functional_call), its gradient w.r.t. the parameters (double backward)."""
    from torch.nn.utils.stateless import functional_call
    model, images, targets, params = s
    support = sum(model(images[:2], targets[:2]).values())
    inner = torch.autograd.grad(support, list(params.values()), create_graph=True)
    adapted = {k: p - alpha * g for (k, p), g in zip(params.items(), inner)}
    query = sum(functional_call(model, adapted, (images[2:], targets[2:])).values())
    torch.autograd.grad(query, list(params.values()))


def setup_maml_rcnn():
    """setup_maml("fasterrcnn"), and roi_align_vec of
    scripts/gen_detection_fasterrcnn_maml.py (torchvision's roi_align in
    differentiable torch ops, vectorised over the RoIs), checked against
    torchvision's roi_align (forward and gradient, float64, to 1e-12) by
    that script's check."""
    import gen_detection_fasterrcnn_maml as fm
    fm.check_roi_align()
    return setup_maml("fasterrcnn")(), fm.roi_align_vec


def run_maml_rcnn(s):
    """run_maml through Faster R-CNN. torchvision's roi_align has no double
    backward ("double backwards on roi_align not supported"), so for the
    step MultiScaleRoIAlign's roi_align (torchvision.ops.poolers.roi_align)
    is roi_align_vec: torchvision's algorithm as a gather of every sample's
    four neighbours and a weighted sum, differentiable twice (the
    per-RoI loop of the golden's roi_align_torch took over 10 minutes and
    18 GiB here). It is put back afterwards: the other benchmarks of the
    process keep torchvision's."""
    from torchvision.ops import poolers
    state, roi_align = s
    saved = poolers.roi_align
    poolers.roi_align = roi_align
    try:
        run_maml(state)
    finally:
        poolers.roi_align = saved


MAML_BENCHMARKS = {"MAMLStep/%s/resnet18" % kind: (setup_maml(kind), run_maml)
                   for kind in ("fcos", "retinanet")}
MAML_BENCHMARKS["MAMLStep/fasterrcnn/resnet18"] = (setup_maml_rcnn, run_maml_rcnn)


# name -> (setup function, run function)
BENCHMARKS = {
    "NMS/5000": (setup_nms(5000), run_nms),
    "RoIAlign/forward": (setup_roi_align(False), run_roi_align_forward),
    "RoIAlign/forward+backward": (setup_roi_align(True), run_roi_align_forward_backward),
    "RoIPool/forward": (setup_pool(FEAT_SHAPE, NUM_BOXES, FEAT_SHAPE[1], False),
                        run_roi_pool_forward),
    "RoIPool/forward+backward": (setup_pool(FEAT_SHAPE, NUM_BOXES, FEAT_SHAPE[1], True),
                                 run_roi_pool_forward_backward),
    "PSRoIAlign/forward": (setup_pool(PS_FEAT_SHAPE, PS_NUM_BOXES, PS_FEAT_SHAPE[1] // 49, False),
                           run_ps_roi_align_forward),
    "PSRoIAlign/forward+backward": (setup_pool(PS_FEAT_SHAPE, PS_NUM_BOXES,
                                               PS_FEAT_SHAPE[1] // 49, True),
                                    run_ps_roi_align_forward_backward),
    "PSRoIPool/forward": (setup_pool(PS_FEAT_SHAPE, PS_NUM_BOXES, PS_FEAT_SHAPE[1] // 49, False),
                          run_ps_roi_pool_forward),
    "PSRoIPool/forward+backward": (setup_pool(PS_FEAT_SHAPE, PS_NUM_BOXES,
                                              PS_FEAT_SHAPE[1] // 49, True),
                                   run_ps_roi_pool_forward_backward),
    "BoxGradients/RoIAlign/forward+backward": (setup_roi_align_boxes(), run_roi_align_boxes_forward_backward),
    "MultiScaleRoIAlign/forward": (setup_multiscale(False), run_multiscale_forward),
    "MultiScaleRoIAlign/forward+backward": (setup_multiscale(True), run_multiscale_forward_backward),
    "DeformConv2d/v1/forward": (setup_deform_conv("v1", False), run_deform_conv_forward),
    "DeformConv2d/v1/forward+backward": (setup_deform_conv("v1", True),
                                         run_deform_conv_forward_backward),
    "DeformConv2d/v2/forward": (setup_deform_conv("v2", False), run_deform_conv_forward),
    "DeformConv2d/v2/forward+backward": (setup_deform_conv("v2", True),
                                         run_deform_conv_forward_backward),
    "DeformConv2d/v2-256/forward": (setup_deform_conv("v2-256", False),
                                    run_deform_conv_forward),
    "DeformConv2d/v2-256/forward+backward": (setup_deform_conv("v2-256", True),
                                             run_deform_conv_forward_backward),
    "Conv2d/forward": (setup_deform_conv("v1", False, plain=True), run_deform_conv_forward),
    "Conv2d/forward+backward": (setup_deform_conv("v1", True, plain=True),
                                run_deform_conv_forward_backward),
    **NN_BENCHMARKS,
    **DETECTOR_BENCHMARKS,
    **TRAIN_BENCHMARKS,
    **MAML_BENCHMARKS,
}
# gops' pooling ops and convolutions are timed with ad.ReuseResults too, as
# FAMILY/reuse/...: the same torch work under the other name (as
# NN_BENCHMARKS' families).
for _key in [k for k in BENCHMARKS if k.split("/")[0] in ("RoIAlign", "RoIPool", "PSRoIAlign", "PSRoIPool", "Conv2d")]:
    _family, _rest = _key.split("/", 1)
    BENCHMARKS[_family + "/reuse/" + _rest] = BENCHMARKS[_key]
    if _family == "Conv2d":  # nn's benchBoth: gops' RoI ops have no inplace/ rows
        BENCHMARKS[_family + "/inplace/" + _rest] = BENCHMARKS[_key]


def bench(setup, run, warmup, warmup_seconds, repeats, stat, repeat_seconds=0.0):
    """Runs setup once, run warmup times and for at least warmup_seconds,
    then times runs one by one, at least repeats of them and for at least
    repeat_seconds (a Go benchmark's -benchtime: as many single calls to
    take the least of as the Go side's min-ns/op draws from); returns their
    min or median (stat) in ms."""
    state = setup()
    t0 = time.perf_counter()
    done = 0
    while done < warmup or time.perf_counter() - t0 < warmup_seconds:
        run(state)
        done += 1
    times = []
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < repeat_seconds:
        t0 = time.perf_counter()
        run(state)
        times.append((time.perf_counter() - t0) * 1e3)
    return min(times) if stat == "min" else statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", metavar="NAME", action="append",
                    help="run only this benchmark (may be repeated); one of: %s"
                    % ", ".join(BENCHMARKS))
    ap.add_argument("--repeats", type=int, default=20, help="timed runs (min 10 recommended)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed warm-up runs (at least)")
    ap.add_argument("--warmup-seconds", type=float, default=1.0,
                    help="untimed warm-up time per benchmark, at least (seconds)")
    ap.add_argument("--repeat-seconds", type=float, default=0.0,
                    help="time runs for at least this long too (seconds; default 0: --repeats runs)")
    ap.add_argument("--stat", choices=("min", "median"), default="min",
                    help="what of the timed runs to report")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="torch.set_num_threads (default: all cores)")
    args = ap.parse_args()

    if args.repeats < 1 or args.warmup < 0 or args.warmup_seconds < 0 or args.repeat_seconds < 0 or args.threads < 1:
        ap.error("--repeats and --threads must be at least 1, --warmup, --warmup-seconds and --repeat-seconds at least 0")
    names = args.only or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        ap.error("unknown benchmark(s): %s (known: %s)" % (unknown, list(BENCHMARKS)))

    torch.set_num_threads(args.threads)
    torch.manual_seed(SEED)

    print("torch %s, torchvision %s, threads %d, warmup %d and %g s, repeats %d and %g s, %s" % (
        torch.__version__, torchvision.__version__, torch.get_num_threads(),
        args.warmup, args.warmup_seconds, args.repeats, args.repeat_seconds, args.stat), file=sys.stderr)
    results = {}
    for name in names:
        setup, run = BENCHMARKS[name]
        results[name] = bench(setup, run, args.warmup, args.warmup_seconds, args.repeats, args.stat, args.repeat_seconds)
        print("%s: %.3f ms" % (name, results[name]), file=sys.stderr)

    results["maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
