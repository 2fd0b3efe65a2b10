#!/usr/bin/python3
"""SHA256SUMS and user.modelfs.sha256 (issue 9, item 2). For every model:
SHA256SUMS has one line per tensor file (tensors/, and subgraphs' own
tensors/ folders), in tree order, in
`sha256sum -c` format (GNU escapes for a backslash); its size (`stat`, as
`ls -l` shows it) is the sum of those lines; each line's hash is the
sha256 of the file's bytes and equals the file's xattr. When every tensor
reads, `sha256sum -c SHA256SUMS` in the mount passes and the bytes equal
`modelfs-ls MODEL SHA256SUMS`; when some cannot (a tampered carton
member), a read covering its line fails with EIO and the other lines read
fine. And `head -n 1 SHA256SUMS` of a 100,000-tensor model returns quickly.

usage: test_sha256sums.py BUILD_DIR [--only=PART,...] MODEL_DIR...
PART: models (every model of the MODEL_DIRs), head, truncated; default all
(ctest runs them as separate cases, in parallel).
"""
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import mfstest  # noqa: E402

XATTR = "user.modelfs.sha256"


def tensor_files(mnt):
    """Every tensor file (model.json's entries that are files: not a nested
    tensor's folder), in tree order: depth first, bytewise by name."""
    with open(os.path.join(mnt, "model.json")) as f:
        doc = json.load(f)
    paths = [t["path"] for t in doc["tensors"]
             if not os.path.isdir(os.path.join(mnt, t["path"]))]
    return sorted(paths, key=lambda p: [os.fsencode(x) for x in p.split("/")])


def line_for(path, digest):
    """The GNU sha256sum line (text mode) for `path`."""
    p = os.fsencode(path)
    if b"\\" in p or b"\n" in p:
        return b"\\" + digest.encode() + b"  " + p.replace(b"\\", b"\\\\").replace(b"\n", b"\\n") + b"\n"
    return digest.encode() + b"  " + p + b"\n"


def digests_of_lines(data, files, widths):
    """{path: hex digest} from SHA256SUMS bytes, one line of widths[i]
    bytes per file in order (the digest is what a line starts with, after
    its escape mark); None when the lines do not have that shape."""
    out, off = {}, 0
    for p, n in zip(files, widths):
        line = data[off:off + n]
        off += n
        hexd = line[1:65] if line.startswith(b"\\") else line[:64]
        if len(hexd) != 64 or hexd.strip(b"0123456789abcdef"):
            return None
        out[p] = hexd.decode()
    return out if off == len(data) else None


def check_model(c, build, model, env):
    name = os.path.relpath(model)
    ctx, mnt = mfstest.mount_model(build, model, env)
    if ctx is None:
        return  # a model that does not mount (the generic checks of mount.NAME check those)
    try:
        if mfstest.is_collection(mnt):
            return  # a folder of models (mount.multi checks those)
        sums = os.path.join(mnt, "SHA256SUMS")
        files = tensor_files(mnt)
        if not files:
            # sha256sum -c refuses a file with no lines, whatever it is:
            # a model with no tensors has none.
            c.check(not os.path.exists(sums), name + ": no tensors, no SHA256SUMS")
            return
        # Line lengths do not depend on the hashes.
        widths = [len(line_for(p, "0" * 64)) for p in files]
        c.equal(os.stat(sums).st_size, sum(widths), name + ": SHA256SUMS size")
        # When GNU `sha256sum -c` passes, every line's hash is that of its
        # file's bytes read through the mount, so the digests are taken
        # from the lines, and the lines must be exactly line_for(path,
        # digest) of every tensor file in tree order. Only when it fails
        # (a file that cannot be produced) is each file read here to say
        # which: one pass over the files, not two.
        r = subprocess.run(["sha256sum", "-c", "--quiet", "--strict", "SHA256SUMS"], cwd=mnt,
                           capture_output=True)
        digests = data = None
        if r.returncode == 0:
            data = mfstest.read_bytes(sums)
            digests = digests_of_lines(data, files, widths)
            c.check(digests is not None, name + ": SHA256SUMS lines parse")
        if digests is None:
            digests = {}
            for p in files:
                try:
                    digests[p] = hashlib.sha256(mfstest.read_bytes(os.path.join(mnt, p))).hexdigest()
                except OSError:
                    digests[p] = None  # cannot be produced or checked
        lines = [line_for(p, digests[p] or "0" * 64) for p in files]
        bad = [p for p in files if digests[p] is None]
        if not bad:
            if data is None:
                data = mfstest.read_bytes(sums)
            c.equal(data, b"".join(lines), name + ": SHA256SUMS lines")
            c.check(r.returncode == 0, "%s: sha256sum -c: %s" % (name, r.stdout + r.stderr))
            ls = subprocess.run([os.path.join(build, "modelfs-ls"), *mfstest.links_args(model),
                                 model, "SHA256SUMS"], capture_output=True, env=env)
            c.check(ls.returncode == 0 and ls.stdout == data,
                    "%s: modelfs-ls SHA256SUMS equals the mount's (exit %d)" % (name, ls.returncode))
        else:
            try:
                mfstest.read_bytes(sums)
                c.check(False, name + ": a whole read of SHA256SUMS must fail")
            except OSError as e:
                c.equal(e.errno, errno.EIO, name + ": whole read errno")
        off = 0
        # Each line read at its offset, from one open of the file.
        sums_fd = os.open(sums, os.O_RDONLY)
        for p, line in zip(files, lines):
            what = "%s: %s" % (name, p)
            full = os.path.join(mnt, p)
            if digests[p] is None:
                try:
                    os.pread(sums_fd, len(line), off)
                    c.check(False, what + ": its line must fail")
                except OSError as e:
                    c.equal(e.errno, errno.EIO, what + ": its line's errno")
                try:
                    os.getxattr(full, XATTR)
                    c.check(False, what + ": its xattr must fail")
                except OSError as e:
                    c.equal(e.errno, errno.EIO, what + ": its xattr's errno")
            else:
                c.equal(os.pread(sums_fd, len(line), off), line, what + ": its line")
                c.equal(os.getxattr(full, XATTR).decode(), digests[p], what + ": xattr")
                c.check(XATTR in os.listxattr(full), what + ": listxattr")
            off += len(line)
        os.close(sums_fd)
        if os.path.basename(model).startswith("names"):
            c.check(any(x.startswith(b"\\") and b"\\\\back" in x for x in lines),
                    name + ": a backslash name is escaped")
        if os.path.basename(model) == "gen_tampered.carton":
            c.check(bad and len(bad) < len(files), name + ": some lines fail, others verify")
    finally:
        ctx.__exit__(None, None, None)


def check_head(c, build, env):
    """head -n 1 of a 100,000-tensor model's SHA256SUMS."""
    n = 100000
    tmp = tempfile.mkdtemp(prefix="modelfs-sums-", dir="/var/tmp")
    try:
        # A safetensors file (a 100,000-tensor RTen took Python 15 s to
        # build); SHA256SUMS is the same code for every format.
        header = {"layer%05d/weight" % i: {"dtype": "F32", "shape": [4],
                                           "data_offsets": [16 * i, 16 * i + 16]}
                  for i in range(n)}
        hb = json.dumps(header, separators=(",", ":")).encode()
        hb += b" " * (-len(hb) % 8)
        with open(os.path.join(tmp, "huge.safetensors"), "wb") as f:
            f.write(len(hb).to_bytes(8, "little") + hb)
            f.write(b"".join(i.to_bytes(16, "little") for i in range(n)))
        with mfstest.mounted(os.path.join(build, "modelfs"), os.path.join(tmp, "huge.safetensors"),
                             env=env) as mnt:
            t0 = time.monotonic()
            st = os.stat(os.path.join(mnt, "SHA256SUMS"))
            r = subprocess.run(["head", "-n", "1", "SHA256SUMS"], cwd=mnt, capture_output=True)
            dt = time.monotonic() - t0
            print("head -n 1 SHA256SUMS of %d tensors (%d bytes): %.3f s" % (n, st.st_size, dt),
                  flush=True)
            c.check(r.returncode == 0 and r.stdout.endswith(b"  tensors/layer00000%2Fweight\n"),
                    "head -n 1: %r" % r.stdout[:200])
            c.check(dt < 1.0, "head -n 1 took %.3f s" % dt)
            c.equal(r.stdout[:64].decode(), hashlib.sha256(
                mfstest.read_bytes(os.path.join(mnt, "tensors", "layer00000%2Fweight"))).hexdigest(),
                "head -n 1: the hash")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sha_errno(mnt, tensor):
    """The errno of reading tensors/TENSOR's user.modelfs.sha256; 0 if it reads."""
    try:
        os.getxattr(os.path.join(mnt, "tensors", tensor), "user.modelfs.sha256")
        return 0
    except OSError as e:
        return e.errno


def check_truncated(c, build, env):
    """The model file cut short while mounted: SHA256SUMS lines and the
    sha256 xattr not made yet read as EIO (never a hash of other bytes, never
    a crash); the mount still answers."""
    import gen_rten
    tmp = tempfile.mkdtemp(prefix="modelfs-sums-", dir="/var/tmp")
    try:
        model = os.path.join(tmp, "cut.rten")
        gen_rten.write_model(tmp, "cut.rten", gen_rten.many_graph(2000))
        with mfstest.mounted(os.path.join(build, "modelfs"), model, env=env) as mnt:
            c.equal(len(os.getxattr(os.path.join(mnt, "tensors", "layer00000%2Fweight"),
                                    "user.modelfs.sha256")), 64, "cut model: a digest before the cut")
            os.truncate(model, os.path.getsize(model) // 2)
            got, err = mfstest.read_or_errno(os.path.join(mnt, "SHA256SUMS"))
            c.equal(err, errno.EIO, "cut model: reading SHA256SUMS")
            c.equal(sha_errno(mnt, "layer01999%2Fweight"), errno.EIO, "cut model: the xattr of a tensor past the cut")
            c.equal(sha_errno(mnt, "layer00000%2Fweight"), errno.EIO, "cut model: the digest made before the cut")
            c.check("model.json" in os.listdir(mnt), "cut model: the mount still answers")
        # Edited in place, size and mtime kept: the kept digests are not
        # served either (the tensor's own reads give EIO too).
        gen_rten.write_model(tmp, "cut.rten", gen_rten.many_graph(2000))
        with mfstest.mounted(os.path.join(build, "modelfs"), model, env=env) as mnt:
            got, err = mfstest.read_or_errno(os.path.join(mnt, "SHA256SUMS"))
            c.check(err == 0 and len(got) > 0, "edited model: SHA256SUMS before the edit")
            st = os.stat(model)
            with open(model, "r+b") as f:
                f.seek(st.st_size - 1)
                last = f.read(1)
                f.seek(st.st_size - 1)
                f.write(bytes([last[0] ^ 1]))
            os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns))
            got, err = mfstest.read_or_errno(os.path.join(mnt, "SHA256SUMS"))
            c.equal(err, errno.EIO, "edited model: SHA256SUMS after the edit")
            c.equal(sha_errno(mnt, "layer00000%2Fweight"), errno.EIO, "edited model: a kept digest")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(c, t):
    build, dirs, env = t.build, t.args, t.env
    parts = {"models", "head", "truncated"}
    if dirs and dirs[0].startswith("--only="):
        parts = set(dirs.pop(0)[len("--only="):].split(","))
    c.name = "sha256sums tests (%s)" % ",".join(sorted(parts))
    if "models" in parts:
        for model in mfstest.model_files(c, dirs):
            check_model(c, build, model, env)
    if "head" in parts:
        check_head(c, build, env)
    if "truncated" in parts:
        check_truncated(c, build, env)


if __name__ == "__main__":
    sys.exit(mfstest.main("sha256sums tests", run, __doc__, one_cpu=True))
