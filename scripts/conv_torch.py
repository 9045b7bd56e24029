"""Torch's dense Conv2d at its best, the twin of nn's BenchmarkConv2d.

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 \
        OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 scripts/conv_torch.py [--rounds 3]

F.conv2d with bias at issue 26's shapes (default [4, 64, 56, 56] 3x3
64 -> 64, resnet-64 [8, 64, 56, 56] 3x3 64 -> 64, resnet-256
[8, 256, 14, 14] 3x3 256 -> 256, pointwise-1024 [8, 256, 14, 14] 1x1
256 -> 1024, stem [4, 3, 224, 224] 7x7/2 3 -> 64), float32 and float64,
at 1 and 2 threads: the forward, and the forward with out.backward(G)
(gradients of x, weight and bias). After a second of warm-up per case,
--rounds rounds alternate the cases, each the min of 10 runs; it prints
the min over rounds (ms) and GFLOP/s (2·N·Cout·C·K·L per product; the
forward+backward counts three products).
"""
import time

import torch
import torch.nn.functional as F

from lossways_torch import best_ms, parse_rounds  # best_ms: min of runs, ms

SHAPES = [  # name, n, cin, h, cout, k, pad, stride
    ("default", 4, 64, 56, 64, 3, 1, 1),
    ("resnet-64", 8, 64, 56, 64, 3, 1, 1),
    ("resnet-256", 8, 256, 14, 256, 3, 1, 1),
    ("pointwise-1024", 8, 256, 14, 1024, 1, 0, 1),
    ("stem", 4, 3, 224, 64, 7, 3, 2),
]


def setup(shape, dtype, backward):
    _, n, cin, h, cout, k, p, s = shape
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(n, cin, h, h, generator=gen, dtype=dtype).requires_grad_(backward)
    w = (0.05 * torch.randn(cout, cin, k, k, generator=gen, dtype=dtype)).requires_grad_(backward)
    b = torch.randn(cout, generator=gen, dtype=dtype).requires_grad_(backward)
    ho = (h + 2 * p - k) // s + 1
    g = torch.randn(n, cout, ho, ho, generator=gen, dtype=dtype)
    flops = 2 * n * cout * cin * k * k * ho * ho * (3 if backward else 1)

    def run():
        if not backward:
            with torch.no_grad():
                F.conv2d(x, w, b, stride=s, padding=p)
            return
        x.grad = w.grad = b.grad = None
        F.conv2d(x, w, b, stride=s, padding=p).backward(g)

    return run, flops


def main():
    args = parse_rounds(__doc__, "the cases", 3, lambda ap: ap.add_argument(
        "--shapes", default="", help="comma-separated shape names (default all)"))
    shapes = [s for s in SHAPES if not args.shapes or s[0] in args.shapes.split(",")]
    print(f"torch {torch.__version__}")
    print("| shape | dtype | threads | pass | ms | GFLOP/s |")
    print("|---|---|---|---|---|---|")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        cases = []
        for shape in shapes:
            for dtype in (torch.float32, torch.float64):
                for backward in (False, True):
                    run, flops = setup(shape, dtype, backward)
                    t0 = time.perf_counter()
                    while time.perf_counter() - t0 < 1.0:
                        run()
                    cases.append([shape[0], dtype, backward, run, flops, float("inf")])
        for _ in range(args.rounds):
            for c in cases:
                c[5] = min(c[5], best_ms(c[3], 10))
        for name, dtype, backward, _, flops, ms in cases:
            pas = "forward+backward" if backward else "forward"
            dt = str(dtype).replace("torch.", "")
            print(f"| {name} | {dt} | {threads} | {pas} | {ms:.2f} | {flops / ms / 1e6:.1f} |", flush=True)


if __name__ == "__main__":
    main()
