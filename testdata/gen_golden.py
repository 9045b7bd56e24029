#!/usr/bin/env python3
"""Generate golden values for torchvision.ops.roi_align (forward and input gradient).

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden.py

Writes testdata/roialign_golden.json.gz. Deterministic: fixed seeds and fixed
box lists. Only torch, torchvision and golden_common.py are used.

JSON layout:

    {"torchvision": str, "torch": str, "cases": [case, ...]}

    case = {
      "name": str,
      "dtype": "float32" | "float64",
      "output_size": [ph, pw],
      "spatial_scale": float,
      "sampling_ratio": int,
      "aligned": bool,
      "input_shape": [N, C, H, W],   "input": [...],        # flat, row-major
      "boxes_shape": [K, 5],         "boxes": [...],        # rows: batch_index, x1, y1, x2, y2
      "grad_output": [...],                                 # shape == output_shape
      "output_shape": [K, C, ph, pw], "output": [...],
      "grad_input": [...],                                  # shape == input_shape
    }

All numbers are the exact tensor values converted to Python floats via
.double().tolist(); float32 cases are computed in float32.
"""

import sys

import torch
from torchvision.ops import roi_align

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, out_path, roi_case, write_torchvision  # noqa: E402

OUT_PATH = out_path("roialign_golden.json.gz")

INPUT_SHAPE = (2, 3, 9, 11)  # N, C, H, W (non-square)
ALIGNED = [False, True]
SAMPLING = [-1, 0, 1, 2, 3]
SCALES = [1.0, 0.5, 1.0 / 16.0]
OUTPUT_SIZES = [(3, 2), (2, 2), (4, 3)]

# Boxes in feature-map coordinates (x1, y1, x2, y2) for a 9x11 (HxW) map.
# They are divided by spatial_scale to obtain image coordinates, so for every
# scale the boxes land on the same region of the feature map.
# Each entry: (batch_index, x1, y1, x2, y2, inverted?)
BASE_BOXES = [
    # inside the image
    (0, 1.0, 1.0, 6.0, 5.0, False),
    (1, 2.5, 0.5, 9.5, 7.5, False),   # exact .5 coordinates
    (0, 0.0, 0.0, 10.0, 8.0, False),  # whole map, integer coordinates
    (1, 3.0, 2.0, 5.0, 7.0, False),
    # partly outside
    (0, -2.5, -1.5, 4.0, 3.0, False),
    (1, 7.0, 5.0, 14.5, 12.0, False),
    (0, -3.0, 4.0, 13.0, 6.5, False),
    # fully outside
    (1, 12.5, 1.0, 16.0, 4.0, False),  # beyond W
    (0, 2.0, 10.0, 5.0, 13.5, False),  # beyond H
    (1, -6.0, -5.0, -2.0, -1.5, False),  # negative
    # tiny (sub-pixel)
    (0, 4.2, 3.3, 4.45, 3.6, False),
    (1, 0.5, 8.25, 0.75, 8.5, False),
    # degenerate
    (0, 5.0, 2.0, 5.0, 6.0, False),   # x1 == x2
    (1, 1.5, 4.5, 8.0, 4.5, False),   # y1 == y2
    (0, 3.5, 3.5, 3.5, 3.5, False),   # point
    # inverted
    (1, 8.0, 2.0, 3.0, 6.0, True),    # x2 < x1
    (0, 2.0, 7.0, 6.0, 1.5, True),    # y2 < y1
    (1, 9.0, 6.5, 2.5, 1.0, True),    # both
]

# Extra boxes (feature-map coordinates, scaled by 1/spatial_scale like the
# base boxes); make_boxes adds +0.5 in image space to some coordinates so
# every scale also has boxes at exact .5 image coordinates.
EXTRA_IMAGE_BOXES = [
    (0, 0.5, 1.5, 7.0, 6.0),
    (1, 2.0, 3.5, 10.5, 8.0),
]


def quantize(t, step=1.0 / 256.0):
    """Round to multiples of `step` (exact in float32) so the file compresses well."""
    return torch.round(t / step) * step


def make_boxes(scale, aligned, sampling, gen):
    drop_inverted = aligned and sampling <= 0  # torchvision errors on these
    rows = []
    inv = 1.0 / scale
    for b, x1, y1, x2, y2, inverted in BASE_BOXES:
        if inverted and drop_inverted:
            continue
        rows.append([float(b), x1 * inv, y1 * inv, x2 * inv, y2 * inv])
    for b, x1, y1, x2, y2 in EXTRA_IMAGE_BOXES:
        rows.append([float(b), x1 * inv + 0.5, y1 * inv, x2 * inv, y2 * inv + 0.5])
    # two random valid boxes in image coordinates
    H, W = INPUT_SHAPE[2], INPUT_SHAPE[3]
    for b in (0, 1):
        p = torch.rand(4, generator=gen, dtype=torch.float64)
        xa, xb = sorted([p[0].item() * W * inv, p[1].item() * W * inv])
        ya, yb = sorted([p[2].item() * H * inv, p[3].item() * H * inv])
        rows.append([float(b), xa, ya, xb, yb])
    return rows


def run_case(name, dtype_name, dtype, output_size, scale, sampling, aligned, boxes_rows, gen):
    x = quantize(torch.randn(INPUT_SHAPE, generator=gen, dtype=torch.float64)).to(dtype)
    if boxes_rows:
        boxes = torch.tensor(boxes_rows, dtype=torch.float64).to(dtype)
    else:
        boxes = torch.zeros((0, 5), dtype=dtype)
    K = boxes.shape[0]
    out_shape = (K, INPUT_SHAPE[1], output_size[0], output_size[1])
    g = quantize(torch.randn(out_shape, generator=gen, dtype=torch.float64)).to(dtype)

    x.requires_grad_(True)
    out = roi_align(x, boxes, output_size=output_size, spatial_scale=scale,
                    sampling_ratio=sampling, aligned=aligned)
    assert tuple(out.shape) == out_shape, (out.shape, out_shape)
    (out * g).sum().backward()
    grad_in = x.grad if x.grad is not None else torch.zeros_like(x)

    return roi_case(name, dtype_name, output_size, scale,
                    {"sampling_ratio": int(sampling), "aligned": bool(aligned)},
                    x, boxes, g, out, grad_in)


def scale_name(s):
    return {1.0: "1", 0.5: "0.5", 1.0 / 16.0: "1_16"}[s]


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cases = []
    idx = 0
    for dtype_name, dtype in DTYPES:
        for aligned in ALIGNED:
            for sampling in SAMPLING:
                for scale in SCALES:
                    gen = torch.Generator().manual_seed(1000 + idx)
                    output_size = OUTPUT_SIZES[idx % len(OUTPUT_SIZES)]
                    boxes = make_boxes(scale, aligned, sampling, gen)
                    name = "%s/aligned=%s/sampling=%d/scale=%s/out=%dx%d" % (
                        dtype_name, aligned, sampling, scale_name(scale),
                        output_size[0], output_size[1])
                    cases.append(run_case(name, dtype_name, dtype, output_size, scale,
                                          sampling, aligned, boxes, gen))
                    idx += 1
        # empty box set, one per dtype
        gen = torch.Generator().manual_seed(5000 + len(cases))
        name = "%s/empty_boxes" % dtype_name
        cases.append(run_case(name, dtype_name, dtype, (3, 2), 0.5, 2, True, [], gen))

    write_torchvision(OUT_PATH, cases)


if __name__ == "__main__":
    main()
