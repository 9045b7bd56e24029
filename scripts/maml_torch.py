#!/usr/bin/env python3
"""The demo's MAML meta-step (cmd/demo) in PyTorch, float64: a check and a timer.

Run with Debian's python (python3-torch, python3-torchvision):

    go run ./cmd/demo -dump-step step.json.gz [size flags]    # gops' inputs and results
    /usr/bin/python3 scripts/maml_torch.py --check step.json.gz
    /usr/bin/python3 scripts/maml_torch.py --bench step.json.gz [--threads 1] [--steps 50]

The model is cmd/demo/model.go's, parameters in its order:

    f      = tanh(conv3x3(canvas; Wf, bf))                      [B, F, S, S]
    crops  = RoIAlign(f, boxes; P x P, sampling 2, aligned, scale 1)   [K, F, P, P]
    offset = conv3x3/2(crops; Wo, bo), mask = sigmoid(conv3x3/2(crops; Wm, bm))
    h      = tanh(DeformConv2d v2 3x3/2 pad 1 (crops, offset, mask; Wd, bd))
    loss   = cross_entropy(flatten(h) @ Wc + bc, labels)        mean over K

RoIAlign and DeformConv2d are written here from differentiable torch ops (row
gathers with index arithmetic, no Python loop over boxes, bins or pixels), with
torchvision's semantics, because torchvision's own ops have no double backward.
Second order (MAML): per task, g = grad(Ls(θ), create_graph=True),
θ' = θ - α·g, meta-gradient grad(Lq(θ'), θ). First order (FOMAML): θ' as a
constant, meta-gradient grad(Lq(θ'), θ'). The meta-step averages over the
tasks (as Learner.MetaTrain) and takes an Adam step (--bench).

--check compares the replica ops with torchvision.ops.roi_align and
deform_conv2d (forward and first-order gradients, on the dumped data and on
large random offsets), FOMAML through torchvision's ops with gops', and the
replica's second- and first-order meta-gradients and losses with gops'
(max |a-b| / max |b| per parameter tensor, at most 1e-10). Exit status 1 on a
failure.

--bench warms up for at least 1 s per variant, then times --steps meta-steps
on the dumped tasks and prints, per variant, a line

    bench second-order steps 50 min_ms 12.345 median_ms 13.456

as `go run ./cmd/demo -bench-steps N` does (scripts/bench_maml.sh reads both).
"""

import argparse
import gzip
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import torchvision

TOL = 1e-10
DC = dict(stride=2, padding=1)  # the offset, mask and deformable convs


def load(path):
    """The dump of `demo -dump-step` (JSON, gzipped if the name ends in .gz)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def tensor(d):
    return torch.tensor(d["Data"], dtype=torch.float64).reshape(d["Shape"])


def scene(s):
    return tensor(s["Canvas"]), tensor(s["Boxes"]), torch.tensor(s["Target"], dtype=torch.long)


# ------------------------------------------------------------------ RoIAlign


def roi_axis(v, size):
    """torchvision's roi_align bilinear rule along one axis, for sample
    coordinates v: low and high pixel and their weights (0 outside
    [-1, size])."""
    valid = ((v >= -1) & (v <= size)).to(v.dtype)
    v = v.clamp(min=0)
    lo = v.floor().long()
    top = lo >= size - 1
    lo = torch.where(top, torch.full_like(lo, size - 1), lo)
    hi = torch.where(top, lo, lo + 1)
    v = torch.where(top, lo.to(v.dtype), v)
    l = v - lo
    return lo, hi, (1 - l) * valid, l * valid


def roi_align(f, boxes, out, spatial_scale=1.0, sampling_ratio=2, aligned=True):
    """torchvision.ops.roi_align(f, boxes, out, ...) for sampling_ratio > 0,
    differentiable to every order in f: each bin averages g x g samples, each
    sample 4 gathered pixels (the bilinear weights factor into y and x)."""
    n, c, h, w = f.shape
    k, g = boxes.shape[0], sampling_ratio
    off = 0.5 if aligned else 0.0
    b = boxes[:, 0].long()
    x1, y1 = boxes[:, 1] * spatial_scale - off, boxes[:, 2] * spatial_scale - off
    rw, rh = boxes[:, 3] * spatial_scale - off - x1, boxes[:, 4] * spatial_scale - off - y1
    if not aligned:
        rw, rh = rw.clamp(min=1), rh.clamp(min=1)
    bw, bh = rw / out, rh / out
    p = torch.arange(out, dtype=f.dtype)[None, :, None]
    s = torch.arange(g, dtype=f.dtype)[None, None, :]
    ys = y1[:, None, None] + p * bh[:, None, None] + (s + 0.5) * bh[:, None, None] / g  # [K, P, g]
    xs = x1[:, None, None] + p * bw[:, None, None] + (s + 0.5) * bw[:, None, None] / g
    ylo, yhi, wylo, wyhi = roi_axis(ys, h)
    xlo, xhi, wxlo, wxhi = roi_axis(xs, w)
    iy = torch.stack([ylo, yhi], -1).reshape(k, out, 1, 2 * g, 1)  # [K, P, 1, 2g, 1]
    ix = torch.stack([xlo, xhi], -1).reshape(k, 1, out, 1, 2 * g)
    wy = torch.stack([wylo, wyhi], -1).reshape(k, out, 1, 2 * g, 1)
    wx = torch.stack([wxlo, wxhi], -1).reshape(k, 1, out, 1, 2 * g)
    rows = f.permute(0, 2, 3, 1).reshape(n * h * w, c)
    idx = b[:, None, None, None, None] * (h * w) + iy * w + ix  # [K, P, P, 2g, 2g]
    vals = rows[idx.reshape(-1)].reshape(k, out, out, 4 * g * g, c)
    wt = (wy * wx / (g * g)).reshape(k, out, out, 1, 4 * g * g)
    return (wt @ vals).reshape(k, out, out, c).permute(0, 3, 1, 2)


# ------------------------------------------------------------- DeformConv2d


def deform_conv2d(x, offset, weight, bias, mask, stride=1, padding=0):
    """torchvision.ops.deform_conv2d (v2 with mask; groups, offset groups and
    dilation 1), differentiable to every order: kernel position (i, j) of
    output (a, b) samples x at (a·stride - padding + i + dy, b·stride - padding
    + j + dx) bilinearly; a sample with y <= -1, y >= H, x <= -1 or x >= W is 0,
    and each corner counts only inside the image."""
    n, c, h, w = x.shape
    cout, _, kh, kw = weight.shape
    ho, wo = offset.shape[2], offset.shape[3]
    kk = kh * kw
    off = offset.reshape(n, kk, 2, ho, wo)
    ki = torch.arange(kh, dtype=x.dtype).repeat_interleave(kw)[None, :, None, None]
    kj = torch.arange(kw, dtype=x.dtype).repeat(kh)[None, :, None, None]
    a = torch.arange(ho, dtype=x.dtype)[None, None, :, None] * stride - padding
    bb = torch.arange(wo, dtype=x.dtype)[None, None, None, :] * stride - padding
    py = a + ki + off[:, :, 0]  # [N, kk, Ho, Wo]
    px = bb + kj + off[:, :, 1]
    inside = ((py > -1) & (py < h) & (px > -1) & (px < w)).to(x.dtype)
    y0, x0 = py.detach().floor(), px.detach().floor()
    ly, lx = py - y0, px - x0
    y0, x0 = y0.long(), x0.long()
    rows = x.permute(0, 2, 3, 1).reshape(n * h * w, c)
    base = (torch.arange(n) * (h * w))[:, None, None, None]
    cols = 0
    for dy, wy in ((0, 1 - ly), (1, ly)):  # the four corners
        for dx, wx in ((0, 1 - lx), (1, lx)):
            yc, xc = y0 + dy, x0 + dx
            ok = ((yc >= 0) & (yc < h) & (xc >= 0) & (xc < w)).to(x.dtype)
            idx = base + yc.clamp(0, h - 1) * w + xc.clamp(0, w - 1)
            cols = cols + (wy * wx * ok)[..., None] * rows[idx.reshape(-1)].reshape(n, kk, ho, wo, c)
    cols = cols * (mask * inside)[..., None]  # [N, kk, Ho, Wo, C]
    out = torch.einsum("npabc,ocp->noab", cols, weight.reshape(cout, c, kk))
    return out + bias[None, :, None, None]


# -------------------------------------------------------------------- model


def loss(theta, canvas, boxes, target, crop, ops="replica"):
    """The model's mean cross-entropy on one scene; ops "torchvision" uses
    torchvision's RoIAlign and DeformConv2d (first order only)."""
    wf, bf, wo, bo, wm, bm, wd, bd, wc, bc = theta
    f = torch.tanh(F.conv2d(canvas, wf, bf, padding=1))
    if ops == "torchvision":
        crops = torchvision.ops.roi_align(f, boxes, crop, spatial_scale=1.0, sampling_ratio=2, aligned=True)
    else:
        crops = roi_align(f, boxes, crop, spatial_scale=1.0, sampling_ratio=2, aligned=True)
    offset = F.conv2d(crops, wo, bo, **DC)
    mask = torch.sigmoid(F.conv2d(crops, wm, bm, **DC))
    if ops == "torchvision":
        hd = torchvision.ops.deform_conv2d(crops, offset, wd, bd, mask=mask, **DC)
    else:
        hd = deform_conv2d(crops, offset, wd, bd, mask, **DC)
    logits = torch.tanh(hd).flatten(1) @ wc + bc
    return F.cross_entropy(logits, target)


def task_grad(theta, task, alpha, crop, second, ops="replica"):
    """One task's query loss and meta-gradient (Learner.Step)."""
    sup, qry = task
    g = torch.autograd.grad(loss(theta, *sup, crop, ops), theta, create_graph=second)
    adapted = [p - alpha * gi for p, gi in zip(theta, g)]
    if not second:
        adapted = [a.detach().requires_grad_() for a in adapted]
    lq = loss(adapted, *qry, crop, ops)
    return lq, torch.autograd.grad(lq, theta if second else adapted)


def meta_grad(theta, tasks, alpha, crop, second, ops="replica"):
    """The mean query loss and meta-gradient over the tasks (MetaTrain's sum
    of each task's gradient / number of tasks)."""
    n = len(tasks)
    total, mean = 0.0, [torch.zeros_like(p) for p in theta]
    for t in tasks:
        lq, g = task_grad(theta, t, alpha, crop, second, ops)
        total += lq.item() / n
        mean = [m + gi / n for m, gi in zip(mean, g)]
    return total, mean


class Adam:
    """train.go's adam: lr, β1 0.9, β2 0.999, ε 1e-8."""

    def __init__(self, lr, like):
        self.lr, self.t = lr, 0
        self.m = [torch.zeros_like(p) for p in like]
        self.v = [torch.zeros_like(p) for p in like]

    @torch.no_grad()
    def update(self, params, grads):
        self.t += 1
        c1, c2 = 1 - 0.9 ** self.t, 1 - 0.999 ** self.t
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m.mul_(0.9).add_(g, alpha=0.1)
            v.mul_(0.999).addcmul_(g, g, value=0.001)
            p.sub_(self.lr * (m / c1) / ((v / c2).sqrt() + 1e-8))


def setup(d):
    theta = [tensor(p).requires_grad_() for p in d["Params"]]
    tasks = [(scene(t["Support"]), scene(t["Query"])) for t in d["Tasks"]]
    return theta, tasks, d["InnerLR"], d["Arch"]["Crop"]


# -------------------------------------------------------------------- check


def relerr(a, b):
    """max |a - b| / max |b|."""
    den = b.abs().max().item()
    return (a - b).abs().max().item() / den if den > 0 else (a - b).abs().max().item()


def compare(what, got, want, names, failures):
    print(f"  {what}")
    if not (len(names) == len(got) == len(want)):
        failures.append(f"{what}: {len(got)} gradients against {len(want)} for {len(names)} parameters")
        return
    for name, a, b in zip(names, got, want):
        e = relerr(a, b)
        ok = e <= TOL
        print(f"    {name:16s} max rel.err {e:.2e}{'' if ok else '  FAIL'}")
        if not ok:
            failures.append(f"{what}: {name}")


def check_ops(theta, task, crop, failures):
    """Replica ops vs torchvision's, forward and first-order gradients, on
    the task's support scene (offsets as the model predicts them, and
    random large ones that sample outside the crop)."""
    gen = torch.Generator().manual_seed(0)
    canvas, boxes, _ = task[0]
    wf, bf, wo, bo, wm, bm, wd, bd = [p.detach() for p in theta[:8]]
    f = torch.tanh(F.conv2d(canvas, wf, bf, padding=1)).requires_grad_()
    outs = [roi_align(f, boxes, crop), torchvision.ops.roi_align(f, boxes, crop, spatial_scale=1.0, sampling_ratio=2, aligned=True)]
    up = torch.randn(outs[1].shape, generator=gen, dtype=torch.float64)
    grads = [torch.autograd.grad((o * up).sum(), f)[0] for o in outs]
    compare("RoIAlign vs torchvision.ops.roi_align", [outs[0], grads[0]], [outs[1], grads[1]], ["forward", "grad input"], failures)
    crops = outs[1].detach()
    offset = F.conv2d(crops, wo, bo, **DC)
    mask = torch.sigmoid(F.conv2d(crops, wm, bm, **DC))
    big = offset + 3 * torch.randn(offset.shape, generator=gen, dtype=torch.float64)
    for what, off in (("model's offsets", offset), ("offsets + 3·N(0,1)", big)):
        args = [a.clone().requires_grad_() for a in (crops, off, wd, bd, mask)]
        outs = [deform_conv2d(*args[:4], args[4], **DC), torchvision.ops.deform_conv2d(*args[:4], mask=args[4], **DC)]
        up = torch.randn(outs[1].shape, generator=gen, dtype=torch.float64)
        grads = [torch.autograd.grad((o * up).sum(), args) for o in outs]
        compare(f"DeformConv2d vs torchvision.ops.deform_conv2d, {what}", [outs[0], *grads[0]], [outs[1], *grads[1]],
                ["forward", "grad input", "grad offset", "grad weight", "grad bias", "grad mask"], failures)


def check(path):
    d = load(path)
    theta, tasks, alpha, crop = setup(d)
    names = [p["Name"] for p in d["Params"]]
    a = d["Arch"]
    print(f"check {path}: seed {d['Seed']}, {len(tasks)} tasks, α {alpha}, canvas {a['Canvas']}, "
          f"features {a['Feat']}, crop {crop}, deform {a['Deform']}; torch {torch.__version__}, torchvision {torchvision.__version__}")
    failures = []
    check_ops(theta, tasks[0], crop, failures)
    gops = {v["Variant"]: v for v in d["Variants"]}
    runs = [("second-order", True, "replica"), ("first-order", False, "replica"), ("first-order", False, "torchvision")]
    compared = 0
    for variant, second, ops in runs:
        if variant not in gops:
            continue
        compared += 1
        want = gops[variant]
        lq, g = meta_grad(theta, tasks, alpha, crop, second, ops)
        el = abs(lq - want["QueryLoss"]) / abs(want["QueryLoss"])
        print(f"  {variant} meta-step through {ops} ops: mean query loss torch {lq:.15g}, gops {want['QueryLoss']:.15g}, rel.err {el:.2e}")
        if el > TOL:
            failures.append(f"{variant} ({ops}) query loss")
        compare(f"{variant} meta-gradient ({ops} ops) vs gops", g, [tensor(t) for t in want["Grad"]], names, failures)
    if compared == 0:
        failures.append(f"{path} holds no meta-step variant to compare (Variants: {sorted(gops)})")
    if failures:
        print("FAIL: " + "; ".join(failures))
        return 1
    print(f"OK: every value within {TOL:g} relative")
    return 0


# -------------------------------------------------------------------- bench


def bench(path, steps, threads):
    torch.set_num_threads(threads)
    d = load(path)
    theta0, tasks, alpha, crop = setup(d)
    for variant, second in (("second-order", True), ("first-order", False)):
        theta = [p.detach().clone().requires_grad_() for p in theta0]
        opt = Adam(0.003, theta)

        def step():
            t0 = time.perf_counter()
            _, g = meta_grad(theta, tasks, alpha, crop, second)
            opt.update(theta, g)
            return time.perf_counter() - t0

        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 1.0:
            step()
        times = sorted(step() for _ in range(steps))
        print(f"bench {variant} steps {steps} min_ms {1e3 * times[0]:.3f} median_ms {1e3 * statistics.median(times):.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", metavar="FILE", help="compare with gops' meta-step in FILE (demo -dump-step)")
    ap.add_argument("--bench", metavar="FILE", help="time meta-steps on the tasks of FILE")
    ap.add_argument("--steps", type=int, default=50, help="timed meta-steps per variant (--bench)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (--bench)")
    args = ap.parse_args()
    if args.steps < 1:
        ap.error(f"--steps {args.steps}: at least one timed meta-step is needed")
    if args.threads < 1:
        ap.error(f"--threads {args.threads}: at least one thread is needed")
    torch.set_default_dtype(torch.float64)
    if args.check:
        return check(args.check)
    if args.bench:
        return bench(args.bench, args.steps, args.threads)
    ap.print_usage()
    return 2


if __name__ == "__main__":
    sys.exit(main())
