#!/usr/bin/python3
"""Warm remounts (issue 35, item 4): a remote model read back from its
cache_dir against a local mount's first read of the same bytes, for this
build and, with --old, an older one, in one run on one link.

    sudo /usr/bin/python3 bench/warm_bench.py BUILD [--old OLD_BUILD] [--mib 256] [--runs 5]

The link is remote_bench.py's (nginx limit_rate 40m behind the 20 ms delay
proxy). Per build: a first read on a fresh mount with an empty cache_dir
(time, bytes fetched / read), then --runs rounds of, alternated between the
builds: a warm remount of that cache_dir and `cat` (the cache's files in
the page cache, as they are after the first read: remote_bench.py's
"warm remount" row), the same with the page cache dropped, and a local
mount's first read (page cache dropped; the baseline). Medians; the ratio
is local first read / warm read (higher is better, target >= 0.9x). The
daemon's CPU seconds during each `cat` are shown too: on a machine shared
with other work they move less than the wall time does.

Exit 0 when measured, 1 on a failure, 77 when the machine cannot run it."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "tests", "mount"))
import mfstest  # noqa: E402
import remote_bench as rb  # noqa: E402

MIB = 1 << 20


def make_input(d, mib):
    path = os.path.join(d, "warm-%d.safetensors" % mib)
    if not os.path.exists(path):
        os.makedirs(d, exist_ok=True)
        tmp = path + ".tmp"
        rb.write_safetensors(tmp, [("big", "U8", [mib * MIB], os.urandom(mib * MIB))])
        os.rename(tmp, path)
    return path


def read_all(folder):
    """The cache's files into the page cache (as a first read leaves them)."""
    for d, _, fs in os.walk(folder):
        for f in fs:
            with open(os.path.join(d, f), "rb") as fh:
                while fh.read(8 << 20):
                    pass


def cpu_of(pid):
    """The daemon's CPU seconds so far (user + system)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_cat(mnt):
    """(seconds, daemon CPU seconds) of `cat` of the tensor."""
    pid = mfstest.daemon_pid(mnt)
    before = cpu_of(pid)
    t = rb.cat(os.path.join(mnt, "tensors", "big"))
    return t, cpu_of(pid) - before


def one(build, url, cache, warm_pc):
    if warm_pc:
        read_all(cache)
    else:
        mfstest.drop_caches()
    mnt, _ = rb.mount(build, url, cache)
    try:
        return timed_cat(mnt)
    finally:
        mfstest.unmount_and_remove(mnt)


def local(build, path):
    mnt = tempfile.mkdtemp(prefix="modelfs-wb-local-")
    subprocess.run([os.path.join(build, "modelfs"), path, mnt], check=True)
    try:
        mfstest.drop_caches()
        return timed_cat(mnt)
    finally:
        mfstest.unmount_and_remove(mnt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--old")
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cache", default=os.environ.get("MODELFS_BENCH_CACHE",
                                                      "/var/tmp/modelfs-bench-cache"))
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse") or not mfstest.shutil.which("nginx"):
        print("bench: needs root, /dev/fuse and nginx", file=sys.stderr)
        return mfstest.SKIP
    builds = [("new", os.path.abspath(a.build))]
    if a.old:
        builds.append(("old", os.path.abspath(a.old)))
    root = os.path.join(a.cache, "warm")
    path = make_input(root, a.mib)
    tmp = tempfile.mkdtemp(prefix="modelfs-wb-")
    link = rb.Link(builds[0][1], root, tmp)
    url = link.base + os.path.basename(path)
    off, length = rb.tensor_range(path)
    caches, fig = {}, {}
    try:
        for name, build in builds:
            caches[name] = tempfile.mkdtemp(prefix="modelfs-wb-cache-", dir="/var/tmp")
            mnt, _ = rb.mount(build, url, caches[name])
            mark = link.mark()
            t = rb.cat(os.path.join(mnt, "tensors", "big"))
            _, _, nbytes = link.since(mark)
            mfstest.unmount_and_remove(mnt)
            fig[name] = {"first": t, "fetched": nbytes / length, "warm": [], "cold": [],
                         "local": []}
        for _ in range(a.runs):
            for name, build in builds:
                mark = link.mark()
                fig[name]["warm"].append(one(build, url, caches[name], True))
                gets, _, _ = link.since(mark)
                if gets:
                    raise RuntimeError("%s: %d GETs on a warm remount" % (name, gets))
                fig[name]["cold"].append(one(build, url, caches[name], False))
                fig[name]["local"].append(local(build, path))
    finally:
        link.close()
        for c in caches.values():
            mfstest.shutil.rmtree(c, ignore_errors=True)
        mfstest.shutil.rmtree(tmp, ignore_errors=True)
    print("warm remount, %d MiB tensor, median of %d, load %.1f\n" %
          (a.mib, a.runs, os.getloadavg()[0]))
    print("Seconds of `cat`, and in brackets the daemon's CPU seconds during it.\n")
    print("| build | first read | fetched/read | local first read | warm remount | ratio | "
          "warm, page cache dropped | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, _ in builds:
        f = fig[name]
        lo, w, c = (statistics.median(t for t, _ in f[k]) for k in ("local", "warm", "cold"))
        lc, wc, cc = (statistics.median(u for _, u in f[k]) for k in ("local", "warm", "cold"))
        print("| %s | %.2f s | %.3f | %.3f s (%.2f) | %.3f s (%.2f) | %.2fx | %.3f s (%.2f) | "
              "%.2fx |" % (name, f["first"], f["fetched"], lo, lc, w, wc, lo / w, c, cc, lo / c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
