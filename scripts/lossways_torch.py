"""Torch's cost of a loss written the ordinary way, for BENCHMARKS.md.

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 \
        /usr/bin/python3 scripts/lossways_torch.py [--rounds 4]

The twin of nn's BenchmarkLossWays: for Softmax over the 1000 classes of
[512, 1000], GroupNorm (32 groups of [8, 64, 56, 56], with weight and
bias), GridSample of [8, 64, 64, 64] at a grid [8, 64, 64, 2] in
[-1.1, 1.1]^2 (bilinear, zeros padding, align_corners False) and bilinear
Interpolate x2 of [8, 64, 56, 56], float32, it times one forward and the
gradient w.r.t. every input written two ways: grad,
torch.autograd.grad((y * R).sum(), inputs), and vjp,
torch.autograd.grad(y, inputs, R). After a second of warm-up per op and
thread count, --rounds rounds alternate the two, each the min of 20 runs;
it prints the min over rounds (ms) and grad / vjp at 1 and 2 threads.
Issue 25 asks gops' grad to cost at most 1.3x its vjp; this shows what
torch itself pays for the loss's own forward (a product and a sum).
"""
import argparse
import time

import torch
import torch.nn.functional as F


def case(name, gen):
    def rn(*shape):
        return torch.randn(*shape, generator=gen).requires_grad_()

    if name == "softmax":
        x = rn(512, 1000)
        return [x], lambda: torch.softmax(x, 1)
    if name == "groupnorm":
        x, w, b = rn(8, 64, 56, 56), rn(64), rn(64)
        return [x, w, b], lambda: F.group_norm(x, 32, w, b)
    if name == "gridsample":
        x = rn(8, 64, 64, 64)
        g = (torch.rand(8, 64, 64, 2, generator=gen) * 2.2 - 1.1).requires_grad_()
        return [x, g], lambda: F.grid_sample(x, g, mode="bilinear", padding_mode="zeros", align_corners=False)
    x = rn(8, 64, 56, 56)
    return [x], lambda: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)


def best_ms(fn, runs=20):
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best


def warm_best(fns, rounds, warm=1.0):
    """Runs fns in turn for warm seconds, then best_ms of each in rounds
    alternating rounds; returns each one's min, ms."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm:
        for fn in fns:
            fn()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_ms(fn))
    return best


def parse_rounds(doc, what, default=4, extra=None):
    """The torch twins' command line: --rounds (at least 1) of what, and
    what extra(ap) adds; returns the parsed arguments."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=default, help="alternating rounds of " + what)
    if extra:
        extra(ap)
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: at least one round is needed")
    return args


def main():
    args = parse_rounds(__doc__, "grad and vjp")
    print(f"torch {torch.__version__}")
    print("| op | threads | grad | vjp | grad / vjp |")
    print("|---|---|---|---|---|")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for name in ("softmax", "groupnorm", "gridsample", "interpolate-bilinear"):
            ins, f = case(name, torch.Generator().manual_seed(1))
            r = torch.randn(f().shape, generator=torch.Generator().manual_seed(2))

            def grad():
                return torch.autograd.grad((f() * r).sum(), ins)

            def vjp():
                return torch.autograd.grad(f(), ins, r)

            for a, b in zip(grad(), vjp()):  # the same gradient both ways
                assert torch.allclose(a, b, rtol=1e-4, atol=1e-4), name
            g, v = warm_best((grad, vjp), args.rounds)
            print(f"| {name} | {threads} | {g:.2f} | {v:.2f} | {g / v:.2f} |", flush=True)


if __name__ == "__main__":
    main()
