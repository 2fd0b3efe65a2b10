"""GGUF's own checks (issue 10), beyond the generic ones: for every
NAME.gguf with a gguf .expect.json in DIRS, every table field (name, dtype,
shape, ggml_shape, ggml_type, ggml_type_id, block_size, type_size, nbytes,
data_offset, offset), every tensor's bytes (sha256 through the mount and
its xattr), the metadata (values and types, in file order, exactly as
JSON values: u64 2^64-1, i64 -2^63, float32 as the double nearest it),
alignment and counts; arrays kept in metadata/*.json read back whole and
model.json stays small. The same for random models written here with
gen_gguf's writer (random metadata trees, types, shapes, alignment and
version). Then hostile files written here: each is refused
with exit 5 and one line naming the file and a byte offset (or, where
marked, gives a correct tree), quickly, with no sanitizer report.

The expect files are independent of our reader: ../shared's come from
gguf-py's writer inputs, ours from scripts/gen_gguf.py's. gguf-py's own
reader (GGUFReader) has no Debian package; when MODELFS_GGUF_PY names a
folder holding its `gguf` package (llama.cpp's gguf-py/), every model is
also read with it and compared with the mount (key order, types and
values, tensor names, types, ne, offsets, sizes and bytes); a file it
cannot read (a type it does not know, duplicate names) is a visible skip.
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

import mfstest
import gen_gguf as G
import numpy as np

DIRS = ("gen/gguf", "shared/fixtures/gguf")

TABLE_KEYS = ("dtype", "shape", "nbytes", "ggml_type", "ggml_type_id", "ggml_shape", "data_offset",
              "block_size", "type_size")
SMALL_DOC = 64 * 1024


def same(a, b):
    """JSON values equal with their kinds: 1 is not 1.0 nor True."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def resolve(c, mnt, name, doc):
    """model.json's metadata with every array kept in its own file read
    back from that file; checks the reference's count."""
    out = {}
    for k, v in doc["metadata"].items():
        if isinstance(v, dict) and doc["metadata_types"].get(k, "").startswith("array["):
            c.equal(sorted(v), ["count", "file"], "%s: %s reference" % (name, k))
            c.check(v["file"].startswith("metadata/"), "%s: %s file %s" % (name, k, v["file"]))
            with open(os.path.join(mnt, v["file"]), "rb") as f:
                arr = json.loads(f.read())
            c.equal(len(arr), v["count"], "%s: %s count" % (name, k))
            v = arr
        out[k] = v
    return out


def setup(c, t):
    t.gguf = load_gguf_py(c)


def check_model(c, t, model, expect, mount):
    if expect is None or expect.get("format") != "gguf":
        return
    try:
        mnt = mount()
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (os.path.basename(model), e))
        return
    check_mounted(c, model, expect, mnt, t.gguf)


def check_mounted(c, model, expect, mnt, gguf=None):
    name = os.path.basename(model)
    with open(os.path.join(mnt, "model.json"), "rb") as f:
        raw = f.read()
    doc = json.loads(raw)
    c.equal(doc["format"], "gguf", name + ": format")
    c.equal(doc["format_version"], expect["gguf_version"], name + ": format_version")
    c.equal(doc["alignment"], expect["alignment"], name + ": alignment")
    c.equal(doc["kv_count"], expect["kv_count"], name + ": kv_count")
    if "data_offset" in expect:
        c.equal(doc["data_offset"], expect["data_offset"], name + ": data section offset")
    c.check(doc["data_offset"] % expect["alignment"] == 0, name + ": data section aligned")
    c.check(same(doc["metadata_types"], expect["metadata_types"]),
            "%s: metadata_types %r, want %r" % (name, doc["metadata_types"], expect["metadata_types"]))
    meta = resolve(c, mnt, name, doc)
    bad = [k for k in expect["metadata"] if not same(meta.get(k), expect["metadata"][k])]
    c.check(not bad and list(meta) == list(expect["metadata"]),
            "%s: metadata differs at %s" % (name, [(k, meta.get(k), expect["metadata"][k])
                                                   for k in bad[:3]] or "key order"))
    # Large arrays: in their own files, so model.json stays small.
    big = [k for k, v in expect["metadata"].items() if isinstance(v, list) and len(v) > 1024]
    for k in big:
        c.check(isinstance(doc["metadata"][k], dict), "%s: %s (%d elements) is in model.json"
                % (name, k, len(expect["metadata"][k])))
    if big:
        c.check(len(raw) < SMALL_DOC, "%s: model.json is %d bytes" % (name, len(raw)))
        c.check(os.path.getsize(os.path.join(mnt, "model.toml")) < SMALL_DOC, name + ": model.toml size")
    c.equal(len(doc["tensors"]), expect["tensor_count"], name + ": tensor count")
    for t, want in zip(doc["tensors"], expect["tensors"]):
        what = "%s: tensor %r" % (name, want["name"])
        c.equal(t["name"], want["name"], what + " name (file order)")
        for key in TABLE_KEYS:
            if key in want:
                c.equal(t.get(key), want[key], "%s %s" % (what, key))
        c.equal(t["offset"], doc["data_offset"] + want["data_offset"], what + " absolute offset")
        p = os.path.join(mnt, t["path"])
        c.equal(os.path.getsize(p), want["nbytes"], what + " file size")
        c.equal(mfstest.sha256_file(p), want["sha256"], what + " sha256 through the mount")
        c.equal(os.getxattr(p, "user.modelfs.sha256").decode(), want["sha256"], what + " sha256 xattr")
        if want.get("block_size", 1) > 1:
            c.check("npy" in t and t["stored_shape"][-1] == t["ggml_shape"][0] // want["block_size"]
                    * want["type_size"], what + " blocks' .npy twin in bytes per row")
    if gguf is not None:
        check_with_gguf_py(c, gguf, model, mnt, doc)


# ---- random models ---------------------------------------------------------

RANDOM_MODELS = 16


def random_value(r, depth):
    """(GGUF type, value) for gen_gguf's writer; r is a random.Random."""
    t = r.choice([G.U8, G.I8, G.U16, G.I16, G.U32, G.I32, G.F32, G.BOOL, G.STR, G.U64, G.I64, G.F64]
                 + ([G.ARR] * (8 if depth < 2 else 3) if depth < 4 else []))
    if t != G.ARR:
        return t, scalar(r, t)
    et, _ = random_value(r, depth + 1)
    n = r.choice([0, 1, 3, 20, 1030] if et != G.ARR else [1, 3, 60])
    items = []
    for _ in range(n):
        if et == G.ARR:
            # Inner arrays may each have their own element type ("mixed").
            inner = random_value(r, depth + 1) if r.random() < 0.1 else (G.I32, 0)
            items.append(inner[1] if inner[0] == G.ARR else
                         (inner[0], [scalar(r, inner[0]) for _ in range(r.randrange(3))]))
        else:
            items.append(scalar(r, et))
    return G.ARR, (et, items)


def scalar(r, t):
    bits = {G.U8: (0, 2 ** 8), G.I8: (-2 ** 7, 2 ** 7), G.U16: (0, 2 ** 16), G.I16: (-2 ** 15, 2 ** 15),
            G.U32: (0, 2 ** 32), G.I32: (-2 ** 31, 2 ** 31), G.U64: (0, 2 ** 64), G.I64: (-2 ** 63, 2 ** 63)}
    if t in bits:
        lo, hi = bits[t]
        return r.choice([lo, hi - 1, 0, r.randrange(lo, hi)])
    if t == G.BOOL:
        return r.random() < 0.5
    if t == G.STR:
        return "".join(r.choice("ab/.:\"\\\n\t\x01ü名🌍") for _ in range(r.randrange(6)))
    x = r.gauss(0, 1) * 10.0 ** r.randrange(-40, 40)
    return x if t == G.F64 else float(np.float32(x)) if abs(x) < 3e38 else 1.5


def random_models(outdir, n):
    """n random GGUF files (random metadata trees, types, shapes and
    alignment) with their expectations, from gen_gguf's writer."""
    ids = sorted(G.GGML_TYPES)
    for i in range(n):
        r = random.Random(1000 + i)
        rng = np.random.default_rng(1000 + i)
        align = 2 ** r.randrange(10)
        kvs = [G.KV("general.alignment", G.U32, align)]
        for k in range(r.randrange(12)):
            t, v = random_value(r, 0)
            kvs.append(G.KV("r.%d.%d" % (i, k), t, v))
        ts = []
        for k in range(r.randrange(8)):
            tid = r.choice(ids)
            bs = G.GGML_TYPES[tid][2]
            ne = [bs * r.randrange(3)] + [r.randrange(4) for _ in range(r.randrange(4))]
            ts.append(G.blocks("t%d/%d" % (k, tid), tid, ne, rng))
        G.write(outdir, "random%02d.gguf" % i, kvs, ts, version=r.choice([2, 3]), alignment=align)


# ---- gguf-py's reader, when there is one ----------------------------------

def load_gguf_py(c):
    where = os.environ.get("MODELFS_GGUF_PY")
    if not where:
        c.skip("MODELFS_GGUF_PY is not set: no cross-check with gguf-py's GGUFReader")
        return None
    sys.path.insert(0, where)
    try:
        import gguf
        return gguf
    except Exception as e:  # noqa: BLE001 - any import failure is a skip
        c.skip("gguf-py at %s does not import: %s" % (where, e))
        return None


def leaves(v):
    if isinstance(v, list):
        return [y for x in v for y in leaves(x)]
    return [v]


def check_with_gguf_py(c, gguf, model, mnt, doc):
    """GGUFReader's view of `model` against the mounted tree."""
    name = os.path.basename(model)
    try:
        rd = gguf.GGUFReader(model)
    except Exception as e:  # noqa: BLE001 - that reader's refusal is a skip
        c.skip("gguf-py cannot read %s: %s" % (name, e))
        return
    A = gguf.GGUFValueType.ARRAY
    meta = resolve(c, mnt, name, doc)
    fields = [f for f in rd.fields.values() if not f.name.startswith("GGUF.")]
    c.equal([f.name for f in fields], list(meta), name + ": gguf-py key order")
    for f in fields:
        what = "%s: gguf-py %s" % (name, f.name)
        if "mixed" in doc["metadata_types"][f.name]:
            continue    # that reader takes every element's type from the first one
        if f.types[-1] != A:
            n = len(f.types) - 1
            c.equal("array[" * n + f.types[-1].name.lower() + "]" * n, doc["metadata_types"][f.name],
                    what + " type")
        vals = []
        for i in f.data:
            part = f.parts[i]
            if f.types[-1] == gguf.GGUFValueType.STRING:
                vals.append(bytes(part).decode("utf-8"))
            else:
                x = part[0].item()
                vals.append(bool(x) if f.types[-1] == gguf.GGUFValueType.BOOL else x)
        mine = leaves(meta[f.name]) if f.types[0] == A else [meta[f.name]]
        c.check(vals == mine, "%s values %r, mount %r" % (what, vals[:8], mine[:8]))
    c.equal(len(rd.tensors), len(doc["tensors"]), name + ": gguf-py tensor count")
    for rt, t in zip(rd.tensors, doc["tensors"]):
        what = "%s: gguf-py tensor %r" % (name, rt.name)
        if t["ggml_type"] == "Q8_1" and gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_1][1] != 36:
            # Older gguf-py tables say 40 bytes per block; ggml's block_q8_1 is 36.
            c.skip(what + ": this gguf-py's Q8_1 block size is not ggml's")
            continue
        c.equal(rt.name, t["name"], what + " name")
        c.equal(int(rt.tensor_type), t["ggml_type_id"], what + " type")
        c.equal([int(x) for x in rt.shape], t["ggml_shape"], what + " ne")
        c.equal(int(rt.data_offset), t["offset"], what + " offset")
        c.equal(int(rt.n_bytes), t["nbytes"], what + " nbytes")
        data = bytes(np.asarray(rt.data).tobytes())
        with open(os.path.join(mnt, t["path"]), "rb") as fh:
            c.check(fh.read() == data, what + " bytes")


# ---- hostile files -------------------------------------------------------

def header(nt, nkv, version=3):
    return b"GGUF" + struct.pack("<IQQ", version, nt, nkv)


def kv(key, typ, value):
    return G.gstr(key) + struct.pack("<I", typ) + G.enc_value(typ, value)


def info(name, ne, type_id, offset):
    return (G.gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
            + struct.pack("<IQ", type_id, offset))


def with_data(head, data, align=32):
    return head + b"\0" * (G.align_up(len(head), align) - len(head)) + data


def hostile_files():
    """(name, bytes, expected): expected is a substring of the refusal, or
    None for a file that must give a correct tree."""
    arch = kv("general.architecture", G.STR, "x")
    f32x4 = struct.pack("<4f", 1, 2, 3, 4)
    good = with_data(header(1, 1) + arch + info("t", [4], 0, 0), f32x4)
    nested = struct.pack("<IQ", G.ARR, 1) * 10000 + struct.pack("<IQ", G.U8, 0)
    yield "ok_header_only", header(0, 0), None
    yield "ok_one_tensor", good, None
    yield "ok_dup_names", with_data(header(2, 1) + arch + info("t", [4], 0, 0) + info("t", [4], 0, 32),
                                    f32x4 + b"\0" * 16 + f32x4), None
    yield "ok_empty_past_eof", header(2, 0) + info("e", [0], 0, 0) + info("f", [32, 0], 2, 2 ** 40), None
    # Large but legal: quick, and the arrays leave model.json.
    yield "ok_100k_empty_arrays", (header(0, 1) + G.gstr("k") + struct.pack("<IIQ", G.ARR, G.ARR, 100000)
                                   + struct.pack("<IQ", G.U8, 0) * 100000), None
    yield "ok_100k_keys", header(0, 100000) + b"".join(kv("k%d" % i, G.U8, 1) for i in range(100000)), None
    yield "cut_in_kv", (header(0, 1) + kv("general.name", G.STR, "x" * 100))[:80], "past the end"
    yield "cut_in_data", good[:-4], "past the end"
    yield "kv_count_2^60", header(0, 2 ** 60), "metadata pairs cannot fit"
    yield "tensor_count_2^62", header(2 ** 62, 0), "tensors cannot fit"
    yield "string_len_2^63", header(0, 1) + struct.pack("<Q", 2 ** 63) + b"key" * 10, "past the end"
    yield "value_string_2^63", header(0, 1) + G.gstr("k") + struct.pack("<IQ", G.STR, 2 ** 63), "past the end"
    yield "array_2^62", header(0, 1) + G.gstr("k") + struct.pack("<IIQ", G.ARR, G.U8, 2 ** 62), "cannot fit"
    yield "array_of_strings_2^62", header(0, 1) + G.gstr("k") + struct.pack("<IIQ", G.ARR, G.STR, 2 ** 62), "cannot fit"
    yield "nested_10000", header(0, 1) + G.gstr("k") + struct.pack("<I", G.ARR) + nested, "nested more than"
    yield "value_type_13", header(0, 1) + G.gstr("k") + struct.pack("<I", 13) + b"\0" * 8, "not a GGUF type"
    yield "array_type_99", header(0, 1) + G.gstr("k") + struct.pack("<IIQ", G.ARR, 99, 1) + b"\0" * 8, "not a GGUF value type"
    yield "bool_value_2", header(0, 1) + G.gstr("k") + struct.pack("<IB", G.BOOL, 2), "not 0 or 1"
    yield "dup_key", header(0, 2) + kv("k", G.U8, 1) + kv("k", G.U8, 2), "duplicate metadata key"
    yield "version_1", b"GGUF" + struct.pack("<III", 1, 0, 0), "version 1"
    yield "version_4", b"GGUF" + struct.pack("<IQQ", 4, 0, 0), "unknown GGUF version 4"
    yield "big_endian", b"GGUF" + struct.pack(">IQQ", 3, 0, 0), "big-endian"
    yield "overlap", with_data(header(2, 1) + arch + info("a", [8], 0, 0) + info("b", [4], 0, 0), f32x4 * 2), "overlaps"
    yield "overlap_partial", with_data(header(2, 1) + arch + info("a", [16], 0, 0) + info("b", [4], 0, 32),
                                       f32x4 * 4), "overlaps"
    yield "unaligned", with_data(header(1, 1) + arch + info("t", [4], 0, 4), b"\0" * 4 + f32x4), "not a multiple of the alignment"
    yield "past_eof", with_data(header(1, 1) + arch + info("t", [4], 0, 2 ** 40), f32x4), "past the end"
    yield "offset_2^64-32", with_data(header(1, 1) + arch + info("t", [4], 0, 2 ** 64 - 32), f32x4), "past the end"
    yield "unknown_type", with_data(header(1, 1) + arch + info("t", [4], 99, 0), f32x4), "unknown ggml type id 99"
    yield "removed_type", with_data(header(1, 1) + arch + info("t", [4], 31, 0), f32x4), "Q4_0_4_4"
    yield "ne_overflow", with_data(header(1, 1) + arch + info("t", [2 ** 32, 2 ** 32, 2 ** 32], 0, 0), f32x4), "overflows"
    yield "bytes_overflow", with_data(header(1, 1) + arch + info("t", [2 ** 62], 0, 0), f32x4), "overflows"
    yield "five_dims", with_data(header(1, 1) + arch + info("t", [1, 1, 1, 1, 4], 0, 0), f32x4), "at most 4"
    yield "partial_block", with_data(header(1, 1) + arch + info("t", [33], 2, 0), b"\0" * 36), "block size 32"
    yield "alignment_0", with_data(header(1, 1) + kv("general.alignment", G.U32, 0) + info("t", [4], 0, 0), f32x4), "not a power of two"
    yield "alignment_48", with_data(header(1, 1) + kv("general.alignment", G.U32, 48) + info("t", [4], 0, 0), f32x4, 48), "not a power of two"
    yield "alignment_u64", with_data(header(1, 1) + kv("general.alignment", G.U64, 32) + info("t", [4], 0, 0), f32x4), "not a uint32"
    yield "tensor_name_2^63", header(1, 0) + struct.pack("<Q", 2 ** 63) + b"\0" * 20, "past the end"


def check_hostile(c, build, env):
    work = tempfile.mkdtemp(prefix="modelfs-gguf-bad-")
    try:
        cases = list(hostile_files())
        paths = []
        for n, b, _ in cases:
            p = os.path.join(work, n + ".gguf")
            with open(p, "wb") as f:
                f.write(b)
            paths.append(p)
        ls = os.path.join(build, "modelfs-ls")
        try:
            r = subprocess.run([ls, "--check"] + paths, capture_output=True, env=env, timeout=120)
        except subprocess.TimeoutExpired:
            c.check(False, "hostile files: modelfs-ls --check hung")
            return
        codes = {}
        for line in r.stdout.decode(errors="replace").splitlines():
            code, _, path = line.partition("  ")
            codes[path] = int(code)
        errs = r.stderr.decode(errors="replace").splitlines()
        for (n, _, want), p in zip(cases, paths):
            mine = [e for e in errs if e.startswith("modelfs-ls: %s: " % p)]
            if want is None:
                c.equal((codes.get(p), mine), (0, []), "%s: a correct tree" % n)
                continue
            c.equal(codes.get(p), 5, "%s: refused as corrupt (%s)" % (n, mine))
            c.check(len(mine) == 1 and ": byte " in mine[0] and want in mine[0],
                    "%s: one line naming the file, an offset and %r: %r" % (n, want, mine))
        # The daemon refuses them the same way (a few; --check is the same loader).
        for n in ("nested_10000", "array_2^62", "overlap", "kv_count_2^60"):
            p = os.path.join(work, n + ".gguf")
            mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
            r = subprocess.run([os.path.join(build, "modelfs"), p, mnt], capture_output=True, text=True,
                               env=env, timeout=60)
            c.equal(r.returncode, 5, "%s: modelfs refuses it" % n)
            c.check(r.stderr.count("\n") == 1 and p in r.stderr, "%s: one line: %r" % (n, r.stderr))
            mfstest.unmount(mnt)
            os.rmdir(mnt)
        # The accepted ones mount and read.
        for n in ("ok_header_only", "ok_dup_names"):
            with mfstest.mounted(os.path.join(build, "modelfs"), os.path.join(work, n + ".gguf"), env) as mnt:
                doc = json.load(open(os.path.join(mnt, "model.json")))
                c.equal([t["path"] for t in doc["tensors"]], [] if n == "ok_header_only"
                        else ["tensors/t", "tensors/t%~2"], n + ": tensor files")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_not_utf8(c, build, env):
    """Issue 19, item 3: names and strings that are not valid UTF-8 stay
    recoverable. A tensor name's stray bytes are %XX in its file name and
    its model.json path alike (the names rule), `name_hex` has its bytes
    and user.modelfs.name the exact name; a string value's are \\udcXX in
    model.json (json.loads, then surrogateescape, gives the bytes back)."""
    work = mfstest.scratch("modelfs-gguf-utf8-")
    try:
        names = [b"ok", b"bad\xffname", b"cut\xe5\x90", b"\xc0\xaf.x"]
        f32x4 = struct.pack("<4f", 1, 2, 3, 4)
        value = b"caf\xe9 \xff\xfe"
        head = header(len(names), 1) + kv(b"general.name", G.STR, value)
        head += b"".join(info(n, [4], 0, 32 * i) for i, n in enumerate(names))
        data = b"".join(f32x4 + bytes(16) for _ in names)
        p = os.path.join(work, "notutf8.gguf")
        with open(p, "wb") as f:
            f.write(with_data(head, data))
        with mfstest.mounted(os.path.join(build, "modelfs"), p, env) as mnt:
            want = {"ok": b"ok", "bad%FFname": b"bad\xffname", "cut%E5%90": b"cut\xe5\x90",
                    "%C0%AF.x": b"\xc0\xaf.x"}
            c.equal(sorted(os.listdir(os.path.join(mnt, "tensors"))), sorted(want),
                    "not UTF-8: tensor file names escape the stray bytes")
            with open(os.path.join(mnt, "model.json"), "rb") as f:
                doc = json.loads(f.read())
            for t in doc["tensors"]:
                raw = want.get(t["path"][len("tensors/"):])
                if not c.check(raw is not None, "not UTF-8: model.json path %r is a file" % t["path"]):
                    continue
                c.equal(t["name"].encode("utf-8", "surrogateescape"), raw,
                        "not UTF-8: %s: name recovers the bytes" % t["path"])
                if raw != b"ok":
                    c.equal(t.get("name_hex"), raw.hex(), "not UTF-8: %s: name_hex" % t["path"])
                full = os.path.join(mnt, t["path"])
                c.equal(os.getxattr(full, "user.modelfs.name"), raw,
                        "not UTF-8: %s: user.modelfs.name" % t["path"])
                with open(full, "rb") as f:
                    c.equal(f.read(), f32x4, "not UTF-8: %s: bytes" % t["path"])
            got = doc["metadata"].get("general.name")
            c.check(isinstance(got, str) and got.encode("utf-8", "surrogateescape") == value,
                    "not UTF-8: a string value recovers its bytes: %r" % (got,))
            with open(os.path.join(mnt, "SHA256SUMS"), "rb") as f:
                sums = f.read()
            c.check(b"  tensors/bad%FFname\n" in sums and sums.decode("utf-8", "strict"),
                    "not UTF-8: SHA256SUMS lists the escaped paths, as UTF-8")
            with open(os.path.join(mnt, "model.toml"), "rb") as f:
                toml = f.read().decode("utf-8", "strict")
            c.check("caf\ufffd \ufffd\ufffd" in toml, "not UTF-8: model.toml says U+FFFD")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_random(c, t):
    """RANDOM_MODELS random models of gen_gguf's writer, as those of DIRS."""
    tmp = tempfile.mkdtemp(prefix="modelfs-gguf-random-")
    try:
        random_models(tmp, RANDOM_MODELS)
        for model, expect in mfstest.expected_models(c, [tmp], ("gguf",)):
            try:
                with mfstest.mounted(t.modelfs, model, t.env) as mnt:
                    check_mounted(c, model, expect, mnt, t.gguf)
            except RuntimeError as e:
                c.check(False, "%s: mount: %s" % (os.path.basename(model), e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_hostile_files(c, t):
    check_hostile(c, t.build, t.env)


def check_not_utf8_names(c, t):
    check_not_utf8(c, t.build, t.env)


EXTRAS = (check_random, check_hostile_files, check_not_utf8_names)
