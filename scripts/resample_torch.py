"""Torch at its best on issue 26's resampling workloads, for BENCHMARKS.md.

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 \\
        OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 scripts/resample_torch.py [--rounds 4]

The twin of nn's BenchmarkResample: nearest-x2, F.interpolate of
[2, 256, 50, 68] with scale_factor 2, mode "nearest"; avgpool-2x2,
F.avg_pool2d of [8, 256, 28, 28] with kernel 2 (stride 2); float32 and
float64; and the twins of BenchmarkReLU (relu of [8, 64, 112, 112]) and
BenchmarkAdaptiveAvgPool2d (adaptive_avg_pool2d(x, 1) of [8, 2048, 7, 7]).
It times the forward and the forward with the gradient w.r.t.
the input for a random upstream gradient R (torch.autograd.grad(y, x, R),
ad.VJP's twin). After a second of warm-up per case and thread count,
--rounds rounds alternate the two, each the min of 20 runs; it prints the
min over rounds (ms) at 1 and 2 threads.
"""
import time

import torch
import torch.nn.functional as F

from lossways_torch import best_ms, parse_rounds  # best_ms: the min of 20 runs, ms

CASES = {
    "nearest-x2": ((2, 256, 50, 68), lambda x: F.interpolate(x, scale_factor=2, mode="nearest")),
    "avgpool-2x2": ((8, 256, 28, 28), lambda x: F.avg_pool2d(x, 2)),
    "relu": ((8, 64, 112, 112), F.relu),
    "adaptiveavgpool-1": ((8, 2048, 7, 7), lambda x: F.adaptive_avg_pool2d(x, 1)),
}


def main():
    args = parse_rounds(__doc__, "forward and forward+backward")
    print(f"torch {torch.__version__}")
    print("| case | dtype | threads | forward | forward+backward |")
    print("|---|---|---|---|---|")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for name, (shape, op) in CASES.items():
            for dt in (torch.float32, torch.float64):
                gen = torch.Generator().manual_seed(1)
                x = torch.randn(*shape, generator=gen, dtype=dt).requires_grad_()
                r = torch.randn(op(x).shape, generator=gen, dtype=dt)

                def fwd():
                    with torch.no_grad():
                        return op(x)

                def both():
                    return torch.autograd.grad(op(x), x, r)

                t0 = time.perf_counter()
                while time.perf_counter() - t0 < 1.0:
                    fwd()
                    both()
                f = b = float("inf")
                for _ in range(args.rounds):
                    f = min(f, best_ms(fwd))
                    b = min(b, best_ms(both))
                print(f"| {name} | {str(dt)[6:]} | {threads} | {f:.3f} | {b:.3f} |", flush=True)


if __name__ == "__main__":
    main()
