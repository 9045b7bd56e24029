"""Extra postprocess_detections goldens (testdata/detection/postprocess_ties.json.gz)
from Debian's torch 1.13 and torchvision 0.14 (run with /usr/bin/python3 from
the repository root): cases with more than 1000 candidates per image and many
exactly equal scores, where torchvision's batched_nms takes its per-class path
(_batched_nms_vanilla) and orders the kept boxes with torch's unstable CPU sort.
The inputs are gen_detection_values.py's (the same seeds and formulas; the Go
test rebuilds them with postInputs).
"""

import json
import os
import sys as _sys
_sys.dont_write_bytecode = True
_sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402  (write_compact)
import types

import torch
from torchvision.models.detection import _utils as det_utils
from torchvision.models.detection.fcos import FCOS
from torchvision.models.detection.retinanet import RetinaNet

import gen_detection_values as v

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "detection", "postprocess_ties.json.gz")


def cases():
    out = []
    # (name, model, levels HWA, classes, score_thresh, nms, dets, topk)
    configs = [
        ("retina_many_ties", "retinanet", [400, 100, 25], 5, 0.05, 0.5, 300, 1000),
        ("fcos_many_ties", "fcos", [400, 100, 25], 5, 0.05, 0.6, 100, 1000),
        ("retina_many_ties_dets0", "retinanet", [400, 100, 25], 5, 0.05, 0.5, 0, 1000),
    ]
    base = 9000
    for name, model, levels, classes, thr, nms, dets, topk in configs:
        for dname, dt in v.DTYPES:
            base += 100
            n_img = 2
            image_sizes = [(70, 90), (90, 64)]

            def logits(seed, shape):
                return (torch.floor(v.uniforms(seed, *shape) * 64) / 4 - 8).to(dt)

            cls = [logits(base + 10 * l, (n_img, hwa, classes)) for l, hwa in enumerate(levels)]
            anchors = [v.random_boxes(base + 10 * l + 2, hwa, dt, scale=80.0) for l, hwa in enumerate(levels)]
            if model == "retinanet":
                reg = [(v.uniforms(base + 10 * l + 1, n_img, hwa, 4) * 1.2 - 0.6).to(dt) for l, hwa in enumerate(levels)]
                stub = types.SimpleNamespace(score_thresh=thr, nms_thresh=nms, detections_per_img=dets,
                                             topk_candidates=topk, box_coder=det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0)))
                out_dets = RetinaNet.postprocess_detections(stub, {"cls_logits": cls, "bbox_regression": reg},
                                                            [anchors] * n_img, image_sizes)
            else:
                reg = [(v.uniforms(base + 10 * l + 1, n_img, hwa, 4) * 0.6).to(dt) for l, hwa in enumerate(levels)]
                ctr = [logits(base + 10 * l + 3, (n_img, hwa, 1)) for l, hwa in enumerate(levels)]
                stub = types.SimpleNamespace(score_thresh=thr, nms_thresh=nms, detections_per_img=dets,
                                             topk_candidates=topk, box_coder=det_utils.BoxLinearCoder(normalize_by_size=True))
                out_dets = FCOS.postprocess_detections(
                    stub, {"cls_logits": cls, "bbox_regression": reg, "bbox_ctrness": ctr}, [anchors] * n_img, image_sizes)
            out.append({
                "name": name, "model": model, "dtype": dname, "levels": levels, "classes": classes,
                "quantised": True, "seed": base,
                "score_thresh": thr, "nms_thresh": nms, "detections_per_img": dets, "topk_candidates": topk,
                "image_sizes": [list(s) for s in image_sizes],
                "boxes": [v.flat(d["boxes"]) for d in out_dets], "scores": [v.flat(d["scores"]) for d in out_dets],
                "labels": [d["labels"].tolist() for d in out_dets],
            })
    return out


def main():
    doc = {"torch": torch.__version__, "postprocess": cases()}
    n = gc.write_compact(OUT, doc)
    print(f"wrote {OUT}: {n} bytes of JSON, {os.path.getsize(OUT)} gzipped")


if __name__ == "__main__":
    main()
