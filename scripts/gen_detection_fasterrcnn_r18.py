#!/usr/bin/env python3
"""Golden proposals and detections of a ResNet-18-FPN Faster R-CNN (the
structure of fasterrcnn_resnet50_fpn with a ResNet-18 body: FrozenBatchNorm2d
of eps 0, layers 1-4 into a 256-channel FPN with the max-pooled level,
torchvision's default anchors, RPN and RoI heads; a TwoMLPHead of width
256 and 11 classes to keep the formula fill short) for
detection/fasterrcnn_r18_test.go.

Every state_dict tensor comes from detection_models.formula_value (sorted
keys; the Go test computes the same), so no weights are stored. The images
are a formula too: element i of image j is 0.5 + 0.5·sin(0.021·i + 0.7·j)
(row-major over [3, H, W]). Three runs of different image sizes, the
transform's min_size 160 and max_size 240 resizing them: a batch of two
images of different sizes (padded), and two single images. For each run
the file holds the batch's shape and image sizes, the RPN's proposals and
scores (float64) and the detections of the float64 and float32 models.

Writes testdata/detection/fasterrcnn_r18.json.gz. Run from the
repository root: /usr/bin/python3 scripts/gen_detection_fasterrcnn_r18.py
"""

import copy
import math
import os
import sys

import torch
from torchvision.models import resnet
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.ops import misc as misc_nn_ops

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402
import detection_models as dm  # noqa: E402
import gen_detection_fasterrcnn as gf  # noqa: E402  (run: proposals and detections step by step)

OUT = os.path.join(gc.HERE, "detection")
NUM_CLASSES, REPR = 11, 256
RUNS = [[(3, 100, 130), (3, 90, 160)], [(3, 200, 120)], [(3, 64, 64)]]


def build():
    body = resnet.resnet18(norm_layer=dm.frozen_bn(0.0))
    backbone = _resnet_fpn_extractor(body, 3)
    box_head = TwoMLPHead(256 * 7 * 7, REPR)
    predictor = FastRCNNPredictor(REPR, NUM_CLASSES)
    return FasterRCNN(backbone, None, min_size=160, max_size=240, box_head=box_head, box_predictor=predictor)


def image(j, shape):
    n = math.prod(shape)
    return torch.tensor([0.5 + 0.5 * math.sin(0.021 * i + 0.7 * j) for i in range(n)], dtype=torch.float64).reshape(shape)


def main():
    torch.set_num_threads(1)
    model = build().double()  # the formula's float64 values, not float32's
    dm.formula_fill(model)
    model.eval()
    doc = {"num_classes": NUM_CLASSES, "representation": REPR, "min_size": 160, "max_size": 240, "runs": []}
    for shapes in RUNS:
        images = [image(j, s) for j, s in enumerate(shapes)]
        run = {"shapes": [list(s) for s in shapes]}
        with torch.no_grad():
            for dt in ("float64", "float32"):
                # A copy: .float() in place would round the float64 weights.
                m = model if dt == "float64" else copy.deepcopy(model).float()
                ims = [im.double() if dt == "float64" else im.float() for im in images]
                batch, props, scores, _, _, dets = gf.run(m, ims)
                run["batch_shape"] = list(batch.tensors.shape)
                run["image_sizes"] = [list(s) for s in batch.image_sizes]
                if dt == "float64":
                    run["proposals"] = [{"boxes": gc.flat(p), "scores": gc.flat(s)} for p, s in zip(props, scores)]
                run["detections_" + dt] = gf.detections(dets)
                print(shapes, dt, "proposals", [len(p) for p in props], "detections", [len(d["labels"]) for d in dets])
        doc["runs"].append(run)
    gc.write_torchvision(os.path.join(OUT, "fasterrcnn_r18.json.gz"), [doc], op="fasterrcnn resnet18")


if __name__ == "__main__":
    main()
