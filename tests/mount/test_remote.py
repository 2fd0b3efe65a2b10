#!/usr/bin/python3
"""Remote models over HTTP (issue 20), from a range server on 127.0.0.1
started here (rangeserver.py):

 - every single-file model of the given folders, a folder's models at
   once (`modelfs-ls URL... --`, as several models mount): the same exit
   code per model as its file (--check), the same tree (models.json
   aside: it names each source), and the same sha256, size and xattrs of
   every file (ONNX external data: the files beside the model's URL);
 - one model per format mounted from its URL for real: every file read
   through FUSE has the bytes of the local file's mount, every xattr the
   same value; the mount's GETs all ask for identity encoding, carry
   If-Match after the first, and read headers, not tensors (the bytes
   fetched at mount stay small beside the file);
 - refusals at mount, exit 3 and one line naming the URL: a server that
   answers a range with 200, a wrong Content-Range, 404, a body cut short,
   an ETag of 400 bytes, nothing listening;
 - a URL with user:password@ refused by both programs (exit 2), the
   password in no message;
 - a 503 (Retry-After: 0) and a 429 (Retry-After: 1, waited) are retried
   and the model mounts; a body that goes on past its range is refused;
 - a model whose ETag changes after the mount: its reads give EIO, never
   bytes of the other version, and the daemon stays up;
 - a server that stops sending, or drips a byte at a time: the read fails
   with EIO after the stall timeout; SIGTERM to a daemon waiting on a
   stalled one ends it within 10 s;
 - 14 readers waiting on a stalled server hold up neither `ls -lR`, nor
   another model's reads, nor reads of bytes in memory;
 - a cache of 4 blocks under 8 readers at once: the right bytes;
 - an ONNX of 16 MiB with its tensors inside: the mount fetches a fraction
   of it (its structure, not its raw_data), the same tree and bytes;
 - read-ahead: `cat` of a 40 MiB tensor (12 under ASan) takes far fewer GETs than blocks,
   16 tensors read in file order are fetched ahead past each one,
   and fetches no more than the tensor; random 4 KiB reads a block each;
   GETs cut at 60% keep their whole blocks and ask only the rest again;
 - https with a CA made here (trusted through CURL_CA_BUNDLE, refused
   without), no redirect from https to http, redirect loops refused;
 - the first model of each folder through Debian's nginx too, and a model
   replaced there after the mount reads EIO (nginx's 412);
 - -o cache_dir: a warm mount asks one HEAD and nothing else, -o offline
   nothing at all, a block damaged on disk is fetched again, -o cache_max
   is never exceeded, a folder others may write to is refused;
 - modelfs-ls at a terminal (script(1)) shows a progress line.

usage: test_remote.py BUILD_DIR [--part=PART] DIR...

PART runs one part (ctest runs them side by side: most of the mount parts
wait on servers): models (every model of DIR..., modelfs-ls and nginx),
mount (one model per format mounted, the refusals and retries, a changed
model), stalls (stalled and dripping servers, SIGTERM while a read waits),
nostall (the readers a stalled server holds, and what still answers) or
reads (the cache, read-ahead, ONNX skeleton, TLS, cache_dir). Without it,
every part.
"""
import errno
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mfstest  # noqa: E402
import rangeserver  # noqa: E402
import webservers  # noqa: E402


def is_model_file(path):
    return (os.path.isfile(path) and not path.endswith((".json", ".links")) and
            not os.path.basename(path).startswith("."))


def listing(ls, model, env):
    r = subprocess.run([ls, model], capture_output=True, env=env, timeout=120)
    return r.returncode, r.stdout


def run_ls(ls, args, env):
    r = subprocess.run([ls] + args, capture_output=True, env=env, timeout=600)
    return r.returncode, r.stdout.decode("utf-8", "surrogateescape"), \
        r.stderr.decode("utf-8", "replace")


def check_same_models(c, ls, pairs, env):
    """The models of one folder, local files and their URLs, each side in
    one modelfs-ls run per step (as `modelfs A B MNT` loads them): the
    same exit code per model (--check), the same tree, and the same
    sha256, size and xattrs of every file of every model that loads."""
    files, urls = [p for p, _ in pairs], [u for _, u in pairs]
    where = os.path.relpath(os.path.dirname(files[0]))
    _, codes_l, _ = run_ls(ls, ["--check"] + files, env)
    _, codes_r, err_r = run_ls(ls, ["--check"] + urls, env)
    cl = [int(line.split("  ", 1)[0]) for line in codes_l.splitlines()]
    cr = [int(line.split("  ", 1)[0]) for line in codes_r.splitlines()]
    if not c.equal(len(cr), len(files), "%s: --check of every URL: %s" % (where, err_r[-300:])):
        return
    keep = []
    for (p, u), a, b in zip(pairs, cl, cr):
        c.equal(b, a, "%s: exit code, remote vs local" % os.path.relpath(p))
        if a == 0:
            keep.append((p, u))
    if not keep:
        return
    # models.json names each model's source (the URL or the file): left out.
    def tree(args):
        _, out, err = run_ls(ls, args + ["--"], env)
        return [line for line in out.splitlines() if not line.endswith(" models.json")], err
    tree_l, _ = tree([p for p, _ in keep])
    tree_r, err = tree([u for _, u in keep])
    differ = sorted(set(tree_l) ^ set(tree_r))
    c.check(not differ, "%s: tree of its models, remote vs local, differ in %d lines: %s (%s)"
            % (where, len(differ), differ[:4], err[-300:]))
    paths = [line.split(None, 2)[2] for line in tree_l if line.startswith("f ")]
    for _, chunk in mfstest.path_chunks(paths):
        want, want_code, _ = mfstest.ls_sums_args(ls, [p for p, _ in keep] + ["--"], chunk, env)
        got, code, err = mfstest.ls_sums_args(ls, [u for _, u in keep] + ["--"], chunk, env)
        c.equal(code, want_code, "%s: modelfs-ls --sha256 of the URLs: %s" % (where, err[-300:]))
        differ = sorted(p for p in set(got) | set(want) if got.get(p) != want.get(p))
        c.check(not differ, "%s: sha256 and size, remote vs local, differ for %d files: %s"
                % (where, len(differ), differ[:5]))
        # And every node's xattrs (modelfs-ls -x: "# PATH", then its xattrs).
        _, xl, _ = run_ls(ls, ["-x"] + [p for p, _ in keep] + ["--"] + chunk, env)
        _, xr, err = run_ls(ls, ["-x"] + [u for _, u in keep] + ["--"] + chunk, env)
        c.check(xl == xr and xl.count("\n# ") + 1 >= len(chunk),
                "%s: xattrs of %d files, remote vs local (%s)" % (where, len(chunk), err[-300:]))


def xattrs(path):
    try:
        return {k: os.getxattr(path, k) for k in sorted(os.listxattr(path))}
    except OSError as e:
        return "errno %d" % e.errno


def log_of(srv, before, url):
    """The server's log since `before`, of requests for `url`'s path only:
    a daemon of an earlier check may still be fetching ahead for a moment
    after its unmount."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
    return [r for r in srv.log[before:]
            if urllib.parse.unquote(r[1].split("?", 1)[0]) == path]


def check_mounted(c, build, url, path, srv, env):
    """The URL mounted for real against the file mounted for real."""
    name = os.path.relpath(path)
    modelfs = os.path.join(build, "modelfs")
    before = len(srv.log)
    try:
        with mfstest.mounted(modelfs, url, env) as rmnt, mfstest.mounted(modelfs, path, env) as lmnt:
            mount_log = log_of(srv, before, url)
            fetched = mfstest.range_bytes(mount_log)
            size = os.path.getsize(path)
            c.check(fetched <= max(size // 4, 1 << 20) or size <= (1 << 20),
                    "%s: the mount fetched %d bytes of %d" % (name, fetched, size))
            tree_l = mfstest.walk_tree(lmnt)
            c.equal(mfstest.walk_tree(rmnt), tree_l, "%s: tree, remote vs local mount" % name)
            for p, size in sorted(tree_l.items()):
                rp, lp = os.path.join(rmnt, p), os.path.join(lmnt, p)
                c.equal(xattrs(rp), xattrs(lp), "%s: %s xattrs" % (name, p))
                if size is None:
                    continue
                c.equal(mfstest.read_or_errno(rp), mfstest.read_or_errno(lp), "%s: %s bytes" % (name, p))
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (name, e))
        return
    log = log_of(srv, before, url)
    c.check(all(r[4] == "identity" for r in log), "%s: every GET asks for identity encoding" % name)
    c.check(all(r[3] for r in log[1:] if r[1] == log[0][1]),
            "%s: every GET after the first carries If-Match" % name)


def refused(c, build, url, want, env):
    """modelfs URL MNT exits 3 with one line naming the URL and `want`."""
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    try:
        r = subprocess.run([os.path.join(build, "modelfs"), url, mnt], capture_output=True,
                           text=True, env=env, timeout=120)
        c.equal(r.returncode, 3, "%s: exit code (%s)" % (url, r.stderr.strip()))
        lines = r.stderr.strip().splitlines()
        c.check(len(lines) == 1 and url in lines[0] and want in lines[0],
                "%s: one line naming it and %r: %r" % (url, want, r.stderr))
    finally:
        if os.path.ismount(mnt):
            mfstest.unmount(mnt)
        os.rmdir(mnt)


def check_userinfo(c, build, srv, good, root, env):
    """A URL with a user and password: both programs refuse it (exit 2),
    and the password appears in no message."""
    url = srv.url.replace("http://", "http://someone:s3cret@") + "/" + os.path.relpath(good, root)
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    try:
        for args in ([os.path.join(build, "modelfs"), url, mnt],
                     [os.path.join(build, "modelfs-ls"), url],
                     [os.path.join(build, "modelfs-ls"), "--check", url]):
            r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
            what = "%s with user:password@" % os.path.basename(args[0])
            c.equal(r.returncode, 2, what + ": exit code (%s)" % r.stderr.strip())
            c.check("s3cret" not in r.stderr + r.stdout, what + ": the password in a message")
    finally:
        if os.path.ismount(mnt):
            mfstest.unmount(mnt)
        os.rmdir(mnt)


PARTS = ("models", "mount", "stalls", "nostall", "reads")


def main(argv):
    build, dirs = argv[1], argv[2:]
    parts = mfstest.take_part(dirs, PARTS)
    c = mfstest.Checker("remote tests (%s)" % ", ".join(p for p in PARTS if p in parts))
    if parts == {"models"}:
        # modelfs-ls against this process's range server and nginx, one
        # request at a time; the other parts time stalls and side-by-side reads.
        mfstest.stay_on_one_cpu()
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    env = mfstest.sanitizer_env(logdir)
    # The default cache_dir, here and not in the user's ~/.cache.
    caches = tempfile.mkdtemp(prefix="modelfs-caches-")
    env["XDG_CACHE_HOME"] = caches
    ls = os.path.join(build, "modelfs-ls")
    # Served from a copy (the changed-model case edits files there). The
    # stalls and reads parts write their own models.
    root = mfstest.scratch("modelfs-remote-")
    models = []
    for d in dirs if parts & {"models", "mount"} else ():
        if not os.path.isdir(d):
            c.skip("%s is absent: its models are not checked" % d)
            continue
        sub = os.path.join(root, "%d-%s" % (len(models), os.path.basename(d)))
        os.mkdir(sub)
        for f in sorted(os.listdir(d)):
            p = os.path.join(d, f)
            if os.path.isdir(p):
                shutil.copytree(p, os.path.join(sub, f), symlinks=True,  # external data
                                ignore=lambda d, names: [n for n in names if not (
                                    os.path.isfile(os.path.join(d, n)) or
                                    os.path.isdir(os.path.join(d, n)))])
            elif os.path.isfile(p):
                shutil.copy(p, sub)
                if is_model_file(p):
                    models.append(os.path.join(sub, f))
    srv = rangeserver.start(root)
    try:
        def url_of(p, fault=None):
            rel = os.path.relpath(p, root)
            return srv.url + ("/fault/%s/" % fault if fault else "/") + rel
        if "models" in parts:
            by_dir = {}
            for p in models:
                by_dir.setdefault(os.path.dirname(p), []).append((p, url_of(p)))
            for d in sorted(by_dir):
                check_same_models(c, ls, by_dir[d], env)
            check_nginx(c, build, root, by_dir, env)
        if not mfstest.can_mount():
            if parts - {"models"}:
                c.skip("no /dev/fuse: the mount parts of this test")
        elif "mount" in parts:
            check_mount_part(c, build, ls, srv, root, models, url_of, env)
        if mfstest.can_mount() and "stalls" in parts:
            check_stalls(c, build, srv, root, env)
        if mfstest.can_mount() and "nostall" in parts:
            check_no_stall(c, build, srv, root, env)
        if mfstest.can_mount() and "reads" in parts:
            check_cache(c, build, srv, root, env)
            check_readahead(c, build, srv, root, env)
            if not mfstest.sanitized(build):   # the fuzz replays load skeletons under ASan
                check_onnx_skeleton(c, build, srv, root, url_of, env)
            good = os.path.join(root, "tls.safetensors")
            mfstest.write_safetensors(good, {"t": os.urandom(3 << 20)})
            check_tls(c, build, srv, root, good, env)
            check_disk_cache(c, build, srv, root, env)
    finally:
        srv.stop()
    mfstest.check_sanitizer_reports(c, logdir)
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(caches, ignore_errors=True)
    return c.finish()


def check_mount_part(c, build, ls, srv, root, models, url_of, env):
    """One model per format mounted from its URL; the refusals at mount;
    retried 503 and 429; a model changed on the server."""
    # One model per format: the first modelfs-ls accepts.
    seen = set()
    for p in models:
        r = subprocess.run([ls, p, "model.json"], capture_output=True, env=env)
        fmt = json.loads(r.stdout)["format"] if r.returncode == 0 else None
        if fmt and fmt not in seen:
            seen.add(fmt)
            check_mounted(c, build, url_of(p), p, srv, env)
    c.check(len(seen) >= 5, "mounted one model of each of %s" % sorted(seen))
    good = next(p for p in models if p.endswith(".safetensors") and
                listing(ls, p, env)[0] == 0)
    refused(c, build, url_of(good, "norange"), "does not serve byte ranges", env)
    refused(c, build, url_of(good, "badrange"), "Content-Range", env)
    refused(c, build, url_of(good, "status404"), "HTTP 404", env)
    refused(c, build, url_of(good, "longetag"), "ETag is longer", env)
    check_userinfo(c, build, srv, good, root, env)
    refused(c, build, url_of(good, "short"), url_of(good, "short"), env)
    refused(c, build, "http://127.0.0.1:%d/x.safetensors" % mfstest.free_port(),
            "http://127.0.0.1", env)
    # Retried: a 503 with Retry-After: 0 for each first ask.
    code, out = listing(ls, url_of(good, "503once"), env)
    c.equal((code, out), listing(ls, good, env), "503 then 206: retried, the same listing")
    t0 = time.time()
    code, out = listing(ls, url_of(good, "429once"), env)
    c.equal((code, out), listing(ls, good, env), "429 then 206: retried, the same listing")
    c.check(time.time() - t0 >= 1, "429 with Retry-After: 1: waited it out")
    refused(c, build, url_of(good, "endless"), "sent more than", env)
    check_changed(c, build, srv, models, url_of, env)


def check_changed(c, build, srv, models, url_of, env):
    """A model replaced on the server after the mount: reads of bytes not
    fetched yet fail with EIO (If-Match answered 412), none gives bytes of
    the new version, and the daemon answers on."""
    big = max((p for p in models if p.endswith(".safetensors")), key=os.path.getsize)
    with open(big, "rb") as f:
        old = f.read()
    # A cache of its own: the blocks the listings above kept are the old
    # version's, which a mount pinned to it may serve (and then no EIO).
    env = dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="modelfs-cache-",
                                                    dir=env["XDG_CACHE_HOME"]))
    with mfstest.mounted(os.path.join(build, "modelfs"), url_of(big), env) as mnt:
        tensors = sorted(os.listdir(os.path.join(mnt, "tensors")))
        # The new version: every byte after the header flipped.
        hlen = 8 + int.from_bytes(old[:8], "little")
        with open(big, "wb") as f:
            f.write(old[:hlen] + bytes(b ^ 0xff for b in old[hlen:]))
        os.utime(big, ns=(1, 1))
        bad = 0
        for t in tensors:
            got, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", t))
            if got is None:
                c.equal(err, errno.EIO, "changed model: %s errno" % t)
                bad += 1
            else:
                # Only bytes of the old version (cached before the change).
                c.check(hashlib.sha256(got).digest() in old_digests(old, hlen, t, mnt),
                        "changed model: %s read bytes of the new version" % t)
        c.check(bad > 0 or len(old) <= 256 << 10, "changed model: some read failed (%d)" % bad)
        c.check(os.path.exists(os.path.join(mnt, "model.json")), "changed model: the daemon answers")
    with open(big, "wb") as f:
        f.write(old)


def far_read_errno(mnt):
    """0, or the errno of 4 KiB read 1 MiB into tensors/far: past the
    first block (fetched at mount), so one GET."""
    fd = os.open(os.path.join(mnt, "tensors", "far"), os.O_RDONLY)
    try:
        os.pread(fd, 4096, 1 << 20)
        return 0
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


def check_stalls(c, build, srv, root, env):
    """A server that stops sending: a read fails (EIO) once no byte came
    for the stall timeout (MODELFS_HTTP_STALL=2 here); and SIGTERM to a
    daemon whose read waits on such a server ends it within 10 s."""
    path = os.path.join(root, "stall.safetensors")
    mfstest.write_safetensors(path, {"a": bytes(range(256)) * 4, "far": os.urandom(2 << 20)})
    url = srv.url + "/fault/stall/stall.safetensors"
    modelfs = os.path.join(build, "modelfs")
    fast = dict(env, MODELFS_HTTP_STALL="2")
    with mfstest.mounted(modelfs, url, fast) as mnt:
        t0 = time.time()
        err = far_read_errno(mnt)
        took = time.time() - t0
        c.equal(err, errno.EIO, "stalled server: the read fails with EIO")
        c.check(took < 15, "stalled server: the read failed after %.1f s (stall timeout 2 s)" % took)
        c.equal(mfstest.read_or_errno(os.path.join(mnt, "tensors", "a"))[0], bytes(range(256)) * 4,
                "stalled server: what was fetched at mount still reads")
    # A server that drips a byte every 0.2 s: under 1 KiB/s is a stall too.
    with mfstest.mounted(modelfs, srv.url + "/fault/slow/stall.safetensors", fast) as mnt:
        t0 = time.time()
        err = far_read_errno(mnt)
        c.equal(err, errno.EIO, "dripping server: the read fails with EIO")
        c.check(time.time() - t0 < 15, "dripping server: failed after %.1f s" % (time.time() - t0))
    # Another URL (the server stalls from a URL's second request on).
    ctx = mfstest.mounted(modelfs, url + "?again", env)
    mnt = ctx.__enter__()
    try:
        pid = mfstest.daemon_pid(mnt)
        before = len(srv.log)
        reader = threading.Thread(target=mfstest.read_or_errno,
                                  args=(os.path.join(mnt, "tensors", "far"),), daemon=True)
        reader.start()
        deadline = time.time() + 10
        while len(srv.log) == before and time.time() < deadline:
            time.sleep(0.05)
        c.check(len(srv.log) > before, "stalled server: the read asked for its bytes")
        os.kill(pid, signal.SIGTERM)
        t0 = time.time()
        c.check(mfstest.pid_gone(pid, 10), "SIGTERM during a stalled fetch: the daemon ends in 10 s")
        c.check(time.time() - t0 < 10, "SIGTERM: ended after %.1f s" % (time.time() - t0))
        reader.join(10)
    finally:
        ctx.__exit__(None, None, None)


def check_cache(c, build, srv, root, env):
    """A block cache of 4 blocks (MODELFS_HTTP_BUDGET=1 MiB) under 8
    readers of random ranges of a 3 MiB tensor at once: every range has
    the file's bytes (blocks dropped and fetched again, shared fetches),
    and a whole read after it too."""
    path = os.path.join(root, "cache.safetensors")
    data = os.urandom(3 << 20)
    mfstest.write_safetensors(path, {"t": data})
    hlen = os.path.getsize(path) - len(data)
    small = dict(env, MODELFS_HTTP_BUDGET=str(1 << 20))
    before = len(srv.log)
    # And 512K on disk: dropped blocks come back by GET, not all from disk.
    with mfstest.mounted(os.path.join(build, "modelfs"), srv.url + "/cache.safetensors",
                         small, extra=("-o", "cache_max=512K")) as mnt:
        t = os.path.join(mnt, "tensors", "t")
        bad = []

        def reader(seed):
            rnd = random.Random(seed)
            fd = os.open(t, os.O_RDONLY)
            try:
                for _ in range(60):
                    off = rnd.randrange(len(data))
                    n = rnd.choice([1, 4096, 65536, 300000])
                    if os.pread(fd, n, off) != data[off:off + n]:
                        bad.append((off, n))
            finally:
                os.close(fd)
        threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        c.equal(bad[:5], [], "small cache, 8 readers: ranges with other bytes")
        mfstest.evict(t)
        c.equal(mfstest.read_or_errno(t), (data, 0), "small cache: the whole tensor after")
    gets = [r for r in srv.log[before:] if r[2]]
    fetched = mfstest.range_bytes(gets)
    c.check(fetched > len(data) + hlen, "small cache: blocks were dropped and fetched again "
            "(%d bytes in %d GETs)" % (fetched, len(gets)))


def check_no_stall(c, build, srv, root, env):
    """A stalled server holds its own readers only: with 14 readers
    waiting on one model's stalled server (more than the session's 10
    threads, more than the kernel's 12 background reads by default),
    `ls -lR` of the mount, a read of another model and a read of the
    stalled model's bytes already in memory all answer at once."""
    a = os.path.join(root, "nostall-a.safetensors")
    b = os.path.join(root, "nostall-b.safetensors")
    bdata = os.urandom(1 << 20)
    mfstest.write_safetensors(a, {"t": os.urandom(8 << 20)})
    mfstest.write_safetensors(b, {"t": bdata})
    fast = dict(env, MODELFS_HTTP_STALL="4")
    mnt = mfstest.scratch("modelfs-mnt-")
    r = subprocess.run([os.path.join(build, "modelfs"),
                        srv.url + "/fault/stall/nostall-a.safetensors",
                        srv.url + "/nostall-b.safetensors", mnt], env=fast, capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        c.check(False, "no stall: mount: %s" % r.stderr.strip())
        os.rmdir(mnt)
        return
    try:
        ta = os.path.join(mnt, "nostall-a.safetensors", "tensors", "t")
        os.stat(ta)   # loads model a (its first block fetched at mount)

        def reader(i):
            fd = os.open(ta, os.O_RDONLY)
            try:
                os.pread(fd, 4096, (i + 1) * (512 << 10) + 100)
            except OSError:
                pass
            finally:
                os.close(fd)
        threads = [threading.Thread(target=reader, args=(i,)) for i in range(14)]
        for th in threads:
            th.start()
        time.sleep(1)
        t0 = time.time()
        subprocess.run(["ls", "-lR", mnt], stdout=subprocess.DEVNULL, timeout=60)
        c.check(time.time() - t0 < 2, "stalled server: ls -lR took %.1f s" % (time.time() - t0))
        t0 = time.time()
        got, _ = mfstest.read_or_errno(os.path.join(mnt, "nostall-b.safetensors", "tensors", "t"))
        took = time.time() - t0
        c.check(got == bdata and took < 2, "stalled server: another model read in %.1f s" % took)
        fd = os.open(ta, os.O_RDONLY)
        try:
            t0 = time.time()
            os.pread(fd, 100, 0)
            took = time.time() - t0
        finally:
            os.close(fd)
        c.check(took < 2, "stalled server: its bytes in memory read in %.1f s" % took)
        for th in threads:
            th.join(60)
    finally:
        mfstest.unmount_and_remove(mnt)


def check_readahead(c, build, srv, root, env):
    """A stream's reads fetch ahead: `cat` of a 40 MiB tensor (12 in the
    sanitizer build) on a fresh mount gets its bytes in far fewer GETs
    than its blocks (8 MiB ones, in parallel), fetching no more than the
    tensor (its other tensors untouched); 4 KiB preads at random offsets
    of another tensor fetch one block each, nothing ahead; GETs cut at 60%
    keep their whole blocks; tensors read one after another in file order
    are fetched ahead past each one's end."""
    path = os.path.join(root, "ahead.safetensors")

    def cat(mnt, name):
        return subprocess.run(["cat", os.path.join(mnt, "tensors", name)],
                              stdout=subprocess.PIPE, timeout=120).stdout

    def gets_since(before, url_path):
        # This model's GETs only: the server is every check's, and a
        # daemon unmounted lazily may still be fetching for its readers.
        return [r for r in srv.log[before:] if r[2] and r[1] == url_path]
    mib = 12 if mfstest.sanitized(build) else 40   # 12: still more than one 8 MiB GET ahead
    data, other = os.urandom(mib << 20), os.urandom(8 << 20)
    mfstest.write_safetensors(path, {"a": data, "b": other})
    fresh = dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="modelfs-cache-",
                                                      dir=env["XDG_CACHE_HOME"]))
    try:
        with mfstest.mounted(os.path.join(build, "modelfs"), srv.url + "/ahead.safetensors",
                             fresh) as mnt:
            before = len(srv.log)
            got = cat(mnt, "a")
            c.check(got == data, "read-ahead: cat has the tensor's bytes")
            gets = gets_since(before, "/ahead.safetensors")
            fetched = mfstest.range_bytes(gets)
            c.check(fetched >= len(data) - (1 << 20), "read-ahead: the tensor's GETs were seen "
                    "(%d bytes)" % fetched)
            # + 2: the first read starts no stream and fetches its own
            # bytes, the next one the rest of their block.
            c.check(len(gets) <= mib // 2 + 2, "read-ahead: %d MiB in %d GETs (%d blocks; %d "
                    "without read-ahead: 1 MiB FUSE reads): %s"
                    % (mib, len(gets), mib * 4, mib, [r[2] for r in gets]))
            c.check(fetched <= len(data) + (1 << 20),
                    "read-ahead: %d bytes fetched for a tensor of %d: %s"
                    % (fetched, len(data), [r[2] for r in gets]))
            before = len(srv.log)
            rnd = random.Random(5)
            fd = os.open(os.path.join(mnt, "tensors", "b"), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                bad = 0
                for _ in range(12):
                    off = rnd.randrange(len(other) - 4096) & ~4095
                    bad += os.pread(fd, 4096, off) != other[off:off + 4096]
            finally:
                os.close(fd)
            gets = gets_since(before, "/ahead.safetensors")
            c.equal(bad, 0, "random 4 KiB reads: the tensor's bytes")
            c.check(mfstest.range_bytes(gets) <= 12 * 4096,
                    "random 4 KiB reads: their own bytes (%d bytes in %d GETs)"
                    % (mfstest.range_bytes(gets), len(gets)))
            # The blocks they left held in part, then the whole tensor:
            # each block's other bytes fetched and joined to them.
            got = cat(mnt, "b")
            c.check(got == other, "blocks held in part, then cat: the tensor's bytes")
        # Again from the disk cache (blocks kept in part, and whole):
        # nothing fetched, the same bytes.
        with mfstest.mounted(os.path.join(build, "modelfs"), srv.url + "/ahead.safetensors",
                             fresh) as mnt:
            before = len(srv.log)
            got = cat(mnt, "b")
            c.check(got == other, "warm, blocks kept in part: the tensor's bytes")
            gets = gets_since(before, "/ahead.safetensors")
            c.check(mfstest.range_bytes(gets) <= 2 * (256 << 10),
                    "warm, blocks kept in part: the tensor's blocks from the disk (%s)"
                    % [r[2] for r in gets])
        # Tensor after tensor in file order: reading runs on, so the next
        # tensors are fetched ahead too, not each with its own first GET.
        many = os.path.join(root, "runson.safetensors")
        parts = {"t%02d" % i: os.urandom(1 << 20) for i in range(16)}
        mfstest.write_safetensors(many, parts)
        with mfstest.mounted(os.path.join(build, "modelfs"), srv.url + "/runson.safetensors",
                             fresh) as mnt:
            before = len(srv.log)
            names = sorted(parts)
            got = subprocess.run(["cat"] + [os.path.join(mnt, "tensors", n) for n in names],
                                 stdout=subprocess.PIPE, timeout=120).stdout
            c.check(got == b"".join(parts[n] for n in names),
                    "tensor after tensor: cat has their bytes")
            gets = gets_since(before, "/runson.safetensors")
            c.check(len(gets) > 0, "tensor after tensor: the GETs were seen")
            # 9 now: a read that starts no stream fetches its own bytes
            # only, so the first reads of a tensor (before the stream
            # shows it reads on, readahead.c RUN_ON_PROOF) are GETs of
            # their own; 4 when reads fetched whole blocks.
            c.check(len(gets) <= 10, "tensor after tensor: 16 tensors of 1 MiB in %d GETs "
                    "(16 without reading on past each tensor): %s"
                    % (len(gets), [r[2] for r in gets]))
        os.unlink(many)
        # Every GET over 1 MiB cut at 60% the first time: the blocks that
        # came whole are kept and only the rest is asked again.
        with mfstest.mounted(os.path.join(build, "modelfs"),
                             srv.url + "/fault/cutlong/ahead.safetensors", fresh,
                             extra=("-o", "cache_dir=" + tempfile.mkdtemp(
                                 dir=fresh["XDG_CACHE_HOME"]))) as mnt:
            before = len(srv.log)
            got = cat(mnt, "a")
            c.check(got == data, "GETs cut at 60%: cat has the tensor's bytes")
            gets = gets_since(before, "/fault/cutlong/ahead.safetensors")
            c.check(len(gets) > 1, "GETs cut at 60%%: the GETs were seen (%d)" % len(gets))
            ranges = [r[2] for r in gets]
            c.equal(len(set(ranges)), len(ranges),
                    "GETs cut at 60%: no range asked twice (a retry asks what is left)")
            c.check(mfstest.range_bytes(gets) <= len(data) * 18 // 10,
                    "GETs cut at 60%%: %d bytes asked for %d (2x if retries asked it all): %s"
                    % (mfstest.range_bytes(gets), len(data), ranges))
        # A lone read that begins inside a block, its GET cut at 60%: the
        # retry asks from the first block it did not get whole (the GET's
        # first part is the rest of a block, not a whole one).
        with mfstest.mounted(os.path.join(build, "modelfs"),
                             srv.url + "/fault/cutonce/ahead.safetensors", fresh,
                             extra=("-o", "cache_dir=" + tempfile.mkdtemp(
                                 dir=fresh["XDG_CACHE_HOME"]))) as mnt:
            before = len(srv.log)
            at, n = (3 << 20) + 200000, 128 << 10   # one FUSE read, across two blocks
            fd = os.open(os.path.join(mnt, "tensors", "a"), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                got = os.pread(fd, n, at)
            finally:
                os.close(fd)
            c.check(got == data[at:at + n], "a lone read cut at 60%: its bytes")
            ranges = [r[2] for r in gets_since(before, "/fault/cutonce/ahead.safetensors")]
            first, _, last = ranges[0][len("bytes="):].partition("-") if ranges else ("0", "", "0")
            rest = "bytes=%d-%s" % ((int(first) // (256 << 10) + 1) * (256 << 10), last)
            c.check(rest in ranges[1:],
                    "a lone read cut at 60%%: asked again from the block after its first "
                    "part (%s): %s" % (rest, ranges))
    finally:
        shutil.rmtree(fresh["XDG_CACHE_HOME"], ignore_errors=True)
        os.unlink(path)


def check_onnx_skeleton(c, build, srv, root, url_of, env):
    """An ONNX of 16 MiB with its tensors inside it: a remote mount walks
    its structure without the raw_data (onnx_skeleton.c), so it fetches a
    fraction of the file (check_mounted: at most a quarter), and its tree,
    every file's bytes and xattrs equal the local mount's. Initializers
    in the graph and in an If's branches, a Constant's tensor attribute,
    a sparse initializer, a string tensor and raw_data under 4 KiB
    (copied, not skipped). And a TensorProto file of 8 MiB (onnx-tensor)."""
    try:
        import numpy as np
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        c.skip("no python3-onnx: the ONNX skeleton case")
        return
    rng = np.random.default_rng(9)

    def arr(n):
        return rng.standard_normal(n).astype(np.float32)
    F = onnx.TensorProto.FLOAT
    then_g = helper.make_graph([helper.make_node("Identity", ["tw"], ["o1"])], "then", [],
                               [helper.make_tensor_value_info("o1", F, [1 << 19])],
                               [numpy_helper.from_array(arr(1 << 19), "tw")])
    const = numpy_helper.from_array(arr(1 << 19), "cv")
    else_g = helper.make_graph([helper.make_node("Constant", [], ["o2"], value=const)], "else",
                               [], [helper.make_tensor_value_info("o2", F, [1 << 19])])
    inits = [numpy_helper.from_array(arr(1 << 19), "w%d" % i) for i in range(5)]
    inits.append(numpy_helper.from_array(arr(10), "small"))
    inits.append(numpy_helper.from_array(np.array([True]), "cond"))
    inits.append(numpy_helper.from_array(np.array([b"a", b"bc"], dtype=object), "names"))
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(arr(3000), "sp"),
                                       numpy_helper.from_array(np.arange(0, 6000, 2,
                                                                         dtype=np.int64), "spi"),
                                       [6000])
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
        "skeleton", [], [helper.make_tensor_value_info("y", F, [1 << 19])], inits,
        sparse_initializer=[sparse])
    model = helper.make_model(graph, producer_name="modelfs-test", doc_string="d" * 5000)
    os.makedirs(os.path.join(root, "skeleton"), exist_ok=True)
    path = os.path.join(root, "skeleton", "embedded.onnx")
    onnx.save_model(model, path)
    check_mounted(c, build, url_of(path), path, srv, env)
    # One TensorProto as a file (onnx-tensor), 8 MiB: the same way.
    path = os.path.join(root, "skeleton", "tensor.pb")
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr(1 << 21), "t").SerializeToString())
    check_mounted(c, build, url_of(path), path, srv, env)


def check_tls(c, build, srv, root, good, env):
    """https with a CA made here: trusted through CURL_CA_BUNDLE (the same
    listing as the file), refused without it (exit 3, the certificate
    named); a redirect from https to http refused; a redirect loop ends."""
    ls = os.path.join(build, "modelfs-ls")
    tmp = tempfile.mkdtemp(prefix="modelfs-tls-")
    ca, cert, ckey = webservers.make_cert(tmp)
    tls = rangeserver.start(root, tls=(cert, ckey))
    try:
        rel = os.path.relpath(good, root)
        url = tls.url + "/" + rel
        trusted = dict(env, CURL_CA_BUNDLE=ca)
        c.equal(listing(ls, url, trusted), listing(ls, good, env), "https, CA trusted: the listing")
        r = subprocess.run([ls, url], capture_output=True, text=True, env=env, timeout=60)
        c.check(r.returncode == 3 and url in r.stderr and "certificate" in r.stderr.lower(),
                "https, CA not trusted: refused naming the certificate: %d %r"
                % (r.returncode, r.stderr))
        tls.redirect_base = srv.url
        r = subprocess.run([ls, tls.url + "/fault/redirect/" + rel], capture_output=True, text=True,
                           env=trusted, timeout=60)
        c.equal(r.returncode, 3, "https redirected to http: refused (%s)" % r.stderr.strip())
        srv.redirect_base = tls.url
        r = subprocess.run([ls, srv.url + "/fault/redirect/" + rel], capture_output=True,
                           text=True, env=trusted, timeout=60)
        c.equal(r.returncode, 0, "http redirected to https: followed (%s)" % r.stderr.strip())
        r = subprocess.run([ls, srv.url + "/fault/loop/" + rel], capture_output=True, text=True,
                           env=env, timeout=60)
        c.check(r.returncode == 3 and "redirect" in r.stderr.lower(),
                "a redirect loop: refused (%d %r)" % (r.returncode, r.stderr))
    finally:
        tls.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def check_nginx(c, build, root, by_dir, env):
    """The same through Debian's nginx (webservers.py: its ranges, ETags
    and If-Match): the first model of each folder the same as its file,
    and a model replaced after the mount gives EIO (nginx answers
    If-Match with 412). test_servers.py runs the other servers."""
    try:
        srv = webservers.start("nginx", root)
    except webservers.Unavailable:
        c.skip("no nginx: the real-server half of this test")
        return
    except RuntimeError as e:
        c.check(False, "nginx does not start: %s" % e)
        return
    failed = c.failed
    try:
        base = srv.url + "/"
        ls = os.path.join(build, "modelfs-ls")
        for d in sorted(by_dir):
            p = by_dir[d][0][0]
            check_same_models(c, ls, [(p, base + os.path.relpath(p, root))], env)
        # Replaced after the mount: If-Match answered 412, reads EIO.
        path = os.path.join(root, "nginx.safetensors")
        data = os.urandom(2 << 20)
        mfstest.write_safetensors(path, {"t": data})
        fresh = dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="modelfs-cache-",
                                                          dir=env["XDG_CACHE_HOME"]))
        with mfstest.mounted(os.path.join(build, "modelfs"), base + "nginx.safetensors",
                             fresh) as mnt:
            mfstest.write_safetensors(path + ".new", {"t": bytes(b ^ 0xff for b in data)})
            os.utime(path + ".new", (1, 1))
            os.rename(path + ".new", path)
            got, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "t"))
            c.equal((got is None, err), (True, errno.EIO), "nginx, replaced after the mount: EIO")
        shutil.rmtree(fresh["XDG_CACHE_HOME"], ignore_errors=True)
    finally:
        srv.stop(keep=c.failed > failed)


def du(path):
    """Bytes of the files under `path` now; a file removed while we walk
    (the daemon, exiting after its unmount, may still be evicting) is no
    longer on disk and counts nothing."""
    n = 0
    for d, _, fs in os.walk(path):
        for f in fs:
            try:
                n += os.path.getsize(os.path.join(d, f))
            except FileNotFoundError:
                pass
    return n


def check_disk_cache(c, build, srv, root, env):
    """-o cache_dir: a second mount reads warm data with one HEAD and no
    GET; -o offline asks nothing (and refuses a URL never seen); a block
    corrupted on disk is fetched again; -o cache_max is never exceeded."""
    modelfs = os.path.join(build, "modelfs")
    path = os.path.join(root, "disk.safetensors")
    data = os.urandom(3 << 20)
    mfstest.write_safetensors(path, {"t": data})
    url = srv.url + "/disk.safetensors"
    cache = tempfile.mkdtemp(prefix="modelfs-cache-", dir=env["XDG_CACHE_HOME"])
    opt = ("-o", "cache_dir=" + cache)

    def mount_read(extra, what):
        before = len(srv.log)
        try:
            with mfstest.mounted(modelfs, url, env, extra=extra) as mnt:
                t = os.path.join(mnt, "tensors", "t")
                c.equal(mfstest.read_or_errno(t), (data, 0), what + ": the tensor's bytes")
        except RuntimeError as e:
            c.check(False, "%s: mount: %s" % (what, e))
        return [(r[0], r[2]) for r in srv.log[before:]]

    cold = mount_read(opt, "cold cache")
    c.check(any(m == "GET" for m, _ in cold), "cold cache: GETs (%d requests)" % len(cold))
    warm = mount_read(opt, "warm cache")
    c.equal(warm, [("HEAD", None)], "warm cache: one HEAD and nothing else")
    off = mount_read(opt + ("-o", "offline"), "offline")
    c.equal(off, [], "offline: no request at all")
    r = subprocess.run([os.path.join(build, "modelfs-ls"), "--offline", "--cache-dir", cache,
                        srv.url + "/never.safetensors"], capture_output=True, text=True, env=env)
    c.check(r.returncode == 3 and "offline" in r.stderr, "offline, a URL never seen: exit 3 "
            "naming it (%d %r)" % (r.returncode, r.stderr))
    # One block's data damaged on disk: dropped, fetched again, right bytes.
    blocks = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(cache, "blocks"))
                    for f in fs)
    with open(blocks[len(blocks) // 2], "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 0xff]))
    fixed = mount_read(opt, "a corrupt block")
    c.equal(sum(1 for m, _ in fixed if m == "GET"), 1, "a corrupt block: one GET for it (%r)" % fixed)
    # At a terminal (script(1) gives one), a fetch of more than 4 MB shows
    # a progress line on stderr.
    big = os.path.join(root, "progress.safetensors")
    mfstest.write_safetensors(big, {"t": os.urandom(6 << 20)})
    out = tempfile.mktemp(prefix="modelfs-out-")
    r = subprocess.run(["script", "-qec", "%s --cache-dir %s %s/fault/throttle/progress.safetensors "
                        "tensors/t > %s" % (os.path.join(build, "modelfs-ls"), cache, srv.url, out),
                        "/dev/null"], capture_output=True, env=env, timeout=120)
    c.check(r.returncode == 0 and b"fetched" in r.stdout and os.path.getsize(out) == 6 << 20,
            "a progress line at a terminal: %d %r" % (r.returncode, r.stdout[-200:]))
    os.unlink(out)
    # A cache folder others may write to could hold forged blocks: refused.
    shared = tempfile.mkdtemp(prefix="modelfs-cache-", dir=env["XDG_CACHE_HOME"])
    os.chmod(shared, 0o777)
    r = subprocess.run([os.path.join(build, "modelfs-ls"), "--cache-dir", shared, url],
                       capture_output=True, text=True, env=env)
    c.check(r.returncode == 3 and "only it may write to" in r.stderr,
            "a cache_dir others may write to: refused (%d %r)" % (r.returncode, r.stderr))
    shutil.rmtree(shared, ignore_errors=True)
    # A cache of 1 MiB for a 3 MiB tensor: never more on disk.
    small = tempfile.mkdtemp(prefix="modelfs-cache-", dir=env["XDG_CACHE_HOME"])
    mount_read(("-o", "cache_dir=" + small, "-o", "cache_max=1M"), "cache_max=1M")
    kept = du(small + "/blocks")
    c.check(kept <= 1 << 20, "cache_max=1M: %d bytes of blocks" % kept)
    c.check(kept > 0, "cache_max=1M: some blocks kept")
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(small, ignore_errors=True)


def old_digests(old, hlen, t, mnt):
    """The sha256 the tensor file `t` had in the old version."""
    doc = json.loads(old[8:hlen])
    name = t.replace("%2F", "/")
    for k, v in doc.items():
        if k == name:
            a, b = v["data_offsets"]
            return {hashlib.sha256(old[hlen + a:hlen + b]).digest()}
    return set()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
