#!/usr/bin/python3
"""Writes the project's own ONNX tensor files (one TensorProto each, the
format "onnx-tensor") into OUTDIR, each with NAME.expect.json in the
fixture-expect/1 schema (../shared/fixtures/README.md), the expectations
coming from the numpy arrays fed in.

Made by Debian's python3-onnx (onnx.save_tensor of numpy_helper.from_array
and helper.make_tensor), for every data type onnx 1.12 has: in raw_data
and in its typed field, empty tensors and 0-d scalars, names with / : and
unicode, an empty name. Written by hand (scripts/gen_onnx.py's protobuf
helpers), for what onnx 1.12 cannot write: the data types after bfloat16
(float8 ..., the packed 4- and 2-bit types), typed fields split into
several runs or one field per value, packed dims, fields out of the usual
order, doc_string and metadata_props, and external data beside the file.
Some files have no .pb extension: the format is known by its bytes.
Without python3-onnx only the hand-written ones are made (said on stderr).

usage: gen_onnx_tensor.py OUTDIR
"""
import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_onnx as G  # noqa: E402

try:
    import onnx
    from onnx import helper, numpy_helper
except ImportError:
    onnx = None

NP = {1: "<f4", 2: "u1", 3: "i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 9: "?", 10: "<f2",
      11: "<f8", 12: "<u4", 13: "<u8", 14: "<c8", 15: "<c16"}


def entry(name, code, shape, data, storage, field, **kw):
    e = {"name": name, "dtype": G.TYPES[code][0], "shape": list(shape), "nbytes": len(data),
         "sha256": hashlib.sha256(data).hexdigest(), "graph_path": [], "source": "TensorProto",
         "storage": storage, "onnx_field": field, "onnx_data_type": code}
    e.update(kw)
    return e


def write(out, fname, data, ent, metadata=None, made_by="python3-onnx", side=()):
    path = os.path.join(out, fname)
    with open(path, "wb") as f:
        f.write(data)
    exp = {
        "schema": "fixture-expect/1", "fixture": fname, "format": "onnx-tensor", "expect": "readable",
        "made_by": "scripts/gen_onnx_tensor.py (%s)" % made_by, "format_version": 0,
        "file_size": len(data), "file_sha256": hashlib.sha256(data).hexdigest(),
        "metadata": metadata or {}, "tensor_count": 1, "tensors": [ent],
    }
    if side:
        exp["side_files"] = list(side)
    with open(path + ".expect.json", "w") as f:
        json.dump(exp, f, indent=1, ensure_ascii=False)


def array_for(code, shape, seed):
    """Random values of the type; bfloat16 as its bit patterns (uint16),
    finite, so that onnx's float32_to_bfloat16 keeps them exactly."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if code == 16:
        bits = rng.integers(0, 1 << 16, n, dtype=np.uint16)
        bits[(bits & 0x7f80) == 0x7f80] &= 0xbfff  # no inf or NaN
        return bits.reshape(shape)
    dt = np.dtype(NP[code])
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt).reshape(shape)
    if dt.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt).reshape(shape)
    if dt.kind == "b":
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, n, dtype=dt.newbyteorder("="), endpoint=True)
    if n >= 2:
        a[0], a[-1] = info.min, info.max
    return a.astype(dt).reshape(shape)


def by_onnx(out):
    """Every data type onnx 1.12 has, raw and typed, as onnx writes them."""
    shapes = [(3, 5), (7,), (2, 1, 3), ()]
    for code in sorted(NP) + [16]:
        tname = G.TYPES[code][0]
        for i, typed in enumerate((False, True)):
            shape = shapes[(code + i) % len(shapes)]
            a = array_for(code, shape, code * 10 + i)
            data = a.astype(a.dtype.newbyteorder("<")).tobytes()
            name = "%s/%s:ü" % (tname, "typed" if typed else "raw")
            if code == 16:
                t = helper.make_tensor(name, 16, shape,
                                       (a.astype("<u4") << 16).view("<f4").ravel().tolist()
                                       if typed else data, raw=not typed)
            elif typed:
                t = helper.make_tensor(name, code, shape, a.ravel().tolist())
            else:
                t = numpy_helper.from_array(a, name)
            field = G.FIELD_NAMES[G.TYPES[code][1]] if typed else "raw_data"
            fname = "%s_%s%s" % (tname, "typed" if typed else "raw", "" if code % 5 == 0 else ".pb")
            write(out, fname, t.SerializeToString(),
                  entry(name, code, shape, data, "typed_field" if typed else "raw_data", field))
    strs = ["héllo", "", "a/b.c:d", "tab\tnew\nline", "ünï 🌍", "x"]
    t = helper.make_tensor("strings", 8, (3, 2), [s.encode() for s in strs])
    e = entry("strings", 8, (3, 2), b"", "typed_field", "string_data")
    e.update(nbytes=None, sha256=None, values=strs)
    write(out, "strings.pb", t.SerializeToString(), e)
    # Empty tensors: onnx writes from_array's as an empty raw_data, and
    # make_tensor's as no data field at all.
    z = np.zeros((0, 3), "<f4")
    write(out, "empty_raw.pb", numpy_helper.from_array(z, "empty").SerializeToString(),
          entry("empty", 1, (0, 3), b"", "raw_data", "raw_data"))
    write(out, "empty_typed.pb", helper.make_tensor("empty", 7, (2, 0), []).SerializeToString(),
          entry("empty", 7, (2, 0), b"", "typed_field", "int64_data"))
    # 0-d scalars; one with no name (tensors/%empty).
    s = np.array(2.5, "<f8")
    write(out, "scalar_raw.pb", numpy_helper.from_array(s, "").SerializeToString(),
          entry("", 11, (), s.tobytes(), "raw_data", "raw_data"))
    write(out, "scalar_typed", helper.make_tensor("scalar", 6, (), [-7]).SerializeToString(),
          entry("scalar", 6, (), np.array(-7, "<i4").tobytes(), "typed_field", "int32_data"))
    # onnx.save_tensor itself (what ONNX's test data holds).
    a = np.arange(24, dtype="<f4").reshape(2, 3, 4)
    onnx.save_tensor(numpy_helper.from_array(a, "input"), os.path.join(out, "input_0.pb"))
    with open(os.path.join(out, "input_0.pb"), "rb") as f:
        data = f.read()
    write(out, "input_0.pb", data, entry("input", 1, a.shape, a.tobytes(), "raw_data", "raw_data"))


def by_hand(out):
    """What onnx 1.12 cannot write, with gen_onnx.py's protobuf helpers."""
    made = "hand-written protobuf"
    shapes = [(3, 5), (7,), (2, 1, 3), ()]
    for code in range(17, 27):
        tname = G.TYPES[code][0]
        for i, typed in enumerate((False, True)):
            shape = shapes[(code + i) % len(shapes)]
            n = int(np.prod(shape)) if shape else 1
            data, vals = G.values_for(code, n, code * 10 + i)
            name = "%s/%s" % (tname, "typed" if typed else "raw")
            body = G.typed_body(code, vals, "packed") if typed else G.f_bytes(9, data)
            extra = {"element_bits": 8 // G.PER_BYTE[code]} if code in G.PER_BYTE else {}
            write(out, "%s_%s.pb" % (tname, "typed" if typed else "raw"),
                  G.tensor_proto(name, code, shape, body, packed_dims=typed),
                  entry(name, code, shape, data, "typed_field" if typed else "raw_data",
                        "int32_data" if typed else "raw_data", **extra), made_by=made)
    # Typed fields as writers other than onnx may leave them: split into
    # two packed runs, one field per value.
    for code, mode in ((1, "single"), (11, "split"), (7, "single"), (5, "split"), (13, "split")):
        shape = (2, 3)
        data, vals = G.values_for(code, 6, code + 100)
        name = "%s.%s" % (G.TYPES[code][0], mode)
        write(out, "%s_%s.pb" % (G.TYPES[code][0], mode),
              G.tensor_proto(name, code, shape, G.typed_body(code, vals, mode)),
              entry(name, code, shape, data, "typed_field", G.FIELD_NAMES[G.TYPES[code][1]]),
              made_by=made)
    # Fields in another order (data first), doc_string and metadata_props
    # (field 16, after onnx 1.12), dims packed.
    a = np.arange(6, dtype="<i2")
    body = (G.f_bytes(9, a.tobytes()) + G.f_bytes(12, "a doc ✓") +
            G.f_bytes(16, G.entry("k", "v1")) + G.f_bytes(16, G.entry("k", "v2")) +
            G.f_bytes(16, G.entry("", "empty key")) + G.f_bytes(8, "reordered") +
            G.f_bytes(1, G.varint(3) + G.varint(2)) + G.f_varint(2, 5))
    write(out, "reordered.pb", body, entry("reordered", 5, (3, 2), a.tobytes(), "raw_data", "raw_data"),
          metadata={"doc_string": "a doc ✓", "metadata_props": {"k": "v1", "": "empty key"}},
          made_by=made)
    # External data beside the file (its first bytes are no TensorProto).
    w = np.random.default_rng(5).standard_normal(8).astype("<f4")
    blob = b"\xff" * 5 + w.tobytes()
    with open(os.path.join(out, "tensor_ext.data"), "wb") as f:
        f.write(blob)
    t = G.tensor_proto("ext", 1, (2, 4), G.external_body("tensor_ext.data", 5, 32, "0" * 40))
    write(out, "tensor_ext.pb", t,
          entry("ext", 1, (2, 4), w.tobytes(), "external", "raw_data", location="tensor_ext.data",
                offset=5, length=32), made_by=made,
          side=[{"name": "tensor_ext.data", "size": len(blob)}])


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    if onnx is None:
        print("gen_onnx_tensor: python3-onnx is not installed: only the hand-written files",
              file=sys.stderr)
    else:
        by_onnx(argv[1])
    by_hand(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
