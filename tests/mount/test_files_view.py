#!/usr/bin/python3
"""The files view (issue 37): MNT/files/ holds the tree the mount was
given, as it is, beside the model folders. One source tree is made here
(two models, config and tokenizer files, a README in a sub-folder, a
3 MiB file that is no model, an empty file, an empty folder, and a
folder called `files` holding a model: the clash of names) and mounted

 - as a local folder (`modelfs DIR MNT`),
 - one model file alone (`modelfs DIR/model.safetensors MNT`),
 - two http URLs (`modelfs URL URL MNT`, rangeserver.py),
 - an s3:// prefix (s3server.py),
 - a Hub repository (`hf://org/repo`, hubserver.py).

Each time: every path, size and sha256 of MNT/files equal the source
tree's (folders too: an empty one locally; none is listed remotely),
read through the mount; `ls -lR MNT/files` makes no request of the
server after the mount (sizes come from the listing); the model folders
are still there (and the model below `files/` is at `files%~2/`); a
file changed after the mount, once something of it was read, reads as
EIO past what was read, never as the new bytes (a model file, whose
bytes come through its model's source, and another file, with a source
of its own); a local file changed gives EIO too. On the Hub a file
changes by a new commit (its CDN's bytes are named by their sha256):
the mount, pinned to the commit it resolved, reads the old bytes whole.

usage: test_files_view.py BUILD_DIR
"""
import errno
import hashlib
import json
import mmap
import os
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hubserver  # noqa: E402
import mfstest  # noqa: E402
import rangeserver  # noqa: E402
import s3server  # noqa: E402

REGION = "eu-test-1"
KEY_ID, SECRET = "AKIDMODELFSFILES", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzFILESKEY"
TENSOR = 64 << 10


def write_safetensors(path, n, seed):
    """n U8 tensors of TENSOR random bytes each, in name order."""
    rnd = __import__("random").Random(seed)
    mfstest.write_safetensors_entries(path, [("t%03d" % i, "U8", [TENSOR], rnd.randbytes(TENSOR))
                                     for i in range(n)])


def make_tree(root):
    write_safetensors(os.path.join(root, "model.safetensors"), 20, 1)
    os.makedirs(os.path.join(root, "sub", "empty"))
    os.makedirs(os.path.join(root, "files"))
    write_safetensors(os.path.join(root, "files", "m.safetensors"), 2, 2)
    with open(os.path.join(root, "config.json"), "w") as f:
        json.dump({"model_type": "bert", "hidden_size": 4}, f)
    with open(os.path.join(root, "tokenizer.json"), "w") as f:
        json.dump({"version": "1.0", "model": {"type": "WordPiece"}}, f)
    with open(os.path.join(root, "sub", "README.md"), "w") as f:
        f.write("# a model card\n")
    with open(os.path.join(root, "blob.dat"), "wb") as f:
        f.write(os.urandom(3 << 20))
    open(os.path.join(root, "empty.txt"), "wb").close()
    with open(os.path.join(root, "name with spaces.txt"), "w") as f:
        f.write("spaces\n")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def tree_of(root, dirs=True):
    """{path: None for a folder, (size, sha256) for a file}."""
    out = {}
    for d, ds, names in os.walk(root):
        for n in ds:
            if dirs:
                out[os.path.relpath(os.path.join(d, n), root)] = None
        for n in names:
            p = os.path.join(d, n)
            data = mfstest.read_bytes(p)
            out[os.path.relpath(p, root)] = (len(data), sha256(data))
    return out


def remote_tree(root):
    """What a listing shows of `root`: its files, and the folders they are in."""
    out = {}
    for p, v in tree_of(root, dirs=False).items():
        out[p] = v
        d = os.path.dirname(p)
        while d:
            out[d] = None
            d = os.path.dirname(d)
    return out


def sizes_of(view):
    """{path: st_size} of every file below `view`, by stat alone."""
    out = {}
    for d, _, names in os.walk(view):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, view)] = os.stat(p).st_size
    return out


def check_view(c, what, mnt, want):
    view = os.path.join(mnt, "files")
    if not c.check(os.path.isdir(view), "%s: the mount has files/" % what):
        return False
    got = tree_of(view)
    odd = sorted(p for p in set(got) | set(want) if got.get(p, "absent") != want.get(p, "absent"))
    c.check(not odd, "%s: files/ vs the source tree: %d paths differ: %s" % (
        what, len(odd), [(p, got.get(p, "absent"), want.get(p, "absent")) for p in odd[:4]]))
    # Once read, every size shows as it is (a URL named alone has one
    # only once opened).
    c.equal(sizes_of(view), {p: v[0] for p, v in want.items() if v is not None},
            "%s: st_size of every file" % what)
    for p, v in want.items():
        if v is not None:
            st = os.stat(os.path.join(view, p))
            c.check(st.st_mode & 0o777 == 0o444 and os.path.isfile(os.path.join(view, p)),
                    "%s: %s is a read-only regular file" % (what, p))
            break
    return True


def ls_lr_quiet(c, what, mnt, count):
    """`ls -lR MNT/files` right after the mount asks the server nothing."""
    time.sleep(0.2)
    before = count()
    r = subprocess.run(["ls", "-lR", os.path.join(mnt, "files")], capture_output=True, text=True,
                       timeout=60)
    c.equal(r.returncode, 0, "%s: ls -lR files/: %s" % (what, r.stderr[-200:]))
    c.equal(count() - before, 0, "%s: ls -lR files/ makes no request" % what)
    c.check(os.path.isdir(os.path.join(mnt, "model.safetensors")),
            "%s: the model folder is beside files/" % what)


def rewrite(path):
    """The same size, other bytes, a later mtime (validators of one-second
    resolution see it)."""
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.write(os.urandom(size))
    later = time.time() + 5
    os.utime(path, (later, later))


def check_changed(c, what, mnt, local, rel):
    """Read the head of files/REL, change the source, then read its far
    end: EIO, never the new bytes; a whole read then: EIO or the old bytes."""
    path = os.path.join(mnt, "files", rel)
    with open(local, "rb") as f:
        old = f.read()
    fd = os.open(path, os.O_RDONLY)
    try:
        head = os.pread(fd, 4096, 0)
        c.equal(head, old[:4096], "%s: %s: its head before the change" % (what, rel))
        rewrite(local)
        try:
            far = os.pread(fd, 4096, len(old) - 4096)
            err = 0
        except OSError as e:
            far, err = None, e.errno
        c.equal((far is None, err), (True, errno.EIO),
                "%s: %s changed: a read past what was fetched is EIO" % (what, rel))
    finally:
        os.close(fd)
    data, err = mfstest.read_or_errno(path)
    c.check(data is None or data == old,
            "%s: %s changed: the whole file is EIO or the old bytes (errno %d, %s bytes, "
            "old: %s)" % (what, rel, err, None if data is None else len(data), data == old))


def check_new_commit(c, hub, mnt, files, rel):
    """The Hub: a file is changed by a new commit, and its CDN's bytes are
    named by their sha256 (they never change). After the head of
    files/REL was read, a commit on main changes it: the mount was pinned
    to the commit it resolved, and reads the old bytes, all of them."""
    path = os.path.join(mnt, "files", rel)
    with open(files[rel], "rb") as f:
        old = f.read()
    fd = os.open(path, os.O_RDONLY)
    try:
        c.equal(os.pread(fd, 4096, 0), old[:4096], "hf: %s: its head" % rel)
        new = files[rel] + ".new"
        with open(new, "wb") as f:
            f.write(os.urandom(len(old)))
        hub.add_repo("org/repo", dict(files, **{rel: new}))
        far = os.pread(fd, 4096, len(old) - 4096)
        c.equal(far, old[-4096:], "hf: %s changed by a new commit: the mounted commit's bytes" % rel)
    finally:
        os.close(fd)
    data, err = mfstest.read_or_errno(path)
    c.check(data == old, "hf: %s changed by a new commit: the whole file as it was (errno %d)"
            % (rel, err))


def check_local_changed(c, mnt, local, rel):
    """A local file changed under the mount: its next open is EIO."""
    path = os.path.join(mnt, "files", rel)
    c.equal(mfstest.read_or_errno(path)[1], 0, "folder: %s reads" % rel)
    rewrite(local)
    data, err = mfstest.read_or_errno(path)
    c.equal(err, errno.EIO, "folder: %s changed: EIO (%s)" % (rel, None if data is None else len(data)))


def check_swapped(c, t, src, root, env):
    """A folder and a file of DIR swapped for symlinks out of it after the
    mount, before any open, to bytes of the same sizes (so that only
    the no-symlink open can tell): never those bytes."""
    d = os.path.join(root, "swap")
    shutil.copytree(src, d)
    outside = os.path.join(root, "outside")
    os.makedirs(os.path.join(outside, "sub"))
    secrets = {}
    for rel in ("config.json", os.path.join("sub", "README.md")):
        size = os.path.getsize(os.path.join(d, rel))
        secrets[rel] = (b"SECRET" * size)[:size]
        with open(os.path.join(outside, rel), "wb") as f:
            f.write(secrets[rel])
    with mfstest.mounted(t.modelfs, d, env) as mnt:
        shutil.rmtree(os.path.join(d, "sub"))
        os.symlink(os.path.join(outside, "sub"), os.path.join(d, "sub"))
        os.rename(os.path.join(d, "config.json"), os.path.join(d, "config.json.old"))
        os.symlink(os.path.join(outside, "config.json"), os.path.join(d, "config.json"))
        for rel, secret in secrets.items():
            data, err = mfstest.read_or_errno(os.path.join(mnt, "files", rel))
            c.check(data != secret and err != 0,
                    "swapped: %s through a symlink out of DIR is an error, not its bytes "
                    "(errno %d)" % (rel, err))


def check_many_readers(c, t, src, want, env):
    """Eight readers open every file of a fresh mount's files/ at once, in
    different orders (first opens racing on each entry): every one gets
    the source tree's bytes."""
    files = sorted(p for p, v in want.items() if v is not None)
    with mfstest.mounted(t.modelfs, src, env) as mnt:
        bad = []

        def reader(k):
            order = files[k % len(files):] + files[:k % len(files)]
            for rel in order:
                with open(os.path.join(mnt, "files", rel), "rb") as f:
                    if sha256(f.read()) != want[rel][1]:
                        bad.append((k, rel))
        threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        c.equal(bad, [], "8 readers at once: every file's bytes")


def body(c, t):
    root = mfstest.scratch("modelfs-files-")
    src = os.path.join(root, "src")
    os.makedirs(src)
    make_tree(src)
    want = tree_of(src)
    env = dict(t.env, XDG_CACHE_HOME=os.path.join(root, "cache"))
    for k in list(env):
        if k.startswith("AWS_"):
            del env[k]

    def fresh(e):
        """`e` with a disk cache of its own: what an earlier mount read
        whole would be served from there, unchanged."""
        cache = mfstest.scratch("modelfs-files-cache-")
        caches.append(cache)
        return dict(e, XDG_CACHE_HOME=cache)

    caches = []

    def copy(name):
        d = os.path.join(root, name)
        shutil.copytree(src, d)
        return d

    # A local folder.
    d = copy("folder")
    with mfstest.mounted(t.modelfs, d, env) as mnt:
        if check_view(c, "folder", mnt, want):
            c.check(os.path.isfile(os.path.join(mnt, "model.safetensors", "model.json")),
                    "folder: model.safetensors/ is still a model folder")
            c.check(os.path.isfile(os.path.join(mnt, "files%~2", "m.safetensors", "model.json")),
                    "folder: the model below files/ is at files%~2/")
            c.equal(sorted(os.listdir(os.path.join(mnt, "files", "sub", "empty"))), [],
                    "folder: an empty folder shows")
            check_local_changed(c, mnt, os.path.join(d, "config.json"), "config.json")
            check_local_changed(c, mnt, os.path.join(d, "model.safetensors"), "model.safetensors")
    check_swapped(c, t, src, root, env)
    check_many_readers(c, t, src, want, env)
    # modelfs-ls lists files/ as the mount shows it.
    ls = mfstest.ls_tree(t.modelfs_ls, src, env)
    c.equal({p[len("files/"):]: v for p, v in ls.items() if p.startswith("files/")},
            {p: None if v is None else v[0] for p, v in want.items()}, "modelfs-ls DIR: files/")
    sums, code, err = mfstest.ls_sums(t.modelfs_ls, src, ["files/config.json", "files/blob.dat"], env)
    c.equal(sums, {"files/" + p: (want[p][1], want[p][0]) for p in ("config.json", "blob.dat")},
            "modelfs-ls --sha256 of files/: %s" % err)

    # One model file alone.
    with mfstest.mounted(t.modelfs, os.path.join(src, "model.safetensors"), env) as mnt:
        check_view(c, "one file", mnt, {"model.safetensors": want["model.safetensors"]})

    # Two URLs over http.
    d = copy("http")
    srv = rangeserver.start(d)
    try:
        urls = [srv.url + "/model.safetensors", srv.url + "/config.json"]
        with mfstest.mounted(t.modelfs, urls[0], env, extra=urls[1:]) as mnt:
            before = len(srv.log)
            r = subprocess.run(["ls", "-lR", os.path.join(mnt, "files")], capture_output=True,
                               timeout=60)
            c.equal((r.returncode, len(srv.log) - before), (0, 0),
                    "http: ls -lR files/ makes no request")
            check_view(c, "http", mnt, {p: want[p] for p in ("model.safetensors", "config.json")})
            # Shown with size 0 until opened, it maps as a listed file does
            # (its pages kept): what safe_open does with it.
            path = os.path.join(mnt, "files", "model.safetensors")
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                c.equal(sha256(bytes(m)), want["model.safetensors"][1],
                        "http: a mapping of a URL named alone")
        with mfstest.mounted(t.modelfs, urls[0], fresh(env), extra=urls[1:]) as mnt:
            check_changed(c, "http", mnt, os.path.join(d, "model.safetensors"), "model.safetensors")
    finally:
        srv.stop()

    # An s3:// prefix.
    bucket = os.path.join(root, "bucket")
    os.makedirs(bucket)
    d = shutil.copytree(src, os.path.join(bucket, "repo"))
    srv = s3server.start({"models": bucket}, {KEY_ID: (SECRET, None)}, region=REGION)
    s3env = dict(env, AWS_ENDPOINT_URL=srv.url, AWS_REGION=REGION, AWS_ACCESS_KEY_ID=KEY_ID,
                 AWS_SECRET_ACCESS_KEY=SECRET)
    try:
        with mfstest.mounted(t.modelfs, "s3://models/repo/", s3env) as mnt:
            ls_lr_quiet(c, "s3", mnt, lambda: len(srv.log))
            check_view(c, "s3", mnt, remote_tree(d))
            c.check(os.path.isfile(os.path.join(mnt, "files%~2", "m.safetensors", "model.json")),
                    "s3: the model below files/ is at files%~2/")
        with mfstest.mounted(t.modelfs, "s3://models/repo/", fresh(s3env)) as mnt:
            check_changed(c, "s3", mnt, os.path.join(d, "blob.dat"), "blob.dat")
            check_changed(c, "s3", mnt, os.path.join(d, "model.safetensors"), "model.safetensors")
    finally:
        srv.stop()

    # A Hub repository.
    d = copy("hub")
    hub = hubserver.Hub("hf_modelfsTESTtoken0123456789", page=3)
    files = {os.path.relpath(os.path.join(dd, n), d): os.path.join(dd, n)
             for dd, _, names in os.walk(d) for n in names}
    hub.add_repo("org/repo", files)
    hfenv = dict(env, HF_ENDPOINT=hub.url, HF_HOME=os.path.join(root, ".hf-home"))
    try:
        with mfstest.mounted(t.modelfs, "hf://org/repo", hfenv) as mnt:
            ls_lr_quiet(c, "hf", mnt, lambda: len(hub.requests()))
            check_view(c, "hf", mnt, remote_tree(d))
        with mfstest.mounted(t.modelfs, "hf://org/repo", fresh(hfenv)) as mnt:
            check_new_commit(c, hub, mnt, files, "blob.dat")
            check_new_commit(c, hub, mnt, files, "model.safetensors")
    except RuntimeError as e:
        c.check(False, "hf: mount: %s" % e)
    finally:
        hub.stop()
        shutil.rmtree(root, ignore_errors=True)
        for cache in caches:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("files view tests", body, doc=__doc__))
