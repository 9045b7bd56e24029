#!/usr/bin/env python3
"""Golden files of a tiny torchvision Faster R-CNN for package detection's tests.

Builds a random-init fasterrcnn_resnet50_fpn-structured model from
torchvision 0.14's own classes (FasterRCNN, RPNHead, AnchorGenerator,
MultiScaleRoIAlign, TwoMLPHead, FastRCNNPredictor) on the tiny ResNet of
scripts/detection_models.py (returned layers 1-4, an FPN with
LastLevelMaxPool, FrozenBatchNorm2d of eps 0), every tensor drawn at random
so each part matters, saves its state dict with torch.save (float32) into
testdata/detection/fasterrcnn.pt and writes
testdata/detection/fasterrcnn.json.gz: the configuration, the images, the
transformed batch's shape and image sizes, and for the float64 and the
float32 model the RPN's proposals (boxes and objectness probabilities per
image), the box head's class logits and box regression on those proposals
(float64 only) and the detections.

Run from the repository root: /usr/bin/python3 scripts/gen_detection_fasterrcnn.py
"""

import math
import os
import sys

import torch
from torch import nn
from torchvision.models import resnet
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.rpn import RPNHead
from torchvision.ops import MultiScaleRoIAlign
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402
import detection_models as dm  # noqa: E402  (scripts/, the tiny ResNet)

OUT = os.path.join(gc.HERE, "detection")

STEM, PLANES, FPN, REPR = 8, [8, 8, 16, 16], 32, 24


def build(num_classes, rpn_score_thresh, box_score_thresh, dets_per_img):
    body = dm.TinyResNet(resnet.BasicBlock, [1, 1, 1, 1], PLANES, stem_width=STEM, norm_layer=dm.frozen_bn(0.0))
    backbone = BackboneWithFPN(body, {"layer1": "0", "layer2": "1", "layer3": "2", "layer4": "3"}, PLANES, FPN,
                               extra_blocks=LastLevelMaxPool())
    anchors = AnchorGenerator(((8,), (16,), (32,), (64,), (128,)), ((0.5, 1.0, 2.0),) * 5)
    rpn_head = RPNHead(FPN, 3)
    pool = MultiScaleRoIAlign(["0", "1", "2", "3"], 7, 2)
    box_head = TwoMLPHead(FPN * 7 * 7, REPR)
    predictor = FastRCNNPredictor(REPR, num_classes)
    return FasterRCNN(backbone, None, min_size=48, max_size=80, rpn_anchor_generator=anchors, rpn_head=rpn_head,
                      rpn_pre_nms_top_n_test=50, rpn_post_nms_top_n_test=40, rpn_nms_thresh=0.7,
                      rpn_score_thresh=rpn_score_thresh, box_roi_pool=pool, box_head=box_head,
                      box_predictor=predictor, box_score_thresh=box_score_thresh, box_nms_thresh=0.5,
                      box_detections_per_img=dets_per_img)


def randomise(model, gen):
    """Weights ~ N(0, 1/fan_in) (fan_in of a conv or a linear layer),
    biases ~ N(0, 0.1), frozen norm scales and variances ~ U(0.5, 1.5),
    means ~ N(0, 0.1); the RPN's objectness weights scaled by 0.2 so its
    probabilities spread over (0, 1) instead of saturating."""
    with torch.no_grad():
        for name, t in list(model.state_dict(keep_vars=True).items()):
            if t.dtype not in (torch.float32, torch.float64):
                continue
            leaf = name.rsplit(".", 1)[-1]
            if t.dim() >= 2:
                fan_in = math.prod(t.shape[1:])
                t.copy_(torch.randn(t.shape, generator=gen) / math.sqrt(fan_in))
                if "cls_logits" in name:
                    t.mul_(0.2)
            elif leaf == "running_var" or (leaf == "weight" and t.dim() == 1):
                t.copy_(0.5 + torch.rand(t.shape, generator=gen))
            else:
                t.copy_(0.1 * torch.randn(t.shape, generator=gen))


def config(model, num_classes):
    ag, rpn, rh = model.rpn.anchor_generator, model.rpn, model.roi_heads
    return {"num_classes": num_classes, "min_size": model.transform.min_size[-1],
            "max_size": model.transform.max_size, "stem": STEM, "planes": PLANES, "fpn": FPN,
            "representation": REPR, "anchor_sizes": [list(s) for s in ag.sizes],
            "aspect_ratios": [list(a) for a in ag.aspect_ratios],
            "rpn_pre_nms_top_n": rpn._pre_nms_top_n["testing"], "rpn_post_nms_top_n": rpn._post_nms_top_n["testing"],
            "rpn_nms_thresh": rpn.nms_thresh, "rpn_score_thresh": rpn.score_thresh,
            "box_score_thresh": rh.score_thresh, "box_nms_thresh": rh.nms_thresh,
            "box_detections_per_img": rh.detections_per_img}


def run(model, images):
    """The transformed batch, the proposals and scores, the box head's
    outputs on them and the detections (torchvision's
    GeneralizedRCNN.forward, eval mode, step by step)."""
    batch, _ = model.transform(images)
    feats = model.backbone(batch.tensors)
    props, _ = model.rpn(batch, feats)
    # The RPN's scores: filter_proposals returns them, rpn.forward drops them.
    objectness, deltas = model.rpn.head(list(feats.values()))
    anchors = model.rpn.anchor_generator(batch, list(feats.values()))
    shapes = [o[0].shape for o in objectness]
    per_level = [s[0] * s[1] * s[2] for s in shapes]
    from torchvision.models.detection.rpn import concat_box_prediction_layers
    obj, dl = concat_box_prediction_layers(objectness, deltas)
    boxes = model.rpn.box_coder.decode(dl.detach(), anchors).view(len(anchors), -1, 4)
    fboxes, fscores = model.rpn.filter_proposals(boxes, obj, batch.image_sizes, per_level)
    for a, b in zip(props, fboxes):
        assert torch.equal(a, b)
    bf = model.roi_heads.box_roi_pool(feats, props, batch.image_sizes)
    bf = model.roi_heads.box_head(bf)
    logits, reg = model.roi_heads.box_predictor(bf)
    dets = model(images)
    return batch, props, fscores, logits, reg, dets


def detections(out):
    return [{"boxes": gc.flat(d["boxes"]), "scores": gc.flat(d["scores"]),
             "labels": d["labels"].tolist()} for d in out]


def case(name, num_classes, seed, rpn_score_thresh, box_score_thresh, dets_per_img):
    gen = torch.Generator().manual_seed(seed)
    model = build(num_classes, rpn_score_thresh, box_score_thresh, dets_per_img)
    randomise(model, gen)
    model.eval()
    path = os.path.join(OUT, name + ".pt")
    torch.save(model.state_dict(), path)
    images = [torch.rand((3, 40, 56), generator=gen), torch.rand((3, 60, 36), generator=gen),
              torch.rand((3, 23, 70), generator=gen)]
    doc = config(model, num_classes)
    doc["name"] = name
    doc["checkpoint"] = os.path.basename(path)
    doc["images"] = [{"shape": list(im.shape), "data": gc.flat(im)} for im in images]
    record(doc, name, model, images)
    return doc


def record(doc, name, model, images):
    """Adds to doc the eval model's outputs on images (run), for the
    float64 and the float32 model: the batch's shape and image sizes, the
    proposals with their scores, the box head's outputs (float64 only) and
    the detections."""
    with torch.no_grad():
        for dt in ("float64", "float32"):
            m = model.double() if dt == "float64" else model.float()
            ims = [im.double() for im in images] if dt == "float64" else images
            batch, props, scores, logits, reg, dets = run(m, ims)
            doc["batch_shape"] = list(batch.tensors.shape)
            doc["image_sizes"] = [list(s) for s in batch.image_sizes]
            doc["proposals_" + dt] = [{"boxes": gc.flat(p), "scores": gc.flat(s)} for p, s in zip(props, scores)]
            if dt == "float64":
                doc["class_logits"] = {"shape": list(logits.shape), "data": gc.flat(logits)}
                doc["box_regression"] = {"shape": list(reg.shape), "data": gc.flat(reg)}
            doc["detections_" + dt] = detections(dets)
            print(name, dt, "proposals", [len(p) for p in props], "detections", [len(d["labels"]) for d in dets])


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    docs = [case("fasterrcnn", 4, 5, 0.0, 0.1, 25), case("fasterrcnn_thresh", 3, 6, 0.6, 0.3, 100)]
    gc.write_torchvision(os.path.join(OUT, "fasterrcnn.json.gz"), docs, op="fasterrcnn")


if __name__ == "__main__":
    main()
