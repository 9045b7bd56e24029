"""A reference for detection.Evaluate: pycocotools' COCOeval for iouType
"bbox" (evaluate, accumulate, summarize), written in numpy from the
published algorithm (pycocotools itself is not installable here). It
follows COCOeval's steps and numpy calls one by one, so that float64
results equal pycocotools' bit for bit:

- computeIoU: detections sorted by score (np.argsort of −score, kind
  "mergesort"), cut to maxDets[-1], IoU as maskApi.c's bbIou on x, y, w, h
  boxes (x + w recomputed; a crowd region's union is the detection's area);
- evaluateImg: ground truth ignored (crowd, or area outside the range)
  sorted last (mergesort), greedy matching per IoU threshold
  (min(t, 1 − 1e−10), ties to the later ground truth), detections matched
  to ignored ground truth ignored, unmatched ones outside the area range
  ignored;
- accumulate: detections of all images concatenated and sorted by score
  (mergesort), cumulative sums, precision tp / (tp + fp + np.spacing(1))
  made non-increasing from the right, np.searchsorted(side="left") at the
  recall thresholds (0 past the end);
- summarize: np.mean of the entries above −1, −1 when none.

Input: a list of images, each {"dets": {"boxes": [[x1, y1, x2, y2], ...],
"scores": [...], "labels": [...]}, "gts": {"boxes", "labels", "iscrowd",
"area" (None: box areas)}}; images are ids 0, 1, ... as detection.Evaluate
matches them by index. Imported by scripts/gen_coco_eval.py.
"""

import numpy as np


def default_params():
    """Params(iouType="bbox")."""
    return {
        "iouThrs": np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True),
        "recThrs": np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True),
        "maxDets": [1, 10, 100],
        "areaRng": [[0 ** 2, 1e5 ** 2], [0 ** 2, 32 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]],
        "areaRngLbl": ["all", "small", "medium", "large"],
        "useCats": 1,
        "catIds": None,
    }


def _xywh(b):
    x1, y1, x2, y2 = [float(v) for v in b]
    return [x1, y1, x2 - x1, y2 - y1]


def load(images):
    """The annotation lists COCO() and loadRes() would build: ids from 1,
    bbox as x, y, w, h, areas (a result's is w·h)."""
    gts, dts = [], []
    for img, im in enumerate(images):
        g = im["gts"]
        for j, b in enumerate(g["boxes"]):
            bb = _xywh(b)
            area = g["area"][j] if g.get("area") is not None else bb[2] * bb[3]
            crowd = int(g["iscrowd"][j]) if g.get("iscrowd") is not None else 0
            gts.append({"id": len(gts) + 1, "image_id": img, "category_id": int(g["labels"][j]),
                        "bbox": bb, "area": float(area), "iscrowd": crowd, "ignore": crowd})
        d = im["dets"]
        for j, b in enumerate(d["boxes"]):
            bb = _xywh(b)
            dts.append({"id": len(dts) + 1, "image_id": img, "category_id": int(d["labels"][j]),
                        "bbox": bb, "area": bb[2] * bb[3], "score": float(d["scores"][j]), "iscrowd": 0})
    return gts, dts


def bb_iou(d, g, iscrowd):
    """maskUtils.iou(d, g, iscrowd) for boxes: [len(d), len(g)], or [] when
    either is empty."""
    if len(d) == 0 or len(g) == 0:
        return []
    o = np.zeros((len(d), len(g)))
    for gi, G in enumerate(g):
        ga = G[2] * G[3]
        for di, D in enumerate(d):
            da = D[2] * D[3]
            w = min(D[2] + D[0], G[2] + G[0]) - max(D[0], G[0])
            if w <= 0:
                continue
            h = min(D[3] + D[1], G[3] + G[1]) - max(D[1], G[1])
            if h <= 0:
                continue
            i = w * h
            u = da if iscrowd[gi] else da + ga - i
            o[di, gi] = i / u
    return o


class Eval:
    """COCOeval(cocoGt, cocoDt, "bbox") on load(images)'s lists."""

    def __init__(self, images, params=None):
        self.p = default_params()
        self.p.update(params or {})
        self.gts, self.dts = load(images)
        p = self.p
        if p["catIds"] is None:
            p["catIds"] = sorted({g["category_id"] for g in self.gts})
        p["imgIds"] = list(range(len(images)))

    def evaluate(self):
        p = self.p
        p["catIds"] = list(np.unique(p["catIds"])) if p["useCats"] else p["catIds"]
        p["maxDets"] = sorted(p["maxDets"])
        cats = set(p["catIds"])
        self._gts, self._dts = {}, {}
        for g in self.gts:
            if g["category_id"] in cats:
                self._gts.setdefault((g["image_id"], g["category_id"]), []).append(g)
        for d in self.dts:
            if d["category_id"] in cats:
                self._dts.setdefault((d["image_id"], d["category_id"]), []).append(d)
        catIds = p["catIds"] if p["useCats"] else [-1]
        self.ious = {(i, c): self.compute_iou(i, c) for i in p["imgIds"] for c in catIds}
        self.evalImgs = [self.evaluate_img(i, c, a, p["maxDets"][-1])
                         for c in catIds for a in p["areaRng"] for i in p["imgIds"]]

    def _lists(self, img, cat):
        p = self.p
        if p["useCats"]:
            return self._gts.get((img, cat), []), self._dts.get((img, cat), [])
        gt = [g for c in p["catIds"] for g in self._gts.get((img, c), [])]
        dt = [d for c in p["catIds"] for d in self._dts.get((img, c), [])]
        return gt, dt

    def compute_iou(self, img, cat):
        gt, dt = self._lists(img, cat)
        if len(gt) == 0 and len(dt) == 0:
            return []
        order = np.argsort([-d["score"] for d in dt], kind="mergesort")
        dt = [dt[i] for i in order][:self.p["maxDets"][-1]]
        return bb_iou([d["bbox"] for d in dt], [g["bbox"] for g in gt], [g["iscrowd"] for g in gt])

    def evaluate_img(self, img, cat, rng, max_det):
        p = self.p
        gt, dt = self._lists(img, cat)
        if len(gt) == 0 and len(dt) == 0:
            return None
        ign = [1 if (g["ignore"] or g["area"] < rng[0] or g["area"] > rng[1]) else 0 for g in gt]
        gind = np.argsort(ign, kind="mergesort")
        gt = [gt[i] for i in gind]
        gt_ig = np.array([ign[i] for i in gind])
        dind = np.argsort([-d["score"] for d in dt], kind="mergesort")
        dt = [dt[i] for i in dind[0:max_det]]
        crowd = [g["iscrowd"] for g in gt]
        ious = self.ious[img, cat]
        ious = ious[:, gind] if len(ious) > 0 else ious
        T, G, D = len(p["iouThrs"]), len(gt), len(dt)
        gtm, dtm, dt_ig = np.zeros((T, G)), np.zeros((T, D)), np.zeros((T, D))
        if len(ious) != 0:
            for ti, t in enumerate(p["iouThrs"]):
                for di, d in enumerate(dt):
                    best, m = min([t, 1 - 1e-10]), -1
                    for gi in range(G):
                        if gtm[ti, gi] > 0 and not crowd[gi]:
                            continue
                        if m > -1 and gt_ig[m] == 0 and gt_ig[gi] == 1:
                            break
                        if ious[di, gi] < best:
                            continue
                        best, m = ious[di, gi], gi
                    if m == -1:
                        continue
                    dt_ig[ti, di] = gt_ig[m]
                    dtm[ti, di] = gt[m]["id"]
                    gtm[ti, m] = d["id"]
        out = np.array([d["area"] < rng[0] or d["area"] > rng[1] for d in dt]).reshape((1, D))
        dt_ig = np.logical_or(dt_ig, np.logical_and(dtm == 0, np.repeat(out, T, 0)))
        return {"dtMatches": dtm, "dtScores": [d["score"] for d in dt], "gtIgnore": gt_ig, "dtIgnore": dt_ig}

    def accumulate(self):
        p = self.p
        cats = p["catIds"] if p["useCats"] else [-1]
        T, R, K, A, M = len(p["iouThrs"]), len(p["recThrs"]), len(cats), len(p["areaRng"]), len(p["maxDets"])
        precision, recall, scores = -np.ones((T, R, K, A, M)), -np.ones((T, K, A, M)), -np.ones((T, R, K, A, M))
        I0, A0 = len(p["imgIds"]), A
        for k in range(K):
            for a in range(A):
                for m, max_det in enumerate(p["maxDets"]):
                    E = [self.evalImgs[k * A0 * I0 + a * I0 + i] for i in range(I0)]
                    E = [e for e in E if e is not None]
                    if len(E) == 0:
                        continue
                    ds = np.concatenate([e["dtScores"][0:max_det] for e in E])
                    inds = np.argsort(-ds, kind="mergesort")
                    ds_sorted = ds[inds]
                    dtm = np.concatenate([e["dtMatches"][:, 0:max_det] for e in E], axis=1)[:, inds]
                    dt_ig = np.concatenate([e["dtIgnore"][:, 0:max_det] for e in E], axis=1)[:, inds]
                    gt_ig = np.concatenate([e["gtIgnore"] for e in E])
                    npig = np.count_nonzero(gt_ig == 0)
                    if npig == 0:
                        continue
                    tps = np.logical_and(dtm, np.logical_not(dt_ig))
                    fps = np.logical_and(np.logical_not(dtm), np.logical_not(dt_ig))
                    tp_sum = np.cumsum(tps, axis=1).astype(dtype=np.float64)
                    fp_sum = np.cumsum(fps, axis=1).astype(dtype=np.float64)
                    for t, (tp, fp) in enumerate(zip(tp_sum, fp_sum)):
                        tp, fp = np.array(tp), np.array(fp)
                        nd = len(tp)
                        rc = tp / npig
                        pr = tp / (fp + tp + np.spacing(1))
                        q, ss = np.zeros((R,)), np.zeros((R,))
                        recall[t, k, a, m] = rc[-1] if nd else 0
                        pr, q = pr.tolist(), q.tolist()
                        for i in range(nd - 1, 0, -1):
                            if pr[i] > pr[i - 1]:
                                pr[i - 1] = pr[i]
                        found = np.searchsorted(rc, p["recThrs"], side="left")
                        for ri, pi in enumerate(found):
                            if pi >= nd:
                                break  # COCOeval's IndexError, caught
                            q[ri], ss[ri] = pr[pi], ds_sorted[pi]
                        precision[t, :, k, a, m] = np.array(q)
                        scores[t, :, k, a, m] = np.array(ss)
        self.eval = {"precision": precision, "recall": recall, "scores": scores}

    def _summarize(self, ap=1, iou_thr=None, area="all", max_dets=100):
        p = self.p
        aind = [i for i, lbl in enumerate(p["areaRngLbl"]) if lbl == area]
        mind = [i for i, md in enumerate(p["maxDets"]) if md == max_dets]
        s = self.eval["precision"] if ap == 1 else self.eval["recall"]
        if iou_thr is not None:
            s = s[np.where(iou_thr == p["iouThrs"])[0]]
        s = s[:, :, :, aind, mind] if ap == 1 else s[:, :, aind, mind]
        return -1 if len(s[s > -1]) == 0 else np.mean(s[s > -1])

    def summarize(self):
        md = self.p["maxDets"]
        st = [self._summarize(1), self._summarize(1, .5, max_dets=md[2]), self._summarize(1, .75, max_dets=md[2])]
        st += [self._summarize(1, area=a, max_dets=md[2]) for a in ("small", "medium", "large")]
        st += [self._summarize(0, max_dets=m) for m in md[:3]]
        st += [self._summarize(0, area=a, max_dets=md[2]) for a in ("small", "medium", "large")]
        self.stats = np.array(st, dtype=np.float64)
        return self.stats

    def category_ap(self):
        """detectron2's per-category AP: mean of precision[:, :, k, 0, -1]
        above −1, or −1."""
        pr = self.eval["precision"]
        out = []
        for k in range(pr.shape[2]):
            v = pr[:, :, k, 0, -1]
            v = v[v > -1]
            out.append(float(np.mean(v)) if v.size else -1.0)
        return out


def evaluate(images, params=None):
    """evaluate, accumulate and summarize; returns the Eval."""
    e = Eval(images, params)
    e.evaluate()
    e.accumulate()
    e.summarize()
    return e
