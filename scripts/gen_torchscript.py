#!/usr/bin/python3
"""TorchScript archives written by torch itself (Debian's python3-torch):
torch.jit.script and torch.jit.trace of small modules, then
ScriptModule.save, and a tch-rs style rust_model.ot. Beside each its
expectation (NAME.expect.json), taken from torch.jit.load of the saved
file (its state_dict, the constants its code names, each tensor's bytes
in C order, strides and storage offset) and from Python's own pickle
module run over data.pkl with every class replaced by a recorder (the
module tree's classes and non-tensor attributes): never from modelfs.

rust_model.ot: tch-rs's VarStore::save hands its variables to libtorch's
torch::serialize::OutputArchive, which registers each as a parameter of
one module of class `Module` and saves that module with torch.jit's
writer; tch-rs names them with '|' where the Python names have '.'. Here
a Python class `Module` (qualified `__torch__.Module`, as libtorch's)
holds parameters so named and is saved by the same writer.

usage: gen_torchscript.py OUTDIR
"""
import hashlib
import io
import json
import os
import pickle
import sys
import zipfile

import torch


class Sub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.register_buffer("steps", torch.arange(4, dtype=torch.int64))

    def forward(self, x):
        return self.lin(x)


class Net(torch.nn.Module):
    """Submodules, a ModuleList, a tied weight, buffers of many dtypes, a
    strided buffer sharing a parameter's storage."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 2, 3)
        self.sub = Sub()
        self.bn = torch.nn.BatchNorm1d(2)
        self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)])
        self.layers[1].weight = self.layers[0].weight          # tied
        self.register_buffer("halves", torch.linspace(-1, 1, 6, dtype=torch.float16))
        self.register_buffer("brain", torch.tensor([1.5, -2.0, 3.25], dtype=torch.bfloat16))
        self.register_buffer("flags", torch.tensor([True, False, True]))
        self.register_buffer("small", torch.tensor([-128, 0, 127], dtype=torch.int8))
        self.register_buffer("wt", self.sub.lin.weight.detach().t())   # strided view
        self.register_buffer("empty", torch.zeros(0, 3))

    def forward(self, x):
        y = self.bn(self.sub(x))
        for layer in self.layers:
            y = layer(y)
        return y


class Traced(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.arange(12, dtype=torch.float32).reshape(3, 4))

    def forward(self, x):
        # torch.tensor in a trace becomes a constant: constants.pkl.
        return x @ self.w + torch.tensor([1.0, 2.0, 3.0, 4.0])


class Module(torch.nn.Module):
    """libtorch OutputArchive's module: parameters only, no forward."""

    def __init__(self, named):
        super().__init__()
        for name, t in named:
            self.register_parameter(name, torch.nn.Parameter(t, requires_grad=False))


def sha(b):
    return hashlib.sha256(b).hexdigest()


DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
          torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32",
          torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool"}


def c_bytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


class Recorder(dict):
    """A __torch__ object as pickle builds it here: a dict of its state."""
    cls = None

    def __setstate__(self, state):
        if isinstance(state, dict):
            self.update(state)
        else:
            self["__getstate__"] = state


class Tensor:
    pass


class Reader(pickle.Unpickler):
    """Python's own unpickler over data.pkl: classes become recorders,
    tensors placeholders; nothing of torch is imported through it."""

    def find_class(self, module, name):
        if module == "__torch__" or module.startswith("__torch__."):
            return type(name, (Recorder,), {"cls": module + "." + name})
        if module == "torch.jit._pickle":
            return lambda v, *rest: v
        if module == "torch._utils" and name.startswith("_rebuild_tensor"):
            return lambda *a: Tensor()
        if module == "collections" and name == "OrderedDict":
            return dict
        if module == "torch" and name.endswith("Storage"):
            return name
        raise pickle.UnpicklingError("unexpected global %s.%s" % (module, name))

    def persistent_load(self, pid):
        return pid


def tree_facts(obj, name="", classes=None, meta=None):
    """(classes by path, metadata leaves) as modelfs's walk names them."""
    classes = {} if classes is None else classes
    meta = {} if meta is None else meta
    if isinstance(obj, Recorder):
        classes[name] = obj.cls
    if isinstance(obj, dict) and (obj or not name):
        for k, v in obj.items():
            tree_facts(v, "%s.%s" % (name, k) if name else k, classes, meta)
    elif not isinstance(obj, Tensor):
        meta[name] = json.loads(json.dumps(obj))
    return classes, meta


def write(out, fname, module, extra_files=None, notes=""):
    path = os.path.join(out, fname)
    if extra_files:
        torch.jit.save(module, path, _extra_files=extra_files)
    else:
        module.save(path)
    loaded = torch.jit.load(path)
    named = list(loaded.state_dict(keep_vars=True).items())
    try:
        mapping = loaded.code_with_constants[1].const_mapping
    except AttributeError:   # no forward (rust_model.ot): no code, no constants
        mapping = {}
    for k, v in sorted(mapping.items(), key=lambda kv: int(kv[0][1:])):
        if isinstance(v, torch.Tensor):
            named.append(("CONSTANTS." + k, v))
    by_storage = {}
    for n, t in named:
        by_storage.setdefault(t.storage().data_ptr(), []).append(n)
    tensors = []
    for n, t in named:
        data = c_bytes(t)
        e = {"name": n, "dtype": DTYPES[t.dtype], "shape": list(t.shape), "nbytes": len(data),
             "sha256": sha(data), "stride": list(t.stride()), "storage_offset": t.storage_offset(),
             "contiguous": t.is_contiguous()}
        others = [m for m in by_storage[t.storage().data_ptr()] if m != n]
        if others and t.numel() > 0:
            e["shares_storage_with"] = others
        tensors.append(e)
    with zipfile.ZipFile(path) as z:
        top = z.namelist()[0].split("/")[0]
        root = Reader(io.BytesIO(z.read(top + "/data.pkl"))).load()
        code = sorted(n[len(top) + 6:] for n in z.namelist() if n.startswith(top + "/code/"))
        extra = sorted(n[len(top) + 7:] for n in z.namelist() if n.startswith(top + "/extra/"))
        version = int(z.read(top + "/version"))
    classes, meta = tree_facts(root)
    expect = {"schema": "fixture-expect/1", "fixture": fname, "format": "torchscript",
              "format_version": version, "expect": "readable",
              "made_by": "scripts/gen_torchscript.py (torch %s)" % torch.__version__,
              "notes": notes, "file_size": os.path.getsize(path), "metadata": meta,
              "classes": classes, "code": code, "extra_files": extra,
              "tensor_count": len(tensors), "tensors": tensors}
    with open(path + ".expect.json", "w") as f:
        json.dump(expect, f, indent=1, ensure_ascii=False)


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(7)
    net = Net().eval()
    write(out, "script.pt", torch.jit.script(net),
          notes="torch.jit.script: submodules, a ModuleList, a tied weight, many dtypes, "
                "a strided buffer")
    write(out, "extra.pt", torch.jit.script(Sub()), extra_files={"meta.json": b'{"a": 1}'},
          notes="torch.jit.save with _extra_files")
    write(out, "trace.pt", torch.jit.trace(Traced(), torch.ones(2, 3), check_trace=False),
          notes="torch.jit.trace: a tensor constant (CONSTANTS.c0)")
    ref = Net()
    named = [(k.replace(".", "|"), v.detach().clone()) for k, v in ref.state_dict().items()
             if v.numel() > 0]
    named.append(("embeddings|word_embeddings|weight", torch.randn(300, 64)))
    write(out, "rust_model.ot", torch.jit.script(Module(named)),
          notes="as tch-rs's VarStore::save writes it: one Module, names joined with '|'")


if __name__ == "__main__":
    main(sys.argv[1])
