#!/usr/bin/python3
"""Writes the project's own PyTorch checkpoints (torch.save's zip format)
with plain Python: the pickle is assembled opcode by opcode (protocol 2,
the GLOBALs torch.save emits), the zip has stored members as torch writes
them. Each model gets NAME.expect.json (the fixtures' schema), computed
from the numpy arrays fed in, never read back from the file.

usage: gen_pytorch.py OUTDIR
Also imported by tests/mount/formats/pytorch.py (Pickle, write_checkpoint)
to make hostile files.
"""
import hashlib
import io
import json
import os
import struct
import sys
import zipfile
import zlib

import numpy as np

STORAGES = {  # numpy dtype -> torch storage class
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
    "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage",
}


class Pickle:
    """A pickle written opcode by opcode (names as in Lib/pickletools.py)."""

    def __init__(self, proto=2):
        self.b = bytearray(b"\x80" + bytes([proto]))
        self.memo = 0

    def op(self, code, arg=b""):
        self.b += code + arg
        return self

    def put(self):
        i = self.memo
        self.memo += 1
        return self.op(b"q", bytes([i])) if i < 256 else self.op(b"r", struct.pack("<I", i)), i

    def get(self, i):
        return self.op(b"h", bytes([i])) if i < 256 else self.op(b"j", struct.pack("<I", i))

    def glob(self, module, name):
        return self.op(b"c", module.encode() + b"\n" + name.encode() + b"\n")

    def str(self, s):
        e = s.encode("utf-8", "surrogatepass")
        return self.op(b"X", struct.pack("<I", len(e)) + e)

    def int(self, v):
        if 0 <= v < 256:
            return self.op(b"K", bytes([v]))
        if 0 <= v < 65536:
            return self.op(b"M", struct.pack("<H", v))
        if -2**31 <= v < 2**31:
            return self.op(b"J", struct.pack("<i", v))
        n = (v.bit_length() + 8) // 8
        return self.op(b"\x8a", bytes([n]) + v.to_bytes(n, "little", signed=True))

    def float(self, v):
        return self.op(b"G", struct.pack(">d", v))

    def tuple(self, items):
        self.op(b"(")
        for x in items:
            self.value(x)
        return self.op(b"t")

    def value(self, v):
        if isinstance(v, Raw):
            return self.op(v.data)
        if isinstance(v, (Tensor, Param, StateDict)):
            return v.emit(self)
        if v is None:
            return self.op(b"N")
        if v is True or v is False:
            return self.op(b"\x88" if v else b"\x89")
        if isinstance(v, int):
            return self.int(v)
        if isinstance(v, float):
            return self.float(v)
        if isinstance(v, str):
            return self.str(v)
        if isinstance(v, tuple):
            return self.tuple(v)
        if isinstance(v, list):
            self.op(b"]")
            if v:
                self.op(b"(")
                for x in v:
                    self.value(x)
                self.op(b"e")
            return self
        if isinstance(v, dict):
            self.op(b"}")
            if v:
                self.op(b"(")
                for k, x in v.items():
                    self.value(k)
                    self.value(x)
                self.op(b"u")
            return self
        raise TypeError(type(v))

    def stop(self):
        return bytes(self.b + b".")


class Raw:
    """Opcodes written as they are (hostile files)."""

    def __init__(self, data):
        self.data = data


# Element widths of the dtypes torch >= 2.1 pickles with _rebuild_tensor_v3
# (torch/storage.py _new_dtypes: no storage class of their own), and of the
# sub-byte integers (one byte per element in a storage).
V3_WIDTHS = {
    "uint16": 2, "uint32": 4, "uint64": 8, "float8_e5m2": 1, "float8_e4m3fn": 1,
    "float8_e5m2fnuz": 1, "float8_e4m3fnuz": 1, "float8_e8m0fnu": 1, "float4_e2m1fn_x2": 1,
    "complex32": 4, "bits8": 1, "bits16": 2, "bits1x8": 1, "bits2x4": 1, "bits4x2": 1,
    **{"int%d" % i: 1 for i in range(1, 8)}, **{"uint%d" % i: 1 for i in range(1, 8)},
}


class Storage:
    def __init__(self, key, array, storage_type=None, module="torch"):
        self.key, self.array = key, np.ascontiguousarray(array).reshape(-1)
        self.dtype = str(array.dtype) if storage_type is None else storage_type[1]
        self.type = storage_type[0] if storage_type else STORAGES[self.dtype]
        self.module = module  # torch >= 2.1: torch.storage.UntypedStorage


V3_WIDTHS_INDEX = {dt: i for i, dt in enumerate(V3_WIDTHS)}


def untyped(key, raw):
    """An UntypedStorage as torch >= 2.1 pickles it (GLOBAL 'torch.storage
    UntypedStorage'; its numel, in the persistent id, counts bytes)."""
    return Storage(key, np.frombuffer(bytes(raw), np.uint8), ("UntypedStorage", "uint8"),
                   "torch.storage")


class Tensor:
    """_rebuild_tensor_v2(persistent id, offset, size, stride, False, OrderedDict()).
    The same Tensor object emitted twice is one pickle object (memo)."""

    def __init__(self, storage, offset, shape, stride, dtype_v3=None, from_type=False):
        self.s, self.offset, self.shape, self.stride = storage, offset, tuple(shape), tuple(stride)
        self.dtype_v3 = dtype_v3
        self.from_type = from_type  # through torch._tensor._rebuild_from_type_v2 (attributes)
        self.memo = None

    def emit(self, p):
        if self.memo is not None:
            return p.get(self.memo)
        if self.from_type:
            p.glob("torch._tensor", "_rebuild_from_type_v2").op(b"(")
        p.glob("torch._utils", "_rebuild_tensor_v3" if self.dtype_v3 else "_rebuild_tensor_v2")
        if self.from_type:
            p.glob("torch", "Tensor")
        p.op(b"(")
        p.op(b"(").str("storage").glob(self.s.module, self.s.type).str(self.s.key).str("cpu")
        p.int(self.s.array.size).op(b"t").op(b"Q")
        p.int(self.offset).tuple(self.shape).tuple(self.stride).op(b"\x89")
        p.glob("collections", "OrderedDict").op(b")").op(b"R")
        if self.dtype_v3:
            p.glob("torch", self.dtype_v3)
        p.op(b"t")
        if self.from_type:
            p.value({"note": "an attribute"}).op(b"t")
        p.op(b"R")
        _, self.memo = p.put()
        return p

    def c_order(self, big=False):
        """The view's elements in C order, as the bytes served."""
        a = self.s.array
        if self.dtype_v3:
            # numpy has no float8 or complex32: the unsigned integer of the
            # element's width orders and swaps its bytes the same.
            a = a.view("u%d" % V3_WIDTHS[self.dtype_v3])
        if big:
            a = a.byteswap()
        item = a.dtype.itemsize
        raw = a.view(np.uint8)
        if int(np.prod(self.shape)) == 0:
            return b""
        v = np.lib.stride_tricks.as_strided(raw[self.offset * item:], shape=self.shape + (item,),
                                            strides=tuple(s * item for s in self.stride) + (1,))
        return np.ascontiguousarray(v).tobytes()


class Param:
    """torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict()):
    an nn.Parameter as torch.save writes it."""

    def __init__(self, tensor):
        self.t = tensor

    def emit(self, p):
        p.glob("torch._utils", "_rebuild_parameter").op(b"(")
        self.t.emit(p)
        p.op(b"\x88").glob("collections", "OrderedDict").op(b")").op(b"R").op(b"t").op(b"R")
        return p


class StateDict(dict):
    """A module's state_dict: an OrderedDict whose attributes ({'_metadata':
    ...}) come after its items, through BUILD."""

    def emit(self, p):
        p.glob("collections", "OrderedDict").op(b")").op(b"R")
        if self:
            p.op(b"(")
            for k, x in self.items():
                p.value(k)
                p.value(x)
            p.op(b"u")
        p.value({"_metadata": {"": {"version": 1}}})
        return p.op(b"b")


def sha(b):
    return hashlib.sha256(b).hexdigest()


def torch_zip(members):
    """Stored members as torch's own writer (caffe2 PyTorchStreamWriter)
    lays them out: each local header's extra field is an "FB" field that
    pads the data to a multiple of 64 bytes; the central directory has no
    extra field. (No ZIP64: the test files are small.)"""
    out, central = bytearray(), bytearray()
    for name, data in members:
        name = name.encode()
        off = len(out)
        start = off + 30 + len(name) + 4
        pad = -start % 64
        extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
        crc = zlib.crc32(data)
        out += struct.pack("<IHHHHHIIIHH", 0x04034b50, 20, 0, 0, 0, 0x21, crc, len(data), len(data),
                           len(name), len(extra)) + name + extra + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 20, 20, 0, 0, 0, 0x21, crc,
                               len(data), len(data), len(name), 0, 0, 0, 0, 0, off) + name
    cd = len(out)
    out += central + struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, len(members), len(members),
                                 len(central), cd, 0)
    return bytes(out)


def write_checkpoint(path, obj, storages, top="archive", byteorder=None, compress=(),
                     pickle_bytes=None, extra_members=(), aligned=False):
    """The zip torch.save writes: TOP/data.pkl, TOP/byteorder, TOP/data/KEY
    (stored unless its key is in `compress`), TOP/version; with `aligned`,
    laid out by torch's own writer (torch_zip), stored members only."""
    pk = pickle_bytes if pickle_bytes is not None else Pickle().value(obj).stop()
    if aligned:
        members = [(top + "/data.pkl", pk)]
        if byteorder:
            members.append((top + "/byteorder", byteorder.encode()))
        for s in sorted(storages, key=lambda s: s.key):
            data = (s.array.byteswap() if byteorder == "big" else s.array).tobytes()
            members.append((top + "/data/" + s.key, data))
        members += [(top + "/" + n, d) for n, d in extra_members]
        members.append((top + "/version", b"3\n"))
        with open(path, "wb") as f:
            f.write(torch_zip(members))
        return
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr(top + "/data.pkl", pk)
        if byteorder:
            z.writestr(top + "/byteorder", byteorder)
        for s in sorted(storages, key=lambda s: s.key):
            data = (s.array.byteswap() if byteorder == "big" else s.array).tobytes()
            z.writestr(zipfile.ZipInfo(top + "/data/" + s.key),
                       data, zipfile.ZIP_DEFLATED if s.key in compress else zipfile.ZIP_STORED)
        for name, data in extra_members:
            z.writestr(top + "/" + name, data)
        z.writestr(top + "/version", "3\n")
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def tensors_of(obj, name=""):
    """(name, Tensor) in pickle order, dict keys joined with '.'."""
    if isinstance(obj, Param):
        obj = obj.t
    if isinstance(obj, Tensor):
        yield name, obj
    elif isinstance(obj, (list, tuple)) and _has_tensor(obj):
        for i, v in enumerate(obj):
            yield from tensors_of(v, "%s.%d" % (name, i) if name else str(i))
    elif isinstance(obj, dict) and obj:
        for k, v in obj.items():
            yield from tensors_of(v, "%s.%s" % (name, k) if name else str(k))


def _has_tensor(v):
    if isinstance(v, (Tensor, Param)):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_tensor(x) for x in v)
    return isinstance(v, dict) and any(_has_tensor(x) for x in v.values())


def metadata_of(obj, name="", out=None):
    out = {} if out is None else out
    if isinstance(obj, dict) and (obj or not name):
        for k, v in obj.items():
            metadata_of(v, "%s.%s" % (name, k) if name else str(k), out)
    elif not isinstance(obj, (Tensor, Param)):
        out[name] = json.loads(json.dumps(_doc(obj, name)))
    return out


def _doc(v, name):
    """As modelfs shows a value: ints past 64 bits as hex strings, a
    tensor inside a list as {"tensor": its name}."""
    if isinstance(v, (Tensor, Param)):
        return {"tensor": name}
    if isinstance(v, (list, tuple)):
        return [_doc(x, "%s.%d" % (name, i)) for i, x in enumerate(v)]
    if isinstance(v, dict):
        return {k: _doc(x, "%s.%s" % (name, k)) for k, x in v.items()}
    if isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**63:
        return ("-0x%x" if v < 0 else "0x%x") % abs(v)
    return v


def write_model(out, fname, obj, storages, top=None, byteorder=None, compress=(), notes=""):
    top = top or os.path.splitext(fname)[0]
    path = os.path.join(out, fname)
    write_checkpoint(path, obj, storages, top, byteorder, compress)
    named = list(tensors_of(obj))
    first, by_key = {}, {}
    for n, t in named:
        by_key.setdefault(t.s.key, []).append(n)
    tensors = []
    for n, t in named:
        data = t.c_order(byteorder == "big")
        dtype = t.s.dtype if not t.dtype_v3 else t.dtype_v3
        e = {"name": n, "dtype": dtype, "shape": list(t.shape), "nbytes": len(data),
             "sha256": sha(data), "stride": list(t.stride), "storage_offset": t.offset,
             "contiguous": bool(t.c_order() == _flat(t)), "storage_type": t.s.type,
             "storage_key": t.s.key, "zip_member": "%s/data/%s" % (top, t.s.key)}
        if id(t) in first:
            e["same_object_as"] = first[id(t)]
        first.setdefault(id(t), n)
        others = [m for m in by_key[t.s.key] if m != n]
        if others:
            e["shares_storage_with"] = others
        tensors.append(e)
    expect = {"schema": "fixture-expect/1", "fixture": fname, "format": "pytorch",
              "expect": "readable", "made_by": "scripts/gen_pytorch.py", "notes": notes,
              "file_size": os.path.getsize(path), "metadata": metadata_of(obj),
              "tensor_count": len(tensors), "tensors": tensors}
    with open(path + ".expect.json", "w") as f:
        json.dump(expect, f, indent=1, ensure_ascii=False)


def _flat(t):
    """The bytes of the run [offset, offset + count) of the storage: equal
    to the C-order bytes exactly when the view is contiguous (or empty)."""
    arr = t.s.array.view("u%d" % V3_WIDTHS[t.dtype_v3]) if t.dtype_v3 else t.s.array
    a = arr.view(np.uint8)
    item = arr.dtype.itemsize
    n = int(np.prod(t.shape)) * item
    return a[t.offset * item:t.offset * item + n].tobytes() if n else b""


def bf16(values):
    """bfloat16 bits (the top half of float32), as numpy has no bfloat16."""
    return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)

    # Every storage dtype, plus _rebuild_tensor_v3 with a dtype argument.
    arrays = {
        "float32": rng.standard_normal(6).astype(np.float32),
        "float64": rng.standard_normal(3),
        "float16": rng.standard_normal(5).astype(np.float16),
        "int64": np.array([-2**63, 2**63 - 1, 0, 5], np.int64),
        "int32": np.arange(-3, 3, dtype=np.int32),
        "int16": np.array([-32768, 32767, 1], np.int16),
        "int8": np.array([-128, 127, 0, 1], np.int8),
        "uint8": np.arange(250, 256, dtype=np.uint8),
        "bool": np.array([True, False, True]),
        "complex64": (rng.standard_normal(2) + 1j).astype(np.complex64),
        "complex128": rng.standard_normal(2) * 1j,
    }
    storages, obj = [], {}
    for i, (dt, a) in enumerate(arrays.items()):
        s = Storage(str(i), a)
        storages.append(s)
        obj["t_" + dt] = Tensor(s, 0, a.shape, (1,))
    s = Storage(str(len(storages)), bf16([1.5, -2.0, 3.25, 0.0]), ("BFloat16Storage", "bfloat16"))
    storages.append(s)
    obj["t_bfloat16"] = Tensor(s, 0, (2, 2), (2, 1))
    write_model(out, "dtypes.pt", obj, storages, notes="every storage dtype")

    # Newer torch: an UntypedStorage (numel in bytes) and the dtype as an
    # argument of _rebuild_tensor_v3.
    s = Storage("0", np.array([1, 2, 65535], np.uint16), ("UntypedStorage", "uint8"))
    s.array = s.array.view(np.uint8)
    obj = {"v3_uint16": Tensor(s, 0, (3,), (1,), dtype_v3="uint16")}
    write_model(out, "v3.pt", obj, [s], notes="_rebuild_tensor_v3 with a dtype")

    # torch >= 2.1 as it saves every dtype with no storage class: each an
    # UntypedStorage of torch.storage (numel in bytes), the dtype the last
    # argument of _rebuild_tensor_v3; offsets and strides in elements; a
    # transposed view and two views sharing one storage among them.
    storages, obj = [], {}
    for i, (dt, w) in enumerate(V3_WIDTHS.items()):
        raw = bytes((i * 37 + k * 11) & 0xFF for k in range(6 * w + w))
        s = untyped(str(i), raw)
        storages.append(s)
        obj["t_" + dt] = Tensor(s, 1, (2, 3), (3, 1), dtype_v3=dt)
    s = storages[V3_WIDTHS_INDEX["float8_e4m3fn"]]
    obj["float8_e4m3fn_t"] = Tensor(s, 1, (3, 2), (1, 3), dtype_v3="float8_e4m3fn")
    s = storages[V3_WIDTHS_INDEX["uint16"]]
    obj["uint16_tail"] = Tensor(s, 4, (3,), (1,), dtype_v3="uint16")
    write_model(out, "v3_dtypes.pt", obj, storages,
                notes="torch >= 2.1: every _rebuild_tensor_v3 dtype over a torch.storage.UntypedStorage")

    # Nested dicts, metadata of every kind, names with / . : and unicode.
    w = Storage("0", np.arange(6, dtype=np.float32))
    b = Storage("1", np.ones(2, np.float32))
    u = Storage("2", np.array([7, 8], np.int64))
    obj = {
        "model": {"enc": {"0": {"weight": Tensor(w, 0, (2, 3), (3, 1))}, "bias": Tensor(b, 0, (2,), (1,))},
                  "a/b:c": Tensor(u, 0, (2,), (1,)), "ünï.名": Tensor(u, 1, (1,), (1,))},
        "epoch": 12, "lr": 0.5, "name": "run ✓", "flags": [True, None, 3], "pair": (1, "x"),
        "huge": 2**70, "neg": -2**40, "empty": {}, "cfg": {"depth": 4, "act": "gelu"},
        "param": Param(Tensor(b, 0, (2,), (1,))),
        "with_attr": Tensor(w, 1, (2, 2), (1, 2), from_type=True),
        "groups": [Tensor(w, 3, (3,), (1,)), {"lr": 0.1}],
        "sd": StateDict({"fc.weight": Tensor(w, 0, (3, 2), (2, 1))}),
    }
    write_model(out, "nested.pt", obj, [w, b, u], top="archive",
                notes="nested dicts and metadata; a tuple is a list, a big int a hex string")

    # Views: shared storages, transposed, sliced with steps, Fortran order,
    # an expanded (zero-stride) view, a tied (memo) tensor, a scalar, an empty one.
    base = Storage("0", np.arange(24, dtype=np.float32))
    tied = Tensor(Storage("1", np.arange(6, dtype=np.int16)), 0, (2, 3), (3, 1))
    one = Storage("2", np.array([3.5], np.float64))
    empty = Storage("3", np.zeros(0, np.float32))
    obj = {
        "whole": Tensor(base, 0, (4, 6), (6, 1)),
        "transposed": Tensor(base, 0, (6, 4), (1, 6)),
        "rows": Tensor(base, 6, (2, 6), (6, 1)),
        "stepped": Tensor(base, 1, (3, 2), (8, 3)),
        "fortran": Tensor(base, 0, (2, 3, 4), (1, 2, 6)),
        "expanded": Tensor(base, 5, (3, 4), (0, 1)),
        "broadcast": Tensor(base, 2, (5,), (0,)),
        "tied_a": tied, "tied_b": tied,
        "scalar": Tensor(one, 0, (), ()),
        "empty": Tensor(empty, 0, (0, 4), (4, 1)),
    }
    write_model(out, "views.pt", obj, [base, tied.s, one, empty],
                notes="views of shared storages: contiguous ones in place, the others made in C order")

    # Big-endian storages (byteorder "big"): served as stored.
    f = Storage("0", np.array([1.0, -2.5, 3.0, 4.0], np.float32))
    i = Storage("1", np.array([1, 256, -2], np.int16))
    obj = {"f": Tensor(f, 0, (2, 2), (2, 1)), "ft": Tensor(f, 0, (2, 2), (1, 2)),
           "i": Tensor(i, 0, (3,), (1,))}
    write_model(out, "bigendian.pt", obj, [f, i], byteorder="big",
                notes="byteorder big: sha256 of the big-endian bytes as stored")

    # A compressed storage member: made on open.
    c = Storage("0", np.arange(64, dtype=np.int32))
    obj = {"packed": Tensor(c, 0, (8, 8), (8, 1)), "packed_t": Tensor(c, 0, (8, 8), (1, 8))}
    write_model(out, "deflated.pt", obj, [c], compress=("0",),
                notes="a Deflate storage member")
    print("gen_pytorch: models written to %s" % out)


if __name__ == "__main__":
    main(sys.argv[1])
