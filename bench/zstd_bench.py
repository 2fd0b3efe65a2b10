#!/usr/bin/python3
"""First read of a zstd Carton member vs `zstd -d` of the same frame
(issue 11, item 4: target >= 0.8x).

For each data set (random normal float32, a little compressible; and a
very compressible one) it writes a carton with one zstd member of
--size-mib MiB (with its MANIFEST sha256, so the check runs), extracts the
member's frame to a .zst file, then, medians of --runs:

  zstd -d        `zstd -d -c FRAME > /dev/null`, frame in the page cache
  first read     1 MiB reads of the whole member through a fresh mount
                 (carton in the page cache): decode + CRC-32 + sha256 +
                 the copy out through FUSE

usage: zstd_bench.py BUILD_DIR [--size-mib 256] [--runs 3] [--only normal|compressible]
Needs /dev/fuse (root for mounting, as in the mount tests).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "scripts"))
sys.path.insert(0, os.path.join(here, "..", "tests", "mount"))
import gen_carton  # noqa: E402
import mfstest  # noqa: E402
import numpy as np  # noqa: E402

CHUNK = 1 << 20


def timed_read(path):
    buf = bytearray(CHUNK)
    mv = memoryview(buf)
    t0 = time.perf_counter()   # the open decodes and checks: timed too
    fd = os.open(path, os.O_RDONLY)
    try:
        total = 0
        while True:
            n = os.readv(fd, [mv])
            if n <= 0:
                break
            total += n
        return time.perf_counter() - t0, total
    finally:
        os.close(fd)


def data_set(kind, mib):
    rng = np.random.default_rng(11)
    n = mib * (1 << 20) // 4
    if kind == "normal":
        return rng.standard_normal(n, dtype=np.float32)
    # Very compressible: a few distinct values in long-ish runs.
    return np.repeat(rng.integers(-8, 8, n // 64).astype(np.float32) / 4, 64)


def make_carton(work, kind, mib):
    c = gen_carton.Carton(gen_carton.runner_toml("zstd-bench"))
    c.tensor("w", data_set(kind, mib), "zstd")
    files = c.finish()
    members = c.members(files)
    comp = None
    for m in members:
        if m.name == b"tensor_data/tensor_0.bin":
            m.comp = comp = gen_carton.compress("zstd", m.data)
    blob = gen_carton.zip_bytes(members)
    path = os.path.join(work, "%s.carton" % kind)
    with open(path, "wb") as f:
        f.write(blob)
    frame = os.path.join(work, "%s.zst" % kind)
    with open(frame, "wb") as f:
        f.write(comp)
    size = len(files["tensor_data/tensor_0.bin"])
    return path, frame, size, len(comp)


def cache(path):
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def bench(modelfs, work, kind, mib, runs):
    carton, frame, size, csize = make_carton(work, kind, mib)
    cache(carton)
    cache(frame)
    t_zstd, t_first = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as null:
            subprocess.run(["zstd", "-q", "-d", "-c", frame], stdout=null, check=True)
        t_zstd.append(time.perf_counter() - t0)
        with mfstest.mounted(modelfs, carton) as m:
            t, n = timed_read(os.path.join(m, "tensors", "w"))
            if n != size:
                raise RuntimeError("read %d bytes of %d" % (n, size))
            t_first.append(t)
    z, f = statistics.median(t_zstd), statistics.median(t_first)
    print("%s: %d MiB member, %.1f MiB frame (%.2f of the size), %d runs, medians"
          % (kind, size >> 20, csize / 2**20, csize / size, runs))
    print("  %-28s %6.3f s  %6.2f GB/s" % ("zstd -d -c > /dev/null", z, size / z / 1e9))
    print("  %-28s %6.3f s  %6.2f GB/s  ratio %.2fx (target >= 0.8x)"
          % ("first read, fresh mount", f, size / f / 1e9, z / f))
    print("  runs: zstd %s; first read %s" % (" ".join("%.3f" % x for x in t_zstd),
                                              " ".join("%.3f" % x for x in t_first)))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=("normal", "compressible"))
    a = ap.parse_args()
    if not mfstest.can_mount():
        print("zstd_bench: needs /dev/fuse and permission to mount")
        return 77
    if shutil.which("zstd") is None:
        print("zstd_bench: needs the zstd command")
        return 77
    modelfs = os.path.join(a.build, "modelfs")
    work = tempfile.mkdtemp(prefix="modelfs-zstd-bench-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    try:
        for kind in ("normal", "compressible"):
            if a.only in (None, kind):
                bench(modelfs, work, kind, a.size_mib, a.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
