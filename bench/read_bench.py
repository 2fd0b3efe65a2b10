#!/usr/bin/python3
"""Read-path and listing benchmarks: every figure is a ratio against a
baseline measured in the same run on the same machine (SPEC §6).

  first read     one tensor through a fresh mount, page cache dropped,
                 vs the same bytes read directly from the model file
  fresh mount    model file cached, fresh mount, vs a direct cached read
  re-read        the same mount again (kernel page cache of the mount)
  ls -l          `ls -l tensors/` of a model with N tensors, fresh mount,
                 vs `ls -l` of an ext4 folder holding N empty files
  memory         the daemon's anonymous RSS for the big and the many-tensor model

usage: read_bench.py BUILD_DIR [--size-mib 1024] [--tensors 100000] [--runs 3]
Needs root (to drop the page cache) and /dev/fuse.
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
import gen_rten  # noqa: E402
import mfstest  # noqa: E402
import numpy as np  # noqa: E402

CHUNK = 1 << 20


def drop_caches():
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def timed_read(path, offset=0, length=None):
    """Seconds to read [offset, offset+length) with 1 MiB reads."""
    buf = bytearray(CHUNK)
    mv = memoryview(buf)
    fd = os.open(path, os.O_RDONLY)
    try:
        if length is None:
            length = os.fstat(fd).st_size - offset
        os.lseek(fd, offset, 0)
        left = length
        t0 = time.perf_counter()
        while left > 0:
            n = os.readv(fd, [mv[:min(CHUNK, left)]])
            if n <= 0:
                break
            left -= n
        return time.perf_counter() - t0
    finally:
        os.close(fd)


def make_big(path, mib):
    n = mib * (1 << 20) // 4
    arr = np.frombuffer(os.urandom(n * 4), dtype="<f4")
    g = gen_rten.Graph([gen_rten.Const("big.weight", arr)])
    gen_rten.write_model(os.path.dirname(path), os.path.basename(path), g)


def daemon_rss_anon(mnt):
    """RssAnon of the modelfs daemon serving `mnt` (kB)."""
    out = subprocess.run(["pgrep", "-f", "modelfs .* %s$" % mnt], capture_output=True, text=True).stdout.split()
    for pid in out:
        try:
            with open("/proc/%s/status" % pid) as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        return int(line.split()[1])
        except OSError:
            pass
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--tensors", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        print("read_bench: needs root and /dev/fuse")
        return 77
    modelfs = os.path.join(a.build, "modelfs")
    work = tempfile.mkdtemp(prefix="modelfs-bench-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    try:
        big = os.path.join(work, "big.rten")
        make_big(big, a.size_mib)
        import json
        with open(big + ".expect.json") as f:
            t = json.load(f)["tensors"][0]
        nbytes = t["nbytes"]
        with mfstest.mounted(modelfs, big) as m:
            doc = json.load(open(os.path.join(m, "model.json")))
        offset = doc["tensors"][0]["offset"]
        gb = nbytes / 1e9

        rows = {k: [] for k in ("direct_cold", "mount_cold", "direct_warm", "mount_fresh", "mount_reread")}
        rss_big = None
        for _ in range(a.runs):
            drop_caches()
            rows["direct_cold"].append(timed_read(big, offset, nbytes))
            drop_caches()
            with mfstest.mounted(modelfs, big) as m:
                rows["mount_cold"].append(timed_read(os.path.join(m, "tensors", "big.weight")))
            timed_read(big)  # make sure the whole file is cached
            rows["direct_warm"].append(timed_read(big, offset, nbytes))
            with mfstest.mounted(modelfs, big) as m:
                p = os.path.join(m, "tensors", "big.weight")
                rows["mount_fresh"].append(timed_read(p))
                rows["mount_reread"].append(timed_read(p))
                rss_big = daemon_rss_anon(m)
        med = {k: statistics.median(v) for k, v in rows.items()}
        speed = {k: gb / v for k, v in med.items()}
        print("model: %s, tensor %.0f MiB, %d runs, medians" % (big, nbytes / 2**20, a.runs))
        print("%-34s %8.2f GB/s" % ("direct read, cache dropped", speed["direct_cold"]))
        print("%-34s %8.2f GB/s  ratio %.2fx (target >= 0.9x)" % (
            "first read through a fresh mount", speed["mount_cold"], speed["mount_cold"] / speed["direct_cold"]))
        print("%-34s %8.2f GB/s" % ("direct read, page cache", speed["direct_warm"]))
        print("%-34s %8.2f GB/s  ratio %.2fx (target >= 0.4x)" % (
            "fresh mount, model cached", speed["mount_fresh"], speed["mount_fresh"] / speed["direct_warm"]))
        print("%-34s %8.2f GB/s  ratio %.2fx (target >= 0.5x)" % (
            "re-read, same mount", speed["mount_reread"], speed["mount_reread"] / speed["direct_warm"]))
        os.unlink(big)

        # ls -l of N tensors vs N empty files on the local filesystem.
        many = os.path.join(work, "many.rten")
        gen_rten.write_model(work, "many.rten", gen_rten.many_graph(a.tensors))
        plain = os.path.join(work, "plain")
        os.mkdir(plain)
        for i in range(a.tensors):
            open(os.path.join(plain, "layer%05d%%2Fweight" % i), "w").close()
        t_ls, t_ext = [], []
        rss_many = None
        for _ in range(a.runs):
            drop_caches()
            t0 = time.perf_counter()
            subprocess.run(["ls", "-l", plain], stdout=subprocess.DEVNULL, check=True)
            t_ext.append(time.perf_counter() - t0)
            with mfstest.mounted(modelfs, many) as m:
                t0 = time.perf_counter()
                subprocess.run(["ls", "-l", os.path.join(m, "tensors")], stdout=subprocess.DEVNULL, check=True)
                t_ls.append(time.perf_counter() - t0)
                rss_many = daemon_rss_anon(m)
        ls_m, ext_m = statistics.median(t_ls), statistics.median(t_ext)
        print("%-34s %8.2f s   (local fs, cache dropped: %.2f s; ratio %.2fx of its time)" % (
            "ls -l of %d tensors" % a.tensors, ls_m, ext_m, ls_m / ext_m))
        print("%-34s %8s kB for %d MiB of tensor bytes; %s kB for %d tensors" % (
            "daemon anonymous memory", rss_big, a.size_mib, rss_many, a.tensors))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
