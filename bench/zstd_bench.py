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

With --method deflate the member is deflated instead, and the baseline is
`gzip -d -c` of the same deflate data in a gzip wrapper (gzip checks the
CRC-32 too).

usage: zstd_bench.py BUILD_DIR [--size-mib 256] [--runs 3] [--only normal|compressible]
                     [--method zstd|deflate]
Needs /dev/fuse (root for mounting, as in the mount tests).
"""
import argparse
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "scripts"))
sys.path.insert(0, os.path.join(here, "..", "tests", "mount"))
import gen_carton  # noqa: E402
import mfstest  # noqa: E402
from bench import timed_read  # noqa: E402  (the open decodes and checks: timed too)
import numpy as np  # noqa: E402


def data_set(kind, mib):
    rng = np.random.default_rng(11)
    n = mib * (1 << 20) // 4
    if kind == "normal":
        return rng.standard_normal(n, dtype=np.float32)
    # Very compressible: a few distinct values in long-ish runs.
    return np.repeat(rng.integers(-8, 8, n // 64).astype(np.float32) / 4, 64)


def make_carton(work, kind, mib, method):
    c = gen_carton.Carton(gen_carton.runner_toml("zstd-bench"))
    c.tensor("w", data_set(kind, mib), method)
    files = c.finish()
    members = c.members(files)
    comp = None
    for m in members:
        if m.name == b"tensor_data/tensor_0.bin":
            m.comp = comp = gen_carton.compress(method, m.data)
            if method == "deflate":   # a gzip member around the same deflate data
                comp = (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + comp +
                        struct.pack("<II", zlib.crc32(m.data), len(m.data) & 0xFFFFFFFF))
    blob = gen_carton.zip_bytes(members)
    path = os.path.join(work, "%s.carton" % kind)
    with open(path, "wb") as f:
        f.write(blob)
    frame = os.path.join(work, "%s.%s" % (kind, "zst" if method == "zstd" else "gz"))
    with open(frame, "wb") as f:
        f.write(comp)
    size = len(files["tensor_data/tensor_0.bin"])
    return path, frame, size, len(comp)


def cpu_of(pid):
    """User + system CPU seconds of a process (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cache(path):
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def bench(modelfs, work, kind, mib, runs, method):
    carton, frame, size, csize = make_carton(work, kind, mib, method)
    tool = "zstd" if method == "zstd" else "gzip"
    cache(carton)
    cache(frame)
    t_zstd, t_first, c_zstd, c_first = [], [], [], []
    for _ in range(runs):
        r0 = os.times()
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as null:
            subprocess.run([tool, "-q", "-d", "-c", frame], stdout=null, check=True)
        t_zstd.append(time.perf_counter() - t0)
        r1 = os.times()
        c_zstd.append(r1.children_user - r0.children_user + r1.children_system - r0.children_system)
        with mfstest.mounted(modelfs, carton) as m:
            pid = mfstest.daemon_pid(m)
            c0 = cpu_of(pid)
            t, n = timed_read(os.path.join(m, "tensors", "w"))
            c_first.append(cpu_of(pid) - c0)
            if n != size:
                raise RuntimeError("read %d bytes of %d" % (n, size))
            t_first.append(t)
    z, f = statistics.median(t_zstd), statistics.median(t_first)
    print("%s, %s: %d MiB member, %.1f MiB compressed (%.2f of the size), %d runs, medians"
          % (kind, method, size >> 20, csize / 2**20, csize / size, runs))
    print("  %-28s %6.3f s  %6.2f GB/s" % ("%s -d -c > /dev/null" % tool, z, size / z / 1e9))
    print("  %-28s %6.3f s  %6.2f GB/s  ratio %.2fx%s"
          % ("first read, fresh mount", f, size / f / 1e9, z / f,
             " (target >= 0.8x)" if method == "zstd" else ""))
    print("  CPU seconds (user+sys): %s %.3f, daemon during the first read %.3f "
          "(machine load %s)" % (tool, statistics.median(c_zstd), statistics.median(c_first),
                                 " ".join("%.2f" % x for x in os.getloadavg())))
    print("  runs: %s %s; first read %s" % (tool, " ".join("%.3f" % x for x in t_zstd),
                                              " ".join("%.3f" % x for x in t_first)))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=("normal", "compressible"))
    ap.add_argument("--method", choices=("zstd", "deflate"), default="zstd")
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
                bench(modelfs, work, kind, a.size_mib, a.runs, a.method)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
