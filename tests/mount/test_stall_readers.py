#!/usr/bin/env python3
"""1,000 readers of a remote model whose server stalls after the mount
(rangeserver.py's "stall": the headers, then nothing): a read that waits
for remote bytes registers on its blocks and holds no thread of the
daemon (formats/source/http_loop.h), so while they all wait

  - the daemon's thread count (/proc/PID/status Threads:) stays <= 32
    (before the loop: a thread per waiting read, 500 and more);
  - `ls -lR` of the mount answers at once (< 0.5 s);
  - SIGTERM ends the daemon within 1 s, every reader answered (EIO);
  - so does an unmount: forced (umount2 with MNT_FORCE, as `umount -f`),
    since a plain one with files open is refused (EBUSY) whatever the
    daemon does.

usage: test_stall_readers.py BUILD_DIR
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mfstest  # noqa: E402
import rangeserver  # noqa: E402

READERS = 1000
MAX_THREADS = 32
TENSORS = 4
TENSOR_BYTES = 16 << 20


# Prints the time (seconds since 1970) when process $1 ends or is a zombie.
WATCH = ('while [ -e /proc/$1 ] && [ "$(cut -d" " -f3 /proc/$1/stat 2>/dev/null)" != Z ]; '
         'do sleep 0.01; done; date +%s.%N')


def threads_of(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def force_unmount(mnt):
    """umount2(mnt, MNT_FORCE), as `umount -f` makes it (without the
    tool's retries): the kernel aborts the FUSE connection, the daemon's
    session ends; the mount itself stays, busy, until the readers close."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(os.fsencode(mnt), 1)


def start_readers(mnt, results):
    """READERS threads, each one pread of 4 KiB at its own offset of one
    of the tensors (shared descriptors: the test's own limits stay far);
    results[i] is the errno it got (0: bytes), None while it waits."""
    fds = [os.open(os.path.join(mnt, "tensors", "t%d" % t), os.O_RDONLY)
           for t in range(TENSORS)]
    step = TENSOR_BYTES * TENSORS // READERS // 4096 * 4096

    def reader(i):
        off = i * step + 512
        try:
            os.pread(fds[off // TENSOR_BYTES], 4096, off % TENSOR_BYTES)
            results[i] = 0
        except OSError as e:
            results[i] = e.errno

    threading.stack_size(256 << 10)
    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(READERS)]
    for th in threads:
        th.start()
    return threads, fds


def stalled_mount(c, build, srv, name, how, slow, env):
    """Mounts the stalled model in the foreground, starts the readers,
    checks threads and ls while they wait, then ends the daemon by `how`
    ("sigterm" or "unmount") and checks it is gone within 1 s."""
    fg = mfstest.Foreground(os.path.join(build, "modelfs"),
                            srv.url + "/fault/stall/%s.safetensors" % name, env=env)
    if not c.check(fg.mounted, "%s: mounted (%s)" % (how, fg.text().strip())):
        fg.close(5)
        return
    pid = fg.p.pid
    results = [None] * READERS
    threads, fds = [], []
    try:
        os.stat(os.path.join(fg.mnt, "tensors", "t0"))   # loaded: the first block came
        before = len(srv.log)
        threads, fds = start_readers(fg.mnt, results)
        # Every reader started and waiting on the server: the most the
        # daemon has while they do.
        peak = 0
        end = time.time() + 1.5
        while time.time() < end:
            peak = max(peak, threads_of(pid))
            time.sleep(0.05)
        waiting = sum(r is None for r in results)
        c.check(len(srv.log) > before, "%s: the readers asked the server for bytes" % how)
        c.check(waiting >= READERS * 9 // 10,
                "%s: %d of %d readers still waiting on the stalled server" %
                (how, waiting, READERS))
        c.check(peak <= MAX_THREADS, "%s: the daemon had %d threads with %d readers waiting "
                "(at most %d)" % (how, peak, waiting, MAX_THREADS))
        t0 = time.time()
        r = subprocess.run(["ls", "-lR", fg.mnt], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=30)
        took = time.time() - t0
        print("%s: %d readers waiting, daemon threads at most %d, ls -lR %.2f s" %
              (how, waiting, peak, took), flush=True)
        c.check(r.returncode == 0 and took < 0.5 * slow,
                "%s: ls -lR with the readers waiting: exit %d in %.2f s (at most %.1f)" %
                (how, r.returncode, took, 0.5 * slow))
        # When the daemon ends, told by a process of its own: this one's
        # 1,000 threads, all answered at once, keep its main thread from
        # looking for a while.
        watch = subprocess.Popen(["sh", "-c", WATCH, "watch", str(pid)], stdout=subprocess.PIPE,
                                 text=True)
        time.sleep(0.1)
        t0 = time.time()
        if how == "sigterm":
            os.kill(pid, signal.SIGTERM)
        else:
            force_unmount(fg.mnt)
        try:
            out, _ = watch.communicate(timeout=15)
            took = float(out.strip()) - t0
            gone = True
        except (subprocess.TimeoutExpired, ValueError):
            watch.kill()
            watch.wait()
            gone, took = False, 99.0
        print("%s: the daemon ended after %.2f s" % (how, took), flush=True)
        c.check(gone and took < 1.0 * slow, "%s: the daemon ended %.2f s after it (at most "
                "%.0f s)" % (how, took, 1.0 * slow))
        for th in threads:
            th.join(max(0.0, t0 + 15 - time.time()))
        # Those whose bytes came at mount (the first block) have them.
        c.check(all(r is not None for r in results) and sum(r == 0 for r in results) <= 8,
                "%s: every reader answered, with an error (%d still waiting, %d with bytes)" %
                (how, sum(r is None for r in results), sum(r == 0 for r in results)))
    finally:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        fg.close(5)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = argv[1]
    c = mfstest.Checker("stalled server, 1,000 readers")
    if not mfstest.can_mount():
        c.skip("no /dev/fuse")
        return c.finish()
    root = mfstest.scratch("modelfs-stall-")
    for name in ("a", "b"):
        mfstest.write_safetensors(os.path.join(root, name + ".safetensors"),
                                  {"t%d" % t: os.urandom(TENSOR_BYTES) for t in range(TENSORS)})
    srv = rangeserver.start(root)
    # Under the sanitizers everything is slower: the times get twice the room.
    slow = 2.0 if mfstest.sanitized(build) else 1.0
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    env = mfstest.sanitizer_env(logdir)
    try:
        stalled_mount(c, build, srv, "a", "sigterm", slow, env)
        stalled_mount(c, build, srv, "b", "unmount", slow, env)
    finally:
        srv.stop()
        shutil.rmtree(root, ignore_errors=True)
    mfstest.check_sanitizer_reports(c, logdir)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
