#!/usr/bin/env python3
"""Time torchvision's CUDA ops at the sizes of gops' BenchmarkGPU (gops/bench_cuda_test.go).

Run on the GPU machine, beside the bundle of scripts/cuda-check:

    python3 scripts/bench_cuda_torch.py [--repeats N] [--iters N] [--warmup-seconds S]

The inputs and upstream gradients are bench_torchvision.py's, moved to the
GPU once. Each benchmark is warmed up for --warmup-seconds, then timed
--repeats times over --iters calls each, torch.cuda.synchronize() after the
last; the min over repeats of the mean per call is printed in ms, as one JSON
object mapping "NAME" to ms. Two more rows per pooling op, "NAME/h2d", time the
same call with the feature map (and, with backward, G) copied from the host
to the GPU first (pageable memory, as Gorgonia's TapeMachine copies its
inputs on every run).
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_torchvision as bt  # noqa: E402

NAMES = [
    "RoIAlign/forward", "RoIAlign/forward+backward",
    "RoIPool/forward", "RoIPool/forward+backward",
    "PSRoIAlign/forward", "PSRoIAlign/forward+backward",
    "PSRoIPool/forward", "PSRoIPool/forward+backward",
    "MultiScaleRoIAlign/forward", "MultiScaleRoIAlign/forward+backward",
    "DeformConv2d/v1/forward", "DeformConv2d/v1/forward+backward",
    "DeformConv2d/v2/forward", "DeformConv2d/v2/forward+backward",
    "DeformConv2d/v2-256/forward", "DeformConv2d/v2-256/forward+backward",
]
H2D = ["RoIAlign", "RoIPool", "PSRoIAlign", "PSRoIPool"]


def to_cuda(obj, memo):
    """obj with every tensor moved to the GPU (leaves keep requires_grad; one
    tensor referenced twice stays one tensor)."""
    if isinstance(obj, torch.Tensor):
        if id(obj) not in memo:
            memo[id(obj)] = obj.detach().cuda().requires_grad_(obj.requires_grad)
        return memo[id(obj)]
    if isinstance(obj, dict):
        return {k: to_cuda(v, memo) for k, v in obj.items()}
    if isinstance(obj, list):
        return [to_cuda(v, memo) for v in obj]
    if isinstance(obj, tuple):
        return tuple(to_cuda(v, memo) for v in obj)
    if isinstance(obj, torch.nn.Module):
        return obj.cuda()
    return obj


def time_run(run, state, iters, repeats, warmup_seconds):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warmup_seconds:
        run(state)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(iters):
            run(state)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t) / iters)
    return best * 1e3


def with_h2d(run, host):
    """run on the GPU state after copying the host feature map (and G) in."""
    def r(s):
        x = host["x"].cuda()
        s["x"] = x.requires_grad_(host["x"].requires_grad)
        if host["x"].requires_grad:
            s["grad"] = host["grad"].cuda()
        run(s)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup-seconds", type=float, default=1.0)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    print(f"torch {torch.__version__}, torchvision {bt.torchvision.__version__}, "
          f"{torch.cuda.get_device_name(0)}", file=sys.stderr)
    out = {}
    for name in NAMES:
        setup, run = bt.BENCHMARKS[name]
        host = setup()
        state = to_cuda(host, {})
        out[name] = time_run(run, state, a.iters, a.repeats, a.warmup_seconds)
        print(f"{name}: {out[name]:.4f} ms", file=sys.stderr)
        op = name.split("/")[0]
        if op in H2D:
            h = f"{name}/h2d"
            out[h] = time_run(with_h2d(run, host), dict(state), a.iters, a.repeats, a.warmup_seconds)
            print(f"{h}: {out[h]:.4f} ms", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
