#!/usr/bin/env python3
"""Generate golden values for torchvision.ops.deform_conv2d (forward and all gradients).

Run from the repository root:

    /usr/bin/python3 testdata/gen_golden_deform.py

Writes testdata/deformconv_golden.json.gz. Deterministic: fixed seeds, one
thread, gzip mtime 0. Only torch, torchvision and golden_common.py are used.

JSON layout:

    {"torchvision": str, "torch": str, "cases": [case, ...]}

    case = {
      "name": str,
      "dtype": "float32" | "float64",
      "stride": [sh, sw], "padding": [ph, pw], "dilation": [dh, dw],
      "groups": int,          # == input_shape[1] // weight_shape[1] (informational)
      "offset_groups": int,   # == offset_shape[1] // (2*kh*kw)      (informational)
      "input_shape":  [N, Cin, H, W],                 "input":  [...],  # flat, row-major
      "weight_shape": [Cout, Cin/groups, kh, kw],     "weight": [...],
      "offset_shape": [N, 2*og*kh*kw, Hout, Wout],    "offset": [...],
      "mask_shape":   [N, og*kh*kw, Hout, Wout] | null, "mask": [...] | null,
      "bias":         [...] (length Cout) | null,
      "grad_output":  [...],                          # shape == output_shape
      "output_shape": [N, Cout, Hout, Wout],          "output": [...],
      "grad_input":   [...],                          # shape == input_shape
      "grad_offset":  [...],                          # shape == offset_shape
      "grad_weight":  [...],                          # shape == weight_shape
      "grad_bias":    [...] | null,                   # null when bias is null
      "grad_mask":    [...] | null,                   # null when mask is null
    }

Offset channel layout (torchvision): channel ((g*kh + i)*kw + j)*2 + 0 is the
y (row) offset and ... + 1 the x (column) offset of kernel tap (i, j) in offset
group g; mask channel (g*kh + i)*kw + j. Each offset group covers
Cin/offset_groups consecutive input channels.

out = deform_conv2d(input, offset, weight, bias, stride, padding, dilation, mask);
(out * grad_output).sum().backward(). The inputs (input, weight, offset, mask,
bias, grad_output) are rounded to multiples of 1/256, exact in float32. All
numbers are the exact tensor values converted to Python floats via
.double().tolist(); float32 cases are computed in float32.

Offsets are uniform in (-2.5, 2.5) (many samples fall outside the image), or
exact integers / halves in [-2.5, 2.5] ("offsets=int_half": integer sample
positions, where torchvision takes a one-sided derivative, and positions exactly
at -1 and H / W), or zero ("offsets=zero": an ordinary convolution). Masks are
uniform in (0, 1.5).
"""

import sys

import torch
from torchvision.ops import deform_conv2d

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
from golden_common import DTYPES, flat, out_path, write_torchvision  # noqa: E402

OUT_PATH = out_path("deformconv_golden.json.gz")

STEP = 1.0 / 256.0


def quantize(t, step=STEP):
    """Round to multiples of `step` (exact in float32) so the file compresses well."""
    return torch.round(t / step) * step


# Each spec: dict of parameters that override BASE.
BASE = dict(N=2, Cin=4, Cout=4, H=6, W=7, k=(3, 3), stride=(1, 1), padding=(0, 0),
            dilation=(1, 1), groups=1, og=1, mask=False, bias=True, offsets="rand")

SPECS = [
    # plain variations of one parameter at a time
    dict(),
    dict(mask=True),
    dict(padding=(1, 2), mask=True),
    dict(stride=(2, 1), bias=False),
    dict(dilation=(2, 1), padding=(1, 2)),
    # non-square kernels, mixed with the rest
    dict(k=(3, 2), mask=True, bias=False),
    dict(k=(2, 3), stride=(2, 1), padding=(1, 2)),
    dict(k=(3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1), mask=True),
    dict(k=(2, 3), dilation=(2, 1), mask=True, bias=False),
    # swapped axes (catch h/w mix-ups)
    dict(k=(2, 3), stride=(1, 2), padding=(2, 1), dilation=(1, 2), mask=True),
    # groups / offset groups
    dict(groups=2, mask=True),
    dict(groups=2, og=1, k=(3, 2), padding=(1, 2), dilation=(2, 1), bias=False),
    dict(og=2, mask=True, padding=(1, 2), H=5, W=4),
    dict(og=2, groups=2, k=(2, 3), stride=(2, 1), bias=False),
    dict(og=2, groups=2, k=(3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1), mask=True),
    dict(og=4, groups=1, k=(2, 2), padding=(1, 1), mask=True, H=5, W=4),
    dict(og=2, groups=2, Cout=6, k=(3, 3), padding=(1, 2), mask=True, H=5, W=4),
    # 1x1 kernel
    dict(k=(1, 1), stride=(2, 1), og=2, mask=True),
    # zero offsets: ordinary convolution
    dict(offsets="zero", padding=(1, 2)),
    dict(offsets="zero", k=(3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1),
         groups=2, og=2, mask=True),
    # integer / half offsets: integer sample positions (one-sided derivative)
    dict(offsets="int_half", padding=(1, 2), mask=True),
    dict(offsets="int_half", k=(3, 2), stride=(2, 1), dilation=(2, 1), groups=2, og=2,
         bias=False),
    # batch 1
    dict(N=1, groups=2, og=2, padding=(1, 2), mask=True, H=5, W=4),
    dict(N=1, k=(2, 3), stride=(2, 1), bias=False),
]

# batch 33 (torchvision processes the batch in blocks of at most 32 images), float32 only
BATCH33 = dict(N=33, Cin=2, Cout=2, H=4, W=4, k=(2, 2), mask=True, bias=True)


def case_name(dtype_name, p):
    parts = [dtype_name,
             "N=%d" % p["N"],
             "in=%dx%dx%d" % (p["Cin"], p["H"], p["W"]),
             "out=%d" % p["Cout"],
             "k=%dx%d" % p["k"],
             "stride=%d,%d" % p["stride"],
             "pad=%d,%d" % p["padding"],
             "dil=%d,%d" % p["dilation"],
             "groups=%d" % p["groups"],
             "offset_groups=%d" % p["og"],
             "mask=%s" % ("on" if p["mask"] else "off"),
             "bias=%s" % ("on" if p["bias"] else "off"),
             "offsets=%s" % p["offsets"]]
    return "/".join(parts)


def run_case(dtype_name, dtype, p, gen):
    N, Cin, Cout, H, W = p["N"], p["Cin"], p["Cout"], p["H"], p["W"]
    kh, kw = p["k"]
    sh, sw = p["stride"]
    ph, pw = p["padding"]
    dh, dw = p["dilation"]
    groups, og = p["groups"], p["og"]
    assert Cin % groups == 0 and Cout % groups == 0 and Cin % og == 0
    Ho = (H + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    Wo = (W + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    assert Ho > 0 and Wo > 0

    f64 = torch.float64
    x = quantize(torch.randn((N, Cin, H, W), generator=gen, dtype=f64))
    w = quantize(0.5 * torch.randn((Cout, Cin // groups, kh, kw), generator=gen, dtype=f64))
    off_shape = (N, 2 * og * kh * kw, Ho, Wo)
    if p["offsets"] == "rand":
        off = quantize((torch.rand(off_shape, generator=gen, dtype=f64) * 2 - 1) * 2.5)
    elif p["offsets"] == "int_half":
        # multiples of 0.5 in [-2.5, 2.5]; about half are integers
        off = torch.randint(-5, 6, off_shape, generator=gen).to(f64) * 0.5
    elif p["offsets"] == "zero":
        off = torch.zeros(off_shape, dtype=f64)
    else:
        raise ValueError(p["offsets"])
    m = None
    if p["mask"]:
        m = quantize(torch.rand((N, og * kh * kw, Ho, Wo), generator=gen, dtype=f64) * 1.5)
        m = m.clamp(STEP, 1.5 - STEP)  # strictly inside (0, 1.5)
    b = quantize(torch.randn((Cout,), generator=gen, dtype=f64)) if p["bias"] else None
    out_shape = (N, Cout, Ho, Wo)
    g = quantize(torch.randn(out_shape, generator=gen, dtype=f64))

    x, w, off, g = (t.to(dtype) for t in (x, w, off, g))
    m = m.to(dtype) if m is not None else None
    b = b.to(dtype) if b is not None else None
    leaves = [t for t in (x, w, off, m, b) if t is not None]
    for t in leaves:
        t.requires_grad_(True)

    out = deform_conv2d(x, off, w, b, stride=(sh, sw), padding=(ph, pw),
                        dilation=(dh, dw), mask=m)
    assert tuple(out.shape) == out_shape, (out.shape, out_shape)
    assert out.dtype == dtype
    (out * g).sum().backward()

    def grad(t):
        return flat(t.grad if t.grad is not None else torch.zeros_like(t))

    return {
        "name": case_name(dtype_name, p),
        "dtype": dtype_name,
        "stride": [sh, sw],
        "padding": [ph, pw],
        "dilation": [dh, dw],
        "groups": groups,
        "offset_groups": og,
        "input_shape": list(x.shape),
        "input": flat(x),
        "weight_shape": list(w.shape),
        "weight": flat(w),
        "offset_shape": list(off.shape),
        "offset": flat(off),
        "mask_shape": list(m.shape) if m is not None else None,
        "mask": flat(m) if m is not None else None,
        "bias": flat(b) if b is not None else None,
        "grad_output": flat(g),
        "output_shape": list(out_shape),
        "output": flat(out),
        "grad_input": grad(x),
        "grad_offset": grad(off),
        "grad_weight": grad(w),
        "grad_bias": grad(b) if b is not None else None,
        "grad_mask": grad(m) if m is not None else None,
    }


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cases = []
    for di, (dtype_name, dtype) in enumerate(DTYPES):
        specs = list(SPECS)
        if dtype_name == "float32":
            specs.append(BATCH33)
        for si, spec in enumerate(specs):
            p = dict(BASE)
            p.update(spec)
            # same seed for both dtypes: the float64 case has the same inputs
            gen = torch.Generator().manual_seed(2000 + si)
            cases.append(run_case(dtype_name, dtype, p, gen))

    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names), "duplicate case names"

    write_torchvision(OUT_PATH, cases)


if __name__ == "__main__":
    main()
