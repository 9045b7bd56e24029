#!/usr/bin/env python3
"""GFLOP/s of torch.mm at the matrix-product shapes of gemm/bench_test.go
(productShapes), for scripts/gemm-table.sh: one line per shape, dtype and
thread count, "torch/DTYPE/SHAPE-THREADS GFLOPS" (the median of --repeats
timed runs after --warmup). torch's CPU products run on the BLAS torch was
built with (Debian: OpenBLAS, whose kernels OPENBLAS_CORETYPE picks, and
whose thread count OMP_NUM_THREADS / OPENBLAS_NUM_THREADS set when it loads:
torch.set_num_threads does not change it, so run one process per thread
count, as scripts/gemm-table.sh does).
"""

import argparse
import os
import statistics
import time

import torch

SHAPES = [
    ("v1-forward", False, False, 64, 12544, 576),
    ("v1-grad-columns", True, False, 576, 12544, 64),
    ("v1-grad-weight", False, True, 64, 576, 12544),
    ("v2-256-forward", False, False, 256, 2048, 2304),
    ("square", False, False, 1024, 1024, 1024),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(1)
    threads = int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads()))
    for name, ta, tb, m, n, k in SHAPES:
        for dname, dt in [("float32", torch.float32), ("float64", torch.float64)]:
            a = torch.randn((k, m) if ta else (m, k), generator=gen, dtype=dt)
            b = torch.randn((n, k) if tb else (k, n), generator=gen, dtype=dt)
            opa, opb = (a.t() if ta else a), (b.t() if tb else b)
            out = torch.empty((m, n), dtype=dt)
            for _ in range(args.warmup):
                torch.mm(opa, opb, out=out)
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                torch.mm(opa, opb, out=out)
                times.append(time.perf_counter() - t0)
            gflops = 2 * m * n * k / statistics.median(times) / 1e9
            print(f"torch/{dname}/{name}-{threads} {gflops:.1f}", flush=True)


if __name__ == "__main__":
    main()
