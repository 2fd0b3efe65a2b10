#!/usr/bin/python3
"""The disk cache (-o cache_dir) against things planted in it (issue 34,
defects 8 and 10), through real mounts of a model served over
http://127.0.0.1 by rangeserver.py:

 - a FIFO in place of objects/UKEY (the old code hung the mount) and of
   a block file (it hung the reader and every later mount): the mount
   comes up and reads the right bytes within a bounded time;
 - blocks/KEY a symlink to a folder outside, and another blocks/KEY2 a
   symlink to a second one, with a small cache_max (eviction): the right
   bytes, and neither folder changes (the old code wrote blocks there,
   removed the files it took for corrupt blocks and evicted the rest);
 - a block hard-linked from a file outside whose time is old: that file
   is not touched (the old code set its mtime at the hit);
 - cache_dir itself a symlink to a cache (the user's own choice): used
   (the old code refused it); blocks/ a symlink: refused, nothing behind it
   changed;
 - a cache_dir on a full tmpfs of 2 MiB: the message says "No space left
   on device" (the old one named an earlier call's "File exists");
 - a warm mount (its blocks served from their files mapped) whose block
   files are truncated (SIGBUS on the mapping), rewritten in place and
   replaced by rename while mapped: the daemon lives, every read gives
   the right bytes, and the blocks changed under it are fetched again.
Every decoy folder is hashed (names, sizes, mtimes, bytes) before and
after."""
import hashlib
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

READ_SECONDS = 10       # a read that takes longer is a hang
MOUNT_SECONDS = 10


def fingerprint(folder):
    """What could change in `folder`: every name, type, size, mtime and the
    bytes of its files (lstat: nothing followed)."""
    out = []
    for d, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            p = os.path.join(d, name)
            st = os.lstat(p)
            h = ""
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
            out.append((os.path.relpath(p, folder), st.st_mode, st.st_size, st.st_mtime_ns, h))
    return sorted(out)


def make_decoy(root, name):
    d = os.path.join(root, name)
    os.mkdir(d)
    for f, text in (("0", b"the user's file named 0\n"), ("1", b"the user's file named 1\n"),
                    ("4", b"x" * 5000), ("notes.txt", b"precious\n")):
        with open(os.path.join(d, f), "wb") as fh:
            fh.write(text)
        # old: first in line for eviction, and a hit would touch it
        os.utime(os.path.join(d, f), ns=(10 ** 18, 10 ** 18))
    return d


def timed_read(path, seconds=READ_SECONDS):
    """(bytes or None, errno or 'hung') of a whole-file read, given up on
    after `seconds` (the reader thread is left to the unmount)."""
    res = []
    t = threading.Thread(target=lambda: res.append(mfstest.read_or_errno(path)), daemon=True)
    t.start()
    t.join(seconds)
    return res[0] if res else (None, "hung")


class Case:
    def __init__(self, c, build, url, data, env):
        self.c, self.build, self.url, self.data, self.env = c, build, url, data, env
        self.modelfs = os.path.join(build, "modelfs")

    def mount_read(self, opts, what, wait_for=None):
        """Mounts (foreground, its log kept) with `opts`, reads the tensor:
        (mounted, right bytes, log). With `wait_for`, the log is taken once
        it holds that text or after 5 s: blocks are kept after the read is
        answered, so their messages may come later."""
        t0 = time.time()
        fg = mfstest.Foreground(self.modelfs, self.url, opts=opts, env=self.env,
                                timeout=MOUNT_SECONDS)
        ok = False
        try:
            if not self.c.check(fg.mounted, "%s: the mount comes up within %d s (%s)"
                                % (what, MOUNT_SECONDS, fg.text()[-300:])):
                return False, False, fg.text()
            got, err = timed_read(os.path.join(fg.mnt, "tensors", "t"))
            ok = self.c.check(got == self.data, "%s: the tensor's bytes (error %r, %.1f s)"
                              % (what, err, time.time() - t0))
        finally:
            deadline = time.time() + 5
            text = fg.text()
            while wait_for and wait_for not in text and time.time() < deadline:
                time.sleep(0.05)
                text = fg.text()
            fg.close(wait=5)
        return True, ok, text


def only(folder):
    names = os.listdir(folder)
    return os.path.join(folder, names[0]) if len(names) == 1 else None


def run(c, t):
    build, env = t.build, t.env
    root = tempfile.mkdtemp(prefix="modelfs-cache-hostile-", dir="/var/tmp")
    os.chmod(root, 0o700)
    env["XDG_CACHE_HOME"] = os.path.join(root, "xdg")
    served = os.path.join(root, "served")
    os.mkdir(served)
    data = os.urandom(1536 << 10)   # six blocks of 256 KiB
    mfstest.write_safetensors(os.path.join(served, "m.safetensors"), {"t": data})
    srv = rangeserver.start(served)
    t0 = time.time()
    try:
        case = Case(c, build, srv.url + "/m.safetensors", data, env)
        pristine = os.path.join(root, "pristine")
        case.mount_read(("-o", "cache_dir=" + pristine), "cold cache")
        key, ukey = only(os.path.join(pristine, "blocks")), only(os.path.join(pristine, "objects"))
        if not c.check(key is not None and ukey is not None,
                       "cold cache: one blocks/KEY and one objects/UKEY"):
            return
        key, ukey = os.path.basename(key), os.path.basename(ukey)
        c.check(len(os.listdir(os.path.join(pristine, "blocks", key))) >= 6,
                "cold cache: the blocks kept")
        made = [0]

        def fresh():
            """A copy of the warm cache (each case its own): (options,
            its folder, blocks/KEY, objects/UKEY)."""
            made[0] += 1
            d = os.path.join(root, "cache%d" % made[0])
            shutil.copytree(pristine, d, symlinks=True)
            return (("-o", "cache_dir=" + d), d, os.path.join(d, "blocks", key),
                    os.path.join(d, "objects", ukey))

        # A FIFO for the object record: the old mount never came up.
        opt, _, kdir, obj = fresh()
        os.unlink(obj)
        os.mkfifo(obj, 0o600)
        case.mount_read(opt, "a FIFO at objects/UKEY")
        c.check(os.path.isfile(obj) and not os.path.islink(obj),
                "a FIFO at objects/UKEY: replaced by a record")

        # A FIFO for a block: the old reader hung.
        opt, _, kdir, _ = fresh()
        block = os.path.join(kdir, "2")
        os.unlink(block)
        os.mkfifo(block, 0o600)
        case.mount_read(opt, "a FIFO at blocks/KEY/2")
        c.check(os.path.isfile(block) and os.path.getsize(block) == (256 << 10) + 64,
                "a FIFO at blocks/KEY/2: the block kept again")

        # blocks/KEY and a second blocks/KEY2 symlinks to folders outside,
        # a cache of 512 KiB: blocks written and evicted, nothing there.
        opt, d, kdir, _ = fresh()
        decoy = make_decoy(root, "decoy")
        decoy2 = make_decoy(root, "decoy2")
        before = fingerprint(decoy), fingerprint(decoy2)
        shutil.rmtree(kdir)
        os.symlink(decoy, kdir)
        os.symlink(decoy2, os.path.join(d, "blocks", "ab" * 32))
        case.mount_read(opt + ("-o", "cache_max=512K"), "blocks/KEY a symlink, cache_max=512K")
        c.equal(fingerprint(decoy), before[0], "blocks/KEY a symlink: the folder it named")
        c.equal(fingerprint(decoy2), before[1], "another blocks/KEY2 a symlink, evicting: "
                "the folder it named")
        c.check(os.path.isdir(kdir) and not os.path.islink(kdir),
                "blocks/KEY a symlink: a folder of the cache's in its place")

        # A block hard-linked from outside, its time old: served or not,
        # the outside file is not touched.
        opt, _, kdir, _ = fresh()
        outside = make_decoy(root, "linked")
        os.link(os.path.join(kdir, "1"), os.path.join(outside, "block"))
        os.utime(os.path.join(outside, "block"), ns=(10 ** 18, 10 ** 18))
        before = fingerprint(outside)
        case.mount_read(opt, "a block hard-linked from outside")
        c.equal(fingerprint(outside), before, "a block hard-linked from outside: that folder")

        # cache_dir a symlink the user chose: followed, once.
        _, d, _, _ = fresh()
        link = os.path.join(root, "cache-link")
        os.symlink(d, link)
        n = len(srv.log)
        case.mount_read(("-o", "cache_dir=" + link), "cache_dir a symlink to the cache")
        gets = [r for r in srv.log[n:] if r[0] == "GET"]
        c.equal(gets, [], "cache_dir a symlink to the cache: warm (no GET)")

        # blocks/ a symlink: refused, naming it; nothing behind it changed.
        other = os.path.join(root, "cache-blocks-link")
        os.mkdir(other, 0o700)
        decoy3 = make_decoy(root, "decoy3")
        before = fingerprint(decoy3)
        os.symlink(decoy3, os.path.join(other, "blocks"))
        r = subprocess.run([os.path.join(build, "modelfs-ls"), "--cache-dir", other, case.url],
                           capture_output=True, text=True, env=env, timeout=60)
        c.check(r.returncode != 0 and "blocks" in r.stderr,
                "blocks/ a symlink: refused naming it (%d %r)" % (r.returncode, r.stderr))
        c.equal(fingerprint(decoy3), before, "blocks/ a symlink: the folder it named")

        check_mapped(c, case, fresh, srv)

        big = os.urandom(3 << 20)
        mfstest.write_safetensors(os.path.join(served, "big.safetensors"), {"t": big})
        check_full(c, Case(c, build, srv.url + "/big.safetensors", big, env), root)
    finally:
        srv.stop()
    print("cache hostile: %.1f s" % (time.time() - t0), flush=True)
    subprocess.run(["umount", "-l", os.path.join(root, "small")], capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


def check_mapped(c, case, fresh, srv):
    """Block files changed by another process while a warm mount has them
    mapped (disk_cache.h: mfs_disk_cache_map)."""
    opt, _, kdir, _ = fresh()
    fg = mfstest.Foreground(case.modelfs, case.url, opts=opt, env=case.env, timeout=MOUNT_SECONDS)
    what = "mapped blocks changed under a warm mount"
    try:
        if not c.check(fg.mounted, "%s: mounted (%s)" % (what, fg.text()[-300:])):
            return
        path = os.path.join(fg.mnt, "tensors", "t")
        n = len(srv.log)
        got, err = timed_read(path)
        c.check(got == case.data, "%s: the first read (error %r)" % (what, err))
        c.equal([r for r in srv.log[n:] if r[0] == "GET"], [], "%s: warm, no GET" % what)
        size = os.path.getsize(os.path.join(kdir, "2"))
        os.truncate(os.path.join(kdir, "2"), 100)
        with open(os.path.join(kdir, "3"), "r+b") as f:
            f.write(os.urandom(size))
        other = os.path.join(kdir, ".swap")
        with open(other, "wb") as f:
            f.write(os.urandom(size))
        os.rename(other, os.path.join(kdir, "4"))
        for _ in range(2):
            mfstest.evict(path)   # the next read reaches the daemon
            got, err = timed_read(path)
            c.check(got == case.data, "%s: the tensor's bytes after (error %r)" % (what, err))
        c.check(fg.p.poll() is None, "%s: the daemon lives" % what)
        log = fg.text()
        c.check(log.count("changed under its mapping") >= 2,
                "%s: the truncated and the rewritten block dropped: %r" % (what, log[-600:]))
        c.check(len([r for r in srv.log[n:] if r[0] == "GET"]) >= 1,
                "%s: fetched again" % what)
    finally:
        fg.close(wait=5)


def check_full(c, case, root):
    """A cache_dir on a full file system: one message, with its errno."""
    small = os.path.join(root, "small")
    os.mkdir(small, 0o700)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2M,mode=0700", "tmpfs", small],
                       capture_output=True, text=True)
    if r.returncode != 0:
        c.skip("a full cache_dir: cannot mount a tmpfs (%s)" % r.stderr.strip())
        return
    try:
        # 3 MiB of blocks for a file system of 2 MiB.
        want = "cannot keep a block: No space left on device"
        _, _, log = case.mount_read(("-o", "cache_dir=" + small + "/c"), "a full tmpfs", want)
        c.check(want in log and "File exists" not in log,
                "a full tmpfs: the message names ENOSPC: %r" % log[-400:])
    finally:
        subprocess.run(["umount", "-l", small], capture_output=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("cache hostile tests", run, __doc__))
