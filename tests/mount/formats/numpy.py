"""NumPy .npy/.npz: its own checks, beyond the generic ones, with numpy
as the independent reader: for every array (every key np.load lists,
members that are not arrays included), np.load of the original file (or np.load(npz)[key])
against the mounted tensor bytes (as stored: Fortran order and
big-endian kept), against model.json's dtype (numpy's dtype.name), descr
(read back with numpy.lib.format.descr_to_dtype) and shape, and against
np.load of its npy/ twin (same dtype, shape and bytes, Fortran order
too); the table keys descr, fortran_order,
data_offset, npy_version, byte_order, member and compression against the
expectation; object arrays and descrs numpy cannot read served raw with a
`problem` and no twin; a deflated member claiming more bytes than its
array is refused, one whose data is bad reads as EIO (and --verify says
so) while the rest of the mount works.
"""
import errno
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zipfile

import mfstest
import numpy as np
mfstest.cache_npy_header_filter(np)

DIRS = ("gen/numpy", "shared/fixtures/numpy")


# Headers of thousands of fields are longer than np.load's default bound.
HEADER_MAX = 1 << 24


def stored_bytes(a):
    """The array's bytes as np.save stored them."""
    fortran = a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous
    return a.tobytes(order="F" if fortran else "C")


def originals(model):
    """{name: array or bytes} as numpy loads the file; a key numpy
    refuses (pickles, descrs it cannot read) is left out."""
    out = {}
    if model.endswith(".npz"):
        with np.load(model, allow_pickle=False, max_header_size=HEADER_MAX) as z:
            for k in z.files:
                try:
                    out[k] = z[k]
                except (ValueError, MemoryError):
                    pass
        return out
    try:
        out[os.path.basename(model)[:-4]] = np.load(model, allow_pickle=False,
                                                    max_header_size=HEADER_MAX)
    except (ValueError, MemoryError):
        pass
    return out


def check_array(c, what, mnt, t, a, data):
    """A tensor against numpy's array: its dtype name, descr and shape in
    model.json, its bytes, and np.load of its twin."""
    c.equal(t["dtype"], a.dtype.name, what + " dtype vs numpy's dtype.name")
    c.equal(t["shape"], list(a.shape), what + " shape vs np.load")
    try:
        c.check(mfstest.npy_descr_dtype(t["descr"]) == a.dtype,
                what + " descr %r reads as %s" % (t["descr"], a.dtype))
    except (TypeError, ValueError) as e:
        c.check(False, what + " descr %r: %s" % (t["descr"], e))
    c.check(data == stored_bytes(a), what + " tensor bytes vs np.load (as stored)")
    if not c.check("npy" in t, what + " has a twin"):
        return
    twin = np.load(os.path.join(mnt, t["npy"]), mmap_mode="r", max_header_size=HEADER_MAX)
    c.check("npy_axes" not in t, what + ": no npy_axes: the twin is the array as numpy loads it")
    c.check(twin.dtype == a.dtype and twin.shape == a.shape and twin.tobytes() == a.tobytes(),
            what + " np.load of the twin (%s %s) vs the original (%s %s)" %
            (twin.dtype, twin.shape, a.dtype, a.shape))
    del twin


def check_model(c, t, model, expect, mount):
    if (expect is None or expect.get("format") != "numpy"
            or expect.get("expect") not in ("readable", "readable_or_error")):
        return
    name = os.path.basename(model)
    arrays = originals(model)
    try:
        mnt = mount()
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (name, e))
        return
    check_mounted(c, name, model, mnt, expect, arrays)


def check_mounted(c, name, model, mnt, expect, arrays):
    doc = json.load(open(os.path.join(mnt, "model.json"), encoding="utf-8"))
    c.equal(doc["format"], "numpy", name + " format")
    byname = {t["name"]: t for t in doc["tensors"]}
    c.equal(sorted(byname), sorted(w["name"] for w in expect["tensors"]), name + " names")
    if name.endswith(".npz"):
        with np.load(model) as z:
            c.equal(sorted(byname), sorted(z.files), name + " names vs np.load's keys")
    for w in expect["tensors"]:
        t = byname.get(w["name"])
        what = "%s: %r" % (name, w["name"])
        if t is None:
            continue
        for k in ("descr", "fortran_order", "data_offset", "npy_version", "member", "compression"):
            if k in w:
                c.equal(t.get(k), w[k], what + " " + k)
        c.equal(t.get("byte_order"), "big" if w.get("stored_byte_order") == "big" else None,
                what + " byte_order")
        data = mfstest.read_bytes(os.path.join(mnt, t["path"]))
        # Raw: what the expectation says has no tensor form, and a raw
        # blob of the shared fixtures (dtype null) numpy does not read
        # (its structured.npy, which numpy reads, is to be exact).
        if "problem" in w or (w["dtype"] is None and w["shape"] is not None and
                              w["name"] not in arrays):
            c.check("problem" in t and "npy" not in t and t["dtype"] == "bytes",
                    what + " served raw with a problem, no twin")
            c.check(w.get("problem", "") in t.get("problem", ""),
                    what + " problem %r says %r" % (t.get("problem"), w.get("problem")))
            c.equal(t.get("declared_shape"), w["shape"], what + " declared_shape")
            c.check(w["name"] not in arrays or w.get("modelfs_bound"),
                    what + " numpy reads it without pickling, yet it is served raw")
            continue
        v = arrays.get(w["name"])
        if not c.check(v is not None, what + " np.load has it"):
            continue
        if isinstance(v, bytes):
            # np.load gives a member that is no array as its bytes.
            c.check(t["dtype"] == "bytes" and t["shape"] == [len(v)] and data == v,
                    what + " a member that is no array: its bytes, as np.load gives them")
            continue
        check_array(c, what, mnt, t, v, data)


def patch_member(path, member, fn):
    """Rewrites the central directory entry and local header of `member`:
    fn(data, cd_offset, local_offset, info)."""
    data = bytearray(open(path, "rb").read())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    at = 0
    while True:
        at = data.find(b"PK\x01\x02", at)
        if at < 0:
            break
        nlen = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + nlen] == member.encode():
            fn(data, at, info.header_offset, info)
        at += 4
    with open(path, "wb") as f:
        f.write(data)


def check_bad_member(c, t):
    build, env = t.build, t.env
    """Members that lie: a Deflate one whose central directory claims more
    bytes than its array (refused at mount: a decode the cache would not
    see coming), and a Deflate and a Stored one whose CRC-32 is wrong
    (found on open: EIO, and --verify says so, while the good member still
    reads; a Stored one was once served as intact)."""
    tmp = tempfile.mkdtemp(prefix="modelfs-npz-")
    try:
        good = np.arange(100, dtype="<f4")
        path = os.path.join(tmp, "long.npz")
        np.savez_compressed(path, good=good, bad=np.zeros((64, 64), "<f4"))

        def longer(data, cd, loc, info):
            if struct.unpack_from("<I", data, cd + 24)[0] == 0xFFFFFFFF:
                nlen = struct.unpack_from("<H", data, cd + 28)[0]
                struct.pack_into("<Q", data, cd + 46 + nlen + 4, info.file_size + 4096)
            else:
                struct.pack_into("<I", data, cd + 24, info.file_size + 4096)
            if struct.unpack_from("<I", data, loc + 22)[0] != 0xFFFFFFFF:
                struct.pack_into("<I", data, loc + 22, info.file_size + 4096)
        patch_member(path, "bad.npy", longer)
        r = subprocess.run([os.path.join(build, "modelfs-ls"), path], capture_output=True, text=True,
                           env=env, timeout=60)
        c.check(r.returncode == 5 and "after the array" in r.stderr,
                "a member claiming more bytes than its array: exit %d, %s" % (r.returncode, r.stderr))

        def bad_crc(data, cd, loc, info):
            struct.pack_into("<I", data, cd + 16, info.CRC ^ 0x5a5a5a5a)
            struct.pack_into("<I", data, loc + 14, info.CRC ^ 0x5a5a5a5a)
        for how, save in (("deflated", np.savez_compressed), ("stored", np.savez)):
            path = os.path.join(tmp, "crc_%s.npz" % how)
            save(path, good=good, bad=np.zeros((64, 64), "<f4"))
            patch_member(path, "bad.npy", bad_crc)
            try:
                np.load(path)["bad"]
                c.check(False, "%s: numpy read the member with a wrong CRC-32" % how)
            except zipfile.BadZipFile:
                pass
            r = subprocess.run([os.path.join(build, "modelfs-ls"), "--verify", path],
                               capture_output=True, text=True, env=env, timeout=60)
            c.equal(r.returncode, 8, "--verify of a %s member with a wrong CRC-32: %s"
                    % (how, r.stderr.strip()))
            with mfstest.mounted(os.path.join(build, "modelfs"), path, env) as mnt:
                _, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "bad"))
                c.equal(err, errno.EIO, "a %s member with a wrong CRC-32 reads as EIO" % how)
                _, err = mfstest.read_or_errno(os.path.join(mnt, "npy", "bad.npy"))
                c.equal(err, errno.EIO, "%s: and so does its twin" % how)
                got, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "good"))
                c.check(err == 0 and got == good.tobytes(), "%s: the good member still reads" % how)
                twin = np.load(os.path.join(mnt, "npy", "good.npy"))
                c.check(np.array_equal(twin, good), "%s: the good member's twin" % how)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_stored_changed(c, t):
    build, env = t.build, t.env
    """A Stored .npz changed under the mount before a member's first open:
    cut short past the member (its CRC-32 check reads it under the SIGBUS
    guard: EIO, the daemon up), or one byte of it rewritten in place with
    its size and mtime kept (EIO, never the changed bytes: the daemon sees
    the file changed, and the CRC-32 no longer matches); the other member
    reads right or as EIO, never other bytes."""
    tmp = tempfile.mkdtemp(prefix="modelfs-npz-")
    try:
        a, b = np.arange(1000, dtype="<f4"), np.arange(1 << 18, dtype="<f4")
        for how in ("cut", "edited"):
            path = os.path.join(tmp, "%s.npz" % how)
            np.savez(path, a=a, b=b)
            with zipfile.ZipFile(path) as z:
                at = z.getinfo("b.npy").header_offset
            with mfstest.mounted(os.path.join(build, "modelfs"), path, env) as mnt:
                st = os.stat(path)
                if how == "cut":
                    os.truncate(path, at + 4096)
                else:
                    with open(path, "r+b") as f:
                        f.seek(at + 200000)
                        f.write(b"\xff")
                    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
                _, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "b"))
                c.equal(err, errno.EIO, "%s: the Stored member b reads as EIO" % how)
                got, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "a"))
                c.check(got == a.tobytes() if err == 0 else err == errno.EIO,
                        "%s: member a: %s" % (how, err or "other bytes"))
                c.check(os.path.exists(os.path.join(mnt, "model.json")), "%s: the mount answers" % how)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_header_bomb(c, t):
    build, env = t.build, t.env
    """Many Deflate members whose headers are large structured dtypes of
    one repeated field: small on disk, gigabytes of document if every
    header were kept. Refused with exit 5, quickly and in bounded memory."""
    tmp = tempfile.mkdtemp(prefix="modelfs-npz-")
    try:
        h = "{'descr': [%s], 'fortran_order': False, 'shape': (0,), }" % ("('a', '|u1'), " * 9000)
        h = h.encode() + b" " * ((64 - (len(h) + 13) % 64) % 64) + b"\n"
        blob = b"\x93NUMPY\x02\x00" + struct.pack("<I", len(h)) + h
        path = os.path.join(tmp, "headers.npz")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for i in range(2000):
                z.writestr("m%d.npy" % i, blob)
        r = subprocess.run(["/usr/bin/time", "-f", "%M", os.path.join(build, "modelfs-ls"), path],
                           capture_output=True, text=True, env=env, timeout=120)
        size = os.path.getsize(path)
        c.check(r.returncode == 5 and "more" in r.stderr,
                "%d members of %d-byte headers in %d bytes: exit %d %s" %
                (2000, len(blob), size, r.returncode, r.stderr.strip()[:300]))
        peak_kib = int(r.stderr.strip().splitlines()[-1])
        c.check(peak_kib * 1024 < (64 << 20) + 64 * size + (256 << 20),
                "peak memory %d KiB for a %d-byte file" % (peak_kib, size))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def simple_descrs():
    """Dtype strings around the forms np.save writes: byte orders, kinds
    and one-character codes, sizes, datetime units and multipliers, and
    near misses numpy refuses."""
    out = set()
    for o in ("", "<", ">", "|", "="):
        for k in "?bBhHiIlLqQpPeEfdgFDGcSaUVOxu":
            for n in ("", "0", "1", "2", "3", "4", "8", "16", "32", "08"):
                out.add(o + k + n)
        for k in "Mm":
            for n in ("", "8", "4"):
                for u in ("", "[s]", "[ns]", "[25s]", "[generic]", "[2generic]", "[]", "[0s]",
                          "[01D]", "[Y]", "[B]", "[s", "[ms]x"):
                    out.add(o + k + n + u)
    return sorted(out)


def structured_descrs(rng, count):
    """Random structured descrs: nested records, titles, padding, subarrays
    (some numpy refuses), names that need escapes or are not ASCII,
    repeated names."""
    simple = ["<i4", ">i2", "|u1", "<f8", ">f16", "<c32", "|b1", "<U3", ">U1", "|S5", "|S0", "|V3",
              "|V0", "<M8[s]", ">m8[ns]", "<M8", "|O", "g", "U0", "V4", "M8[2generic]", "b", "l", "'"]
    names = ["a", "b", "", "é", "x'y", 'q"', "a\\b", "n\nl", "名", "a", "b", 3]
    shapes = [(2,), (1,), (), (0,), (2, 3), 1, 3, 0, -1, (70000, 70000), (2,) * 33, (1,) * 32, 2 ** 31]

    def field(depth):
        name = rng.choice(names)
        if rng.random() < 0.15:
            name = (rng.choice(names[:-1]), rng.choice(names))
        t = record(depth + 1) if depth < 3 and rng.random() < 0.25 else rng.choice(simple)
        r = rng.random()
        if r < 0.15:
            return (name, t, rng.choice(shapes))
        if r < 0.18:
            return (name,)
        return (name, t)

    def record(depth):
        return [field(depth) for _ in range(rng.randint(0, 4))]
    return [record(0) for _ in range(count)]


def check_descrs(c, t):
    build, env = t.build, t.env
    """modelfs's reading of descrs against numpy's: an .npz of one member
    per descr (simple strings and random structured ones), mounted once.
    Where np.load reads a member without pickling, its tensor has numpy's
    dtype name and size, no problem, and a twin np.load reads as the same
    dtype, shape and bytes; where np.load refuses it, it is served raw
    with a problem. (Not tried: 12- and 24-byte long doubles, which numpy
    reads on 32-bit x86 only, and titles that are not strings, which
    modelfs serves raw.)"""
    import random
    import warnings
    warnings.filterwarnings("ignore", category=FutureWarning)  # numpy on (type, 1)
    rng = random.Random(19)
    descrs = simple_descrs() + structured_descrs(rng, 300)
    tmp = tempfile.mkdtemp(prefix="modelfs-npz-")
    try:
        path = os.path.join(tmp, "descrs.npz")
        want = {}
        with zipfile.ZipFile(path, "w") as z:
            for i, d in enumerate(descrs):
                key = "d%04d" % i
                try:
                    dt = np.lib.format.descr_to_dtype(d)
                    dt = None if dt.hasobject else dt
                except Exception:
                    dt = None
                data = bytes(rng.getrandbits(8) for _ in range(2 * dt.itemsize if dt else 16))
                h = "{'descr': %r, 'fortran_order': False, 'shape': (2,), }\n" % (d,)
                try:
                    head = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode("latin1")
                except UnicodeEncodeError:
                    hb = h.encode("utf-8")
                    head = b"\x93NUMPY\x03\x00" + struct.pack("<I", len(hb)) + hb
                z.writestr(key + ".npy", head + data)
                want[key] = (d, dt)
        arrays = originals(path)
        r = subprocess.run([os.path.join(build, "modelfs-ls"), path], capture_output=True, text=True,
                           env=env, timeout=120)
        if not c.check(r.returncode == 0, "descrs.npz: %s" % r.stderr.strip()):
            return
        with mfstest.mounted(os.path.join(build, "modelfs"), path, env) as mnt:
            doc = json.load(open(os.path.join(mnt, "model.json"), encoding="utf-8"))
            byname = {t["name"]: t for t in doc["tensors"]}
            ok = 0
            for key, (d, dt) in want.items():
                t = byname.get(key)
                what = "descr %r" % (d,)
                if not c.check(t is not None, what + ": no tensor"):
                    continue
                if dt is None or key not in arrays:
                    ok += c.check("problem" in t and "npy" not in t,
                                  what + ": numpy refuses it, modelfs serves it as %s" % t["dtype"])
                    continue
                a = arrays[key]
                if not c.check("problem" not in t, what + ": numpy reads it (%s), modelfs: %s" %
                               (a.dtype, t.get("problem"))):
                    continue
                twin = np.load(os.path.join(mnt, t["npy"]), max_header_size=HEADER_MAX)
                ok += c.check(t["dtype"] == a.dtype.name and t["nbytes"] == a.nbytes and
                              twin.dtype == a.dtype and twin.shape == a.shape and
                              twin.tobytes() == a.tobytes(),
                              what + ": %s %d bytes, twin %s %s; numpy %s %s" %
                              (t["dtype"], t["nbytes"], twin.dtype, twin.shape, a.dtype, a.shape))
            print("descrs: %d of %d read as numpy reads them (numpy reads %d)" %
                  (ok, len(want), sum(1 for k, (d, dt) in want.items() if dt and k in arrays)),
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


EXTRAS = (check_descrs, check_bad_member, check_stored_changed, check_header_bomb)
