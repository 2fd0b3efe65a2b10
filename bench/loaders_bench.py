#!/usr/bin/python3
"""Loaders through the files view (issue 37): the way the tools that load
models read a file, through a remote mount's files/ folder, against the
baselines measured in the same run.

    sudo /usr/bin/python3 bench/loaders_bench.py BUILD_DIR [--quick] [--cache DIR]

The link and the inputs are remote_bench.py's: Debian's nginx on
127.0.0.1 with `limit_rate 40m` per connection behind the 20 ms delay
proxy (a 40 ms round trip), serving a safetensors of one 512 MiB tensor
and 100 small ones, a GGUF, an ONNX model with its external data, a
PyTorch checkpoint and a safetensors of 100 tensors of 4 MiB. modelfs
mounts their URLs (`modelfs URL... MNT`) and each loader reads
MNT/files/NAME, on a fresh mount with an empty cache_dir.

Loaders (each a function of a path, so the same code reads every side):
  safe_open    a mapping of the safetensors, every tensor's pages faulted
               in through numpy over the header's offsets (safe_open's way)
  pretrained   the safetensors read tensor by tensor in file order, 1 MiB
               reads (from_pretrained's way), after its header
  llama.cpp    a mapping of the GGUF touched from its first byte to its
               last, tensor by tensor
  onnxruntime  model.onnx read whole, then its external data in order
  torch.load   torch.load of the checkpoint (python3-torch), weights only
  3 of 100     a mapping of the 100-tensor safetensors, 3 tensors read

Rows per loader, each a ratio against a baseline of the same run:
  vs 8 curls   eight parallel `curl` ranges of the same bytes (the link's
               limit) / the loader through the mount: target >= 0.9
  vs rclone    the loader through rclone's HTTP mount (`--vfs-cache-mode
               full`, an empty cache) / through modelfs: target >= 5
  warm         a local load (page cache dropped) / the load again from a
               second mount on the warm cache_dir (page cache dropped):
               target >= 0.9
  fetched      bytes nginx sent / bytes the loader read: target <= 1.1

Exit 0 when every row was measured, 1 when the harness failed, 77 when the
machine cannot run it (not root, no /dev/fuse, nginx or curl, or a build
without the files view)."""
import argparse
import hashlib
import json
import mmap
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import remote_bench as rb  # noqa: E402
from remote_bench import MIB, SKIP, log  # noqa: E402

NAMES = ("big.safetensors", "model.gguf", "model.onnx", "model.onnx.data", "model.bin",
         "hundred.safetensors")


# ---- the loaders: each reads `path` as its tool does; the bytes it read --

def st_tensors(path):
    """(data start, [(name, begin, end)] in file order) of a safetensors."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k) for k, v in h.items())
    return 8 + n, [(k, a, b) for a, b, k in spans]


def touch(view):
    """Faults every page of a mapped range in (reads one byte of each, as
    a loader's first pass over a tensor does), and hashes nothing."""
    page = mmap.PAGESIZE
    total = 0
    for i in range(0, len(view), page):
        total += view[i]
    return total


def load_safe_open(path, names=None):
    import numpy as np
    start, ts = st_tensors(path)
    read = 0
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
        for k, a, b in ts:
            if names is not None and k not in names:
                continue
            arr = np.frombuffer(m, dtype=np.uint8, count=b - a, offset=start + a)
            touch(memoryview(arr))
            read += b - a
            del arr
    return read + start


def load_pretrained(path):
    start, ts = st_tensors(path)
    buf = bytearray(MIB)
    read = start
    with open(path, "rb", buffering=0) as f:
        for _, a, b in ts:
            f.seek(start + a)
            left = b - a
            while left > 0:
                n = f.readinto(memoryview(buf)[:min(left, MIB)])
                if n <= 0:
                    raise RuntimeError("%s: short read" % path)
                left -= n
            read += b - a
    return read


def load_gguf(path):
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
        view = memoryview(m)
        step = 4 * MIB
        for at in range(0, len(m), step):
            touch(view[at:at + step])
        n = len(m)
        view.release()
    return n


def load_onnx(path):
    read = 0
    for p in (path, path + ".data"):
        with open(p, "rb", buffering=0) as f:
            while True:
                b = f.read(MIB)
                if not b:
                    break
                read += len(b)
    return read


def load_torch(path):
    import torch
    sd = torch.load(path, map_location="cpu", weights_only=True)
    h = hashlib.sha256()
    for v in sd.values():
        h.update(v.numpy().tobytes()[:64])
    return os.path.getsize(path)


def load_three(path):
    _, ts = st_tensors(path)
    return load_safe_open(path, names={ts[5][0], ts[50][0], ts[95][0]})


LOADERS = [
    ("safe_open", "big.safetensors", load_safe_open),
    ("pretrained", "big.safetensors", load_pretrained),
    ("llama.cpp", "model.gguf", load_gguf),
    ("onnxruntime", "model.onnx", load_onnx),
    ("torch.load", "model.bin", load_torch),
    ("3 of 100", "hundred.safetensors", load_three),
]


# ---- the sides --------------------------------------------------------

def drop_page_cache():
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def timed_load(fn, path):
    t = time.perf_counter()
    n = fn(path)
    return time.perf_counter() - t, n


def modelfs_mount(build, link, cache):
    mnt = tempfile.mkdtemp(prefix="modelfs-lb-mnt-")
    urls = [link.base + n for n in NAMES]
    r = subprocess.run([os.path.join(build, "modelfs"), "-o", "cache_dir=" + cache] + urls + [mnt],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        os.rmdir(mnt)
        raise RuntimeError("modelfs URL... MNT: exit %d: %s" % (r.returncode, r.stderr.strip()))
    return mnt


class Rclone:
    """rclone's HTTP mount of the link (`--vfs-cache-mode full`)."""

    def __init__(self, link):
        self.mnt = tempfile.mkdtemp(prefix="modelfs-lb-rclone-")
        self.cache = tempfile.mkdtemp(prefix="modelfs-lb-rclone-cache-", dir="/var/tmp")
        self.proc = subprocess.Popen(["rclone", "mount", ":http:", self.mnt, "--http-url", link.base,
                                      "--vfs-cache-mode", "full", "--cache-dir", self.cache,
                                      "--read-only", "--config", "/dev/null"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline and not os.path.ismount(self.mnt):
            time.sleep(0.1)
        self.ok = os.path.ismount(self.mnt)

    def close(self):
        subprocess.run(["fusermount", "-u", self.mnt], stderr=subprocess.DEVNULL)
        rb.mfstest.stop_process(self.proc, 20)
        os.rmdir(self.mnt)
        shutil.rmtree(self.cache, ignore_errors=True)


def run(build, root, table, with_rclone):
    tmp = tempfile.mkdtemp(prefix="modelfs-lb-")
    link = rb.Link(build, root, tmp)
    caches = []

    def fresh_cache():
        c = tempfile.mkdtemp(prefix="modelfs-lb-cache-", dir="/var/tmp")
        caches.append(c)
        return c
    try:
        probe = modelfs_mount(build, link, fresh_cache())
        try:
            if not os.path.isdir(os.path.join(probe, "files")):
                log("this build's mount has no files/ folder")
                return SKIP
        finally:
            rb.mfstest.unmount_and_remove(probe)
        for label, name, fn in LOADERS:
            if fn is load_torch:
                try:
                    import torch  # noqa: F401
                except ImportError:
                    table.add(label, "skipped: no python3-torch")
                    continue
            local = os.path.join(root, name)
            size = sum(os.path.getsize(p) for p in
                       ([local, local + ".data"] if name == "model.onnx" else [local]))
            # The link's limit: eight curls of the whole file(s).
            t8 = sum(rb.curls(link.base + n, 0, os.path.getsize(os.path.join(root, n)), 8)
                     for n in ([name, name + ".data"] if name == "model.onnx" else [name]))
            cache = fresh_cache()
            mnt = modelfs_mount(build, link, cache)
            try:
                mark = link.mark()
                t, nread = timed_load(fn, os.path.join(mnt, "files", name))
                gets, _, nbytes = link.since(mark)
            finally:
                rb.mfstest.unmount_and_remove(mnt)
            if fn is load_three:
                table.add(label + ": fetched", "%d MB of %d MB read, %d GETs" % (nbytes // 10**6,
                          nread // 10**6, gets), ratio="%.3f" % (nbytes / max(nread, 1)),
                          target="<= 1.1", ok=nbytes <= 1.1 * nread)
            else:
                table.add(label + ": vs 8 curls", "%.2f s" % t, "%.2f s" % t8, "%.2f" % (t8 / t),
                          ">= 0.9", t8 / t >= 0.9)
                table.add(label + ": fetched", "%d MB, %d GETs" % (nbytes // 10**6, gets),
                          "%d MB read" % (nread // 10**6), "%.3f" % (nbytes / max(nread, 1)),
                          "<= 1.1", nbytes <= 1.1 * nread)
            if with_rclone and fn is not load_three:
                rc = Rclone(link)
                try:
                    if rc.ok:
                        tr, _ = timed_load(fn, os.path.join(rc.mnt, name))
                        table.add(label + ": vs rclone", "%.2f s" % t, "%.2f s" % tr, "%.1f" % (tr / t),
                                  ">= 5", tr / t >= 5)
                    else:
                        table.add(label + ": vs rclone", "skipped: rclone did not mount")
                finally:
                    rc.close()
            # Warm: a second mount on the same cache_dir, against the local file.
            drop_page_cache()
            tl, _ = timed_load(fn, local)
            drop_page_cache()
            mnt = modelfs_mount(build, link, cache)
            try:
                mark = link.mark()
                tw, _ = timed_load(fn, os.path.join(mnt, "files", name))
                gets, _, _ = link.since(mark)
            finally:
                rb.mfstest.unmount_and_remove(mnt)
            table.add(label + ": warm", "%.2f s, %d GETs" % (tw, gets), "%.2f s local" % tl,
                      "%.2f" % (tl / tw), ">= 0.9", tl / tw >= 0.9)
            log("%s: %d bytes of input" % (label, size))
        return 0
    finally:
        link.close()
        for c in caches:
            shutil.rmtree(c, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-rclone", action="store_true", help="leave the rclone rows out")
    ap.add_argument("--cache", default=os.environ.get("MODELFS_BENCH_CACHE",
                                                      "/var/tmp/modelfs-bench-cache"))
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse") or not shutil.which("nginx") or \
            not shutil.which("curl"):
        log("needs root, /dev/fuse, nginx and curl")
        return SKIP
    size = rb.QUICK if a.quick else rb.FULL
    root = os.path.join(a.cache, "remote-%d" % size["big_mib"])
    rb.make_inputs(root, size)
    rb.make_hundred(root, size)
    table = rb.Table()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        rc = run(os.path.abspath(a.build), root, table, not a.no_rclone and shutil.which("rclone"))
    except Exception as e:  # noqa: BLE001 - the table still shows what was measured
        table.add("FAILED", str(e))
        rc = 1
    if rc == SKIP:
        return SKIP
    commit = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print("loaders benchmark, %s, commit %s, link: limit_rate 40m + 40 ms round trip\n" %
          ("quick" if a.quick else "full", commit))
    table.show()
    return rc


if __name__ == "__main__":
    sys.exit(main())
