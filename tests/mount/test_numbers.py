#!/usr/bin/python3
"""Numbers through real mounts (issue 21): the f32/ views and stats.tsv.

- Every f32/NAME.npy that model.json names, for every model of the given
  folders (each folder mounted once as a folder of models), is compared bit
  for bit with the tensor's own bytes (tensors/NAME, read through the mount)
  decoded by the reference decoders written here from the formats'
  definitions: bfloat16 (the high half of a float32), float16 (numpy's own
  conversion), float8 e4m3fn / e4m3fnuz / e5m2 / e5m2fnuz / e8m0fnu and
  float4 e2m1 (OCP MX, ml_dtypes), complex32 (two float16). A NaN is
  compared as NaN (its sign and payload are no number). GGUF blocks are
  compared with gguf-py's own values: ../shared's quants.gguf.f32.npz
  (all 24 types); block tensors elsewhere have no reference and are checked
  for shape and dtype only.
- Every type with a reference has a view (no tensor of such a type left
  without one unless its entry says why).
- A model written here holds every byte value of each 8-bit float type,
  every nibble of float4 (both packings) and all 65536 bfloat16 and
  float16 values.
- stats.tsv: its size shows 0 until read and the true size after; one line
  per tensor in table order; count, min, max and the NaN/inf/zero counts
  exact against numpy on the same values (the f32 view, else the .npy
  twin); mean, std and L2 within 1e-9 of the mean magnitude: both sides sum
  in binary64, whose rounding error over n values is at most n * 2^-53 of
  the sum of magnitudes, 1.1e-10 for the million values of our largest
  tensor. The text is byte-identical from the mount and from modelfs-ls
  with 1 and 3 threads.
- Integers exactly (issue 34): an integer tensor's min and max as the
  integers it holds (int64/uint64 past 2^53, which doubles round); `-` in
  min..l2 of a tensor with no finite value (all NaN, all inf, empty);
  sub-byte integers unpacked here with numpy (low bits first, two's
  complement) against stats.tsv, and the f32 view of every packed one.
- A member that would decode to 1 GiB from an .npz of a few MB: its
  stats.tsv and f32/ view are refused at once, the daemon stays up.
- Each reference is checked to tell its type from its neighbour (e4m3fn's
  decoder on e5m2 bytes must differ), so a check cannot pass by decoding
  nothing.

usage: test_numbers.py BUILD_DIR DIR...
"""
import errno
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mfstest  # noqa: E402
import numpy as np  # noqa: E402
mfstest.cache_npy_header_filter(np)

# ---- reference decoders, from the definitions --------------------------


def f8_value(b, ebits, mbits, bias, kind):
    """One 8-bit float as a Python float (NaN as math.nan, signed)."""
    s = -1.0 if b & 0x80 else 1.0
    e = (b >> mbits) & ((1 << ebits) - 1)
    m = b & ((1 << mbits) - 1)
    top = (1 << ebits) - 1
    if kind == "fnuz":
        if b == 0x80:
            return math.nan
    elif kind == "fn":
        if e == top and m == (1 << mbits) - 1:
            return math.nan
    elif kind == "ieee":
        if e == top:
            return s * math.inf if m == 0 else math.nan
    if e == 0:
        return s * (m / (1 << mbits)) * 2.0 ** (1 - bias)
    return s * (1 + m / (1 << mbits)) * 2.0 ** (e - bias)


F8 = {
    "float8_e4m3fn": (4, 3, 7, "fn"),
    "float8_e4m3fnuz": (4, 3, 8, "fnuz"),
    "float8_e5m2": (5, 2, 15, "ieee"),
    "float8_e5m2fnuz": (5, 2, 16, "fnuz"),
}


def table8(dtype):
    if dtype == "float8_e8m0fnu":
        vals = [math.nan if b == 0xff else 2.0 ** (b - 127) for b in range(256)]
    else:
        vals = [f8_value(b, *F8[dtype]) for b in range(256)]
    return np.array(vals, dtype=np.float64).astype(np.float32)


def e2m1(n):
    s = -1.0 if n & 8 else 1.0
    e, m = (n >> 1) & 3, n & 1
    return s * (m * 0.5 if e == 0 else (1 + m / 2) * 2.0 ** (e - 1))


E2M1 = np.array([e2m1(n) for n in range(16)], dtype=np.float32)


def reference(dtype, raw):
    """float32 (complex64 for complex32) values of `raw` bytes, or None."""
    b = np.frombuffer(raw, dtype=np.uint8)
    if dtype in F8 or dtype == "float8_e8m0fnu":
        return table8(dtype)[b]
    if dtype in ("float4_e2m1fn", "float4_e2m1fn_x2"):
        out = np.empty(b.size * 2, dtype=np.float32)
        out[0::2] = E2M1[b & 15]   # the first value is the low nibble
        out[1::2] = E2M1[b >> 4]
        return out
    if dtype == "bfloat16":
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    if dtype == "float16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float32)
    if dtype == "complex32":
        h = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        return h.view(np.complex64)
    return None


def same_bits(got, want):
    """Equal bit for bit, NaN matching any NaN; the index of the first
    difference or None."""
    g = np.ascontiguousarray(got).reshape(-1)
    w = np.ascontiguousarray(want).reshape(-1)
    if g.dtype == np.complex64:
        g, w = g.view(np.float32), w.view(np.float32)
    if g.shape != w.shape:
        return -1
    gb, wb = g.view(np.uint32), w.view(np.uint32)
    bad = (gb != wb) & ~(np.isnan(g) & np.isnan(w))
    idx = np.flatnonzero(bad)
    return int(idx[0]) if idx.size else None


REF_TYPES = set(F8) | {"float8_e8m0fnu", "float4_e2m1fn", "float4_e2m1fn_x2", "bfloat16",
                       "float16", "complex32"}
BLOCK_TYPES = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k",
               "iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq4_nl",
               "iq4_xs", "tq1_0", "tq2_0", "mxfp4", "nvfp4", "q1_0"}

WIDE = {"float128", "float96", "complex256", "complex192"}
# Sub-byte integers: a value is the low N bits (two's complement for intN)
# of its byte (torch: a byte each) or of its place in a byte (ONNX, TFLite:
# packed 8/N a byte, the first value in the low bits; `element_bits`).
SUB_INT = {"%s%d" % (k, n) for k in ("int", "uint") for n in range(1, 8)}


def sub_int_values(dtype, raw, count, packed):
    bits = int(dtype.lstrip("uint"))
    b = np.frombuffer(raw, dtype=np.uint8).astype(np.int64)
    if packed:
        per = 8 // bits
        b = (b[:, None] >> (np.arange(per) * bits)).reshape(-1)[:count]
    v = b & ((1 << bits) - 1)
    if dtype.startswith("int"):
        v = np.where(v >= 1 << (bits - 1), v - (1 << bits), v)
    return v
BIG = (8 << 20) + 5  # bfloat16 values: past f32_view.c's F32_SPLIT

# ---- the all-values model ---------------------------------------------


def write_all_values(path):
    every = bytes(range(256))
    u16 = np.arange(65536, dtype="<u2").tobytes()
    tensors = [("e4m3fn", "F8_E4M3", [256], every), ("e5m2", "F8_E5M2", [256], every),
               ("e8m0", "F8_E8M0", [256], every), ("e4m3fnuz", "F8_E4M3FNUZ", [256], every),
               ("e5m2fnuz", "F8_E5M2FNUZ", [256], every), ("f4", "F4", [512], every),
               ("bf16", "BF16", [256, 256], u16), ("f16", "F16", [65536], u16),
               # Integers doubles round (stats.tsv prints them exactly), and
               # tensors with no finite value (no figure, l2 included).
               ("i64", "I64", [4], np.array([2 ** 60 + 1, 5, -2 ** 62 + 1, -3], "<i8").tobytes()),
               ("u64", "U64", [3], np.array([2 ** 64 - 1, 2 ** 63 + 1, 2 ** 53 + 1], "<u8")
                .tobytes()),
               ("all_nan", "F32", [3], np.full(3, np.nan, "<f4").tobytes()),
               ("all_inf", "F32", [2], np.array([np.inf, -np.inf], "<f4").tobytes()),
               ("empty", "F32", [0, 4], b""),
               # 16 MiB and more: decoded by several threads at once
               ("bf16_big", "BF16", [BIG], (np.arange(BIG, dtype=np.uint64) * 40503 % 65536)
                .astype("<u2").tobytes())]
    header, off, data = {}, 0, b""
    for name, dt, shape, raw in tensors:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + data)


# ---- checks ------------------------------------------------------------


def load_npz(path):
    try:
        return dict(np.load(path))
    except OSError:
        return None


def check_views(c, root, model, doc, npz, label):
    """Every entry's f32 view against the reference; returns {path: values}
    of the numbers stats.tsv should have (float64 arrays) where known."""
    values = {}
    for e in doc.get("tensors", []):
        dt, path = e.get("dtype"), e.get("path")
        what = "%s: %s (%s)" % (label, e.get("name"), dt)
        if dt in SUB_INT and "problem" not in e:
            raw = mfstest.stored_bytes(model, doc.get("format"), e)
            if raw is None:
                raw = mfstest.read_bytes(os.path.join(root, path))
            packed = "element_bits" in e
            want = sub_int_values(dt, raw, int(np.prod(e["shape"])), packed)
            values[path] = want
            if packed:
                # numpy has no such type: the f32 view is how it reads them.
                if c.check("f32" in e, "%s: packed, and no f32 view" % what):
                    view = mfstest.np_load(np, os.path.join(root, e["f32"]), allow_pickle=False)
                    c.equal((list(view.shape), view.dtype.str), (list(e["shape"]), "<f4"),
                            "%s: view shape and dtype" % what)
                    bad = same_bits(view, want.astype(np.float32).reshape(view.shape)
                                    if want.size == view.size else want.astype(np.float32))
                    c.check(bad is None, "%s: view differs from the unpacked values at %s"
                            % (what, bad))
            continue
        if "f32" not in e:
            if dt in REF_TYPES or dt in BLOCK_TYPES:
                c.check("problem" in e or "f32_missing" in e or "element_bits" in e,
                        "%s has no f32 view and no reason" % what)
            if "npy" in e and "problem" not in e:
                arr = mfstest.np_load(np, os.path.join(root, e["npy"]), allow_pickle=False,
                                      max_header_size=1 << 24)
                # Only where numpy reads the type as itself (not qint8 as
                # int8, nor float128, which has no numbers here).
                if (arr.dtype.kind in "biufc" and "npy_dtype" not in e and
                        dt not in REF_TYPES | BLOCK_TYPES | WIDE):
                    values[path] = arr
            continue
        view = mfstest.np_load(np, os.path.join(root, e["f32"]), allow_pickle=False,
                               max_header_size=1 << 24)
        shape = list(e["shape"])
        if dt == "float4_e2m1fn_x2":
            shape = shape[:-1] + [shape[-1] * 2] if shape else [2]
        c.equal(list(view.shape), shape, "%s: view shape" % what)
        c.equal(view.dtype.str, "<c8" if dt == "complex32" else "<f4", "%s: view dtype" % what)
        # From the model file where model.json places the bytes as served
        # (the generic checks of mount.NAME check every offset), else through the mount: the
        # view is what this test reads there.
        raw = mfstest.stored_bytes(model, doc.get("format"), e)
        if raw is None:
            raw = mfstest.read_bytes(os.path.join(root, path))
        if e.get("byte_order") == "big":
            w = 2  # float16, bfloat16 and complex32's halves
            raw = np.frombuffer(raw, dtype=np.uint8).reshape(-1, w)[:, ::-1].tobytes()
        want = None
        q = e.get("quantization") or {}
        if dt in ("uint8", "uint16") and "scale" in q and "min" in q:
            # TF.js's affine quantization: the view is q * scale + min (in
            # double, stored as float32, as its decodeWeights gives it);
            # the tensor's numbers, which stats.tsv has, stay the integers.
            ints = np.frombuffer(raw, dtype="<u1" if dt == "uint8" else "<u2")
            want = (ints.astype(np.float64) * q["scale"] + q["min"]).astype(np.float32)
            bad = same_bits(view, want.reshape(view.shape))
            c.check(bad is None, "%s: dequantized view differs at value %s" % (what, bad))
            values[path] = ints
            continue
        if dt in REF_TYPES:
            want = reference(dt, raw)
            if dt == "float4_e2m1fn" and want.size == view.size + 1:
                want = want[:-1]  # an odd count: the last byte half used
            if e.get("memory_order") in ("fortran", "dim_order") and "npy_axes" in e:
                stored = reference(dt, raw).reshape(e["stored_shape"])
                want = np.transpose(stored, e["npy_axes"])
        elif npz is not None and e.get("name") in npz:
            want = npz[e["name"]]
        if want is None:
            c.check(dt in BLOCK_TYPES, "%s: no reference for a view" % what)
        else:
            bad = same_bits(view, np.asarray(want).reshape(view.shape)
                            if np.asarray(want).size == view.size else want)
            c.check(bad is None, "%s: view differs from the reference at value %s" % (what, bad))
        values[path] = view
    return values


def parse_stats(text):
    lines = text.split("\n")
    return lines[0], [ln.split("\t") for ln in lines[1:] if ln]


def close(got, want, scale):
    if math.isinf(want) or math.isinf(scale):
        return got == want or math.isinf(scale)  # both overflow binary64
    return abs(got - want) <= 1e-9 * scale + 1e-300


def check_stats(c, root, doc, values, label):
    st = os.path.join(root, "stats.tsv")
    c.equal(os.stat(st).st_size, 0, "%s: stats.tsv size before it is read" % label)
    text = mfstest.read_bytes(st).decode()
    c.equal(os.stat(st).st_size, len(text.encode()), "%s: stats.tsv size once read" % label)
    head, rows = parse_stats(text)
    c.equal(head.split("\t"), ["name", "dtype", "shape", "count", "min", "max", "mean", "std",
                               "l2", "nan", "posinf", "neginf", "zeros"], "%s: header" % label)
    entries = doc.get("tensors", [])
    c.equal(len(rows), len(entries), "%s: one line per tensor" % label)
    for row, e in zip(rows, entries):
        path = e["path"]
        name = path[len("tensors/"):] if path.startswith("tensors/") else path
        what = "%s: stats of %s" % (label, name)
        if not c.equal(row[0], name, "%s: name" % what):
            continue
        c.equal(row[1], e["dtype"], "%s: dtype" % what)
        if path not in values:
            continue
        v = np.asarray(values[path])
        v = v.reshape(-1)
        if v.dtype.kind in "biu" and v.size:
            # Exactly: as doubles, int64 past 2^53 would print rounded.
            c.equal(row[4:6], [str(int(v.min())), str(int(v.max()))],
                    "%s: integer min and max, exactly" % what)
        if v.dtype.kind == "c":
            v = v.view(v.real.dtype)
        v = v.astype(np.float64)
        fin = v[np.isfinite(v)]
        c.equal(row[9:13], [str(int(np.isnan(v).sum())), str(int((v == np.inf).sum())),
                            str(int((v == -np.inf).sum())), str(int((fin == 0).sum()))],
                "%s: nan/posinf/neginf/zeros" % what)
        if fin.size == 0:
            c.equal(row[4:9], ["-"] * 5, "%s: no finite values: min..l2" % what)
            continue
        if "-" in row[4:9]:
            c.check(False, "%s: %s for finite values" % (what, row[4:9]))
            continue
        scale = float(np.abs(fin).mean())
        ok = (float(row[4]) == float(fin.min()) and float(row[5]) == float(fin.max()) and
              close(float(row[6]), fin.mean(), scale) and close(float(row[7]), fin.std(), scale) and
              close(float(row[8]), math.sqrt(float(np.dot(fin, fin))), scale * math.sqrt(fin.size)))
        c.check(ok, "%s: %s vs numpy min %r max %r mean %r std %r l2 %r" %
                (what, row[4:9], fin.min(), fin.max(), fin.mean(), fin.std(),
                 math.sqrt(float(np.dot(fin, fin)))))
    return text


def write_bomb(c, path, nbytes):
    """An .npz whose one member, float16 zeros of `nbytes` (a multiple of
    16 MiB), deflates to a few MB: more than modelfs decodes in memory for
    so small a file. The deflate stream is put together, not made by
    compressing 1 GiB (1.3 s, with zipfile): the .npy header, then one
    compressed piece of 16 MiB of zeros repeated, each ended by a full
    flush, after which the compressor starts afresh and the next piece
    decodes on its own; then the final block. Each part is decoded here on
    its own, and zipfile reads the archive's directory and first bytes."""
    import io
    import struct
    import zipfile
    import zlib
    head = np.lib.format.header_data_from_array_1_0(np.zeros(0, dtype="<f2"))
    head["shape"] = (nbytes // 2,)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, head)
    header, zeros = buf.getvalue(), bytes(16 << 20)
    reps = nbytes // len(zeros)
    z = zlib.compressobj(1, zlib.DEFLATED, -15)
    first = z.compress(header) + z.flush(zlib.Z_FULL_FLUSH)
    piece = z.compress(zeros) + z.flush(zlib.Z_FULL_FLUSH)
    last = z.flush()
    for part, want, final in ((first, header, False), (piece, zeros, False), (last, b"", True)):
        d = zlib.decompressobj(-15)
        c.check(d.decompress(part) == want and d.eof == final and not d.unused_data,
                "bomb: a part of its deflate stream decodes to %d bytes on its own" % len(want))
    crc = zlib.crc32(header)
    for _ in range(reps):
        crc = zlib.crc32(zeros, crc)
    size, csize = len(header) + reps * len(zeros), len(first) + reps * len(piece) + len(last)
    name = b"w.npy"
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 33, crc, csize, size, len(name), 0)
    with open(path, "wb") as f:
        f.write(local + name + first)
        for _ in range(reps):
            f.write(piece)
        f.write(last)
        cd_off = f.tell()
        cd = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 20, 0, 8, 0, 33, crc, csize,
                         size, len(name), 0, 0, 0, 0, 0o100644 << 16, 0) + name
        f.write(cd + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(cd), cd_off, 0))
    with zipfile.ZipFile(path) as zf:
        info = zf.infolist()
        c.check([(i.filename, i.file_size, i.compress_type) for i in info] ==
                [("w.npy", size, zipfile.ZIP_DEFLATED)], "bomb: zipfile lists %r" % info)
        with zf.open("w.npy") as m:
            c.check(m.read(1 << 20) == (header + zeros)[:1 << 20], "bomb: zipfile reads its start")


def check_bomb(c, build, tmp, env):
    """stats.tsv and the f32/ view of a member that would decode to 1 GiB
    from a file of a few MB: refused at once (the content layer's budget
    for such a model), the daemon up."""
    d = os.path.join(tmp, "bomb")
    os.mkdir(d)
    model = os.path.join(d, "bomb.npz")
    write_bomb(c, model, 1 << 30)
    with mfstest.mounted(os.path.join(build, "modelfs"), model, env=env) as mnt:
        for name in ("stats.tsv", "f32/w.npy"):
            t = time.monotonic()
            try:
                with open(os.path.join(mnt, name), "rb") as f:
                    f.read()
                c.check(False, "bomb: %s was made" % name)
            except OSError as ex:
                c.check(ex.errno in (errno.ENOMEM, errno.EIO), "bomb: %s: %s" % (name, ex))
            c.check(time.monotonic() - t < 20, "bomb: %s refused at once" % name)
        c.check("model.json" in os.listdir(mnt), "bomb: the mount answers after")
    os.unlink(model)
    os.rmdir(d)


def check_threads(c, modelfs_ls, model, name, text, env):
    for n in ("1", "3"):
        env = dict(env, MODELFS_STATS_THREADS=n)
        r = subprocess.run([modelfs_ls, model, "stats.tsv"], capture_output=True, env=env,
                           timeout=300)
        c.check(r.returncode == 0 and r.stdout.decode() == text,
                "%s: stats.tsv with %s thread(s) differs from the mount's" % (name, n))


def check_folder(c, build, d, npzs, thread_models, env):
    modelfs = os.path.join(build, "modelfs")
    modelfs_ls = os.path.join(build, "modelfs-ls")
    with mfstest.mounted(modelfs, d, env=env) as mnt:
        for name in sorted(os.listdir(mnt)):
            root = os.path.join(mnt, name)
            if not os.path.isdir(root) or not os.path.exists(os.path.join(root, "model.json")):
                continue
            with open(os.path.join(root, "model.json")) as f:
                doc = json.load(f)
            values = check_views(c, root, os.path.join(d, name), doc, npzs.get(name), name)
            if doc.get("tensors"):
                text = check_stats(c, root, doc, values, name)
                if name in thread_models:
                    check_threads(c, modelfs_ls, os.path.join(d, name), name, text, env)


def run(c, t):
    build, dirs, env = t.build, t.args, t.env
    # The references must tell neighbouring types apart.
    every = bytes(range(256))
    c.check(same_bits(reference("float8_e4m3fn", every), reference("float8_e5m2", every))
            is not None, "e4m3fn and e5m2 references agree: they cannot check anything")
    c.check(same_bits(reference("bfloat16", every), reference("float16", every)) is not None,
            "bfloat16 and float16 references agree")
    tmp = mfstest.scratch("modelfs-numbers-")
    write_all_values(os.path.join(tmp, "all_values.safetensors"))
    npzs = {}
    for d in dirs:
        for f in (os.listdir(d) if os.path.isdir(d) else []):
            if f.endswith(".f32.npz"):
                npzs[f[:-len(".f32.npz")]] = load_npz(os.path.join(d, f))
    if not any(n == "quants.gguf" for n in npzs):
        c.skip("quants.gguf.f32.npz is absent: GGUF block views not compared with gguf-py")
    thread_models = {"all_values.safetensors", "quants.gguf", "gen_dtypes.safetensors"}
    for d in [tmp] + dirs:
        if not os.path.isdir(d):
            c.skip("%s is absent" % d)
            continue
        check_folder(c, build, d, npzs, thread_models, env)
    check_bomb(c, build, tmp, env)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)


if __name__ == "__main__":
    # Random float64 tensors overflow numpy's sums too (inf, compared).
    np.seterr(all="ignore")
    sys.exit(mfstest.main("numbers", run, __doc__, one_cpu=True))
