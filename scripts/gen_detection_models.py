#!/usr/bin/env python3
"""Golden files of whole torchvision detectors for package detection's tests.

Builds tiny random-init FCOS and RetinaNet (v1: no head norm, FrozenBatchNorm2d
backbone; v2: GroupNorm heads, BatchNorm2d backbone, P6 from C5, as
retinanet_resnet50_fpn_v2) from
torchvision 0.14's own classes, every tensor drawn at random so each part
matters, saves each state dict with torch.save (float32; one in the legacy
format) into testdata/detection/<name>.pt, and writes
testdata/detection/models_<name>.json.gz: the configuration, the images,
the transformed batch's shape and image sizes, the FPN features and head outputs of the
float64 model for the batch's first image, and the detections of the float64 and float32
models.

Run from the repository root: /usr/bin/python3 scripts/gen_detection_models.py
"""

import math
import os
import sys
from functools import partial

import torch
from torch import nn
import torchvision
from torchvision.models import resnet
from torchvision.models.detection import FCOS, RetinaNet
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.fcos import FCOSHead
from torchvision.models.detection.retinanet import RetinaNetHead
from torchvision.ops.feature_pyramid_network import LastLevelP6P7

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402
import detection_models as dm  # noqa: E402  (scripts/, the tiny ResNet)

OUT = os.path.join(gc.HERE, "detection")

# The tiny backbone: torchvision's ResNet with a stem of STEM channels and
# these planes per stage (BasicBlock, one block each), an FPN of FPN
# channels on layers 2, 3, 4 with P6/P7.
STEM, PLANES, FPN = 8, [8, 8, 16, 16], 32


def backbone(frozen, fpn_norm, p6p7_from_c5):
    norm = dm.frozen_bn(0.0) if frozen else nn.BatchNorm2d
    body = dm.TinyResNet(resnet.BasicBlock, [1, 1, 1, 1], PLANES, stem_width=STEM, norm_layer=norm)
    in_list = [PLANES[1], PLANES[2], PLANES[3]]
    extra = LastLevelP6P7(PLANES[3], FPN) if p6p7_from_c5 else LastLevelP6P7(FPN, FPN)
    return BackboneWithFPN(body, {"layer2": "0", "layer3": "1", "layer4": "2"}, in_list, FPN,
                           extra_blocks=extra, norm_layer=fpn_norm)


def randomise(model, gen):
    """Every parameter and buffer drawn so that each matters: weights
    ~ N(0, 1/fan_in), biases ~ N(0, 0.1), norm scales ~ U(0.5, 1.5),
    running variances ~ U(0.5, 1.5), running means ~ N(0, 0.1); the
    classification logits' bias ~ N(-1.5, 0.5) so scores spread over (0, 1)."""
    with torch.no_grad():
        for name, t in list(model.state_dict(keep_vars=True).items()):
            if t.dtype not in (torch.float32, torch.float64):
                continue
            leaf = name.rsplit(".", 1)[-1]
            if t.dim() == 4:
                fan_in = t.shape[1] * t.shape[2] * t.shape[3]
                t.copy_(torch.randn(t.shape, generator=gen) / math.sqrt(fan_in))
            elif leaf == "running_var" or (leaf == "weight" and t.dim() == 1):
                t.copy_(0.5 + torch.rand(t.shape, generator=gen))
            elif "cls_logits" in name:
                t.copy_(-1.5 + 0.5 * torch.randn(t.shape, generator=gen))
            else:
                t.copy_(0.1 * torch.randn(t.shape, generator=gen))


def build(name, num_classes):
    common = dict(min_size=48, max_size=80, topk_candidates=40)
    if name == "fcos":
        bb = backbone(frozen=True, fpn_norm=None, p6p7_from_c5=False)
        head = FCOSHead(FPN, 1, num_classes, num_convs=2)
        anchors = AnchorGenerator(((8,), (16,), (32,), (64,), (128,)), ((1.0,),) * 5)
        model = FCOS(bb, num_classes, anchor_generator=anchors, head=head, score_thresh=0.3,
                     detections_per_img=30, **common)
    else:
        v2 = name == "retinanet_v2"
        bb = backbone(frozen=not v2, fpn_norm=None, p6p7_from_c5=v2)
        sizes = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [8, 16, 32, 64, 128])
        anchors = AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * 5)
        norm = partial(nn.GroupNorm, 32) if v2 else None
        head = RetinaNetHead(FPN, anchors.num_anchors_per_location()[0], num_classes, norm_layer=norm)
        head.regression_head._loss_type = "giou" if v2 else "l1"
        # Two convolutions per tower instead of torchvision's four: smaller files,
        # the same code (the detection package's NumConvs).
        head.classification_head.conv = head.classification_head.conv[:2]
        head.regression_head.conv = head.regression_head.conv[:2]
        model = RetinaNet(bb, num_classes, anchor_generator=anchors, head=head, score_thresh=0.3,
                          detections_per_img=50, **common)
    return model


def config(model, name, num_classes):
    ag = model.anchor_generator
    return {"model": name, "num_classes": num_classes, "min_size": model.transform.min_size[-1],
            "max_size": model.transform.max_size, "stem": STEM, "planes": PLANES, "fpn": FPN,
            "anchor_sizes": [list(s) for s in ag.sizes], "aspect_ratios": [list(a) for a in ag.aspect_ratios],
            "score_thresh": model.score_thresh, "nms_thresh": model.nms_thresh,
            "detections_per_img": model.detections_per_img, "topk_candidates": model.topk_candidates}


def detections(out):
    return [{"boxes": gc.flat(d["boxes"]), "scores": gc.flat(d["scores"]),
             "labels": d["labels"].tolist()} for d in out]


def case(name, num_classes, seed, legacy):
    gen = torch.Generator().manual_seed(seed)
    model = build(name, num_classes)
    randomise(model, gen)
    model.eval()
    path = os.path.join(OUT, name + ".pt")
    torch.save(model.state_dict(), path, _use_new_zipfile_serialization=not legacy)
    images = [torch.rand((3, 40, 56), generator=gen), torch.rand((3, 60, 36), generator=gen),
              torch.rand((3, 23, 70), generator=gen)]
    doc = config(model, name, num_classes)
    doc["checkpoint"] = os.path.basename(path)
    doc["legacy_format"] = legacy
    doc["images"] = [{"shape": list(im.shape), "data": gc.flat(im)} for im in images]
    with torch.no_grad():
        m64 = model.double()
        ims64 = [im.double() for im in images]
        batch, _ = m64.transform(ims64)
        feats = m64.backbone(batch.tensors)
        heads = m64.head(list(feats.values()))
        doc["batch_shape"] = list(batch.tensors.shape)
        doc["image_sizes"] = [list(s) for s in batch.image_sizes]
        # Features and head outputs of the batch's first image only (the
        # detections cover the others): smaller files.
        doc["features"] = [{"name": k, "shape": list(v[:1].shape), "data": gc.flat(v[:1])} for k, v in feats.items()]
        doc["head"] = {k: {"shape": list(v[:1].shape), "data": gc.flat(v[:1])} for k, v in heads.items()}
        doc["detections_float64"] = detections(m64(ims64))
        m32 = model.float()
        doc["detections_float32"] = detections(m32(images))
    for dt in ("float64", "float32"):
        print(name, dt, [len(d["labels"]) for d in doc["detections_" + dt]])
    gc.write_torchvision(os.path.join(OUT, "models_%s.json.gz" % name), [doc], op=name)


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    case("fcos", 4, 1, legacy=False)
    case("retinanet_v1", 3, 2, legacy=True)
    case("retinanet_v2", 3, 3, legacy=False)


if __name__ == "__main__":
    main()
