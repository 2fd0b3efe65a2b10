#!/usr/bin/python3
"""Issue 9's benchmarks: every figure a ratio against a baseline measured in
the same run on the same machine.

  folder mount   `modelfs DIR MNT` of a folder of N models (command start to
                 return: the mount is usable), vs `ls -lR DIR` of the same
                 folder; page cache dropped before each, and again warm
  head -n 1      `head -n 1 SHA256SUMS` on a fresh mount of a model with M
                 tensors, vs `sha256sum` of one tensor's bytes in a file of
                 their own (both are one process, one small hash)

usage: multi_bench.py BUILD_DIR [--models 200] [--model-mib 64] [--tensors 100000] [--runs 3]
Needs root (to drop the page cache) and /dev/fuse.
"""
import argparse
import json
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


def timed(args, **kw):
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t0


def make_folder(root, models, mib):
    """`models` distinct model files of about `mib` MiB each, 10 per folder
    (distinct bytes: each has its own tensor)."""
    n = mib * (1 << 20) // 4
    base = np.frombuffer(os.urandom(n * 4), dtype="<f4").copy()
    for i in range(models):
        d = os.path.join(root, "run%02d" % (i // 10))
        os.makedirs(d, exist_ok=True)
        base[0] = i
        g = gen_rten.Graph([gen_rten.Const("w%d" % i, base), gen_rten.Const("b", base[:16])])
        gen_rten.write_model(d, "ckpt%03d.rten" % i, g)
        os.unlink(os.path.join(d, "ckpt%03d.rten.expect.json" % i))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--model-mib", type=int, default=64)
    ap.add_argument("--tensors", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        print("multi_bench: needs root and /dev/fuse")
        return 77
    modelfs = os.path.join(a.build, "modelfs")
    work = tempfile.mkdtemp(prefix="modelfs-bench-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    try:
        zoo = os.path.join(work, "zoo")
        make_folder(zoo, a.models, a.model_mib)
        mnt = os.path.join(work, "mnt")
        os.mkdir(mnt)
        rows = {k: [] for k in ("mount_cold", "ls_cold", "mount_warm", "ls_warm")}
        for _ in range(a.runs):
            for state in ("cold", "warm"):
                if state == "cold":
                    mfstest.drop_caches()
                rows["ls_" + state].append(timed(["ls", "-lR", zoo]))
                if state == "cold":
                    mfstest.drop_caches()
                rows["mount_" + state].append(timed([modelfs, zoo, mnt]))
                listed = len([x for x in os.listdir(mnt) if x != "models.json"])
                mfstest.unmount(mnt)
        med = {k: statistics.median(v) for k, v in rows.items()}
        print("%d models of %d MiB in %d folders (%d runs, medians)" % (
            a.models, a.model_mib, listed, a.runs))
        for state in ("cold", "warm"):
            print("%-36s %7.3f s vs ls -lR %7.3f s: %5.2fx" % (
                "modelfs DIR MNT, page cache " + state, med["mount_" + state], med["ls_" + state],
                med["mount_" + state] / med["ls_" + state]))

        many = os.path.join(work, "many.rten")
        gen_rten.write_model(work, "many.rten", gen_rten.many_graph(a.tensors))
        with open(many + ".expect.json") as f:
            t0 = json.load(f)["tensors"][0]
        one = os.path.join(work, "one.bin")
        with open(many, "rb") as f, open(one, "wb") as o:
            doc = json.loads(subprocess.run([os.path.join(a.build, "modelfs-ls"), many, "model.json"],
                                            check=True, capture_output=True).stdout)
            first = doc["tensors"][0]
            f.seek(first["offset"])
            o.write(f.read(first["nbytes"]))
        head, direct = [], []
        for _ in range(a.runs):
            direct.append(timed(["sha256sum", one]))
            subprocess.run([modelfs, many, mnt], check=True)
            try:
                head.append(timed(["head", "-n", "1", os.path.join(mnt, "SHA256SUMS")]))
            finally:
                mfstest.unmount(mnt)
        h, d = statistics.median(head), statistics.median(direct)
        print("%-36s %7.3f s vs sha256sum of one tensor (%d B, %s) %7.3f s: %5.2fx" % (
            "head -n 1 SHA256SUMS, %d tensors" % a.tensors, h, first["nbytes"], t0["name"], d, h / d))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
