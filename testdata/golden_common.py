"""What the golden generators (testdata/gen_golden*.py) share: the dtypes,
where a file is written, a tensor as a JSON list, a RoI op's case, and
the two ways the files are written.

Not run on its own. A generator, run as a script from the repository root,
has this folder on sys.path and imports it after setting
sys.dont_write_bytecode (no __pycache__ in testdata/):

    sys.dont_write_bytecode = True  # no __pycache__ in testdata/
    import golden_common as gc  # noqa: E402

Only torch, os, json and gzip are used (and torchvision by
write_torchvision).
"""

import gzip
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# Every generator's dtypes, in the order of its cases.
DTYPES = [("float32", torch.float32), ("float64", torch.float64)]


def out_path(name):
    """The path of the file name in testdata/."""
    return os.path.join(HERE, name)


def flat(t):
    """t's elements as a list of Python floats (float64); None for None."""
    return None if t is None else t.detach().double().reshape(-1).tolist()


def write_json(path, doc):
    """Writes doc with json.dump to a gzip file (gzip.open: the header holds
    the time of writing) and says how many cases doc["cases"] holds."""
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    print(f"wrote {len(doc['cases'])} cases to {path}")


def write_compact(path, doc):
    """Writes doc as compact JSON (no spaces) to a gzip file whose bytes
    are the same on every run (mtime 0, no file name, level 9); returns the
    length of the JSON in bytes."""
    data = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    with open(path, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as gz:
            gz.write(data)
    return len(data)


def write_torchvision(path, cases, op=None):
    """Writes {"torchvision", "torch", "op" (when given), "cases"} with
    write_compact and prints the file, its cases, its size gzipped and as
    JSON, and the versions."""
    import torchvision

    doc = {"torchvision": torchvision.__version__, "torch": torch.__version__}
    if op is not None:
        doc["op"] = op
    doc["cases"] = cases
    n = write_compact(path, doc)
    print("wrote %s: %d cases, %d bytes gz (%d bytes json), torch %s, torchvision %s" % (
        os.path.relpath(path), len(cases), os.path.getsize(path), n,
        torch.__version__, torchvision.__version__))


def roi_case(name, dtype_name, output_size, scale, params, x, boxes, g, out, grad_in):
    """A RoI op's case as gen_golden.py's layout has it: name, dtype,
    output_size, spatial_scale, the op's own parameters (the dict params,
    in its order), then input, boxes, grad_output (G of L = <out, G>),
    output and grad_input (dL/dx), each tensor after its shape where the
    layout has one."""
    case = {"name": name, "dtype": dtype_name, "output_size": list(output_size),
            "spatial_scale": float(scale)}
    case.update(params)
    case.update({
        "input_shape": list(x.shape),
        "input": flat(x),
        "boxes_shape": [boxes.shape[0], 5],
        "boxes": flat(boxes),
        "grad_output": flat(g),
        "output_shape": list(out.shape),
        "output": flat(out),
        "grad_input": flat(grad_in),
    })
    return case


def normal(gen, dt):
    """rnd(*shape): standard normal values drawn from gen in float64, then
    cast to dt (the same draws for both dtypes of a seed)."""
    return lambda *s: torch.randn(s, generator=gen, dtype=torch.float64).to(dt)


def affine_params(rnd, shape, affine):
    """A normalisation's weight rnd(*shape) + 1 and bias rnd(*shape), drawn
    in that order and requiring grad; None, None when not affine."""
    if not affine:
        return None, None
    w = (rnd(*shape) + 1).requires_grad_()
    return w, rnd(*shape).requires_grad_()


def norm_grads_hvp(out, x, w, b, xshape, wshape, rnd):
    """For a normalisation out of x with an optional affine weight w and
    bias b (both None or both given): draws G, the gradients of
    sum(G * out^2) w.r.t. x (and w, b), draws v_x (and v_w) and takes the
    Hessian-vector product w.r.t. x (and w) of <grad, v>. Returns
    (G, grads, v_x, v_w, hvp); v_w is None without weight."""
    affine = w is not None
    g = rnd(*out.shape)
    grads = torch.autograd.grad((g * out * out).sum(), [x] + ([w, b] if affine else []), create_graph=True)
    vx = rnd(*xshape)
    vw = rnd(*wshape) if affine else None
    h = (grads[0] * vx).sum() + ((grads[1] * vw).sum() if affine else 0)
    return g, grads, vx, vw, torch.autograd.grad(h, [x] + ([w] if affine else []))
