#!/usr/bin/env python3
"""Generate the checkpoint goldens of package detection (detection/checkpoint.go).

Run from the repository root with Debian's Python (torch 1.13, torchvision 0.14, CPU):

    /usr/bin/python3 scripts/gen_detection_ckpt.py

Writes into testdata/detection/ (deterministic: fixed seed; torch.save's zip
entries carry no time stamp, the JSON is gzipped with mtime 0):

  ckpt_zip.pth      torch.save(sd, path): the zip format, archive prefix "ckpt_zip"
  ckpt_buf.pth      torch.save(sd, BytesIO): the zip format, prefix "archive",
                    plus an "archive/byteorder" record "little" (torch >= 2.1 writes one)
  ckpt_big.pth      ckpt_buf.pth with every storage byte-swapped and byteorder "big"
  ckpt_legacy.pth   torch.save(sd, path, _use_new_zipfile_serialization=False)
  ckpt_params.pth   sd with its float tensors as nn.Parameter (state_dict(keep_vars=True))
  ckpt.json.gz      the expected tensors of sd (see below)
  head_v1.pth       a state dict of a module {head: RetinaNetHead(4, 2, 3),
                    rpn: {head: RPNHead(4, 2)}} renamed to the version-1 key layout
                    (conv.{2i}.weight; rpn conv.weight) with _metadata version 1 for
                    the three heads; checked here: torchvision's load_state_dict
                    accepts it and gives back the original tensors
  head_v1.json.gz   the expected (upgraded, version-2) tensors
  bad_*.pth         small non-checkpoints and corrupt checkpoints for the error tests

The random state dict sd (torch.manual_seed(0)) holds the keys of a small module
tree (conv, bn, fc, layer.0/1) in float32 and float64, with
  - fc.weight: a transposed (non-contiguous) view, strides (1, 3);
  - layer.0.weight and layer.0.bias: slices of one float64 storage, overlapping,
    at storage offsets 2 and 5;
  - layer.1.weight: a 2-d slice at storage offset 6 with strides (5, 1);
  - bn.num_batches_tracked: int64 (dropped by the reader);
  - _metadata: {"": 1, "conv": 1, "bn": 2, "fc": 1, "layer": 1, "layer.0": 3}.

JSON (compact, gzip):
  {"torch": str, "keys": [key, ...] (the state dict's order, num_batches_tracked
   left out), "dropped": [key, ...], "versions": {prefix: version},
   "tensors": {key: {"dtype": "float32" | "float64", "shape": [...],
                     "values": [...] (row-major, exact as float64 JSON numbers)}}}
"""

import collections
import io
import json
import os
import sys as _sys
_sys.dont_write_bytecode = True
_sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
import golden_common as gc  # noqa: E402  (write_compact)
import pickle
import struct
import zipfile

import torch
from torchvision.models.detection.retinanet import RetinaNetHead
from torchvision.models.detection.rpn import RPNHead

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "detection")


def path(name):
    return os.path.join(OUT, name)


def write_json(name, doc):
    n = gc.write_compact(path(name), doc)


def expected(sd):
    keys, dropped, tensors = [], [], {}
    for k, t in sd.items():
        if k.endswith("num_batches_tracked"):
            dropped.append(k)
            continue
        keys.append(k)
        tensors[k] = {
            "dtype": str(t.dtype).replace("torch.", ""),
            "shape": list(t.shape),
            "values": t.double().reshape(-1).tolist(),
        }
    versions = {k: v["version"] for k, v in getattr(sd, "_metadata", {}).items() if "version" in v}
    return {"torch": torch.__version__, "keys": keys, "dropped": dropped, "versions": versions, "tensors": tensors}


def random_state_dict():
    torch.manual_seed(0)
    sd = collections.OrderedDict()
    sd["conv.weight"] = torch.randn(3, 2, 3, 3)
    sd["conv.bias"] = torch.randn(3)
    sd["bn.weight"] = torch.rand(3)
    sd["bn.bias"] = torch.randn(3)
    sd["bn.running_mean"] = torch.randn(3)
    sd["bn.running_var"] = torch.rand(3) + 0.5
    sd["bn.num_batches_tracked"] = torch.tensor(7, dtype=torch.int64)
    sd["fc.weight"] = torch.randn(4, 3).t()  # [3, 4], strides (1, 3)
    sd["fc.bias"] = torch.randn(3, dtype=torch.float64)
    shared = torch.randn(12, dtype=torch.float64)
    sd["layer.0.weight"] = shared[2:8].view(2, 3)  # offset 2
    sd["layer.0.bias"] = shared[5:9]  # offset 5, overlaps layer.0.weight
    grid = torch.randn(4, 5, dtype=torch.float64)
    sd["layer.1.weight"] = grid[1:3, 1:4]  # offset 6, strides (5, 1)
    sd["layer.1.bias"] = torch.randn(1)
    sd._metadata = collections.OrderedDict()
    for prefix, v in [("", 1), ("conv", 1), ("bn", 2), ("fc", 1), ("layer", 1), ("layer.0", 3)]:
        sd._metadata[prefix] = {"version": v}
    assert not sd["fc.weight"].is_contiguous() and sd["layer.1.weight"].storage_offset() == 6
    return sd


def storage_classes(raw_pkl):
    """The storage type of each storage key of a zip checkpoint's data.pkl."""
    found = {}

    class U(pickle.Unpickler):
        def persistent_load(self, pid):
            found[pid[2]] = pid[1]
            return pid

        def find_class(self, module, name):
            if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                return lambda *a: None
            return super().find_class(module, name)

    U(io.BytesIO(raw_pkl)).load()
    return found


def rewrite_zip(src, dst, edit):
    """Copies the zip src to dst, entry by entry through edit(name, data) ->
    [(name, data), ...], stored uncompressed as torch's writer does."""
    with zipfile.ZipFile(io.BytesIO(src)) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            for name, data in edit(info.filename, zin.read(info.filename)):
                zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                zout.writestr(zi, data)


def gen_state_dict():
    sd = random_state_dict()
    torch.save(sd, path("ckpt_zip.pth"))
    torch.save(sd, path("ckpt_legacy.pth"), _use_new_zipfile_serialization=False)
    buf = io.BytesIO()
    torch.save(sd, buf)
    raw = buf.getvalue()

    def add_byteorder(name, data):
        out = [(name, data)]
        if name == "archive/version":
            out.append(("archive/byteorder", b"little"))
        return out

    rewrite_zip(raw, path("ckpt_buf.pth"), add_byteorder)
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        classes = storage_classes(z.read("archive/data.pkl"))
    sizes = {"FloatStorage": 4, "DoubleStorage": 8, "LongStorage": 8}

    def big_endian(name, data):
        if name.startswith("archive/data/"):
            n = sizes[classes[name[len("archive/data/"):]].__name__]
            data = b"".join(data[i : i + n][::-1] for i in range(0, n, n))
        out = [(name, data)]
        if name == "archive/version":
            out.append(("archive/byteorder", b"big"))
        return out

    rewrite_zip(raw, path("ckpt_big.pth"), big_endian)
    params = collections.OrderedDict(
        (k, torch.nn.Parameter(t) if t.is_floating_point() else t) for k, t in sd.items()
    )  # as state_dict(keep_vars=True) holds them
    params._metadata = sd._metadata
    torch.save(params, path("ckpt_params.pth"))
    for f in ["ckpt_zip.pth", "ckpt_buf.pth", "ckpt_big.pth", "ckpt_legacy.pth", "ckpt_params.pth"]:
        if f != "ckpt_big.pth":  # torch 1.13 ignores byteorder
            back = torch.load(path(f))
            assert list(back.keys()) == list(sd.keys()) and all(torch.equal(back[k], sd[k]) for k in sd), f
            assert back._metadata == sd._metadata, f
    write_json("ckpt.json.gz", expected(sd))


class Heads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = RetinaNetHead(4, 2, 3)
        self.rpn = torch.nn.Module()
        self.rpn.head = RPNHead(4, 2)


def v1_key(k):
    """The version-1 name of a version-2 key of Heads."""
    for h in ["head.classification_head.", "head.regression_head."]:
        if k.startswith(h + "conv."):
            i, _, rest = k[len(h + "conv.") :].split(".", 2)
            return f"{h}conv.{2 * int(i)}.{rest}"
    if k.startswith("rpn.head.conv.0.0."):
        return "rpn.head.conv." + k[len("rpn.head.conv.0.0.") :]
    return k


def gen_heads():
    torch.manual_seed(1)
    model = Heads()
    v2 = model.state_dict()
    v1 = collections.OrderedDict((v1_key(k), t) for k, t in v2.items())
    v1._metadata = collections.OrderedDict(v2._metadata)
    for prefix in ["head.classification_head", "head.regression_head", "rpn.head"]:
        v1._metadata[prefix] = {"version": 1}
    assert sum(k != v1_key(k) for k in v2) == 18, [k for k in v2 if k == v1_key(k)]
    torch.save(v1, path("head_v1.pth"))
    fresh = Heads()
    fresh.load_state_dict(torch.load(path("head_v1.pth")))  # strict: torchvision's upgrade renames every key
    got = fresh.state_dict()
    assert list(got.keys()) == list(v2.keys()) and all(torch.equal(got[k], v2[k]) for k in v2)
    doc = expected(v2)
    doc["versions"] = {k: v["version"] for k, v in v1._metadata.items()}
    write_json("head_v1.json.gz", doc)


class FakeStorage:
    """A storage pickled by persistent id as torch pickles one."""

    def __init__(self, cls, key, numel):
        self.pid = ("storage", cls, key, "cpu", numel)


class FakeTensor:
    """A tensor pickled as torch's _rebuild_tensor_v2 call, with any arguments."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


def fake_zip(name, obj, storages):
    """Writes obj pickled as torch's zip format does, with storages {key: bytes}."""
    buf = io.BytesIO()

    class P(pickle.Pickler):
        def persistent_id(self, o):
            return o.pid if isinstance(o, FakeStorage) else None

    P(buf, protocol=2).dump(obj)
    with zipfile.ZipFile(path(name), "w", zipfile.ZIP_STORED) as z:
        z.writestr(zipfile.ZipInfo("archive/data.pkl", (1980, 1, 1, 0, 0, 0)), buf.getvalue())
        for key, data in storages.items():
            z.writestr(zipfile.ZipInfo("archive/data/" + key, (1980, 1, 1, 0, 0, 0)), data)
        z.writestr(zipfile.ZipInfo("archive/version", (1980, 1, 1, 0, 0, 0)), b"3\n")


def gen_bad():
    torch.save([torch.zeros(2)], path("bad_list.pth"))
    torch.save({"a.weight": torch.zeros(2, dtype=torch.int16)}, path("bad_int16.pth"))
    torch.save({"a.weight": torch.zeros(2, dtype=torch.int64)}, path("bad_int64.pth"))
    torch.save({"a.weight": torch.zeros(2, dtype=torch.float16)}, path("bad_half.pth"), _use_new_zipfile_serialization=False)
    torch.save({"a": {"b": torch.zeros(2)}}, path("bad_nested.pth"))
    f32 = torch.FloatStorage
    eight = struct.pack("<2f", 1.0, 2.0)
    od = collections.OrderedDict
    fake_zip("bad_short.pth", od(w=FakeTensor(FakeStorage(f32, "0", 4), 0, [4], [1])), {"0": eight})
    fake_zip("bad_numel.pth", od(w=FakeTensor(FakeStorage(f32, "0", 1 << 40), 0, [2], [1])), {"0": eight})
    fake_zip("bad_size.pth", od(w=FakeTensor(FakeStorage(f32, "0", 2), 0, [1 << 31, 1 << 31], [0, 0])), {"0": eight})
    fake_zip("bad_stride.pth", od(w=FakeTensor(FakeStorage(f32, "0", 2), 0, [1, 2], [1, 1 << 62])), {"0": eight})
    fake_zip("bad_offset.pth", od(w=FakeTensor(FakeStorage(f32, "0", 2), 2, [1], [1])), {"0": eight})
    fake_zip("bad_negative.pth", od(w=FakeTensor(FakeStorage(f32, "0", 2), 0, [-1], [1])), {"0": eight})
    fake_zip("bad_nostorage.pth", od(w=FakeTensor(FakeStorage(f32, "7", 2), 0, [2], [1])), {"0": eight})
    fake_zip("bad_key.pth", {3: FakeTensor(FakeStorage(f32, "0", 2), 0, [2], [1])}, {"0": eight})


def main():
    os.makedirs(OUT, exist_ok=True)
    gen_state_dict()
    gen_heads()
    gen_bad()
    for f in sorted(os.listdir(OUT)):
        print(f, os.path.getsize(path(f)))


if __name__ == "__main__":
    main()
