"""ONNX's own checks, beyond the generic ones:

  - every ONNX field of the expectations (onnx_data_type, onnx_field,
    source, storage, graph_path, location/offset/length, string values) in
    model.json and through the mount; model.json's metadata; graph.json
    (every node, nested subgraphs whose paths are the tensors' graph_path);
  - an independent reader: Debian's python3-onnx (onnx.load and
    numpy_helper.to_array of every initializer and Constant value, to any
    depth) against the mounted bytes, for every .onnx file of DIRS and
    OWN_DIRS (../shared's RTen fixtures were made from ONNX files);
  - hostile files written here: lengths past the end, an 11-byte varint,
    groups, absurd and overflowing dims, raw_data of the wrong size, a tiny
    file whose int64_data claims billions of elements, subgraphs 10,000
    deep, external data leaving the folder ('..', absolute, a symlink out),
    past the end of its file or missing: a refusal (exit 5, one line
    naming the file) or an entry with a `problem` and only the bytes the
    file holds; never a crash, a hang or a byte from outside the folder;
  - an external file changed (or replaced by a symlink) under the mount:
    EIO for its tensor, the rest still served;
  - a folder mount whose ONNX model's folder is swapped for a symlink out
    of DIR while the model loads (after its file was opened, before its
    external data is): the model is an ERROR, never the outside bytes.
"""
import collections
import errno
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

import mfstest
import gen_onnx as G
import numpy as np

try:
    import onnx
    from onnx import helper, numpy_helper
except ImportError:  # the cross-check is skipped, visibly
    onnx = None

DIRS = ("gen/onnx", "shared/fixtures/onnx", "shared/fixtures/onnx/external")
OWN_DIRS = ("shared/fixtures/rten",)
# Not on one CPU: check_external_swap races a reader against the daemon.
ONE_CPU = False


def setup(c, t):
    if onnx is None:
        c.skip("python3-onnx is not installed: no cross-check with an independent reader")


def check_model(c, t, model, expect, mount):
    if not model.endswith(".onnx") or not os.path.isfile(model):
        return
    try:
        mnt = mount()
        doc = json.loads(read(os.path.join(mnt, "model.json")))
        if expect is not None:
            check_expect(c, mnt, model, expect)
        gdoc = check_graph_json(c, mnt, os.path.basename(model), doc)
        if onnx is not None:
            check_onnx_reader(c, mnt, model, doc, gdoc)
    except RuntimeError as e:
        c.check(False, "%s: %s" % (model, e))


def key(t):
    return (t["name"], tuple(t.get("graph_path", [])))


def read(p):
    with open(p, "rb") as f:
        return f.read()


# ---- expectations -----------------------------------------------------------

def check_expect(c, mnt, model, expect):
    name = os.path.basename(model)
    doc = json.loads(read(os.path.join(mnt, "model.json")))
    c.equal(doc["format"], "onnx", name + ": format")
    md = doc["metadata"]
    for k, want in expect.get("metadata", {}).items():
        got = md.get(k, "" if want == "" else None)
        c.equal(got, want, "%s: metadata %s" % (name, k))
    got = collections.defaultdict(list)
    for t in doc["tensors"]:
        got[key(t)].append(t)
    for want in expect["tensors"]:
        ts = got.get(key(want))
        if not c.check(ts, "%s: %r missing" % (name, key(want))):
            continue
        t = ts.pop(0)
        what = "%s: %r" % (name, want["name"])
        for k in ("onnx_data_type", "onnx_field", "source", "storage", "graph_path", "location",
                  "length", "sparse_dims"):
            if k in want:
                c.equal(t.get(k), want[k], what + " " + k)
        if want.get("storage") == "external":
            c.equal(t["offset"], want["offset"], what + " offset (in %s)" % want["location"])
            c.equal(int(os.getxattr(os.path.join(mnt, t["path"]), "user.modelfs.offset")),
                    want["offset"], what + " xattr offset")
        if want["dtype"] == "string":
            c.equal(json.loads(read(os.path.join(mnt, t["path"]))), want["values"], what + " values")
            c.check("npy" not in t, what + " has no .npy")
    return doc


def walk_graph_doc(g, path, out):
    """{graph_path: graph object} of graph.json's nested subgraphs."""
    out[tuple(path)] = g
    for s in g["subgraphs"]:
        if s["path"] != path + [s["node"], s["attribute"]]:
            out.setdefault("bad", []).append(s["path"])
        walk_graph_doc(s["graph"], s["path"], out)
    return out


def check_graph_json(c, mnt, name, doc):
    g = json.loads(read(os.path.join(mnt, "graph.json")))
    graphs = walk_graph_doc(g, [], {})
    c.check("bad" not in graphs, "%s: graph.json subgraph paths %r" % (name, graphs.get("bad")))
    for t in doc["tensors"]:
        c.check(tuple(t["graph_path"]) in graphs,
                "%s: %r: graph_path %r is a subgraph of graph.json" % (name, t["name"], t["graph_path"]))
    md = doc["metadata"]
    if "graph_name" in md:
        c.equal(g["name"], md["graph_name"], name + ": graph.json name")
    c.equal([i["name"] for i in g["inputs"]], md.get("graph_inputs"), name + ": graph.json inputs")
    for path, sub in graphs.items():
        if path == "bad":
            continue
        want = [t["name"] for t in doc["tensors"]
                if tuple(t["graph_path"]) == path and t["source"] == "initializer"]
        c.equal(sub["initializers"], want, "%s: graph.json %r initializers" % (name, path))
    for n in g["nodes"]:
        c.check(set(n) >= {"name", "op_type", "domain", "inputs", "outputs", "attributes"},
                "%s: node keys %r" % (name, sorted(n)))
    return g


# ---- python3-onnx -----------------------------------------------------------

def onnx_tensors(g, path, out):
    """(name, graph_path, kind, value) in the driver's order."""
    for t in g.initializer:
        out.append((t.name, path, "tensor", t))
    for sp in g.sparse_initializer:
        out.append((sp.values.name + ".values", path, "tensor", sp.values))
        out.append((sp.values.name + ".indices", path, "tensor", sp.indices))
    for n in g.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            tname = n.output[0] if n.output else n.name
            for a in n.attribute:
                if a.name in ("value", "value_float", "value_floats", "value_int", "value_ints",
                              "value_string", "value_strings"):
                    out.append((tname, path, a.name, a))
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                onnx_tensors(a.g, path + [n.name, a.name], out)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for i, sg in enumerate(a.graphs):
                    onnx_tensors(sg, path + [n.name, "%s[%d]" % (a.name, i)], out)
    return out


def as_array(kind, v):
    """The reference value: a numpy array, or a list of bytes for strings."""
    if kind == "tensor":
        if v.data_type == onnx.TensorProto.STRING:
            return list(v.string_data)
        if v.data_type in (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128) and \
                not v.raw_data and v.data_location != onnx.TensorProto.EXTERNAL:
            # to_array of 1.12 fails on complex typed fields: onnx's parsed
            # (re, im) values, paired here.
            c64 = v.data_type == onnx.TensorProto.COMPLEX64
            parts = np.array(v.float_data if c64 else v.double_data, "<f4" if c64 else "<f8")
            return parts.view("<c8" if c64 else "<c16").reshape(tuple(v.dims))
        return numpy_helper.to_array(v)
    if kind == "value":
        return as_array("tensor", v.t)
    val = helper.get_attribute_value(v)
    if kind in ("value_string", "value_strings"):
        return [val] if kind == "value_string" else list(val)
    dt = np.float32 if "float" in kind else np.int64
    return np.array(val, dtype=dt)


def onnx_graphs(g, path, out):
    """{graph_path: GraphProto}, as graph.json nests them."""
    out[tuple(path)] = g
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                onnx_graphs(a.g, path + [n.name, a.name], out)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for i, sg in enumerate(a.graphs):
                    onnx_graphs(sg, path + [n.name, "%s[%d]" % (a.name, i)], out)
    return out


def check_attr(c, what, a, ja):
    """An attribute's bounded form in graph.json against python3-onnx."""
    A = onnx.AttributeProto
    c.equal(ja["type"], A.AttributeType.Name(a.type), what + " type")
    v = helper.get_attribute_value(a)
    if a.type == A.INT:
        c.equal(ja["value"], v, what)
    elif a.type == A.FLOAT:
        c.equal(ja["value"], float(np.float32(v)), what)
    elif a.type == A.STRING:
        c.equal(ja["value"], v[:1024].decode("utf-8", "replace"), what)
    elif a.type in (A.INTS, A.FLOATS, A.STRINGS):
        c.equal(ja["count"], len(v), what + " count")
        head = list(v[:16])
        if a.type == A.FLOATS:
            head = [float(np.float32(x)) for x in head]
        elif a.type == A.STRINGS:
            head = [x[:1024].decode("utf-8", "replace") for x in head]
        c.equal(ja["value"], head, what)
    elif a.type == A.GRAPH:
        c.equal(ja["value"], a.g.name, what)
    elif a.type == A.TENSOR:
        c.equal(ja["value"].get("shape"), list(a.t.dims), what + " shape")


def check_onnx_graph(c, name, m, gdoc):
    """graph.json's graphs and nodes against python3-onnx's."""
    mine = walk_graph_doc(gdoc, [], {})
    mine.pop("bad", None)
    ref = onnx_graphs(m.graph, [], {})
    c.equal(sorted(mine), sorted(ref), name + ": graph.json's subgraph paths (python3-onnx)")
    for path, g in ref.items():
        if path not in mine:
            continue
        want = [[n.name, n.op_type, n.domain, list(n.input), list(n.output),
                 [a.name for a in n.attribute]] for n in g.node]
        got = [[n["name"], n["op_type"], n["domain"], n["inputs"], n["outputs"],
                [a["name"] for a in n["attributes"]]] for n in mine[path]["nodes"]]
        c.equal(got, want, "%s: graph.json nodes of %r (python3-onnx)" % (name, path))
        for n, jn in zip(g.node, mine[path]["nodes"]):
            for a, ja in zip(n.attribute, jn["attributes"]):
                check_attr(c, "%s: %r %s.%s" % (name, path, n.name, a.name), a, ja)
        c.equal(mine[path]["name"], g.name, "%s: graph.json name of %r" % (name, path))
        c.equal([v["name"] for v in mine[path]["inputs"]], [v.name for v in g.input],
                "%s: graph.json inputs of %r" % (name, path))


def check_onnx_reader(c, mnt, model, doc, gdoc):
    name = os.path.relpath(model)
    m = onnx.load(model)
    check_onnx_graph(c, name, m, gdoc)
    by = collections.defaultdict(list)
    for t in doc["tensors"]:
        by[key(t)].append(t)
    refs = onnx_tensors(m.graph, [], [])
    # What the file says before onnx.load moves external data in.
    stored = onnx_tensors(onnx.load(model, load_external_data=False).graph, [], [])
    c.equal(len(refs), len(doc["tensors"]), name + ": python3-onnx's tensor count")
    for (tname, path, kind, v), (_, _, _, sv) in zip(refs, stored):
        what = "%s: %r %r (python3-onnx)" % (name, tname, path)
        ts = by.get((tname, tuple(path)))
        if not c.check(ts, what + " missing from model.json"):
            continue
        t = ts.pop(0)
        if kind == "tensor" and v.data_type > 16:
            c.skip(what + ": python3-onnx 1.12 has no data type %d" % v.data_type)
            continue
        if kind == "tensor" and any(e.key == "length" and e.value == "0" for e in sv.external_data):
            # onnx.load reads "length": "0" as the rest of the file.
            c.skip(what + ": python3-onnx 1.12 misreads external length 0")
            c.equal(t["nbytes"], 0, what + " nbytes")
            continue
        ref = as_array(kind, v)
        got = read(os.path.join(mnt, t["path"]))
        if isinstance(ref, list):
            c.equal(json.loads(got), [s.decode("utf-8", "surrogateescape") for s in ref], what + " strings")
            continue
        c.equal(t["shape"], list(ref.shape), what + " shape")
        if kind == "tensor" and v.data_type == onnx.TensorProto.BFLOAT16:
            # to_array widens bfloat16 to float32
            mine = (np.frombuffer(got, "<u2").astype("<u4") << 16).view("<f4")
            c.check(np.array_equal(mine, ref.ravel().astype("<f4"), equal_nan=True), what + " values")
            continue
        c.equal(got, ref.astype(ref.dtype.newbyteorder("<")).tobytes(), what + " bytes")


# ---- hostile files -----------------------------------------------------------

def run(cmd, env):
    return subprocess.run(cmd, capture_output=True, env=env, timeout=120)


class Hostile:
    def __init__(self, c, build, env, tmp):
        self.c, self.env, self.tmp = c, env, tmp
        self.ls = os.path.join(build, "modelfs-ls")
        self.modelfs = os.path.join(build, "modelfs")

    def write(self, name, data, where=None):
        d = where or self.tmp
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def refused(self, path, words, codes=(5,)):
        r = run([self.ls, path], self.env)
        err = r.stderr.decode(errors="replace")
        what = os.path.basename(path)
        self.c.check(r.returncode in codes, "%s: exit %d, want %s: %s" % (what, r.returncode, codes, err))
        self.c.check(err.startswith("modelfs-ls: %s: " % path) and err.count("\n") == 1,
                     "%s: one line naming the file: %r" % (what, err))
        for w in words:
            self.c.check(w in err, "%s: %r in %r" % (what, w, err))
        if mfstest.can_mount():
            try:
                with mfstest.mounted(self.modelfs, path, self.env):
                    self.c.check(False, what + ": mounted")
            except RuntimeError as e:
                self.c.check(any(("exited %d" % k) in str(e) for k in codes), "%s: mount: %s" % (what, e))

    def problem(self, path, tname, words, max_bytes, declared=None):
        """Loads; `tname` is an entry with a problem serving at most
        max_bytes bytes that are the file's own (and, given, the dims
        the file declares as its declared_shape)."""
        what = os.path.basename(path)
        r = run([self.ls, path, "model.json"], self.env)
        if not self.c.equal(r.returncode, 0, "%s: modelfs-ls: %s" % (what, r.stderr)):
            return
        doc = json.loads(r.stdout)
        ts = [t for t in doc["tensors"] if t["name"] == tname]
        if not self.c.check(ts, what + ": entry %r" % tname):
            return
        t = ts[0]
        self.c.check("problem" in t and all(w in t["problem"] for w in words),
                     "%s: problem %r has %r" % (what, t.get("problem"), words))
        self.c.equal(t["dtype"], "bytes", what + " dtype")
        self.c.check(t["nbytes"] <= max_bytes, "%s: %d bytes served" % (what, t["nbytes"]))
        self.c.check("npy" not in t, what + " has no .npy")
        if declared is not None:
            self.c.equal(t.get("declared_shape"), declared, what + ": declared_shape")
        with mfstest.mounted(self.modelfs, path, self.env) as mnt:
            got = read(os.path.join(mnt, t["path"]))
            self.c.equal(len(got), t["nbytes"], what + ": bytes through the mount")
            if got:
                self.c.check(got in read(path), what + ": served bytes are the file's own")


def ir_model(g):
    return G.model(g)


def hostile(c, t):
    build, env = t.build, t.env
    tmp = tempfile.mkdtemp(prefix="modelfs-onnx-")
    h = Hostile(c, build, env, tmp)
    f32 = np.arange(4, dtype="<f4").tobytes()
    ok_init = G.tensor_proto("w", 1, (4,), G.f_bytes(9, f32))
    try:
        # A length past the end of the file.
        good = ir_model(G.graph("g", inits=[ok_init]))
        h.refused(h.write("past_end.onnx", good[:-3]), ["past the end", "byte"])
        # An 11-byte varint inside a tensor's dims (and at the start).
        bad_dims = G.key(1, 0) + b"\xff" * 10 + b"\x01"
        t = bad_dims + G.f_varint(2, 1) + G.f_bytes(8, "v") + G.f_bytes(9, f32)
        h.refused(h.write("varint11.onnx", ir_model(G.graph("g", inits=[t]))), ["varint"])
        h.refused(h.write("varint11_start.onnx", G.key(1, 0) + b"\x80" * 10 + b"\x01" + good),
                  [], codes=(4, 5))
        # A group (wire type 3) inside the graph.
        grp = G.key(30, 3) + G.key(30, 4)
        h.refused(h.write("group.onnx", ir_model(G.graph("g", inits=[ok_init]) + grp)), ["group"])
        # raw_data of the wrong size: the bytes it has, flagged.
        t = G.tensor_proto("short", 1, (8,), G.f_bytes(9, f32))
        h.problem(h.write("raw_size.onnx", ir_model(G.graph("g", inits=[t]))), "short",
                  ["raw_data has 16 bytes"], 16)
        # Absurd and overflowing dims, a negative one.
        t = G.tensor_proto("absurd", 1, (1 << 62,), G.f_bytes(9, f32))
        h.problem(h.write("absurd.onnx", ir_model(G.graph("g", inits=[t]))), "absurd", ["2^64"], 16)
        t = G.tensor_proto("ovf", 7, (1 << 32, 1 << 32, 1 << 32), G.f_bytes(9, f32))
        h.problem(h.write("overflow.onnx", ir_model(G.graph("g", inits=[t]))), "ovf", ["2^64"], 16)
        t = G.tensor_proto("neg", 1, (-1 & ((1 << 64) - 1),), G.f_bytes(9, f32))
        h.problem(h.write("negative.onnx", ir_model(G.graph("g", inits=[t]))), "neg", ["negative"], 16,
                  declared=[-1])
        # A dynamic dim written into an initializer: declared_shape keeps
        # it as written (it once showed []).
        t = G.tensor_proto("dyn", 1, (-1 & ((1 << 64) - 1), 4), G.f_bytes(9, f32))
        h.problem(h.write("dynamic_dim.onnx", ir_model(G.graph("g", inits=[t]))), "dyn", ["negative"],
                  16, declared=[-1, 4])
        # A tiny file whose int64_data claims 4 billion elements.
        t = G.tensor_proto("bomb", 7, (4_000_000_000,), G.f_bytes(7, b"\x01\x02\x03"))
        p = h.write("int64_bomb.onnx", ir_model(G.graph("g", inits=[t])))
        h.problem(p, "bomb", ["int64_data holds 3 values"], 3)
        # Subgraphs 10,000 deep.
        g = G.graph("leaf", inits=[ok_init])
        for i in range(10000):
            g = G.graph("g%d" % i, nodes=[G.node("If", ["c"], ["o"], "n", [G.attr_graph("then_branch", g)])])
        h.refused(h.write("deep.onnx", ir_model(g)), ["deeper than 64"])

        # External data that would leave the folder, or is not there.
        inner = os.path.join(tmp, "model")
        os.makedirs(inner)
        secret = os.path.join(tmp, "secret.bin")
        with open(secret, "wb") as f:
            f.write(b"SECRET!!" * 8)
        with open(os.path.join(inner, "w.bin"), "wb") as f:
            f.write(f32)
        os.symlink(secret, os.path.join(inner, "link.bin"))
        os.symlink("w.bin", os.path.join(inner, "inside_link.bin"))

        def ext(name, location, offset=None, length=None, words=()):
            t = G.tensor_proto("e", 1, (4,), G.external_body(location, offset, length))
            h.refused(h.write(name, ir_model(G.graph("g", inits=[t])), inner), list(words))

        ext("dotdot.onnx", "../secret.bin", words=["not a relative path inside"])
        ext("dotdot2.onnx", "sub/../../secret.bin", words=["not a relative path inside"])
        ext("absolute.onnx", secret, words=["not a relative path inside"])
        ext("symlink_out.onnx", "link.bin", words=["symlinks are not followed"])
        ext("symlink_in.onnx", "inside_link.bin", words=["symlinks are not followed"])
        ext("past_end_ext.onnx", "w.bin", 8, 16, words=["runs past its end"])
        ext("missing.onnx", "nothere.bin", words=["cannot open"])
        ext("dir.onnx", ".", words=["not a relative path inside"])

        # A good external model; its file changed under the mount: EIO.
        t1 = G.tensor_proto("e1", 1, (4,), G.external_body("w.bin", 0, 16))
        t2 = G.tensor_proto("e2", 1, (4,), G.f_bytes(9, f32))
        p = h.write("good_ext.onnx", ir_model(G.graph("g", inits=[t1, t2])), inner)
        if mfstest.can_mount():
            with mfstest.mounted(h.modelfs, p, env) as mnt:
                c.equal(read(os.path.join(mnt, "tensors/e1")), f32, "good_ext: e1 through the mount")
                with open(os.path.join(inner, "w.bin"), "r+b") as f:
                    f.write(b"\x00" * 4)  # same size, new mtime and ctime
                mfstest.evict(os.path.join(mnt, "tensors/e1"))
                data, err = mfstest.read_or_errno(os.path.join(mnt, "tensors/e1"))
                c.equal(err, errno.EIO, "good_ext: e1 after its file changed")
                c.equal(read(os.path.join(mnt, "tensors/e2")), f32, "good_ext: e2 still served")
            with open(os.path.join(inner, "w.bin"), "wb") as f:
                f.write(f32)
            with mfstest.mounted(h.modelfs, p, env) as mnt:
                os.rename(os.path.join(inner, "w.bin"), os.path.join(inner, "w.old"))
                os.symlink(secret, os.path.join(inner, "w.bin"))
                mfstest.evict(os.path.join(mnt, "tensors/e1"))
                data, err = mfstest.read_or_errno(os.path.join(mnt, "tensors/e1"))
                c.equal(err, errno.EIO, "good_ext: e1 once w.bin is a symlink out")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def open_by(pid, suffix):
    """True when process `pid` holds a file whose path ends with `suffix`."""
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)).endswith(suffix):
                    return True
            except OSError:
                pass
    except OSError:
        pass
    return False


def check_external_swap(c, t):
    """Issue 19, attack 1. DIR/sub/m.onnx has 100,000 small initializers,
    then one whose external data is sub/w.bin: its load takes a while.
    Once the daemon holds m.onnx open, DIR/sub becomes a symlink to a
    folder outside DIR holding another w.bin. The external data used to be
    opened by path then, and tensors/ext served the outside file."""
    modelfs, env = t.modelfs, t.env
    tmp = mfstest.scratch("modelfs-onnx-swap-")
    try:
        d, out = os.path.join(tmp, "DIR"), os.path.join(tmp, "outside")
        os.makedirs(os.path.join(d, "sub"))
        os.makedirs(out)
        inside, secret = b"INSIDE!!" * 2, b"SECRET!!" * 2
        with open(os.path.join(d, "sub", "w.bin"), "wb") as f:
            f.write(inside)
        with open(os.path.join(out, "w.bin"), "wb") as f:
            f.write(secret)
        # 128 bytes each: a table this long is within what a file this
        # size may take to describe.
        small = G.f_bytes(9, bytes(128))
        inits = [G.tensor_proto("t%d" % i, 1, (32,), small) for i in range(100000)]
        inits.append(G.tensor_proto("ext", 1, (4,), G.external_body("w.bin", 0, 16)))
        with open(os.path.join(d, "sub", "m.onnx"), "wb") as f:
            f.write(G.model(G.graph("g", inits=inits)))
        with mfstest.mounted(modelfs, d, env) as mnt:
            pid = mfstest.daemon_pid(mnt)
            if not c.check(pid is not None, "external swap: the daemon's pid"):
                return
            seen = []
            t = threading.Thread(target=lambda: seen.append(
                sorted(os.listdir(os.path.join(mnt, "sub", "m.onnx")))))
            t.start()
            deadline = time.monotonic() + 30
            while not open_by(pid, "/sub/m.onnx") and t.is_alive() and time.monotonic() < deadline:
                time.sleep(0.001)
            hit = t.is_alive()
            os.rename(os.path.join(d, "sub"), os.path.join(d, "sub.old"))
            os.symlink(out, os.path.join(d, "sub"))
            t.join(60)
            if not hit:
                c.skip("external swap: the model loaded before the swap (machine too fast?)")
                return
            ext = os.path.join(mnt, "sub", "m.onnx", "tensors", "ext")
            got = read(ext) if os.path.isfile(ext) else None
            c.check(got != secret, "external swap: tensors/ext serves the file outside DIR")
            c.equal(seen, [["ERROR"]], "external swap: the model is an ERROR")
            err = os.path.join(mnt, "sub", "m.onnx", "ERROR")
            text = read(err).decode() if os.path.isfile(err) else ""
            c.check("out of" in text, "external swap: ERROR says why: %r" % text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_string_not_utf8(c, t):
    """Issue 19, item 3: a string tensor's values that are not valid UTF-8
    are \\udcXX in its JSON (json.loads, then surrogateescape, gives the
    bytes back), as onnx reads them."""
    modelfs, env = t.modelfs, t.env
    tmp = mfstest.scratch("modelfs-onnx-str-")
    try:
        values = [b"ok", b"\xff\xfe", b"caf\xe9", b"cut\xe5\x90", "é".encode()]
        body = b"".join(G.f_bytes(6, v) for v in values)
        t = G.tensor_proto("s", 8, (len(values),), body)
        p = os.path.join(tmp, "strings.onnx")
        with open(p, "wb") as f:
            f.write(G.model(G.graph("g", inits=[t])))
        if onnx is not None:
            got = [bytes(x) for x in onnx.load(p).graph.initializer[0].string_data]
            c.equal(got, values, "strings not UTF-8: python3-onnx reads these bytes")
        with mfstest.mounted(modelfs, p, env) as mnt:
            arr = json.loads(read(os.path.join(mnt, "tensors", "s")))
            c.equal([x.encode("utf-8", "surrogateescape") for x in arr], values,
                    "strings not UTF-8: the tensor's JSON gives the bytes back")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


EXTRAS = (hostile, check_external_swap, check_string_not_utf8)
