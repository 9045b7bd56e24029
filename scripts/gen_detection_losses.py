#!/usr/bin/env python3
"""Golden training losses of torchvision's detectors for package detection.

The tiny FCOS and RetinaNet v1 / v2 of scripts/gen_detection_models.py,
loaded from their checkpoints (testdata/detection/<model>.pt), in float64
and train mode (v2's BatchNorm2d with batch statistics), with the
transform's min_size and max_size the images' own size (no resize: the
boxes are the transformed image's pixels), get torchvision 0.14's loss
dict model(images, targets) for batches of two images with 0, 1 and many
ground-truth boxes: boxes at the image borders, tiny and huge ones,
overlapping and equal ones, several classes. For each case it writes the losses and,
for every trainable parameter (requires_grad; conv1 and layer1 frozen as
torchvision's trainable_layers=3 freezes them) of the sum of the losses'
gradient g: Σ g, Σ |g|, Σ g_i·sin(0.61·i + 0.3), Σ g² and the first four
elements (the whole gradients would be megabytes).

The images are a formula (no pixels stored): element i (row-major over
[3, H, W]) of image b is 0.5 + 0.5·sin(0.37·i + 1.3·b + seed); the Go test
computes the same (detection/loss_golden_test.go).

Writes testdata/detection/losses_golden.json.gz. Run from the repository
root: /usr/bin/python3 scripts/gen_detection_losses.py
"""

import math
import os
import sys

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402
import gen_detection_models as gm  # noqa: E402  (the tiny models' builder)

OUT = os.path.join(gc.HERE, "detection")

# H, W of every image: not multiples of 32, so the batch is padded.
H, W = 80, 112

NUM_CLASSES = {"fcos": 4, "retinanet_v1": 3, "retinanet_v2": 3}

# Each case: name, Gmax (the Go side's padded maximum), and per image a
# list of (x1, y1, x2, y2, label).
CASES = [
    ("many", 7, [
        [(0, 0, 40, 30, 1),  # top-left border
         (100, 70, 112, 80, 2),  # bottom-right border
         (50, 40, 53, 42, 0),  # tiny
         (0, 0, 112, 80, 2),  # the whole image
         (30, 20, 70, 60, 1),
         (32.5, 22.25, 68, 58.75, 0)],  # overlapping the last, smaller
        [(10, 10, 50, 70, 2),
         (60.5, 5.25, 100.75, 30.5, 1),
         (2, 60, 110, 79, 0)]]),
    ("one", 2, [[(20, 15, 60, 50, 1)], []]),
    ("none", 3, [[], []]),
    # Equal boxes of different classes (the first wins the ties of
    # torch.max), a box of one pixel.
    ("duplicates", 2, [
        [(10, 10, 50, 50, 1), (10, 10, 50, 50, 2)],
        [(20.25, 30.5, 21.25, 31.5, 1), (60, 8, 108, 72, 0)]]),
]


def image(b, seed):
    n = 3 * H * W
    v = [0.5 + 0.5 * math.sin(0.37 * i + 1.3 * b + seed) for i in range(n)]
    return torch.tensor(v, dtype=torch.float64).reshape(3, H, W)


def grad_summary(g):
    flat = g.detach().reshape(-1)
    w = torch.tensor([math.sin(0.61 * i + 0.3) for i in range(flat.numel())], dtype=torch.float64)
    return {"shape": list(g.shape), "sum": flat.sum().item(), "abs": flat.abs().sum().item(),
            "wsum": (flat * w).sum().item(), "sumsq": (flat * flat).sum().item(),
            "head": flat[:4].tolist()}


def load_model(name):
    """The tiny model name in float64 and train mode, trainable as the Go
    model with TrainableLayers 3, the transform not resizing H×W images."""
    model = gm.build(name, NUM_CLASSES[name])
    sd = torch.load(os.path.join(OUT, name + ".pt"))
    model.load_state_dict(sd)
    # The Go model's TrainableLayers 3, torchvision's _resnet_fpn_extractor
    # (gen_detection_models builds BackboneWithFPN directly, unfrozen).
    for key, p in model.backbone.body.named_parameters():
        if not key.startswith(("layer2.", "layer3.", "layer4.")):
            p.requires_grad_(False)
    model = model.double()
    model.transform.min_size = (H,)
    model.transform.max_size = W
    model.train()
    return model


def targets_of(boxes):
    """torchvision's targets of a case's per-image (x1, y1, x2, y2, label)."""
    targets = []
    for per in boxes:
        t = torch.tensor([list(b[:4]) for b in per], dtype=torch.float64).reshape(-1, 4)
        lab = torch.tensor([b[4] for b in per], dtype=torch.int64)
        targets.append({"boxes": t, "labels": lab})
    return targets


def model_cases(name):
    model = load_model(name)
    out = []
    for case, gmax, boxes in CASES:
        seed = len(out) + 0.25
        images = [image(b, seed) for b in range(len(boxes))]
        targets = targets_of(boxes)
        model.zero_grad()
        losses = model(images, targets)
        total = sum(losses.values())
        total.backward()
        grads = {}
        for key, p in model.named_parameters():
            if p.requires_grad:
                g = p.grad if p.grad is not None else torch.zeros_like(p)
                grads[key] = grad_summary(g)
        out.append({
            "model": name, "case": case, "gmax": gmax, "seed": seed, "height": H, "width": W,
            "boxes": [[list(b[:4]) for b in per] for per in boxes],
            "labels": [[b[4] for b in per] for per in boxes],
            "losses": {k: v.item() for k, v in losses.items()},
            "grads": grads,
        })
        print(name, case, {k: "%.6g" % v.item() for k, v in losses.items()})
    return out


def main():
    torch.set_num_threads(1)
    cases = []
    for name in ("retinanet_v1", "fcos", "retinanet_v2"):
        cases += model_cases(name)
    gc.write_torchvision(os.path.join(OUT, "losses_golden.json.gz"), cases, op="detection losses")


if __name__ == "__main__":
    main()
