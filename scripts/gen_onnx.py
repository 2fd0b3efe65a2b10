#!/usr/bin/python3
"""Writes the project's own ONNX test models, each with NAME.expect.json in
the fixture-expect/1 schema (../shared/fixtures/README.md). The protobuf
bytes are written by hand from onnx/onnx.proto's field numbers (no onnx
package needed), and the expectations come from the numpy arrays fed in.

Covers every data type in raw_data and in its typed field (packed, split
into several packed runs, and one field per value), 4-bit and 2-bit types
packed in bytes, Constant ops (value, value_float(s), value_int(s),
value_string(s)), If / Loop / Scan subgraphs and a GRAPHS attribute,
external data in the folder and in a sub-folder, and names with / . : and
unicode. The helpers are imported by tests/mount/formats/onnx.py to write
hostile files.

usage: gen_onnx.py OUTDIR
"""
import hashlib
import json
import os
import struct
import sys

import numpy as np

# TensorProto.DataType -> (numpy-style name, typed field, numpy dtype of
# the values written, elements per byte for packed types)
FLOAT_DATA, INT32_DATA, STRING_DATA, INT64_DATA, DOUBLE_DATA, UINT64_DATA = 4, 5, 6, 7, 10, 11
FIELD_NAMES = {4: "float_data", 5: "int32_data", 6: "string_data", 7: "int64_data",
               10: "double_data", 11: "uint64_data"}
TYPES = {
    1: ("float32", FLOAT_DATA), 2: ("uint8", INT32_DATA), 3: ("int8", INT32_DATA),
    4: ("uint16", INT32_DATA), 5: ("int16", INT32_DATA), 6: ("int32", INT32_DATA),
    7: ("int64", INT64_DATA), 8: ("string", STRING_DATA), 9: ("bool", INT32_DATA),
    10: ("float16", INT32_DATA), 11: ("float64", DOUBLE_DATA), 12: ("uint32", UINT64_DATA),
    13: ("uint64", UINT64_DATA), 14: ("complex64", FLOAT_DATA), 15: ("complex128", DOUBLE_DATA),
    16: ("bfloat16", INT32_DATA), 17: ("float8_e4m3fn", INT32_DATA),
    18: ("float8_e4m3fnuz", INT32_DATA), 19: ("float8_e5m2", INT32_DATA),
    20: ("float8_e5m2fnuz", INT32_DATA), 21: ("uint4", INT32_DATA), 22: ("int4", INT32_DATA),
    23: ("float4_e2m1fn", INT32_DATA), 24: ("float8_e8m0fnu", INT32_DATA),
    25: ("uint2", INT32_DATA), 26: ("int2", INT32_DATA),
}
PER_BYTE = {21: 2, 22: 2, 23: 2, 25: 4, 26: 4}


# ---- protobuf wire format -------------------------------------------------

def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(num, wire):
    return varint(num << 3 | wire)


def f_varint(num, v):
    return key(num, 0) + varint(v)


def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode("utf-8")
    return key(num, 2) + varint(len(b)) + b


def f_fixed32(num, b4):
    return key(num, 5) + b4


def f_fixed64(num, b8):
    return key(num, 1) + b8


# ---- ONNX messages ----------------------------------------------------------

def tensor_proto(name, data_type, dims, body=b"", packed_dims=False):
    """A TensorProto: dims, data_type, name, then `body` (data fields)."""
    out = b""
    if packed_dims:
        out += f_bytes(1, b"".join(varint(d) for d in dims))
    else:
        out += b"".join(f_varint(1, d) for d in dims)
    out += f_varint(2, data_type)
    if name is not None:
        out += f_bytes(8, name)
    return out + body


def entry(k, v):
    return f_bytes(1, k) + f_bytes(2, v)


def external_body(location, offset=None, length=None, checksum=None):
    b = f_bytes(13, entry("location", location))
    if offset is not None:
        b += f_bytes(13, entry("offset", str(offset)))
    if length is not None:
        b += f_bytes(13, entry("length", str(length)))
    if checksum is not None:
        b += f_bytes(13, entry("checksum", checksum))
    return b + f_varint(14, 1)


def attr(name, atype, body):
    return f_bytes(1, name) + f_varint(20, atype) + body


def attr_graph(name, graph):
    return attr(name, 5, f_bytes(6, graph))


def node(op, inputs, outputs, name=None, attrs=(), domain=None):
    b = b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs)
    if name is not None:
        b += f_bytes(3, name)
    b += f_bytes(4, op)
    b += b"".join(f_bytes(5, a) for a in attrs)
    if domain is not None:
        b += f_bytes(7, domain)
    return b


def value_info(name, elem_type, dims):
    shape = b""
    for d in dims:
        if d is None:  # neither dim_value nor dim_param
            shape += f_bytes(1, b"")
        else:
            shape += f_bytes(1, f_bytes(2, d) if isinstance(d, str) else f_varint(1, d))
    tt = f_varint(1, elem_type) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tt))


def graph(name, nodes=(), inits=(), inputs=(), outputs=(), sparse=()):
    b = b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, name)
    b += b"".join(f_bytes(5, t) for t in inits)
    b += b"".join(f_bytes(11, v) for v in inputs) + b"".join(f_bytes(12, v) for v in outputs)
    b += b"".join(f_bytes(15, t) for t in sparse)
    return b


def sparse_tensor(values, indices, dims, packed_dims=False):
    """A SparseTensorProto: values (1), indices (2), dims (3)."""
    b = f_bytes(1, values) + f_bytes(2, indices)
    if packed_dims:
        return b + f_bytes(3, b"".join(varint(d) for d in dims))
    return b + b"".join(f_varint(3, d) for d in dims)


def model(g, ir=8, opset=17, producer="modelfs-gen", props=(), extra=b""):
    b = f_varint(1, ir) + f_bytes(2, producer) + f_bytes(3, "1") + f_bytes(4, "dev.modelfs")
    b += f_varint(5, 2) + f_bytes(6, "generated by scripts/gen_onnx.py") + f_bytes(7, g)
    b += f_bytes(8, f_bytes(1, "") + f_varint(2, opset))
    b += b"".join(f_bytes(14, entry(k, v)) for k, v in props)
    return b + extra


# ---- values and their expected bytes ---------------------------------------

def values_for(code, n, seed):
    """(numpy array of the logical values or stored bytes, the LE bytes a
    reader serves, the typed field's values as Python ints/float bytes)."""
    rng = np.random.default_rng(seed)
    name, field = TYPES[code]
    if code in PER_BYTE:
        nb = -(-n // PER_BYTE[code])
        packed = rng.integers(0, 256, nb, dtype=np.uint8)
        # the unused high bits of the last byte are zero
        rem = n % PER_BYTE[code]
        if rem:
            packed[-1] &= (1 << (8 // PER_BYTE[code] * rem)) - 1
        return packed.tobytes(), [int(x) for x in packed]
    if name in ("bfloat16",) or name.startswith("float8"):
        bits = rng.integers(0, 1 << (16 if name == "bfloat16" else 8), n,
                            dtype=np.uint16 if name == "bfloat16" else np.uint8)
        return bits.astype("<u2" if name == "bfloat16" else "u1").tobytes(), [int(x) for x in bits]
    if name == "float16":
        a = rng.standard_normal(n).astype("<f2")
        return a.tobytes(), [int(x) for x in a.view("<u2")]
    if name == "bool":
        a = rng.integers(0, 2, n).astype(bool)
        return a.tobytes(), [int(x) for x in a]
    if name in ("float32", "float64"):
        a = rng.standard_normal(n).astype("<f4" if name == "float32" else "<f8")
        return a.tobytes(), list(a)
    if name in ("complex64", "complex128"):
        a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(
            "<c8" if name == "complex64" else "<c16")
        parts = a.view("<f4" if name == "complex64" else "<f8")
        return a.tobytes(), list(parts)
    info = np.iinfo(name)
    a = rng.integers(info.min, info.max, n, dtype=name, endpoint=True)
    if n >= 2:
        a[0], a[-1] = info.min, info.max
    return a.astype("<" + a.dtype.str[1:]).tobytes(), [int(x) for x in a]


def typed_body(code, vals, mode):
    """The typed field holding `vals`: 'packed', 'split' (two packed runs)
    or 'single' (one field per value)."""
    _, field = TYPES[code]
    if field in (FLOAT_DATA, DOUBLE_DATA):
        fmt = "<f" if field == FLOAT_DATA else "<d"
        enc = [struct.pack(fmt, float(v)) for v in vals]
        if mode == "single":
            return b"".join((f_fixed32 if field == FLOAT_DATA else f_fixed64)(field, e) for e in enc)
    else:
        enc = [varint(v) for v in vals]
        if mode == "single":
            return b"".join(key(field, 0) + e for e in enc)
    if mode == "split" and len(enc) >= 2:
        h = len(enc) // 2
        return f_bytes(field, b"".join(enc[:h])) + f_bytes(field, b"".join(enc[h:]))
    return f_bytes(field, b"".join(enc)) if enc else b""


class Models:
    def __init__(self, out):
        self.out = out

    def write(self, name, data, tensors, metadata, side=()):
        path = os.path.join(self.out, name)
        with open(path, "wb") as f:
            f.write(data)
        exp = {
            "schema": "fixture-expect/1", "fixture": name, "format": "onnx", "expect": "readable",
            "made_by": "scripts/gen_onnx.py (hand-written protobuf)",
            "file_size": len(data), "file_sha256": hashlib.sha256(data).hexdigest(),
            "metadata": metadata, "tensor_count": len(tensors), "tensors": tensors,
        }
        if side:
            exp["side_files"] = list(side)
        with open(path + ".expect.json", "w") as f:
            json.dump(exp, f, indent=1, ensure_ascii=False)


def ent(name, code, shape, data, graph_path=(), source="initializer", storage="raw_data",
        field="raw_data", **kw):
    e = {"name": name, "dtype": TYPES[code][0], "shape": list(shape), "nbytes": len(data),
         "sha256": hashlib.sha256(data).hexdigest(), "graph_path": list(graph_path),
         "source": source, "storage": storage, "onnx_field": field, "onnx_data_type": code}
    e.update(kw)
    return e


META = {"ir_version": 8, "producer_name": "modelfs-gen", "producer_version": "1",
        "domain": "dev.modelfs", "model_version": 2,
        "doc_string": "generated by scripts/gen_onnx.py", "opset_import": {"": 17}}


def gen_dtypes(ms):
    """Every data type, in raw_data and in its typed field three ways."""
    inits, ents = [], []
    shapes = [(3, 5), (7,), (2, 1, 3), ()]
    for code in sorted(TYPES):
        name = TYPES[code][0]
        if code == 8:
            continue
        for i, mode in enumerate(("raw", "packed", "split", "single")):
            shape = shapes[(code + i) % len(shapes)]
            n = int(np.prod(shape)) if shape else 1
            data, vals = values_for(code, n, code * 10 + i)
            tname = "%s/%s:%d.%s" % (name, mode, i, "β" if i == 3 else "x")
            if mode == "raw":
                inits.append(tensor_proto(tname, code, shape, f_bytes(9, data), packed_dims=code % 2 == 0))
                ents.append(ent(tname, code, shape, data))
            else:
                inits.append(tensor_proto(tname, code, shape, typed_body(code, vals, mode)))
                ents.append(ent(tname, code, shape, data, storage="typed_field",
                                field=FIELD_NAMES[TYPES[code][1]]))
    # strings, a zero-size tensor and a scalar
    strs = ["héllo", "", "a/b.c:d", "tab\tnew\nline", "ünï 🌍", "x"]
    inits.append(tensor_proto("strings/vocab", 8, (2, 3), b"".join(f_bytes(6, s) for s in strs)))
    e = ent("strings/vocab", 8, (2, 3), b"", storage="typed_field", field="string_data")
    e.update(nbytes=None, sha256=None, values=strs)
    ents.append(e)
    inits.append(tensor_proto("empty:0", 1, (0, 4), b""))
    ents.append(ent("empty:0", 1, (0, 4), b"", storage="typed_field", field="float_data"))
    g = graph("dtypes", inits=inits, inputs=[value_info("x", 1, ["batch", None, 3])],
              outputs=[value_info("y", 1, ["batch", 3])])
    ms.write("gen_dtypes.onnx", model(g, props=[("author", "modelfs ✓"), ("", "empty key")]), ents,
             dict(META, graph_name="dtypes", metadata_props={"author": "modelfs ✓", "": "empty key"},
                  graph_inputs=["x"], graph_outputs=["y"],
                  inputs=[{"name": "x", "kind": "tensor", "elem_type": 1, "dtype": "float32",
                           "shape": ["batch", -1, 3]}]))


def gen_constants(ms):
    ents = []
    nodes = []
    w = np.arange(6, dtype="<f4").reshape(2, 3)
    nodes.append(node("Constant", [], ["c/value"], "const.value",
                      [attr("value", 4, f_bytes(5, tensor_proto("ignored", 1, (2, 3),
                                                               f_bytes(9, w.tobytes()))))]))
    ents.append(ent("c/value", 1, (2, 3), w.tobytes(), source="Constant op"))
    nodes.append(node("Constant", [], ["c/float"], "const.float",
                      [attr("value_float", 1, f_fixed32(2, struct.pack("<f", 2.5)))]))
    ents.append(ent("c/float", 1, (), struct.pack("<f", 2.5), source="Constant op",
                    storage="attribute", field="value_float"))
    fl = np.array([1.5, -2, 3.25], "<f4")
    nodes.append(node("Constant", [], ["c/floats"], "const.floats",
                      [attr("value_floats", 6, f_bytes(7, fl.tobytes()))]))
    ents.append(ent("c/floats", 1, (3,), fl.tobytes(), source="Constant op",
                    storage="attribute", field="value_floats"))
    nodes.append(node("Constant", [], ["c/int"], "const.int",
                      [attr("value_int", 2, f_varint(3, -7))]))
    ents.append(ent("c/int", 7, (), struct.pack("<q", -7), source="Constant op",
                    storage="attribute", field="value_int"))
    ints = [1, -1, 1 << 40, -(1 << 63), (1 << 63) - 1]
    nodes.append(node("Constant", [], ["c/ints"], "const.ints",
                      [attr("value_ints", 7, f_bytes(8, b"".join(varint(v) for v in ints)))]))
    ents.append(ent("c/ints", 7, (5,), np.array(ints, "<i8").tobytes(), source="Constant op",
                    storage="attribute", field="value_ints"))
    ss = ["α", "b/c"]
    nodes.append(node("Constant", [], ["c/strings"], "const.strings",
                      [attr("value_strings", 8, b"".join(f_bytes(9, s) for s in ss))]))
    e = ent("c/strings", 8, (2,), b"", source="Constant op", storage="attribute",
            field="value_strings")
    e.update(nbytes=None, sha256=None, values=ss)
    ents.append(e)
    g = graph("constants", nodes=nodes)
    ms.write("gen_constants.onnx", model(g), ents,
             dict(META, graph_name="constants", metadata_props={}, graph_inputs=[], graph_outputs=[]))


def f32(seed, n):
    return np.random.default_rng(seed).standard_normal(n).astype("<f4")


def raw_init(name, arr, code=1):
    return tensor_proto(name, code, arr.shape, f_bytes(9, arr.tobytes()))


def gen_subgraphs(ms):
    """If (both branches), Loop with a nested If, Scan, and a custom op
    with a GRAPHS attribute; names with / . : and unicode."""
    ents = []
    a, b, c_, d, e_, s0, s1, top = (f32(i, 3 + i) for i in range(8))
    inner_then = graph("inner_then", inits=[raw_init("deep/ü.w", d)])
    ents_inner = [ent("deep/ü.w", 1, d.shape, d.tobytes(),
                      graph_path=["loop:0", "body", "body/if", "then_branch"])]
    then_g = graph("then", inits=[raw_init("then.w", a)])
    else_g = graph("else", inits=[raw_init("else/w", b)])
    body_nodes = [node("If", ["cond"], ["o"], "body/if", [attr_graph("then_branch", inner_then)])]
    body = graph("body", nodes=body_nodes, inits=[raw_init("body:w", c_)])
    scan_body = graph("scan_body", inits=[raw_init("scan.w", e_)])
    g0, g1 = graph("g0", inits=[raw_init("gs/0", s0)]), graph("g1", inits=[raw_init("gs/1", s1)])
    nodes = [
        node("If", ["cond"], ["y1"], "if/0", [attr_graph("then_branch", then_g),
                                              attr_graph("else_branch", else_g)]),
        node("Loop", ["n", "", "y1"], ["y2"], "loop:0", [attr_graph("body", body)]),
        node("Scan", ["y2"], ["y3"], "scan.ß", [attr_graph("body", scan_body)]),
        node("Custom", ["y3"], ["y4"], "multi", [attr("branches", 10, f_bytes(11, g0) + f_bytes(11, g1))],
             domain="dev.modelfs"),
    ]
    g = graph("subgraphs", nodes=nodes, inits=[raw_init("top", top)])
    ents = [ent("top", 1, top.shape, top.tobytes()),
            ent("then.w", 1, a.shape, a.tobytes(), graph_path=["if/0", "then_branch"]),
            ent("else/w", 1, b.shape, b.tobytes(), graph_path=["if/0", "else_branch"]),
            ent("body:w", 1, c_.shape, c_.tobytes(), graph_path=["loop:0", "body"])] + ents_inner + [
            ent("scan.w", 1, e_.shape, e_.tobytes(), graph_path=["scan.ß", "body"]),
            ent("gs/0", 1, s0.shape, s0.tobytes(), graph_path=["multi", "branches[0]"]),
            ent("gs/1", 1, s1.shape, s1.tobytes(), graph_path=["multi", "branches[1]"])]
    ms.write("gen_subgraphs.onnx", model(g), ents,
             dict(META, graph_name="subgraphs", metadata_props={}, graph_inputs=[], graph_outputs=[]))


def gen_external(ms):
    """External data in weights files beside the model and in a sub-folder."""
    out = ms.out
    w1, w2, w3 = f32(1, 16), np.arange(10, dtype="<i8"), f32(3, 5)
    blob = b"\xff" * 7 + w1.tobytes() + w2.tobytes()  # a leading byte no ModelProto starts with
    with open(os.path.join(out, "gen_ext.weights"), "wb") as f:
        f.write(blob)
    os.makedirs(os.path.join(out, "gen_ext.d", "sub"), exist_ok=True)
    with open(os.path.join(out, "gen_ext.d", "sub", "w3.bin"), "wb") as f:
        f.write(w3.tobytes())
    inits = [
        tensor_proto("ext/w1", 1, (4, 4), external_body("gen_ext.weights", 7, 64, "0" * 40)),
        tensor_proto("ext.w2", 7, (10,), external_body("gen_ext.weights", 71, 80)),
        tensor_proto("ext:w3", 1, (5,), external_body("gen_ext.d/sub/w3.bin")),
    ]
    then_g = graph("then", inits=[tensor_proto("ext/then", 7, (2,),
                                               external_body("gen_ext.weights", 71, 16))])
    g = graph("external", nodes=[node("If", ["c"], ["y"], "br", [attr_graph("then_branch", then_g)])],
              inits=inits)
    ents = [
        ent("ext/w1", 1, (4, 4), w1.tobytes(), storage="external", location="gen_ext.weights",
            offset=7, length=64),
        ent("ext.w2", 7, (10,), w2.tobytes(), storage="external", location="gen_ext.weights",
            offset=71, length=80),
        ent("ext:w3", 1, (5,), w3.tobytes(), storage="external", location="gen_ext.d/sub/w3.bin",
            offset=0, length=20),
        ent("ext/then", 7, (2,), w2[:2].tobytes(), storage="external", graph_path=["br", "then_branch"],
            location="gen_ext.weights", offset=71, length=16),
    ]
    ms.write("gen_external.onnx", model(g), ents,
             dict(META, graph_name="external", metadata_props={}, graph_inputs=[], graph_outputs=[]),
             side=[{"name": "gen_ext.weights", "size": len(blob)}])


def gen_sparse(ms):
    """Sparse initializers (graph field 15): each is two tensors,
    NAME.values and NAME.indices, with the dense shape as sparse_dims;
    linear and COO indices, values raw and in a typed field, one in a
    subgraph."""
    v1, i1 = f32(40, 4), np.array([0, 3, 7, 14], "<i8")
    v2, i2 = np.array([5, -6, 7], "<i4"), np.array([[0, 1], [2, 2], [3, 0]], "<i8")
    v3, i3 = f32(41, 2).astype("<f2"), np.array([1, 5], "<i8")
    dense = f32(42, 3)
    sp1 = sparse_tensor(tensor_proto("emb", 1, (4,), f_bytes(9, v1.tobytes())),
                        tensor_proto(None, 7, (4,), f_bytes(9, i1.tobytes())), (3, 5))
    sp2 = sparse_tensor(tensor_proto("coo/w", 6, (3,), typed_body(6, [int(x) for x in v2], "packed")),
                        tensor_proto("", 7, (3, 2), f_bytes(9, i2.tobytes())), (4, 4), packed_dims=True)
    sp3 = sparse_tensor(tensor_proto("sub.sp", 10, (2,), f_bytes(9, v3.tobytes())),
                        tensor_proto(None, 7, (2,), f_bytes(9, i3.tobytes())), (8,))
    then_g = graph("then", sparse=[sp3])
    g = graph("sparse", nodes=[node("If", ["c"], ["y"], "br", [attr_graph("then_branch", then_g)])],
              inits=[raw_init("dense", dense)], sparse=[sp1, sp2])
    sp = "sparse_initializer"
    ents = [
        ent("dense", 1, (3,), dense.tobytes()),
        ent("emb.values", 1, (4,), v1.tobytes(), source=sp, sparse_dims=[3, 5]),
        ent("emb.indices", 7, (4,), i1.tobytes(), source=sp, sparse_dims=[3, 5]),
        ent("coo/w.values", 6, (3,), v2.tobytes(), source=sp, storage="typed_field",
            field="int32_data", sparse_dims=[4, 4]),
        ent("coo/w.indices", 7, (3, 2), i2.tobytes(), source=sp, sparse_dims=[4, 4]),
        ent("sub.sp.values", 10, (2,), v3.tobytes(), source=sp, sparse_dims=[8],
            graph_path=["br", "then_branch"]),
        ent("sub.sp.indices", 7, (2,), i3.tobytes(), source=sp, sparse_dims=[8],
            graph_path=["br", "then_branch"]),
    ]
    ms.write("gen_sparse.onnx", model(g), ents,
             dict(META, graph_name="sparse", metadata_props={}, graph_inputs=[], graph_outputs=[]))


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    ms = Models(argv[1])
    gen_dtypes(ms)
    gen_constants(ms)
    gen_subgraphs(ms)
    gen_external(ms)
    gen_sparse(ms)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
