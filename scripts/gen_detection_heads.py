#!/usr/bin/env python3
"""Generate golden values for detection's heads: torchvision 0.14's
RetinaNetHead (v1: norm_layer None; v2: norm_layer partial(nn.GroupNorm,
32), as retinanet_resnet50_fpn_v2 builds it) and FCOSHead, on random
feature pyramids of odd sizes, batch 2, in float64 and float32.

Run from the repository root:

    /usr/bin/python3 scripts/gen_detection_heads.py

Writes testdata/detection/heads_golden.json.gz, the same bytes on every
run. Every state-dict value and feature is an integer times a power of
two (ints and scale below), exact in float32 and float64, so the file
stays small and both dtypes run on the same numbers. RetinaNetHead has
no num_convs argument (its towers are 4 convolutions); a case with fewer
keeps the first num_convs blocks of both towers, as a head built with
that many would have them.

JSON layout:

    {"torch": str, "torchvision": str, "cases": [case, ...]}

    case = {"name": str, "head": "retinanet" | "fcos", "norm": "" | "groupnorm",
            "in_channels": int, "num_anchors": int, "num_classes": int,
            "num_convs": int,
            "state_dict": [{"key": str, "shape": [...], "ints": [...], "scale": float}, ...],
                          (torchvision's state_dict order)
            "features": [{"shape": [N, C, H, W], "ints": [...], "scale": float}, ...],
            "outputs": {"float64" | "float32": {"cls_logits": [...],
                        "bbox_regression": [...], "bbox_ctrness": [...] (fcos only),
                        "shapes": {name: [N, sum HWA, K | 4 | 1]}}}}

A value is ints[i] * scale; outputs are torchvision's concatenated head
outputs (torch.cat over the levels along dim 1), flattened row-major.
"""

import json
import os
import sys as _sys
_sys.dont_write_bytecode = True
_sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402  (write_compact)
from functools import partial

import torch
import torchvision
from torch import nn
from torchvision.models.detection.fcos import FCOSHead
from torchvision.models.detection.retinanet import RetinaNetHead

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "testdata", "detection", "heads_golden.json.gz")

# (name, head, norm, in_channels, num_anchors, num_classes, num_convs, level sizes)
CASES = [
    ("retinanet_v1", "retinanet", "", 32, 3, 4, 1, [(9, 7), (5, 4), (3, 2), (2, 1)]),
    ("retinanet_v2", "retinanet", "groupnorm", 32, 2, 3, 2, [(7, 9), (4, 5), (2, 3)]),
    ("fcos", "fcos", "groupnorm", 32, 1, 3, 4, [(9, 7), (5, 4), (3, 2), (2, 1), (1, 1)]),
]


def ints(gen, shape, lo, hi):
    """Integers uniform in [lo, hi] of the given shape."""
    return torch.randint(lo, hi + 1, tuple(shape), generator=gen, dtype=torch.int64)


def quantised(gen, key, shape):
    """(ints, scale) for the state-dict entry key: conv weights ±64·2⁻⁹,
    GroupNorm weights 0.5..1.5, biases ±64·2⁻⁸."""
    if key.endswith("weight") and len(shape) == 1:  # GroupNorm weight
        return ints(gen, shape, 64, 192), 2.0 ** -7
    if key.endswith("weight"):
        return ints(gen, shape, -64, 64), 2.0 ** -9
    return ints(gen, shape, -64, 64), 2.0 ** -8


def build(head, norm, cin, a, k, num_convs):
    if head == "fcos":
        return FCOSHead(cin, a, k, num_convs=num_convs)
    m = RetinaNetHead(cin, a, k, norm_layer=partial(nn.GroupNorm, 32) if norm else None)
    for sub in (m.classification_head, m.regression_head):
        sub.conv = nn.Sequential(*list(sub.conv)[:num_convs])
    return m


def main():
    gen = torch.Generator().manual_seed(2814)
    cases = []
    for name, head, norm, cin, a, k, num_convs, sizes in CASES:
        m = build(head, norm, cin, a, k, num_convs).double().eval()
        sd = []
        with torch.no_grad():
            for key, v in m.state_dict().items():
                q, scale = quantised(gen, key, v.shape)
                v.copy_(q.double() * scale)
                sd.append({"key": key, "shape": list(v.shape), "ints": q.reshape(-1).tolist(), "scale": scale})
        feats = []
        for h, w in sizes:
            q = ints(gen, (2, cin, h, w), -128, 128)
            feats.append({"shape": [2, cin, h, w], "ints": q.reshape(-1).tolist(), "scale": 2.0 ** -6})
        outputs = {}
        for dt_name, dt in (("float64", torch.float64), ("float32", torch.float32)):
            md = m.to(dt)
            x = [torch.tensor(f["ints"], dtype=torch.int64).reshape(f["shape"]).to(dt) * f["scale"] for f in feats]
            with torch.no_grad():
                out = md(x)
            outputs[dt_name] = {n: t.double().reshape(-1).tolist() for n, t in out.items()}
            outputs[dt_name]["shapes"] = {n: list(t.shape) for n, t in out.items()}
        cases.append({"name": name, "head": head, "norm": norm, "in_channels": cin, "num_anchors": a,
                      "num_classes": k, "num_convs": num_convs, "state_dict": sd, "features": feats,
                      "outputs": outputs})
    doc = {"torch": torch.__version__, "torchvision": torchvision.__version__, "cases": cases}
    n = gc.write_compact(OUT, doc)
    print("wrote %s: %d cases, %d bytes gz (%d bytes json)" % (os.path.relpath(OUT, ROOT), len(cases), os.path.getsize(OUT), n))


if __name__ == "__main__":
    main()
