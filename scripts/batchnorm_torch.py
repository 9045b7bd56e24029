"""Torch's best time for F.batch_norm, the twin of nn's BenchmarkBatchNorm.

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 \
        OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 scripts/batchnorm_torch.py [--rounds 4]

[8, 64, 56, 56] with weight and bias, training (batch statistics, running
statistics updated) and eval, float32 and float64, at 1 and 2 threads:
forward, and forward+backward, torch.autograd.grad(y, (x, w, b), G) (eval:
the same three gradients). After a second of warm-up per case, --rounds
rounds alternate forward and forward+backward, each the min of 20 runs; it
prints the min over rounds in ms.
"""

import torch
import torch.nn.functional as F

from lossways_torch import parse_rounds, warm_best


def main():
    args = parse_rounds(__doc__, "forward and forward+backward")
    print(f"torch {torch.__version__}")
    print("| mode | dtype | threads | forward ms | forward+backward ms |")
    print("|---|---|---|---|---|")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for dtype in (torch.float32, torch.float64):
            for training in (True, False):
                gen = torch.Generator().manual_seed(1)

                def rn(*shape):
                    return torch.randn(*shape, generator=gen, dtype=dtype).requires_grad_()

                x, w, b = rn(8, 64, 56, 56), rn(64), rn(64)
                rm, rv = torch.zeros(64, dtype=dtype), torch.ones(64, dtype=dtype)
                g = torch.randn(8, 64, 56, 56, generator=gen, dtype=dtype)

                def fwd():
                    with torch.no_grad():
                        return F.batch_norm(x, rm, rv, w, b, training=training)

                def both():
                    return torch.autograd.grad(F.batch_norm(x, rm, rv, w, b, training=training), (x, w, b), g)

                f, fb = warm_best((fwd, both), args.rounds)
                mode = "training" if training else "eval"
                print(f"| {mode} | {str(dtype)[6:]} | {threads} | {f:.3f} | {fb:.3f} |", flush=True)


if __name__ == "__main__":
    main()
