#!/usr/bin/env python3
"""Generate golden values for nn.GridSample and nn.AffineGrid
(torch.nn.functional.grid_sample and affine_grid), first and second order.

torch 1.13 refuses grid_sample's double backward, so the second-order values
come from an independent float64 re-implementation of grid_sample written
with gathers (ref_grid_sample below) that torch autograd differentiates to
any order. It follows ATen's GridSampler.h: unnormalize, then for bilinear
and nearest the padding transform of the source coordinate (border: clip to
[0, size-1] with derivative 0 on and past the borders; reflection: reflect
about -0.5 and size-0.5, or 0 and size-1 with align_corners, then clip),
floor (bilinear) or nearbyint, i.e. round half to even (nearest), corner
gathers with validity masks (zeros padding), bilinear weights; bicubic
unnormalizes only, gathers 4x4 taps whose integer coordinates get the
padding transform, and weighs them with the cubic convolution (A = -0.75).
Piecewise-constant parts (floor, rounding, masks, branch of a clip or a
reflection) are computed on detached values. Every case's forward and
first-order gradients (input and grid) of the reference are asserted equal
to F.grid_sample's (float64, 1e-10) before the file is written.

Grid points (per image) are pixel centres (integers after unnormalizing),
the image borders and corners, half-integers (nearest's ties), points just
outside (-0.3 px), far outside (several reflections), and random points
inside and around the image. Input sizes are H, W = 4, 8 (align_corners
false) and 5, 9 (true) so that these grid coordinates are dyadic and
unnormalizing them is exact in float32 and float64 whatever the order of the
operations: a point on an integer stays on it, and the floor convention
(the cell to its right) is what is tested there. Random coordinates are
multiples of 1/1024. Inputs, G, U, V are multiples of 1/256 (exact in float32).

Second order: L = <out, G>. With directions U (input's shape) and V (grid's
shape) the file holds the gradients w.r.t. input and grid of
<dL/dgrid, V> (hvp_v_input: the mixed term, hvp_v_grid: the pure grid term)
and of <dL/dinput, U> (hvp_u_input, zero since out is linear in input;
hvp_u_grid, the mixed term). The reference is not twice differentiable where
a coordinate crosses an integer (the cell changes; bicubic's Keys kernel is
only C1 there) or a clip or reflection boundary, so V is zero at grid points
that lie on such a kink (listed in "kink_points"); hvp_u_grid at those points
is the one-sided value of the same convention as the first-order gradient.
The script asserts <hvp_v_input, U> == <hvp_u_grid, V> (symmetry), that
hvp_u_grid equals torch's grid gradient of <grid_sample(U, grid), G>, and
that hvp_v_input and hvp_v_grid (and the composed cases' HVPs) agree with
central differences (step 1e-6) of torch's own first-order gradients along V
(1e-6 relative): the second order is checked against torch too, not only
against the reference's autograd.

AffineGrid: forward and the gradient of <grid, G> w.r.t. theta from
F.affine_grid (its Hessian is zero: the grid is linear in theta), and a
composed case AffineGrid -> GridSample with L = <out, G>: out, the
gradients w.r.t. theta and input (checked against F.affine_grid ->
F.grid_sample), and the gradients w.r.t. theta and input of
<dL/dtheta, V_theta> from the reference. Composed cases use random theta
near the identity and assert that no sample point is within 1e-4 of a kink.

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_gridsample.py

Writes testdata/gridsample_golden.json.gz. Deterministic: fixed seeds.

JSON layout:

    {"torch": str, "op": "grid_sample",
     "cases": [gs, ...],            # bilinear and nearest
     "bicubic_cases": [gs, ...],    # run only if nn.GridSample accepts "bicubic"
     "affine_cases": [ag, ...],
     "composed_cases": [cc, ...]}

    gs = {
      "name": str, "mode": str, "padding_mode": str, "align_corners": bool,
      "input_shape": [N, C, H, W], "input": [...],   # flat, row-major
      "grid_shape": [N, Ho, Wo, 2], "grid": [...],
      "grad_output": [...],                          # G, shape [N, C, Ho, Wo]
      "output_shape": [N, C, Ho, Wo], "output": [...],
      "grad_input": [...], "grad_grid": [...],       # of L = <out, G> (torch)
      "u_input": [...], "v_grid": [...],             # directions U, V
      "hvp_v_input": [...], "hvp_v_grid": [...],     # d<dL/dgrid, V>/d(input, grid)
      "hvp_u_input": [...], "hvp_u_grid": [...],     # d<dL/dinput, U>/d(input, grid)
      "kink_points": [p, ...],                       # flat point index n*Ho*Wo + i*Wo + j
    }
    ag = {
      "name": str, "align_corners": bool, "size": [N, C, H, W],
      "theta": [...],                                # [N, 2, 3]
      "grad_output": [...], "output_shape": [N, H, W, 2], "output": [...],
      "grad_theta": [...],                           # of <grid, G>
    }
    cc = {
      "name": str, "mode": str, "padding_mode": str, "align_corners": bool,
      "theta": [...], "size": [N, C, Ho, Wo],
      "input_shape": [N, C, H, W], "input": [...],
      "grad_output": [...], "output_shape": [...], "output": [...],
      "grad_theta": [...], "grad_input": [...],      # of L = <out, G>
      "v_theta": [...],
      "hvp_theta": [...], "hvp_theta_input": [...],  # d<dL/dtheta, V_theta>/d(theta, input)
    }

All numbers are float64 values as Python floats.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import flat, out_path, write_compact  # noqa: E402

OUT_PATH = out_path("gridsample_golden.json.gz")

N, C, HO, WO = 2, 3, 3, 5
TOL = 1e-10
A_CUBIC = -0.75


def unnormalize(coord, size, align):
    """GridSampler.h grid_sampler_unnormalize."""
    if align:
        return ((coord + 1) / 2) * (size - 1)
    return ((coord + 1) * size - 1) / 2


def clip(coord, size):
    """clip_coordinates: derivative 1 strictly inside (0, size-1), else 0."""
    d = coord.detach()
    lo = torch.zeros_like(coord)
    hi = torch.full_like(coord, size - 1)
    return torch.where(d <= 0, lo, torch.where(d >= size - 1, hi, coord))


def reflect(coord, twice_low, twice_high):
    """reflect_coordinates, as GridSampler.h (fmod as in - span*floor(in/span))."""
    if twice_low == twice_high:
        return torch.zeros_like(coord)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = coord - lo
    sign = torch.where(c.detach() < 0, -torch.ones_like(c), torch.ones_like(c))
    a = c * sign
    flips = torch.floor(a.detach() / span)
    extra = a - span * flips
    odd = torch.remainder(flips, 2) == 1
    return torch.where(odd, span - extra + lo, extra + lo)


def pad_coordinates(coord, size, padding, align):
    """compute_coordinates: the padding transform of a source coordinate."""
    if padding == "border":
        return clip(coord, size)
    if padding == "reflection":
        if align:
            coord = reflect(coord, 0, 2 * (size - 1))
        else:
            coord = reflect(coord, -1, 2 * size - 1)
        return clip(coord, size)
    return coord


def gather(flat, H, W, iy, ix):
    """flat [N, C, H*W]; iy, ix [N, P] long, possibly out of range. Returns
    [N, C, P] values (0 where out of range)."""
    valid = (iy >= 0) & (iy < H) & (ix >= 0) & (ix < W)
    idx = torch.where(valid, iy * W + ix, torch.zeros_like(ix))
    v = torch.gather(flat, 2, idx[:, None, :].expand(flat.shape[0], flat.shape[1], idx.shape[1]))
    return v * valid[:, None, :].to(flat.dtype)


def cubic_coeffs(t):
    """UpSample.h get_cubic_upsample_coefficients, A = -0.75."""
    A = A_CUBIC

    def conv1(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def conv2(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    return [conv2(t + 1), conv1(t), conv1(1 - t), conv2(2 - t)]


def ref_grid_sample(inp, grid, mode, padding, align):
    """grid_sample(inp [N, C, H, W], grid [N, Ho, Wo, 2]) -> [N, C, Ho, Wo]."""
    n, c, H, W = inp.shape
    _, ho, wo, _ = grid.shape
    flat = inp.reshape(n, c, H * W)
    gx = grid[..., 0].reshape(n, ho * wo)
    gy = grid[..., 1].reshape(n, ho * wo)
    ix = unnormalize(gx, W, align)
    iy = unnormalize(gy, H, align)
    if mode == "bicubic":
        x0 = torch.floor(ix.detach())
        y0 = torch.floor(iy.detach())
        wx = cubic_coeffs(ix - x0)
        wy = cubic_coeffs(iy - y0)
        out = 0
        for i in range(4):
            for j in range(4):
                ty = pad_coordinates(y0 - 1 + i, H, padding, align)
                tx = pad_coordinates(x0 - 1 + j, W, padding, align)
                # get_value_bounded: static_cast<int64_t> truncates toward zero
                v = gather(flat, H, W, torch.trunc(ty).long(), torch.trunc(tx).long())
                out = out + (wy[i] * wx[j])[:, None, :] * v
        return out.reshape(n, c, ho, wo)
    ix = pad_coordinates(ix, W, padding, align)
    iy = pad_coordinates(iy, H, padding, align)
    if mode == "nearest":
        v = gather(flat, H, W, torch.round(iy.detach()).long(), torch.round(ix.detach()).long())
        return v.reshape(n, c, ho, wo)
    x0 = torch.floor(ix.detach())
    y0 = torch.floor(iy.detach())
    tx, ty = ix - x0, iy - y0
    x0l, y0l = x0.long(), y0.long()
    out = ((1 - ty) * (1 - tx))[:, None, :] * gather(flat, H, W, y0l, x0l) + \
        ((1 - ty) * tx)[:, None, :] * gather(flat, H, W, y0l, x0l + 1) + \
        (ty * (1 - tx))[:, None, :] * gather(flat, H, W, y0l + 1, x0l) + \
        (ty * tx)[:, None, :] * gather(flat, H, W, y0l + 1, x0l + 1)
    return out.reshape(n, c, ho, wo)


def source_coordinate(u, size, mode, padding, align):
    """Float source coordinate of an unnormalized coordinate u (a float)."""
    if mode == "bicubic":
        return u
    return pad_coordinates(torch.tensor([u], dtype=torch.float64), size, padding, align).item()


def is_kink(u, size, mode, padding, align, delta=1e-6):
    """Whether the reference is not twice differentiable at unnormalized u:
    a cell change (the source coordinate is on an integer) or a change of
    the padding transform's slope."""
    s = [source_coordinate(u + k * delta, size, mode, padding, align) for k in (-1, 0, 1)]
    left, right = s[1] - s[0], s[2] - s[1]
    if abs(right - left) > delta / 2:
        return True
    if abs(right) < delta / 2:  # clipped on both sides: a constant coordinate
        return False
    if mode == "nearest":  # nearbyint changes at half-integers
        return math.floor(s[0] + 0.5) != math.floor(s[2] + 0.5)
    return math.floor(s[0]) != math.floor(s[2]) or abs(s[1] - round(s[1])) < delta


def q(t, step=1.0 / 256.0):
    """Round to multiples of step (exact in float32)."""
    return torch.round(t / step) * step


def normalize(u, size, align):
    """Inverse of unnormalize (exact for the dyadic values used here)."""
    if align:
        return 2 * u / (size - 1) - 1
    return (2 * u + 1) / size - 1


def make_grid(H, W, align, gen):
    """[N, HO, WO, 2] grid with the point kinds of the module doc."""
    pts = []  # unnormalized (u, v) = (x pixel, y pixel), or ("g", x, y) normalized
    # image 0: pixel centres (corners included), borders, far outside, random
    pts += [(0, 0), (W - 1, H - 1), (2, 1), (W - 1, 0), (3, H - 1)]
    pts += [("g", -1.0, 0.25), ("g", 1.0, -0.5), ("g", 0.375, -1.0)]
    pts += [("g", 3.75, 0.5), ("g", -2.5, -1.625), ("g", 0.5, 5.125)]
    pts += ["r"] * 4
    # image 1: half-integers, just outside, several reflections, random
    pts += [(1.5, 0.5), (2.5, 1.5), (0.5, 2), (4, 2.5)]
    pts += [(-0.3, 1.25), (W - 0.7, -0.3)]
    pts += [("g", 2.625, -3.375), ("g", -4.25, 1.875)]
    pts += ["r"] * 7
    assert len(pts) == N * HO * WO
    xy = []
    for p in pts:
        if p == "r":
            r = torch.rand(2, generator=gen, dtype=torch.float64) * 2.3 - 1.15
            xy.append([r[0].item(), r[1].item()])
        elif p[0] == "g":
            xy.append([p[1], p[2]])
        else:
            xy.append([normalize(p[0], W, align), normalize(p[1], H, align)])
    g = torch.tensor(xy, dtype=torch.float64)
    g = torch.round(g * 1024) / 1024  # dyadic: exact in float32, exact unnormalizing
    return g.reshape(N, HO, WO, 2)


def grads(outputs, inputs, create_graph=False):
    """autograd.grad with zeros for unused inputs (and for an output that
    depends on none of them, as nearest's grid gradient)."""
    if not outputs.requires_grad:
        return [torch.zeros_like(i) for i in inputs]
    gs = torch.autograd.grad(outputs, inputs, create_graph=create_graph, allow_unused=True)
    return [torch.zeros_like(i) if g is None else g for g, i in zip(gs, inputs)]


def assert_close(what, a, b):
    d = (a - b).abs().max().item() if a.numel() else 0.0
    assert d <= TOL * max(1.0, b.abs().max().item() if b.numel() else 0.0), (what, d)
    return d


def grid_sample_case(name, mode, padding, align, H, W, gen, stats, grid=None):
    x = q(torch.randn(N, C, H, W, generator=gen, dtype=torch.float64))
    if grid is None:
        grid = make_grid(H, W, align, gen)
    n, ho, wo, _ = grid.shape
    G = q(torch.randn(n, C, ho, wo, generator=gen, dtype=torch.float64))
    U = q(torch.randn(n, C, H, W, generator=gen, dtype=torch.float64))
    V = q(torch.randn(n, ho, wo, 2, generator=gen, dtype=torch.float64))
    kinks = []
    for p in range(n * ho * wo):
        gx, gy = grid.reshape(-1, 2)[p].tolist()
        if is_kink(unnormalize(gx, W, align), W, mode, padding, align) or \
                is_kink(unnormalize(gy, H, align), H, mode, padding, align):
            kinks.append(p)
    Vf = V.reshape(-1, 2)
    Vf[kinks] = 0
    V = Vf.reshape(V.shape)

    # torch
    xt, gt = x.clone().requires_grad_(), grid.clone().requires_grad_()
    out_t = F.grid_sample(xt, gt, mode=mode, padding_mode=padding, align_corners=align)
    gxt, ggt = grads((out_t * G).sum(), (xt, gt))

    # reference
    xr, gr = x.clone().requires_grad_(), grid.clone().requires_grad_()
    out = ref_grid_sample(xr, gr, mode, padding, align)
    gxr, ggr = grads((out * G).sum(), (xr, gr), create_graph=True)
    stats["forward"] = max(stats["forward"], assert_close(name + " forward", out, out_t))
    stats["grad_input"] = max(stats["grad_input"], assert_close(name + " grad_input", gxr, gxt))
    stats["grad_grid"] = max(stats["grad_grid"], assert_close(name + " grad_grid", ggr, ggt))
    hv_x, hv_g = grads((ggr * V).sum(), (xr, gr), create_graph=True)
    hu_x, hu_g = grads((gxr * U).sum(), (xr, gr))
    assert hu_x.abs().max().item() == 0
    # independent checks of the second order with torch's own first order:
    # hvp_u_grid is torch's grid gradient with input U; hvp_v_* are central
    # differences of torch's gradients along V (V is zero at the kinks)
    ut, gt2 = U.clone().requires_grad_(), grid.clone().requires_grad_()
    (g_u,) = grads((F.grid_sample(ut, gt2, mode=mode, padding_mode=padding, align_corners=align) * G).sum(), (gt2,))
    stats["hvp_u_grid"] = max(stats["hvp_u_grid"], assert_close(name + " hvp_u_grid", hu_g, g_u))
    eps = 1e-6
    fd = []
    for sgn in (1, -1):
        xs, gs = x.clone().requires_grad_(), (grid + sgn * eps * V).requires_grad_()
        fd.append(grads((F.grid_sample(xs, gs, mode=mode, padding_mode=padding, align_corners=align) * G).sum(), (xs, gs)))
    for what, got, k in (("hvp_v_input", hv_x, 0), ("hvp_v_grid", hv_g, 1)):
        want = (fd[0][k] - fd[1][k]) / (2 * eps)
        d = (got - want).abs().max().item()
        assert d < 1e-6 * max(1.0, want.abs().max().item()), (name, what, "central difference", d)
        stats["fd_" + what] = max(stats.get("fd_" + what, 0.0), d)
    sym = abs((hv_x * U).sum().item() - (hu_g * V).sum().item())
    assert sym < 1e-9, (name, "symmetry", sym)
    return {
        "name": name, "mode": mode, "padding_mode": padding, "align_corners": align,
        "input_shape": list(x.shape), "input": flat(x),
        "grid_shape": list(grid.shape), "grid": flat(grid),
        "grad_output": flat(G), "output_shape": list(out.shape), "output": flat(out_t),
        "grad_input": flat(gxt), "grad_grid": flat(ggt),
        "u_input": flat(U), "v_grid": flat(V),
        "hvp_v_input": flat(hv_x), "hvp_v_grid": flat(hv_g),
        "hvp_u_input": flat(hu_x), "hvp_u_grid": flat(hu_g),
        "kink_points": kinks,
    }


def sizes(align):
    # dyadic unnormalization: W (align false) or W-1 (align true) a power of 2
    return (5, 9) if align else (4, 8)


def identity_grid(H, W, align):
    theta = torch.tensor([[1.0, 0, 0], [0, 1.0, 0]], dtype=torch.float64).expand(N, 2, 3)
    return F.affine_grid(theta, [N, C, H, W], align_corners=align)


def affine_case(name, size, align, gen):
    n = size[0]
    theta = q(torch.eye(2, 3, dtype=torch.float64) + 0.4 * torch.randn(n, 2, 3, generator=gen, dtype=torch.float64))
    grid = F.affine_grid(theta.clone().requires_grad_(), size, align_corners=align)
    G = q(torch.randn(grid.shape, generator=gen, dtype=torch.float64))
    tt = theta.clone().requires_grad_()
    out = F.affine_grid(tt, size, align_corners=align)
    (gth,) = grads((out * G).sum(), (tt,))
    return {"name": name, "align_corners": align, "size": list(size), "theta": flat(theta),
            "grad_output": flat(G), "output_shape": list(out.shape), "output": flat(out),
            "grad_theta": flat(gth)}


def min_kink_distance(grid, H, W, mode, padding, align):
    """Smallest distance of a sample's unnormalized coordinates to a kink
    (probed at 1e-4)."""
    for gx, gy in grid.reshape(-1, 2).tolist():
        if is_kink(unnormalize(gx, W, align), W, mode, padding, align, 1e-4) or \
                is_kink(unnormalize(gy, H, align), H, mode, padding, align, 1e-4):
            return False
    return True


def composed_case(name, mode, padding, align, in_shape, out_size, gen, stats):
    n = in_shape[0]
    H, W = in_shape[2], in_shape[3]
    for _ in range(100):
        rot = (torch.rand(n, generator=gen, dtype=torch.float64) - 0.5) * 0.8
        sc = 0.8 + 0.5 * torch.rand(n, 2, generator=gen, dtype=torch.float64)
        tr = (torch.rand(n, 2, generator=gen, dtype=torch.float64) - 0.5) * 0.6
        theta = torch.stack([
            torch.stack([sc[:, 0] * torch.cos(rot), -sc[:, 1] * torch.sin(rot), tr[:, 0]], 1),
            torch.stack([sc[:, 0] * torch.sin(rot), sc[:, 1] * torch.cos(rot), tr[:, 1]], 1)], 1)
        theta = theta.float().double()  # exact in float32
        grid = F.affine_grid(theta, out_size, align_corners=align)
        if min_kink_distance(grid, H, W, mode, padding, align):
            break
    else:
        raise RuntimeError(name + ": no kink-free theta")
    x = q(torch.randn(in_shape, generator=gen, dtype=torch.float64))
    G = q(torch.randn(out_size, generator=gen, dtype=torch.float64))
    Vt = q(torch.randn(n, 2, 3, generator=gen, dtype=torch.float64))

    tt, xt = theta.clone().requires_grad_(), x.clone().requires_grad_()
    out_t = F.grid_sample(xt, F.affine_grid(tt, out_size, align_corners=align), mode=mode,
                          padding_mode=padding, align_corners=align)
    gtt, gxt = grads((out_t * G).sum(), (tt, xt))

    tr_, xr = theta.clone().requires_grad_(), x.clone().requires_grad_()
    out = ref_grid_sample(xr, F.affine_grid(tr_, out_size, align_corners=align), mode, padding, align)
    gtr, gxr = grads((out * G).sum(), (tr_, xr), create_graph=True)
    stats["forward"] = max(stats["forward"], assert_close(name + " forward", out, out_t))
    stats["grad_input"] = max(stats["grad_input"], assert_close(name + " grad_input", gxr, gxt))
    stats["grad_theta"] = max(stats["grad_theta"], assert_close(name + " grad_theta", gtr, gtt))
    h_t, h_x = grads((gtr * Vt).sum(), (tr_, xr))
    eps = 1e-6  # central differences of torch's first order along V_theta
    fd = []
    for sgn in (1, -1):
        ts, xs = (theta + sgn * eps * Vt).requires_grad_(), x.clone().requires_grad_()
        o = F.grid_sample(xs, F.affine_grid(ts, out_size, align_corners=align), mode=mode,
                          padding_mode=padding, align_corners=align)
        fd.append(grads((o * G).sum(), (ts, xs)))
    for what, got, k in (("hvp_theta", h_t, 0), ("hvp_theta_input", h_x, 1)):
        want = (fd[0][k] - fd[1][k]) / (2 * eps)
        d = (got - want).abs().max().item()
        assert d < 1e-6 * max(1.0, want.abs().max().item()), (name, what, "central difference", d)
        stats["fd_" + what] = max(stats.get("fd_" + what, 0.0), d)
    return {"name": name, "mode": mode, "padding_mode": padding, "align_corners": align,
            "theta": flat(theta), "size": list(out_size),
            "input_shape": list(in_shape), "input": flat(x),
            "grad_output": flat(G), "output_shape": list(out.shape), "output": flat(out_t),
            "grad_theta": flat(gtt), "grad_input": flat(gxt), "v_theta": flat(Vt),
            "hvp_theta": flat(h_t), "hvp_theta_input": flat(h_x)}


def main():
    torch.set_num_threads(1)
    stats = {"forward": 0.0, "grad_input": 0.0, "grad_grid": 0.0, "grad_theta": 0.0, "hvp_u_grid": 0.0}
    cases, bicubic = [], []
    seed = 9100
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (False, True):
                H, W = sizes(align)
                gen = torch.Generator().manual_seed(seed)
                seed += 1
                name = "%s/%s/align_corners=%s/%dx%d->%dx%d" % (mode, padding, align, H, W, HO, WO)
                c = grid_sample_case(name, mode, padding, align, H, W, gen, stats)
                (bicubic if mode == "bicubic" else cases).append(c)
    for align in (False, True):  # the identity grid: every point a pixel centre
        H, W = sizes(align)
        gen = torch.Generator().manual_seed(seed)
        seed += 1
        cases.append(grid_sample_case("bilinear/zeros/align_corners=%s/identity/%dx%d" % (align, H, W),
                                      "bilinear", "zeros", align, H, W, gen, stats, identity_grid(H, W, align)))
    affine = []
    # (a unit-size grid with align_corners is not an intended use of affine_grid: torch warns)
    for size, align in (((2, 3, 5, 7), False), ((2, 3, 5, 7), True), ((1, 1, 4, 6), False),
                        ((1, 1, 4, 6), True), ((3, 2, 1, 5), False), ((3, 2, 2, 5), True)):
        gen = torch.Generator().manual_seed(seed)
        seed += 1
        affine.append(affine_case("size=%s/align_corners=%s" % ("x".join(map(str, size)), align),
                                  size, align, gen))
    composed = []
    for mode, padding, align, in_shape, out_size in (
            ("bilinear", "zeros", False, (2, 2, 6, 7), (2, 2, 4, 5)),
            ("bilinear", "zeros", True, (2, 2, 6, 7), (2, 2, 5, 3)),
            ("bilinear", "border", False, (1, 3, 5, 8), (1, 3, 6, 4)),
            ("bilinear", "reflection", True, (2, 1, 7, 5), (2, 1, 4, 6)),
            ("bilinear", "reflection", False, (1, 2, 6, 6), (1, 2, 5, 7)),
            ("bicubic", "zeros", False, (1, 2, 6, 7), (1, 2, 4, 5)),
            ("bicubic", "border", True, (2, 1, 5, 6), (2, 1, 3, 4))):
        gen = torch.Generator().manual_seed(seed)
        seed += 1
        name = "%s/%s/align_corners=%s/%s->%s" % (mode, padding, align, "x".join(map(str, in_shape)),
                                                  "x".join(map(str, out_size[2:])))
        composed.append(composed_case(name, mode, padding, align, in_shape, out_size, gen, stats))
    doc = {"torch": torch.__version__, "op": "grid_sample", "cases": cases, "bicubic_cases": bicubic,
           "affine_cases": affine, "composed_cases": composed}
    write_compact(OUT_PATH, doc)
    print("max abs diff, reference vs torch (fd_*: vs central differences of torch's first order): " +
          ", ".join("%s %.3g" % kv for kv in stats.items()))
    print("kink points per case: " + " ".join(str(len(c["kink_points"])) for c in cases + bicubic))
    print("wrote %s: %d grid_sample + %d bicubic + %d affine_grid + %d composed cases, %d bytes gz, torch %s" % (
        os.path.relpath(OUT_PATH), len(cases), len(bicubic), len(affine), len(composed),
        os.path.getsize(OUT_PATH), torch.__version__))


if __name__ == "__main__":
    main()
