"""Golden values for detection.Evaluate (testdata/detection/coco_eval.json.gz)
from scripts/coco_eval_ref.py, a numpy mirror of pycocotools' COCOeval for
iouType "bbox" (run with /usr/bin/python3 from the repository root).

Inputs are not stored: each case's images come from uniforms (splitmix64
over the seed, as scripts/gen_detection_values.py's) through random_images'
float64 formulas, which the Go test computes identically. The images have
several classes, crowd regions, tiny, medium and large boxes, explicit
areas, images without ground truth or without detections, images with more
than 100 detections, score ties and duplicate detections. Stored: the 12
stats, the per-category AP, the recall array, SHA-256 digests of the
precision and scores arrays (little-endian float64) and, for one case, the
whole precision array.
"""

import hashlib
import math
import os
import sys as _sys

import numpy as np

_sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
_sys.path.insert(0, os.path.join(HERE, "..", "testdata"))
_sys.path.insert(0, HERE)
import golden_common as gc  # noqa: E402  (write_compact)
import coco_eval_ref as ref  # noqa: E402
from gen_detection_values import uniforms  # noqa: E402  (splitmix64, as the Go tests')

OUT = os.path.join(HERE, "..", "testdata", "detection", "coco_eval.json.gz")


def box_side(kind, s):
    """A side in pixels: tiny/small (1–31), medium (32–96) or large
    (96–256) by kind in thirds."""
    if kind < 1 / 3:
        return 1 + s * 30
    if kind < 2 / 3:
        return 32 + s * 64
    return 96 + s * 160


def random_images(c):
    """The case's images from uniforms(c["seed"]) read in order; returns
    them and the number of uniforms read."""
    u = uniforms(c["seed"], 200000).tolist()
    pos = [0]

    def nxt():
        pos[0] += 1
        return u[pos[0] - 1]

    K, W, L = c["classes"], c["size"], c["score_levels"]
    images = []
    for i in range(c["images"]):
        v = [nxt() for _ in range(4)]
        ng = 0 if v[0] < 0.15 else math.floor(v[1] * (c["max_gt"] + 1))
        explicit_area = v[2] < 0.3
        gb, gl, gcrowd, garea = [], [], [], []
        for _ in range(ng):
            g = [nxt() for _ in range(8)]
            w = box_side(g[0], g[1])
            h = w * (0.5 + g[2])
            x1, y1 = g[3] * W, g[4] * W
            gb.append([x1, y1, x1 + w, y1 + h])
            gl.append(min(math.floor(g[5] * K), K - 1))
            gcrowd.append(g[6] < 0.08)
            garea.append(w * h * (0.5 + 0.5 * g[7]))
        r = nxt()
        nd = 0 if v[3] < 0.15 else math.floor(r * (c["max_det"] + 1))
        if i % 7 == 3:
            nd += 101
        db, ds, dl = [], [], []
        for d in range(nd):
            e = [nxt() for _ in range(9)]
            if d > 0 and e[0] < 0.05:
                db.append(list(db[-1]))
                ds.append(ds[-1])
                dl.append(dl[-1])
                continue
            if ng > 0 and e[1] < 0.6:
                b = gb[min(math.floor(e[2] * ng), ng - 1)]
                bw, bh = b[2] - b[0], b[3] - b[1]
                x1 = b[0] + (e[3] - 0.5) * 0.2 * bw
                y1 = b[1] + (e[4] - 0.5) * 0.2 * bh
                w, h = bw * (0.85 + 0.3 * e[5]), bh * (0.85 + 0.3 * e[6])
                lbl = gl[min(math.floor(e[2] * ng), ng - 1)]
                if e[7] >= 0.9:
                    lbl = min(math.floor((e[7] - 0.9) * 10 * K), K - 1)
            else:
                w = box_side(e[3], e[4])
                h = w * (0.5 + e[5])
                x1, y1 = e[6] * W, e[2] * W
                lbl = min(math.floor(e[7] * K), K - 1)
            s = e[8] if L == 0 else math.floor(e[8] * L) / L
            db.append([x1, y1, x1 + w, y1 + h])
            ds.append(s)
            dl.append(lbl)
        if c.get("float32"):
            db = [[float(np.float32(x)) for x in b] for b in db]
            gb = [[float(np.float32(x)) for x in b] for b in gb]
            ds = [float(np.float32(x)) for x in ds]
        images.append({"dets": {"boxes": db, "scores": ds, "labels": dl},
                       "gts": {"boxes": gb, "labels": gl, "iscrowd": gcrowd,
                               "area": garea if explicit_area else None}})
    return images, pos[0]


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()


CASES = [
    {"name": "three-classes", "seed": 1, "images": 30, "classes": 3, "max_gt": 6, "max_det": 25, "size": 400, "score_levels": 0},
    {"name": "score-ties", "seed": 2, "images": 25, "classes": 4, "max_gt": 8, "max_det": 30, "size": 300, "score_levels": 10},
    {"name": "no-cats", "seed": 3, "images": 12, "classes": 3, "max_gt": 5, "max_det": 20, "size": 300, "score_levels": 20,
     "use_cats": False, "precision": True},
    {"name": "cat-ids-max-dets", "seed": 4, "images": 20, "classes": 5, "max_gt": 6, "max_det": 30, "size": 350, "score_levels": 0,
     "cat_ids": [7, 2, 0, 1], "max_dets": [20, 1, 5]},
    {"name": "float32", "seed": 5, "images": 15, "classes": 3, "max_gt": 5, "max_det": 20, "size": 250, "score_levels": 4, "float32": True},
    {"name": "many", "seed": 6, "images": 60, "classes": 6, "max_gt": 10, "max_det": 40, "size": 500, "score_levels": 0},
    {"name": "no-cats-order", "seed": 7, "images": 10, "classes": 4, "max_gt": 6, "max_det": 15, "size": 200, "score_levels": 5,
     "use_cats": False, "cat_ids": [3, 0, 2]},
    # 10 classes: AP averages 10·101·10 values, more than numpy's 8192-value blocks.
    {"name": "ten-classes", "seed": 8, "images": 40, "classes": 10, "max_gt": 12, "max_det": 60, "size": 500, "score_levels": 0},
]


def main():
    cases = []
    for c in CASES:
        images, draws = random_images(c)
        params = {}
        if "use_cats" in c:
            params["useCats"] = int(c["use_cats"])
        if "cat_ids" in c:
            params["catIds"] = list(c["cat_ids"])
        if "max_dets" in c:
            params["maxDets"] = list(c["max_dets"])
        e = ref.evaluate(images, params)
        out = dict(c)
        out.update({
            "draws": draws,
            "dets": sum(len(im["dets"]["scores"]) for im in images),
            "stats": [float(v) for v in e.stats],
            "category_ap": e.category_ap(),
            "recall": e.eval["recall"].reshape(-1).tolist(),
            "precision_shape": list(e.eval["precision"].shape),
            "precision_sha256": digest(e.eval["precision"]),
            "scores_sha256": digest(e.eval["scores"]),
        })
        out["precision"] = e.eval["precision"].reshape(-1).tolist() if c.get("precision") else None
        cases.append(out)
        print(c["name"], out["dets"], "dets", ["%.4f" % v for v in e.stats])
    p = ref.default_params()
    doc = {"numpy": np.__version__, "iou_thrs": p["iouThrs"].tolist(), "rec_thrs": p["recThrs"].tolist(), "cases": cases}
    n = gc.write_compact(OUT, doc)
    print("wrote %s: %d cases, %d bytes gz (%d json)" % (os.path.relpath(OUT), len(cases), os.path.getsize(OUT), n))


if __name__ == "__main__":
    main()
