#!/usr/bin/python3
"""Throughput of the f32/ views (issue 21, part 1).

usage: f32_bench.py BUILD_DIR [--mib N] [--runs N] [--dir DIR]

Writes, in DIR (default /tmp), one model per stored type, each a single
tensor of N MiB of stored bytes (default 256): bfloat16 (safetensors),
q8_0 and q4_k (GGUF; random blocks with finite scales). For each, through
a fresh mount (-o cache_size=4G, the model in the page cache), best of
--runs (default 3):

  first read   open + `cat f32/w.npy`: the view is made on open (the
               tensor read, dequantized, written into memory) and read out
  cached read  `cat` again: the view is held by the content layer
  raw read     `cat tensors/w`, the stored bytes through the same mount
  numpy        the same float32 values made by numpy from the stored bytes
               in memory (bfloat16: a shift; q8_0: d * q; q4_k: none here,
               gguf-py is not packaged)

and prints GB/s of float32 made per second (and of stored bytes read),
with the first read's speed over numpy's (numpy's time / the first
read's). Removes its files at the end."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mount"))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import mfstest  # noqa: E402
import gen_gguf as G  # noqa: E402


def write_bf16(path, nbytes, rng):
    n = nbytes // 2
    a = rng.standard_normal(n, dtype=np.float32)
    bits = (a.view(np.uint32) >> 16).astype("<u2")
    cols = 4096
    h = ('{"w":{"dtype":"BF16","shape":[%d,%d],"data_offsets":[0,%d]}}'
         % (n // cols, cols, n * 2)).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        f.write(bits[:n // cols * cols].tobytes())
    return bits[:n // cols * cols].tobytes()


def write_blocks(d, fname, type_id, nbytes, rng):
    _, _, bs, ts = G.GGML_TYPES[type_id]
    cols = 4096
    row = cols // bs * ts
    rows = max(1, nbytes // row)
    raw = rng.integers(0, 256, rows * row, dtype=np.uint8).reshape(-1, ts)
    scale = np.float16(0.01).view(np.uint16)
    raw[:, 0] = scale & 0xff       # d
    raw[:, 1] = scale >> 8
    if type_id == 12:              # q4_k: dmin too
        raw[:, 2] = scale & 0xff
        raw[:, 3] = scale >> 8
    data = raw.tobytes()
    G.write(d, fname, [], [G.Tensor("w", type_id, [cols, rows], data)])
    return data


def numpy_bf16(raw):
    return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)


def numpy_q8_0(raw):
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
    d = b[:, :2].copy().view("<f2").astype(np.float32)
    q = b[:, 2:].copy().view(np.int8).astype(np.float32)
    return (d * q).reshape(-1)


def timed_cat(path):
    t = time.perf_counter()
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp")
    a = ap.parse_args()
    modelfs = os.path.join(a.build, "modelfs")
    tmp = tempfile.mkdtemp(prefix="modelfs-f32-bench-", dir=a.dir)
    rng = np.random.default_rng(21)
    nbytes = a.mib << 20
    cases = []
    try:
        raw = write_bf16(os.path.join(tmp, "bf16.safetensors"), nbytes, rng)
        cases.append(("bfloat16", os.path.join(tmp, "bf16.safetensors"), raw, numpy_bf16))
        raw = write_blocks(tmp, "q8_0.gguf", 8, nbytes, rng)
        cases.append(("q8_0", os.path.join(tmp, "q8_0.gguf"), raw, numpy_q8_0))
        raw = write_blocks(tmp, "q4_k.gguf", 12, nbytes, rng)
        cases.append(("q4_k", os.path.join(tmp, "q4_k.gguf"), raw, None))
        print("| type | stored MiB | f32 MiB | first read | cached read | raw read | numpy | "
              "first vs numpy |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for name, model, raw, ref in cases:
            subprocess.run(["cat", model], stdout=subprocess.DEVNULL, check=True)
            first, cached, rawt, npt = [], [], [], []
            out = 0
            for _ in range(a.runs):
                with mfstest.mounted(modelfs, model, extra=("-o", "cache_size=4G")) as mnt:
                    view = os.path.join(mnt, "f32", "w.npy")
                    out = os.path.getsize(view)
                    first.append(timed_cat(view))
                    cached.append(timed_cat(view))
                    rawt.append(timed_cat(os.path.join(mnt, "tensors", "w")))
                if ref is not None:
                    t = time.perf_counter()
                    ref(raw)
                    npt.append(time.perf_counter() - t)
            gbs = lambda s: "%.2f GB/s" % (out / 1e9 / min(s))  # noqa: E731
            np_cell = gbs(npt) if npt else "-"
            ratio = "%.1fx" % (min(npt) / min(first)) if npt else "-"
            print("| %s | %d | %d | %s (%.2f s) | %s | %.2f GB/s stored | %s | %s |"
                  % (name, len(raw) >> 20, out >> 20, gbs(first), min(first), gbs(cached),
                     len(raw) / 1e9 / min(rawt), np_cell, ratio), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
