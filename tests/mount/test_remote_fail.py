#!/usr/bin/python3
"""A remote model whose server fails after the mount (issue 34), from a
range server on 127.0.0.1 (rangeserver.py), and ONNX's probe:

 - failure: the server answers 404 from the mount's second request on,
   stalls (MODELFS_HTTP_STALL=1), or the file changes; then the sha256
   xattr of a tensor whose bytes were not fetched, a read of SHA256SUMS
   and `modelfs-ls URL SHA256SUMS` fail (EIO; exit 8) and the daemon
   stays up (it once segfaulted: a NULL error dereferenced after the
   failed fetch). A remote .onnx whose opset_import lies past the first
   block, that block then unreadable: its probe once segfaulted too
   (modelfs-ls, and the daemon of a mount of several URLs, which loads
   models on first use);
 - stall: 20 sha256 xattrs and 2 reads of SHA256SUMS waiting on a stalled
   server leave `ls -l` and other xattrs answering at once (they once held
   every FUSE session thread for the whole stall); killed, such getfattr
   end at once, and an unmount then ends the daemon promptly; 12 requests
   for a model whose first load waits on a stalled server (a mount of two
   URLs) leave the other model answering at once;
 - onnx: a TensorFlow saved_model.pb-like protobuf and 1,500 random
   protobufs with a field 7 are "not a model" (exit 4), never ONNX; every
   real ONNX fixture of the DIRs still is.

usage: test_remote_fail.py BUILD_DIR [--part=PART] [ONNX_DIR...]

PART runs one of onnx, fail, stall, stalled_load (ctest runs them side by
side: the stall parts mostly wait on their stalled servers); without it,
every part.
"""
import errno
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import mfstest  # noqa: E402
import rangeserver  # noqa: E402
import gen_onnx as G  # noqa: E402

SHA = "user.modelfs.sha256"
_n = [0]


def fresh(url):
    """The URL with a query of its own: the server counts each URL's
    requests (its faults start from the second), and a fresh one starts
    again from none."""
    _n[0] += 1
    return "%s?n=%d" % (url, _n[0])


def xattr_errno(path, name=SHA):
    try:
        os.getxattr(path, name)
        return 0
    except OSError as e:
        return e.errno


def read_errno(path):
    """0 when the whole file reads, else the errno the read ended with."""
    try:
        mfstest.read_bytes(path)
        return 0
    except OSError as e:
        return e.errno


def alive(pid, mnt):
    """The daemon is still there and still answers."""
    try:
        os.listdir(mnt)
    except OSError:
        return False
    return pid is not None and not mfstest.pid_gone(pid, 0)


def onnx_model(big):
    """ir_version, a graph of len(big) bytes of raw data, then
    opset_import: past the first block when big is."""
    init = G.tensor_proto("w", 2, (len(big),), G.f_bytes(9, big))   # uint8
    return G.model(G.graph("g", inits=[init]))


def check_fail(c, build, srv, root, env):
    modelfs, ls = os.path.join(build, "modelfs"), os.path.join(build, "modelfs-ls")
    x = os.urandom(1 << 20)   # past the first block (256 KiB): not fetched at mount
    mfstest.write_safetensors(os.path.join(root, "m.safetensors"), {"a": b"abc", "x": x})
    fast = dict(env, MODELFS_HTTP_STALL="1")
    for how in ("404", "stall", "changed"):
        if how == "changed":
            changing = os.path.join(root, "changing.safetensors")
            shutil.copy(os.path.join(root, "m.safetensors"), changing)
            url = fresh(srv.url + "/changing.safetensors")
        else:
            url = fresh(srv.url + "/fault/%s/m.safetensors" % ("late404" if how == "404" else how))
        with mfstest.mounted(modelfs, url, fast) as mnt:
            pid = mfstest.daemon_pid(mnt)
            if how == "changed":
                mfstest.write_safetensors(changing, {"a": b"abd", "x": os.urandom(1 << 20)})
            t = os.path.join(mnt, "tensors", "x")
            c.equal(xattr_errno(t), errno.EIO, "%s after the mount: sha256 xattr" % how)
            c.check(alive(pid, mnt), "%s after the mount: the daemon is up after the xattr" % how)
            c.equal(read_errno(os.path.join(mnt, "SHA256SUMS")), errno.EIO,
                    "%s after the mount: a read of SHA256SUMS" % how)
            c.check(alive(pid, mnt), "%s after the mount: the daemon is up after SHA256SUMS" % how)
            if how != "changed":
                c.equal(mfstest.read_or_errno(os.path.join(mnt, "tensors", "a"))[0], b"abc",
                        "%s after the mount: bytes fetched at mount still read" % how)
    for how in ("late404", "stall"):
        r = subprocess.run([ls, fresh(srv.url + "/fault/%s/m.safetensors" % how), "SHA256SUMS"],
                           capture_output=True, env=fast, timeout=60)
        c.equal(r.returncode, 8, "modelfs-ls URL SHA256SUMS, %s after the first GET: exit "
                "(stderr %r)" % (how, r.stderr[-300:]))
    # ONNX: the probe's second window is past the first block, and fails.
    with open(os.path.join(root, "p.onnx"), "wb") as f:
        f.write(onnx_model(os.urandom(600 << 10)))
    url = srv.url + "/fault/late404/p.onnx"
    r = subprocess.run([ls, fresh(url), "model.json"], capture_output=True, env=env, timeout=60)
    c.check(r.returncode > 0 and r.returncode != 4,
            "modelfs-ls of an .onnx whose opset cannot be fetched: an error, exit %d (%r)"
            % (r.returncode, r.stderr[-300:]))
    mnt = mfstest.scratch("modelfs-mnt-")
    r = subprocess.run([modelfs, fresh(url), srv.url + "/m.safetensors", mnt], env=env,
                       capture_output=True, text=True, timeout=60)
    if not c.check(r.returncode == 0, "two URLs: mount: %s" % r.stderr.strip()):
        os.rmdir(mnt)
        return
    try:
        pid = mfstest.daemon_pid(mnt)
        names = sorted(os.listdir(mnt))
        onnx_dir = [n for n in names if n.startswith("p.onnx")]
        got = os.listdir(os.path.join(mnt, onnx_dir[0])) if onnx_dir else None
        c.check(got is not None and "ERROR" in got,
                "two URLs: the .onnx that cannot be probed is an ERROR (%r of %r)" % (got, names))
        c.check(alive(pid, mnt), "two URLs: the daemon is up after the failed probe")
        c.equal(mfstest.read_or_errno(os.path.join(mnt, "m.safetensors", "tensors", "x"))[0], x,
                "two URLs: the other model reads")
    finally:
        mfstest.unmount_and_remove(mnt)


def timed(fn):
    t0 = time.time()
    v = fn()
    return v, time.time() - t0


BLOCK = 256 << 10   # the remote source's block (formats/source/http.c)


def write_aligned(path, tensors):
    """A safetensors file of uint8 tensors of BLOCK bytes each, its
    header padded to a block: each tensor is one block of its own (hashes
    that share a block wait for each other's fetch, then fetch again)."""
    header = {}
    for i, (name, data) in enumerate(tensors.items()):
        header[name] = {"dtype": "U8", "shape": [BLOCK], "data_offsets": [i * BLOCK, (i + 1) * BLOCK]}
    h = json.dumps(header).encode()
    h += b" " * (BLOCK - 8 - len(h))
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(tensors.values()))


def check_stall(c, build, srv, root, env):
    n = 24
    tensors = {"t%02d" % i: os.urandom(BLOCK) for i in range(n)}
    write_aligned(os.path.join(root, "s.safetensors"), tensors)
    stall = dict(env, MODELFS_HTTP_STALL="3")
    modelfs = os.path.join(build, "modelfs")
    url = srv.url + "/fault/stall/s.safetensors"
    with mfstest.mounted(modelfs, fresh(url), stall) as mnt:
        tdir = os.path.join(mnt, "tensors")
        got = {}

        def hash_one(name):
            got[name] = xattr_errno(os.path.join(tdir, name))

        def sums(k):
            got["sums%d" % k] = read_errno(os.path.join(mnt, "SHA256SUMS"))
        threads = [threading.Thread(target=hash_one, args=("t%02d" % i,), daemon=True)
                   for i in range(1, 21)]
        threads += [threading.Thread(target=sums, args=(k,), daemon=True) for k in range(2)]
        t0 = time.time()
        for th in threads:
            th.start()
        time.sleep(0.5)
        r, took = timed(lambda: subprocess.run(["ls", "-l", tdir], capture_output=True, timeout=60))
        c.check(r.returncode == 0 and took < 1.0,
                "stalled server, 22 hashes waiting: ls -l took %.2f s" % took)
        v, took = timed(lambda: os.getxattr(os.path.join(tdir, "t00"), "user.modelfs.dtype"))
        c.check(v == b"uint8" and took < 1.0,
                "stalled server, 22 hashes waiting: the dtype xattr took %.2f s (%r)" % (took, v))
        _, took = timed(lambda: os.stat(os.path.join(mnt, "model.json")))
        c.check(took < 1.0, "stalled server: stat took %.2f s" % took)
        for th in threads:
            th.join(60)
        c.equal(sorted(set(got.values())), [errno.EIO], "stalled server: every hash fails (EIO)")
        # Hashes whose blocks another one fetches wait for it, then fetch
        # again: a few stall timeouts in all.
        c.check(time.time() - t0 < 45, "stalled server: the hashes ended in %.1f s (stall 3 s)"
                % (time.time() - t0))
    # The hashing processes killed (^C), then an unmount while the daemon
    # still waits on the server (stall timeout 30 s): it ends promptly.
    mnt = mfstest.scratch("modelfs-mnt-")
    r = subprocess.run([modelfs, fresh(url), mnt], env=dict(env, MODELFS_HTTP_STALL="30"),
                       capture_output=True, text=True, timeout=60)
    if not c.check(r.returncode == 0, "stall, unmount: mount: %s" % r.stderr.strip()):
        os.rmdir(mnt)
        return
    pid = mfstest.daemon_pid(mnt)
    tdir = os.path.join(mnt, "tensors")
    procs = [subprocess.Popen(["getfattr", "-n", SHA, os.path.join(tdir, "t%02d" % i)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for i in range(1, 21)]
    time.sleep(0.5)
    for p in procs:
        p.kill()
    t0 = time.time()
    for p in procs:
        try:
            p.wait(max(0.1, t0 + 5 - time.time()))
        except subprocess.TimeoutExpired:
            pass
    c.check(all(p.poll() is not None for p in procs),
            "stall: 20 killed getfattr ended within 5 s (%.1f s)" % (time.time() - t0))
    t0 = time.time()
    gone = mfstest.unmount(mnt) and mfstest.pid_gone(pid, 10)
    c.check(gone and time.time() - t0 < 5,
            "stall: unmount with 20 hashes waiting ended the daemon in %.1f s" % (time.time() - t0))
    mfstest.unmount_and_remove(mnt)
    for p in procs:
        try:
            p.wait(40)
        except subprocess.TimeoutExpired:
            p.kill()


def check_stalled_load(c, build, srv, root, env):
    """Two URLs, models loaded on first use: a listing and 11 xattrs of
    the folder of one whose load waits on a stalled server (its probe's
    second window) leave the other model answering at once."""
    with open(os.path.join(root, "sl.onnx"), "wb") as f:
        f.write(onnx_model(os.urandom(600 << 10)))
    b = os.urandom(1 << 20)
    mfstest.write_safetensors(os.path.join(root, "b.safetensors"), {"t": b})
    mnt = mfstest.scratch("modelfs-mnt-")
    r = subprocess.run([os.path.join(build, "modelfs"), fresh(srv.url + "/fault/stall/sl.onnx"),
                        fresh(srv.url + "/b.safetensors"), mnt],
                       env=dict(env, MODELFS_HTTP_STALL="3"), capture_output=True, text=True,
                       timeout=60)
    if not c.check(r.returncode == 0, "stalled load: mount: %s" % r.stderr.strip()):
        os.rmdir(mnt)
        return
    try:
        names = os.listdir(mnt)
        a_dir = os.path.join(mnt, [n for n in names if n.startswith("sl.onnx")][0])
        b_dir = os.path.join(mnt, [n for n in names if n.startswith("b.safetensors")][0])
        got = []

        def waiter(i):
            # Listings of one folder: the kernel lets one in at a time; its
            # xattrs are asked side by side.
            if i == 0:
                got.append(sorted(os.listdir(a_dir)))
            else:
                xattr_errno(a_dir, "user.modelfs.format")
        threads = [threading.Thread(target=waiter, args=(i,), daemon=True) for i in range(12)]
        for th in threads:
            th.start()
        time.sleep(0.5)
        v, took = timed(lambda: mfstest.read_or_errno(os.path.join(b_dir, "tensors", "t"))[0])
        c.check(v == b and took < 1.0,
                "stalled load of one model, 12 requests waiting: the other read in %.2f s" % took)
        for th in threads:
            th.join(30)
        c.check(len(got) == 1 and "ERROR" in got[0],
                "stalled load: the model is an ERROR folder (%r)" % got)
    finally:
        mfstest.unmount_and_remove(mnt)


# ---- protobufs that are not ONNX --------------------------------------------

def saved_model():
    """A TensorFlow SavedModel (saved_model.proto), hand-written: schema
    version 1 (field 1, a varint, as ONNX's ir_version) and one MetaGraphDef
    (field 2, as ONNX's producer_name) with tags, a GraphDef of two nodes
    and a signature."""
    f = G.f_bytes
    meta_info = f(4, "serve") + f(5, "2.15.0") + f(6, "v2.15.0-2-g0b15fdfcb3f")
    node = lambda name, op: f(1, name) + f(2, op) + f(4, "/job:localhost/replica:0/task:0")
    graph_def = f(1, node("x", "Placeholder")) + f(1, node("y", "Identity")) + \
        f(4, G.f_varint(1, 1286) + G.f_varint(2, 0))
    sig = f(1, "serving_default") + f(2, f(1, f(1, "x") + f(2, "x:0")) + f(3, "tensorflow/serving/predict"))
    meta = f(1, meta_info) + f(2, graph_def) + f(5, sig)
    return G.f_varint(1, 1) + f(2, meta)


def random_pb(rnd, depth=0):
    """A random protobuf message whose fields have the wire types
    ModelProto gives those numbers, a field 7 (a random message or bytes)
    among them: the likeliest to pass for ONNX."""
    out = b""
    nums = rnd.sample(range(1, 16), rnd.randrange(1, 6))
    if depth == 0 and 7 not in nums:
        nums.insert(rnd.randrange(len(nums) + 1), 7)
    if depth == 0 and rnd.random() < 0.5 and 1 in nums:
        nums.remove(1)
        nums.insert(0, 1)
    for num in nums:
        kind = rnd.random()
        if num in (1, 5) or (num not in (2, 3, 4, 6, 7, 8, 14) and kind < 0.3):
            out += G.f_varint(num, rnd.choice([1, 3, 7, 8, 9, rnd.randrange(1 << 20)]))
        elif depth < 2 and (num in (7, 8) or kind < 0.6):
            out += G.f_bytes(num, random_pb(rnd, depth + 1))
        else:
            out += G.f_bytes(num, bytes(rnd.randrange(256) for _ in range(rnd.randrange(40))))
    return out


def check_verdicts(c, ls, files, want, what, env):
    """modelfs-ls --check of `files`: each one's exit should be `want`
    (None: anything but 4)."""
    r = subprocess.run([ls, "--check", *files], capture_output=True, text=True, env=env,
                       timeout=120)
    codes = {}
    for line in r.stdout.splitlines():
        code, _, name = line.partition("  ")
        codes[name] = int(code)
    bad = [(os.path.basename(f), codes.get(f)) for f in files
           if (codes.get(f) != want if want is not None else codes.get(f) in (4, None))]
    c.check(len(codes) == len(files) and not bad, "%s: %d of %d wrong, e.g. %r" % (
        what, len(bad), len(files), bad[:5]))


def check_onnx(c, build, dirs, env):
    ls = os.path.join(build, "modelfs-ls")
    tmp = tempfile.mkdtemp(prefix="modelfs-pb-")
    try:
        p = os.path.join(tmp, "saved_model.pb")
        with open(p, "wb") as f:
            f.write(saved_model())
        check_verdicts(c, ls, [p], 4, "a saved_model.pb", env)
        rnd = random.Random(34)
        files = []
        for i in range(1500):
            files.append(os.path.join(tmp, "r%04d.onnx" % i))
            with open(files[-1], "wb") as f:
                f.write(random_pb(rnd))
        check_verdicts(c, ls, files, 4, "random protobufs with a field 7", env)
        real = []
        for d in dirs:
            for dp, _, names in os.walk(d):
                real += [os.path.join(dp, n) for n in sorted(names) if n.endswith(".onnx")]
        if real:
            check_verdicts(c, ls, real, None, "the real ONNX files of %s" % ", ".join(dirs), env)
            # Cut short: still ONNX (the loader says what is wrong), never "not a model".
            cut = []
            for k, src in enumerate(real[:40]):
                with open(src, "rb") as f:
                    b = f.read()
                cut.append(os.path.join(tmp, "cut%02d.onnx" % k))
                with open(cut[-1], "wb") as f:
                    f.write(b[:len(b) - 3])
            check_verdicts(c, ls, cut, None, "real ONNX files cut short by 3 bytes", env)
        else:
            c.skip("no ONNX folders given: real files not checked")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


PARTS = ("onnx", "fail", "stall", "stalled_load")


def main(argv):
    if len(argv) < 2:
        return mfstest.fail_main(__doc__)
    build, dirs = argv[1], argv[2:]
    parts = mfstest.take_part(dirs, PARTS)
    c = mfstest.Checker("remote failures (%s)" % ", ".join(p for p in PARTS if p in parts))
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    env = mfstest.sanitizer_env(logdir)
    env["XDG_CACHE_HOME"] = caches = tempfile.mkdtemp(prefix="modelfs-caches-")
    if "onnx" in parts:
        check_onnx(c, build, dirs, env)
    root = mfstest.scratch("modelfs-fail-")
    srv = rangeserver.start(root)
    try:
        if parts == {"onnx"}:
            pass
        elif mfstest.can_mount():
            if "fail" in parts:
                check_fail(c, build, srv, root, env)
            if "stall" in parts:
                check_stall(c, build, srv, root, env)
            if "stalled_load" in parts:
                check_stalled_load(c, build, srv, root, env)
        else:
            c.skip("no /dev/fuse: the mount checks")
    finally:
        srv.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(caches, ignore_errors=True)
    mfstest.check_sanitizer_reports(c, logdir)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
