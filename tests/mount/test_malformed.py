#!/usr/bin/python3
"""Truncated and byte-flipped models through the real programs: modelfs-ls
must exit 0 (a correct tree) or with the corrupt/unrecognised code and one
line naming the file; a mount must either refuse the same way or serve every
file; no sanitizer report, crash or hang. (tests/fuzz replays far more
mutations in-process; this checks the programs and the daemon.)

usage: test_malformed.py BUILD_DIR DIR...
"""
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
            with open(os.path.join(d, f), "rb") as fh:
                while fh.read(1 << 20):
                    pass


def main(argv):
    build = argv[1]
    modelfs, modelfs_ls = os.path.join(build, "modelfs"), os.path.join(build, "modelfs-ls")
    c = mfstest.Checker("malformed tests")
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    env = mfstest.sanitizer_env(logdir)
    work = tempfile.mkdtemp(prefix="modelfs-bad-")
    can_mount = mfstest.can_mount()
    if not can_mount:
        c.skip("no /dev/fuse: the mount half of this test")
    for d in argv[2:]:
        if not os.path.isdir(d):
            c.skip("%s is absent" % d)
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith((".json", ".onnx")) or os.path.getsize(os.path.join(d, f)) > (1 << 20):
                continue
            data = open(os.path.join(d, f), "rb").read()
            rnd = random.Random(f)
            mounts = 0
            for tag, blob in variants(data, rnd):
                path = os.path.join(work, "%s.%s" % (f, tag))
                with open(path, "wb") as fh:
                    fh.write(blob)
                try:
                    r = subprocess.run([modelfs_ls, path], capture_output=True, env=env, timeout=60)
                except subprocess.TimeoutExpired:
                    c.check(False, "%s: modelfs-ls hung" % path)
                    continue
                err = r.stderr.decode(errors="replace").strip()
                c.check(r.returncode in OK_CODES, "%s: modelfs-ls exit %d: %s" % (path, r.returncode, err))
                if r.returncode != 0:
                    c.check(err.count("\n") == 0 and path in err, "%s: one line naming the file: %r" % (path, err))
                if can_mount and mounts < MOUNTS and (r.returncode == 0 or rnd.random() < 0.2):
                    mounts += 1
                    try:
                        with mfstest.mounted(modelfs, path, env) as mnt:
                            read_all(mnt)
                        c.check(r.returncode == 0, "%s: mounted but modelfs-ls refused it" % path)
                    except RuntimeError as e:
                        c.check(r.returncode != 0, "%s: mount refused but modelfs-ls accepted: %s" % (path, e))
                os.unlink(path)
    for rep in mfstest.sanitizer_reports(logdir):
        c.check(False, "sanitizer report:\n" + rep)
    shutil.rmtree(work, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
