#!/usr/bin/python3
"""model.safetensors (issue 21, part 4): every model's tensors as one
safetensors file, read back here with a reader of our own (struct and
json, no numpy, no safetensors package):

 - models: for every model of the given folders: the 8-byte length N, a
   multiple of 8, the header padded with spaces; valid JSON with no
   duplicate key, every object's keys in byte order; data_offsets
   contiguous from 0 in header order with no hole, each tensor's length
   numel * bits / 8, the file's size 8 + N + the buffer's; `__metadata__`
   with "format": "pt", modelfs.format the source's format and the
   source's string metadata; each tensor's dtype and shape those of
   model.json, its bytes' sha256 the fixture's (.expect.json: sha256, or
   le_sha256 / c_order_sha256 / logical_c_order_sha256 for bytes stored
   big-endian or in another order; without one, the tensors/ file's);
   the tensors left out (modelfs.left_out) exactly those safetensors
   cannot hold (dtype, name, duplicate, problem), every tensor either in
   or out; no SHA256SUMS line, no twin; `modelfs-ls MODEL
   model.safetensors` gives the same bytes (and --sha256 their digest);
   a model with no tensors has none; with torch installed, its
   safetensors loader agrees (skipped, visibly, without);
 - big: a 64 MiB tensor read through model.safetensors in 1 MiB reads:
   the daemon's RssAnon stays far below it (no copy of tensor bytes);
 - convert: a big-endian and a Fortran-ordered .npy: their pieces are the
   little-endian, C-order bytes (made on a read's own thread);
 - remote: over a range server, reading the header fetches nothing, and
   reading one tensor's range fetches about that tensor;
 - multi: a folder of two models: each model's folder has its own, the
   bytes of the model mounted alone.

usage: test_model_safetensors.py BUILD_DIR [--only=PART,...] MODEL_DIR...
PART: models, big, convert, remote, multi (default all).
"""
import errno
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mfstest  # noqa: E402

MIB = 1 << 20
ST = "model.safetensors"

# modelfs dtype -> (safetensors dtype, bits per element): the spec's list
# (huggingface/safetensors Dtype), written out here from the spec.
ST_DTYPES = {
    "bool": ("BOOL", 8), "uint8": ("U8", 8), "int8": ("I8", 8), "uint16": ("U16", 16),
    "int16": ("I16", 16), "uint32": ("U32", 32), "int32": ("I32", 32), "uint64": ("U64", 64),
    "int64": ("I64", 64), "float16": ("F16", 16), "bfloat16": ("BF16", 16),
    "float32": ("F32", 32), "float64": ("F64", 64), "complex64": ("C64", 64),
    "float8_e4m3fn": ("F8_E4M3", 8), "float8_e5m2": ("F8_E5M2", 8),
    "float8_e8m0fnu": ("F8_E8M0", 8), "float4_e2m1fn": ("F4", 4),
    "float6_e2m3fn": ("F6_E2M3", 6), "float6_e3m2fn": ("F6_E3M2", 6),
}
ST_BITS = {st: bits for st, bits in ST_DTYPES.values()}


def ukey(s):
    return s.encode("utf-8", "surrogatepass")


class StError(Exception):
    pass


def no_dups(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise StError("a duplicate key in %r" % keys[:8])
    if keys != sorted(keys, key=ukey):
        raise StError("keys not in byte order: %r" % keys[:8])
    return dict(pairs)


def parse(data):
    """An independent safetensors reader: (N, {name: (dtype, shape,
    begin, end)} in header order, metadata). Raises StError."""
    if len(data) < 8:
        raise StError("shorter than 8 bytes")
    n = struct.unpack("<Q", data[:8])[0]
    if n % 8 != 0:
        raise StError("N=%d is not a multiple of 8" % n)
    if 8 + n > len(data):
        raise StError("the header runs past the end")
    raw = data[8:8 + n]
    text = raw.rstrip(b" ")
    if not text.endswith(b"}") or not text.startswith(b"{"):
        raise StError("the header is not one JSON object padded with spaces")
    try:
        doc = json.loads(text.decode("utf-8"), object_pairs_hook=no_dups)
    except (UnicodeDecodeError, ValueError) as e:
        raise StError("the header is not UTF-8 JSON: %s" % e)
    order = list(doc)
    meta = doc.get("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise StError("__metadata__ is not an object of strings")
    tensors = {}
    at = 0
    for name in order:
        if name == "__metadata__":
            continue
        info = doc[name]
        if set(info) != {"dtype", "shape", "data_offsets"}:
            raise StError("%s: keys %r" % (name, sorted(info)))
        begin, end = info["data_offsets"]
        if info["dtype"] not in ST_BITS:
            raise StError("%s: dtype %r" % (name, info["dtype"]))
        numel = 1
        for d in info["shape"]:
            numel *= d
        bits = numel * ST_BITS[info["dtype"]]
        if begin != at or bits % 8 or end - begin != bits // 8:
            raise StError("%s: data_offsets %r (want [%d, %d])" % (name, [begin, end], at,
                                                                   at + bits // 8))
        at = end
        tensors[name] = (info["dtype"], info["shape"], begin, end)
    if 8 + n + at != len(data):
        raise StError("8 + N + buffer = %d, file = %d" % (8 + n + at, len(data)))
    return n, tensors, meta


def want_sha(rec):
    """The sha256 of a fixture tensor's bytes in logical order,
    little-endian."""
    for k in ("logical_c_order_sha256", "le_sha256"):
        if k in rec:
            return rec[k]
    if rec.get("fortran_order") and "c_order_sha256" in rec:
        return rec["c_order_sha256"]
    return rec.get("sha256")


def stored_in_order(entry):
    return (entry.get("byte_order") != "big" and
            entry.get("memory_order") in (None, "contiguous", "c"))


# Bytes swapped per number of a big-endian element (complex: each half).
SWAP = {"int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2, "int32": 4, "uint32": 4,
        "float32": 4, "int64": 8, "uint64": 8, "float64": 8, "complex64": 4}
ITEM = {"bool": 1, "int8": 1, "uint8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
        "float8_e8m0fnu": 1, "complex64": 8}


def logical_bytes(raw, entry):
    """A tensor file's bytes (as stored) in logical order, little-endian,
    worked out here from model.json's keys: byte_order, memory_order,
    stored_shape and dim_order."""
    dt, shape = entry["dtype"], entry["shape"]
    w = SWAP.get(dt, 1)
    if entry.get("byte_order") == "big" and w > 1:
        raw = b"".join(raw[i:i + w][::-1] for i in range(0, len(raw), w))
    mo = entry.get("memory_order")
    if mo in (None, "contiguous", "c"):
        return raw
    nd = len(shape)
    if mo == "fortran":
        stored, order = shape[::-1], list(range(nd))[::-1]
    else:
        stored, order = entry["stored_shape"], entry["dim_order"]
    item = ITEM.get(dt, SWAP.get(dt, 1) * (2 if dt == "complex64" else 1))
    # Stored axis i is logical axis order[i]: the stride of each logical axis.
    strides = [0] * nd
    step = item
    for i in range(nd - 1, -1, -1):
        strides[order[i]] = step
        step *= stored[i]
    out = bytearray()
    idx = [0] * nd
    total = 1
    for d in shape:
        total *= d
    for _ in range(total):
        off = sum(i * s for i, s in zip(idx, strides))
        out += raw[off:off + item]
        for a in range(nd - 1, -1, -1):
            idx[a] += 1
            if idx[a] < shape[a]:
                break
            idx[a] = 0
    return bytes(out)


def has_logical_sha(rec):
    return any(k in rec for k in ("logical_c_order_sha256", "le_sha256", "c_order_sha256"))


def check_torch(c, name, path, tensors, data, n):
    try:
        import torch  # noqa: F401
        from safetensors.torch import load_file
    except ImportError:
        return False
    got = load_file(path)
    c.equal(sorted(got), sorted(tensors), name + ": torch's safetensors loads the same names")
    for k, t in got.items():
        _, _, b, e = tensors[k]
        c.check(t.contiguous().view(-1).view(torch.uint8).numpy().tobytes() == data[8 + n + b:8 + n + e],
                "%s: torch: %s" % (name, k))
    return True


def check_model(c, build, model, expect, env, state):
    name = os.path.relpath(model)
    ctx, mnt = mfstest.mount_model(build, model, env)
    if ctx is None:
        return  # a model that does not mount (the generic checks of mount.NAME check those)
    try:
        if mfstest.is_collection(mnt):
            return
        with open(os.path.join(mnt, "model.json")) as f:
            doc = json.load(f)
        entries = [t for t in doc["tensors"] if not os.path.isdir(os.path.join(mnt, t["path"]))]
        path = os.path.join(mnt, ST)
        if not doc["tensors"]:
            c.check(not os.path.exists(path), name + ": no tensors, no " + ST)
            return
        if not c.check(os.path.isfile(path), name + ": has " + ST):
            return
        try:
            data = mfstest.read_bytes(path)
        except OSError as e:
            # A tensor that cannot be made or checked (a tampered carton
            # member): EIO, as reading its own file gives.
            bad = [t["path"] for t in entries
                   if mfstest.read_or_errno(os.path.join(mnt, t["path"]))[1]]
            c.check(e.errno == errno.EIO and bad,
                    "%s: %s: %s, and no tensor file fails" % (name, ST, e))
            return
        c.equal(len(data), os.stat(path).st_size, name + ": stat size is the bytes read")
        try:
            n, tensors, meta = parse(data)
        except StError as e:
            c.check(False, "%s: %s: %s" % (name, ST, e))
            return
        c.check(True, name + ": parses")
        c.equal(meta.get("format"), "pt", name + ": __metadata__ format")
        c.equal(meta.get("modelfs.format"), doc.get("format"), name + ": modelfs.format")
        for k, v in (doc.get("metadata") or {}).items():
            if (isinstance(v, str) and k != "format" and not k.startswith("modelfs.") and
                    ukey(k).decode("utf-8", "replace") == k and
                    ukey(v).decode("utf-8", "replace") == v):
                c.equal(meta.get(k), v, "%s: metadata %r" % (name, k))
        left = json.loads(meta.get("modelfs.left_out", "[]"))
        # Every tensor file is in, or out with a reason safetensors gives.
        by_name = {}
        for t in entries:
            by_name.setdefault(t["name"], []).append(t)
        out_names = []
        for rec in left:
            if "name_hex" in rec:
                out_names.append(bytes.fromhex(rec["name_hex"]).decode("utf-8", "surrogateescape"))
            else:
                out_names.append(rec["name"])
        c.equal(len(tensors) + len(left), len(entries),
                name + ": every tensor in model.safetensors or left out")
        expect_by = {}
        for rec in (expect or {}).get("tensors", []):
            expect_by.setdefault(rec["name"], []).append(rec)
        for nm, why in zip(out_names, left):
            cands = by_name.get(nm, [])
            ok = (nm == "__metadata__" or "name_hex" in why or nm in tensors or
                  any(t["dtype"] not in ST_DTYPES or "problem" in t or
                      "element_bits" in t for t in cands) or len(cands) > 1)
            c.check(cands and ok, "%s: %r left out (%s), yet safetensors could hold it" %
                    (name, nm, why.get("reason")))
        for nm, (dt, shape, b, e) in tensors.items():
            what = "%s: %s" % (name, nm)
            cands = by_name.get(nm, [])
            if not c.check(len(cands) >= 1 and nm not in out_names or len(cands) > 1,
                           what + ": a tensor of model.json, in once"):
                continue
            t = cands[0]
            c.equal((dt, shape), (ST_DTYPES.get(t["dtype"], ("?",))[0], t["shape"]),
                    what + ": dtype and shape")
            got = hashlib.sha256(data[8 + n + b:8 + n + e]).hexdigest()
            recs = expect_by.get(nm)
            if recs and (stored_in_order(t) or all(has_logical_sha(r) for r in recs)):
                c.check(got in [want_sha(r) for r in recs],
                        what + ": bytes' sha256 is the fixture's")
            else:
                # No logical digest in the expectation: the tensor file's
                # bytes, put in logical order here.
                want = logical_bytes(mfstest.read_bytes(os.path.join(mnt, t["path"])), t)
                c.equal(got, hashlib.sha256(want).hexdigest(),
                        what + ": bytes are the tensor file's, in logical order")
        sums = os.path.join(mnt, "SHA256SUMS")
        if os.path.exists(sums):
            c.check(ST.encode() not in mfstest.read_bytes(sums), name + ": not in SHA256SUMS")
        c.check(not os.path.exists(os.path.join(mnt, "npy", ST + ".npy")), name + ": no twin")
        r = subprocess.run([os.path.join(build, "modelfs-ls"), *mfstest.links_args(model), model,
                            ST], capture_output=True, env=env, timeout=600)
        c.check(r.returncode == 0 and r.stdout == data, name + ": modelfs-ls gives the same bytes")
        sums_ls, rc, _ = mfstest.ls_sums_args(os.path.join(build, "modelfs-ls"),
                                              mfstest.links_args(model) + [model], [ST], env=env)
        c.check(rc == 0 and sums_ls.get(ST) == (hashlib.sha256(data).hexdigest(), len(data)),
                name + ": modelfs-ls --sha256")
        if check_torch(c, name, path, tensors, data, n):
            state["torch"] = True
    finally:
        ctx.__exit__(None, None, None)


def check_big(c, build, env):
    tmp = tempfile.mkdtemp(prefix="modelfs-st-", dir="/var/tmp")
    path = os.path.join(tmp, "big.safetensors")
    try:
        size = 64 * MIB
        chunk = hashlib.sha256(b"modelfs").digest() * (MIB // 32)
        big = chunk * (size // MIB)
        mfstest.write_safetensors(path, {"a": b"small", "big": big})
        want = hashlib.sha256(big).hexdigest()
        del big
        with mfstest.mounted(os.path.join(build, "modelfs"), path, env=env) as mnt:
            pid = mfstest.daemon_pid(mnt)
            st0 = mfstest.rss(pid)
            h = hashlib.sha256()
            total = 0
            with open(os.path.join(mnt, ST), "rb", buffering=0) as f:
                head = f.read(8)
                n = struct.unpack("<Q", head)[0]
                hdr = f.read(n)
                doc = json.loads(hdr)
                b, e = doc["big"]["data_offsets"]
                f.seek(8 + n + b)
                buf = bytearray(MIB)
                while total < e - b:
                    k = f.readinto(buf)
                    if not k:
                        break
                    take = min(k, e - b - total)
                    h.update(buf[:take])
                    total += take
            st1 = mfstest.rss(pid)
            grown = st1["RssAnon"] - st0["RssAnon"]
            workers = max(0, st1["Threads"] - st0["Threads"])
            print("big: %d MiB read through %s, daemon RssAnon grew by %d KiB, %d new threads"
                  % (total // MIB, ST, grown // 1024, workers), flush=True)
            c.check(total == size and h.hexdigest() == want, "big: the tensor's bytes")
            c.check(grown < MIB + workers * (MIB + 128 * 1024),
                    "big: RssAnon grew by %d bytes with %d new threads (a copy?)" % (grown, workers))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_npy(path, descr, shape, fortran, payload):
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False", "".join("%d," % s for s in shape))
    pad = 64 - (10 + len(d) + 1) % 64
    hdr = (d + " " * pad + "\n").encode()
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr + payload)


def check_convert(c, build, env):
    """Bytes stored big-endian or in Fortran order: their pieces are the
    logical little-endian C-order bytes."""
    tmp = tempfile.mkdtemp(prefix="modelfs-st-")
    try:
        count = 3 * MIB // 4 + 5
        vals = [(i * 2654435761) & 0xffffffff for i in range(count)]
        be = os.path.join(tmp, "be.npy")
        write_npy(be, ">u4", (count,), False, struct.pack(">%dI" % count, *vals))
        want_be = struct.pack("<%dI" % count, *vals)
        rows, cols = 300, 700
        fo = os.path.join(tmp, "fortran.npy")
        # Fortran order: element (i, j) at j * rows + i.
        cvals = [(i * cols + j) & 0xffff for i in range(rows) for j in range(cols)]
        fvals = [cvals[i * cols + j] for j in range(cols) for i in range(rows)]
        write_npy(fo, "<u2", (rows, cols), True, struct.pack("<%dH" % len(fvals), *fvals))
        want_fo = struct.pack("<%dH" % len(cvals), *cvals)
        for model, want, dt in ((be, want_be, "U32"), (fo, want_fo, "U16")):
            what = "convert: " + os.path.basename(model)
            with mfstest.mounted(os.path.join(build, "modelfs"), model, env=env) as mnt:
                data = mfstest.read_bytes(os.path.join(mnt, ST))
                try:
                    n, tensors, _ = parse(data)
                except StError as e:
                    c.check(False, "%s: %s" % (what, e))
                    continue
                (dtype, shape, b, e), = tensors.values()
                c.equal(dtype, dt, what + ": dtype")
                c.check(data[8 + n + b:8 + n + e] == want, what + ": logical little-endian bytes")
                # Reads that start inside the piece, across its end.
                with open(os.path.join(mnt, ST), "rb", buffering=0) as f:
                    f.seek(8 + n + b + 12345)
                    part = f.read(300000)
                c.check(part == data[8 + n + b + 12345:8 + n + b + 12345 + 300000],
                        what + ": a read inside the piece")
            r = subprocess.run([os.path.join(build, "modelfs-ls"), model, ST], capture_output=True,
                               env=env, timeout=120)
            c.check(r.returncode == 0 and r.stdout == data, what + ": modelfs-ls")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_remote(c, build, env):
    import rangeserver
    root = tempfile.mkdtemp(prefix="modelfs-st-remote-")
    srv = None
    try:
        a, b = os.urandom(12 * MIB), os.urandom(3 * MIB)
        mfstest.write_safetensors(os.path.join(root, "m.safetensors"), {"a": a, "b": b})
        srv = rangeserver.start(root)
        fresh = dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="modelfs-cache-",
                                                          dir=env["XDG_CACHE_HOME"]))
        with mfstest.mounted(os.path.join(build, "modelfs"), srv.url + "/m.safetensors",
                             fresh) as mnt:
            before = len(srv.log)
            size = os.stat(os.path.join(mnt, ST)).st_size
            with open(os.path.join(mnt, ST), "rb", buffering=0) as f:
                n = struct.unpack("<Q", f.read(8))[0]
                doc = json.loads(f.read(n))
            gets = [r for r in srv.log[before:] if r[2]]
            c.equal(len(gets), 0, "remote: stat and the header fetch nothing")
            c.equal(size, 8 + n + len(a) + len(b), "remote: size")
        # Offsets known, a fresh mount and cache: reading b fetches b.
        fresh = dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="modelfs-cache-",
                                                          dir=env["XDG_CACHE_HOME"]))
        with mfstest.mounted(os.path.join(build, "modelfs"), srv.url + "/m.safetensors",
                             fresh) as mnt:
            before = len(srv.log)
            bb, be = doc["b"]["data_offsets"]
            with open(os.path.join(mnt, ST), "rb", buffering=0) as f:
                f.seek(8 + n + bb)
                got = b""
                while len(got) < be - bb:
                    k = f.read(min(MIB, be - bb - len(got)))
                    if not k:
                        break
                    got += k
            c.check(got == b, "remote: tensor b's bytes")
            fetched = mfstest.range_bytes([r for r in srv.log[before:] if r[2]])
            print("remote: reading b (%d bytes) fetched %d" % (len(b), fetched), flush=True)
            c.check(0 < fetched <= len(b) + MIB,
                    "remote: %d bytes fetched for a tensor of %d" % (fetched, len(b)))
    finally:
        if srv is not None:
            srv.stop()
        shutil.rmtree(root, ignore_errors=True)


def check_multi(c, build, env):
    tmp = tempfile.mkdtemp(prefix="modelfs-st-multi-")
    try:
        mfstest.write_safetensors(os.path.join(tmp, "one.safetensors"), {"x": b"1234", "y": b"ab"})
        write_npy(os.path.join(tmp, "two.npy"), ">i2", (3,), False, struct.pack(">3h", 1, -2, 3))
        with mfstest.mounted(os.path.join(build, "modelfs"), tmp, env=env) as mnt:
            for m in ("one.safetensors", "two.npy"):
                data = mfstest.read_bytes(os.path.join(mnt, m, ST))
                try:
                    parse(data)
                    c.check(True, "multi: %s parses" % m)
                except StError as e:
                    c.check(False, "multi: %s: %s" % (m, e))
                with mfstest.mounted(os.path.join(build, "modelfs"), os.path.join(tmp, m),
                                     env=env) as one:
                    c.check(mfstest.read_bytes(os.path.join(one, ST)) == data,
                            "multi: %s as mounted alone" % m)
            d = mfstest.read_bytes(os.path.join(mnt, "two.npy", ST))
            c.check(d.endswith(struct.pack("<3h", 1, -2, 3)), "multi: two.npy's bytes little-endian")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(c, t):
    build, dirs, env = t.build, t.args, t.env
    parts = {"models", "big", "convert", "remote", "multi"}
    if dirs and dirs[0].startswith("--only="):
        parts = set(dirs.pop(0)[len("--only="):].split(","))
    c.name = "model.safetensors tests (%s)" % ",".join(sorted(parts))
    env["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="modelfs-caches-")
    if "models" in parts:
        state = {}
        for model in mfstest.model_files(c, dirs):
            expect = None
            if os.path.exists(model + ".expect.json"):
                with open(model + ".expect.json") as f:
                    expect = json.load(f)
            check_model(c, build, model, expect, env, state)
        if not state.get("torch"):
            c.skip("torch and safetensors are not installed: no torch read-back")
    if "big" in parts:
        check_big(c, build, env)
    if "convert" in parts:
        check_convert(c, build, env)
    if "remote" in parts:
        check_remote(c, build, env)
    if "multi" in parts:
        check_multi(c, build, env)
    shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("model.safetensors tests", run, __doc__, one_cpu=True))
