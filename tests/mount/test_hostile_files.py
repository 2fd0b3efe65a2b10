"""Model files and folders that change or lie under a running modelfs
(issue 7, items 4, 5, 6 and 10), with real mounts:

 - a FIFO as MODEL: modelfs and modelfs-ls refuse it at once (exit 3,
   "not a regular file") instead of blocking forever in open();
 - a zip whose central directory points many entries at one member's bytes
   (a zip bomb's shape): refused at mount (exit 5), naming both members;
 - a .rten model edited in place with its mtime put back (`touch -r`): reads
   fail with EIO (ctime moved), never the new bytes served as checked;
 - a file of an unpacked carton folder edited in place the same way after
   it was checked: EIO;
 - a carton folder whose `model/` is replaced, after root mounted it with
   allow_other, by a symlink to a 0700 folder: reads give EIO or ENOENT,
   never the other folder's bytes; a symlink inside the folder present at
   mount still serves its target, one to outside stays skipped.

The kernel's caches are dropped (root only) so that reads reach the daemon.

usage: test_hostile_files.py BUILD_DIR RTEN_MODEL"""
import errno
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

try:
    import gen_carton  # noqa: E402  (needs numpy and zstandard)
    import gen_rten  # noqa: E402
    import numpy as np  # noqa: E402
except ImportError as ex:  # pragma: no cover
    gen_carton = None
    GEN_ERR = str(ex)


def edit_keep_times(path, offset, data):
    """Overwrites bytes in place, then puts the old atime/mtime back, as
    `touch -r` would: only ctime shows the change."""
    st = os.stat(path)
    time.sleep(0.05)  # a ctime tick later than the mount's
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    st2 = os.stat(path)
    return st2.st_mtime_ns == st.st_mtime_ns and st2.st_size == st.st_size


def check_fifo(c, x, work):
    fifo = os.path.join(work, "model.fifo")
    os.mkfifo(fifo)
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    for what, cmd in (("modelfs", [x.modelfs, fifo, mnt]),
                      ("modelfs -f", [x.modelfs, "-f", fifo, mnt]),
                      ("modelfs-ls", [x.modelfs_ls, fifo]),
                      ("modelfs-ls --verify", [x.modelfs_ls, "--verify", fifo])):
        t0 = time.monotonic()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=20, env=x.env)
        except subprocess.TimeoutExpired:
            c.check(False, "%s FIFO: still blocked after 20 s" % what)
            continue
        took = time.monotonic() - t0
        c.equal(r.returncode, 3, "%s FIFO: exit code (stderr %r)" % (what, r.stderr.strip()))
        c.check("not a regular file" in r.stderr, "%s FIFO: says why: %r" % (what, r.stderr.strip()))
        c.check(took < 10, "%s FIFO: refused promptly (%.1f s)" % (what, took))
    if os.path.ismount(mnt):
        mfstest.unmount(mnt)
    os.rmdir(mnt)
    os.unlink(fifo)


def check_zip_overlap(c, x, work):
    """One local header, many central entries pointing at it."""
    import struct
    import zlib
    data = b"\0" * (1 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    z = comp.compress(data) + comp.flush()
    crc = zlib.crc32(data)
    toml = gen_carton.runner_toml("bomb").encode()
    out = bytearray()
    entries = []
    for name, payload, method, raw in ((b"carton.toml", toml, 0, toml), (b"model/a.bin", z, 8, data)):
        entries.append((name, len(out), method, zlib.crc32(raw), len(payload), len(raw)))
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 33, zlib.crc32(raw),
                           len(payload), len(raw), len(name), 0) + name + payload
    lho_a = entries[1][1]
    for i in range(200):  # 200 more names for the same 1 MiB stream
        entries.append((b"model/copy%03d.bin" % i, lho_a, 8, crc, len(z), len(data)))
    cd_off = len(out)
    for name, lho, method, ecrc, csize, size in entries:
        out += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 20, 0, method, 0, 33, ecrc,
                           csize, size, len(name), 0, 0, 0, 0, 0o100644 << 16, lho) + name
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries),
                       len(out) - cd_off, cd_off, 0)
    bomb = os.path.join(work, "bomb.carton")
    with open(bomb, "wb") as f:
        f.write(out)
    for what, cmd in (("modelfs-ls", [x.modelfs_ls, bomb]),):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=x.env)
        c.equal(r.returncode, 5, "%s overlapping members: exit code (%r)" % (what, r.stderr.strip()))
        c.check("overlap" in r.stderr and "model/a.bin" in r.stderr and "model/copy" in r.stderr,
                "%s overlapping members: names both: %r" % (what, r.stderr.strip()))
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    r = subprocess.run([x.modelfs, bomb, mnt], capture_output=True, text=True, timeout=60, env=x.env)
    c.equal(r.returncode, 5, "modelfs overlapping members: exit code (%r)" % r.stderr.strip())
    c.check("byte %d:" % lho_a in r.stderr, "modelfs overlapping members: the offset: %r"
            % r.stderr.strip())
    if os.path.ismount(mnt):
        mfstest.unmount(mnt)
    os.rmdir(mnt)
    os.unlink(bomb)


def check_rten_edit(c, x, work, rten):
    import json
    model = os.path.join(work, "edit.rten")
    shutil.copyfile(rten, model)
    with mfstest.mounted(x.modelfs, model, env=x.env) as mnt:
        with open(os.path.join(mnt, "model.json")) as f:
            doc = json.load(f)
        t = next((t for t in doc["tensors"] if t["nbytes"] >= 4), None)
        if not c.check(t is not None, "rten edit: a tensor of 4 bytes or more"):
            return
        path = os.path.join(mnt, t["path"])
        good, err = mfstest.read_or_errno(path)
        c.check(err == 0 and len(good) == t["nbytes"], "rten edit: read before the edit")
        new = bytes(b ^ 0xFF for b in good[:4])
        c.check(edit_keep_times(model, t["offset"], new), "rten edit: size and mtime kept")
        mfstest.evict(path)
        got, err = mfstest.read_or_errno(path)
        c.equal(err, errno.EIO, "rten edit + touch -r: read after the edit (got %r)"
                % (got[:4] if got else None))
        ok, err = mfstest.read_or_errno(os.path.join(mnt, "model.json"))
        c.check(err == 0, "rten edit: model.json still reads")
    os.unlink(model)


def make_folder(root, files, links=()):
    for p, d in files.items():
        full = os.path.join(root, p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(d)
    for p, target in links:
        os.symlink(target, os.path.join(root, p))


def folder_files(unlisted=()):
    """A carton folder's files; MANIFEST lists all but `unlisted` (no
    checksum: nothing but the open itself stands between a swapped file
    and the reader)."""
    files = {
        "carton.toml": gen_carton.runner_toml("hostile").encode(),
        "model/main.py": b"def get_model():\n    return 1\n",
        "model/data.bin": bytes(range(256)) * 64,
        "model/sub/more.bin": b"more bytes here\n" * 100,
        "model/last.bin": b"the last one\n" * 50,
    }
    listed = dict(files)
    listed["model/alias.py"] = files["model/main.py"]
    for p in unlisted:
        del listed[p]
    files["MANIFEST"] = gen_carton.manifest_bytes(listed)
    return files


def check_folder_edit(c, x, work):
    root = os.path.join(work, "edit_folder")
    files = folder_files()
    make_folder(root, files, [("model/alias.py", "main.py")])
    with mfstest.mounted(x.modelfs, root, env=x.env) as mnt:
        path = os.path.join(mnt, "files/model/data.bin")
        got, err = mfstest.read_or_errno(path)
        c.check(err == 0 and got == files["model/data.bin"], "folder edit: read before the edit")
        c.check(edit_keep_times(os.path.join(root, "model/data.bin"), 100, b"EVIL"),
                "folder edit: size and mtime kept")
        mfstest.evict(path)
        got, err = mfstest.read_or_errno(path)
        c.equal(err, errno.EIO, "folder edit + touch -r: read after the edit (got %s)"
                % ("the edited bytes" if got and b"EVIL" in got else repr(got and got[:8])))
        got, err = mfstest.read_or_errno(os.path.join(mnt, "files/model/main.py"))
        c.check(err == 0 and got == files["model/main.py"], "folder edit: other files still read")
        r = subprocess.run([x.modelfs_ls, "--verify", root], capture_output=True, text=True,
                           timeout=60, env=x.env)
        c.equal(r.returncode, 8, "folder edit: modelfs-ls --verify sees it")
    shutil.rmtree(root)


def check_folder_swap(c, x, work):
    root = os.path.join(work, "swap_folder")
    files = folder_files(unlisted=("model/data.bin", "model/sub/more.bin", "model/last.bin"))
    make_folder(root, files, [("model/alias.py", "main.py"), ("model/outside", "/etc/hostname")])
    secret_dir = os.path.join(work, "secret")
    os.makedirs(os.path.join(secret_dir, "sub"))
    os.chmod(secret_dir, 0o700)
    secret = {p: b"S" * len(files["model/" + p])
              for p in ("data.bin", "main.py", "sub/more.bin", "last.bin")}
    for p, d in secret.items():
        with open(os.path.join(secret_dir, p), "wb") as f:
            f.write(d)
        os.chmod(os.path.join(secret_dir, p), 0o600)
    try:
        cm = mfstest.mounted(x.modelfs, root, env=x.env, extra=("-o", "allow_other"))
        mnt = cm.__enter__()
    except RuntimeError as ex:
        c.skip("folder swap: cannot mount with allow_other: %s" % ex)
        return
    try:
        names = os.listdir(os.path.join(mnt, "files/model"))
        c.check("alias.py" in names and "outside" not in names,
                "folder swap: inside symlink listed, outside one skipped: %r" % names)
        # main.py through the in-folder symlink, read before the swap: its
        # target was resolved at mount.
        got, err = mfstest.read_or_errno(os.path.join(mnt, "files/model/main.py"))
        c.check(err == 0 and got == files["model/main.py"], "folder swap: main.py before the swap")
        os.rename(os.path.join(root, "model"), os.path.join(root, "model.moved"))
        os.symlink(secret_dir, os.path.join(root, "model"))
        mfstest.evict(*(os.path.join(mnt, "files", p)
                        for p in ("model/data.bin", "model/sub/more.bin", "model/alias.py")))
        for p in ("model/data.bin", "model/sub/more.bin", "model/alias.py"):
            got, err = mfstest.read_or_errno(os.path.join(mnt, "files", p))
            leaked = got is not None and b"S" * 16 in got
            c.check(not leaked, "folder swap: %s served the other folder's bytes" % p)
            c.check(err in (errno.EIO, errno.ENOENT), "folder swap: %s: EIO or ENOENT, got %r"
                    % (p, err if got is None else "%d bytes" % len(got)))
        # The last component swapped (the folder put back; last.bin, never
        # opened yet, replaced by a symlink to the secret file).
        os.unlink(os.path.join(root, "model"))
        os.rename(os.path.join(root, "model.moved"), os.path.join(root, "model"))
        os.unlink(os.path.join(root, "model/last.bin"))
        os.symlink(os.path.join(secret_dir, "last.bin"), os.path.join(root, "model/last.bin"))
        mfstest.evict(os.path.join(mnt, "files/model/last.bin"))
        got, err = mfstest.read_or_errno(os.path.join(mnt, "files/model/last.bin"))
        c.check(not (got is not None and b"S" * 16 in got) and err in (errno.EIO, errno.ENOENT),
                "folder swap: last component as a symlink: %r" % (err if got is None else len(got)))
        got, err = mfstest.read_or_errno(os.path.join(mnt, "model.json"))
        c.check(err == 0, "folder swap: model.json still reads")
    finally:
        cm.__exit__(None, None, None)
    shutil.rmtree(root)
    shutil.rmtree(secret_dir)


class Ctx:
    def __init__(self, build, env):
        self.modelfs = os.path.join(build, "modelfs")
        self.modelfs_ls = os.path.join(build, "modelfs-ls")
        self.env = env


def check_long_name(c, x, work):
    """A tensor name over Linux's 64 KiB xattr limit: its user.modelfs.name
    is left out (getxattr said E2BIG for it, whatever size was asked);
    the other attributes and model.json are whole."""
    name = "n" * 70000
    gen_rten.write_model(work, "longname.rten", gen_rten.Graph(
        [gen_rten.Const(name, np.arange(3, dtype=np.float32))]))
    with mfstest.mounted(x.modelfs, os.path.join(work, "longname.rten"), x.env) as mnt:
        with open(os.path.join(mnt, "model.json"), "rb") as f:
            doc = json.load(f)
        c.equal([t["name"] for t in doc["tensors"]], [name], "long name: model.json has it whole")
        path = os.path.join(mnt, doc["tensors"][0]["path"])
        c.equal(os.getxattr(path, "user.modelfs.dtype"), b"float32", "long name: dtype xattr")
        c.check("user.modelfs.name" not in os.listxattr(path), "long name: not listed")
        try:
            os.getxattr(path, "user.modelfs.name")
            c.check(False, "long name: getxattr must fail")
        except OSError as e:
            c.equal(errno.errorcode.get(e.errno), "ENODATA", "long name: getxattr errno")


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    c = mfstest.Checker("hostile files")
    mfstest.mounts_on_one_cpu()  # reads one file at a time: see there
    if gen_carton is None:
        c.skip("scripts/gen_carton.py cannot be imported: %s" % GEN_ERR)
        return c.finish()
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    x = Ctx(argv[1], mfstest.sanitizer_env(logdir))
    work = tempfile.mkdtemp(prefix="modelfs-hostile-")
    os.chmod(work, 0o755)
    try:
        check_fifo(c, x, work)
        check_zip_overlap(c, x, work)
        if not mfstest.can_mount():
            c.skip("no /dev/fuse: cannot mount here")
        else:
            for check in (lambda: check_rten_edit(c, x, work, argv[2]),
                          lambda: check_folder_edit(c, x, work),
                          lambda: check_folder_swap(c, x, work),
                          lambda: check_long_name(c, x, work)):
                try:
                    check()
                except (RuntimeError, OSError, subprocess.SubprocessError) as ex:
                    c.check(False, "%s" % ex)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    mfstest.check_sanitizer_reports(c, logdir)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
