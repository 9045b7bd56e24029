#!/usr/bin/env python3
"""Generate golden values for torchvision.ops.roi_pool, ps_roi_align and
ps_roi_pool (forward and input gradient).

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_pool.py

Writes testdata/roipool_golden.json.gz, testdata/psroialign_golden.json.gz
and testdata/psroipool_golden.json.gz. Deterministic: fixed seeds and fixed
box lists. Only torch, torchvision, math and golden_common.py are used.

JSON layout, as testdata/gen_golden.py:

    {"torchvision": str, "torch": str, "op": str, "cases": [case, ...]}

    case = {
      "name": str,
      "dtype": "float32" | "float64",
      "output_size": [ph, pw],
      "spatial_scale": float,
      "sampling_ratio": int,                                # ps_roi_align only
      "input_shape": [N, C, H, W],   "input": [...],        # flat, row-major
      "boxes_shape": [K, 5],         "boxes": [...],        # rows: batch_index, x1, y1, x2, y2
      "grad_output": [...],                                 # shape == output_shape
      "output_shape": [K, C', ph, pw], "output": [...],     # C' = C for roi_pool, C/(ph*pw) else
      "grad_input": [...],                                  # shape == input_shape
      # ps_roi_align only:
      "nan_output": [i, ...],   # flat indices where torchvision's output is NaN
                                # (a bin without samples: 0/0); "output" holds 0 there
      # ps_roi_pool only:
      "output_gops": [...],     # ps_roi_pool on the input padded with one zero row
                                # and column at the bottom and right: torchvision's
                                # forward then clips bins at [0, H] x [0, W], as its
                                # backward does, and as gops does in both
      "border_boxes": [k, ...], # boxes with a bin whose unclipped end reaches row H
                                # or column W, where torchvision's forward (clipped
                                # at H-1, W-1) differs from gops
    }

All numbers are the exact tensor values converted to Python floats via
.double().tolist(); float32 cases are computed in float32. Inputs, upstream
gradients and boxes are multiples of powers of two, so that with the scales
1, 0.5 and 1/16 every box coordinate times spatial_scale is exact in
float32: torchvision's ps_roi_pool backward rounds it in float32 even for
float64 input, and rounding is then the same everywhere. roi_pool and
ps_roi_align also get one case per dtype at scale 0.3, where the products
are rounded in the working dtype.
"""

import math
import sys

import torch
from torchvision.ops import ps_roi_align, ps_roi_pool, roi_pool

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, flat, out_path, roi_case, write_torchvision  # noqa: E402
SCALES = [1.0, 0.5, 1.0 / 16.0]
OUTPUT_SIZES = [(3, 2), (2, 2), (4, 3)]
H, W = 9, 11

# Boxes in feature-map coordinates (x1, y1, x2, y2) on a 9x11 (HxW) map,
# divided by spatial_scale to give image coordinates, so that for every scale
# they land on the same region. Many coordinates end in .5: rounding half
# away from zero (C's round) and half to even differ there, for both signs.
BASE_BOXES = [
    # inside the image
    (0, 1.0, 1.0, 6.0, 5.0),
    (1, 2.5, 0.5, 9.5, 7.5),    # .5 coordinates
    (0, 0.0, 0.0, 10.0, 8.0),   # whole map: ends on the last column and row
    (1, 3.0, 2.0, 5.0, 7.0),
    (0, 1.5, 2.5, 4.5, 3.5),    # .5 everywhere, small
    # at and beyond the border
    (1, 0.0, 0.0, 11.0, 9.0),   # ends one past the last column and row
    (0, 4.0, 3.0, 10.5, 8.5),   # rounds onto/past the border
    (1, 6.0, 0.0, 12.0, 4.0),
    # partly outside
    (0, -2.5, -1.5, 4.0, 3.0),
    (1, 7.0, 5.0, 14.5, 12.0),
    (0, -3.0, 4.0, 13.0, 6.5),
    # fully outside: every bin empty
    (1, 12.5, 1.0, 16.0, 4.0),
    (0, 2.0, 10.0, 5.0, 13.5),
    (1, -6.0, -5.0, -2.0, -1.5),
    # tiny (sub-pixel)
    (0, 4.25, 3.25, 4.5, 3.5),
    (1, 0.5, 7.75, 0.75, 8.0),
    # degenerate
    (0, 5.0, 2.0, 5.0, 6.0),    # x1 == x2
    (1, 1.5, 4.5, 8.0, 4.5),    # y1 == y2
    (0, 3.5, 3.5, 3.5, 3.5),    # point
    # inverted
    (1, 8.0, 2.0, 3.0, 6.0),    # x2 < x1
    (0, 2.0, 7.0, 6.0, 1.5),    # y2 < y1
    (1, 9.0, 6.5, 2.5, 1.0),    # both
]

# Boxes at .5 image coordinates (feature coordinates times 1/scale, plus
# 0.5 on some sides).
EXTRA_IMAGE_BOXES = [
    (0, 0.5, 1.5, 7.0, 6.0),
    (1, 2.0, 3.5, 10.5, 8.0),
]


def quantize(t, step):
    """Round to multiples of `step` (exact in float32) so the file compresses well."""
    return torch.round(t / step) * step


def make_boxes(scale, gen):
    inv = 1.0 / scale
    rows = [[float(b), x1 * inv, y1 * inv, x2 * inv, y2 * inv] for b, x1, y1, x2, y2 in BASE_BOXES]
    for b, x1, y1, x2, y2 in EXTRA_IMAGE_BOXES:
        rows.append([float(b), x1 * inv + 0.5, y1 * inv, x2 * inv, y2 * inv + 0.5])
    # two random valid boxes, on a grid of 1/4 feature pixel
    for b in (0, 1):
        p = quantize(torch.rand(4, generator=gen, dtype=torch.float64), 1.0 / 64.0)
        xa, xb = sorted([p[0].item() * (W + 2) - 1, p[1].item() * (W + 2) - 1])
        ya, yb = sorted([p[2].item() * (H + 2) - 1, p[3].item() * (H + 2) - 1])
        rows.append([float(b), xa * inv, ya * inv, xb * inv, yb * inv])
    return rows


def c_round(x):
    """C's round: half away from zero."""
    a = abs(x)
    f = math.floor(a)
    r = f + 1 if a - f >= 0.5 else f
    return int(math.copysign(r, x))


def ps_roi_pool_border_boxes(boxes, scale, output_size, dtype):
    """Boxes with a ps_roi_pool bin whose unclipped end reaches row H or
    column W, with torchvision's geometry in the working dtype (the products
    are exact in float32, see the module doc)."""
    ph, pw = output_size
    out = []
    for k, row in enumerate(boxes.tolist()):
        s = torch.tensor(scale, dtype=dtype)
        x1, y1, x2, y2 = (c_round((torch.tensor(v, dtype=dtype) * s).item()) for v in row[1:])
        bin_h = (torch.tensor(float(max(y2 - y1, 1)), dtype=dtype) / ph)
        bin_w = (torch.tensor(float(max(x2 - x1, 1)), dtype=dtype) / pw)
        hend = math.ceil((ph * bin_h).item()) + y1
        wend = math.ceil((pw * bin_w).item()) + x1
        if hend >= H or wend >= W:
            out.append(k)
    return out


def run_case(op, name, dtype_name, dtype, input_shape, output_size, scale, sampling,
             boxes_rows, gen, ties):
    x = torch.randn(input_shape, generator=gen, dtype=torch.float64)
    # ties: few distinct values, so that many bins have several maxima
    x = (torch.round(x * 1.5) if ties else quantize(x, 1.0 / 256.0)).to(dtype)
    if boxes_rows:
        boxes = torch.tensor(boxes_rows, dtype=torch.float64).to(dtype)
    else:
        boxes = torch.zeros((0, 5), dtype=dtype)
    K = boxes.shape[0]
    c_out = input_shape[1] if op == "roi_pool" else input_shape[1] // (output_size[0] * output_size[1])
    out_shape = (K, c_out, output_size[0], output_size[1])
    g = quantize(torch.randn(out_shape, generator=gen, dtype=torch.float64), 1.0 / 256.0).to(dtype)

    x.requires_grad_(True)
    if op == "roi_pool":
        out = roi_pool(x, boxes, output_size=output_size, spatial_scale=scale)
    elif op == "ps_roi_align":
        out = ps_roi_align(x, boxes, output_size=output_size, spatial_scale=scale,
                           sampling_ratio=sampling)
    else:
        out = ps_roi_pool(x, boxes, output_size=output_size, spatial_scale=scale)
    assert tuple(out.shape) == out_shape, (out.shape, out_shape)
    (out * g).sum().backward()
    grad_in = x.grad if x.grad is not None else torch.zeros_like(x)

    case = roi_case(name, dtype_name, output_size, scale, {}, x, boxes, g, out, grad_in)
    if op == "ps_roi_align":
        case["sampling_ratio"] = int(sampling)
        nan = torch.isnan(out.detach()).reshape(-1)
        case["nan_output"] = torch.nonzero(nan).reshape(-1).tolist()
        case["output"] = flat(torch.where(torch.isnan(out.detach()), torch.zeros_like(out), out))
        assert not torch.isnan(grad_in).any()
    if op == "ps_roi_pool":
        padded = torch.nn.functional.pad(x.detach(), (0, 1, 0, 1))
        with torch.no_grad():
            ours = ps_roi_pool(padded, boxes, output_size=output_size, spatial_scale=scale)
        case["output_gops"] = flat(ours)
        case["border_boxes"] = ps_roi_pool_border_boxes(boxes, scale, output_size, dtype)
    return case


# A scale that is not a power of two: box coordinates times it are rounded
# products, and rounding them in the working dtype (as torchvision does)
# matters at .5. Not for ps_roi_pool, whose float64 backward rounds the
# product in float32 and disagrees with its own forward there.
EXTRA_SCALE = 0.3


def scale_name(s):
    return {1.0: "1", 0.5: "0.5", 1.0 / 16.0: "1_16", EXTRA_SCALE: "0.3"}[s]


def ps_case(op, name, dtype_name, dtype, output_size, scale, sampling, gen, empty=False):
    """A position-sensitive op's case: input (2, C, H, W) with C = 2 * ph * pw,
    the boxes of make_boxes(scale, gen) (none if empty), no ties."""
    c = 2 * output_size[0] * output_size[1]
    boxes = [] if empty else make_boxes(scale, gen)
    return run_case(op, name, dtype_name, dtype, (2, c, H, W), output_size, scale, sampling,
                    boxes, gen, False)


def write(op, cases):
    path = out_path({"roi_pool": "roipool", "ps_roi_align": "psroialign",
                               "ps_roi_pool": "psroipool"}[op] + "_golden.json.gz")
    write_torchvision(path, cases, op)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    seed = 0

    # roi_pool: every dtype x scale x output size, half of them with ties.
    cases = []
    for dtype_name, dtype in DTYPES:
        for si, scale in enumerate(SCALES):
            for oi, output_size in enumerate(OUTPUT_SIZES):
                ties = (si + oi) % 2 == 0
                gen = torch.Generator().manual_seed(2000 + seed)
                seed += 1
                name = "%s/scale=%s/out=%dx%d%s" % (dtype_name, scale_name(scale), output_size[0],
                                                    output_size[1], "/ties" if ties else "")
                cases.append(run_case("roi_pool", name, dtype_name, dtype, (2, 3, H, W),
                                      output_size, scale, 0, make_boxes(scale, gen), gen, ties))
        gen = torch.Generator().manual_seed(2800 + seed)
        cases.append(run_case("roi_pool", "%s/scale=0.3/out=3x2" % dtype_name, dtype_name, dtype,
                              (2, 3, H, W), (3, 2), EXTRA_SCALE, 0, make_boxes(EXTRA_SCALE, gen),
                              gen, False))
        gen = torch.Generator().manual_seed(2900 + seed)
        cases.append(run_case("roi_pool", "%s/empty_boxes" % dtype_name, dtype_name, dtype,
                              (2, 3, H, W), (2, 2), 0.5, 0, [], gen, False))
    write("roi_pool", cases)

    # ps_roi_align: every dtype x sampling ratio x scale; C = 2 * ph * pw.
    cases = []
    for dtype_name, dtype in DTYPES:
        for sampling in (-1, 0, 1, 2):
            for si, scale in enumerate(SCALES):
                output_size = OUTPUT_SIZES[seed % len(OUTPUT_SIZES)]
                gen = torch.Generator().manual_seed(3000 + seed)
                seed += 1
                name = "%s/sampling=%d/scale=%s/out=%dx%d" % (dtype_name, sampling, scale_name(scale),
                                                              output_size[0], output_size[1])
                cases.append(ps_case("ps_roi_align", name, dtype_name, dtype, output_size, scale,
                                     sampling, gen))
        gen = torch.Generator().manual_seed(3800 + seed)
        cases.append(ps_case("ps_roi_align", "%s/sampling=2/scale=0.3/out=2x2" % dtype_name,
                             dtype_name, dtype, (2, 2), EXTRA_SCALE, 2, gen))
        gen = torch.Generator().manual_seed(3900 + seed)
        cases.append(ps_case("ps_roi_align", "%s/empty_boxes" % dtype_name, dtype_name, dtype,
                             (2, 2), 0.5, 2, gen, empty=True))
    write("ps_roi_align", cases)

    # ps_roi_pool: every dtype x scale x output size; C = 2 * ph * pw.
    cases = []
    for dtype_name, dtype in DTYPES:
        for scale in SCALES:
            for output_size in OUTPUT_SIZES:
                gen = torch.Generator().manual_seed(4000 + seed)
                seed += 1
                name = "%s/scale=%s/out=%dx%d" % (dtype_name, scale_name(scale), output_size[0],
                                                  output_size[1])
                cases.append(ps_case("ps_roi_pool", name, dtype_name, dtype, output_size, scale, 0,
                                     gen))
        gen = torch.Generator().manual_seed(4900 + seed)
        cases.append(ps_case("ps_roi_pool", "%s/empty_boxes" % dtype_name, dtype_name, dtype,
                             (2, 2), 0.5, 0, gen, empty=True))
    write("ps_roi_pool", cases)


if __name__ == "__main__":
    main()
