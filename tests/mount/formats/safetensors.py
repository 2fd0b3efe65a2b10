"""safetensors' own checks, beyond the generic ones: every expect field
the driver exposes (st_dtype, data_offsets, header_index, metadata,
header_size, data_start),
each tensor's bytes against an independent reader of the file (struct +
json, below) and its .npy twin against numpy; the sharded folder (shard,
index metadata, bytes from the right shard); hostile folders (a shard path
with "..", an absolute one, a symlink out, a missing tensor) refused with
exit 5; a shard edited or swapped for a symlink after the mount reads as
EIO; a header of many tensors mounts in bounded time.
"""
import errno
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time

import mfstest
import numpy as np
mfstest.cache_npy_header_filter(np)

DIRS = ("gen/safetensors", "gen/safetensors_sharded", "shared/fixtures/safetensors")

# numpy's dtype for the twin of each safetensors dtype (the rest load as
# their bytes).
NP = {"BOOL": "|b1", "U8": "|u1", "I8": "|i1", "U16": "<u2", "I16": "<i2", "U32": "<u4",
      "I32": "<i4", "U64": "<u8", "I64": "<i8", "F16": "<f2", "BF16": "<u2", "F32": "<f4",
      "F64": "<f8", "C64": "<c8"}


def read_st(path):
    """An independent reader: (header dict, data start)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)), 8 + n


def check_tensors(c, name, mnt, doc, header, start, files):
    """Every entry against the header and the file bytes (`files`: shard
    name -> path)."""
    for t in doc["tensors"]:
        what = "%s: %s" % (name, t["name"])
        info = header.get(t.get("shard"), {}).get(t["name"]) if "shard" in t else header.get(t["name"])
        if not c.check(info is not None, what + " is in the header"):
            continue
        c.equal(t["st_dtype"], info["dtype"], what + " st_dtype")
        c.equal(t["shape"], info["shape"], what + " shape")
        c.equal(t["data_offsets"], info["data_offsets"], what + " data_offsets")
        s0 = start[t.get("shard")] if "shard" in t else start
        with open(files[t.get("shard")] if "shard" in t else files[None], "rb") as f:
            f.seek(s0 + info["data_offsets"][0])
            want = f.read(info["data_offsets"][1] - info["data_offsets"][0])
        c.equal(t["offset"], s0 + info["data_offsets"][0], what + " offset")
        got = mfstest.read_bytes(os.path.join(mnt, t["path"]))
        c.check(got == want, what + " bytes through the mount vs the file")
        if info["dtype"] in NP:
            arr = np.load(os.path.join(mnt, t["npy"]))
            ref = np.frombuffer(want, dtype=NP[info["dtype"]]).reshape(info["shape"])
            c.check(arr.dtype == ref.dtype and arr.shape == ref.shape and arr.tobytes() == ref.tobytes(),
                    what + " np.load of the twin")
        elif "npy" in t:
            # float8, packed types: their bytes.
            arr = np.load(os.path.join(mnt, t["npy"]))
            c.check(arr.dtype == np.uint8 and arr.tobytes() == want, what + " twin holds the bytes")


def check_file(c, model, expect, mnt):
    name = os.path.basename(model)
    header, start = read_st(model)
    doc = json.load(open(os.path.join(mnt, "model.json"), encoding="utf-8"))
    c.equal(doc["format"], "safetensors", name + " format")
    c.equal(doc["metadata"], expect.get("metadata") or {}, name + " metadata")
    c.equal(doc["metadata"], header.get("__metadata__") or {}, name + " metadata vs the header")
    if "header_size" in expect:
        c.equal(doc["header_size"], expect["header_size"], name + " header_size")
        c.equal(doc["data_start"], expect["data_start"], name + " data_start")
    byname = {t["name"]: t for t in doc["tensors"]}
    for w in expect["tensors"]:
        t = byname.get(w["name"])
        if not c.check(t is not None, "%s: %r in model.json" % (name, w["name"])):
            continue
        for k in ("st_dtype", "data_offsets", "header_index", "dtype", "shape", "nbytes"):
            c.equal(t.get(k), w[k], "%s: %r %s" % (name, w["name"], k))
        c.equal(mfstest.sha256_file(os.path.join(mnt, t["path"])), w["sha256"],
                "%s: %r sha256" % (name, w["name"]))
    # Data order (tensors at one offset, zero-size ones, in header order).
    offs = [(t["data_offsets"], t["header_index"]) for t in doc["tensors"]]
    c.equal(offs, sorted(offs), name + " table in data order")
    header.pop("__metadata__", None)
    check_tensors(c, name, mnt, doc, header, start, {None: model})


def check_sharded(c, folder, expect, mnt):
    name = os.path.basename(folder)
    index = json.load(open(os.path.join(folder, "model.safetensors.index.json"), encoding="utf-8"))
    headers, starts, files = {}, {}, {}
    for shard in set(index["weight_map"].values()):
        files[shard] = os.path.join(folder, shard)
        h, s = read_st(files[shard])
        h.pop("__metadata__", None)
        headers[shard], starts[shard] = h, s
    doc = json.load(open(os.path.join(mnt, "model.json"), encoding="utf-8"))
    c.equal(doc["metadata"], index["metadata"], name + " metadata is the index's")
    c.equal(sorted(s["file"] for s in doc["shards"]), sorted(files), name + " shards")
    c.equal(doc["tensor_count"], len(index["weight_map"]), name + " tensor_count")
    for t in doc["tensors"]:
        c.equal(t["shard"], index["weight_map"].get(t["name"]), "%s: %s shard" % (name, t["name"]))
    byname = {t["name"]: t for t in doc["tensors"]}
    for w in expect["tensors"]:
        t = byname.get(w["name"], {})
        c.equal(t.get("shard"), w["shard"], "%s: %s shard (expect)" % (name, w["name"]))
        c.equal(mfstest.sha256_file(os.path.join(mnt, t["path"])), w["sha256"],
                "%s: %s sha256" % (name, w["name"]))
    check_tensors(c, name, mnt, doc, headers, starts, files)
    r = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=mnt, capture_output=True)
    c.equal(r.returncode, 0, name + " sha256sum -c SHA256SUMS")


def check_model(c, t, model, expect, mount):
    if expect is None or expect.get("format") != "safetensors" or expect.get("expect") != "readable":
        return
    try:
        mnt = mount()
    except RuntimeError as err:
        c.check(False, "%s: mount: %s" % (model, err))
        return
    if os.path.isdir(model):
        check_sharded(c, model, expect, mnt)
    else:
        check_file(c, model, expect, mnt)


def st_file(tensors, meta=None):
    """A small safetensors file: tensors = [(name, dtype, shape, bytes)]."""
    doc, at, data = {}, 0, b""
    if meta is not None:
        doc["__metadata__"] = meta
    for n, d, s, b in tensors:
        doc[n] = {"dtype": d, "shape": s, "data_offsets": [at, at + len(b)]}
        at += len(b)
        data += b
    h = json.dumps(doc).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def make_folder(root, name, weight_map, shards):
    d = os.path.join(root, name)
    os.makedirs(d)
    for fname, blob in shards.items():
        with open(os.path.join(d, fname), "wb") as f:
            f.write(blob)
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    return d


def refused(c, build, path, what, contains, env):
    r = subprocess.run([os.path.join(build, "modelfs-ls"), path], capture_output=True, text=True,
                       env=env, timeout=60)
    c.equal(r.returncode, 5, what + " refused (modelfs-ls exit)")
    lines = r.stderr.strip().splitlines()
    c.check(len(lines) == 1 and path in lines[0] and contains in lines[0],
            "%s: one line naming the folder and %r: %r" % (what, contains, r.stderr))


def check_hostile_folders(c, build, env):
    tmp = tempfile.mkdtemp(prefix="modelfs-st-")
    try:
        one = st_file([("w", "F32", [2], b"\0" * 8)])
        outside = os.path.join(tmp, "outside.safetensors")
        with open(outside, "wb") as f:
            f.write(one)
        d = make_folder(tmp, "dotdot", {"w": "../outside.safetensors"}, {})
        refused(c, build, d, "a shard named ../", "not a relative path", env)
        d = make_folder(tmp, "absolute", {"w": outside}, {})
        refused(c, build, d, "an absolute shard path", "not a relative path", env)
        d = make_folder(tmp, "symlink", {"w": "s.safetensors"}, {})
        os.symlink(outside, os.path.join(d, "s.safetensors"))
        refused(c, build, d, "a shard that is a symlink out", "symlink", env)
        d = make_folder(tmp, "missing", {"w": "s.safetensors", "x": "s.safetensors"},
                        {"s.safetensors": one})
        refused(c, build, d, "a weight_map tensor its shard lacks", "does not hold it", env)
        d = make_folder(tmp, "badshard", {"w": "s.safetensors"},
                        {"s.safetensors": one[:-3]})
        refused(c, build, d, "a truncated shard", "shard s.safetensors", env)
        d = make_folder(tmp, "badjson", {"w": "s.safetensors"}, {"s.safetensors": one})
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            f.write('{"weight_map": {"w": "s.safetensors", "w": "s.safetensors"}}')
        refused(c, build, d, "an index with a duplicate name", "duplicate key", env)

        d = make_folder(tmp, "manyshards", {"t%d" % i: "s%d.safetensors" % i for i in range(70000)}, {})
        t0 = time.time()
        refused(c, build, d, "an index naming 70,000 shards", "more than 65536 shards", env)
        c.check(time.time() - t0 < 30, "70,000 shard names refused in bounded time")

        # Unlisted tensors are served and named.
        two = st_file([("w", "F32", [2], b"\1" * 8), ("extra", "U8", [3], b"abc")])
        d = make_folder(tmp, "unlisted", {"w": "s.safetensors"}, {"s.safetensors": two})
        r = subprocess.run([os.path.join(build, "modelfs-ls"), d, "model.json"], capture_output=True,
                           env=env)
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        c.equal(doc.get("unlisted_tensors"), ["extra"], "a shard's tensor weight_map lacks")

        # After the mount: a shard edited, or swapped for a symlink.
        d = make_folder(tmp, "edited", {"w": "s.safetensors", "extra": "s.safetensors"},
                        {"s.safetensors": two})
        with mfstest.mounted(os.path.join(build, "modelfs"), d, env) as mnt:
            c.equal(open(os.path.join(mnt, "tensors", "w"), "rb").read(), b"\1" * 8, "shard read")
            with open(os.path.join(d, "s.safetensors"), "ab") as f:
                f.write(b"more")
            mfstest.evict(os.path.join(mnt, "tensors", "extra"))
            _, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "extra"))
            c.equal(err, errno.EIO, "a tensor of a shard grown after the mount")
        d = make_folder(tmp, "swapped", {"w": "s.safetensors"}, {"s.safetensors": one})
        with mfstest.mounted(os.path.join(build, "modelfs"), d, env) as mnt:
            os.rename(os.path.join(d, "s.safetensors"), os.path.join(tmp, "moved"))
            os.symlink(outside, os.path.join(d, "s.safetensors"))
            _, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "w"))
            c.equal(err, errno.EIO, "a shard swapped for a symlink after the mount")

        # Many tensors in one header: bounded time.
        n = 50000
        big = st_file([("t%06d" % i, "F32", [0], b"") for i in range(n)])
        path = os.path.join(tmp, "many.safetensors")
        with open(path, "wb") as f:
            f.write(big)
        t0 = time.time()
        r = subprocess.run([os.path.join(build, "modelfs-ls"), path], capture_output=True, env=env,
                           timeout=300)
        took = time.time() - t0
        c.equal(r.returncode, 0, "%d zero-size tensors" % n)
        c.check(took < 60, "%d tensors took %.1f s" % (n, took))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_hostile(c, t):
    check_hostile_folders(c, t.build, t.env)


EXTRAS = (check_hostile,)
