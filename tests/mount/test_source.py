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
 - a model cut short while mounted in read mode gives EIO, not bytes;
 - what a load reads (MODELFS_SOURCE_LOG): for models of six formats with
   two 8 MiB tensors made here, a load (probes of every format included)
   reads at most 2 MiB and no range as large as a tensor.

usage: test_source.py BUILD_DIR DIR...
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mfstest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
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
    for i, chunk in mfstest.path_chunks(files):
        c.equal(run(ls, ["--sha256", d] + chunk, READ), run(ls, ["--sha256", d] + chunk),
                "%s: sha256 of files %d..%d (read vs mapped)" % (d, i, i + len(chunk) - 1))
    sample = files[::max(1, len(files) // 6)]
    got, want = run(ls, ["-x", d] + sample, READ), run(ls, ["-x", d] + sample)
    c.check(want[1].count(b"\n# ") + want[1].startswith(b"# ") == len(sample) or len(sample) < 2,
            "%s: modelfs-ls -x gives one block per path" % d)
    c.equal(got, want, "%s: xattrs of %d files (read vs mapped)" % (d, len(sample)))


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


BIG = 8 << 20   # bytes of each of two tensors in the models made here
LOAD_MAX = 2 << 20   # what a load (probes included) may read of them


def big_models(tmp):
    """Models of several formats holding two 8 MiB tensors each, made with
    the project's own writers: (name, path)."""
    import numpy as np
    import gen_gguf
    import gen_ptd
    import gen_pytorch
    a = np.arange(BIG // 4, dtype=np.float32)
    b = (a * 2).astype(np.float32)
    out = []
    hdr = json.dumps({"a": {"dtype": "F32", "shape": [a.size], "data_offsets": [0, BIG]},
                      "b": {"dtype": "F32", "shape": [b.size], "data_offsets": [BIG, 2 * BIG]}})
    hdr = hdr.encode() + b" " * (-len(hdr) % 8)
    with open(os.path.join(tmp, "big.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr + a.tobytes() + b.tobytes())
    out.append(("safetensors", os.path.join(tmp, "big.safetensors")))
    np.save(os.path.join(tmp, "big.npy"), np.stack([a, b]))
    out.append(("npy", os.path.join(tmp, "big.npy")))
    np.savez(os.path.join(tmp, "big.npz"), a=a, b=b)
    out.append(("npz", os.path.join(tmp, "big.npz")))
    gen_gguf.write(tmp, "big.gguf", [], [gen_gguf.plain("a", a), gen_gguf.plain("b", b)])
    out.append(("gguf", os.path.join(tmp, "big.gguf")))
    gen_ptd.simple(tmp, "big.ptd", [gen_ptd.tensor("a", a), gen_ptd.tensor("b", b)])
    out.append(("ptd", os.path.join(tmp, "big.ptd")))
    sa, sb = gen_pytorch.Storage("0", a), gen_pytorch.Storage("1", b)
    gen_pytorch.write_model(tmp, "big.pt", {"a": gen_pytorch.Tensor(sa, 0, a.shape, (1,)),
                                            "b": gen_pytorch.Tensor(sb, 0, b.shape, (1,))}, [sa, sb])
    out.append(("pytorch", os.path.join(tmp, "big.pt")))
    return out


def load_reads(c, ls, name, model):
    """A load in read mode reads headers, not the tensors: at most LOAD_MAX
    bytes in all, and no range holding a whole tensor."""
    with tempfile.NamedTemporaryFile(prefix="modelfs-reads-") as log:
        env = dict(READ, MODELFS_SOURCE_LOG=log.name)
        r = subprocess.run([ls, "--check", model], capture_output=True, env=env, timeout=120)
        gets = [tuple(int(x) for x in line.split()[1:]) for line in open(log.name)]
    size = os.path.getsize(model)
    total = sum(n for _, n in gets)
    c.check(r.returncode == 0 and size > 2 * BIG, "%s: loads (exit %d)" % (name, r.returncode))
    c.check(0 < total <= LOAD_MAX, "%s: a load read %d bytes in %d gets of a %d-byte file"
            % (name, total, len(gets), size))
    c.check(all(n < BIG for _, n in gets), "%s: no get holds a whole tensor: %r" % (name, gets))


def cut_while_mounted(c, build, model):
    """A model cut short while mounted in read mode: a tensor past the cut
    and SHA256SUMS give EIO (never bytes of the shorter file), and the
    daemon still answers."""
    import errno
    with mfstest.mounted(os.path.join(build, "modelfs"), model, env=READ) as mnt:
        os.truncate(model, os.path.getsize(model) - BIG)
        for p in ("tensors/b", "SHA256SUMS"):
            try:
                with open(os.path.join(mnt, p), "rb") as f:
                    f.read()
                c.check(False, "cut model: %s read whole" % p)
            except OSError as e:
                c.equal(e.errno, errno.EIO, "cut model: %s" % p)
        c.check("model.json" in os.listdir(mnt), "cut model: the daemon still answers")


def main():
    build, dirs = sys.argv[1], [d for d in sys.argv[2:]]
    c = mfstest.Checker("mount.source")
    mfstest.mounts_on_one_cpu()  # reads one file at a time: see there
    ls = os.path.join(build, "modelfs-ls")
    present = []
    for d in dirs:
        if os.path.isdir(d):
            present.append(d)
        else:
            c.skip("%s is absent: its models are not checked" % d)
    for d in present:
        same_models(c, ls, d)
    tmp = tempfile.mkdtemp(prefix="modelfs-source-")
    try:
        models = big_models(tmp)
        for name, model in models:
            load_reads(c, ls, name, model)
        if mfstest.can_mount():
            cut_while_mounted(c, build, dict(models)["safetensors"])
    finally:
        subprocess.run(["rm", "-rf", tmp])
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
