#!/usr/bin/python3
"""modelfs-ls --diff on a large float32 pair (issue 21, part 3).

usage: diff_bench.py BUILD_DIR [--size-gb N] [--runs N] [--dir DIR]

Makes two safetensors models of N GB of float32 each (default 2; 1 when
the disk has less than 3 N + 1 GB free) in DIR (default /tmp): A, and B =
A with every element nudged (every tensor "changed": the whole decode and
sums path), reads them once into the page cache, then times, best of
--runs (default 3):

  diff changed   modelfs-ls --diff A B     (every number compared)
  diff identical modelfs-ls --diff A A2    (A2 a copy of A: bytes only)
  numpy changed  the same figures with numpy over np.memmap of A and B,
                 in 16 Mi-element slices (float64, as modelfs-ls does)

each with its peak resident set (GNU time's %M), and prints a table: GB/s
per side (one model's bytes / seconds), peak RSS, and the ratio to numpy.
Target: >= 1 GB/s a side for float32 and a peak RSS of a few pieces (tens
of MB), not the models' size. Removes its files at the end (also on
Ctrl-C). Warm page cache only: a cold read is the disk's speed."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

TENSOR_ELEMS = 64 << 20        # 256 MB a tensor
SLICE = 16 << 20               # numpy's slices (elements)

NUMPY_DIFF = r"""
import json, sys, numpy as np
def tensors(path):
    with open(path, 'rb') as f:
        n = int.from_bytes(f.read(8), 'little')
        h = json.loads(f.read(n))
    h.pop('__metadata__', None)
    return 8 + n, h
off_a, ha = tensors(sys.argv[1])
off_b, hb = tensors(sys.argv[2])
ma = np.memmap(sys.argv[1], np.uint8, 'r')
mb = np.memmap(sys.argv[2], np.uint8, 'r')
S = %d
out = {}
for name, ta in ha.items():
    tb = hb[name]
    a = ma[off_a + ta['data_offsets'][0]:off_a + ta['data_offsets'][1]].view('<f4')
    b = mb[off_b + tb['data_offsets'][0]:off_b + tb['data_offsets'][1]].view('<f4')
    nd = 0; mx = 0.0; sa = aa = bb = ab = dd = 0.0
    for i in range(0, a.size, S):
        x = a[i:i + S].astype(np.float64); y = b[i:i + S].astype(np.float64)
        d = x - y; ad = np.abs(d)
        nd += int(np.count_nonzero(x != y)); mx = max(mx, float(ad.max()))
        sa += float(ad.sum()); aa += float(x @ x); bb += float(y @ y); ab += float(x @ y)
        dd += float(d @ d)
    out[name] = {'ndiff': nd, 'max_abs': mx, 'mean_abs': sa / a.size,
                 'rel_l2': (dd ** .5) / (aa ** .5), 'cos': ab / (aa ** .5 * bb ** .5)}
print(json.dumps(out))
""" % SLICE


def write_pair(dir_, size_gb):
    """A and B (B = A nudged), tensor after tensor, never a whole tensor in
    memory twice."""
    n_t = max(1, -(-int(size_gb * 1e9) // (TENSOR_ELEMS * 4)))  # at least size_gb
    header, off = {}, 0
    for i in range(n_t):
        header["blk.%d.weight" % i] = {"dtype": "F32", "shape": [TENSOR_ELEMS // 4096, 4096],
                                       "data_offsets": [off, off + TENSOR_ELEMS * 4]}
        off += TENSOR_ELEMS * 4
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    rng = np.random.default_rng(21)
    base = rng.standard_normal(1 << 22).astype(np.float32)       # 16 MB, tiled
    noise = (rng.standard_normal(1 << 22) * 1e-3).astype(np.float32)
    pa, pb = os.path.join(dir_, "a.safetensors"), os.path.join(dir_, "b.safetensors")
    with open(pa, "wb") as fa, open(pb, "wb") as fb:
        for f in (fa, fb):
            f.write(len(h).to_bytes(8, "little") + h)
        for i in range(n_t):
            for k in range(TENSOR_ELEMS // base.size):
                a = base * np.float32(1 + 1e-3 * (i * 64 + k))
                fa.write(a.tobytes())
                fb.write((a + np.roll(noise, k)).tobytes())
    return pa, pb, n_t * TENSOR_ELEMS * 4


def timed(cmd, tmp):
    """(seconds, peak RSS in MB, stdout) of one run, by GNU time."""
    rss = os.path.join(tmp, "rss")
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss] + cmd, capture_output=True)
    dt = time.perf_counter() - t0
    with open(rss) as f:
        kb = int(f.read().split()[-1])
    return dt, kb * 1024 / 1e6, r.returncode, r.stdout


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--size-gb", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp")
    args = ap.parse_args(argv[1:])
    ls = os.path.join(args.build, "modelfs-ls")
    if not os.path.exists("/usr/bin/time") or not os.access(ls, os.X_OK):
        print("diff_bench: needs %s and GNU time (/usr/bin/time)" % ls, file=sys.stderr)
        return 77
    free = shutil.disk_usage(args.dir).free / 1e9
    size = args.size_gb
    if free < 3 * size + 1:
        size = 1.0
        print("diff_bench: %.1f GB free in %s: 1 GB a side" % (free, args.dir), file=sys.stderr)
        if free < 4:
            return 77
    tmp = tempfile.mkdtemp(prefix="mfs-diff-bench-", dir=args.dir)
    try:
        print("diff_bench: making the models (%.1f GB a side)..." % size, file=sys.stderr)
        pa, pb, nbytes = write_pair(tmp, size)
        pa2 = os.path.join(tmp, "a2.safetensors")
        shutil.copyfile(pa, pa2)
        for p in (pa, pb, pa2):   # into the page cache
            with open(p, "rb") as f:
                while f.read(64 << 20):
                    pass
        np_script = os.path.join(tmp, "np_diff.py")
        with open(np_script, "w") as f:
            f.write(NUMPY_DIFF)
        rows = {}
        cases = [("diff changed", [ls, "--diff", "--json", pa, pb], 1),
                 ("diff identical", [ls, "--diff", pa, pa2], 0),
                 ("numpy changed", ["/usr/bin/python3", np_script, pa, pb], 0)]
        outs = {}
        for name, cmd, want in cases:
            best = None
            for _ in range(args.runs):
                dt, rss, rc, out = timed(cmd, tmp)
                if rc != want:
                    print("diff_bench: %s exited %d, not %d" % (name, rc, want), file=sys.stderr)
                    return 1
                if best is None or dt < best[0]:
                    best = (dt, rss)
                outs[name] = out
            rows[name] = best
            print("diff_bench: %s: %.2f s, %.0f MB" % (name, best[0], best[1]), file=sys.stderr)
        # The figures agree with numpy's.
        ours = {t["name"]: t for t in json.loads(outs["diff changed"])["tensors"]}
        theirs = json.loads(outs["numpy changed"])
        worst = 0.0
        for name, f in theirs.items():
            for k in ("max_abs", "mean_abs", "rel_l2", "cos"):
                worst = max(worst, abs(ours[name][k] - f[k]) / max(abs(f[k]), 1e-300))
            if ours[name]["ndiff"] != f["ndiff"]:
                worst = float("inf")
        base = rows["numpy changed"][0]
        print("\n%d tensors of float32, %.2f GB a side, page cache warm; best of %d runs; "
              "figures agree with numpy to %.1e (relative)\n" % (len(theirs), nbytes / 1e9,
                                                               args.runs, worst))
        print("| case | seconds | GB/s a side | peak RSS MB | speed vs numpy | target |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, _, _ in cases:
            dt, rss = rows[name]
            target = ">= 1 GB/s, RSS tens of MB" if name.startswith("diff") else "baseline"
            ok = "" if not name.startswith("diff") else (
                " PASS" if nbytes / dt / 1e9 >= 1.0 and rss < 128 else " MISS")
            print("| %s | %.2f | %.2f | %.0f | %.2fx | %s%s |" % (name, dt, nbytes / dt / 1e9, rss,
                                                                base / dt, target, ok))
        return 0 if worst < 1e-6 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:
        sys.exit(130)
