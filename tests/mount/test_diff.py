#!/usr/bin/python3
"""modelfs-ls --diff A B (issue 21, part 3): two models made to differ in
known ways (one element changed, a tensor renamed, a dtype changed with
equal values, a shape changed, q8_0 against the float32 it was made from,
NaNs and infinities, duplicate names, dtypes without numbers, int64 and
uint64 past 2^53 against each other and floats, packed int4), in
safetensors and GGUF and across the two; every figure of --json checked
against numpy (float64 over the dequantized values), the text lines, the
exit codes (0 same, 1 differ, 2 trouble), and the resident set on a
model of a few hundred MB (normal build only).

usage: test_diff.py BUILD_DIR"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import mfstest  # noqa: E402
import rangeserver  # noqa: E402
import gen_gguf  # noqa: E402

ST_DTYPES = {"float32": "F32", "float16": "F16", "float64": "F64", "int32": "I32", "int8": "I8",
             "uint8": "U8", "int64": "I64", "uint64": "U64"}


def write_st(path, tensors):
    """A safetensors file of numpy arrays {name: array}, in that order."""
    mfstest.write_safetensors_entries(path, [(name, ST_DTYPES[a.dtype.name], a.shape,
                                      np.ascontiguousarray(a).tobytes())
                                     for name, a in tensors.items()])


def q8_0(x):
    """x (float32, length a multiple of 32) as q8_0 blocks, and their
    dequantized values as llama.cpp computes them (float32 d * q)."""
    x = np.asarray(x, np.float32).reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    d16 = (amax / 127).astype(np.float16)
    d32 = d16.astype(np.float32)
    safe = np.where(d32 == 0, np.float32(1), d32)
    q = np.clip(np.rint(x / safe[:, None]), -127, 127).astype(np.int8)
    raw = b"".join(d16[i].tobytes() + q[i].tobytes() for i in range(len(q)))
    deq = (d32[:, None] * q.astype(np.float32)).astype(np.float32)
    return raw, deq.reshape(-1)


def expected(a, b):
    """The figures modelfs-ls --diff must give, from numpy in float64."""
    a = np.asarray(a, np.float64).reshape(-1)
    b = np.asarray(b, np.float64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        eq = (a == b) | (np.isnan(a) & np.isnan(b))
        d = np.abs(a - b)
    d[np.isnan(d)] = np.inf
    d[eq] = 0
    fin = np.isfinite(a) & np.isfinite(b)
    aa = float(np.sum(a[fin] ** 2))
    bb = float(np.sum(b[fin] ** 2))
    ab = float(np.sum(a[fin] * b[fin]))
    dd = float(np.sum((a[fin] - b[fin]) ** 2))
    na, nb = math.sqrt(aa), math.sqrt(bb)
    rel = math.sqrt(dd) / na if na > 0 else (math.inf if dd > 0 else 0.0)
    cos = ab / (na * nb) if na > 0 and nb > 0 else math.nan
    return {"elements": a.size, "ndiff": int((~eq).sum()), "max_abs": float(d.max()) if a.size else 0.0,
            "mean_abs": float(d.sum() / a.size) if a.size else 0.0, "rel_l2": rel, "cos": cos,
            "norm_a": na, "norm_b": nb}


def close(got, want, rel=1e-9):
    if want is None or (isinstance(want, float) and not math.isfinite(want)):
        return got is None
    if got is None:
        return False
    return got == want or abs(got - want) <= rel * max(abs(want), 1e-300)


class Run:
    def __init__(self, ls, env):
        self.ls, self.env = ls, env

    def __call__(self, *args):
        r = subprocess.run([self.ls] + list(args), capture_output=True, env=self.env, timeout=600)
        return r.returncode, r.stdout.decode("utf-8", "surrogateescape"), \
            r.stderr.decode("utf-8", "replace")


def by_name(doc):
    out = {}
    for t in doc["tensors"]:
        out.setdefault(t["name"], []).append(t)
    return out


def check_figures(c, got, want, what):
    for k in ("elements", "ndiff"):
        c.equal(got.get(k), want[k], "%s: %s" % (what, k))
    for k in ("max_abs", "mean_abs", "rel_l2", "cos", "norm_a", "norm_b"):
        c.check(close(got.get(k), want[k]), "%s: %s: got %r, numpy %r" % (what, k, got.get(k), want[k]))


def exact_ndiff(a, b):
    """How many numbers differ as numbers (Python compares int with float
    exactly; two NaNs are equal), and the largest |a - b|, exact then
    rounded to a double."""
    from fractions import Fraction
    nd, mx = 0, 0.0
    for x, y in zip(np.asarray(a).reshape(-1).tolist(), np.asarray(b).reshape(-1).tolist()):
        if x == y or (x != x and y != y):
            continue
        nd += 1
        mx = max(mx, float(abs(Fraction(x) - Fraction(y))))
    return nd, mx


def tensor_proto(name, dims, data_type, raw):
    """An ONNX TensorProto file: dims (1), data_type (2), name (8),
    raw_data (9)."""
    def varint(n):
        out = b""
        while True:
            b, n = n & 0x7F, n >> 7
            out += bytes([b | (0x80 if n else 0)])
            if not n:
                return out
    out = b"".join(b"\x08" + varint(d) for d in dims) + b"\x10" + varint(data_type)
    for field, data in ((8, name.encode()), (9, raw)):
        out += bytes([field << 3 | 2]) + varint(len(data)) + data
    return out


def pack4(values):
    """int4 values two a byte, the first in the low nibble (ONNX)."""
    v = [x & 15 for x in values] + [0] * (len(values) % 2)
    return bytes(v[i] | v[i + 1] << 4 for i in range(0, len(v), 2))


def check_integers(c, run, tmp):
    """Integers past 2^53 compared as integers (issue 34, defect 11): as
    doubles, 2^60 + 1 is 2^60 and the diff said `equal`, `ndiff 0`, exit 0."""
    i64 = np.array([2 ** 60, 5, -2 ** 62], np.int64)
    i64b = np.array([2 ** 60 + 1, 5, -2 ** 62 + 1], np.int64)
    u64 = np.array([2 ** 64 - 1, 7], np.uint64)
    u64b = np.array([2 ** 64 - 2, 7], np.uint64)
    big = np.array([2 ** 62, 3, 2 ** 53 + 1], np.int64)
    a = {"i64": i64, "u64": u64, "as_u64": big, "as_f64": np.array([2 ** 60, -8], np.int64),
         "near_f64": np.array([2 ** 60 + 1, 3], np.int64), "minus1": np.array([-1], np.int64),
         "as_i32": np.array([1, -2, 3], np.int64), "half": np.array([1, 2], np.int64)}
    b = {"i64": i64b, "u64": u64b, "as_u64": big.astype(np.uint64),
         "as_f64": np.array([2.0 ** 60, -8.0]), "near_f64": np.array([2.0 ** 60, 3.0]),
         "minus1": np.array([2 ** 64 - 1], np.uint64), "as_i32": np.array([1, -2, 3], np.int32),
         "half": np.array([1.0, 2.5])}
    want = {"i64": "changed", "u64": "changed", "as_u64": "equal", "as_f64": "equal",
            "near_f64": "changed", "minus1": "changed", "as_i32": "equal", "half": "changed"}
    pa, pb = os.path.join(tmp, "ia.safetensors"), os.path.join(tmp, "ib.safetensors")
    write_st(pa, a)
    write_st(pb, b)
    rc, out, err = run("--diff", "--json", pa, pb)
    c.equal(rc, 1, "integers: exit 1 (%s)" % err.strip())
    got = by_name(json.loads(out)) if out else {}
    for name, st in want.items():
        t = got.get(name, [{}])[0]
        nd, mx = exact_ndiff(a[name], b[name])
        c.equal((t.get("status"), t.get("ndiff"), t.get("max_abs")), (st, nd, mx),
                "integers: %s (%s against %s): status, ndiff, max_abs"
                % (name, a[name].dtype, b[name].dtype))
    # Packed int4 (ONNX) against the same numbers as int8, then one changed.
    q = [-8, 7, 0, -1, 3]
    pq = os.path.join(tmp, "q.pb")
    with open(pq, "wb") as f:
        f.write(tensor_proto("q", [5], 22, pack4(q)))
    for other, st, nd in ((q, "equal", 0), (q[:3] + [1] + q[4:], "changed", 1)):
        ps = os.path.join(tmp, "q8.safetensors")
        write_st(ps, {"q": np.array(other, np.int8)})
        rc, out, err = run("--diff", "--json", pq, ps)
        t = by_name(json.loads(out)).get("q", [{}])[0] if out else {}
        c.equal((rc, t.get("status"), t.get("ndiff")), (0 if nd == 0 else 1, st, nd),
                "packed int4 %r against int8 %r (%s)" % (q, other, err.strip()))
    # The defect as reported: int64 alone, two values one apart.
    pc, pd = os.path.join(tmp, "ic.safetensors"), os.path.join(tmp, "id.safetensors")
    write_st(pc, {"x": i64})
    write_st(pd, {"x": i64b})
    rc, out, err = run("--diff", pc, pd)
    c.equal((rc, out.splitlines()[0].split()[0] if out else None), (1, "changed"),
            "int64 [2^60, 5, -2^62] against two values one apart: changed, exit 1")
    c.check("ndiff=2/3" in out, "int64: ndiff=2/3 in %r" % out)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = argv[1]
    ls = os.path.join(build, "modelfs-ls")
    c = mfstest.Checker("test_diff")
    tmp = tempfile.mkdtemp(prefix="mfs-diff-")
    logs = os.path.join(tmp, "logs")
    os.mkdir(logs)
    env = mfstest.sanitizer_env(logs)
    run = Run(ls, env)
    try:
        rng = np.random.default_rng(21)
        # ---- two safetensors models, differing in known ways ---------
        w1 = rng.standard_normal((64, 48)).astype(np.float32)
        w1b = w1.copy()
        w1b[17, 5] += np.float32(0.25)                       # one element
        w2 = rng.standard_normal(100).astype(np.float32)      # identical
        w3 = rng.standard_normal((3, 5)).astype(np.float32)
        w3b = (w3 + rng.standard_normal((3, 5)).astype(np.float32) * 0.01).astype(np.float32)
        halfable = (rng.integers(-2048, 2048, 7) / 8).astype(np.float32)  # exact in float16
        big = rng.standard_normal(1_500_000).astype(np.float32)  # several pieces
        bigb = big.copy()
        bigb[1_400_003] = np.float32(7.0)                     # past an equal prefix
        nans = rng.standard_normal(40).astype(np.float32)
        nans[[3, 9]] = np.nan
        nans[12] = np.inf
        nansb = nans.copy()
        nansb[20] += 1                                        # NaNs at the same places
        nansb[30] = np.nan                                    # a NaN against a number
        zeros = np.zeros(6, np.float32)
        negz = np.zeros(6, np.float32)
        negz[2] = -0.0                                        # -0 = 0: equal values
        ints = np.arange(12, dtype=np.int32).reshape(3, 4)
        intsb = ints.copy()
        intsb[2, 3] = -5
        a_st = {"w1": w1, "w2": w2, "w3": w3, "old.name": w2[:10].copy(),
                "reshaped": np.arange(24, dtype=np.float32).reshape(4, 6), "as_half": halfable,
                "as_double": w3, "big": big, "nans": nans, "zeros": zeros, "ints": ints}
        b_st = {"w1": w1b, "w2": w2, "w3": w3b, "new.name": w2[:10].copy(),
                "reshaped": np.arange(24, dtype=np.float32).reshape(6, 4),
                "as_half": halfable.astype(np.float16), "as_double": w3.astype(np.float64),
                "big": bigb, "nans": nansb, "zeros": negz, "ints": intsb}
        pa, pb = os.path.join(tmp, "a.safetensors"), os.path.join(tmp, "b.safetensors")
        write_st(pa, a_st)
        write_st(pb, b_st)

        rc, out, err = run("--diff", "--json", pa, pb)
        c.equal(rc, 1, "--diff --json a b: exit (%s)" % err.strip())
        doc = json.loads(out)
        got = by_name(doc)
        want_status = {"w1": "changed", "w2": "identical", "w3": "changed", "old.name": "only_a",
                       "new.name": "only_b", "reshaped": "shape", "as_half": "equal",
                       "as_double": "equal", "big": "changed", "nans": "changed", "zeros": "equal",
                       "ints": "changed"}
        for name, st in want_status.items():
            c.equal([t["status"] for t in got.get(name, [])], [st], "status of %s" % name)
        for name in ("w1", "w3", "big", "nans", "ints", "as_half", "as_double", "zeros"):
            if name in got:
                check_figures(c, got[name][0], expected(a_st[name], b_st[name]), name)
        t = got.get("reshaped", [{}])[0]
        c.equal((t.get("a") or {}).get("shape"), [4, 6], "reshaped: a's shape")
        c.equal((t.get("b") or {}).get("shape"), [6, 4], "reshaped: b's shape")
        c.equal(got.get("as_half", [{}])[0].get("b", {}).get("dtype"), "float16", "as_half: b dtype")
        c.equal([t["name"] for t in doc["tensors"]][-1], "new.name", "only_b comes last")
        c.equal(doc["summary"], {"tensors": 12, "identical": 1, "equal": 3, "changed": 5,
                                 "shape": 1, "only_a": 1, "only_b": 1, "error": 0, "exit": 1},
                "summary")
        c.equal(got["w1"][0].get("ndiff"), 1, "w1: one element differs")

        # Read range by range (MODELFS_SOURCE=read: as a fetching source
        # gives them), the same document.
        renv = dict(env, MODELFS_SOURCE="read")
        r = subprocess.run([ls, "--diff", "--json", pa, pb], capture_output=True, env=renv,
                           timeout=600)
        c.equal((r.returncode, json.loads(r.stdout) if r.stdout else None), (1, doc),
                "MODELFS_SOURCE=read: the same exit and document")

        # B over HTTP (ranged GETs from a loopback server): the same tensors.
        srv = rangeserver.start(tmp)
        try:
            r = subprocess.run([ls, "--diff", "--json", "--cache-dir", os.path.join(tmp, "cache"), pa,
                                srv.url + "/b.safetensors"], capture_output=True, env=env, timeout=600)
        finally:
            srv.stop()
        rdoc = json.loads(r.stdout) if r.stdout else {}
        c.equal((r.returncode, rdoc.get("tensors"), rdoc.get("summary")),
                (1, doc["tensors"], doc["summary"]), "B over http: the same exit and tensors")

        # The text form: a line each, in A's order then B's, and the summary.
        rc, out, err = run("--diff", pa, pb)
        c.equal(rc, 1, "--diff a b: exit")
        lines = out.splitlines()
        c.equal([ln.split()[0] for ln in lines[:-1]],
                [want_status[n] for n in a_st] + ["only_b"], "text: the status column")
        c.equal([ln.split()[1] for ln in lines[:-1]], list(a_st) + ["new.name"], "text: names")
        c.check(lines and lines[-1] == "summary: 12 tensors: 1 identical, 3 equal, 5 changed, "
                "1 shape, 1 only_a, 1 only_b, 0 error (A 11 tensors, B 11)",
                "text: summary line %r" % (lines[-1] if lines else None))
        w1line = [ln for ln in lines if ln.split()[1:2] == ["w1"]]
        f = expected(w1, w1b)
        c.check(w1line and w1line[0] == "changed    w1  float32[64,48]  max_abs=%.6g mean_abs=%.6g "
                "rel_l2=%.6g cos=%.6g ndiff=1/3072" % (f["max_abs"], f["mean_abs"], f["rel_l2"], f["cos"]),
                "text: w1's line %r" % (w1line[:1]))
        c.check(any(ln == "equal      as_half  float32[7] -> float16[7]" for ln in lines),
                "text: as_half's line")
        c.check(any(ln == "shape      reshaped  float32[4,6] -> float32[6,4]" for ln in lines),
                "text: reshaped's line")

        # ---- exit 0: the same model; the same numbers in other dtypes --
        rc, out, err = run("--diff", pa, pa)
        c.equal(rc, 0, "--diff a a: exit")
        c.check(all(ln.startswith("identical ") for ln in out.splitlines()[:-1]), "a a: all identical")
        same = {k: v for k, v in a_st.items()}
        same["as_half"] = halfable.astype(np.float16)
        same["as_double"] = w3.astype(np.float64)
        ps = os.path.join(tmp, "same.safetensors")
        write_st(ps, same)
        rc, out, err = run("--diff", "--json", pa, ps)
        c.equal(rc, 0, "--diff a (a, two tensors in other dtypes): exit 0")
        c.equal(json.loads(out)["summary"]["equal"], 2, "two equal")

        # ---- GGUF: q8_0 against float32, across formats; duplicates ---
        x = rng.standard_normal((4, 256)).astype(np.float32)
        raw, deq = q8_0(x)
        dup1 = rng.standard_normal(8).astype(np.float32)
        dup2 = rng.standard_normal(8).astype(np.float32)
        opaque = rng.integers(0, 256, 8 * 36, dtype=np.uint8).tobytes()   # q8_1: no numbers here
        opaque2 = bytes([opaque[0] ^ 1]) + opaque[1:]
        T = gen_gguf.Tensor
        ga = gen_gguf.write(tmp, "a.gguf", [], [
            gen_gguf.plain("blk.0.w", x), gen_gguf.plain("dup", dup1), gen_gguf.plain("dup", dup2),
            T("opaque", 9, [256], opaque), T("opaque2", 9, [256], opaque),
            gen_gguf.plain("f16", halfable.astype(np.float16))])
        gb = gen_gguf.write(tmp, "b.gguf", [], [
            T("blk.0.w", 8, [256, 4], raw), gen_gguf.plain("dup", dup1 * 2),
            gen_gguf.plain("dup", dup2), T("opaque", 9, [256], opaque),
            T("opaque2", 9, [256], opaque2), gen_gguf.plain("f16", halfable)])
        rc, out, err = run("--diff", "--json", ga, gb)
        c.equal(rc, 1, "gguf a b: exit (%s)" % err.strip())
        doc = json.loads(out)
        got = by_name(doc)
        q = got.get("blk.0.w", [{}])[0]
        c.equal(q.get("status"), "changed", "q8_0 against float32: changed")
        c.equal((q.get("b") or {}).get("dtype"), "q8_0", "q8_0's dtype")
        check_figures(c, q, expected(x, deq), "q8_0 against float32")
        c.equal([t["status"] for t in got.get("dup", [])], ["changed", "identical"],
                "duplicate names pair in order")
        if len(got.get("dup", [])) == 2:
            check_figures(c, got["dup"][0], expected(dup1, dup1 * 2), "dup (first)")
        c.equal([t["status"] for t in got.get("opaque", [])], ["identical"], "q8_1, same bytes")
        o2 = got.get("opaque2", [{}])[0]
        c.check(o2.get("status") == "changed" and "max_abs" not in o2,
                "q8_1, other bytes: changed, no figures (%r)" % o2)
        c.equal([t["status"] for t in got.get("f16", [])], ["equal"], "float16 -> float32: equal")

        # Across formats: safetensors float32 against GGUF q8_0 (names match).
        px = os.path.join(tmp, "x.safetensors")
        write_st(px, {"blk.0.w": x, "opaque": np.zeros(4, np.float32)})
        rc, out, err = run("--diff", "--json", px, gb)
        doc = json.loads(out) if out else {"tensors": []}
        got = by_name(doc)
        c.equal(rc, 1, "safetensors against gguf: exit")
        if "blk.0.w" in got:
            check_figures(c, got["blk.0.w"][0], expected(x, deq), "safetensors f32 against gguf q8_0")
        c.equal([t["status"] for t in got.get("opaque", [])], ["shape"],
                "float32 against q8_1 (no numbers): shape")

        check_integers(c, run, tmp)

        # ---- exit 2: trouble; bad command lines ------------------------
        missing = os.path.join(tmp, "missing.safetensors")
        rc, out, err = run("--diff", pa, missing)
        c.equal(rc, 2, "--diff a missing: exit 2")
        c.check("missing.safetensors" in err, "the missing model is named: %r" % err)
        notmodel = os.path.join(tmp, "notes.txt")
        with open(notmodel, "w") as fh:
            fh.write("not a model\n")
        rc, out, err = run("--diff", notmodel, pa)
        c.equal(rc, 2, "--diff not-a-model a: exit 2")
        rc, out, err = run("--diff", pa)
        c.equal(rc, 2, "--diff with one model: exit 2")
        rc, out, err = run("--diff", pa, pb, pa)
        c.equal(rc, 2, "--diff with three models: exit 2")
        rc, out, err = run("--json", pa)
        c.equal(rc, 2, "--json without --diff: exit 2")
        rc, out, err = run("--diff", "--sha256", pa, pb)
        c.equal(rc, 2, "--diff --sha256: exit 2")
        rc, out, err = run("--help")
        c.check(rc == 0 and "--diff" in out and "--json" in out and "NaN" in out,
                "--help tells of --diff, --json and NaNs")

        # ---- memory: a few pieces, not the model -----------------------
        if mfstest.sanitized(build):
            c.skip("resident set under the sanitizers (measured in the normal build)")
        elif not os.path.exists("/usr/bin/time"):
            c.skip("resident set: no /usr/bin/time")
        else:
            n = 48 << 20  # 192 MB of float32 a side
            vt = tempfile.mkdtemp(prefix="mfs-diff-", dir="/var/tmp")
            try:
                # The same tensor name (the file's) in two folders.
                for sub, odd in (("a", False), ("b", True)):
                    os.mkdir(os.path.join(vt, sub))
                    m = np.lib.format.open_memmap(os.path.join(vt, sub, "m.npy"), "w+", np.float32,
                                                  (n,))
                    m[:] = 1.0
                    if odd:
                        m[n // 2] = 2.0
                    m.flush()
                    del m
                # Measured by /usr/bin/time: a child of this (large) process
                # would count its parent's pages at exec in its ru_maxrss.
                rss_file = os.path.join(vt, "rss")
                p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file, ls, "--diff",
                                    os.path.join(vt, "a", "m.npy"), os.path.join(vt, "b", "m.npy")],
                                   capture_output=True, env=env, timeout=600)
                out_b, err_b = p.stdout, p.stderr
                with open(rss_file) as fh:
                    rss_kb = int(fh.read().split()[-1])
                c.equal(p.returncode, 1, "192 MB a side: exit 1 (%s)" % err_b.decode(errors="replace"))
                c.check(b"ndiff=1/50331648" in out_b, "192 MB a side: one element differs: %r" % out_b)
                c.check(rss_kb < 64 * 1024, "192 MB a side: peak RSS %d KiB (< 64 MiB)" % rss_kb)
            finally:
                shutil.rmtree(vt, ignore_errors=True)
        mfstest.check_sanitizer_reports(c, logs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
