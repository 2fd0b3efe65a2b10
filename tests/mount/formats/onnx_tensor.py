"""ONNX tensor files (format "onnx-tensor": one TensorProto a file): their
own checks, beyond the generic ones:

  - the generated files (scripts/gen_onnx_tensor.py): the tree (one tensor,
    no graph.json), every ONNX key of the entry, the metadata, against the
    expectations; and python3-onnx (onnx.load_tensor + numpy_helper.to_array)
    as an independent reader of every file whose data type onnx 1.12 has:
    dtype, shape and bytes through the mount;
  - a packed varint run longer than the probe looks at: held to its
    bounds there, counted at load (a wrong count refused, exit 5);
  - what must not be taken for a TensorProto, since a TensorProto has no
    magic: a SentencePiece-like model, ONNX models and the other ONNX
    protos (Sequence, Optional, Map, Graph, Node, SparseTensor ...),
    TensorProtos that disagree with themselves (a size, two places for
    the data, a segment, an unknown field, bytes after the end), random
    and short files: modelfs-ls does not know their format (exit 4); an
    ONNX model is "onnx" whatever its name, a TensorProto "onnx-tensor"
    whatever its name, and a file that both probes take is ONNX's (the
    higher bid);
  - a deterministic sample of Debian's libonnx-testdata (a few hundred of
    its input_N.pb / output_N.pb, those its models declare tensors, and
    every one they declare a sequence or an optional): mounted as one
    folder, each tensor against python3-onnx; the others are no model.
    Skipped, visibly, without the package.
"""
import glob
import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import tempfile

import mfstest
import gen_onnx as G
import numpy as np

try:
    import onnx
    from onnx import helper, numpy_helper
except ImportError:  # the cross-checks are skipped, visibly
    onnx = None

DIRS = ("gen/onnx_tensor",)
TESTDATA = "/usr/share/libonnx-testdata/data"
SAMPLE = 300        # tensor files of the test data, about


def read(p):
    return mfstest.read_bytes(p)


def ref_array(path):
    """python3-onnx's value of the TensorProto in `path`: (data_type, dims,
    numpy array or list of bytes)."""
    t = onnx.load_tensor(path)
    if t.data_type == onnx.TensorProto.STRING:
        return t.data_type, list(t.dims), list(t.string_data)
    if t.data_type in (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128) and \
            not t.HasField("raw_data"):
        # to_array of 1.12 fails on complex typed fields: onnx's parsed
        # (re, im) values, paired here.
        c64 = t.data_type == onnx.TensorProto.COMPLEX64
        parts = np.array(t.float_data if c64 else t.double_data, "<f4" if c64 else "<f8")
        return t.data_type, list(t.dims), parts.view("<c8" if c64 else "<c16").reshape(tuple(t.dims))
    return t.data_type, list(t.dims), numpy_helper.to_array(t, os.path.dirname(path))


def compare(c, what, path, entry, got):
    """The mounted tensor (its entry, its bytes `got`) against python3-onnx."""
    dt, dims, ref = ref_array(path)
    c.equal(entry["shape"], dims, what + " shape (python3-onnx)")
    if isinstance(ref, list):
        c.equal(entry["dtype"], "string", what + " dtype (python3-onnx)")
        c.equal(json.loads(got), [s.decode("utf-8", "replace") for s in ref],
                what + " strings (python3-onnx)")
        return
    if dt == onnx.TensorProto.BFLOAT16:
        # to_array widens bfloat16 to float32: the high half of each.
        c.equal(entry["dtype"], "bfloat16", what + " dtype (python3-onnx)")
        mine = (np.frombuffer(got, "<u2").astype("<u4") << 16).view("<f4")
        c.check(np.array_equal(mine, ref.ravel().astype("<f4"), equal_nan=True),
                what + " values (python3-onnx)")
        return
    c.equal(entry["dtype"], ref.dtype.name, what + " dtype (python3-onnx)")
    c.equal(got, ref.astype(ref.dtype.newbyteorder("<")).tobytes(), what + " bytes (python3-onnx)")


# ---- the generated files ------------------------------------------------------

def setup(c, t):
    t.onnx_tensors = 0


def check_model(c, x, model, expect, mount):
    if expect is None or expect.get("format") != "onnx-tensor":
        return
    name = os.path.basename(model)
    want = expect["tensors"][0]
    x.onnx_tensors += 1
    try:
        mnt = mount()
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (name, e))
        return
    tree = mfstest.walk_tree(mnt)
    doc = json.loads(read(os.path.join(mnt, "model.json")))
    c.equal(doc["format"], "onnx-tensor", name + ": format")
    c.equal(doc["format_version"], 0, name + ": format_version")
    c.equal(doc["metadata"], expect["metadata"], name + ": metadata")
    c.equal(doc["tensor_count"], 1, name + ": one tensor")
    t = doc["tensors"][0]
    top = {"model.json", "model.toml", "SHA256SUMS", "tensors", t["path"]}
    if "npy" in t:
        top |= {"npy", t["npy"]}
    if "f32" in t:
        top |= {"f32", t["f32"]}
    top |= {"stats.tsv", "model.safetensors", "files", "files/" + name}
    c.equal(set(tree), top, name + ": the tree (no graph.json; the files view)")
    for k in ("name", "dtype", "shape", "graph_path", "source", "storage", "onnx_field",
              "onnx_data_type", "location", "length", "element_bits"):
        c.equal(t.get(k), want.get(k), "%s: %s" % (name, k))
    if want["storage"] == "external":
        c.equal(t["offset"], want["offset"], name + ": offset in " + want["location"])
    got = read(os.path.join(mnt, t["path"]))
    if want["dtype"] == "string":
        c.equal(json.loads(got), want["values"], name + ": strings")
    else:
        c.equal(hashlib.sha256(got).hexdigest(), want["sha256"], name + ": bytes")
    if onnx is not None and want["onnx_data_type"] <= 16:
        compare(c, name, model, t, got)


def check_generated(c, t):
    c.check(t.onnx_tensors >= 60, "%d generated tensor files checked" % t.onnx_tensors)
    if onnx is None:
        c.skip("python3-onnx is not installed: the generated files are not read with it")


# ---- what is no TensorProto ------------------------------------------------------

def sentencepiece_like():
    """A SentencePiece ModelProto as tokenizer.model holds it: pieces (1:
    piece, score, type), trainer_spec (2), normalizer_spec (3)."""
    pieces = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    pieces += [("\u2581" + w, -float(i), 1) for i, w in enumerate(
        ["the", "a", "of", "to", "and", "in", "is", "ü", "x" * 40])]
    b = b"".join(G.f_bytes(1, G.f_bytes(1, p) + G.f_fixed32(2, struct.pack("<f", s)) +
                           G.f_varint(3, t)) for p, s, t in pieces)
    b += G.f_bytes(2, G.f_bytes(1, "corpus.txt") + G.f_bytes(2, "m") + G.f_varint(3, 1) +
                   G.f_varint(4, 8000) + G.f_fixed32(10, struct.pack("<f", 0.9995)))
    b += G.f_bytes(3, G.f_bytes(1, "nmt_nfkc") + G.f_bytes(2, b"\x00\x01\x02" * 50) +
                   G.f_varint(3, 1) + G.f_varint(4, 1))
    return b


def no_tensor_files(tmp):
    """{file name: bytes} that no reader may take for a TensorProto."""
    f32 = np.arange(6, dtype="<f4").tobytes()
    good = G.tensor_proto("w", 1, (2, 3), G.f_bytes(9, f32))
    files = {
        "tokenizer.model": sentencepiece_like(),
        "pieces_only.model": sentencepiece_like().split(G.key(2, 2))[0],
        # TensorProtos that disagree with themselves.
        "raw_short.pb": G.tensor_proto("w", 1, (2, 4), G.f_bytes(9, f32)),
        "raw_and_typed.pb": good + G.f_bytes(4, f32),
        "raw_twice.pb": good + G.f_bytes(9, f32),
        "type_twice.pb": good + G.f_varint(2, 1),
        "typed_wrong_field.pb": G.tensor_proto("w", 1, (2, 3), G.f_bytes(5, bytes(6))),
        "typed_count.pb": G.tensor_proto("w", 7, (2, 3), G.f_bytes(7, bytes(5))),
        # (raw_data first: the ONNX probe takes a file whose first field
        # reads as ir_version, as a model cut short)
        "no_type.pb": G.f_bytes(9, f32) + G.f_varint(1, 2) + G.f_varint(1, 3) + G.f_bytes(8, "w"),
        "unknown_type.pb": G.tensor_proto("w", 99, (6,), G.f_bytes(9, f32)),
        "type_zero.pb": G.tensor_proto("w", 0, (6,), G.f_bytes(9, f32)),
        "negative_dim.pb": G.tensor_proto("w", 1, (-1 & ((1 << 64) - 1), 6), G.f_bytes(9, f32)),
        "segment.pb": good + G.f_bytes(3, G.f_varint(1, 0) + G.f_varint(2, 6)),
        "unknown_field.pb": good + G.f_varint(15, 1),
        "name_a_varint.pb": G.f_varint(1, 2) + G.f_varint(1, 3) + G.f_varint(2, 1) +
        G.f_varint(8, 1) + G.f_bytes(9, f32),
        "type_a_string.pb": G.f_bytes(9, f32) + G.f_varint(1, 6) + G.f_bytes(2, "\x01"),
        "trailing_zero.pb": good + b"\x00",
        "trailing_bytes.pb": good + b"\x01\x02\x03",
        "cut.pb": good[:-1],
        "no_data.pb": G.tensor_proto("w", 1, (2, 3)),
        "scalar_no_data.pb": G.f_varint(2, 1),
        "string_raw.pb": G.tensor_proto("s", 8, (1,), G.f_bytes(9, b"abcd")),
        "ext_no_location.pb": G.tensor_proto("e", 1, (6,), G.f_bytes(13, G.entry("offset", "0")) +
                                             G.f_varint(14, 1)),
        "ext_not_external.pb": G.tensor_proto("e", 1, (6,), G.f_bytes(13, G.entry("location", "x"))),
        "ext_bad_key.pb": G.tensor_proto("e", 1, (6,), G.external_body("x.bin") +
                                         G.f_bytes(13, G.entry("basepath", "/"))),
        "ext_wrong_length.pb": G.tensor_proto("e", 1, (6,), G.external_body("x.bin", 0, 20)),
        "too_many_dims.pb": G.tensor_proto("w", 1, (1,) * 65, G.f_bytes(9, bytes(4))),
        # Text.
        "config.json": b'{"model_type": "bert", "vocab_size": 30522}\n',
        "run.sh": b"#!/bin/sh\necho hello\n",
        "empty_line": b"\n",
    }
    if onnx is not None:
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        t = numpy_helper.from_array(a, "w")
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", 1, [2, 3])],
                              [helper.make_tensor_value_info("y", 1, [2, 3])], [t])
        files.update({
            "sequence.pb": numpy_helper.from_list([a, a], "seq").SerializeToString(),
            "sequence_noname.pb": numpy_helper.from_list([a]).SerializeToString(),
            "sequence_empty_tensor.pb": helper.make_sequence(
                "", onnx.SequenceProto.TENSOR,
                [helper.make_tensor("", 1, [0], [])]).SerializeToString(),
            "optional.pb": numpy_helper.from_optional(a, "opt").SerializeToString(),
            "map.pb": helper.make_map("m", onnx.TensorProto.INT64, [1, 2],
                                      numpy_helper.from_list([a, a])).SerializeToString(),
            "map_strkeys.pb": helper.make_map("m", onnx.TensorProto.STRING, [b"a"],
                                              numpy_helper.from_list([a])).SerializeToString(),
            "graph.pb": g.SerializeToString(),
            "node.pb": helper.make_node("Relu", ["x"], ["y"], "n").SerializeToString(),
            "value_info.pb": helper.make_tensor_value_info("x", 1, [2, 3]).SerializeToString(),
            "attribute.pb": helper.make_attribute("value", t).SerializeToString(),
            "sparse.pb": helper.make_sparse_tensor(
                numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "v"),
                numpy_helper.from_array(np.array([0, 4], np.int64), "i"), [2, 3]).SerializeToString(),
            # An ONNX model whose first field is one ModelProto does not
            # have: neither probe takes it.
            "model_odd_start.onnx": G.f_varint(100, 1) +
            helper.make_model(g).SerializeToString(),
        })
    rnd = random.Random(19)
    for i in range(200):
        files["random%03d" % i] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 3000)))
    for i in range(256):
        files["byte%02x" % i] = bytes([i])
    for i in range(300):
        files["short%03d" % i] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(2, 8)))
    paths = []
    for name, data in files.items():
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        paths.append(p)
    return paths


def check_refused(c, build, tmp, env):
    ls = os.path.join(build, "modelfs-ls")
    paths = no_tensor_files(tmp)
    r = subprocess.run([ls, "--check"] + paths, capture_output=True, text=True, env=env, timeout=300)
    codes = {}
    for line in r.stdout.splitlines():
        code, _, p = line.partition("  ")
        codes[p] = int(code)
    for p in paths:
        c.equal(codes.get(p), 4, "%s: not a model file of a known format" % os.path.basename(p))
    # The message, and modelfs itself, for a few.
    for name in ("tokenizer.model", "raw_short.pb", "trailing_zero.pb", "sequence.pb", "map.pb"):
        p = os.path.join(tmp, name)
        if not os.path.exists(p):
            continue
        r = subprocess.run([ls, p], capture_output=True, text=True, env=env, timeout=60)
        c.equal(r.returncode, 4, name + ": modelfs-ls exit")
        c.check("not a model file of a known format" in r.stderr and "onnx-tensor" in r.stderr,
                "%s: modelfs-ls says %r" % (name, r.stderr))
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    r = subprocess.run([os.path.join(build, "modelfs"), os.path.join(tmp, "tokenizer.model"), mnt],
                       capture_output=True, text=True, env=env, timeout=60)
    if os.path.ismount(mnt):
        mfstest.unmount(mnt)
    os.rmdir(mnt)
    c.equal(r.returncode, 4, "tokenizer.model: modelfs exit")


def fmt(ls, p, env):
    r = subprocess.run([ls, p, "model.json"], capture_output=True, env=env, timeout=60)
    return json.loads(r.stdout)["format"] if r.returncode == 0 else r.returncode


def check_names_and_bids(c, build, gen, tmp, env):
    """Known by the bytes, never the name; the higher bid wins."""
    ls = os.path.join(build, "modelfs-ls")
    src = os.path.join(gen, "float32_raw.pb")
    if os.path.exists(src):
        shutil.copy(src, os.path.join(tmp, "tensor.onnx"))
        c.equal(fmt(ls, os.path.join(tmp, "tensor.onnx"), env), "onnx-tensor",
                "a TensorProto named .onnx")
    model = G.model(G.graph("g", inits=[G.tensor_proto("w", 1, (2,), G.f_bytes(9, bytes(8)))]))
    with open(os.path.join(tmp, "model.pb"), "wb") as f:
        f.write(model)
    c.equal(fmt(ls, os.path.join(tmp, "model.pb"), env), "onnx", "an ONNX model named .pb")
    # Both probes take this: a string TensorProto of 9 strings whose first
    # bytes read as a ModelProto (dims 9 = ir_version 9, int64_data =
    # a graph that begins as one, string_data = doc_string) as far as the
    # ONNX probe looks (8 windows), data_type last. ONNX bids higher, and
    # its load refuses it (exit 5). (Without the graph, it is no ModelProto
    # for the ONNX probe: issue 34.)
    poly = G.f_varint(1, 9) + G.f_bytes(7, b"\x12\x01g") + \
        b"".join(G.f_bytes(6, b"s" * 5000) for _ in range(9)) + G.f_varint(2, 8)
    p = os.path.join(tmp, "polyglot")
    with open(p, "wb") as f:
        f.write(poly)
    r = subprocess.run([ls, p], capture_output=True, text=True, env=env, timeout=60)
    c.check(r.returncode == 5 and "ModelProto field 2" in r.stderr,
            "polyglot: ONNX's higher bid wins: exit %d %r" % (r.returncode, r.stderr))
    # The same without its first field is no ModelProto for the ONNX
    # probe (data_type in the way): a TensorProto of shape [].
    p2 = os.path.join(tmp, "polyglot_scalar")
    with open(p2, "wb") as f:
        f.write(G.f_bytes(6, b"s" * 5000) + G.f_varint(2, 8))
    c.equal(fmt(ls, p2, env), "onnx-tensor", "the polyglot's TensorProto alone")


def check_big(c, build, tmp, env):
    """A packed varint run longer than the probe looks at (16 MiB) is held
    to its bounds by the probe and counted by the load: the right count
    loads and reads as numpy says, a wrong one within the bounds is refused
    at load (exit 5), naming the count."""
    ls = os.path.join(build, "modelfs-ls")
    n = 17 << 20
    vals = np.arange(n, dtype=np.uint8) & 0x7f          # one byte a varint
    run = G.f_bytes(5, vals.tobytes())
    for name, dims, code in (("big_int8", n, 0), ("big_int8_count", n - 1, 5)):
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(G.f_varint(1, dims) + G.f_varint(2, 3) + G.f_bytes(8, "v") + run)
        r = subprocess.run([ls, p, "tensors/v"], capture_output=True, env=env, timeout=300)
        c.equal(r.returncode, code, "%s: exit (%s)" % (name, r.stderr[-300:]))
        if code == 0:
            c.check(r.stdout == vals.astype("i1").tobytes(), name + ": its values")
        else:
            c.check(b"int32_data holds %d values" % n in r.stderr, "%s: says %r" % (name, r.stderr))
        os.unlink(p)


# ---- ONNX's test data ------------------------------------------------------

def test_data_files(root):
    """[(path, kind)] of every input_N.pb / output_N.pb, kind being what
    its model declares (tensor_type, sequence_type, optional_type ...)."""
    out = []
    for model in sorted(glob.glob(os.path.join(root, "*", "*", "model.onnx"))):
        d = os.path.dirname(model)
        sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
        if not sets:
            continue
        m = onnx.load(model, load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        ins = [i for i in m.graph.input if i.name not in inits]
        lists = {"input": ins, "output": list(m.graph.output)}
        for s in sets:
            for f in sorted(os.listdir(s)):
                kind, _, idx = f[:-3].partition("_")
                if not f.endswith(".pb") or kind not in lists or not idx.isdigit():
                    continue
                vi = lists[kind]
                k = vi[int(idx)].type.WhichOneof("value") if int(idx) < len(vi) else None
                out.append((os.path.join(s, f), k))
    return out


def check_test_data(c, build, root, tmp, env):
    if not os.path.isdir(root):
        c.skip("%s is absent (Debian's libonnx-testdata): ONNX's own TensorProto files are not "
               "checked" % root)
        return
    if onnx is None:
        c.skip("python3-onnx is not installed: ONNX's test data is not checked")
        return
    files = test_data_files(root)
    tensors = [p for p, k in files if k == "tensor_type"]
    others = [p for p, k in files if k not in ("tensor_type", None)]
    c.check(len(tensors) > 1000 and others, "%d tensor files and %d others in %s" %
            (len(tensors), len(others), root))
    # Every k-th tensor file, and the first of each data type and
    # encoding (raw_data or a typed field) among them, and every other.
    step = max(1, len(tensors) // SAMPLE)
    sample = set(tensors[::step])
    firsts = {}
    for p in tensors:
        t = onnx.load_tensor(p)
        firsts.setdefault((t.data_type, t.HasField("raw_data")), p)
    sample |= set(firsts.values())
    sample = sorted(sample)
    data = os.path.join(tmp, "testdata")
    for p in sample + others:
        rel = os.path.relpath(p, root)
        os.makedirs(os.path.join(data, os.path.dirname(rel)), exist_ok=True)
        shutil.copy(p, os.path.join(data, rel))
    print("test data: %d tensor files of %d (%d data types and encodings), %d others" %
          (len(sample), len(tensors), len(firsts), len(others)), flush=True)
    ls = os.path.join(build, "modelfs-ls")
    r = subprocess.run([ls, "--check"] + [os.path.join(data, os.path.relpath(p, root))
                                          for p in others],
                       capture_output=True, text=True, env=env, timeout=300)
    c.check(r.stdout.count("\n") == len(others) and
            all(line.startswith("4 ") for line in r.stdout.splitlines()),
            "sequences and optionals of the test data are no model: %r" % r.stdout[:500])
    with mfstest.mounted(os.path.join(build, "modelfs"), data, env) as mnt:
        by_path = {m["path"]: m for m in json.loads(read(os.path.join(mnt, "models.json")))}
        c.equal(sorted(by_path), sorted(os.path.relpath(p, root) for p in sample),
                "the mount's models are the tensor files, and only those")
        for p in sample:
            rel = os.path.relpath(p, root)
            m = by_path.get(rel, {})
            what = "testdata " + rel
            if not c.check(m.get("status") == "ok" and m.get("format") == "onnx-tensor",
                           "%s: %r" % (what, m)):
                continue
            doc = json.loads(read(os.path.join(mnt, rel, "model.json")))
            if not c.equal(len(doc["tensors"]), 1, what + ": one tensor"):
                continue
            t = doc["tensors"][0]
            compare(c, what, p, t, read(os.path.join(mnt, rel, t["path"])))


def check_written_here(c, t):
    """The files this test writes, and ONNX's test data."""
    if onnx is None:
        c.skip("python3-onnx is not installed: no cross-check with an independent reader")
    tmp = tempfile.mkdtemp(prefix="modelfs-onnx-tensor-")
    try:
        check_refused(c, t.build, tmp, t.env)
        check_names_and_bids(c, t.build, os.path.join(t.gen, "onnx_tensor"), tmp, t.env)
        check_big(c, t.build, tmp, t.env)
        check_test_data(c, t.build, TESTDATA, tmp, t.env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


EXTRAS = (check_generated, check_written_here)
