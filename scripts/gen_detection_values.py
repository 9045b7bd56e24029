"""Golden values for the value-side parts of package detection
(testdata/detection/values_golden.json.gz): GeneralizedRCNNTransform's eval
path and resize_boxes, AnchorGenerator, BoxCoder and BoxLinearCoder, and
RetinaNet's and FCOS's postprocess_detections, from Debian's torch 1.13 and
torchvision 0.14 (run with /usr/bin/python3 from the repository root).

Inputs are not stored: image pixels come from lcg_image and every other input
from uniforms (splitmix64 over a seed) through a few float64 formulas, which the
Go tests compute identically. Transform outputs are stored as sums and a
sample of positions.
"""

import json
import os
import sys as _sys
_sys.dont_write_bytecode = True
_sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402  (write_compact)
import types

import torch
import torchvision
from torchvision.models.detection import _utils as det_utils
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.fcos import FCOS
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.retinanet import RetinaNet
from torchvision.models.detection.transform import GeneralizedRCNNTransform, resize_boxes

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "detection", "values_golden.json.gz")
DTYPES = [("float32", torch.float32), ("float64", torch.float64)]
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def flat(t):
    return t.detach().double().reshape(-1).tolist()


MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def uniforms(seed, *shape):
    """splitmix64 from state seed·GOLDEN: n values (z >> 11)·2^-53 in [0, 1),
    float64, shaped."""
    n = 1
    for d in shape:
        n *= d
    s = (seed * GOLDEN) & MASK
    out = []
    for _ in range(n):
        s = (s + GOLDEN) & MASK
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        out.append((z >> 11) * 2.0**-53)
    return torch.tensor(out, dtype=torch.float64).reshape(*shape)


def lcg_image(c, h, w, seed, dtype):
    """Pixels v_i = ((i·7919 + seed·104729) mod 1009) / 1008, i the
    row-major index: exact integers, then one float64 division, then the
    dtype."""
    n = c * h * w
    i = torch.arange(n, dtype=torch.int64)
    v = ((i * 7919 + seed * 104729) % 1009).double() / 1008.0
    return v.reshape(c, h, w).to(dtype)


def transform_cases():
    cases = []
    configs = [(32.0, 48.0), (64.0, 100.0), (800.0, 1333.0)]
    batches = [
        [(3, 37, 53), (3, 61, 20), (3, 5, 7)],
        [(3, 40, 200), (3, 17, 17)],
        [(3, 480, 640), (3, 300, 201)],
    ]
    gen = torch.Generator().manual_seed(7)
    seed = 100
    for (min_size, max_size) in configs:
        for bi, shapes in enumerate(batches):
            if min_size > 100 and bi != 2:
                continue
            for name, dt in DTYPES:
                t = GeneralizedRCNNTransform(min_size, max_size, MEAN, STD).eval()
                images = [lcg_image(c, h, w, s + 1, dt) for s, (c, h, w) in enumerate(shapes)]
                with torch.no_grad():
                    il, _ = t(images)
                out = il.tensors
                idx = torch.randint(0, out.numel(), (400,), generator=gen)
                case = {
                    "dtype": name, "min_size": min_size, "max_size": max_size,
                    "shapes": [list(s) for s in shapes], "seeds": [s + 1 for s in range(len(shapes))],
                    "out_shape": list(out.shape), "image_sizes": [list(s) for s in il.image_sizes],
                    "sum": float(out.double().sum()), "abs_sum": float(out.double().abs().sum()),
                    "sample_idx": idx.tolist(), "sample": flat(out.reshape(-1)[idx]),
                }
                # resize_boxes back to the original sizes (transform.postprocess)
                boxes, seeds = [], []
                for (c, h, w), (rh, rw) in zip(shapes, il.image_sizes):
                    seed += 1
                    b = uniforms(seed, 6, 4)
                    b[:, 0::2] *= rw
                    b[:, 1::2] *= rh
                    boxes.append(b.to(dt))
                    seeds.append(seed)
                res = t.postprocess([{"boxes": b} for b in boxes], il.image_sizes, [s[1:] for s in shapes])
                case["box_seeds"] = seeds
                case["orig_boxes"] = [flat(r["boxes"]) for r in res]
                cases.append(case)
    return cases


def anchor_cases():
    retina_sizes = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [32, 64, 128, 256, 512])
    configs = [
        ("retinanet", retina_sizes, ((0.5, 1.0, 2.0),) * 5, (160, 224), [(20, 28), (10, 14), (5, 7), (3, 4), (2, 2)]),
        ("fcos", ((8,), (16,), (32,), (64,), (128,)), ((1.0,),) * 5, (96, 128), [(12, 16), (6, 8), (3, 4), (2, 2), (1, 1)]),
        ("odd", ((13, 27.5), (40,)), ((0.3, 1.0, 1.7), (0.7,)), (97, 61), [(13, 9), (7, 3)]),
    ]
    cases = []
    for name, sizes, ratios, image_size, grids in configs:
        for dname, dt in DTYPES:
            g = AnchorGenerator(sizes, ratios)
            il = ImageList(torch.zeros(2, 3, *image_size, dtype=dt), [image_size, image_size])
            feats = [torch.zeros(2, 1, h, w, dtype=dt) for h, w in grids]
            anchors = g(il, feats)
            per_level = [h * w * a for (h, w), a in zip(grids, g.num_anchors_per_location())]
            cases.append({
                "name": name, "dtype": dname, "sizes": [list(map(float, s)) for s in sizes],
                "aspect_ratios": [list(r) for r in ratios], "image_size": list(image_size),
                "grid_sizes": [list(gs) for gs in grids], "num_anchors_per_location": g.num_anchors_per_location(),
                "per_level": per_level, "anchors": flat(anchors[0]),
                "cell_anchors": [flat(c) for c in g.cell_anchors],
            })
    return cases


def random_boxes(seed, k, dt, scale=100.0):
    """Boxes from uniforms(seed, k, 4) u: x1 = u0·scale, y1 = u1·scale,
    x2 = x1 + (u2·scale·0.5 + 0.5), y2 likewise with u3, in float64, then
    dt."""
    u = uniforms(seed, k, 4)
    xy = u[:, :2] * scale
    wh = u[:, 2:] * scale * 0.5 + 0.5
    return torch.cat([xy, xy + wh], dim=1).to(dt)


def boxcoder_cases():
    cases = []
    seed = 1000
    for weights in [(1.0, 1.0, 1.0, 1.0), (10.0, 10.0, 5.0, 5.0)]:
        for dname, dt in DTYPES:
            for classes in [1, 3]:
                seed += 10
                k = 40
                boxes = random_boxes(seed, k, dt)
                codes = uniforms(seed + 1, k, 4 * classes) * 8 - 4  # codes = u·8 − 4
                codes[:5, 2::4] = 30.0  # past bbox_xform_clip · weights: clamped
                codes[5:8, 3::4] = 25.0
                codes = codes.to(dt)
                coder = det_utils.BoxCoder(weights)
                dec = coder.decode_single(codes, boxes)
                ref = random_boxes(seed + 2, k, dt)
                props = random_boxes(seed + 3, k, dt)
                enc = coder.encode_single(ref, props)
                cases.append({
                    "kind": "box", "weights": list(weights), "dtype": dname, "classes": classes, "k": k, "seed": seed,
                    "decoded": flat(dec), "encoded": flat(enc),
                })
    for norm in [True, False]:
        for dname, dt in DTYPES:
            seed += 10
            k = 40
            coder = det_utils.BoxLinearCoder(normalize_by_size=norm)
            boxes = random_boxes(seed, k, dt)
            codes = (uniforms(seed + 1, k, 4) * 3).to(dt)  # codes = u·3
            dec = coder.decode(codes, boxes)
            ref = random_boxes(seed + 2, k, dt)
            props = random_boxes(seed + 3, k, dt)
            enc = coder.encode(ref, props)
            cases.append({
                "kind": "linear", "normalize_by_size": norm, "dtype": dname, "k": k, "seed": seed,
                "decoded": flat(dec), "encoded": flat(enc),
            })
    return cases


def postprocess_cases():
    """Per level l (seeds base + 10·l + 0..3): cls_logits [N, HWA, K] from
    uniforms as floor(u·64)/4 − 8 (quantised: many exact ties) or u·12 − 6;
    bbox_regression [N, HWA, 4] u·1.2 − 0.6 (RetinaNet) or u·0.6 (FCOS);
    anchors random_boxes(·, HWA, scale 80); FCOS bbox_ctrness [N, HWA, 1]
    as cls_logits."""
    cases = []
    # (name, model, levels HWA, classes, score_thresh, nms, dets, topk, quantised logits)
    configs = [
        ("retina_default", "retinanet", [120, 30, 9], 4, 0.05, 0.5, 300, 1000, True),
        ("retina_topk", "retinanet", [150, 40, 6], 5, 0.05, 0.5, 10, 7, True),
        ("retina_many", "retinanet", [400, 100, 25], 5, 0.05, 0.5, 300, 1000, False),
        ("retina_thresh", "retinanet", [60, 15], 3, 0.6, 0.4, 300, 1000, True),
        ("fcos_default", "fcos", [120, 30, 9], 4, 0.2, 0.6, 100, 1000, True),
        ("fcos_topk", "fcos", [150, 40, 6], 5, 0.2, 0.6, 12, 6, True),
        ("fcos_many", "fcos", [400, 100, 25], 5, 0.05, 0.6, 100, 1000, False),
    ]
    base = 5000
    for name, model, levels, classes, thr, nms, dets, topk, quant in configs:
        for dname, dt in DTYPES:
            base += 100
            n_img = 2
            image_sizes = [(70, 90), (90, 64)]

            def logits(seed, shape):
                u = uniforms(seed, *shape)
                x = torch.floor(u * 64) / 4 - 8 if quant else u * 12 - 6
                return x.to(dt)

            cls = [logits(base + 10 * l, (n_img, hwa, classes)) for l, hwa in enumerate(levels)]
            anchors = [random_boxes(base + 10 * l + 2, hwa, dt, scale=80.0) for l, hwa in enumerate(levels)]
            if model == "retinanet":
                reg = [(uniforms(base + 10 * l + 1, n_img, hwa, 4) * 1.2 - 0.6).to(dt) for l, hwa in enumerate(levels)]
                stub = types.SimpleNamespace(score_thresh=thr, nms_thresh=nms, detections_per_img=dets,
                                             topk_candidates=topk, box_coder=det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0)))
                heads = {"cls_logits": cls, "bbox_regression": reg}
                out = RetinaNet.postprocess_detections(stub, heads, [anchors] * n_img, image_sizes)
            else:
                reg = [(uniforms(base + 10 * l + 1, n_img, hwa, 4) * 0.6).to(dt) for l, hwa in enumerate(levels)]
                ctr = [logits(base + 10 * l + 3, (n_img, hwa, 1)) for l, hwa in enumerate(levels)]
                stub = types.SimpleNamespace(score_thresh=thr, nms_thresh=nms, detections_per_img=dets,
                                             topk_candidates=topk, box_coder=det_utils.BoxLinearCoder(normalize_by_size=True))
                heads = {"cls_logits": cls, "bbox_regression": reg, "bbox_ctrness": ctr}
                out = FCOS.postprocess_detections(stub, heads, [anchors] * n_img, image_sizes)
            cases.append({
                "name": name, "model": model, "dtype": dname, "levels": levels, "classes": classes,
                "quantised": quant, "seed": base,
                "score_thresh": thr, "nms_thresh": nms, "detections_per_img": dets, "topk_candidates": topk,
                "image_sizes": [list(s) for s in image_sizes],
                "boxes": [flat(d["boxes"]) for d in out], "scores": [flat(d["scores"]) for d in out],
                "labels": [d["labels"].tolist() for d in out],
            })
    return cases


def topk_cases():
    """torch.topk on 1-D float tensors with many ties, both of torch's CPU
    paths (k·64 <= n: partial sort; else nth_element and sort)."""
    gen = torch.Generator().manual_seed(5)
    cases = []
    for n, k in [(10, 10), (10, 3), (50, 50), (100, 37), (700, 10), (1000, 15), (2000, 1000), (3000, 40), (40, 1)]:
        x = torch.randint(0, max(3, n // 8), (n,), generator=gen).double() / 4
        v, i = x.topk(k)
        cases.append({"values": flat(x), "k": k, "topk_values": flat(v), "topk_indices": i.tolist()})
    return cases


def main():
    doc = {
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "transform": transform_cases(), "anchors": anchor_cases(), "boxcoder": boxcoder_cases(),
        "postprocess": postprocess_cases(), "topk": topk_cases(),
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    n = gc.write_compact(OUT, doc)
    print(f"wrote {OUT}: {n} bytes of JSON, {os.path.getsize(OUT)} gzipped")


if __name__ == "__main__":
    main()
