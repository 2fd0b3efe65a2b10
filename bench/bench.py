#!/usr/bin/python3
"""modelfs's benchmark suite (issue 11, SPEC §6): one command, every figure a
ratio against a baseline measured in the same run, on the same bytes, on the
same machine; medians of --runs runs; PASS/MISS for every target.

    sudo /usr/bin/python3 bench/bench.py BUILD_DIR [--quick] [--runs N] [--cache DIR]
                                         [--only sequential,random,tensors,zstd,sums]

Rows (full sizes; --quick shrinks every size and makes one run):
  sequential   one 512 MiB tensor read with 1 MiB reads (open included):
               direct (the same bytes as a plain file on the local disk),
               modelfs (.rten), squashfuse_ll (uncompressed squashfs image),
               fuse-zip (Stored zip member).
               R1: fresh mount, page cache dropped (after the mount)
               R3: fresh mount, the backing file (model, image, zip) cached
               R2: the same file again on the R3 mount
               direct R1 / direct warm: the plain file dropped / cached
  random 4k    bench-randread: 4 KiB preads at offsets fixed by a seed, the
               same offsets on every target, 1 and 4 threads; the backing
               file cached, each mount fresh (its own cache empty); direct =
               the tensor's bytes inside the model file
  ls -l        `ls -l tensors/` of a model with 100,000 and with 1,000,000
               tensors on a fresh mount (model file cached), vs `ls -l` of an
               ext4 folder with as many empty files of the same names, page
               cache dropped (and again cached, for information); LC_ALL=C
  mount, RSS   `modelfs MODEL MNT` until it returns (mount usable), model
               file cached; the daemon's RssAnon right after, and after
               `ls -l`; the peak RSS of the whole run: ru_maxrss of one
               `modelfs -f` run (mount, `ls -l`, unmount), and of the daemon
               mode's parent plus the daemon's VmHWM (GNU time -f %M)
  zstd         a 256 MiB zstd carton member (MANIFEST checked): open and
               read on a fresh mount (decoded on open), carton cached, vs
               `zstd -d -c` of the same frame to /dev/null, the .zst cached
  SHA256SUMS   `cat SHA256SUMS` on a fresh mount of a model of 64 tensors of
               8 MiB (cached) vs `sha256sum` of the same 64 tensors as files
               on the local disk (cached)

Inputs are generated once and kept under --cache (default
/var/tmp/modelfs-bench-cache), one folder per input and size. Needs root (to
drop the page cache), /dev/fuse, and the peers: scripts/install-deps.sh
--bench. Exit 0 when every row was measured (MISS rows included), 1 when the
harness failed, 77 when it cannot run here.
"""
import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "scripts"))
sys.path.insert(0, os.path.join(here, "..", "tests", "mount"))
import gen_rten  # noqa: E402
import mfstest  # noqa: E402
import numpy as np  # noqa: E402

SKIP = 77
CHUNK = 1 << 20
MIB = 1 << 20
# Bump when a generator changes what it writes: cached inputs are remade.
INPUTS_VERSION = 1
PEERS = ("squashfuse_ll", "fuse-zip", "mksquashfs", "zstd", "sha256sum", "fusermount3", "/usr/bin/time")

FULL = {"big_mib": 512, "zstd_mib": 256, "sums": (64, 8), "many": (100000, 1000000),
        "runs": 3, "rand_reads": 50000}
QUICK = {"big_mib": 64, "zstd_mib": 32, "sums": (8, 8), "many": (5000, 10000),
         "runs": 1, "rand_reads": 2000}


def log(msg):
    print("bench: %s" % msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- inputs

def cached(cache, name, make):
    """The folder `cache`/`name`, made by make(folder) unless a previous run
    finished making it (its .done stamp)."""
    d = os.path.join(cache, name)
    if os.path.exists(os.path.join(d, ".done")):
        return d
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    t0 = time.perf_counter()
    log("making %s ..." % d)
    make(d)
    with open(os.path.join(d, ".done"), "w") as f:
        f.write("%s\n" % time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    log("made %s in %.1f s" % (name, time.perf_counter() - t0))
    return d


def write_rten(d, name, consts):
    """d/name: an RTen V2 model of `consts` (no expectation file)."""
    gen_rten.write_model(d, name, gen_rten.Graph(consts))
    os.unlink(os.path.join(d, name + ".expect.json"))


def make_big(d, mib):
    """The same `mib` MiB of tensor bytes four ways: tensor.bin (plain
    file), model.rten (tensor "big.weight"), image.sqfs (uncompressed
    squashfs holding tensor.bin), model.zip (tensor.bin, Stored)."""
    data = np.random.default_rng(11).bytes(mib * MIB)
    raw = os.path.join(d, "tensor.bin")
    with open(raw, "wb") as f:
        f.write(data)
    write_rten(d, "model.rten", [gen_rten.Const("big.weight", np.frombuffer(data, dtype="<f4"))])
    del data
    subprocess.run(["mksquashfs", raw, os.path.join(d, "image.sqfs"), "-noI", "-noD", "-noF",
                    "-noX", "-no-xattrs", "-all-root", "-noappend", "-no-progress", "-quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    with zipfile.ZipFile(os.path.join(d, "model.zip"), "w", zipfile.ZIP_STORED) as z:
        z.write(raw, "tensor.bin")


def tensor_name(i):
    return "layer%07d.weight" % i


def make_many(d, n):
    """model.rten with `n` small tensors (3 to 21 float32: inline and
    external), and ext4/ with `n` empty files of the same names."""
    base = np.arange(64, dtype="<f4")
    write_rten(d, "model.rten", [gen_rten.Const(tensor_name(i), base[:i % 7 * 3 + 3]) for i in range(n)])
    folder = os.path.join(d, "ext4")
    os.mkdir(folder)
    for i in range(n):
        os.close(os.open(os.path.join(folder, tensor_name(i)), os.O_WRONLY | os.O_CREAT, 0o644))


def make_carton(d, mib):
    """model.carton: one zstd tensor "big.weight" of `mib` MiB of float32
    normals (MANIFEST, model/main.py), and member.zst: the same frame."""
    import gen_carton
    arr = np.random.default_rng(12).standard_normal(mib * MIB // 4).astype("<f4")
    c = gen_carton.Carton(gen_carton.runner_toml("bench/zstd"), "zstd")
    c.tensor("big.weight", arr)
    c.add("model/main.py", b"def get_model():\n    return None\n")
    files = c.finish()
    members = c.members(files)
    frame = gen_carton.compress("zstd", files["tensor_data/tensor_0.bin"])
    for m in members:
        if m.name == b"tensor_data/tensor_0.bin":
            m.comp = frame
    with open(os.path.join(d, "model.carton"), "wb") as f:
        f.write(gen_carton.zip_bytes(members))
    with open(os.path.join(d, "member.zst"), "wb") as f:
        f.write(frame)


def make_sums(d, count, mib):
    """model.rten with `count` tensors of `mib` MiB, and files/ with each
    tensor's bytes as a file of the same name."""
    rng = np.random.default_rng(13)
    os.mkdir(os.path.join(d, "files"))
    consts = []
    for i in range(count):
        data = rng.bytes(mib * MIB)
        with open(os.path.join(d, "files", "t%03d" % i), "wb") as f:
            f.write(data)
        consts.append(gen_rten.Const("t%03d" % i, np.frombuffer(data, dtype="<f4")))
    write_rten(d, "model.rten", consts)


def input_folder(cache, p, key):
    """The cached folder of one input: "big", "carton", "sums" or a number
    of tensors; made first if needed."""
    v = INPUTS_VERSION
    if key == "big":
        return cached(cache, "big-%dM-v%d" % (p["big_mib"], v), lambda d: make_big(d, p["big_mib"]))
    if key == "carton":
        return cached(cache, "carton-%dM-v%d" % (p["zstd_mib"], v), lambda d: make_carton(d, p["zstd_mib"]))
    if key == "sums":
        return cached(cache, "sums-%dx%dM-v%d" % (p["sums"] + (v,)), lambda d: make_sums(d, *p["sums"]))
    return cached(cache, "many-%d-v%d" % (key, v), lambda d: make_many(d, key))


# ---------------------------------------------------------------- mounts

class MountFailed(RuntimeError):
    """A mount command that failed: its exit code, stderr and ru_maxrss."""

    def __init__(self, argv, code, message, maxrss):
        super().__init__("%s exited %d: %s" % (" ".join(argv), code, message))
        self.code, self.message, self.maxrss = code, message, maxrss


def read_maxrss(path):
    """Bytes: the last line of GNU time's `-f %M` output (kB)."""
    with open(path) as f:
        words = f.read().split()
    return int(words[-1]) * 1024 if words else 0


class Mounts:
    """Every mount and foreground daemon this run made, so that all of them
    are gone at the end, whatever happened."""

    def __init__(self, build, tmp):
        self.modelfs = os.path.join(build, "modelfs")
        self.tmp = tmp
        self.live = []      # mount points
        self.procs = []     # pids of foreground daemons not yet reaped
        self.n = 0

    def mountpoint(self):
        self.n += 1
        d = os.path.join(self.tmp, "mnt%d" % self.n)
        os.mkdir(d)
        return d

    def spawn(self, argv, maxrss=False):
        """Starts argv (stdout to /dev/null, stderr to a file); (pid, path
        of its stderr, path where /usr/bin/time writes argv's ru_maxrss).
        With maxrss, argv runs under GNU time: a child spawned by this
        (large) Python process would inherit its RSS high-water mark
        through exec, time's is a few MB."""
        err = os.path.join(self.tmp, "stderr%d" % self.n)
        rss = os.path.join(self.tmp, "maxrss%d" % self.n)
        if maxrss:
            argv = ["/usr/bin/time", "-f", "%M", "-o", rss] + argv
        actions = [(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)]
        return os.posix_spawn(argv[0], argv, os.environ, file_actions=actions), err, rss

    def run_mount(self, argv, mnt):
        """Runs a daemonizing mount command; (seconds until it returned,
        its ru_maxrss in bytes)."""
        t0 = time.perf_counter()
        pid, err, rss = self.spawn(argv, maxrss=True)
        _, status = os.waitpid(pid, 0)
        seconds = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0 or not os.path.ismount(mnt):
            with open(err) as f:
                raise MountFailed(argv, os.waitstatus_to_exitcode(status), f.read().strip(),
                                  read_maxrss(rss))
        self.live.append(mnt)
        return seconds, read_maxrss(rss)

    @contextlib.contextmanager
    def mount(self, kind, image):
        """Mounts `image` with modelfs, squashfuse_ll or fuse-zip; yields a
        dict: mnt, seconds (until the command returned), parent_maxrss."""
        mnt = self.mountpoint()
        argv = {"modelfs": [self.modelfs, image, mnt],
                "squashfuse_ll": ["squashfuse_ll", image, mnt],
                "fuse-zip": ["fuse-zip", "-r", image, mnt]}[kind]
        try:
            seconds, maxrss = self.run_mount(argv, mnt)
            yield {"mnt": mnt, "seconds": seconds, "parent_maxrss": maxrss}
        finally:
            self.unmount(mnt)

    def unmount(self, mnt):
        """Unmounts `mnt`, waits for a modelfs daemon serving it to end,
        removes the mount point."""
        pid = mfstest.daemon_pid(mnt) if os.path.ismount(mnt) else None
        if not mfstest.unmount(mnt):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        if pid is not None and not mfstest.pid_gone(pid, 60):
            log("daemon %d still running 60 s after unmounting %s" % (pid, mnt))
        if mnt in self.live:
            self.live.remove(mnt)
        with contextlib.suppress(OSError):
            os.rmdir(mnt)

    def foreground(self, model, work):
        """One `modelfs -f MODEL MNT` run: mount, work(mnt), unmount; the
        run's ru_maxrss in bytes (the whole process: load and serve)."""
        mnt = self.mountpoint()
        pid, err, rss = self.spawn([self.modelfs, "-f", model, mnt], maxrss=True)
        self.procs.append(pid)
        self.live.append(mnt)
        try:
            end = time.monotonic() + 600
            while not os.path.ismount(mnt):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    self.procs.remove(pid)
                if done or time.monotonic() > end:
                    # Not yet reaped (a timeout): close() ends it.
                    with open(err) as f:
                        raise RuntimeError("modelfs -f did not mount: %s" % f.read().strip())
                time.sleep(0.01)
            os.stat(mnt)
            work(mnt)
        finally:
            self.unmount(mnt)
        _, status = os.waitpid(pid, 0)
        self.procs.remove(pid)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError("modelfs -f exited %d" % os.waitstatus_to_exitcode(status))
        return read_maxrss(rss)

    def close(self):
        for mnt in list(self.live):
            log("cleaning up %s" % mnt)
            self.unmount(mnt)
        for pid in list(self.procs):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            self.procs.remove(pid)


# ---------------------------------------------------------------- timing

def timed_read(path):
    """Seconds to open `path` and read it whole with 1 MiB reads; (seconds,
    bytes read)."""
    buf = bytearray(CHUNK)
    mv = memoryview(buf)
    t0 = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        total = 0
        while True:
            n = os.readv(fd, [mv])
            if n <= 0:
                break
            total += n
        return time.perf_counter() - t0, total
    finally:
        os.close(fd)


def warm(*paths):
    """Reads files whole so that they are in the page cache."""
    for p in paths:
        timed_read(p)


def timed(argv, **kw):
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t0


def first_last_mib(path):
    with open(path, "rb") as f:
        head = f.read(MIB)
        f.seek(-MIB, os.SEEK_END)
        return head, f.read(MIB)


def status_bytes(pid, key):
    """A /proc/PID/status figure in bytes (RssAnon, VmHWM)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no %s for pid %d" % (key, pid))


def med(xs):
    return statistics.median(xs)


# ---------------------------------------------------------------- the table

class Table:
    """Rows of (what, figure, ratio, target, PASS/MISS)."""

    def __init__(self):
        self.rows = []

    def section(self, title):
        self.rows.append(("**%s**" % title, "", "", "", ""))

    def info(self, what, figure, ratio=""):
        self.rows.append((what, figure, ratio, "", ""))
        log("%s: %s %s" % (what, figure, ratio))

    def target(self, what, figure, ratio, target, ok):
        self.rows.append((what, figure, ratio, target, "PASS" if ok else "MISS"))
        log("%s: %s %s (%s: %s)" % (what, figure, ratio, target, "PASS" if ok else "MISS"))

    def markdown(self):
        out = ["| row | figure | ratio | target | |", "| --- | ---: | ---: | --- | --- |"]
        out += ["| %s |" % " | ".join(c.replace("|", "\\|") for c in r) for r in self.rows]
        return "\n".join(out)

    def verdicts(self):
        v = [r[4] for r in self.rows if r[4]]
        return v.count("PASS"), v.count("MISS")


def gbps(nbytes, seconds):
    return "%.2f GB/s" % (nbytes / seconds / 1e9)


def mb(nbytes):
    return "%.0f MB" % (nbytes / 1e6)


def x(r):
    return "%.2fx" % r


# ---------------------------------------------------------------- rows

def bench_sequential(t, ms, big, runs):
    """R1, R3, R2 of one tensor: direct, modelfs, squashfuse_ll, fuse-zip."""
    raw = os.path.join(big, "tensor.bin")
    peers = {"modelfs": (os.path.join(big, "model.rten"), "tensors/big.weight"),
             "squashfuse_ll": (os.path.join(big, "image.sqfs"), "tensor.bin"),
             "fuse-zip": (os.path.join(big, "model.zip"), "tensor.bin")}
    want = first_last_mib(raw)
    nbytes = os.path.getsize(raw)
    s = {k: [] for k in ("direct R1", "direct warm")}
    for k in peers:
        s.update({k + " R1": [], k + " R3": [], k + " R2": []})
    rss = []
    for run in range(runs):
        log("sequential reads, run %d of %d" % (run + 1, runs))
        mfstest.drop_caches()
        s["direct R1"].append(timed_read(raw)[0])
        warm(raw)
        s["direct warm"].append(timed_read(raw)[0])
        for k, (image, rel) in peers.items():
            with ms.mount(k, image) as m:
                mfstest.drop_caches()
                sec, n = timed_read(os.path.join(m["mnt"], rel))
                if n != nbytes:
                    raise RuntimeError("%s R1 read %d bytes, want %d" % (k, n, nbytes))
                s[k + " R1"].append(sec)
            warm(image)
            with ms.mount(k, image) as m:
                p = os.path.join(m["mnt"], rel)
                s[k + " R3"].append(timed_read(p)[0])
                s[k + " R2"].append(timed_read(p)[0])
                if first_last_mib(p) != want:
                    raise RuntimeError("%s serves other bytes than tensor.bin" % k)
                if k == "modelfs":
                    rss.append(status_bytes(mfstest.daemon_pid(m["mnt"]), "RssAnon"))
    speed = {k: nbytes / med(v) for k, v in s.items()}
    t.section("Sequential read of one %d MiB tensor, 1 MiB reads, median of %d" % (nbytes // MIB, runs))
    t.info("direct R1: plain file, page cache dropped", gbps(nbytes, med(s["direct R1"])))
    t.info("direct warm: plain file, page cache", gbps(nbytes, med(s["direct warm"])))
    base = {"R1": speed["direct R1"], "R3": speed["direct warm"], "R2": speed["direct warm"]}
    goal = {"R1": 0.9, "R3": 0.4, "R2": 0.5}
    for r in ("R1", "R3", "R2"):
        k = "modelfs " + r
        ratio = speed[k] / base[r]
        t.target("%s vs direct %s" % (k, "R1" if r == "R1" else "warm"), gbps(nbytes, med(s[k])),
                 x(ratio), ">= %.1fx direct" % goal[r], ratio >= goal[r])
    for peer in ("squashfuse_ll", "fuse-zip"):
        for r in ("R1", "R3", "R2"):
            k = "%s %s" % (peer, r)
            t.info("%s vs direct %s" % (k, "R1" if r == "R1" else "warm"), gbps(nbytes, med(s[k])),
                   x(speed[k] / base[r]))
    for peer, factor in (("squashfuse_ll", 1.5), ("fuse-zip", 3.0)):
        for r in ("R1", "R3", "R2"):
            ratio = speed["modelfs " + r] / speed["%s %s" % (peer, r)]
            f = 1.0 if r == "R2" else factor
            t.target("modelfs %s vs %s %s" % (r, peer, r), "", x(ratio), ">= %.1fx" % f, ratio >= f)
    t.info("daemon RssAnon after reading the tensor twice", mb(max(rss)))


def randread(build, path, base, length, reads, threads):
    """bench-randread's (seconds, sum) for one target."""
    out = subprocess.run([os.path.join(build, "bench-randread"), path, str(base), str(length),
                          str(reads), str(threads), "11"], check=True, capture_output=True, text=True)
    f = dict(kv.split("=") for kv in out.stdout.split())
    return float(f["seconds"]), f["sum"]


def tensor_offset(ms, model, name):
    """The byte offset of tensor `name` in `model`, from its model.json."""
    with ms.mount("modelfs", model) as m:
        with open(os.path.join(m["mnt"], "model.json")) as f:
            doc = json.load(f)
    for e in doc["tensors"]:
        if e["name"] == name:
            return e["offset"], e["nbytes"]
    raise RuntimeError("%s: no tensor %s in model.json" % (model, name))


def bench_random(t, ms, build, big, runs, reads):
    """Random 4 KiB reads: the model file, modelfs, squashfuse_ll."""
    model = os.path.join(big, "model.rten")
    image = os.path.join(big, "image.sqfs")
    off, nbytes = tensor_offset(ms, model, "big.weight")
    length = nbytes // 4096 * 4096
    warm(model, image)
    t.section("Random 4 KiB reads of the same tensor, %d per thread, same offsets everywhere, "
              "backing file cached, each mount fresh, median of %d" % (reads, runs))
    for threads in (1, 4):
        secs = {"direct": [], "modelfs": [], "squashfuse_ll": []}
        sums = set()
        for run in range(runs):
            sec, s = randread(build, model, off, length, reads, threads)
            secs["direct"].append(sec)
            sums.add(s)
            for k, (img, rel) in (("modelfs", (model, "tensors/big.weight")),
                                  ("squashfuse_ll", (image, "tensor.bin"))):
                with ms.mount(k, img) as m:
                    sec, s = randread(build, os.path.join(m["mnt"], rel), 0, length, reads, threads)
                secs[k].append(sec)
                sums.add(s)
        if len(sums) != 1:
            raise RuntimeError("random reads: the targets served different bytes (%s)" % sums)
        iops = {k: reads * threads / med(v) for k, v in secs.items()}
        t.info("direct (model file), %d thread%s" % (threads, "s" if threads > 1 else ""),
               "%.0f reads/s" % iops["direct"])
        t.info("squashfuse_ll, %d thread%s" % (threads, "s" if threads > 1 else ""),
               "%.0f reads/s" % iops["squashfuse_ll"], x(iops["squashfuse_ll"] / iops["direct"]) + " direct")
        ratio = iops["modelfs"] / iops["squashfuse_ll"]
        t.target("modelfs, %d thread%s (ratio: vs squashfuse_ll; %s direct)" % (
            threads, "s" if threads > 1 else "", x(iops["modelfs"] / iops["direct"])),
            "%.0f reads/s" % iops["modelfs"], x(ratio), ">= 1.0x squashfuse_ll", ratio >= 1.0)


def bench_many(t, ms, folder, n, runs, scale):
    """Mount time, daemon memory and `ls -l` for a model of n tensors; the
    targets on mount time, memory and the peak apply to the largest model
    (`scale`). A model modelfs refuses is a result: its rows say so."""
    model = os.path.join(folder, "model.rten")
    ext4 = os.path.join(folder, "ext4")
    env = dict(os.environ, LC_ALL="C")
    s = {k: [] for k in ("ext4 cold", "ext4 warm", "mount", "ls")}
    rss_mounted, rss_ls, parent, hwm = [], [], [], []
    refused = None
    for run in range(runs):
        log("%d tensors, run %d of %d" % (n, run + 1, runs))
        mfstest.drop_caches()
        s["ext4 cold"].append(timed(["ls", "-l", ext4], env=env))
        s["ext4 warm"].append(timed(["ls", "-l", ext4], env=env))
        if refused:
            continue
        warm(model)
        try:
            with ms.mount("modelfs", model) as m:
                pid = mfstest.daemon_pid(m["mnt"])
                s["mount"].append(m["seconds"])
                parent.append(m["parent_maxrss"])
                rss_mounted.append(status_bytes(pid, "RssAnon"))
                s["ls"].append(timed(["ls", "-l", os.path.join(m["mnt"], "tensors")], env=env))
                rss_ls.append(status_bytes(pid, "RssAnon"))
                hwm.append(status_bytes(pid, "VmHWM"))
        except MountFailed as e:
            refused = e
    if not refused:
        log("%d tensors: one modelfs -f run for the peak" % n)
        fg = ms.foreground(model, lambda mnt: timed(["ls", "-l", os.path.join(mnt, "tensors")], env=env))
        peak = max(fg, max(parent) + max(hwm))
        peak_what = "-f %s; parent %s + daemon %s" % (mb(fg), mb(max(parent)), mb(max(hwm)))
    else:
        peak = refused.maxrss
        peak_what = "until it refused the model"
        log("%d tensors: refused: %s" % (n, refused))

    def row(what, figure, ratio, target, ok, always=False):
        if scale or always:
            t.target(what, figure, ratio, target, ok)
        else:
            t.info(what, figure, ratio)

    t.section("%s tensors (model file %s), median of %d" % (format(n, ","), mb(os.path.getsize(model)), runs))
    if refused:
        t.info("modelfs refused the model (exit %d)" % refused.code, refused.message[:300])
    t.info("ext4 folder, `ls -l`, page cache dropped", "%.2f s" % med(s["ext4 cold"]))
    t.info("ext4 folder, `ls -l`, cached", "%.2f s" % med(s["ext4 warm"]))
    what = "modelfs `ls -l tensors/`, fresh mount (ratio: time vs ext4 dropped)"
    if refused:
        row(what, "refused", "", "<= 1.0x ext4", False, always=True)
        row("mount time (model cached)", "refused", "", "<= 3 s", False)
        row("daemon RssAnon once mounted", "refused", "", "<= 150 MB", False)
        t.info("daemon RssAnon after `ls -l`", "refused")
    else:
        ratio = med(s["ls"]) / med(s["ext4 cold"])
        row(what, "%.2f s" % med(s["ls"]), x(ratio), "<= 1.0x ext4", ratio <= 1.0, always=True)
        row("mount time (model cached)", "%.2f s" % med(s["mount"]), "", "<= 3 s", med(s["mount"]) <= 3.0)
        row("daemon RssAnon once mounted", mb(med(rss_mounted)), "", "<= 150 MB", med(rss_mounted) <= 150e6)
        t.info("daemon RssAnon after `ls -l`", mb(med(rss_ls)))
    row("peak RSS of the run (%s)" % peak_what, mb(peak), "", "<= 1 GB", peak <= 1e9 and not refused)


def bench_zstd(t, ms, carton, runs):
    """First read of a zstd carton member vs zstd -d of the same frame."""
    model = os.path.join(carton, "model.carton")
    zst = os.path.join(carton, "member.zst")
    first, again, cli = [], [], []
    nbytes = None
    for run in range(runs):
        warm(model, zst)
        cli.append(timed(["zstd", "-d", "-q", "-c", zst]))
        with ms.mount("modelfs", model) as m:
            p = os.path.join(m["mnt"], "tensors", "big.weight")
            sec, nbytes = timed_read(p)
            first.append(sec)
            again.append(timed_read(p)[0])
    t.section("zstd carton member of %d MiB (MANIFEST checked), carton and .zst cached, median of %d" % (
        nbytes // MIB, runs))
    t.info("`zstd -d -c` of the same frame to /dev/null", gbps(nbytes, med(cli)))
    ratio = med(cli) / med(first)
    t.target("modelfs first read, fresh mount (open included)", gbps(nbytes, med(first)), x(ratio),
             ">= 0.8x zstd -d", ratio >= 0.8)
    t.info("modelfs second read, same mount", gbps(nbytes, med(again)))


def bench_sums(t, ms, sums, runs):
    """`cat SHA256SUMS` on a fresh mount vs sha256sum of the tensor files."""
    model = os.path.join(sums, "model.rten")
    files = sorted(os.path.join(sums, "files", f) for f in os.listdir(os.path.join(sums, "files")))
    total = sum(os.path.getsize(f) for f in files)
    local, cat = [], []
    for run in range(runs):
        warm(model, *files)
        local.append(timed(["sha256sum", *files]))
        with ms.mount("modelfs", model) as m:
            p = os.path.join(m["mnt"], "SHA256SUMS")
            cat.append(timed(["cat", p]))
            with open(p) as f:
                got = [line.split()[0] for line in f]
    want = [line.split()[0] for line in
            subprocess.run(["sha256sum", *files], check=True, capture_output=True, text=True).stdout.splitlines()]
    if got != want:
        raise RuntimeError("SHA256SUMS differs from sha256sum of the tensor files")
    t.section("SHA256SUMS of %d tensors, %d MiB in all, files cached, median of %d" % (
        len(files), total // MIB, runs))
    t.info("`sha256sum` of the tensor files on the local disk", "%.2f s" % med(local))
    t.info("`cat SHA256SUMS`, fresh mount (ratio: speed vs sha256sum)", "%.2f s" % med(cat),
           x(med(local) / med(cat)))


# ---------------------------------------------------------------- main

def machine(build, load):
    """Lines describing where and what was measured (`load`: the 1-minute
    load average before the run)."""
    def first(path, key):
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
        return "?"
    fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", "/var/tmp"],
                        capture_output=True, text=True).stdout.split()
    commit = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip()
    btype = "?"
    with contextlib.suppress(OSError):
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_BUILD_TYPE:"):
                    btype = line.split("=", 1)[1].strip()
    return ["machine: %s, %d cores, %.0f GB RAM, Linux %s; inputs on %s" % (
                first("/proc/cpuinfo", "model name"), os.cpu_count(),
                int(first("/proc/meminfo", "MemTotal").split()[0]) / 1e6, platform.release(),
                " ".join(fs) or "?"),
            "modelfs: %s, %s build (%s)" % (commit or "?", btype, os.path.abspath(build)),
            "date: %s; load average before the run: %.2f (other work on the machine is noise "
            "in every row)" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load)]


def can_run(build):
    """None, or why this machine cannot run the benchmark."""
    if os.geteuid() != 0:
        return "needs root (drop_caches, mounts)"
    if not os.path.exists("/dev/fuse"):
        return "needs /dev/fuse"
    for exe in ("modelfs", "bench-randread"):
        if not os.access(os.path.join(build, exe), os.X_OK):
            return "no %s in %s (build first)" % (exe, build)
    missing = [p for p in PEERS if shutil.which(p) is None]
    if missing:
        return "missing %s: run scripts/install-deps.sh --bench" % ", ".join(missing)
    return None


def interrupted(signum, frame):
    raise KeyboardInterrupt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--quick", action="store_true", help="small sizes, one run: checks the harness")
    ap.add_argument("--runs", type=int, help="runs per row (default 3, 1 with --quick)")
    ap.add_argument("--cache", default=os.environ.get("MODELFS_BENCH_CACHE", "/var/tmp/modelfs-bench-cache"),
                    help="where generated inputs are kept")
    ap.add_argument("--only", help="comma-separated sections: sequential, random, tensors, zstd, sums "
                                   "(default: all)")
    a = ap.parse_args()
    why = can_run(a.build)
    if why:
        print("bench: skipped: %s" % why)
        return SKIP
    p = dict(QUICK if a.quick else FULL)
    if a.runs:
        p["runs"] = a.runs
    signal.signal(signal.SIGTERM, interrupted)
    os.makedirs(a.cache, exist_ok=True)

    def folder(key):
        return input_folder(a.cache, p, key)

    sections = [
        ("sequential", "sequential reads", lambda: bench_sequential(t, ms, folder("big"), p["runs"])),
        ("random", "random reads",
         lambda: bench_random(t, ms, a.build, folder("big"), p["runs"], p["rand_reads"]))]
    sections += [("tensors", "%d tensors" % n,
                  lambda n=n: bench_many(t, ms, folder(n), n, p["runs"], n == max(p["many"])))
                 for n in p["many"]]
    sections += [("zstd", "zstd member", lambda: bench_zstd(t, ms, folder("carton"), p["runs"])),
                 ("sums", "SHA256SUMS", lambda: bench_sums(t, ms, folder("sums"), p["runs"]))]
    only = set(a.only.split(",")) if a.only else {k for k, _, _ in sections}
    unknown = only - {k for k, _, _ in sections}
    if unknown:
        ap.error("--only: unknown section %s" % ", ".join(sorted(unknown)))
    sections = [(name, run) for k, name, run in sections if k in only]
    # Every input first: generation is not part of any measurement.
    for k in sorted(only, key=str):
        for key in {"sequential": ["big"], "random": ["big"], "tensors": p["many"],
                    "zstd": ["carton"], "sums": ["sums"]}[k]:
            folder(key)
    tmp = tempfile.mkdtemp(prefix="modelfs-bench-")
    ms = Mounts(a.build, tmp)
    t = Table()
    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    failed = []
    try:
        for name, run in sections:
            try:
                run()
            except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
                # The other sections still run; the exit status says so.
                traceback.print_exc()
                failed.append(name)
                t.section(name)
                t.target("FAILED: %s" % str(e)[:300], "", "", "measured", False)
    finally:
        ms.close()
        shutil.rmtree(tmp, ignore_errors=True)
    passed, missed = t.verdicts()
    print("\n".join(machine(a.build, load)))
    print("runs: %d per row (medians)%s%s; took %.0f s" % (
        p["runs"], "; --quick: small sizes, PASS/MISS only shows the harness works" if a.quick else "",
        "; only: %s" % a.only if a.only else "", time.perf_counter() - t0))
    print()
    print(t.markdown())
    print()
    print("targets: %d PASS, %d MISS" % (passed, missed))
    if failed:
        print("bench: failed sections: %s" % ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("bench: interrupted (everything unmounted)", file=sys.stderr)
        sys.exit(130)
