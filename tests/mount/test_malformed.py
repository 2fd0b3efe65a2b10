#!/usr/bin/python3
"""Truncated and byte-flipped models through the real programs: modelfs-ls
must give 0 (a correct tree) or the corrupt/unrecognised code and one line
naming the file; a mount must either refuse the same way or serve every
file; no sanitizer report, crash or hang. (tests/fuzz replays far more
mutations in-process; this checks the programs and the daemon.)

All the variants of one model go through one `modelfs-ls --check VARIANT...`
(the code `modelfs-ls VARIANT` would exit with, per variant, and the same
one-line message); up to MOUNTS of them are then mounted together
(`modelfs V1 V2 ... MNT`: each loads in the running daemon, as a model of
a folder mount does) and every file read; a variant modelfs-ls refuses
must be a folder holding only ERROR, which names it, and one it accepts
must serve every file. A few such mounts run at a time.

usage: test_malformed.py BUILD_DIR DIR...
"""
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mfstest  # noqa: E402

CUTS, FLIPS, MOUNTS = 40, 40, 6
OK_CODES = (0, 4, 5)
PARALLEL_MOUNTS = 4


def variants(data, rnd):
    n = len(data)
    cuts = sorted(set([0, 1, 3, 4, 7, 8, 31, 32, 33, n - 1, n - 4] +
                      [rnd.randrange(n) for _ in range(CUTS)]))
    for cut in cuts:
        if 0 <= cut < n:
            yield "cut%d" % cut, data[:cut]
    for i in range(FLIPS):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 6)):
            at = rnd.randrange(min(n, 64) if rnd.random() < 0.5 else n)
            b[at] ^= rnd.randint(1, 255)
        yield "flip%d" % i, bytes(b)


def read_all(root):
    for d, _, files in os.walk(root):
        for f in files:
            # Unbuffered, as mfstest.read_bytes, but not held whole.
            with open(os.path.join(d, f), "rb", buffering=0) as fh:
                while fh.read(1 << 20):
                    pass


def check_batch(c, modelfs_ls, paths, env):
    """{path: modelfs-ls code} for the variants, from one --check run."""
    try:
        r = subprocess.run([modelfs_ls, "--check"] + paths, capture_output=True, env=env,
                           timeout=600)
    except subprocess.TimeoutExpired:
        c.check(False, "%s...: modelfs-ls --check hung" % paths[0])
        return {}
    codes = {}
    for line in r.stdout.decode(errors="replace").splitlines():
        code, _, path = line.partition("  ")
        codes[path] = int(code)
    missing = [p for p in paths if p not in codes]
    if not c.check(not missing and r.returncode >= 0,
                   "modelfs-ls --check ended (exit %d) before %s" % (r.returncode, missing[:1])):
        return codes
    errs = r.stderr.decode(errors="replace").splitlines()
    refused = [p for p in paths if codes[p] != 0]
    c.equal(len(errs), len(refused), "%s...: one stderr line per refused variant" % paths[0])
    # Lines per path: those starting "modelfs-ls: PATH: ", found at each
    # ": " of a line rather than by testing every path against every line.
    prefixes = {"modelfs-ls: %s: " % p: p for p in paths}
    lines_of = dict.fromkeys(paths, 0)
    for e in errs:
        i = e.find(": ")
        while i >= 0:
            p = prefixes.get(e[:i + 2])
            if p is not None:
                lines_of[p] += 1
            i = e.find(": ", i + 2)
    for p in paths:
        c.check(codes[p] in OK_CODES, "%s: modelfs-ls exit %d" % (p, codes[p]))
        if codes[p] != 0:
            c.equal(lines_of[p], 1, "%s: one line naming the file" % p)
    return codes


def check_mount(modelfs, batch, env):
    """[(path, None if the mount agrees with modelfs-ls's code, else what
    went wrong)] for the variants of one model, mounted together."""
    paths = [p for p, _ in batch]
    if len(paths) == 1:
        # Alone, it is a one-model mount: it mounts exactly when
        # modelfs-ls accepts it.
        path, code = batch[0]
        try:
            with mfstest.mounted(modelfs, path, env) as mnt:
                read_all(mnt)
            return [(path, None if code == 0 else "%s: mounted but modelfs-ls refused it" % path)]
        except RuntimeError as e:
            return [(path, None if code != 0 else
                     "%s: mount refused but modelfs-ls accepted: %s" % (path, e))]
    try:
        ctx = mfstest.mounted(modelfs, paths[0], env, extra=tuple(paths[1:]))
        mnt = ctx.__enter__()
    except RuntimeError as e:
        return [(p, "%s...: the mount of %d variants failed: %s" % (p, len(paths), e))
                for p in paths[:1]]
    out = []
    try:
        for path, code in batch:
            d = os.path.join(mnt, os.path.basename(path))
            try:
                names = sorted(os.listdir(d))
                if code != 0:
                    with open(os.path.join(d, "ERROR")) as f:
                        text = f.read()
                    ok = names == ["ERROR"] and path in text
                    out.append((path, None if ok else "%s: modelfs-ls refused it (exit %d) but its "
                                "folder holds %s, ERROR %r" % (path, code, names[:5], text[:200])))
                else:
                    bad = "ERROR" in names
                    read_all(d)
                    out.append((path, "%s: modelfs-ls accepted it, the mount has ERROR" % path
                                if bad else None))
            except OSError as e:
                out.append((path, "%s (exit %d of modelfs-ls): %s" % (path, code, e)))
    finally:
        ctx.__exit__(None, None, None)
    return out


def main(argv):
    build = argv[1]
    modelfs, modelfs_ls = os.path.join(build, "modelfs"), os.path.join(build, "modelfs-ls")
    c = mfstest.Checker("malformed tests")
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    env = mfstest.sanitizer_env(logdir)
    work = mfstest.scratch("modelfs-bad-")
    can_mount = mfstest.can_mount()
    if not can_mount:
        c.skip("no /dev/fuse: the mount half of this test")
    to_mount, nmodels = [], 0
    for d in argv[2:]:
        if not os.path.isdir(d):
            c.skip("%s is absent" % d)
            continue
        for f in sorted(os.listdir(d)):
            p = os.path.join(d, f)
            if f.endswith(".json") or not os.path.isfile(p) or os.path.getsize(p) > (1 << 20):
                continue
            data = open(os.path.join(d, f), "rb").read()
            nmodels += 1
            paths = []
            for tag, blob in variants(data, random.Random(f)):
                # Numbered: two DIRs may hold files of one name.
                path = os.path.join(work, "%d-%s.%s" % (nmodels, f, tag))
                with open(path, "wb") as fh:
                    fh.write(blob)
                paths.append(path)
            codes = check_batch(c, modelfs_ls, paths, env)
            # Which to mount: up to MOUNTS in order, every accepted one and a
            # fifth of the refused ones.
            pick = random.Random(f + "/mounts")
            chosen = [p for p in paths if p in codes and (codes[p] == 0 or pick.random() < 0.2)]
            if chosen:
                to_mount.append([(p, codes[p]) for p in chosen[:MOUNTS]])
            for p in set(paths) - set(chosen[:MOUNTS]):
                os.unlink(p)
    if can_mount:
        with concurrent.futures.ThreadPoolExecutor(PARALLEL_MOUNTS) as pool:
            for results in pool.map(lambda b: check_mount(modelfs, b, env), to_mount):
                for path, bad in results:
                    c.check(bad is None, bad or path)
    mfstest.check_sanitizer_reports(c, logdir)
    shutil.rmtree(work, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
