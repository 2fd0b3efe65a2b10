#!/usr/bin/python3
"""Writes the project's own TFLite test models, each with NAME.expect.json in
the fixture-expect/1 schema (../shared/fixtures/README.md), independently of
modelfs: each model is written as JSON and made into a flatbuffer by Debian's
flatc with schemas/tflite.fbs (whose field order, types and ids are the
format's), and the expectations come from the arrays fed in.

Models: every TensorType, names the names rule must encode, quantization
per tensor and per axis, a string tensor, packed int4/uint4/int2, an empty
buffer and a tensor without one (no files), metadata and a signature
(dtypes.tflite); several subgraphs called by WHILE, IF and CALL_ONCE with
names of their own and tensors named as the main graph's, and a sparse
tensor (subgraphs.tflite); buffers past the flatbuffer by offset/size, as
files over 2 GiB have them (offset.tflite); tensors whose bytes disagree
with their type or shape, served with a problem (problems.tflite).

usage: gen_tflite.py OUTDIR
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "schemas", "tflite.fbs")

# TensorType: numpy dtype (None: no numpy form), in schema order.
TYPES = ["FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL", "INT16", "COMPLEX64",
         "INT8", "FLOAT64", "COMPLEX128", "UINT64", "RESOURCE", "VARIANT", "UINT32", "UINT16",
         "INT4", "BFLOAT16", "INT2", "UINT4", "FLOAT8_E4M3FN", "FLOAT8_E5M2"]
NUMPY = {"FLOAT32": "float32", "FLOAT16": "float16", "INT32": "int32", "UINT8": "uint8",
         "INT64": "int64", "BOOL": "bool", "INT16": "int16", "COMPLEX64": "complex64",
         "INT8": "int8", "FLOAT64": "float64", "COMPLEX128": "complex128", "UINT64": "uint64",
         "UINT32": "uint32", "UINT16": "uint16"}
# Types numpy lacks: the dtype modelfs names, bytes per element (0: packed,
# elements per byte in PACKED) and the numpy type their bytes are made from.
OTHER = {"BFLOAT16": ("bfloat16", "uint16"), "FLOAT8_E4M3FN": ("float8_e4m3fn", "uint8"),
         "FLOAT8_E5M2": ("float8_e5m2", "uint8")}
PACKED = {"INT4": ("int4", 2, 4), "UINT4": ("uint4", 2, 4), "INT2": ("int2", 4, 2)}


def rng(seed):
    return np.random.default_rng(seed)


def numeric(seed, shape, dtype):
    r = rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return r.standard_normal(shape).astype(dt)
    if dt.kind == "c":
        return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dt)
    if dt.kind == "b":
        return r.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dt)
    return r.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


def pack(values, bits):
    """Sub-byte values packed as the TFLite converter does: first element
    in the low bits of the first byte."""
    per = 8 // bits
    out = bytearray((len(values) + per - 1) // per)
    for i, v in enumerate(values):
        out[i // per] |= (v & ((1 << bits) - 1)) << (bits * (i % per))
    return bytes(out)


def string_buffer(strings):
    """TFLite's string buffer: int32 count, count + 1 int32 offsets from the
    buffer's start, then the bytes."""
    raw = [s.encode("utf-8", "surrogateescape") if isinstance(s, str) else s for s in strings]
    head = 4 * (len(raw) + 2)
    offs, at = [], head
    for b in raw:
        offs.append(at)
        at += len(b)
    offs.append(at)
    return (np.array([len(raw)] + offs, "<i4").tobytes() + b"".join(raw))


class Model:
    """A TFLite model as flatc's JSON, and the tensor files it should give."""

    def __init__(self, name):
        self.name = name
        self.buffers = [{}]       # buffer 0: the empty sentinel
        self.external = []        # (buffer index, bytes) placed past the flatbuffer
        self.opcodes = []
        self.subgraphs = []
        self.expect = []
        self.metadata = []
        self.signatures = []

    def buffer(self, data, past=False):
        """A new buffer holding `data` (inside the flatbuffer, or past it)."""
        self.buffers.append({})
        i = len(self.buffers) - 1
        if past:
            self.external.append((i, bytes(data)))
        elif data is not None:
            self.buffers[i] = {"data": list(bytes(data))}
        return i

    def opcode(self, code, custom=None, version=1):
        key = (code, custom, version)
        for i, oc in enumerate(self.opcodes):
            if oc["_key"] == key:
                return i
        oc = {"_key": key, "builtin_code": code, "version": version,
              "deprecated_builtin_code": min(code, 127) if isinstance(code, int) else 0}
        if custom is not None:
            oc["custom_code"] = custom
        self.opcodes.append(oc)
        return len(self.opcodes) - 1

    def graph(self, name):
        g = {"tensors": [], "inputs": [], "outputs": [], "operators": []}
        if name is not None:
            g["name"] = name
        self.subgraphs.append(g)
        return len(self.subgraphs) - 1

    def tensor(self, sg, name, ttype, shape, data=None, past=False, expect=None, buffer=None,
               **fields):
        """Adds a tensor; `data` its buffer's bytes (None: no buffer);
        `expect` what its file should be (None: no file)."""
        t = {"name": name, "type": ttype, "shape": list(shape)}
        if buffer is None and data is not None:
            buffer = self.buffer(data, past)
        if buffer is not None:
            t["buffer"] = buffer
        t.update(fields)
        tensors = self.subgraphs[sg]["tensors"]
        tensors.append(t)
        if expect is not None:
            e = {"name": name, "subgraph": sg, "tensor_index": len(tensors) - 1,
                 "tflite_type": TYPES[ttype] if isinstance(ttype, int) and 0 <= ttype < len(TYPES) else ttype,
                 "buffer": buffer, "storage": "offset" if past else "inline"}
            e.update(expect)
            if "sha256" not in e and data is not None:
                e["sha256"] = hashlib.sha256(bytes(data)).hexdigest()
                e["nbytes"] = len(data)
            if "quantization" in fields:
                e["quantization"] = expected_quant(fields["quantization"])
            self.expect.append(e)
        return len(tensors) - 1

    def array(self, sg, name, arr, ttype, past=False, **fields):
        arr = np.ascontiguousarray(arr)
        data = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        return self.tensor(sg, name, ttype, arr.shape, data, past,
                           expect={"dtype": str(arr.dtype), "shape": list(arr.shape)}, **fields)

    def op(self, sg, code, inputs, outputs, custom=None, **fields):
        o = {"opcode_index": self.opcode(code, custom), "inputs": inputs, "outputs": outputs}
        o.update(fields)
        self.subgraphs[sg]["operators"].append(o)

    def json(self, offsets):
        buffers = [dict(b) for b in self.buffers]
        for i, data in self.external:
            buffers[i] = {"offset": offsets[i], "size": len(data)}
        doc = {"version": 3,
               "operator_codes": [{k: v for k, v in oc.items() if k != "_key"} for oc in self.opcodes],
               "subgraphs": self.subgraphs, "description": "made by modelfs gen_tflite.py ✓",
               "buffers": buffers}
        if self.metadata:
            doc["metadata"] = self.metadata
        if self.signatures:
            doc["signature_defs"] = self.signatures
        return doc

    def flatc(self, doc, tmp):
        src = os.path.join(tmp, "m.json")
        with open(src, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)
        subprocess.run(["flatc", "-b", "-o", tmp, SCHEMA, src], check=True, capture_output=True)
        with open(os.path.join(tmp, "m.tflite"), "rb") as f:
            return f.read()

    def write(self, outdir):
        tmp = tempfile.mkdtemp(prefix="gen_tflite-")
        try:
            # Buffers past the flatbuffer: their offsets (8-byte fields, so
            # any value gives the same flatbuffer size) once its size is known.
            placeholder = {i: (1 << 40) + i for i, _ in self.external}
            fb = self.flatc(self.json(placeholder), tmp)
            offsets, at, tail = {}, (len(fb) + 15) // 16 * 16, b""
            for i, data in self.external:
                offsets[i] = at + len(tail)
                tail += data + b"\0" * ((-len(data)) % 16)
            if self.external:
                fb2 = self.flatc(self.json(offsets), tmp)
                assert len(fb2) == len(fb), "flatbuffer size changed with the offsets"
                fb = fb2 + b"\0" * (at - len(fb2)) + tail
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        assert fb[4:8] == b"TFL3"
        for e in self.expect:
            if e["storage"] == "offset":
                e["offset"] = offsets[e["buffer"]]
        path = os.path.join(outdir, self.name)
        with open(path, "wb") as f:
            f.write(fb)
        expect = {
            "schema": "fixture-expect/1", "fixture": self.name, "format": "tflite",
            "expect": "readable", "made_by": "modelfs scripts/gen_tflite.py (flatc %s)" % flatc_version(),
            "file_size": len(fb), "file_sha256": hashlib.sha256(fb).hexdigest(), "format_version": 3,
            "metadata": {"description": "made by modelfs gen_tflite.py ✓"},
            "tensor_count": len(self.expect), "tensors": self.expect,
            "notes": "Tensors match by name and subgraph (index). dtype null: the raw bytes "
                     "(RESOURCE, VARIANT, or a problem: shape is then the declared one). "
                     "int4/uint4/int2 are packed, first element in the low bits.",
        }
        with open(path + ".expect.json", "w", encoding="utf-8") as f:
            json.dump(expect, f, indent=1, ensure_ascii=False)
            f.write("\n")


def flatc_version():
    r = subprocess.run(["flatc", "--version"], capture_output=True, text=True)
    return r.stdout.strip().split()[-1] if r.returncode == 0 else "?"


def f32(x):
    return float(np.float32(x))


def expected_quant(q):
    """The table's quantization: the parameters that say something."""
    out = {}
    if q.get("scale"):
        out["scale"] = [f32(x) for x in q["scale"]]
    if q.get("zero_point"):
        out["zero_point"] = list(q["zero_point"])
    if out:
        out["quantized_dimension"] = q.get("quantized_dimension", 0)
    for k in ("min", "max"):
        if q.get(k):
            out[k] = [f32(x) for x in q[k]]
    return out or None


NAMES = ["", "a/b", "%", ".hidden", "..", "ctrl\x01\x1f\x7f", "x" * 300, "é" * 200, "dup", "dup",
         "dup", "dup%~2", "ユニコード/名前.β", "sp ace", "back\\slash"]


def dtypes_model():
    m = Model("dtypes.tflite")
    g = m.graph("main")
    inp = m.tensor(g, "input", 0, [1, 4], shape_signature=[-1, 4])   # no buffer: no file
    # Every TensorType with data.
    for t, name in enumerate(TYPES):
        shape = [(2, 3), (5,), (), (3, 1, 2), (7,)][t % 5]
        n = int(np.prod(shape))
        tname = "type/" + name.lower()
        if name in NUMPY:
            m.array(g, tname, numeric(t, shape, NUMPY[name]), t)
        elif name in OTHER:
            dtype, base = OTHER[name]
            arr = numeric(t, shape, base)
            m.tensor(g, tname, t, shape, arr.astype("<" + arr.dtype.str[1:]).tobytes(),
                     expect={"dtype": dtype, "shape": list(shape)})
        elif name in PACKED:
            dtype, per, bits = PACKED[name]
            vals = [int(v) for v in rng(t).integers(0, 1 << bits, size=n)]
            m.tensor(g, tname, t, shape, pack(vals, bits),
                     expect={"dtype": dtype, "shape": list(shape), "element_bits": bits})
        elif name == "STRING":
            strs = ["", "héllo", "quote\" back\\ nl\n", "x" * 40, "✓"][:n] + ["s%d" % i for i in range(max(0, n - 5))]
            m.tensor(g, tname, t, shape, string_buffer(strs),
                     expect={"dtype": "string", "shape": list(shape), "values": strs})
        else:  # RESOURCE, VARIANT: their bytes
            data = bytes(range(t, t + 12))
            m.tensor(g, tname, t, shape, data, expect={"dtype": None, "shape": None})
    # Names the names rule must encode (float32 [2], distinct values).
    for i, n in enumerate(NAMES):
        m.array(g, n, numeric(100 + i, (2,), "float32"), 0)
    # Quantization: per tensor (uint8, with min/max) and per axis (int8,
    # axis 1), int4 per axis.
    m.array(g, "q/per_tensor", numeric(200, (4, 4), "uint8"), 3,
            quantization={"scale": [0.0078125], "zero_point": [128], "min": [-1.0], "max": [0.9921875]})
    m.array(g, "q/per_axis", numeric(201, (2, 3, 2), "int8"), 9,
            quantization={"scale": [0.5, 0.25, 1.0 / 255], "zero_point": [0, -3, 7], "quantized_dimension": 1})
    vals = [int(v) for v in rng(202).integers(0, 16, size=12)]
    m.tensor(g, "q/int4", 17, (4, 3), pack(vals, 4),
             quantization={"scale": [0.1, 0.2, 0.3], "zero_point": [0, 0, 0], "quantized_dimension": 1},
             expect={"dtype": "int4", "shape": [4, 3], "element_bits": 4})
    m.tensor(g, "q/empty", 0, (2,), b"", quantization={})   # an empty buffer: no file
    m.array(g, "variable", numeric(203, (3,), "float32"), 0, is_variable=True)
    # A buffer shared by two tensors: two files of the same bytes.
    shared = numeric(204, (6,), "int16")
    b = m.buffer(shared.tobytes())
    for name in ("shared/a", "shared/b"):
        m.tensor(g, name, 7, (6,), shared.tobytes(), buffer=b,
                 expect={"dtype": "int16", "shape": [6]})
    out = m.tensor(g, "output", 0, [1, 4])
    m.subgraphs[g]["inputs"], m.subgraphs[g]["outputs"] = [inp], [out]
    m.op(g, 9, [inp, NAMES.index("a/b") + len(TYPES) + 1, -1], [out],
         builtin_options_type="FullyConnectedOptions", builtin_options={})
    m.op(g, 32, [out], [out], custom="MyCustomOp", custom_options=[1, 2, 3])
    m.op(g, 150, [out], [out])   # GELU: builtin_code past the deprecated byte
    m.metadata = [{"name": "min_runtime_version", "buffer": m.buffer(b"2.3.0" + b"\0" * 11)},
                  {"name": "binary/meta", "buffer": m.buffer(bytes(range(0, 256, 7)))}]
    m.signatures = [{"inputs": [{"name": "x", "tensor_index": inp}],
                     "outputs": [{"name": "y", "tensor_index": out}],
                     "signature_key": "serving_default", "subgraph_index": 0}]
    return m


def subgraphs_model():
    m = Model("subgraphs.tflite")
    main = m.graph("main")
    names = ["cond", "body", None, "a/b", "body", "sparse"]
    subs = [m.graph(n) for n in names]
    x = m.tensor(main, "x", 2, [])
    m.array(main, "w", numeric(1, (3,), "float32"), 0)
    for k, sg in enumerate(subs):
        # The same tensor names as the main graph's, other bytes.
        m.array(sg, "w", numeric(10 + k, (k + 1,), "float32"), 0)
        m.array(sg, "sub/const", numeric(20 + k, (2, 2), "int32"), 2)
        m.tensor(sg, "activation", 0, [1])
    m.op(main, 119, [x], [x], builtin_options_type="WhileOptions",
         builtin_options={"cond_subgraph_index": subs[0], "body_subgraph_index": subs[1]})
    m.op(main, 118, [x], [x], builtin_options_type="IfOptions",
         builtin_options={"then_subgraph_index": subs[2], "else_subgraph_index": subs[3]})
    m.op(main, 129, [], [], builtin_options_type="CallOnceOptions",
         builtin_options={"init_subgraph_index": subs[4]})
    # A sparse tensor (CSR over a 4x4 int8 matrix): its buffer holds the
    # stored values only.
    values = np.array([5, -2, 7, 1, 9], "int8")
    sg = subs[5]
    m.tensor(sg, "sparse/w", 9, (4, 4), values.tobytes(),
             sparsity={"traversal_order": [0, 1],
                       "dim_metadata": [{"format": "DENSE", "dense_size": 4},
                                        {"format": "SPARSE_CSR",
                                         "array_segments_type": "Int32Vector",
                                         "array_segments": {"values": [0, 2, 3, 3, 5]},
                                         "array_indices_type": "Uint8Vector",
                                         "array_indices": {"values": [0, 3, 1, 0, 2]}}]},
             expect={"dtype": "int8", "shape": [5], "dense_shape": [4, 4]})
    return m


def offset_model():
    """Buffers past the flatbuffer (Buffer.offset/size from the file's
    start), as files over 2 GiB are written, beside inline ones."""
    m = Model("offset.tflite")
    g = m.graph("main")
    m.array(g, "big/w", numeric(1, (64, 16), "float32"), 0, past=True)
    m.array(g, "big/q", numeric(2, (8, 4), "int8"), 9, past=True,
            quantization={"scale": [0.5, 0.25, 0.125, 2.0], "zero_point": [1, 2, 3, 4], "quantized_dimension": 1})
    m.array(g, "inline/b", numeric(3, (16,), "float32"), 0)
    strs = ["past", "the", "flatbuffer"]
    m.tensor(g, "big/s", 5, (3,), string_buffer(strs), past=True,
             expect={"dtype": "string", "shape": [3], "values": strs})
    # offset 1 is a writer's placeholder: the bytes are Buffer.data.
    data = numeric(4, (5,), "int32")
    b = m.buffer(data.tobytes())
    m.buffers[b]["offset"] = 1
    m.tensor(g, "placeholder", 2, (5,), data.tobytes(), buffer=b, expect={"dtype": "int32", "shape": [5]})
    return m


def problems_model():
    """Tensors whose bytes disagree with their declaration: each is its
    buffer's bytes, dtype bytes, with a problem."""
    m = Model("problems.tflite")
    g = m.graph("main")

    def bad(name, ttype, shape, data, **kw):
        m.tensor(g, name, ttype, shape, data, expect={"dtype": None, "shape": list(shape), "problem": True},
                 **kw)

    bad("short", 0, (4,), bytes(12))
    bad("negative", 0, (-1, 4), bytes(16))
    bad("unknown_type", 99, (2,), bytes(2))
    bad("overflow", 4, (2147483647, 2147483647, 2147483647), bytes(8))
    bad("strings/count", 5, (3,), string_buffer(["a", "b"]))
    bad("strings/offsets", 5, (1,), np.array([1, 12, 99], "<i4").tobytes() + b"abc")
    bad("int4/size", 17, (5,), bytes(2))
    m.array(g, "fine", numeric(1, (2,), "float32"), 0)
    return m


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if shutil.which("flatc") is None:
        print("gen_tflite: flatc is not installed (apt-get install flatbuffers-compiler)", file=sys.stderr)
        return 1
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    for m in (dtypes_model(), subgraphs_model(), offset_model(), problems_model()):
        m.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
