"""The model file cut short while the daemon checks or decodes a file at
open (issue 7, item 1), with real mounts:

 - a carton with a 2 GiB stored member listed in MANIFEST (sha256 read
   through the mapping at open);
 - an unpacked carton folder with a 2 GiB file listed in MANIFEST;
 - a carton with a 512 MiB zstd member (decoded from the mapping at open);
 - a bfloat16 model cut short before its f32/ view, stats.tsv and
   model.safetensors are first read (issue 21: made from the mapping), and
   one edited in place after its view and stats.tsv were read once.

For each, a reader opens the big file through the mount; once the daemon
has visibly started (its resident memory grew), the file on disk is
truncated. The reader must get EIO (or, if the daemon finished first, the
right bytes), the daemon must stay up (`ls`, `cat model.json`), and a later
open of the big file must give EIO. The mount runs in the foreground
(`modelfs -f`), so the test sees the daemon's exit status: a "Bus error"
(SIGBUS) is a failure. Big files are sparse or streamed and removed at
the end.

usage: test_truncate.py BUILD_DIR"""
import errno
import hashlib
import os
import shutil
import signal
import struct
import sys
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mfstest  # noqa: E402

try:
    import zstandard
except ImportError:  # pragma: no cover
    zstandard = None

GiB = 1 << 30
MiB = 1 << 20
TOML = (b'spec_version = 1\nmodel_name = "truncate"\n\n[runner]\nrunner_name = "python"\n'
        b'required_framework_version = "=3.11"\nrunner_compat_version = 1\n')


# The sha256 and CRC-32 of 2 GiB of zeros, as `head -c 2G /dev/zero |
# sha256sum` and zeros_digest's own loop give them: a constant, which that
# loop took 1.8 CPU-s to make again on every run.
ZEROS = {2 * GiB: ("a7c744c13cc101ed66c29f672f92455547889cc586ce6d44fe76ae824958ea51", 0x4DBDF21C)}


def zeros_digest(n):
    """sha256 and CRC-32 of n zero bytes, streamed (known ones from ZEROS)."""
    if n in ZEROS:
        return ZEROS[n]
    h, crc, chunk = hashlib.sha256(), 0, bytes(8 * MiB)
    left = n
    while left:
        k = min(left, len(chunk))
        h.update(chunk[:k])
        crc = zlib.crc32(chunk[:k], crc)
        left -= k
    return h.hexdigest(), crc


def local_header(name, method, crc, csize, size):
    return struct.pack("<IHHHHHIIIHH", 0x04034B50, 63, 0, method, 0, 33, crc, csize, size,
                       len(name), 0) + name


def central(entries):
    cd = bytearray()
    for name, lho, method, crc, csize, size in entries:
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 63, 0, method, 0, 33, crc,
                          csize, size, len(name), 0, 0, 0, 0, 0o100644 << 16, lho) + name
    return bytes(cd)


def end_record(n, cd_size, cd_off):
    return struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, cd_size, cd_off, 0)


def small_members(manifest):
    return [(b"carton.toml", TOML), (b"MANIFEST", manifest)]


def write_zip(path, big_name, big_method, big_crc, big_size, write_big_data, big_csize):
    """carton.toml and MANIFEST first (stored), then the big member, whose
    data write_big_data(f) writes (big_csize bytes; None: as many as it
    writes, its header written again after), then the directory."""
    entries = []
    with open(path, "wb") as f:
        for name, data in small_members(MANIFESTS[path]):
            entries.append((name, f.tell(), 0, zlib.crc32(data), len(data), len(data)))
            f.write(local_header(name, 0, zlib.crc32(data), len(data), len(data)) + data)
        lho = f.tell()
        f.write(local_header(big_name, big_method, big_crc, big_csize or 0, big_size))
        start = f.tell()
        write_big_data(f)
        if big_csize is None:
            big_csize = f.tell() - start
            f.seek(lho)
            f.write(local_header(big_name, big_method, big_crc, big_csize, big_size))
        f.seek(start + big_csize)
        entries.append((big_name, lho, big_method, big_crc, big_csize, big_size))
        cd_off = f.tell()
        cd = central(entries)
        f.write(cd + end_record(len(entries), len(cd), cd_off))


MANIFESTS = {}


def make_stored(work, size, sha, crc):
    path = os.path.join(work, "stored.carton")
    MANIFESTS[path] = b"model/big.bin=%s\n" % sha.encode()
    # The member's data is a hole: no disk, zeros when read.
    write_zip(path, b"model/big.bin", 0, crc, size, lambda f: None, size)
    return path, "files/model/big.bin"


def make_folder(work, size, sha):
    root = os.path.join(work, "folder")
    os.makedirs(os.path.join(root, "model"))
    with open(os.path.join(root, "carton.toml"), "wb") as f:
        f.write(TOML)
    with open(os.path.join(root, "MANIFEST"), "wb") as f:
        f.write(b"model/big.bin=%s\n" % sha.encode())
    with open(os.path.join(root, "model/big.bin"), "wb") as f:
        f.truncate(size)
    return root, "files/model/big.bin", os.path.join(root, "model/big.bin")


def make_zstd(work, size):
    """A zstd member of `size` bytes that barely compresses (a 16 MiB random
    block repeated: beyond the compressor's window), so its compressed bytes
    span most of the file and a cut anywhere early leaves the decoder
    reading past the end."""
    block = os.urandom(16 * MiB)
    h, crc = hashlib.sha256(), 0
    for _ in range(size // len(block)):
        h.update(block)
        crc = zlib.crc32(block, crc)
    path = os.path.join(work, "zstd.carton")
    MANIFESTS[path] = b"model/big.zst.bin=%s\n" % h.hexdigest().encode()

    def compress(f):
        # Straight into the carton (no temporary copy of its 512 MiB).
        cctx = zstandard.ZstdCompressor(level=1)
        with cctx.stream_writer(f, size=size, closefd=False) as w:
            for _ in range(size // len(block)):
                w.write(block)
    write_zip(path, b"model/big.zst.bin", 93, crc, size, compress, None)
    return path, "files/model/big.zst.bin"


def rss_kib(pid):
    """Resident memory of `pid` (anonymous + file pages), in KiB."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Reader(threading.Thread):
    """Reads a whole file through the mount; .result = ("ok", digest) or
    ("err", errno)."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.result = path, None

    def run(self):
        h = hashlib.sha256()
        try:
            with open(self.path, "rb") as f:
                while True:
                    b = f.read(4 * MiB)
                    if not b:
                        break
                    h.update(b)
            self.result = ("ok", h.hexdigest())
        except OSError as ex:
            self.result = ("err", ex.errno)


def run_case(c, x, what, model, inner, victim, want_sha, cut_to):
    mfstest.evict(model, victim)
    fg = mfstest.Foreground(x.modelfs, model, (), x.env, timeout=30)
    mnt, d = fg.mnt, fg.p
    try:
        if not c.check(fg.mounted, "%s: mounted" % what):
            return
        base = rss_kib(d.pid) or 0
        r = Reader(os.path.join(mnt, inner))
        r.start()
        # Wait until the daemon is well into the check or decode: its
        # resident memory grew by 64 MiB (mapped pages read, or the decode
        # buffer filled), or the read already ended.
        t0 = time.monotonic()
        while r.is_alive() and time.monotonic() - t0 < 60:
            now = rss_kib(d.pid)
            if now is None or now - base > 64 * 1024:
                break
            time.sleep(0.005)
        started = r.is_alive()
        if not started and r.result != ("ok", want_sha):
            c.check(False, "%s: the read failed before the cut: %r" % (what, r.result))
            return
        os.truncate(victim, cut_to)
        r.join(120)
        c.check(not r.is_alive(), "%s: the read ended within 120 s of the cut" % what)
        res = r.result
        if res is not None and res[0] == "ok":
            c.equal(res[1], want_sha, "%s: the read finished before the cut: right bytes" % what)
            print("note: %s: the daemon finished before the cut (%s)" % (
                what, "it was still running when the cut was made" if started else "no race"),
                flush=True)
        else:
            c.equal(res, ("err", errno.EIO), "%s: the read cut short: EIO" % what)
        alive = d.poll() is None
        c.check(alive, "%s: the daemon is alive after the cut (exit %r%s)" % (
            what, d.returncode, ", SIGBUS" if d.returncode == -signal.SIGBUS else ""))
        if not alive:
            return
        try:
            names = os.listdir(mnt)
            c.check("model.json" in names, "%s: ls after the cut" % what)
            with open(os.path.join(mnt, "model.json"), "rb") as f:
                c.check(len(f.read()) > 0, "%s: cat model.json after the cut" % what)
        except OSError as ex:
            c.check(False, "%s: the mount after the cut: %s" % (what, ex))
        try:
            with open(os.path.join(mnt, inner), "rb") as f:
                f.read(1 << 16)
            c.check(False, "%s: a later open of the cut file succeeded" % what)
        except OSError as ex:
            c.equal(ex.errno, errno.EIO, "%s: a later open of the cut file" % what)
        c.check(d.poll() is None, "%s: the daemon is still alive at the end" % what)
    finally:
        close_daemon(c, fg, what)


def close_daemon(c, fg, what):
    """Unmounts and ends a Foreground daemon; an exit other than 0 fails,
    with the end of its log."""
    log = fg.text()
    rc = fg.close(60)
    if rc not in (0, None):
        c.check(False, "%s: modelfs -f exited %d: %s" % (what, rc, log[-2000:]))


def make_bf16(work, size):
    """A safetensors model of one bfloat16 tensor of `size` bytes (sparse:
    zeros)."""
    path = os.path.join(work, "bf16.safetensors")
    h = ('{"w":{"dtype":"BF16","shape":[%d],"data_offsets":[0,%d]}}' % (size // 2, size)).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        f.truncate(8 + len(h) + size)
    return path


def run_cut_first(c, x, what, model, inners):
    """The model cut short after the mount, before the files made from its
    numbers are first opened: each read gives EIO (the producer faults on
    the mapping, under the guard), and the daemon stays up."""
    fg = mfstest.Foreground(x.modelfs, model, (), x.env, timeout=30)
    mnt, d = fg.mnt, fg.p
    try:
        if not c.check(fg.mounted, "%s: mounted" % what):
            return
        os.truncate(model, 4096)
        for inner in inners:
            try:
                with open(os.path.join(mnt, inner), "rb") as f:
                    while f.read(1 << 20):
                        pass
                c.check(False, "%s: %s read whole after the cut" % (what, inner))
            except OSError as ex:
                c.equal(ex.errno, errno.EIO, "%s: %s after the cut" % (what, inner))
            c.check(d.poll() is None, "%s: the daemon is alive after reading %s (exit %r%s)" % (
                what, inner, d.returncode, ", SIGBUS" if d.returncode == -signal.SIGBUS else ""))
            if d.poll() is not None:
                return
        c.check("model.json" in os.listdir(mnt), "%s: ls after the cut" % what)
    finally:
        close_daemon(c, fg, what)


def run_edit(c, x, what, model, inners):
    """The model edited in place (same size) after the files made from its
    numbers were read once: each read after the edit gives EIO, as its
    tensor files do, never numbers of the old or half-new bytes."""
    fg = mfstest.Foreground(x.modelfs, model, (), x.env, timeout=30)
    mnt, d = fg.mnt, fg.p
    try:
        if not c.check(fg.mounted, "%s: mounted" % what):
            return
        for inner in inners:
            with open(os.path.join(mnt, inner), "rb") as f:
                c.check(len(f.read()) > 0, "%s: %s before the edit" % (what, inner))
        with open(model, "r+b") as f:
            f.seek(-4096, os.SEEK_END)
            f.write(b"\x7f" * 4096)
        for inner in inners + ["tensors/w"]:
            try:
                with open(os.path.join(mnt, inner), "rb") as f:
                    f.read()
                c.check(False, "%s: %s read after the edit" % (what, inner))
            except OSError as ex:
                c.equal(ex.errno, errno.EIO, "%s: %s after the edit" % (what, inner))
        c.check(d.poll() is None, "%s: the daemon is alive after the edit" % what)
    finally:
        close_daemon(c, fg, what)


class Ctx:
    def __init__(self, build, env):
        self.modelfs = os.path.join(build, "modelfs")
        self.env = env


def run(c, t):
    x = Ctx(t.build, t.env)
    work = tempfile.mkdtemp(prefix="modelfs-trunc-", dir="/var/tmp")
    try:
        # Issue 21: the f32/ view, stats.tsv and model.safetensors read
        # the numbers themselves.
        model = make_bf16(work, 64 * MiB)
        run_cut_first(c, x, "bfloat16 numbers", model,
                      ["f32/w.npy", "stats.tsv", "model.safetensors"])
        os.unlink(model)
        model = make_bf16(work, 1 * MiB)
        run_edit(c, x, "bfloat16 numbers edited", model, ["f32/w.npy", "stats.tsv"])
        os.unlink(model)
        size = 2 * GiB
        sha, crc = zeros_digest(size)
        model, inner = make_stored(work, size, sha, crc)
        run_case(c, x, "stored 2 GiB member", model, inner, model, sha, 100 * MiB)
        os.unlink(model)
        model, inner, victim = make_folder(work, size, sha)
        run_case(c, x, "2 GiB file of a folder", model, inner, victim, sha, 100 * MiB)
        shutil.rmtree(model)
        if zstandard is None:
            c.skip("python3-zstandard is missing: no zstd case")
        else:
            zsize = 512 * MiB
            model, inner = make_zstd(work, zsize)
            want = MANIFESTS[model].split(b"=")[1].strip().decode()
            run_case(c, x, "512 MiB zstd member", model, inner, model, want, 1 * MiB)
            os.unlink(model)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("truncate tests", run, __doc__))
