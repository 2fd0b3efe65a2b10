#!/usr/bin/python3
"""Writes the project's own RTen test models, each with NAME.expect.json in
the fixture-expect/1 schema (../shared/fixtures/README.md), independently of
modelfs: the flatbuffer is built with Debian's python3-flatbuffers from the
layout in schemas/rten.fbs, and the expectations come from the arrays fed in.

usage: gen_rten.py OUTDIR            all test models
       gen_rten.py --demo FILE.rten  the small example model of the README demo
"""
import hashlib
import json
import os
import struct
import sys

import flatbuffers
import numpy as np

# Union / enum values (schemas/rten.fbs).
KIND_OPERATOR, KIND_CONSTANT, KIND_VALUE = 1, 2, 3
CDATA = {"float32": 1, "int32": 2, "int8": 3, "uint8": 4}      # ConstantData
CDTYPE = {"int32": 0, "float32": 1, "int8": 2, "uint8": 3}      # ConstantDataType
ATTRS_IF, ATTRS_LOOP = 39, 49
OP_ADD, OP_IF, OP_LOOP = 0, 81, 92  # OperatorType values (Add, If, Loop)
META_KEYS = ["onnx_hash", "description", "license", "commit", "code_repository",
             "model_repository", "run_id", "run_url"]


class Const:
    def __init__(self, name, array, inline=None, legacy=False):
        self.name = name
        self.array = np.ascontiguousarray(array)
        self.inline = inline      # None: the V2 rule (<= 16 elements inline)
        self.legacy = legacy      # no dtype field: dtype from the union (old files)

    @property
    def dtype(self):
        return str(self.array.dtype)


class Op:
    """An operator node; `graphs` maps attribute name -> Graph."""
    def __init__(self, name, op, attrs_type=0, graphs=None, inputs=(), outputs=()):
        self.name, self.op, self.attrs_type = name, op, attrs_type
        self.graphs = graphs or {}
        self.inputs, self.outputs = list(inputs), list(outputs)


class Value:
    def __init__(self, name):
        self.name = name


class Graph:
    def __init__(self, nodes, inputs=(), outputs=()):
        self.nodes, self.inputs, self.outputs = nodes, list(inputs), list(outputs)


def vec(b, kind, items):
    size = {"u32": 4, "i32": 4, "off": 4}[kind]
    b.StartVector(size, len(items), size)
    for x in reversed(items):
        {"u32": b.PrependUint32, "i32": b.PrependInt32, "off": b.PrependUOffsetTRelative}[kind](x)
    return b.EndVector()


def raw_vec(b, data, elem):
    b.StartVector(elem, len(data) // elem, max(elem, 4))
    b.head = b.head - len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    return b.EndVector()


class Writer:
    def __init__(self, v2):
        self.v2 = v2
        self.b = flatbuffers.Builder(1024)
        self.external = bytearray()
        self.expect = []

    def const(self, c, graph_path):
        b = self.b
        inline = (not self.v2) or (c.inline if c.inline is not None else c.array.size <= 16)
        # One copy (tobytes), not two (astype copies even an array already
        # little-endian): 256 MiB in mount.npy.big.
        data = np.ascontiguousarray(c.array, dtype=c.array.dtype.newbyteorder("<")).tobytes()
        shape = vec(b, "u32", list(c.array.shape))
        cdata = None
        if inline:
            v = raw_vec(b, data, c.array.dtype.itemsize)
            b.StartObject(1)
            b.PrependUOffsetTRelativeSlot(0, v, 0)
            cdata = b.EndObject()
        else:
            pad = (-len(self.external)) % 64
            self.external += b"\0" * pad
            offset = len(self.external)
            self.external += data
        b.StartObject(5)
        b.PrependUOffsetTRelativeSlot(0, shape, 0)
        if inline:
            b.PrependUint8Slot(1, CDATA[c.dtype], 0)
            b.PrependUOffsetTRelativeSlot(2, cdata, 0)
        if not c.legacy:
            b.PrependUint16Slot(3, CDTYPE[c.dtype], None)
        if not inline:
            b.PrependUint64Slot(4, offset, None)
        node = b.EndObject()
        self.expect.append({
            "name": c.name, "dtype": c.dtype, "shape": list(c.array.shape), "nbytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "graph_path": graph_path,
            "storage": "inline" if inline else "external",
        })
        return node

    def graph(self, g, graph_path):
        b = self.b
        index = {n.name: i for i, n in enumerate(g.nodes)}
        nodes = []
        for n in g.nodes:
            if isinstance(n, Const):
                kind, data = KIND_CONSTANT, self.const(n, graph_path)
            elif isinstance(n, Value):
                b.StartObject(2)
                kind, data = KIND_VALUE, b.EndObject()
            else:
                kind, data = KIND_OPERATOR, self.op(n, index, graph_path)
            name = b.CreateString(n.name.encode("utf-8", "surrogateescape"))
            b.StartObject(3)
            b.PrependUOffsetTRelativeSlot(0, name, 0)
            b.PrependUint8Slot(1, kind, 0)
            b.PrependUOffsetTRelativeSlot(2, data, 0)
            nodes.append(b.EndObject())
        nv = vec(b, "off", nodes)
        iv = vec(b, "u32", [index[x] for x in g.inputs])
        ov = vec(b, "u32", [index[x] for x in g.outputs])
        b.StartObject(4)
        b.PrependUOffsetTRelativeSlot(0, nv, 0)
        b.PrependUOffsetTRelativeSlot(1, iv, 0)
        b.PrependUOffsetTRelativeSlot(2, ov, 0)
        return b.EndObject()

    def op(self, o, index, graph_path):
        b = self.b
        attrs = None
        if o.graphs:
            order = ["then_branch", "else_branch"] if o.attrs_type == ATTRS_IF else ["body"]
            subs = {k: self.graph(g, graph_path + [o.name, k]) for k, g in o.graphs.items()}
            b.StartObject(len(order))
            for slot, key in enumerate(order):
                if key in subs:
                    b.PrependUOffsetTRelativeSlot(slot, subs[key], 0)
            attrs = b.EndObject()
        ins = vec(b, "i32", [index.get(x, -1) for x in o.inputs])
        outs = vec(b, "i32", [index.get(x, -1) for x in o.outputs])
        b.StartObject(5)
        b.PrependUint8Slot(0, o.op, 0)
        if attrs is not None:
            b.PrependUint8Slot(1, o.attrs_type, 0)
            b.PrependUOffsetTRelativeSlot(2, attrs, 0)
        b.PrependUOffsetTRelativeSlot(3, ins, 0)
        b.PrependUOffsetTRelativeSlot(4, outs, 0)
        return b.EndObject()

    def finish(self, graph, metadata):
        b = self.b
        g = self.graph(graph, [])
        strs = {k: b.CreateString(v) for k, v in metadata.items()}
        b.StartObject(len(META_KEYS))
        for i, k in enumerate(META_KEYS):
            if k in strs:
                b.PrependUOffsetTRelativeSlot(i, strs[k], 0)
        md = b.EndObject()
        b.StartObject(3)
        b.PrependInt32Slot(0, 1, 0)
        b.PrependUOffsetTRelativeSlot(1, g, 0)
        b.PrependUOffsetTRelativeSlot(2, md, 0)
        b.Finish(b.EndObject())
        model = bytes(b.Output())
        if not self.v2:
            return model
        model_off = 32
        tensor_off = (model_off + len(model) + 63) // 64 * 64
        header = b"RTEN" + struct.pack("<IQQQ", 2, model_off, len(model), tensor_off)
        return header + model + b"\0" * (tensor_off - model_off - len(model)) + bytes(self.external)


def write_model(outdir, name, graph, v2=True, metadata=None):
    metadata = metadata or {}
    w = Writer(v2)
    data = w.finish(graph, metadata)
    path = os.path.join(outdir, name)
    with open(path, "wb") as f:
        f.write(data)
    expect = {
        "schema": "fixture-expect/1", "fixture": name, "format": "rten", "expect": "readable",
        "made_by": "modelfs scripts/gen_rten.py", "file_size": len(data),
        "file_sha256": hashlib.sha256(data).hexdigest(), "format_version": 2 if v2 else 1,
        "metadata": metadata, "schema_version": 1,
        "tensor_count": len(w.expect), "tensors": w.expect,
    }
    with open(path + ".expect.json", "w") as f:
        json.dump(expect, f, indent=1, ensure_ascii=False)
        f.write("\n")


def rng_array(seed, shape, dtype):
    r = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return r.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return r.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


def names_graph(legacy=False):
    """Every naming edge case the contract documents."""
    names = ["", "a/b", "%", "%41", ".hidden", ".", "..", "ctrl\x01\x1f\x7f", "sp ace",
             "x" * 300, "x" * 299 + "y", "é" * 200, "dup", "dup", "dup", "dup%~2",
             "ユニコード/名前.β", "a:b.c", "\\back", "tab\there", "new\nline"]
    dtypes = ["float32", "int32", "int8", "uint8"]
    nodes = []
    for i, n in enumerate(names):
        shape = [(3, 7), (2,), (), (0, 3), (40,)][i % 5]
        nodes.append(Const(n, rng_array(i, shape, dtypes[i % 4]), legacy=legacy))
    nodes.append(Value("input"))
    nodes.append(Op("add", OP_ADD, inputs=["input", "a/b"], outputs=["out"]))
    nodes.append(Value("out"))
    return Graph(nodes, inputs=["input"], outputs=["out"])


def nested_graph():
    """If inside a Loop body, and two If nodes that share a name."""
    inner_then = Graph([Const("w", rng_array(1, (20,), "float32")), Const("w/small", rng_array(2, (2,), "int8"))])
    inner_else = Graph([Const("w", rng_array(3, (4, 5), "int32"))])
    body = Graph([
        Const("body.k", rng_array(4, (17,), "uint8")),
        Op("inner/if", OP_IF, ATTRS_IF, {"then_branch": inner_then, "else_branch": inner_else}),
    ])
    top_then = Graph([Const("t", rng_array(5, (3,), "float32"))])
    top_else = Graph([Const("t", rng_array(6, (30,), "float32"))])
    again = Graph([Const("t", rng_array(7, (1,), "float32"))])
    return Graph([
        Const("w", rng_array(8, (64,), "float32")),
        Op("loop", OP_LOOP, ATTRS_LOOP, {"body": body}),
        Op("if", OP_IF, ATTRS_IF, {"then_branch": top_then, "else_branch": top_else}),
        Op("if", OP_IF, ATTRS_IF, {"then_branch": again}),
    ])


def many_graph(n):
    return Graph([Const("layer%05d/weight" % i, rng_array(i, (i % 7 + 1, 3), "float32")) for i in range(n)])


def demo_graph():
    r = np.random.default_rng(7)
    return Graph([
        Value("image"),
        Const("encoder/fc1.weight", r.standard_normal((64, 784)).astype("float32")),
        Const("encoder/fc1.bias", r.standard_normal((64,)).astype("float32")),
        Const("head/fc2.weight", r.standard_normal((10, 64)).astype("float32")),
        Const("head/fc2.bias", r.standard_normal((10,)).astype("float32")),
        Const("labels.lut", np.arange(10, dtype="int32")),
        Op("fc1", 20, inputs=["image", "encoder/fc1.weight", "encoder/fc1.bias"], outputs=["hidden"]),
        Value("hidden"),
        Op("fc2", 20, inputs=["hidden", "head/fc2.weight", "head/fc2.bias"], outputs=["logits"]),
        Value("logits"),
    ], inputs=["image"], outputs=["logits"])


def main(argv):
    if len(argv) == 3 and argv[1] == "--demo":
        out = os.path.abspath(argv[2])
        write_model(os.path.dirname(out), os.path.basename(out), demo_graph(),
                    metadata={"description": "A tiny two-layer classifier made by modelfs's demo",
                              "license": "CC0-1.0"})
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    meta = {k: "value of %s ✓" % k for k in META_KEYS}
    write_model(out, "names.rten", names_graph(), metadata=meta)
    write_model(out, "names.v1.rten", names_graph(), v2=False, metadata={"description": "V1"})
    write_model(out, "legacy.v1.rten", names_graph(legacy=True), v2=False)
    write_model(out, "nested.rten", nested_graph())
    write_model(out, "nested.v1.rten", nested_graph(), v2=False)
    write_model(out, "many.rten", many_graph(3000))
    write_model(out, "demo.rten", demo_graph(), metadata={"description": "demo"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
