#!/usr/bin/env python3
"""Generate golden first-order gradients of ps_roi_align w.r.t. the boxes.

torchvision's ps_roi_align returns no gradient for the boxes, so the
reference is an independent float64 re-implementation of torchvision's
ps_roi_align (CPU kernel semantics: coordinate * spatial_scale - 0.5, no roi
size clamp, adaptive grid ceil(roi / output), count gh * gw, roi_align's
bilinear rule; output channel c of bin (ph, pw) reads input channel
(c * PH + ph) * PW + pw) written with gathers and differentiated with torch
autograd. The bilinear sampling is gen_golden_roialign_boxes.py's (bin_sums), whose
conventions at the kinks are the ones gops documents: the grid, the count,
the cells and the valid/outside decisions are piecewise constant (computed
on detached values); a clamped coordinate (y <= 0, last row) has derivative
0; floor() picks the cell at an integer (right-sided derivative).

Each case's forward and input gradient are checked against
torchvision.ops.ps_roi_align before the file is written. Boxes whose bins
have no samples (torchvision: NaN) are left out.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_psroialign_boxes.py

Writes testdata/psroialign_boxes_golden.json.gz. Deterministic: fixed seeds.

JSON layout: as gen_golden_roialign_boxes.py's, with "aligned" always true
(ps_roi_align's geometry) and output_shape [K, C / (ph * pw), ph, pw].
"""

import math
import os
import sys

import torch
from torchvision.ops import ps_roi_align

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_golden_roialign_boxes import bin_sums, golden_case, write_golden  # noqa: E402
from golden_common import out_path  # noqa: E402

OUT_PATH = out_path("psroialign_boxes_golden.json.gz")
H, W = 9, 11


def ref_ps_roi_align(x, boxes, output_size, scale, sampling, kinks=None):
    PH, PW = output_size
    C = x.shape[1]
    Co = C // (PH * PW)
    outs = []
    for k in range(boxes.shape[0]):
        b = boxes[k]
        n = int(b[0].item())
        x1, y1, x2, y2 = b[1] * scale - 0.5, b[2] * scale - 0.5, b[3] * scale - 0.5, b[4] * scale - 0.5
        bh, bw = (y2 - y1) / PH, (x2 - x1) / PW
        if sampling > 0:
            gh = gw = sampling
        else:
            gh = int(math.ceil(bh.item()))
            gw = int(math.ceil(bw.item()))
        assert gh > 0 and gw > 0, "a bin without samples: torchvision gives NaN"
        # every channel at every bin
        v = bin_sums(x[n], y1, x1, bh, bw, PH, PW, gh, gw, kinks, k) / (gh * gw)
        v = v.reshape(Co, PH, PW, PH, PW)
        i = torch.arange(PH)[:, None].expand(PH, PW)
        j = torch.arange(PW)[None, :].expand(PH, PW)
        outs.append(v[:, i, j, i, j])  # channel (c*PH + ph)*PW + pw at bin (ph, pw)
    return torch.stack(outs)


BOX_ROWS = [  # image coordinates at scale 1: inside, partly outside, tiny, large, integer
    (0, 1.13, 0.87, 5.41, 4.29),
    (1, -0.63, 1.19, 2.47, 3.77),
    (1, 2.37, 2.21, 2.83, 2.66),    # smaller than a pixel
    (0, 6.3, 4.1, 12.7, 10.2),      # past the last row and column
    (0, -2.6, -1.9, 3.3, 2.7),      # above and left: y <= 0 and outside samples
    (1, 0.71, 1.37, 9.93, 7.61),    # large
    (1, 2.5, 3.5, 6.5, 7.5),        # samples on integers (aligned: -0.5)
    (0, 4.6, 2.2, 3.9, 5.4),        # x inverted (fixed sampling only)
]

CONFIGS = [  # sampling, scale, output size, input channels
    (0, 1.0, (2, 3), 12),
    (2, 1.0, (3, 2), 6),
    (-1, 1.0, (2, 2), 8),
    (2, 0.5, (3, 3), 18),
    (-1, 0.5, (2, 2), 4),
    (3, 0.25, (1, 2), 4),
    (1, 0.25, (4, 3), 24),
]


def main():
    torch.set_num_threads(1)
    cases = []
    for idx, (sampling, scale, output_size, C) in enumerate(CONFIGS):
        PH, PW = output_size
        gen = torch.Generator().manual_seed(8000 + idx)
        x = torch.randn((2, C, H, W), generator=gen, dtype=torch.float64)
        rows = []
        for b, x1, y1, x2, y2 in BOX_ROWS:
            if sampling <= 0 and (math.ceil((y2 - y1) / PH) <= 0 or math.ceil((x2 - x1) / PW) <= 0):
                continue  # no samples: torchvision gives NaN
            rows.append([float(b), x1 / scale, y1 / scale, x2 / scale, y2 / scale])
        boxes = torch.tensor(rows, dtype=torch.float64)
        K = boxes.shape[0]
        out_shape = (K, C // (PH * PW), PH, PW)
        g = torch.randn(out_shape, generator=gen, dtype=torch.float64)

        xr = x.clone().requires_grad_(True)
        br = boxes.clone().requires_grad_(True)
        kinks = []
        out = ref_ps_roi_align(xr, br, output_size, scale, sampling, kinks)
        gx, gb = torch.autograd.grad((out * g).sum(), (xr, br))

        xt = x.clone().requires_grad_(True)
        tv = ps_roi_align(xt, boxes, output_size=output_size, spatial_scale=scale, sampling_ratio=sampling)
        (tv * g).sum().backward()
        assert torch.allclose(out, tv, rtol=1e-12, atol=1e-12), (idx, (out - tv).abs().max())
        assert torch.allclose(gx, xt.grad, rtol=1e-12, atol=1e-12), (idx, (gx - xt.grad).abs().max())
        assert torch.all(gb[:, 0] == 0)
        assert torch.all(gb[:, 1:].abs().sum(dim=1) > 0), gb

        cases.append(golden_case("sampling=%d/scale=%g/out=%dx%d/c=%d" % (sampling, scale, PH, PW, C),
                                 output_size, scale, sampling, True, x, boxes, g, out, gx, gb, kinks))
    write_golden(OUT_PATH, cases)


if __name__ == "__main__":
    main()
