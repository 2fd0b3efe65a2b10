"""Shared helpers for modelfs's mount tests (Debian's /usr/bin/python3).

A test script counts checks with Checker and ends with the line
"N passed, M failed[, K skipped]"; it exits 1 on any failure and 77 (ctest's
skip code) when it could run nothing."""
import contextlib
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77


class Checker:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = self.skipped = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: %s" % what, flush=True)
        return ok

    def equal(self, got, want, what):
        # The message only on failure: got and want can be a tensor's bytes.
        if got == want:
            return self.check(True, what)
        return self.check(False, "%s: got %r, want %r" % (what, got, want))

    def skip(self, why):
        self.skipped += 1
        print("SKIP: %s" % why, flush=True)

    def finish(self):
        line = "%d passed, %d failed" % (self.passed, self.failed)
        if self.skipped:
            line += ", %d skipped" % self.skipped
        print("%s: %s" % (self.name, line), flush=True)
        if self.failed:
            return 1
        return SKIP if self.passed == 0 else 0


def cache_npy_header_filter(np):
    """numpy 1.24's np.load passes every version 1 and 2 .npy header
    through format._filter_header, a tokenizer pass (Python 2's long
    integers) that took about 40% of the time of mount.numbers' 17,000
    loads. It is a pure function of the header's text, and headers repeat
    (98% of those loads): cached, np.load does the same checks on the same
    text."""
    import functools
    f = np.lib.format
    if hasattr(f, "_filter_header") and not hasattr(f._filter_header, "cache_info"):
        f._filter_header = functools.lru_cache(maxsize=4096)(f._filter_header)


def can_mount():
    """Real mounts need /dev/fuse and fusermount3 (or root)."""
    return os.path.exists("/dev/fuse") and (os.geteuid() == 0 or
                                            os.path.exists("/usr/bin/fusermount3"))


def sanitizer_env(logdir):
    env = dict(os.environ)
    # The daemon's stderr is /dev/null once it is up: sanitizer reports go to
    # files, which check_sanitizer_logs reads.
    env["ASAN_OPTIONS"] = "log_path=%s/asan:detect_leaks=1:abort_on_error=0" % logdir
    env["UBSAN_OPTIONS"] = "log_path=%s/ubsan:print_stacktrace=1:halt_on_error=1" % logdir
    return env


def sanitizer_reports(logdir):
    out = []
    for f in sorted(os.listdir(logdir)):
        if f.startswith(("asan", "ubsan")):
            with open(os.path.join(logdir, f), errors="replace") as fh:
                out.append(fh.read())
    return out


def check_sanitizer_reports(c, logdir):
    """One failed check per report the daemons and tools wrote to logdir;
    logdir is removed when it holds none (kept, and named, when it does)."""
    reports = sanitizer_reports(logdir)
    for r in reports:
        c.check(False, "sanitizer report:\n" + r[:20000])
    if reports:
        print("sanitizer reports kept in %s" % logdir)
    else:
        shutil.rmtree(logdir, ignore_errors=True)


_libc = []
MNT_DETACH, UMOUNT_NOFOLLOW = 2, 8  # <sys/mount.h>


def umount_once(mnt, lazy=False):
    """One `fusermount3 -u` (-uz when lazy); as root its umount2(2),
    without starting a process (a test run unmounts thousands of times),
    never through a symlink put in place of `mnt`. True when it unmounted."""
    if os.geteuid() != 0:
        r = subprocess.run(["fusermount3", "-uz" if lazy else "-u", mnt], capture_output=True)
        return r.returncode == 0
    if not _libc:
        import ctypes
        _libc.append(ctypes.CDLL(None))
    flags = UMOUNT_NOFOLLOW | (MNT_DETACH if lazy else 0)
    return _libc[0].umount2(os.fsencode(mnt), flags) == 0


def unmount(mnt):
    """Unmounts `mnt` (retrying while it is busy); True once it is not
    mounted. A daemon that already exited (SIGTERM, kill) unmounted itself
    or left a dead mount: no retries then."""
    for _ in range(50):
        if not os.path.ismount(mnt):
            return True
        if umount_once(mnt):
            return True
        time.sleep(0.1)
    umount_once(mnt, lazy=True)
    return False


_scratch_root = []


def scratch(prefix):
    """A new temporary folder for mount points and many small files: under
    /dev/shm when that is a tmpfs with room, else the usual temporary
    folder. Creating thousands of files among as many just deleted costs
    ext4 milliseconds each (its inode allocator skips recently deleted
    inodes), and that was half of some tests' time. Not for models whose
    mapping must not count as the daemon's memory, nor for page-cache tests
    (those use /var/tmp)."""
    if not _scratch_root:
        root = None
        try:
            st = os.statvfs("/dev/shm")
            if st.f_bavail * st.f_frsize >= (4 << 30) and os.access("/dev/shm", os.W_OK):
                root = "/dev/shm"
        except OSError:
            pass
        _scratch_root.append(root)
    return tempfile.mkdtemp(prefix=prefix, dir=_scratch_root[0])


def sanitized(build):
    """Whether `build` is a sanitizer (ASan/UBSan) build: slower, bigger."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            return "MODELFS_SANITIZE:BOOL=ON" in f.read()
    except OSError:
        return False


def free_port(host="127.0.0.1"):
    """A TCP port nothing listens on now (for a server, or for nothing)."""
    s = socket.socket()
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=10, proc=None):
    """Whether something accepts on 127.0.0.1:port within `timeout`
    seconds (False too once `proc`, the server's process, has ended)."""
    deadline = time.time() + timeout
    while time.time() < deadline and (proc is None or proc.poll() is None):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def stop_process(proc, timeout=10):
    """SIGTERM, then SIGKILL if it is still there after `timeout` s."""
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def write_safetensors(path, tensors):
    """A safetensors file of uint8 tensors {name: bytes}, in that order."""
    write_safetensors_entries(path, [(name, "U8", [len(data)], data)
                                     for name, data in tensors.items()])


def unmount_and_remove(mnt):
    """Unmounts `mnt`, waits (5 s at most) for it to go and (30 s at most)
    for its daemon to end, removes the folder. The daemon writes the
    blocks it fetched to the disk cache before it exits: a mount made
    next on the same cache_dir would else find some not written yet."""
    pid = daemon_pid(mnt) if os.path.ismount(mnt) else None
    unmount(mnt)
    for _ in range(50):
        if not os.path.ismount(mnt):
            break
        time.sleep(0.1)
    if pid is not None:
        pid_gone(pid, 30)
    os.rmdir(mnt)


_one_cpu = []


def mounts_on_one_cpu():
    """From now on each mount of `mounted` and everything this test does
    while it is mounted (sha256sum -c, reads) run on one CPU, the one the
    fewest other pinned tests are on: the daemon inherits that affinity. A
    FUSE request then wakes the daemon on the CPU it is sent from, the reply
    wakes the reader there; across two CPUs of this VM each wake-up is an
    interprocessor interrupt. Measured with 3,000 files of many.rten: a
    getxattr 27-36 us -> 14 us, an open and read 60-140 us -> 26-34 us, and
    mount.models.gen0 8.8 -> 5.3 CPU-s, 9.4 -> 5.4 s alone. For the tests
    that read many files one at a time; not for those whose readers or
    daemon threads are meant to run side by side (load, stuck, races)."""
    _one_cpu[:] = [True]


def stay_on_one_cpu():
    """This process, its threads and children from now on on one CPU (see
    mounts_on_one_cpu): for a test whose every step is a round trip
    between its own processes and threads (a client and a server)."""
    _pin(os.getpid())  # noted for the life of the process


def _current_cpu():
    """The CPU this thread last ran on (the 39th field of its stat)."""
    with open("/proc/thread-self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


# Which CPU each pinned test is on, that the next one may take the CPU
# fewest have: tests pinned side by side on one CPU while the other runs
# the rest (ctest -j) made mount.numbers take 18 s instead of 9. A file
# CPU-PID-TID per pin, removed when it ends (or found stale: no PID).
_PIN_DIR = os.path.join(tempfile.gettempdir(), "modelfs-test-pins-%d" % os.geteuid())


def _note_pin(cpu, tid):
    os.makedirs(_PIN_DIR, exist_ok=True)
    path = os.path.join(_PIN_DIR, "%d-%d-%d" % (cpu, os.getpid(), tid))
    open(path, "w").close()
    return path


def _least_pinned(allowed):
    """The allowed CPU the fewest live pins are on; the current one among
    those when it is (no move)."""
    count = dict.fromkeys(allowed, 0)
    try:
        names = os.listdir(_PIN_DIR)
    except OSError:
        names = []
    for n in names:
        try:
            cpu, pid, _ = (int(x) for x in n.split("-"))
            os.kill(pid, 0)
        except ProcessLookupError:
            try:
                os.unlink(os.path.join(_PIN_DIR, n))
            except OSError:
                pass
            continue
        except (ValueError, OSError):
            continue
        if cpu in count:
            count[cpu] += 1
    cur = _current_cpu()
    low = min(count.values())
    return cur if count.get(cur) == low else min(c for c in count if count[c] == low)


def _pin(tid):
    """Puts the calling thread on the allowed CPU the fewest live pins are
    on, noted as thread `tid`'s: (the mask before, the note's path or
    None), or None when there is one CPU or it cannot be told."""
    try:
        before = os.sched_getaffinity(0)
        if len(before) < 2:
            return None
        cpu = _least_pinned(before)
        os.sched_setaffinity(0, {cpu})
    except (OSError, ValueError, IndexError):
        return None
    try:
        return before, _note_pin(cpu, tid)
    except OSError:
        return before, None


@contextlib.contextmanager
def _pinned():
    """Runs the body on one CPU when mounts_on_one_cpu() was asked (and the
    CPU can be told): the one the fewest other pinned tests are on. The
    mask before is restored after, so the scheduler places the test afresh
    between mounts."""
    pin = _pin(threading.get_native_id()) if _one_cpu else None
    try:
        yield
    finally:
        if pin is not None:
            before, note = pin
            if note is not None:
                try:
                    os.unlink(note)
                except OSError:
                    pass
            os.sched_setaffinity(0, before)


@contextlib.contextmanager
def mounted_with_log(modelfs, model, env=None, extra=()):
    """Mounts `model` (daemon mode, as a user would) and yields (mount
    point, what modelfs wrote to stderr while mounting: the warnings a
    user sees); raises RuntimeError with that stderr if it fails."""
    with _pinned():
        mnt = scratch("modelfs-mnt-")
        r = subprocess.run([modelfs, *extra, model, mnt], capture_output=True, text=True,
                           env=env, timeout=120)
        if r.returncode != 0:
            os.rmdir(mnt)
            raise RuntimeError("modelfs exited %d: %s" % (r.returncode, r.stderr.strip()))
        try:
            yield mnt, r.stderr
        finally:
            unmount_and_remove(mnt)


@contextlib.contextmanager
def mounted(modelfs, model, env=None, extra=()):
    """mounted_with_log's mount point alone."""
    with mounted_with_log(modelfs, model, env, extra) as (mnt, _):
        yield mnt


def mount_model(build, model, env=None):
    """Mounts `model` as the per-model tests do (its NAME.links folder, when
    there is one, as links_dir): (context, mount point), or (None, None)
    when it does not mount (the generic checks of mount.NAME check those).
    The caller ends it with context.__exit__(None, None, None)."""
    extra = ()
    if os.path.isdir(model + ".links"):
        extra = ("-o", "links_dir=" + os.path.abspath(model + ".links"))
    try:
        ctx = mounted(os.path.join(build, "modelfs"), model, env=env, extra=extra)
        return ctx, ctx.__enter__()
    except RuntimeError:
        return None, None


def links_args(model):
    """modelfs-ls's options for `model` as mount_model mounts it."""
    links = model + ".links"
    return ["--links-dir", os.path.abspath(links)] if os.path.isdir(links) else []


def range_bytes(log):
    """Bytes the ranged requests of a server log (rangeserver.py) asked for."""
    total = 0
    for r in log:
        if r[2]:
            first, _, last = r[2][len("bytes="):].partition("-")
            total += int(last) - int(first) + 1
    return total


def write_safetensors_entries(path, tensors):
    """A safetensors file of `tensors` [(name, dtype, shape, bytes)], in
    that order (the header padded to 8 bytes with spaces, as the format's
    own writer does)."""
    header, at = {}, 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + len(data)]}
        at += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        for _, _, _, data in tensors:
            f.write(data)


def daemon_pid(mnt):
    """The pid of the modelfs daemon serving `mnt`, or None."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if mnt.encode() in args and any(a.endswith(b"modelfs") for a in args[:1]):
            return int(d)
    return None


def rss(pid):
    """{"RssAnon": bytes, "RssFile": bytes, "Threads": count} of a process."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("RssAnon", "RssFile"):
                out[k] = int(v.split()[0]) * 1024
            elif k == "Threads":
                out[k] = int(v)
    return out


def take_shard(args):
    """Removes a leading `--shard=I/N` from the list args; (I, N), or
    (0, 1) without one. A test given it checks every N-th model from the
    I-th, so ctest can run its shards side by side."""
    if args and args[0].startswith("--shard="):
        i, n = args.pop(0)[len("--shard="):].split("/")
        return int(i), int(n)
    return 0, 1


def evict(*paths):
    """Drops the page cache of these files only (written back first), so
    the next read of a file through a mount reaches the daemon, and the
    daemon's next read of a model file reaches the disk. Unlike
    drop_caches it leaves every other test's cache alone, needs no root,
    and no lock between tests. A file that no longer opens has nothing
    cached to drop."""
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            try:
                os.fsync(fd)
            except OSError:
                pass  # a read-only mount: nothing dirty
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass  # a folder: no pages of its own
        finally:
            os.close(fd)
    return True


def drop_caches():
    """So that the next read through a mount reaches the daemon; False
    when not root."""
    if os.geteuid() != 0:
        return False
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    return True


def read_or_errno(path):
    """(bytes, 0), or (None, errno) for a whole-file read."""
    try:
        with open(path, "rb") as f:
            return f.read(), 0
    except OSError as e:
        return None, e.errno


def pid_gone(pid, timeout):
    """Whether process `pid` has ended (or is a zombie) within `timeout` s."""
    end = time.time() + timeout
    while True:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        if time.time() >= end:
            return False
        time.sleep(0.05)


def is_collection(mnt):
    """Whether a mount holds several models (a folder of models was given,
    e.g. a fixture folder's subfolder) rather than one model's tree."""
    names = os.listdir(mnt)
    return "models.json" in names and "model.json" not in names


def model_files(c, dirs):
    """Every model-like entry of `dirs` (not expectations, LINKS side
    folders or hidden files); a dir that does not exist is skipped, visibly.
    A subfolder that is not itself a model mounts as a folder of models:
    callers that want one model's tree skip those (is_collection)."""
    for d in dirs:
        if not os.path.isdir(d):
            c.skip("%s is absent: its models are not checked" % d)
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith((".expect.json", ".links")) or f.startswith("."):
                continue
            yield os.path.join(d, f)


class Foreground:
    """`modelfs -f [OPTS] MODEL MNT` on a new mount point, its log (stderr)
    in a file; `mounted` says whether the mount came up. close() unmounts,
    waits for the daemon (killing it after `wait` s), makes sure nothing is
    left mounted and returns its exit status."""

    def __init__(self, modelfs, model, opts=(), env=None, dir=None, timeout=60):
        self.mnt = tempfile.mkdtemp(prefix="modelfs-mnt-", dir=dir)
        self.log = tempfile.TemporaryFile()
        self.p = subprocess.Popen([modelfs, "-f", *opts, model, self.mnt], env=env,
                                  stderr=self.log, stdout=subprocess.DEVNULL)
        end = time.time() + timeout
        while not os.path.ismount(self.mnt) and time.time() < end and self.p.poll() is None:
            time.sleep(0.05)
        self.mounted = os.path.ismount(self.mnt)

    def text(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def close(self, wait=30):
        if self.p.poll() is None:
            unmount(self.mnt)
        try:
            rc = self.p.wait(wait)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        umount_once(self.mnt, lazy=True)
        for _ in range(50):
            if not os.path.ismount(self.mnt):
                break
            time.sleep(0.1)
        os.rmdir(self.mnt)
        self.log.close()
        return rc


def read_bytes(path):
    """A file's bytes, read unbuffered: Python's buffered open asks the
    file isatty(), an ioctl that FUSE sends to the daemon on every open
    (it never learns that the daemon has none). Reading 3,000 small
    tensors already in the page cache took 0.10 s so, 0.19-0.26 s with it."""
    with open(path, "rb", buffering=0) as f:
        return f.readall()


def made_on_open(t):
    """Whether a tensor's served bytes are made from others, not stored as
    served anywhere: decoded from another encoding (ONNX varints), or a
    compressed zip member (its offset is that of the compressed data)."""
    return bool(t.get("decoded")) or t.get("storage") in ("deflate", "zstd")


def stored_path(model, t):
    """The file a tensor's `offset` is in: the model file, or the external
    file of its `location` beside it (ONNX)."""
    return os.path.join(os.path.dirname(model), t["location"]) if "location" in t else model


# The formats whose table the generic checks (format_checks.py) check
# offset by offset (with made_on_open and stored_path, as stored_bytes reads).
STORED_FORMATS = {"rten", "ptd", "tensorbuffers", "safetensors", "numpy", "onnx", "onnx-tensor",
                  "pytorch", "gguf", "tflite", "tfjs", "flax", "pte", "hdf5",
                  "openvino", "torchscript"}


def stored_bytes(model, fmt, t):
    """A tensor's bytes read from the model file itself, as model.json
    places them; None where they are not stored as served (or the model
    is a folder, a carton, a problem tensor): read those through the mount.
    Tests whose subject is a produced file (a .npy twin, an f32 view)
    take the tensor's bytes so, without another open through FUSE."""
    if (fmt not in STORED_FORMATS or not os.path.isfile(model) or t.get("problem")
            or t.get("dtype") == "string" or made_on_open(t) or not t.get("contiguous", True)
            or not isinstance(t.get("offset"), int) or not isinstance(t.get("nbytes"), int)):
        return None
    try:
        fd = os.open(stored_path(model, t), os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.pread(fd, t["nbytes"], t["offset"]) if t["nbytes"] else b""
    finally:
        os.close(fd)
    return data if len(data) == t["nbytes"] else None


def np_load(np, path, **kw):
    """np.load of a path, through an unbuffered file (see read_bytes); not
    for mmap_mode, which needs the path."""
    with open(path, "rb", buffering=0) as f:
        return np.load(f, **kw)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def walk_tree(root):
    """{relative path: size or None for directories}, as `modelfs-ls` lists."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs:
            out[os.path.relpath(os.path.join(d, n), root)] = None
        for n in files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = os.stat(p).st_size
    return out


def xattrs_of(path):
    """{name: value} of every xattr of `path`, or "errno N"."""
    try:
        return {k: os.getxattr(path, k) for k in sorted(os.listxattr(path))}
    except OSError as e:
        return "errno %d" % e.errno


def same_mounts(c, what, got, want):
    """Two mounted trees the same: names, sizes, the bytes and xattrs of
    every file (`want`, a model mounted from its local file). The bytes
    are read first: a file made on open (stats.tsv) has its size once
    read, and `want` may have been read before."""
    differ = []
    # `want` mounted alone has its files view; `got`, a model among
    # several, has it in the mount's files/ instead.
    for p, size in sorted(without_view(walk_tree(want), walk_tree(got)).items()):
        gp, wp = os.path.join(got, p), os.path.join(want, p)
        if xattrs_of(gp) != xattrs_of(wp) or (size is not None and
                                             read_or_errno(gp) != read_or_errno(wp)):
            differ.append(p)
    tg = walk_tree(got)
    tw = without_view(walk_tree(want), tg)
    odd = sorted(p for p in set(tg) | set(tw) if tg.get(p, -1) != tw.get(p, -1))
    c.check(not odd, "%s: tree, against the local file's mount: %d paths differ: %s"
            % (what, len(odd), [(p, tg.get(p, "absent"), tw.get(p, "absent")) for p in odd[:4]]))
    c.check(not differ, "%s: %d files differ in bytes or xattrs: %s" % (what, len(differ),
                                                                       differ[:4]))


def without_view(alone, got):
    """`alone` ({path: ...} of a model mounted alone) without its files
    view (files/: the model file, or a model folder's files), which that
    model's folder in a mount of several has not (the mount's files/ has
    them): unless `got` (that folder's tree) has a files/ too, a Carton's
    own (its members)."""
    if "files" in got:
        return alone
    return {k: v for k, v in alone.items() if k != "files" and not k.startswith("files/")}


def ls_tree(modelfs_ls, model, env=None):
    """Parses `modelfs-ls MODEL`: "f SIZE PATH" / "d - PATH/" lines."""
    return ls_tree_args(modelfs_ls, [model], env)


def ls_tree_args(modelfs_ls, args, env=None):
    """The same for `modelfs-ls ARGS` (e.g. several models and "--")."""
    r = subprocess.run([modelfs_ls, *args], capture_output=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("modelfs-ls exited %d: %s" % (r.returncode, r.stderr.decode(errors="replace")))
    out = {}
    for line in r.stdout.decode("utf-8", "surrogateescape").splitlines():
        kind, size, path = line.split(None, 2)
        out[path.rstrip("/")] = None if kind == "d" else int(size)
    return out


def ls_sums(modelfs_ls, model, paths, env=None):
    """One `modelfs-ls --sha256 MODEL PATH...`: ({path: (sha256, size)},
    exit code, stderr); a PATH it could not read is not in the dict."""
    if not paths:
        return {}, 0, ""
    r = subprocess.run([modelfs_ls, "--sha256", model] + list(paths), capture_output=True, env=env)
    sums = {}
    for line in r.stdout.decode("utf-8", "surrogateescape").splitlines():
        sha, size, path = line.split("  ", 2)
        sums[path] = (sha, int(size))
    return sums, r.returncode, r.stderr.decode("utf-8", "replace").strip()


def ls_sums_args(modelfs_ls, args, paths, env=None):
    """ls_sums with several models (`modelfs-ls --sha256 A B -- PATH...`)."""
    r = subprocess.run([modelfs_ls, "--sha256"] + list(args) + list(paths), capture_output=True,
                       env=env)
    sums = {}
    for line in r.stdout.decode("utf-8", "surrogateescape").splitlines():
        sha, size, path = line.split("  ", 2)
        sums[path] = (sha, int(size))
    return sums, r.returncode, r.stderr.decode("utf-8", "replace").strip()


def path_chunks(paths, limit=512 << 10):
    """(index of the first, paths) for `paths` in runs of up to `limit`
    bytes of arguments (at least one path each; a quarter of Linux's
    ARG_MAX): as few modelfs-ls runs as the argument list allows, where
    each run loads every model again."""
    i = 0
    while i < len(paths):
        j, size = i, 0
        while j < len(paths):
            n = len(paths[j].encode("utf-8", "surrogateescape")) + 1
            if size + n > limit:
                break
            size += n
            j += 1
        j = max(j, i + 1)
        yield i, paths[i:j]
        i = j


def expected_models(c, dirs, formats):
    """(model path, expectation) for every NAME.expect.json of one of
    `formats` in `dirs`; a dir that does not exist is skipped, visibly."""
    for d in dirs:
        if not os.path.isdir(d):
            c.skip("%s is absent: its models are not checked" % d)
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith(".expect.json"):
                continue
            model = os.path.join(d, f[:-len(".expect.json")])
            with open(os.path.join(d, f)) as fh:
                expect = json.load(fh)
            if expect.get("format") in formats and os.path.exists(model):
                yield model, expect


def npy_descr(v):
    """An .npy descr as JSON has it (lists for tuples) back to what np.save
    writes: a list of fields, each a tuple, a (title, name) pair and a
    shape tuples too."""
    if isinstance(v, str):
        return v
    fields = []
    for f in v:
        field = (tuple(f[0]) if isinstance(f[0], list) else f[0], npy_descr(f[1]))
        if len(f) == 3:
            field += (tuple(f[2]) if isinstance(f[2], list) else f[2],)
        fields.append(field)
    return fields


def npy_descr_dtype(v):
    """numpy's dtype for such a descr, read by numpy itself."""
    import numpy as np
    return np.lib.format.descr_to_dtype(npy_descr(v))


def flatc_decode(schema, data, tmp):
    """Decodes a flatbuffer with Debian's flatc and one of our schemas: an
    independent reader to check the drivers against."""
    src = os.path.join(tmp, "m.bin")
    with open(src, "wb") as f:
        f.write(data)
    subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary", "--defaults-json",
                    "-o", tmp, schema, "--", src], check=True, capture_output=True)
    with open(os.path.join(tmp, "m.json"), encoding="utf-8") as f:
        return json.load(f)


def fail_main(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def take_part(args, parts):
    """The parts a test split into ctest cases runs: {PART} for a
    `--part=PART` at the head of `args` (taken off it), else all of
    `parts`; an unknown one ends the test (fail_main)."""
    if not (args and args[0].startswith("--part=")):
        return set(parts)
    part = args.pop(0)[len("--part="):]
    if part not in parts:
        fail_main("--part: one of %s" % ", ".join(parts))
    return {part}


class Test:
    """What main() hands a test's body: the build folder, its two
    programs, the environment for them (sanitizer reports into `logdir`)
    and the arguments after BUILD_DIR (a list the body may take from:
    take_part, take_shard)."""

    def __init__(self, build, args, logdir):
        self.build = build
        self.modelfs = os.path.join(build, "modelfs")
        self.modelfs_ls = os.path.join(build, "modelfs-ls")
        self.args = args
        self.logdir = logdir
        self.env = sanitizer_env(logdir)
        self.sanitized = sanitized(build)


def main(name, body, doc=None, min_args=0, one_cpu=False, mounts=True, argv=None):
    """The main() of a mount test, written once: `TEST.py BUILD_DIR ARGS...`
    with at least `min_args` ARGS (else `doc`, the usage, and exit 2); a
    Checker named `name`; a visible skip (exit 77) when this machine
    cannot mount and `mounts` says the test only mounts; each mount on one
    CPU when `one_cpu` (mounts_on_one_cpu: tests that read many files one
    at a time); body(c, test) with a Test; then one failed check per
    sanitizer report, the summary line, the exit code. Use as
    `sys.exit(mfstest.main(...))`."""
    argv = sys.argv if argv is None else argv
    if len(argv) < 2 + min_args:
        print(doc or "usage: %s BUILD_DIR ..." % os.path.basename(argv[0]), file=sys.stderr)
        return 2
    c = Checker(name)
    if one_cpu:
        mounts_on_one_cpu()
    if mounts and not can_mount():
        c.skip("no /dev/fuse or fusermount3: cannot mount here")
        return c.finish()
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    t = Test(argv[1], list(argv[2:]), logdir)
    body(c, t)
    check_sanitizer_reports(c, logdir)
    return c.finish()
