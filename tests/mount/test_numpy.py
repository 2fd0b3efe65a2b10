#!/usr/bin/python3
"""NumPy .npy/.npz through real mounts, with numpy as the independent
reader: for every array, np.load of the original file (or np.load(npz)[key])
against the mounted tensor bytes (as stored: Fortran order and big-endian
kept) and against np.load of its npy/ twin (np.transpose with npy_axes for
Fortran order); the table keys descr, fortran_order, data_offset,
npy_version, byte_order, member and compression against the expectation;
object and structured arrays served raw with a `problem` and no twin; a
deflated member whose data is bad reads as EIO (and --verify says so)
while the rest of the mount works.

usage: test_numpy.py BUILD_DIR DIR... (a DIR that does not exist is skipped, visibly)
"""
import errno
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mfstest  # noqa: E402
import numpy as np  # noqa: E402


def stored_bytes(a):
    """The array's bytes as np.save stored them."""
    fortran = a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous
    return a.tobytes(order="F" if fortran else "C")


def originals(model):
    """{name: array} as numpy loads the file."""
    if model.endswith(".npz"):
        with np.load(model, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    return {os.path.basename(model)[:-4]: np.load(model, allow_pickle=False)}


def check_model(c, build, model, expect, env):
    name = os.path.basename(model)
    raw_names = {w["name"] for w in expect["tensors"] if w["dtype"] is None}
    try:
        arrays = originals(model)
    except ValueError:
        arrays = {}  # object arrays: numpy wants allow_pickle; checked as raw below
    with mfstest.mounted(os.path.join(build, "modelfs"), model, env) as mnt:
        doc = json.load(open(os.path.join(mnt, "model.json"), encoding="utf-8"))
        c.equal(doc["format"], "numpy", name + " format")
        byname = {t["name"]: t for t in doc["tensors"]}
        c.equal(sorted(byname), sorted(w["name"] for w in expect["tensors"]), name + " names")
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
            data = open(os.path.join(mnt, t["path"]), "rb").read()
            if w["name"] in raw_names:
                c.check("problem" in t and "npy" not in t and t["dtype"] == "bytes",
                        what + " served raw with a problem, no twin")
                c.equal(t.get("declared_shape"), w["shape"], what + " declared_shape")
                continue
            a = arrays.get(w["name"])
            if not c.check(a is not None, what + " np.load has it"):
                continue
            c.check(data == stored_bytes(a), what + " tensor bytes vs np.load (as stored)")
            c.equal(t["shape"], list(a.shape), what + " shape vs np.load")
            twin = np.load(os.path.join(mnt, t["npy"]), mmap_mode="r")
            if "npy_axes" in t:
                twin = np.transpose(twin, t["npy_axes"])
            c.check(twin.dtype == a.dtype and twin.shape == a.shape and np.array_equal(twin, a),
                    what + " np.load of the twin (%s %s) vs the original (%s %s)" %
                    (twin.dtype, twin.shape, a.dtype, a.shape))
            del twin


def check_bad_member(c, build, env):
    """A deflated member that inflates to less than its central directory
    says: the header is read at mount, the open fails (EIO) and --verify
    reports it; the good member still reads."""
    tmp = tempfile.mkdtemp(prefix="modelfs-npz-")
    try:
        path = os.path.join(tmp, "short.npz")
        good = np.arange(100, dtype="<f4")
        np.savez_compressed(path, good=good, bad=np.zeros((64, 64), "<f4"))
        data = bytearray(open(path, "rb").read())
        # Raise the bad member's uncompressed size (central directory and
        # local header, or its zip64 fields): it now lies about its length.
        with zipfile.ZipFile(path) as z:
            info = z.getinfo("bad.npy")
        at = 0
        while True:
            at = data.find(b"PK\x01\x02", at)
            if at < 0:
                break
            nlen = struct.unpack_from("<H", data, at + 28)[0]
            if data[at + 46:at + 46 + nlen] == b"bad.npy":
                if struct.unpack_from("<I", data, at + 24)[0] == 0xFFFFFFFF:
                    x = at + 46 + nlen
                    struct.pack_into("<Q", data, x + 4, info.file_size + 4096)
                else:
                    struct.pack_into("<I", data, at + 24, info.file_size + 4096)
            at += 4
        loc = info.header_offset
        if struct.unpack_from("<I", data, loc + 22)[0] != 0xFFFFFFFF:
            struct.pack_into("<I", data, loc + 22, info.file_size + 4096)
        with open(path, "wb") as f:
            f.write(data)
        r = subprocess.run([os.path.join(build, "modelfs-ls"), "--verify", path], capture_output=True,
                           text=True, env=env, timeout=60)
        c.equal(r.returncode, 8, "--verify of a member that lies about its size: %s" % r.stderr.strip())
        with mfstest.mounted(os.path.join(build, "modelfs"), path, env) as mnt:
            _, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "bad"))
            c.equal(err, errno.EIO, "a deflated member shorter than declared reads as EIO")
            got, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "good"))
            c.check(err == 0 and got == good.tobytes(), "the good member still reads")
            twin = np.load(os.path.join(mnt, "npy", "good.npy"))
            c.check(np.array_equal(twin, good), "the good member's twin")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    build, dirs = argv[1], argv[2:]
    c = mfstest.Checker("numpy tests")
    if not mfstest.can_mount():
        c.skip("no /dev/fuse or fusermount3")
        return c.finish()
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    env = mfstest.sanitizer_env(logdir)
    for model, expect in mfstest.expected_models(c, dirs, ("numpy",)):
        if expect.get("expect") not in ("readable", "readable_or_error"):
            continue
        before = c.failed
        check_model(c, build, model, expect, env)
        print("%s %s" % ("ok  " if c.failed == before else "FAIL", model), flush=True)
    check_bad_member(c, build, env)
    mfstest.check_sanitizer_reports(c, logdir)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
