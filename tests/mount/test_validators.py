#!/usr/bin/python3
"""What a remote mount pins of each kind of validator a server sends
(issue 34, defects 2-4), over rangeserver.py's validator modes:

 - strong ETag, weak ETag (W/"..."), Last-Modified alone: a file replaced
   on the server after the mount (same size, every byte changed) reads
   EIO, and nothing read before the EIO is of the new version (a tensor
   read whole after the replacement: read-ahead fetches while it reads);
   a replacement in the middle of a read (1 MiB read, then replaced),
   the same; the requests after the first carry If-Match (strong) or
   If-Unmodified-Since (weak, Last-Modified); 8 readers at once after the
   replacement (readers waiting on blocks another fetch brings): none
   gets a byte of the new version, in any of 4 tries;
 - Apache's weak-then-strong ETag: a file mounted in its first second
   (W/"x") and read after 1.5 s ("x"): the same version, every byte;
 - neither: one warning at mount naming the URL and what cannot be
   detected.

usage: test_validators.py BUILD_DIR
"""
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mfstest  # noqa: E402
import rangeserver  # noqa: E402

SIZE = 8 << 20   # the tensor: many blocks past the first (fetched at mount)
FLIP = bytes(255 - i for i in range(256))   # x -> x ^ 0xff: every byte changed


def model_bytes(data):
    """A safetensors file of one uint8 tensor `t` holding `data`."""
    tmp = tempfile.mktemp(suffix=".safetensors")
    mfstest.write_safetensors(tmp, {"t": data})
    with open(tmp, "rb") as f:
        out = f.read()
    os.unlink(tmp)
    return out


def read_until_error(path, first=None, then=None):
    """The bytes read from `path` in reads of 128 KiB (cat's) and the errno that ended
    them (0 at the end of the file); `then()` is called once `first`
    bytes were read."""
    got = bytearray()
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            if then is not None and first is not None and len(got) >= first:
                then()
                then = None
            try:
                b = os.read(fd, 128 << 10)
            except OSError as e:
                return bytes(got), e.errno
            if not b:
                return bytes(got), 0
            got += b
    finally:
        os.close(fd)


def fresh_env(env, tmp):
    """Its own disk cache: blocks kept by another check are not this one's."""
    return dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="cache-", dir=tmp))


def check_replaced(c, modelfs, srv, root, tmp, env, mode, mid_read):
    """A file replaced after the mount (mid_read: after 1 MiB of the tensor
    was read), same size: EIO, and only old bytes before it."""
    name = "%s%s.safetensors" % (mode or "strong", "-mid" if mid_read else "")
    path = os.path.join(root, name)
    old_t = os.urandom(SIZE)
    old = model_bytes(old_t)
    new = model_bytes(old_t.translate(FLIP))
    t0 = int(time.time()) - 100
    rangeserver.replace(path, old, t0)
    url = srv.url + ("/fault/%s/" % mode if mode else "/") + name
    what = "%s%s" % (mode or "strong", ", replaced mid-read" if mid_read else ", replaced")
    # Small blocks in memory when mid-read: read-ahead would have the old
    # version's blocks before the replacement.
    run_env = fresh_env(env, tmp)
    if mid_read:
        run_env["MODELFS_HTTP_BUDGET"] = str(1 << 20)
    before = len(srv.log)
    with mfstest.mounted(modelfs, url, run_env) as mnt:
        def swap():
            rangeserver.replace(path, new, t0 + 5)
        if not mid_read:
            swap()
        got, err = read_until_error(os.path.join(mnt, "tensors", "t"),
                                    1 << 20 if mid_read else None, swap if mid_read else None)
        c.equal(err, errno.EIO, "%s: the read ends with EIO (read %d bytes)" % (what, len(got)))
        c.check(got == old_t[:len(got)],
                "%s: only bytes of the old version before the EIO (%d read, first new at %s)"
                % (what, len(got), next((i for i in range(len(got)) if got[i] != old_t[i]), None)))
        again, err2 = mfstest.read_or_errno(os.path.join(mnt, "tensors", "t"))
        c.equal((again is None or again == old_t, err2 if again is None else errno.EIO),
                (True, errno.EIO), "%s: a later read is EIO too (or old bytes)" % what)
        c.check(os.path.exists(os.path.join(mnt, "model.json")), "%s: the daemon answers" % what)
    log = [r for r in srv.log[before:] if r[1].split("?", 1)[0].endswith("/" + name)]
    later = log[1:]
    if mode is None:
        c.check(later and all(r[3] for r in later), "%s: If-Match on every GET after the first"
                % what)
    else:
        c.check(later and all(r[5] and not r[3] for r in later),
                "%s: If-Unmodified-Since (no If-Match) on every GET after the first: %r"
                % (what, [(r[3], r[5]) for r in later][:3]))


def check_readers(c, modelfs, srv, root, tmp, env, mode, tries=4):
    """8 readers of a 16 MiB tensor at once, 4 MiB apart, after the file
    was replaced: each read gives the old bytes or EIO, never new ones."""
    size = 16 << 20
    mixed = []
    for i in range(tries):
        name = "readers-%s-%d.safetensors" % (mode or "strong", i)
        path = os.path.join(root, name)
        old_t = os.urandom(size)
        rangeserver.replace(path, model_bytes(old_t), time.time() - 100)
        url = srv.url + ("/fault/%s/" % mode if mode else "/") + name
        with mfstest.mounted(modelfs, url, fresh_env(env, tmp)) as mnt:
            rangeserver.replace(path, model_bytes(old_t.translate(FLIP)),
                                time.time() - 50)
            fd = os.open(os.path.join(mnt, "tensors", "t"), os.O_RDONLY)

            def reader(off):
                while off < size:
                    try:
                        b = os.pread(fd, 128 << 10, off)
                    except OSError:
                        return
                    if b != old_t[off:off + len(b)]:
                        mixed.append((i, off))
                        return
                    off += len(b)
            threads = [threading.Thread(target=reader, args=(k * (2 << 20) + (128 << 10),))
                       for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            os.close(fd)
    c.equal(mixed, [], "%s, 8 readers after a replacement: (try, offset) of reads that gave "
            "new bytes" % (mode or "strong"))


def check_weak_then_strong(c, modelfs, srv, root, tmp, env):
    """Apache: W/"x" in the file's first second, "x" afterwards: the same
    version (RFC 9110 weak comparison), so a fresh file mounted keeps
    reading."""
    path = os.path.join(root, "apache.safetensors")
    data = os.urandom(SIZE)
    rangeserver.replace(path, model_bytes(data))   # its time: now
    url = srv.url + "/fault/apache/apache.safetensors"
    before = len(srv.log)
    with mfstest.mounted(modelfs, url, fresh_env(env, tmp)) as mnt:
        time.sleep(1.5)
        got, err = read_until_error(os.path.join(mnt, "tensors", "t"))
        c.equal((err, len(got)), (0, SIZE), "weak then strong ETag: read whole after 1.5 s")
        c.check(got == data, "weak then strong ETag: the file's bytes")
    log = [r for r in srv.log[before:] if r[1].startswith("/fault/apache/")]
    c.check(len(log) > 1, "weak then strong ETag: reads after the mount were fetched (%d GETs)"
            % len(log))


def check_size_only(c, modelfs, srv, root, tmp, env):
    """Neither ETag nor Last-Modified: one warning at mount, naming the
    URL and what cannot be detected; the model mounts and reads."""
    path = os.path.join(root, "none.safetensors")
    data = os.urandom(1 << 20)
    rangeserver.replace(path, model_bytes(data))
    url = srv.url + "/fault/none/none.safetensors"
    with mfstest.mounted_with_log(modelfs, url, fresh_env(env, tmp)) as (mnt, log):
        lines = [ln for ln in log.splitlines() if ln.strip()]
        c.check(len(lines) == 1 and url in lines[0] and "cannot be detected" in lines[0],
                "size only: one warning naming the URL and what cannot be detected: %r" % log)
        c.equal(mfstest.read_or_errno(os.path.join(mnt, "tensors", "t"))[0], data,
                "size only: reads")
    # A server with validators: no warning.
    path = os.path.join(root, "quiet.safetensors")
    rangeserver.replace(path, model_bytes(data), int(time.time()) - 100)
    for mode in ("lastmod", "weak", None):
        url = srv.url + ("/fault/%s/" % mode if mode else "/") + "quiet.safetensors"
        with mfstest.mounted_with_log(modelfs, url, fresh_env(env, tmp)) as (mnt, log):
            c.equal(log.strip(), "", "%s: no warning at mount" % (mode or "strong"))


def run(c, t):
    modelfs, env = t.modelfs, t.env
    tmp = tempfile.mkdtemp(prefix="modelfs-validators-")
    root = os.path.join(tmp, "srv")
    os.mkdir(root)
    srv = rangeserver.start(root)
    try:
        for mode in (None, "weak", "lastmod"):
            for mid in (False, True):
                check_replaced(c, modelfs, srv, root, tmp, env, mode, mid)
            check_readers(c, modelfs, srv, root, tmp, env, mode)
        check_weak_then_strong(c, modelfs, srv, root, tmp, env)
        check_size_only(c, modelfs, srv, root, tmp, env)
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("test_validators", run, __doc__))
