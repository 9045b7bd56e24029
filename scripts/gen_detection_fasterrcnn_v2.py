#!/usr/bin/env python3
"""Golden files of a tiny torchvision Faster R-CNN v2 for package detection's tests.

Builds a random-init fasterrcnn_resnet50_fpn_v2-structured model from
torchvision 0.14's own classes on the tiny ResNet of
scripts/detection_models.py (stem, planes, FPN width and representation
of scripts/gen_detection_fasterrcnn.py): BatchNorm2d (eps 1e-5) in the
ResNet, BackboneWithFPN(norm_layer=BatchNorm2d) (the FPN's 1x1 and 3x3
convs without bias, each followed by a BatchNorm2d), LastLevelMaxPool,
RPNHead(conv_depth=2), FastRCNNConvFCHead((FPN, 7, 7), [16, 16], [REPR],
norm_layer=BatchNorm2d) and FastRCNNPredictor; the other FasterRCNN
arguments as v1's tiny model. Every float tensor is drawn at random by
gen_detection_fasterrcnn.randomise (running_var too; num_batches_tracked
is left alone). One state dict, torch.save'd in float32, serves every
case: testdata/detection/fasterrcnn_v2.pt.

testdata/detection/fasterrcnn_v2.json.gz: two inference cases (eval mode,
BatchNorm2d with the running statistics) of the same weights (4 classes)
with different images and thresholds (the second's thresholds drop
proposals and detections of every image, each at least 4e-4 from every
score), in gen_detection_fasterrcnn.case's layout (the Go test's
rcnnGolden reads both): the configuration (v1's plus "v2": the box head's
conv and fc widths, the RPN head's conv depth, the BatchNorm2d eps), the
images (multiples of 1/256, short in JSON), the transformed batch's shape
and image sizes, and for the float64 and the float32 model the RPN's
proposals (boxes and objectness probabilities), the box head's class
logits and box regression (float64 only) and the detections.

testdata/detection/fasterrcnn_v2_losses.json.gz: the training losses of
scripts/gen_detection_fasterrcnn_losses.py (its cases, images, counts,
recorded randperm draws replayed for float32, gradient summaries) on the
v2 model loaded from fasterrcnn_v2.pt, in train mode: every BatchNorm2d,
the frozen ones of conv1 / layer1 included (trainable_layers=3 freezes
their parameters, not their mode), normalises with batch statistics and
updates its running statistics. The checkpoint is loaded again before each
case's float64 and float32 run, so every run starts from its running
statistics. Beyond v1's fields each case holds "running": the summary
(gen_detection_losses.grad_summary) of every running_mean and running_var
after the float64 training forward, and "box_samples": the number of RoIs
the box sampler took per image. The case "few" keeps 20 proposals per
image after the RPN's NMS, so that the box sampler takes fewer than its 64
RoIs per image.

Run from the repository root: /usr/bin/python3 scripts/gen_detection_fasterrcnn_v2.py
"""

import os
import sys

import torch
from torch import nn
from torchvision.models import resnet
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.faster_rcnn import FastRCNNConvFCHead, FastRCNNPredictor
from torchvision.models.detection.rpn import RPNHead
from torchvision.ops import MultiScaleRoIAlign
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402
import detection_models as dm  # noqa: E402  (the tiny ResNet)
import gen_detection_fasterrcnn as gf  # noqa: E402  (v1's sizes, randomise, config, run, detections)
import gen_detection_fasterrcnn_losses as gfl  # noqa: E402  (v1's loss cases, the recorded draws)
import gen_detection_losses as gl  # noqa: E402  (images, targets, summaries)

OUT = os.path.join(gc.HERE, "detection")
CHECKPOINT = os.path.join(OUT, "fasterrcnn_v2.pt")

STEM, PLANES, FPN, REPR = gf.STEM, gf.PLANES, gf.FPN, gf.REPR
BOX_CONVS, BOX_FCS, RPN_CONV_DEPTH, BN_EPS = [16, 16], [REPR], 2, 1e-5
NUM_CLASSES, SEED = 4, 15

# The loss cases: v1's, then "few" (v1's "one" with 20 proposals per image
# after the RPN's NMS: fewer than BOX_BATCH RoIs for the box sampler).
H, W = gfl.H, gfl.W
PRE_NMS, POST_NMS, BOX_BATCH = gfl.PRE_NMS, gfl.POST_NMS, gfl.BOX_BATCH
LOSS_CASES = [(c, gmax, boxes, PRE_NMS, POST_NMS) for c, gmax, boxes in gfl.CASES]
LOSS_CASES.append(("few", 2, dict((c, b) for c, _, b in gfl.CASES)["one"], PRE_NMS, 20))


def build(num_classes, rpn_score_thresh, box_score_thresh, dets_per_img):
    """The tiny fasterrcnn_resnet50_fpn_v2: gf.build's model with
    BatchNorm2d in the ResNet and the FPN, a two-conv RPN head and the
    conv-fc box head."""
    body = dm.TinyResNet(resnet.BasicBlock, [1, 1, 1, 1], PLANES, stem_width=STEM, norm_layer=nn.BatchNorm2d)
    backbone = BackboneWithFPN(body, {"layer1": "0", "layer2": "1", "layer3": "2", "layer4": "3"}, PLANES, FPN,
                               extra_blocks=LastLevelMaxPool(), norm_layer=nn.BatchNorm2d)
    anchors = AnchorGenerator(((8,), (16,), (32,), (64,), (128,)), ((0.5, 1.0, 2.0),) * 5)
    rpn_head = RPNHead(FPN, 3, conv_depth=RPN_CONV_DEPTH)
    pool = MultiScaleRoIAlign(["0", "1", "2", "3"], 7, 2)
    box_head = FastRCNNConvFCHead((FPN, 7, 7), BOX_CONVS, BOX_FCS, norm_layer=nn.BatchNorm2d)
    predictor = FastRCNNPredictor(REPR, num_classes)
    model = FasterRCNN(backbone, None, min_size=48, max_size=80, rpn_anchor_generator=anchors, rpn_head=rpn_head,
                       rpn_pre_nms_top_n_test=50, rpn_post_nms_top_n_test=40, rpn_nms_thresh=0.7,
                       rpn_score_thresh=rpn_score_thresh, box_roi_pool=pool, box_head=box_head,
                       box_predictor=predictor, box_score_thresh=box_score_thresh, box_nms_thresh=0.5,
                       box_detections_per_img=dets_per_img)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            assert m.eps == BN_EPS and m.momentum == 0.1 and m.affine and m.track_running_stats
    return model


def config(model, num_classes):
    doc = gf.config(model, num_classes)
    doc["v2"] = {"box_conv_layers": BOX_CONVS, "box_fc_layers": BOX_FCS, "rpn_conv_depth": RPN_CONV_DEPTH,
                 "bn_eps": BN_EPS}
    return doc


def checkpoint():
    """The random weights (seed SEED), saved to CHECKPOINT in float32."""
    model = build(NUM_CLASSES, 0.0, 0.1, 25)
    gf.randomise(model, torch.Generator().manual_seed(SEED))
    torch.save(model.state_dict(), CHECKPOINT)
    return torch.load(CHECKPOINT)


def case(name, sd, seed, rpn_score_thresh, box_score_thresh, dets_per_img):
    """gf.case on the v2 model of the state dict sd, in eval mode, the
    images of seed (3 channels, values k/256)."""
    gen = torch.Generator().manual_seed(seed)
    model = build(NUM_CLASSES, rpn_score_thresh, box_score_thresh, dets_per_img)
    model.load_state_dict(sd)
    model.eval()
    images = [torch.randint(0, 256, s, generator=gen).float() / 256 for s in ((3, 40, 56), (3, 60, 36), (3, 23, 70))]
    doc = config(model, NUM_CLASSES)
    doc["name"] = name
    doc["checkpoint"] = os.path.basename(CHECKPOINT)
    doc["images"] = [{"shape": list(im.shape), "data": gc.flat(im)} for im in images]
    gf.record(doc, name, model, images)
    # Eval mode leaves the running statistics alone.
    for k, v in model.state_dict().items():
        assert torch.equal(v.to(sd[k].dtype), sd[k]), k
    return doc


class Counting:
    """The box sampler (a gfl.Tagged) counting the RoIs it takes per image."""

    def __init__(self, sampler):
        self.sampler, self.counts = sampler, []

    def __call__(self, matched_idxs):
        pos, neg = self.sampler(matched_idxs)
        self.counts.append([int((p | n).sum()) for p, n in zip(pos, neg)])
        return pos, neg


def load_model(sd):
    """gfl.load_model's model, v2: trainable_layers=3's freezing of conv1,
    bn1 and layer1's parameters (their BatchNorm2d stay in train mode), the
    transform not resizing H×W images, the training counts, the samplers
    recorded."""
    model = build(NUM_CLASSES, 0.0, 0.1, 25)
    model.load_state_dict(sd)
    for key, p in model.backbone.body.named_parameters():
        if not key.startswith(("layer2.", "layer3.", "layer4.")):
            p.requires_grad_(False)
    model.transform.min_size = (H,)
    model.transform.max_size = W
    model.roi_heads.fg_bg_sampler.batch_size_per_image = BOX_BATCH
    model.rpn.fg_bg_sampler = gfl.Tagged(model.rpn.fg_bg_sampler, "rpn")
    model.roi_heads.fg_bg_sampler = Counting(gfl.Tagged(model.roi_heads.fg_bg_sampler, "roi"))
    model.train()
    return model


def loss_cases(sd):
    torch.randperm = gfl._recording_randperm
    torch.manual_seed(7)
    model = load_model(sd)
    counter = model.roi_heads.fg_bg_sampler
    cases = []
    for case, gmax, boxes, pre_nms, post_nms in LOSS_CASES:
        seed = len(cases) + 0.25
        images = [gl.image(b, seed) for b in range(len(boxes))]
        targets = gl.targets_of(boxes)
        model.rpn._pre_nms_top_n["training"] = pre_nms
        model.rpn._post_nms_top_n["training"] = post_nms
        gfl.DRAWS.clear()
        counter.counts.clear()
        m = model.double()
        m.load_state_dict(sd)
        m.zero_grad()
        losses = m(images, targets)
        draws = dict(gfl.DRAWS)
        (samples,) = counter.counts
        running = {k: gl.grad_summary(v) for k, v in m.state_dict().items()
                   if k.endswith(("running_mean", "running_var"))}
        grads = gfl.total_grads(m, losses)
        # float32: the checkpoint again, the same draws replayed.
        torch.randperm = gfl.replaying(draws)
        replay = torch.randperm.replay
        counter.counts.clear()
        with torch.no_grad():
            m32 = model.float()
            m32.load_state_dict(sd)
            l32 = m32([im.float() for im in images],
                      [{"boxes": t["boxes"].float(), "labels": t["labels"]} for t in targets])
        assert all(not v for v in replay.values()), "float32 drew less than float64"
        assert counter.counts == [samples], (counter.counts, samples)
        torch.randperm = gfl._recording_randperm
        cases.append({
            "case": case, "gmax": gmax, "seed": seed, "height": H, "width": W,
            "pre_nms_top_n": pre_nms, "post_nms_top_n": post_nms, "box_batch_size_per_image": BOX_BATCH,
            "boxes": [[list(b[:4]) for b in per] for per in boxes],
            "labels": [[b[4] for b in per] for per in boxes],
            "draws": draws,
            "losses": {k: v.item() for k, v in losses.items()},
            "losses_float32": {k: v.item() for k, v in l32.items()},
            "grads": grads,
            "running": running,
            "box_samples": samples,
        })
        print(case, {k: "%.6g" % v.item() for k, v in losses.items()}, {k: len(v) for k, v in draws.items()},
              "box samples", samples)
    torch.randperm = gfl._randperm
    return cases


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    sd = checkpoint()
    docs = [case("fasterrcnn_v2", sd, SEED, 0.0, 0.1, 25),
            case("fasterrcnn_v2_thresh", sd, SEED + 1, 0.5675, 0.275, 100)]
    gc.write_torchvision(os.path.join(OUT, "fasterrcnn_v2.json.gz"), docs, op="fasterrcnn v2")
    cases = loss_cases(sd)
    gc.write_torchvision(os.path.join(OUT, "fasterrcnn_v2_losses.json.gz"), cases, op="fasterrcnn v2 losses")


if __name__ == "__main__":
    main()
