#!/usr/bin/env python3
"""Golden second-order MAML step through the tiny Faster R-CNN v2, for
detection's MAML golden test of the v2 model: the analogue of
scripts/gen_detection_fasterrcnn_maml.py (v1), whose pieces it reuses.

The model is scripts/gen_detection_fasterrcnn_v2.py's, loaded from
testdata/detection/fasterrcnn_v2.pt by its load_model (float64, train
mode, trainable_layers=3's freezing of conv1, bn1 and layer1's
parameters; every BatchNorm2d, the frozen ones included, normalises with
batch statistics), with torchvision's roi_align replaced inside
MultiScaleRoIAlign by the v1 script's roi_align_torch (differentiable to
every order; checked against torchvision's to 1e-12 first, and checked
here to be the one the v2 box pooler calls).

The v1 script's support and query batches ("many", seed 0.5;
"duplicates", seed 1.75), one inner SGD step of step size ALPHA on the
support loss (the sum of the loss dict), the query loss at the adapted
parameters (functional_call, given the parameters only: the BatchNorm2d
buffers are the module's) and its meta-gradients w.r.t. every trainable
parameter: second order (torch's double backward through the inner
gradient, the BatchNorm2d batch statistics included) and first order
(the inner gradient a constant). The samplers' torch.randperm draws are
recorded per loss evaluation (support, query; the first-order query
replays the query's).

The RPN keeps POST_NMS proposals per image after its NMS, so that with
the ground truth added the box sampler has fewer than its BOX_BATCH
candidates and takes fewer than BOX_BATCH RoIs in every image of both
batches: the Go model pads those rows and masks its box head's
BatchNorm2d statistics to the sampled ones. "box_samples" holds the
sampler's RoI count per image for the support and the query loss.

Every forward in train mode updates the BatchNorm2d running statistics
(the support's, the query's and the first-order query's); in train mode
they do not enter the losses or the gradients, and the file does not
record them.

The JSON layout is the v1 file's (detection/rcnnmaml_test.go's
rcnnMAMLGolden) plus "box_samples"; the model is the one of
fasterrcnn_v2.json.gz's first case (its checkpoint fasterrcnn_v2.pt).

Writes testdata/detection/fasterrcnn_v2_maml.json.gz. Run from the
repository root: /usr/bin/python3 scripts/gen_detection_fasterrcnn_v2_maml.py
"""

import os
import sys

import torch
import torchvision
from torch.nn.utils.stateless import functional_call

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_detection_fasterrcnn_maml as fm  # noqa: E402  (roi_align_torch, recorded, replayed, batch)
import gen_detection_fasterrcnn_v2 as v2  # noqa: E402  (the v2 model, its train-mode loader)
import gen_detection_losses as gl  # noqa: E402  (summaries)
import golden_common as gc  # noqa: E402

ALPHA = fm.ALPHA
SUPPORT, QUERY = fm.SUPPORT, fm.QUERY
SUPPORT_SEED, QUERY_SEED = fm.SUPPORT_SEED, fm.QUERY_SEED
PRE_NMS, POST_NMS, BOX_BATCH = v2.PRE_NMS, 20, v2.BOX_BATCH


class CountingRoIAlign:
    """roi_align_torch counting its calls (that the pooler uses it)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return fm.roi_align_torch(*args, **kwargs)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(11)
    err = fm.check_roi_align()
    print("roi_align_torch vs torchvision: %.3g" % err)
    align = CountingRoIAlign()
    torchvision.ops.poolers.roi_align = align

    sd = torch.load(v2.CHECKPOINT)
    model = v2.load_model(sd).double()
    model.rpn._pre_nms_top_n["training"] = PRE_NMS
    model.rpn._post_nms_top_n["training"] = POST_NMS
    assert model.roi_heads.fg_bg_sampler.sampler.sampler.batch_size_per_image == BOX_BATCH
    assert model.training and all(m.training for m in model.modules())
    counter = model.roi_heads.fg_bg_sampler  # v2.Counting
    params = {k: p for k, p in model.named_parameters() if p.requires_grad}
    sup_images, sup_targets, sup = fm.batch(SUPPORT, SUPPORT_SEED)
    qry_images, qry_targets, qry = fm.batch(QUERY, QUERY_SEED)

    def counted(f):
        counter.counts.clear()
        out = f()
        (samples,) = counter.counts
        return out, samples

    (ls, sup_draws), sup_samples = counted(lambda: fm.recorded(lambda: sum(model(sup_images, sup_targets).values())))
    assert align.calls > 0, "the box pooler did not call roi_align_torch"
    inner = torch.autograd.grad(ls, list(params.values()), create_graph=True, allow_unused=True)
    inner = [g if g is not None else torch.zeros_like(p) for g, p in zip(inner, params.values())]
    adapted = {k: p - ALPHA * g for (k, p), g in zip(params.items(), inner)}
    calls = align.calls
    (lq, qry_draws), qry_samples = counted(lambda: fm.recorded(
        lambda: sum(functional_call(model, adapted, (qry_images, qry_targets)).values())))
    assert align.calls > calls
    second = torch.autograd.grad(lq, list(params.values()), allow_unused=True)

    fixed = {k: v.detach().requires_grad_(True) for k, v in adapted.items()}
    lq_fo, fo_samples = counted(lambda: fm.replayed(
        qry_draws, lambda: sum(functional_call(model, fixed, (qry_images, qry_targets)).values())))
    assert fo_samples == qry_samples, (fo_samples, qry_samples)
    assert lq_fo.item() == lq.item(), (lq_fo.item(), lq.item())
    first = torch.autograd.grad(lq_fo, list(fixed.values()), allow_unused=True)

    unused = [k for k, g in zip(params, second) if g is None]
    assert not unused, unused
    assert min(sup_samples + qry_samples) < BOX_BATCH, (sup_samples, qry_samples)

    def summaries(gs):
        return {k: gl.grad_summary(g if g is not None else torch.zeros_like(p))
                for (k, p), g in zip(params.items(), gs)}

    print("L_s %.17g L_q %.17g (first order %.17g)" % (ls.item(), lq.item(), lq_fo.item()))
    print("box samples support", sup_samples, "query", qry_samples)
    print("draws support", [len(d) for d in sup_draws], "query", [len(d) for d in qry_draws])
    print("trainable parameters", len(params))
    case = {"alpha": ALPHA, "support": sup, "query": qry, "support_draws": sup_draws, "query_draws": qry_draws,
            "pre_nms_top_n": PRE_NMS, "post_nms_top_n": POST_NMS, "box_batch_size_per_image": BOX_BATCH,
            "roi_align_check": err, "support_loss": ls.item(), "query_loss": lq.item(),
            "meta_grads": summaries(second), "first_order_grads": summaries(first),
            "box_samples": {"support": sup_samples, "query": qry_samples}}
    gc.write_torchvision(os.path.join(v2.OUT, "fasterrcnn_v2_maml.json.gz"), [case], op="fasterrcnn v2 MAML")


if __name__ == "__main__":
    main()
