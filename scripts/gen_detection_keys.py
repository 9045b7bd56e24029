#!/usr/bin/env python3
"""The state_dict layout of torchvision's full-size detectors, for
package detection's configuration constructors (FCOSResNet50FPN,
RetinaNetResNet50FPN, RetinaNetResNet50FPNV2, FasterRCNNResNet50FPN,
FasterRCNNResNet50FPNV2): every key's shape and
whether torchvision trains it (requires_grad), num_batches_tracked left
out. Built as the builders build them with pretrained weights
(FrozenBatchNorm2d backbones for FCOS, RetinaNet v1 and Faster R-CNN, BatchNorm2d for the v2s,
trainable_backbone_layers 3) but without downloading any: the layout is
the same.

Run from the repository root: /usr/bin/python3 scripts/gen_detection_keys.py
"""

import os
import sys
from functools import partial

import torch
from torch import nn
from torchvision.models import resnet50
from torchvision.models.detection import FCOS, FasterRCNN, RetinaNet
from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
from torchvision.models.detection.faster_rcnn import FastRCNNConvFCHead
from torchvision.models.detection.rpn import RPNHead
from torchvision.models.detection.retinanet import RetinaNetHead, _default_anchorgen
from torchvision.ops.feature_pyramid_network import LastLevelP6P7
from torchvision.ops.misc import FrozenBatchNorm2d

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402


def fcos():
    body = resnet50(norm_layer=FrozenBatchNorm2d)
    bb = _resnet_fpn_extractor(body, 3, returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(256, 256))
    return FCOS(bb, 91)


def retinanet():
    body = resnet50(norm_layer=FrozenBatchNorm2d)
    bb = _resnet_fpn_extractor(body, 3, returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(256, 256))
    return RetinaNet(bb, 91)


def retinanet_v2():
    body = resnet50()
    bb = _resnet_fpn_extractor(body, 3, returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(2048, 256))
    anchors = _default_anchorgen()
    head = RetinaNetHead(bb.out_channels, anchors.num_anchors_per_location()[0], 91,
                         norm_layer=partial(nn.GroupNorm, 32))
    return RetinaNet(bb, 91, anchor_generator=anchors, head=head)


def fasterrcnn():
    body = resnet50(norm_layer=FrozenBatchNorm2d)
    bb = _resnet_fpn_extractor(body, 3)
    return FasterRCNN(bb, 91)


def fasterrcnn_v2():
    # fasterrcnn_resnet50_fpn_v2's body, as it builds it with weights.
    bb = _resnet_fpn_extractor(resnet50(), 3, norm_layer=nn.BatchNorm2d)
    rpn_head = RPNHead(bb.out_channels, 3, conv_depth=2)
    box_head = FastRCNNConvFCHead((bb.out_channels, 7, 7), [256, 256, 256, 256], [1024], norm_layer=nn.BatchNorm2d)
    return FasterRCNN(bb, 91, rpn_head=rpn_head, box_head=box_head)


def main():
    cases = []
    for name, build in [("fcos_resnet50_fpn", fcos), ("retinanet_resnet50_fpn", retinanet),
                        ("retinanet_resnet50_fpn_v2", retinanet_v2), ("fasterrcnn_resnet50_fpn", fasterrcnn),
                        ("fasterrcnn_resnet50_fpn_v2", fasterrcnn_v2)]:
        m = build()
        trainable = {k for k, p in m.named_parameters() if p.requires_grad}
        keys = [{"key": k, "shape": list(v.shape), "trainable": k in trainable}
                for k, v in m.state_dict().items() if not k.endswith("num_batches_tracked")]
        cases.append({"model": name, "keys": keys})
    gc.write_torchvision(os.path.join(gc.HERE, "detection", "keys_golden.json.gz"), cases)


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
