#!/usr/bin/env python3
"""Generate golden first-order gradients of roi_align w.r.t. the boxes.

torchvision's roi_align returns no gradient for the boxes, so the reference is
an independent float64 re-implementation of torchvision's roi_align (CPU
kernel semantics: coordinate * spatial_scale - 0.5 when aligned, roi size
clamped to >= 1 when not aligned, adaptive grid ceil(roi / output), count
max(gh * gw, 1), a sample with y < -1 or y > H (x likewise) gives 0,
y <= 0 -> 0, a sample on or past the last row reads that row) written with
gathers and differentiated with torch autograd. Its conventions at the kinks
are the ones gops documents: the grid, the count, the cells and the
valid/outside decisions are piecewise constant (computed on detached values);
a clamped coordinate (y <= 0, last row, unaligned size < 1) has derivative 0;
floor() picks the cell at an integer (right-sided derivative).

Each case's forward and input gradient are checked against
torchvision.ops.roi_align before the file is written.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_roialign_boxes.py

Writes testdata/roialign_boxes_golden.json.gz. Deterministic: fixed seeds.

JSON layout: {"torchvision": str, "torch": str, "cases": [case, ...]} with

    case = {
      "name": str, "dtype": "float64",
      "output_size": [ph, pw], "spatial_scale": float, "sampling_ratio": int,
      "aligned": bool,
      "input_shape": [N, C, H, W],    "input": [...],       # flat, row-major
      "boxes_shape": [K, 5],          "boxes": [...],       # batch_index, x1, y1, x2, y2
      "grad_output": [...],                                 # shape == output_shape
      "output_shape": [K, C, ph, pw], "output": [...],
      "grad_input": [...],                                  # shape == input_shape
      "grad_boxes": [...],                                  # [K, 5], column 0 zero
      "kink_boxes": [k, ...],  # boxes with a sample point on an integer (a cell
                               # boundary): a float32 run may round it into the
                               # other cell, so its box gradient may differ there
    }
"""

import math
import sys

import torch
from torchvision.ops import roi_align

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import flat, out_path, write_torchvision  # noqa: E402

OUT_PATH = out_path("roialign_boxes_golden.json.gz")
INPUT_SHAPE = (2, 3, 9, 11)


def bilinear(plane, y, x):
    """torchvision's bilinear_interpolate for one [C, H, W] plane at sample
    points y, x (1-D, same length), differentiable in y and x."""
    C, H, W = plane.shape
    valid = ((y >= -1) & (y <= H) & (x >= -1) & (x <= W)).detach()
    zero = torch.zeros_like(y)
    y = torch.where(y.detach() <= 0, zero, y)
    x = torch.where(x.detach() <= 0, zero, x)
    y_low = torch.floor(y.detach()).long()
    x_low = torch.floor(x.detach()).long()
    y_last = y_low >= H - 1
    x_last = x_low >= W - 1
    y = torch.where(y_last, torch.full_like(y, H - 1), y)
    x = torch.where(x_last, torch.full_like(x, W - 1), x)
    y_low = torch.where(y_last, torch.full_like(y_low, H - 1), y_low)
    x_low = torch.where(x_last, torch.full_like(x_low, W - 1), x_low)
    y_high = torch.where(y_last, y_low, y_low + 1)
    x_high = torch.where(x_last, x_low, x_low + 1)
    # outside points: any in-range index, weight 0
    y_low, y_high, x_low, x_high = [torch.where(valid, i, torch.zeros_like(i)) for i in (y_low, y_high, x_low, x_high)]
    ly = y - y_low.to(y.dtype)
    lx = x - x_low.to(x.dtype)
    hy, hx = 1 - ly, 1 - lx
    v = (hy * hx * plane[:, y_low, x_low] + hy * lx * plane[:, y_low, x_high] +
         ly * hx * plane[:, y_high, x_low] + ly * lx * plane[:, y_high, x_high])
    return torch.where(valid, v, torch.zeros_like(v))  # [C, P]


def ref_roi_align(x, boxes, output_size, scale, sampling, aligned, kinks=None):
    PH, PW = output_size
    off = 0.5 if aligned else 0.0
    outs = []
    for k in range(boxes.shape[0]):
        b = boxes[k]
        n = int(b[0].item())
        x1, y1, x2, y2 = b[1] * scale - off, b[2] * scale - off, b[3] * scale - off, b[4] * scale - off
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            one = torch.ones_like(rw)
            rw = torch.where(rw.detach() < 1, one, rw)
            rh = torch.where(rh.detach() < 1, one, rh)
        bh, bw = rh / PH, rw / PW
        if sampling > 0:
            gh = gw = sampling
        else:
            gh = max(int(math.ceil(bh.item())), 0)
            gw = max(int(math.ceil(bw.item())), 0)
        count = max(gh * gw, 1)
        if gh * gw == 0:
            outs.append(torch.zeros((x.shape[1], PH, PW), dtype=x.dtype) * bh)
            continue
        outs.append(bin_sums(x[n], y1, x1, bh, bw, PH, PW, gh, gw, kinks, k) / count)
    return torch.stack(outs)


def bin_sums(plane, y1, x1, bh, bw, PH, PW, gh, gw, kinks, k):
    """The sums of the bilinear samples of plane [C, H, W] over each bin's
    gh x gw grid, [C, PH, PW]; appends k to kinks (when not None) if a
    sample point lies on an integer."""
    dt = plane.dtype
    ph = torch.arange(PH, dtype=dt).repeat_interleave(gh)
    iy = torch.arange(gh, dtype=dt).repeat(PH)
    pw = torch.arange(PW, dtype=dt).repeat_interleave(gw)
    ix = torch.arange(gw, dtype=dt).repeat(PW)
    ys = y1 + ph * bh + (iy + 0.5) * bh / gh  # [PH*gh]
    xs = x1 + pw * bw + (ix + 0.5) * bw / gw  # [PW*gw]
    if kinks is not None:
        pts = torch.cat([ys.detach(), xs.detach()])
        if torch.any((pts - torch.round(pts)).abs() < 1e-9):
            kinks.append(k)
    Y = ys[:, None].expand(PH * gh, PW * gw).reshape(-1)
    X = xs[None, :].expand(PH * gh, PW * gw).reshape(-1)
    v = bilinear(plane, Y, X)  # [C, PH*gh*PW*gw]
    return v.reshape(plane.shape[0], PH, gh, PW, gw).sum(dim=(2, 4))


BOX_ROWS = [  # image coordinates at scale 1: inside, partly outside, tiny, large, integer
    (0, 1.13, 0.87, 5.41, 4.29),
    (1, -0.63, 1.19, 2.47, 3.77),
    (1, 2.37, 2.21, 2.83, 2.66),    # smaller than a pixel: unaligned size clamp
    (0, 6.3, 4.1, 12.7, 10.2),      # past the last row and column
    (0, -2.6, -1.9, 3.3, 2.7),      # above and left: y <= 0 and outside samples
    (1, 0.71, 1.37, 9.93, 7.61),    # large
    (1, 2.0, 3.0, 6.0, 7.0),        # integer corners
    (0, 4.6, 2.2, 3.9, 5.4),        # x inverted (unaligned: clamp)
]

CONFIGS = [  # aligned, sampling, scale, output size
    (False, 0, 1.0, (2, 3)),
    (False, 2, 1.0, (3, 2)),
    (True, -1, 1.0, (2, 2)),
    (True, 2, 0.5, (3, 3)),
    (False, -1, 0.5, (2, 2)),
    (True, 3, 0.25, (1, 2)),
    (False, 1, 0.25, (4, 3)),
]


def main():
    torch.set_num_threads(1)
    cases = []
    for idx, (aligned, sampling, scale, output_size) in enumerate(CONFIGS):
        gen = torch.Generator().manual_seed(7000 + idx)
        x = torch.randn(INPUT_SHAPE, generator=gen, dtype=torch.float64)
        rows = []
        for b, x1, y1, x2, y2 in BOX_ROWS:
            if aligned and sampling <= 0 and x2 < x1:
                continue  # torchvision errors on inverted aligned adaptive boxes
            rows.append([float(b), x1 / scale, y1 / scale, x2 / scale, y2 / scale])
        boxes = torch.tensor(rows, dtype=torch.float64)
        K = boxes.shape[0]
        out_shape = (K, INPUT_SHAPE[1], output_size[0], output_size[1])
        g = torch.randn(out_shape, generator=gen, dtype=torch.float64)

        xr = x.clone().requires_grad_(True)
        br = boxes.clone().requires_grad_(True)
        kinks = []
        out = ref_roi_align(xr, br, output_size, scale, sampling, aligned, kinks)
        gx, gb = torch.autograd.grad((out * g).sum(), (xr, br))

        xt = x.clone().requires_grad_(True)
        tv = roi_align(xt, boxes, output_size=output_size, spatial_scale=scale,
                       sampling_ratio=sampling, aligned=aligned)
        (tv * g).sum().backward()
        assert torch.allclose(out, tv, rtol=1e-12, atol=1e-12), (idx, (out - tv).abs().max())
        assert torch.allclose(gx, xt.grad, rtol=1e-12, atol=1e-12), (idx, (gx - xt.grad).abs().max())
        assert torch.all(gb[:, 0] == 0)

        cases.append(golden_case(
            "aligned=%s/sampling=%d/scale=%g/out=%dx%d" % (aligned, sampling, scale, output_size[0], output_size[1]),
            output_size, scale, sampling, aligned, x, boxes, g, out, gx, gb, kinks))
    write_golden(OUT_PATH, cases)


def golden_case(name, output_size, scale, sampling, aligned, x, boxes, g, out, gx, gb, kinks):
    """One case of the JSON layout above, from float64 tensors."""
    return {
        "name": name,
        "dtype": "float64",
        "output_size": list(output_size),
        "spatial_scale": float(scale),
        "sampling_ratio": int(sampling),
        "aligned": bool(aligned),
        "input_shape": list(x.shape),
        "input": flat(x),
        "boxes_shape": list(boxes.shape),
        "boxes": flat(boxes),
        "grad_output": flat(g),
        "output_shape": list(out.shape),
        "output": flat(out),
        "grad_input": flat(gx),
        "grad_boxes": flat(gb),
        "kink_boxes": kinks,
    }


def write_golden(path, cases):
    """Writes the cases as gzipped JSON with the torch versions."""
    write_torchvision(path, cases)


if __name__ == "__main__":
    main()
