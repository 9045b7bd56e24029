"""Torch's training step of examples/mnist's classifier, for BENCHMARKS.md.

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 \
        /usr/bin/python3 scripts/mnist_torch.py [--rounds 4] [--batch 64]

The twin of examples/mnist's BenchmarkStep: the same small CNN (conv 1→16
3×3 pad 1, ReLU, max-pool 2; conv 16→32 3×3 pad 1, ReLU, max-pool 2;
linear 1568→128, ReLU; linear 128→10), torch's default initialisation,
cross-entropy (mean) on a [batch, 1, 28, 28] float32 batch, Adam (lr 1e-3).
One step is zero_grad, forward, backward and optimizer.step. The r1 row adds
the gradient penalty (gamma / 2) * sum(g ** 2) / batch with g the gradient of
the summed loss w.r.t. the input (create_graph=True), gamma 0.1: a second
derivative through every layer. After a second of warm-up per row and thread
count, --rounds rounds alternate the rows, each the min of 20 steps; it
prints the min over rounds (ms) at 1 and 2 threads.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from lossways_torch import parse_rounds, warm_best


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def stepper(batch, r1, gamma=0.1):
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.rand(batch, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (batch,), generator=gen)

    def step():
        opt.zero_grad()
        if r1:
            xr = x.clone().requires_grad_()
            loss = F.cross_entropy(net(xr), y)
            g, = torch.autograd.grad(loss * batch, xr, create_graph=True)
            loss = loss + gamma / 2 * (g * g).sum() / batch
        else:
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
    return step


def main():
    args = parse_rounds(__doc__, "the rows", extra=lambda ap: ap.add_argument("--batch", type=int, default=64))
    for threads in (1, 2):
        torch.set_num_threads(threads)
        plain, r1 = warm_best([stepper(args.batch, False), stepper(args.batch, True)], args.rounds)
        print(f"threads {threads}: step {plain:.3f} ms, step+r1 {r1:.3f} ms (batch {args.batch})")


if __name__ == "__main__":
    main()
