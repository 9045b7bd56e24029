#!/usr/bin/python3
"""Golden files of nn.Params' safetensors Save/Load, written and checked with torch.

Run from the repository root with Debian's python3 (torch 1.13, CPU):

    /usr/bin/python3 scripts/gen_params_golden.py

1. Writes testdata/params/torch.safetensors: the state_dict of a small torch
   module (seed 0: conv1 = Conv2d(1, 2, 3) float32, fc = Linear(4, 3) float64,
   bn = BatchNorm2d(2) float32 after one training-mode forward, so its running
   statistics and its I64 0-d num_batches_tracked are not the defaults), in
   the safetensors format as safetensors.torch.save_file writes it
   (metadata {"format": "pt"}), and testdata/params/torch.json: every tensor's
   dtype, shape and values, which nn's TestParamsLoadTorchFile compares with
   what Params.Load reads.
2. Checks testdata/params/go.safetensors, written by nn's
   TestParamsSaveGoFile (go test ./nn -run TestParamsSaveGoFile
   -update-params): reads it with the reader below, compares every value
   bit for bit with goValue (the same formula as the Go test's), and loads
   it into torch modules with load_state_dict(strict=True).

The safetensors package for Python is not installable here, so the format
(https://github.com/huggingface/safetensors, "Format") is written out: an
8-byte little-endian header size N, N bytes of JSON {name: {"dtype",
"shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}} padded
with spaces to a multiple of 8, then the tensors' little-endian bytes, sorted
by dtype (widest first) and then by name.
"""
import json
import os
import struct
import sys

import torch

DIR = "testdata/params"
DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}
RANK = {"F32": 11, "F64": 12, "I64": 13}  # safetensors' Dtype order
FROM_NAME = {v: k for k, v in DTYPES.items()}


def save_safetensors(tensors, path, metadata):
    items = sorted(tensors.items(), key=lambda kv: (-RANK[DTYPES[kv[1].dtype]], kv[0]))
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in items:
        data = t.contiguous().numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_safetensors(path):
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data, out, end = buf[8 + n:], {}, 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        b, e = info["data_offsets"]
        assert b == end and e <= len(data), (name, b, e, end)
        end = e
        dt = FROM_NAME[info["dtype"]]
        out[name] = torch.frombuffer(bytearray(data[b:e]), dtype=dt).reshape(info["shape"])
    assert end == len(data), "bytes after the last tensor"
    return out, metadata


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 2, 3)
        self.fc = torch.nn.Linear(4, 3).double()
        self.bn = torch.nn.BatchNorm2d(2)


def write_torch_file():
    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():
        net.bn.weight.uniform_(0.5, 1.5)
        net.bn.bias.uniform_(-0.5, 0.5)
    net.bn(torch.randn(2, 2, 3, 3))  # one training-mode forward: running stats move
    sd = {k: v.detach().clone() for k, v in net.state_dict().items()}
    save_safetensors(sd, os.path.join(DIR, "torch.safetensors"), {"format": "pt"})
    doc = {"tensors": {k: {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape),
                           "values": [float(x) if v.is_floating_point() else int(x) for x in v.flatten().tolist()]}
                       for k, v in sd.items()}}
    with open(os.path.join(DIR, "torch.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    # The file reads back into the same module.
    back, _ = load_safetensors(os.path.join(DIR, "torch.safetensors"))
    Net().load_state_dict(back, strict=True)
    for k, v in sd.items():
        assert torch.equal(back[k], v), k
    print("wrote", DIR + "/torch.safetensors", "and torch.json:", len(sd), "tensors")


# The Go test's parameters: name, dtype, shape, in Params order.
GO_PARAMS = [("conv1.weight", torch.float32, [2, 1, 3, 3]), ("conv1.bias", torch.float32, [2]),
             ("fc.weight", torch.float64, [3, 4]), ("fc.bias", torch.float64, [3])]


def go_value(j, k):
    """Element k of the Go test's parameter j: exact in float32 and float64."""
    return (k - 5) * 0.125 + j


def check_go_file():
    path = os.path.join(DIR, "go.safetensors")
    if not os.path.exists(path):
        print("no", path, "yet: run go test ./nn -run TestParamsSaveGoFile -update-params, then this again")
        return
    got, metadata = load_safetensors(path)
    assert metadata == {"format": "pt"}, metadata
    assert sorted(got) == sorted(n for n, _, _ in GO_PARAMS), sorted(got)
    for j, (name, dt, shape) in enumerate(GO_PARAMS):
        want = torch.tensor([go_value(j, k) for k in range(int(torch.tensor(shape).prod()))], dtype=dt).reshape(shape)
        assert got[name].dtype == dt and list(got[name].shape) == shape, (name, got[name].dtype, got[name].shape)
        assert torch.equal(got[name], want), name
    conv, fc = torch.nn.Conv2d(1, 2, 3), torch.nn.Linear(4, 3).double()
    conv.load_state_dict({k[6:]: v for k, v in got.items() if k.startswith("conv1.")}, strict=True)
    fc.load_state_dict({k[3:]: v for k, v in got.items() if k.startswith("fc.")}, strict=True)
    print("checked", path, "in torch: values equal, load_state_dict(strict=True) accepts it")


if __name__ == "__main__":
    os.makedirs(DIR, exist_ok=True)
    write_torch_file()
    check_go_file()
    sys.exit(0)
