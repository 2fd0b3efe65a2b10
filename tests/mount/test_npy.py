#!/usr/bin/python3
"""The .npy twins (issue 9, item 1), checked with numpy itself: for every
tensor entry with an `npy` key, np.load of the mounted file (of its path
with mmap_mode="r" for each model's first twin, of the bytes read through
the mount for the others) equals np.frombuffer of the tensor file with the table's dtype
(`npy_dtype` where given) and stored shape; entries without one are the
ones the README says get none; npy/ holds nothing else; reads that span
the header and the data give the same bytes; and reading a large .npy
grows the daemon's anonymous memory by less than 1 MiB (no copy).

usage: test_npy.py BUILD_DIR [--only=PART,...] [--shard=I/N] MODEL_DIR...
PART: models (every model of the MODEL_DIRs), big; default both (ctest runs
them as separate cases, in parallel).
MODELFS_NPY_BIG_MIB sets the large tensor's size (default 256).
"""
import io
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import mfstest  # noqa: E402
import numpy as np  # noqa: E402
mfstest.cache_npy_header_filter(np)

MIB = 1 << 20


def why_none(t):
    """Why an entry has no .npy (None when it should have one)."""
    if "problem" in t:
        return "problem"
    if t["dtype"] in ("string", "nested"):
        return t["dtype"]
    if "element_bits" in t:
        return "packed %d-bit elements" % t["element_bits"]
    return None


def check_model(c, modelfs, model, env):
    name = os.path.relpath(model)
    extra = ()
    if os.path.isdir(model + ".links"):
        extra = ("-o", "links_dir=" + os.path.abspath(model + ".links"))
    try:
        ctx = mfstest.mounted(modelfs, model, env=env, extra=extra)
        mnt = ctx.__enter__()
    except RuntimeError:
        return  # a model that does not mount (mount.models checks those)
    try:
        if mfstest.is_collection(mnt):
            return  # a folder of models (mount.multi checks those)
        with open(os.path.join(mnt, "model.json")) as f:
            doc = json.load(f)
        listed = set()
        listed_once = False
        for t in doc["tensors"]:
            what = "%s: %s" % (name, t["path"])
            if "npy" not in t:
                c.check(why_none(t) is not None, "%s (%s) has no .npy" % (what, t["dtype"]))
                continue
            c.check(why_none(t) is None, "%s has a .npy but is %s" % (what, why_none(t)))
            listed.add(t["npy"])
            npy = os.path.join(mnt, t["npy"])
            # The tensor's bytes from the model file where model.json places
            # them as served (mount.models checks every offset), else
            # through the mount: the twin is what this test reads there.
            raw = mfstest.stored_bytes(model, doc.get("format"), t)
            try:
                if raw is None:
                    raw = mfstest.read_bytes(os.path.join(mnt, t["path"]))
            except OSError as e:
                # Unreadable (tampered, not fetched): its twin too.
                try:
                    mfstest.read_bytes(npy)
                    c.check(False, "%s: tensor fails (%s) but its .npy reads" % (what, e))
                except OSError:
                    c.check(True, what)
                continue
            # A NumPy file's own descr, read by numpy (numpy's dtypes:
            # datetime64, str, structured... whose names do not say it all).
            dtype = mfstest.npy_descr_dtype(t["descr"]) if "descr" in t else \
                np.dtype(t.get("npy_dtype", t["dtype"]))
            shape = t.get("stored_shape", t["shape"])
            if dtype.itemsize == 0:
                c.equal(raw, b"", what + ": no bytes for elements of size 0")
                want = np.ndarray(tuple(shape), dtype)  # np.empty makes S0 S1
            elif t.get("memory_order") == "fortran":
                # A NumPy file's Fortran order: the twin says so too.
                want = np.frombuffer(raw, dtype=dtype).reshape(t["shape"], order="F")
            else:
                want = np.frombuffer(raw, dtype=dtype).reshape(shape)
            # The whole file, and (the same open file) one read across the
            # header's end.
            fd = os.open(npy, os.O_RDONLY)
            try:
                chunks = []
                while True:
                    b = os.read(fd, 1 << 20)
                    if not b:
                        break
                    chunks.append(b)
                whole = b"".join(chunks)
                head = len(whole) - len(raw)
                part = os.pread(fd, 100, max(head - 10, 0))
            finally:
                os.close(fd)
            # numpy reads what the mount served: from the path, mapped, as
            # users load it, for a model's first twin (and the big one);
            # from those same bytes for the others (one open, not three).
            if not listed_once:
                got = np.load(npy, mmap_mode="r", max_header_size=1 << 24)
                listed_once = True
                if c.check(isinstance(got, np.memmap) or got.size == 0, what + ": mapped"):
                    c.equal(getattr(got, "offset", 0) % 64, 0, what + ": data offset a multiple of 64")
            else:
                got = np.load(io.BytesIO(whole), max_header_size=1 << 24)
            c.check(got.dtype == want.dtype and got.shape == want.shape and
                    got.tobytes() == want.tobytes(),
                    "%s: np.load gives %s %s, want %s %s" % (what, got.dtype, got.shape,
                                                             want.dtype, want.shape))
            del got
            if "npy_axes" in t:
                c.equal(list(np.transpose(want, t["npy_axes"]).shape), t["shape"],
                        what + ": npy_axes gives the logical shape")
            c.check(head % 64 == 0 and whole[head:] == raw and whole.startswith(b"\x93NUMPY"),
                    what + ": header + tensor bytes")
            c.check(part == whole[max(head - 10, 0):max(head - 10, 0) + 100],
                    what + ": a read across header and data")
        present = set()
        for d, _dirs, files in os.walk(mnt):
            # npy/ folders, and npy/NESTED/ for a nested tensor's inner
            # ones (not a nested tensor named npy: tensors/npy/).
            p = os.path.relpath(d, mnt).split(os.sep)
            if any(p[-k:][0] == "npy" and p[-k - 1:-k] != ["tensors"] for k in (1, 2) if len(p) >= k):
                present.update(os.path.relpath(os.path.join(d, f), mnt) for f in files)
        c.equal(sorted(present - listed), [], name + ": files under npy/ the table does not list")
    finally:
        ctx.__exit__(None, None, None)


def check_big(c, modelfs, env):
    import gen_rten
    mib = int(os.environ.get("MODELFS_NPY_BIG_MIB", "256"))
    tmp = tempfile.mkdtemp(prefix="modelfs-npy-", dir="/var/tmp")
    path = os.path.join(tmp, "big.rten")
    try:
        arr = np.arange(mib * MIB // 4, dtype="<f4")
        gen_rten.write_model(tmp, "big.rten", gen_rten.Graph([gen_rten.Const("big", arr)]))
        del arr
        with mfstest.mounted(modelfs, path, env=env) as mnt:
            pid = mfstest.daemon_pid(mnt)
            npy = os.path.join(mnt, "npy", "big.npy")
            st0 = mfstest.rss(pid)
            before = st0["RssAnon"]
            n = 0
            with open(npy, "rb", buffering=0) as f:
                buf = bytearray(MIB)
                while True:
                    k = f.readinto(buf)
                    if not k:
                        break
                    n += k
            st1 = mfstest.rss(pid)
            grown = st1["RssAnon"] - before
            # A FUSE worker that libfuse starts meanwhile (a busy machine
            # keeps more reads in flight) has its own 1 MiB request buffer:
            # not a copy of tensor bytes, so it is allowed for.
            workers = max(0, st1["Threads"] - st0["Threads"])
            print("big .npy: %d MiB read, daemon RssAnon grew by %d KiB, %d new threads"
                  % (n // MIB, grown // 1024, workers), flush=True)
            c.check(n > mib * MIB, "big .npy: read %d bytes" % n)
            c.check(grown < MIB + workers * (MIB + 128 * 1024),
                    "big .npy: RssAnon grew by %d bytes with %d new threads (a copy?)" % (grown, workers))
            a = np.load(npy, mmap_mode="r")
            c.check(a.shape == (mib * MIB // 4,) and a[-1] == np.float32(mib * MIB // 4 - 1),
                    "big .npy: np.load")
            del a
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    build, dirs = argv[1], argv[2:]
    parts = {"models", "big"}
    if dirs and dirs[0].startswith("--only="):
        parts = set(dirs.pop(0)[len("--only="):].split(","))
    shard, nshards = mfstest.take_shard(dirs)
    c = mfstest.Checker("npy tests (%s)" % ",".join(sorted(parts)))
    mfstest.mounts_on_one_cpu()  # reads one file at a time: see there
    if not mfstest.can_mount():
        c.skip("no /dev/fuse or fusermount3")
        return c.finish()
    modelfs = os.path.join(build, "modelfs")
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    env = mfstest.sanitizer_env(logdir)
    if "models" in parts:
        for k, model in enumerate(mfstest.model_files(c, dirs)):
            if k % nshards == shard:
                check_model(c, modelfs, model, env)
    if "big" in parts:
        check_big(c, modelfs, env)
    mfstest.check_sanitizer_reports(c, logdir)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
