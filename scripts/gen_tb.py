#!/usr/bin/python3
"""Writes modelfs's own TensorBuffers (.tb) test models, each with
NAME.expect.json (schema fixture-expect/1, like ../shared/fixtures).

    /usr/bin/python3 scripts/gen_tb.py OUTDIR

Layout (russellwmy/tensorbuffers src/tensor_buffers_writer.rs): "TBS1", the
tensors' bytes back to back from offset 4, a TensorBuffersMetadata flatbuffer
without file identifier, its size as u32 LE, "TBS1". Field layout as in
schemas/tensorbuffers.fbs; id = FNV-1a-64 of the name's UTF-8 bytes + 0xFF.
Built with python3-flatbuffers' Builder. Output is deterministic.

  gen_many.tb      5000 tensors (float32) and a chain of operations
  gen_names.tb     duplicate, empty, unicode, long (> 255 bytes) and '/' names,
                   every data type, a scalar, zero-size data, unsorted ids, a model name
  gen_zero.tb      no tensors, no `operations` field (the older writer)
  gen_flagged.tb   tensors modelfs serves as raw bytes with a `problem`
  gen_outside.tb, gen_badsize.tb   refused (expect "corrupt")
"""

import hashlib
import json
import os
import struct
import sys

import flatbuffers
import numpy as np

MAGIC = b"TBS1"
DATA_TYPES = {"float32": 1, "float64": 2, "int8": 3, "int16": 4, "int32": 5, "int64": 6,
              "uint8": 7, "uint16": 8, "uint32": 9, "uint64": 10}
TB_NAMES = ["None", "Float32", "Float64", "Int8", "Int16", "Int32", "Int64", "UInt8",
            "UInt16", "UInt32", "UInt64"]
OPERATIONS = ("None Add Sub Mul Div Sqr Sqrt Sum Mean Argmax Sigmoid Tanh ReLU LeakyReLU "
              "Softmax MatMul Concat Transpose Flatten Reshape BatchNorm Dropout MaxPool "
              "AvgPool Conv2D FC Softplus Log Exp Abs Pow CrossEntropyLoss MSELoss L1Loss "
              "Adam SGD RMSProp").split()


def hash_key(name):
    h = 0xCBF29CE484222325
    for b in name.encode("utf-8") + b"\xff":
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


class T:
    """A tensor as written: name, data bytes, data type code (None = absent),
    shape (None = absent); offset/size override the natural placement."""

    def __init__(self, name, data, dtype, shape, offset=None, size=None, tid=None):
        self.name, self.data, self.shape = name, data, shape
        self.dtype = DATA_TYPES[dtype] if isinstance(dtype, str) else dtype
        self.offset, self.size = offset, size
        self.id = hash_key(name) if tid is None else tid


def arr(name, a):
    a = np.asarray(a)
    return T(name, a.tobytes(), a.dtype.name, list(a.shape))


def u_vector(b, values, size, prepend):
    b.StartVector(size, len(values), size)
    for v in reversed(values):
        prepend(v)
    return b.EndVector()


def metadata(tensors, operations, version="1.0.0", model=None):
    """operations: None = no field (old writer), else [(id, op, output, inputs)]."""
    b = flatbuffers.Builder(1024)
    toffs = []
    for t in tensors:
        shape = u_vector(b, t.shape, 4, b.PrependUint32) if t.shape is not None else None
        name = b.CreateString(t.name)
        b.StartObject(6)
        b.PrependUint64Slot(0, t.id, 0)
        b.PrependUint32Slot(5, t.size, 0)        # 0 is the default: omitted
        b.PrependUint32Slot(4, t.offset, 0)
        if shape is not None:
            b.PrependUOffsetTRelativeSlot(2, shape, 0)
        b.PrependUOffsetTRelativeSlot(1, name, 0)
        if t.dtype is not None:
            b.PrependInt8Slot(3, t.dtype, 0)
        toffs.append(b.EndObject())
    ooffs = []
    for oid, op, output, inputs in operations or []:
        iv = u_vector(b, inputs, 8, b.PrependUint64)
        b.StartObject(4)
        b.PrependUint64Slot(2, output, 0)
        b.PrependUint64Slot(0, oid, 0)
        b.PrependUOffsetTRelativeSlot(3, iv, 0)
        b.PrependInt8Slot(1, OPERATIONS.index(op), 0)
        ooffs.append(b.EndObject())
    ver = b.CreateString(version)
    mod = b.CreateString(model) if model is not None else None

    def offsets(offs):
        b.StartVector(4, len(offs), 4)
        for o in reversed(offs):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    tv = offsets(toffs)
    ov = offsets(ooffs) if operations is not None else None
    b.StartObject(4)
    if ov is not None:
        b.PrependUOffsetTRelativeSlot(3, ov, 0)
    b.PrependUOffsetTRelativeSlot(2, tv, 0)
    if mod is not None:
        b.PrependUOffsetTRelativeSlot(1, mod, 0)
    b.PrependUOffsetTRelativeSlot(0, ver, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def assemble(tensors, operations, **kw):
    body = bytearray(MAGIC)
    for t in tensors:
        if t.offset is None:
            t.offset = len(body)
            body += t.data
        if t.size is None:
            t.size = len(t.data)
    fb = metadata(tensors, operations, **kw)
    return bytes(body) + fb + struct.pack("<I", len(fb)) + MAGIC


def expect_entry(t, data, flagged=False):
    e = {"name": t.name, "dtype": None, "shape": None, "nbytes": len(data),
         "sha256": hashlib.sha256(data).hexdigest(), "id": t.id, "data_offset": t.offset}
    if not flagged:
        e["dtype"] = [k for k, v in DATA_TYPES.items() if v == t.dtype][0]
        e["shape"] = list(t.shape)
    e["problem"] = flagged
    return e


def write(outdir, fname, data, tensors, meta, expect="readable", error=None):
    path = os.path.join(outdir, fname)
    with open(path, "wb") as f:
        f.write(data)
    doc = {"schema": "fixture-expect/1", "fixture": fname, "format": "tensorbuffers",
           "expect": expect, "made_by": "modelfs scripts/gen_tb.py (python3-flatbuffers Builder)",
           "file_size": len(data), "file_sha256": hashlib.sha256(data).hexdigest(),
           "metadata": meta, "tensor_count": len(tensors), "tensors": tensors}
    if error:
        doc["error_contains"] = error
    with open(path + ".expect.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def ops_json(operations):
    return [{"id": i, "operation": op, "input_operations": list(ins), "output": out}
            for i, op, out, ins in operations]


def simple(outdir, fname, tensors, operations, model=None):
    data = assemble(tensors, operations, model=model)
    write(outdir, fname, data, [expect_entry(t, t.data) for t in tensors],
          {"version": "1.0.0", "model": model, "has_operations_field": operations is not None,
           "operations": ops_json(operations or [])})


def gen_many(outdir):
    rng = np.random.RandomState(5000)
    tensors = [arr(f"blocks.{i // 8}.w{i % 8}",
                   rng.standard_normal((1 + i % 4, 1 + i % 3)).astype(np.float32))
               for i in range(5000)]
    ops = [(1, "None", tensors[0].id, [])]
    for i in range(1, 40):
        ops.append((i + 1, OPERATIONS[1 + i % 36], tensors[i].id, [i] if i % 3 else [i, i - 1]))
    simple(outdir, "gen_many.tb", tensors, ops)


def gen_names(outdir):
    rng = np.random.RandomState(7)
    tensors = [
        arr("dup", np.arange(3, dtype=np.float32)),
        arr("dup", np.arange(4, dtype=np.int64)),
        arr("dup", np.arange(2, dtype=np.uint8)),
        arr("", np.float64([1.5, -2.5])),
        arr("ünïcode/名前", rng.standard_normal((2, 2)).astype(np.float32)),
        arr("n" * 300, np.int16([1, -2, 3])),
        arr("ü" * 150, np.uint16([7])),
        arr("a/b/c", np.int32([[1, 2], [3, 4]])),
        arr(".hidden%", np.int8([-1, 1])),
        arr("scalar", np.float32(2.0)),
        arr("empty", np.zeros((0, 3), np.float32)),
        arr("u32", np.uint32([1, 2**32 - 1])),
        arr("u64", np.uint64([0, 2**64 - 1])),
        arr("i64.edges", np.int64([-2**63, 2**63 - 1])),
    ]
    ops = [(2**64 - 1, "MatMul", tensors[4].id, [3, 2**63]), (3, "Softmax", tensors[0].id, []),
           (7, "None", tensors[1].id, [2**64 - 1])]
    simple(outdir, "gen_names.tb", tensors, ops, model="modelfs names test ✓")


def gen_zero(outdir):
    simple(outdir, "gen_zero.tb", [], None, model="empty model")


def gen_flagged(outdir):
    good = arr("good", np.arange(4, dtype=np.float32))
    mism = arr("count.mismatch", np.arange(5, dtype=np.float32))
    mism.shape = [2, 2]
    none = T("type.none", b"\x01\x02\x03", None, [3])
    unknown = T("type.unknown", b"\x01\x02", 42, [2])
    noshape = T("no.shape", np.arange(2, dtype=np.int32).tobytes(), "int32", None)
    magic = T("points.at.magic", b"", "uint8", [4], offset=0, size=4)
    tensors = [good, mism, none, unknown, noshape, magic]
    data = assemble(tensors, [])
    exp = [expect_entry(good, good.data)]
    for t in tensors[1:]:
        exp.append(expect_entry(t, data[t.offset:t.offset + t.size], flagged=True))
    write(outdir, "gen_flagged.tb", data, exp,
          {"version": "1.0.0", "model": None, "has_operations_field": True, "operations": []})


def gen_refused(outdir):
    t = arr("w", np.arange(4, dtype=np.float32))
    far = T("far", b"", "float32", [4], offset=1 << 20, size=16)
    write(outdir, "gen_outside.tb", assemble([t, far], []), [], {}, expect="corrupt",
          error="runs past the end of the file")
    data = bytearray(assemble([arr("w", np.arange(4, dtype=np.float32))], []))
    struct.pack_into("<I", data, len(data) - 8, len(data))
    write(outdir, "gen_badsize.tb", bytes(data), [], {}, expect="corrupt",
          error="metadata size")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_tb.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    gen_many(outdir)
    gen_names(outdir)
    gen_zero(outdir)
    gen_flagged(outdir)
    gen_refused(outdir)


if __name__ == "__main__":
    main()
