"""Torch's time for the depthwise convolution of issue 26, for BENCHMARKS.md.

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 OPENBLAS_CORETYPE=SkylakeX \
        /usr/bin/python3 scripts/depthwise_torch.py [--rounds 4]

The twin of nn's BenchmarkConv2dDepthwise: F.conv2d of x [8, 128, 28, 28]
with a 3x3 weight [128, 1, 3, 3], padding 1, groups 128, with a bias, in
float32 and float64; forward, and forward plus the gradients of <out, G>
w.r.t. x, weight and bias (torch.autograd.grad(out, inputs, G)). After a
second of warm-up per case and thread count, --rounds rounds alternate
forward and forward+backward, each the min of 20 runs; it prints the min
over rounds (ms) at 1 and 2 threads.
"""

import torch
import torch.nn.functional as F

from lossways_torch import parse_rounds, warm_best


def main():
    args = parse_rounds(__doc__, "forward and forward+backward")
    print(f"torch {torch.__version__}")
    print("| dtype | threads | forward | forward+backward |")
    print("|---|---|---|---|")
    for dtype in (torch.float32, torch.float64):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            gen = torch.Generator().manual_seed(1)
            x = torch.randn(8, 128, 28, 28, generator=gen, dtype=dtype).requires_grad_()
            w = (0.3 * torch.randn(128, 1, 3, 3, generator=gen, dtype=dtype)).requires_grad_()
            b = torch.randn(128, generator=gen, dtype=dtype).requires_grad_()
            g = torch.randn(8, 128, 28, 28, generator=gen, dtype=dtype)

            def fwd():
                with torch.no_grad():
                    return F.conv2d(x, w, b, padding=1, groups=128)

            def both():
                return torch.autograd.grad(F.conv2d(x, w, b, padding=1, groups=128), (x, w, b), g)

            f, fb = warm_best((fwd, both), args.rounds)
            print(f"| {str(dtype)[6:]} | {threads} | {f:.3f} | {fb:.3f} |", flush=True)


if __name__ == "__main__":
    main()
