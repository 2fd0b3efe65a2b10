#!/usr/bin/python3
"""The .npy twins (issue 9, item 1) of a large tensor: reading one grows
the daemon's anonymous memory by less than 1 MiB (no copy), and np.load
maps it. (Every model's twins, with numpy: test_formats.py's npy part,
format_checks.check_twins.)

usage: test_npy.py BUILD_DIR
MODELFS_NPY_BIG_MIB sets the large tensor's size (default 256).
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import mfstest  # noqa: E402
import numpy as np  # noqa: E402

MIB = 1 << 20


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


def run(c, t):
    check_big(c, t.modelfs, t.env)


if __name__ == "__main__":
    sys.exit(mfstest.main("npy tests (big)", run, __doc__, one_cpu=True))
