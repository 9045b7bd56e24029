#!/usr/bin/env python3
"""Golden training losses of torchvision's Faster R-CNN for package detection.

The tiny Faster R-CNN of scripts/gen_detection_fasterrcnn.py, loaded from
testdata/detection/fasterrcnn.pt, in train mode with trainable_layers=3's
freezing (conv1 and layer1), the transform's min_size and max_size the
images' own size (no resize: the boxes are the transformed image's
pixels, the batch padded to multiples of 32), smaller training counts
(pre-NMS top 300 per level, post-NMS top 200, 64 box samples per image) so
that both samplers draw subsets, gets torchvision 0.14's loss dict
model(images, targets) for batches of two images with 0, 1 and many
ground-truth boxes.

BalancedPositiveNegativeSampler draws with torch.randperm: every draw is
recorded (per sampler, in call order) so the Go test replays
torchvision's choices. For each case the file holds the losses of the
float64 and of the float32 model, the draws, and for every trainable
parameter the float64 gradient's summary of the sum of the losses (Σ g,
Σ |g|, Σ g_i·sin(0.61·i + 0.3), Σ g², the first four elements).

The images are loss_golden's formula (scripts/gen_detection_losses.py).
Writes testdata/detection/fasterrcnn_losses.json.gz. Run from the
repository root: /usr/bin/python3 scripts/gen_detection_fasterrcnn_losses.py
"""

import os
import sys

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402
import gen_detection_fasterrcnn as gf  # noqa: E402  (the tiny model's builder)
import gen_detection_losses as gl  # noqa: E402  (images, summaries, targets)

OUT = os.path.join(gc.HERE, "detection")
H, W = gl.H, gl.W
NUM_CLASSES = 4
PRE_NMS, POST_NMS, BOX_BATCH = 300, 200, 64

# Each case: name, Gmax, per image a list of (x1, y1, x2, y2, label), labels 1..3.
CASES = [
    ("many", 7, [
        [(0, 0, 40, 30, 1),  # top-left border
         (100, 70, 112, 80, 2),  # bottom-right border
         (50, 40, 53, 42, 3),  # tiny
         (0, 0, 112, 80, 2),  # the whole image
         (30, 20, 70, 60, 1),
         (32.5, 22.25, 68, 58.75, 3)],  # overlapping the last, smaller
        [(10, 10, 50, 70, 2),
         (60.5, 5.25, 100.75, 30.5, 1),
         (2, 60, 110, 79, 3)]]),
    ("one", 2, [[(20, 15, 60, 50, 1)], []]),
    ("none", 3, [[], []]),
    ("duplicates", 2, [
        [(10, 10, 50, 50, 1), (10, 10, 50, 50, 2)],
        [(20.25, 30.5, 21.25, 31.5, 1), (60, 8, 108, 72, 3)]]),
]

DRAWS = {}
_tag = [None]
_randperm = torch.randperm


def _recording_randperm(n, *args, **kwargs):
    r = _randperm(n, *args, **kwargs)
    DRAWS.setdefault(_tag[0], []).append(r.tolist())
    return r


class Tagged:
    """A sampler whose torch.randperm draws are recorded under tag."""

    def __init__(self, sampler, tag):
        self.sampler, self.tag = sampler, tag

    def __call__(self, matched_idxs):
        _tag[0] = self.tag
        try:
            return self.sampler(matched_idxs)
        finally:
            _tag[0] = None


def total_grads(m, losses):
    """The summaries (gl.grad_summary) of the gradient of the sum of
    losses w.r.t. every trainable parameter of m (zeros where none
    flows)."""
    sum(losses.values()).backward()
    grads = {}
    for key, p in m.named_parameters():
        if p.requires_grad:
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            grads[key] = gl.grad_summary(g)
    return grads


def replaying(draws):
    """A torch.randperm replaying draws (tag -> the recorded permutations,
    in order; copied): each call pops its sampler's next one."""
    replay = {k: list(v) for k, v in draws.items()}

    def randperm(n, *args, **kwargs):
        r = replay[_tag[0]].pop(0)
        assert len(r) == n
        return torch.tensor(r, dtype=torch.int64)
    randperm.replay = replay
    return randperm


def load_model():
    model = gf.build(NUM_CLASSES, 0.0, 0.1, 25)
    model.load_state_dict(torch.load(os.path.join(OUT, "fasterrcnn.pt")))
    for key, p in model.backbone.body.named_parameters():
        if not key.startswith(("layer2.", "layer3.", "layer4.")):
            p.requires_grad_(False)
    model.transform.min_size = (H,)
    model.transform.max_size = W
    model.rpn._pre_nms_top_n["training"] = PRE_NMS
    model.rpn._post_nms_top_n["training"] = POST_NMS
    model.roi_heads.fg_bg_sampler.batch_size_per_image = BOX_BATCH
    model.rpn.fg_bg_sampler = Tagged(model.rpn.fg_bg_sampler, "rpn")
    model.roi_heads.fg_bg_sampler = Tagged(model.roi_heads.fg_bg_sampler, "roi")
    model.train()
    return model


def main():
    torch.set_num_threads(1)
    torch.randperm = _recording_randperm
    torch.manual_seed(7)
    model = load_model()
    cases = []
    for case, gmax, boxes in CASES:
        seed = len(cases) + 0.25
        images = [gl.image(b, seed) for b in range(len(boxes))]
        targets = gl.targets_of(boxes)
        DRAWS.clear()
        m = model.double()
        m.zero_grad()
        losses = m(images, targets)
        draws = dict(DRAWS)
        grads = total_grads(m, losses)
        # float32: the same draws replayed.
        torch.randperm = replaying(draws)
        with torch.no_grad():
            m32 = model.float()
            l32 = m32([im.float() for im in images], [{"boxes": t["boxes"].float(), "labels": t["labels"]} for t in targets])
        torch.randperm = _recording_randperm
        cases.append({
            "case": case, "gmax": gmax, "seed": seed, "height": H, "width": W,
            "pre_nms_top_n": PRE_NMS, "post_nms_top_n": POST_NMS, "box_batch_size_per_image": BOX_BATCH,
            "boxes": [[list(b[:4]) for b in per] for per in boxes],
            "labels": [[b[4] for b in per] for per in boxes],
            "draws": draws,
            "losses": {k: v.item() for k, v in losses.items()},
            "losses_float32": {k: v.item() for k, v in l32.items()},
            "grads": grads,
        })
        print(case, {k: "%.6g" % v.item() for k, v in losses.items()}, {k: len(v) for k, v in draws.items()})
    gc.write_torchvision(os.path.join(OUT, "fasterrcnn_losses.json.gz"), cases, op="fasterrcnn losses")


if __name__ == "__main__":
    main()
