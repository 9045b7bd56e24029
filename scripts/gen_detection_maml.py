#!/usr/bin/env python3
"""Golden MAML steps through torchvision's detectors for package meta's use
in detection (detection/maml_golden_test.go).

The tiny FCOS and RetinaNet v1 / v2 of scripts/gen_detection_losses.py
(float64, train mode, trainable as the Go models with TrainableLayers 3),
a support batch and a query batch of two formula images each with
ground truth of that script's cases. One inner SGD step of step size
ALPHA[model] on the support loss (the sum of the loss dict),

    g  = torch.autograd.grad(L_s(θ), θ, create_graph=True)
    θ' = θ − ALPHA·g,

the query loss L_q(θ') by torch.nn.utils.stateless.functional_call, and
its meta-gradients w.r.t. every trainable parameter θ:

    second order: torch.autograd.grad(L_q(θ'), θ)   (double backward
                  through g: ∇L_q(θ') − ALPHA·∇²L_s(θ)·∇L_q(θ'))
    first order:  ∇L_q at θ' with g a constant (g.detach()).

It writes the losses and, per parameter, the summaries of
gen_detection_losses.grad_summary of both meta-gradients.

Writes testdata/detection/maml_golden.json.gz. Run from the repository
root: /usr/bin/python3 scripts/gen_detection_maml.py
"""

import os
import sys

import torch
from torch.nn.utils.stateless import functional_call

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_detection_losses as gl  # noqa: E402  (the tiny models, images, targets)
import golden_common as gc  # noqa: E402  (put on the path by gen_detection_losses)

# The inner step size per model: a step that changes the query loss
# without blowing up the random models' losses.
ALPHA = {"fcos": 0.05, "retinanet_v1": 0.001, "retinanet_v2": 0.01}

# The cases of gen_detection_losses.CASES for the support and the query
# batch, and the seeds of their images.
SUPPORT, QUERY = "many", "duplicates"
SUPPORT_SEED, QUERY_SEED = 0.5, 1.75


def batch(case, seed):
    name, gmax, boxes = next(c for c in gl.CASES if c[0] == case)
    images = [gl.image(b, seed) for b in range(len(boxes))]
    golden = {"case": name, "gmax": gmax, "seed": seed, "height": gl.H, "width": gl.W,
              "boxes": [[list(b[:4]) for b in per] for per in boxes],
              "labels": [[b[4] for b in per] for per in boxes]}
    return images, gl.targets_of(boxes), golden


def total(losses):
    return sum(losses.values())


def maml_case(name):
    model = gl.load_model(name)
    alpha = ALPHA[name]
    params = {k: p for k, p in model.named_parameters() if p.requires_grad}
    sup_images, sup_targets, sup = batch(SUPPORT, SUPPORT_SEED)
    qry_images, qry_targets, qry = batch(QUERY, QUERY_SEED)

    ls = total(model(sup_images, sup_targets))
    inner = torch.autograd.grad(ls, list(params.values()), create_graph=True, allow_unused=True)
    inner = [g if g is not None else torch.zeros_like(p) for g, p in zip(inner, params.values())]
    adapted = {k: p - alpha * g for (k, p), g in zip(params.items(), inner)}
    lq = total(functional_call(model, adapted, (qry_images, qry_targets)))
    second = torch.autograd.grad(lq, list(params.values()), allow_unused=True)

    fixed = {k: v.detach().requires_grad_(True) for k, v in adapted.items()}
    lq_fo = total(functional_call(model, fixed, (qry_images, qry_targets)))
    first = torch.autograd.grad(lq_fo, list(fixed.values()), allow_unused=True)

    def summaries(gs):
        return {k: gl.grad_summary(g if g is not None else torch.zeros_like(p))
                for (k, p), g in zip(params.items(), gs)}

    print(name, "L_s %.6g L_q %.6g (first order %.6g)" % (ls.item(), lq.item(), lq_fo.item()))
    return {"model": name, "alpha": alpha, "support": sup, "query": qry,
            "support_loss": ls.item(), "query_loss": lq.item(),
            "meta_grads": summaries(second), "first_order_grads": summaries(first)}


def main():
    torch.set_num_threads(1)
    cases = [maml_case(name) for name in ("fcos", "retinanet_v1", "retinanet_v2")]
    gc.write_torchvision(os.path.join(gl.OUT, "maml_golden.json.gz"), cases, op="detection MAML")


if __name__ == "__main__":
    main()
