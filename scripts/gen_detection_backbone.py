#!/usr/bin/env python3
"""Generate the golden values of package detection's backbones (ResNet,
FeaturePyramidNetwork, BackboneWithFPN) from torchvision 0.14's own
classes (scripts/detection_models.py).

Run from the repository root:

    /usr/bin/python3 scripts/gen_detection_backbone.py

Writes testdata/detection/backbone_golden.json.gz (tiny backbones) and
testdata/detection/resnet18_fpn_golden.json.gz. Deterministic (fixed
seeds; gzip without a time stamp).

backbone_golden.json.gz:

    {"torchvision", "torch",
     "inputs": [{"shape", "data"}, ...],   images [2, 3, H, W], 4 decimals
     "cases": [case, ...],                 tiny backbones, weights stored
     "trainable": [trainable, ...]}        requires_grad by trainable_layers

    case = {"name", "config": config, "keys": [state_dict keys],
            "requires_grad": [trainable keys],
            "state_dict": {key: {"shape", "data"}}  (float64 values, 4 decimals),
            "runs": [run, ...]}
    config = {"block", "layers", "planes", "stem_width", "groups",
              "width_per_group", "norm": "frozen" | "bn", "eps",
              "trainable_layers", "returned_layers", "out_channels",
              "extra": "maxpool" | "p6p7", "extra_in", "train"}
    run = {"dtype", "input": index into inputs, "outputs": [{"name",
           "shape", "data"}], "running_after": {key: data} (BatchNorm2d
           training: the running statistics after the one forward)}
    trainable = {"config", "requires_grad": [keys]}

resnet18_fpn_golden.json.gz: {"torchvision", "torch", "config",
"input_shape", "keys", "outputs": [{"name", "shape", "data"}] (float64)}:
a ResNet-18-FPN (RetinaNet v1's: FrozenBatchNorm2d eps 0, layers 2-4,
P6P7 from P5) whose weights and input come from
detection_models.formula_value and r18_input (below); the Go test
compares its float32 run with the float64 outputs too (1e-4 of the
largest value).
"""

import copy
import math
import os
import sys

import torch
import torchvision

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
import detection_models as dm  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "testdata", "detection", "backbone_golden.json.gz")
OUT_R18 = os.path.join(ROOT, "testdata", "detection", "resnet18_fpn_golden.json.gz")
sys.path.insert(0, os.path.join(ROOT, "testdata"))
import golden_common as gc  # noqa: E402

SIZES = [(2, 3, 29, 43), (2, 3, 20, 16), (2, 3, 5, 7)]


def config(block, layers, planes, stem, norm, eps, trainable, returned, out, extra, extra_in=0, groups=1, wpg=64,
           train=False):
    return {"block": block, "layers": layers, "planes": planes, "stem_width": stem, "groups": groups,
            "width_per_group": wpg, "norm": norm, "eps": eps, "trainable_layers": trainable,
            "returned_layers": returned, "out_channels": out, "extra": extra, "extra_in": extra_in, "train": train}


CASES = [
    ("basic3/frozen-eps0/maxpool", config("BasicBlock", [1, 1, 1], [4, 8, 16], 8, "frozen", 0.0, 3, [1, 2, 3], 16,
                                          "maxpool")),
    ("basic4/frozen/p6p7-from-p5", config("BasicBlock", [1, 2, 1, 1], [4, 4, 8, 8], 4, "frozen", 1e-5, 3, [2, 3, 4],
                                          16, "p6p7", 16)),
    ("bottleneck3/groups2/frozen/p6p7-from-c5", config("Bottleneck", [1, 1, 2], [4, 8, 8], 8, "frozen", 1e-5, 5,
                                                       [2, 3], 16, "p6p7", 32, groups=2, wpg=32)),
    ("basic3/bn-eval/maxpool", config("BasicBlock", [1, 1, 1], [4, 8, 16], 8, "bn", 1e-5, 5, [1, 2, 3], 16,
                                      "maxpool")),
    ("bottleneck3/bn-train/p6p7-from-p5", config("Bottleneck", [1, 2, 1], [4, 4, 8], 8, "bn", 1e-5, 2, [1, 2, 3], 16,
                                                 "p6p7", 16, train=True)),
]

R18 = config("BasicBlock", [2, 2, 2, 2], [64, 128, 256, 512], 64, "frozen", 0.0, 3, [2, 3, 4], 256, "p6p7", 256)
R18_SHAPE = (1, 3, 64, 96)


def build(cfg):
    """The BackboneWithFPN of cfg (float64)."""
    norm = dm.frozen_bn(cfg["eps"]) if cfg["norm"] == "frozen" else None
    if cfg["planes"] == [64, 128, 256, 512] and cfg["stem_width"] == 64:
        body = torchvision.models.resnet.ResNet(dm.BLOCKS[cfg["block"]], cfg["layers"], norm_layer=norm)
    else:
        body = dm.TinyResNet(cfg["block"], cfg["layers"], cfg["planes"], cfg["stem_width"], cfg["groups"],
                             cfg["width_per_group"], norm_layer=norm)
    extra = ("maxpool",) if cfg["extra"] == "maxpool" else ("p6p7", cfg["extra_in"])
    m = dm.resnet_fpn(body, cfg["trainable_layers"], cfg["returned_layers"], extra, cfg["out_channels"])
    return m.double()


def outputs(m, x):
    """m's maps on x, float32 ones at 9 significant digits (exact)."""
    with torch.no_grad():
        out = m(x)
    short = (lambda d: [float("%.9g" % v) for v in d]) if x.dtype == torch.float32 else (lambda d: d)
    return [{"name": k, "shape": list(v.shape), "data": short(gc.flat(v))} for k, v in out.items()]


def rounded(t, digits):
    """t's elements rounded to digits decimals, each the float64 nearest
    to its decimal (a short JSON number that parses back to it)."""
    return torch.tensor([round(v, digits) for v in t.reshape(-1).tolist()], dtype=t.dtype).reshape(t.shape)


def round_state(m):
    """Every state_dict tensor of m rounded to 4 decimals (running_var
    stays positive: it is at least 0.5)."""
    with torch.no_grad():
        for v in m.state_dict().values():
            if v.is_floating_point():
                v.copy_(rounded(v, 4))


def r18_input():
    """Element i of the ResNet-18 case's input: 0.5·sin(0.013·i + 0.3) +
    0.2·cos(0.7·i) (the Go test computes the same)."""
    n = math.prod(R18_SHAPE)
    return torch.tensor([0.5 * math.sin(0.013 * i + 0.3) + 0.2 * math.cos(0.7 * i) for i in range(n)],
                        dtype=torch.float64).reshape(R18_SHAPE)


def write(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    n = gc.write_compact(path, doc)
    print(f"wrote {os.path.relpath(path, ROOT)}: {os.path.getsize(path)} bytes gz ({n} json)")


def main():
    torch.manual_seed(28)
    gen = torch.Generator().manual_seed(2814)
    inputs = [rounded(torch.randn(shape, generator=gen, dtype=torch.float64), 4) for shape in SIZES]
    cases = []
    for name, cfg in CASES:
        m = build(cfg)
        dm.randomize_norms(m, gen)
        round_state(m)
        state = copy.deepcopy(m.state_dict())
        case = {"name": name, "config": cfg, "keys": list(dm.state_dict_lists(m).keys()),
                "requires_grad": dm.requires_grad_keys(m), "state_dict": dm.state_dict_lists(m), "runs": []}
        for dname, dt in gc.DTYPES:
            for i, x in enumerate(inputs):
                m = m.double()
                m.load_state_dict(state)
                mm = m.to(dt).train(cfg["train"])
                run = {"dtype": dname, "input": i, "outputs": outputs(mm, x.to(dt))}
                if cfg["train"]:
                    run["running_after"] = {k: gc.flat(v) for k, v in mm.state_dict().items()
                                            if k.endswith("running_mean") or k.endswith("running_var")}
                case["runs"].append(run)
        cases.append(case)

    trainable = []
    for norm in ["frozen", "bn"]:
        for t in range(6):
            cfg = config("BasicBlock", [1, 1, 1, 1], [8, 16, 32, 64], 8, norm, 1e-5, t, [2, 3, 4], 16, "p6p7", 16)
            trainable.append({"config": cfg, "requires_grad": dm.requires_grad_keys(build(cfg))})
    write(OUT, {"torchvision": torchvision.__version__, "torch": torch.__version__,
                "inputs": [{"shape": list(x.shape), "data": gc.flat(x)} for x in inputs], "cases": cases,
                "trainable": trainable})

    m = build(R18)
    dm.formula_fill(m)
    write(OUT_R18, {"torchvision": torchvision.__version__, "torch": torch.__version__, "config": R18,
                    "input_shape": list(R18_SHAPE), "keys": list(dm.state_dict_lists(m).keys()),
                    "outputs": outputs(m, r18_input())})

if __name__ == "__main__":
    main()
