#!/usr/bin/env python3
"""Generate golden values for torchvision.ops.MultiScaleRoIAlign (forward and
the gradients w.r.t. every feature map).

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_multiscale.py

Writes testdata/multiscale_golden.json.gz. Deterministic: fixed seeds and
fixed box sizes. Only torch, torchvision, collections, json, gzip and
golden_common.py are used.

JSON layout:

    {"torchvision": str, "torch": str, "op": "MultiScaleRoIAlign", "cases": [case, ...]}

    case = {
      "name": str,
      "dtype": "float32" | "float64",
      "output_size": [ph, pw],
      "sampling_ratio": int,
      "canonical_scale": int, "canonical_level": int,
      "image_sizes": [[h, w], ...],                    # one per image
      "feature_shapes": [[N, C, H, W], ...],           # finest level first
      "features": [[...], ...],                        # flat, row-major, per level
      "boxes_shapes": [[L, 4], ...],                   # one list per image (L may be 0)
      "boxes": [[...], ...],                           # rows x1, y1, x2, y2
      "scales": [float, ...],                          # torchvision's inferred scales
      "levels": [int, ...],                            # LevelMapper's level per box
                                                       # (-1: none, a negative-area box)
      "grad_output": [...],                            # shape == output_shape
      "output_shape": [K, C, ph, pw], "output": [...],
      "grad_features": [[...], ...],                   # per level, shape == feature_shapes
    }

Every configuration's boxes reach every level (checked here). Box sizes
avoid the level boundaries except at exact powers of two (s = s0 * 2^j),
where the level is exact in every dtype. float32 cases are computed in
float32. Numbers are the exact tensor values as Python floats
(.double().tolist()).
"""

import gzip
import json
import math
import sys
from collections import OrderedDict

import torch
import torchvision
from torchvision.ops import MultiScaleRoIAlign

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, flat, out_path  # noqa: E402


def boxes_of(sizes, img_h, img_w, gen):
    """Boxes of the given (w, h) sizes, centred at random inside the image
    (so that large ones reach beyond it), coordinates multiples of 1/8."""
    rows = []
    for w, h in sizes:
        cx = float(torch.randint(0, 8 * img_w, (1,), generator=gen)) / 8
        cy = float(torch.randint(0, 8 * img_h, (1,), generator=gen)) / 8
        rows.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    return rows


# name: (image sizes; strides of the levels; channels; canonical scale,
#        canonical level; per image a list of box sizes (w, h), or literal
#        boxes (x1, y1, x2, y2) as a 4-tuple marked "lit")
CONFIGS = [
    # Mask R-CNN's four levels (strides 4..32), the default mapper: s < 112
    # -> level 2 (clamped from below), 112..224 -> 3, 224..448 -> 4, beyond
    # -> 5 (clamped from above). 56, 112, 224, 448: exact boundaries.
    ("fpn4", [(128, 160), (120, 150)], [4, 8, 16, 32], 3, 224, 4, [
        [(10, 12), (56, 56), (100, 70), (112, 112), (150, 200), (224, 224), (300, 260), (448, 448), (700, 500)],
        [(30, 8), (130, 120), (240, 300), (600, 640), (5, 5)],
    ]),
    # Three levels (strides 8..32), s0 = 64, k0 = 3 (levels 3..5), with an
    # image without boxes between two with boxes.
    ("fpn3/empty", [(96, 128), (90, 120), (96, 100)], [8, 16, 32], 2, 64, 3, [
        [(20, 30), (100, 90), (130, 140)],
        [],
        [(200, 180), (300, 260), (64, 64), (128, 128), (500, 420)],
    ]),
    # Two levels (strides 2, 4), s0 = 16, k0 = 2 (levels 1..2), oblong boxes,
    # degenerate and inverted ones (a negative area has no level: zeros).
    ("fpn2", [(40, 56)], [2, 4], 4, 16, 2, [
        [(4, 4), (10, 12), (15.5, 15.5), (16, 16), (30, 9), (2, 60), (0, 20),
         ("lit", (30.0, 20.0, 10.0, 5.0)),    # both sides inverted: positive area
         ("lit", (5.0, 20.0, 25.0, 10.0)),    # one side inverted: NaN level
         ("lit", (3.0, 4.0, 3.0, 4.0))],      # a point: level kmin
    ]),
    # One level: torchvision calls roi_align directly.
    ("fpn1", [(32, 48), (30, 40)], [4], 3, 224, 4, [
        [(10, 10), (40, 20)],
        [(5.0, 5.5), ("lit", (8.0, 6.0, 2.0, 20.0))],
    ]),
    # No boxes at all.
    ("fpn2/no-boxes", [(32, 32), (32, 32)], [4, 8], 2, 224, 4, [[], []]),
]

RUNS = [  # (config, output size, sampling ratio)
    ("fpn4", (3, 3), 2),
    ("fpn4", (2, 3), 0),
    ("fpn3/empty", (2, 2), 2),
    ("fpn3/empty", (3, 2), -1),
    ("fpn2", (2, 2), 2),
    ("fpn2", (3, 3), 0),
    ("fpn1", (2, 2), 2),
    ("fpn2/no-boxes", (2, 2), 2),
]


def make_case(cfg, output_size, sampling_ratio, dtype_name, dtype, seed):
    name, image_sizes, strides, c, s0, k0, box_specs = cfg
    gen = torch.Generator().manual_seed(seed)
    n = len(image_sizes)
    max_h = max(h for h, _ in image_sizes)
    max_w = max(w for _, w in image_sizes)
    feats = OrderedDict()
    for i, s in enumerate(strides):
        shape = (n, c, max_h // s, max_w // s)
        feats[str(i)] = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype).requires_grad_(True)
    boxes = []
    for (h, w), spec in zip(image_sizes, box_specs):
        rows = []
        for item in spec:
            if item[0] == "lit":
                rows.append(item[1])
            else:
                rows.extend(boxes_of([item], h, w, gen))
        boxes.append(torch.tensor(rows, dtype=dtype).reshape(-1, 4))
    m = MultiScaleRoIAlign(list(feats), output_size, sampling_ratio,
                           canonical_scale=s0, canonical_level=k0)
    out = m(feats, boxes, image_sizes)
    grad = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dtype)
    out.backward(grad)
    if len(strides) > 1:
        levels = m.map_levels(boxes)
        k = len(strides)
        levels = [int(v) if 0 <= int(v) < k else -1 for v in levels.tolist()]
        if out.shape[0] > 0:
            assert set(levels) >= set(range(k)), (name, levels)
    else:
        levels = [0] * out.shape[0]
    for j, v in enumerate(levels):
        if v < 0:
            assert torch.all(out[j] == 0), (name, j)
    return {
        "name": "%s/out=%dx%d/sampling=%d/%s" % (name, output_size[0], output_size[1], sampling_ratio, dtype_name),
        "dtype": dtype_name,
        "output_size": list(output_size),
        "sampling_ratio": sampling_ratio,
        "canonical_scale": s0,
        "canonical_level": k0,
        "image_sizes": [list(s) for s in image_sizes],
        "feature_shapes": [list(f.shape) for f in feats.values()],
        "features": [flat(f) for f in feats.values()],
        "boxes_shapes": [list(b.shape) for b in boxes],
        "boxes": [flat(b) for b in boxes],
        "scales": list(m.scales),
        "levels": levels,
        "grad_output": flat(grad),
        "output_shape": list(out.shape),
        "output": flat(out),
        "grad_features": [flat(f.grad) if f.grad is not None else [0.0] * f.numel() for f in feats.values()],
    }


def main():
    cfgs = {c[0]: c for c in CONFIGS}
    cases = []
    for i, (cfg, size, sr) in enumerate(RUNS):
        for dname, dt in DTYPES:
            cases.append(make_case(cfgs[cfg], size, sr, dname, dt, 1000 + i))
    doc = {"torchvision": torchvision.__version__, "torch": torch.__version__,
           "op": "MultiScaleRoIAlign", "cases": cases}
    path = out_path("multiscale_golden.json.gz")
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(json.dumps(doc).encode())
    print("wrote %d cases to %s" % (len(cases), path))


if __name__ == "__main__":
    main()
