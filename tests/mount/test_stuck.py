#!/usr/bin/python3
"""A download that never ends must not freeze the mount (issue 7, item 2).

A carton's LINKS file points at a server on 127.0.0.1 that accepts and
never answers. Twelve readers open that file (more than libfuse's ten
worker threads); meanwhile `ls`, `stat`, `cat model.json`, an open of
another produced (deflate) member and of a stored tensor must all return
promptly; `kill -9` of the stuck readers must end them at once (no D
state); `fusermount3 -u` must then work (no EBUSY); and the daemon must
exit soon after, its download abandoned. Likewise a large zstd decode
must not hold up the open of another produced member.

usage: test_stuck.py BUILD_DIR
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import mfstest  # noqa: E402
import gen_carton  # noqa: E402

READERS = 12
PROMPT = 5.0   # seconds: the bug was "forever"


class Silent:
    """Accepts connections on 127.0.0.1 and never says a byte."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.stop = False
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        self.sock.settimeout(0.2)
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.conns.append(conn)
            except OSError:
                pass

    def close(self):
        self.stop = True
        for conn in self.conns:
            conn.close()
        self.sock.close()


def timed(fn):
    """(seconds, result or exception), giving up after PROMPT * 2."""
    out = {}

    def run():
        try:
            out["r"] = fn()
        except OSError as e:
            out["r"] = e
    t = threading.Thread(target=run, daemon=True)
    start = time.time()
    t.start()
    t.join(PROMPT * 2)
    return time.time() - start, out.get("r", TimeoutError("still waiting"))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def check(c, modelfs, env, work, srv):
    url = "http://127.0.0.1:%d/never" % srv.port
    blob, expect = gen_carton.links_carton([url], "stuck.carton")
    model = os.path.join(work, "stuck.carton")
    with open(model, "wb") as f:
        f.write(blob)
    links = os.path.join(work, "links")
    os.makedirs(links)
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    r = subprocess.run([modelfs, "-o", "links_dir=" + links, model, mnt], env=env,
                       capture_output=True, text=True, timeout=120)
    if not c.check(r.returncode == 0, "mount: %s" % r.stderr.strip()):
        os.rmdir(mnt)
        return
    pid = mfstest.daemon_pid(mnt)
    readers = []
    try:
        linked = os.path.join(mnt, "files", "model", "linked.bin")
        readers = [subprocess.Popen(["cat", linked], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL) for _ in range(READERS)]
        time.sleep(1.0)
        c.check(all(p.poll() is None for p in readers), "the readers wait for the download")
        c.check(len(srv.conns) >= 1, "the daemon reached the server")
        for what, fn in (("ls", lambda: os.listdir(mnt)),
                         ("stat model.json", lambda: os.stat(os.path.join(mnt, "model.json"))),
                         ("cat model.json", lambda: read(os.path.join(mnt, "model.json"))),
                         ("a deflate member", lambda: read(os.path.join(mnt, "files/model/main.py"))),
                         ("a tensor", lambda: read(os.path.join(mnt, "tensors/local"))),
                         ("ls tensors", lambda: os.listdir(os.path.join(mnt, "tensors")))):
            took, res = timed(fn)
            c.check(took < PROMPT and not isinstance(res, Exception),
                    "%s while %d opens wait for a stuck download: %.2f s, %r" %
                    (what, READERS, took, res if isinstance(res, Exception) else "ok"))
        c.equal(read(os.path.join(mnt, "files/model/main.py")), b"pass\n", "the deflate member's bytes")
        states = [state(p.pid) for p in readers]
        for p in readers:
            p.send_signal(signal.SIGKILL)
        start = time.time()
        ended = all(p.wait(timeout=PROMPT) is not None for p in readers)
        c.check(ended and time.time() - start < PROMPT,
                "kill -9 ends the waiting readers at once (%.2f s; states before: %s)" %
                (time.time() - start, "".join(s or "?" for s in states)))
        readers = []
        time.sleep(0.2)
        r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True, text=True)
        c.check(r.returncode == 0, "fusermount3 -u with the download still running: %s" % r.stderr.strip())
        c.check(pid is None or mfstest.pid_gone(pid, 15), "the daemon exits, its download abandoned")
        c.equal([f for f in os.listdir(links) if not f.startswith(".")], [], "links_dir holds nothing")
    finally:
        for p in readers:
            p.kill()
            p.wait()
        mfstest.unmount(mnt)
        subprocess.run(["fusermount3", "-uz", mnt], capture_output=True)
        if pid is not None and not mfstest.pid_gone(pid, 1):
            os.kill(pid, signal.SIGKILL)
        os.rmdir(mnt)


def check_sums(c, modelfs, env, work, srv):
    """A tensor that is a LINKS file behind the silent server: `cat
    SHA256SUMS` and getfattr of its sha256 wait for it; kill -9 ends them
    at once."""
    url = "http://127.0.0.1:%d/never" % srv.port
    import numpy as np
    cart = gen_carton.Carton(gen_carton.runner_toml("gen/stuck_sums"), "stored")
    cart.tensor("a_local", np.arange(4, dtype=np.float32))
    data = np.arange(8, dtype=np.float32).tobytes()
    f = "tensor_%d.bin" % len(cart.index)
    cart.index.append({"name": "b_remote", "dtype": "float32", "shape": [8], "file": f})
    cart.link("tensor_data/" + f, data, [url])
    files = cart.finish()
    model = os.path.join(work, "stuck_sums.carton")
    with open(model, "wb") as fh:
        fh.write(gen_carton.zip_bytes(cart.members(files)))
    links = os.path.join(work, "links_sums")
    os.makedirs(links)
    try:
        ctx = mfstest.mounted(modelfs, model, env=env, extra=("-o", "links_dir=" + links))
        mnt = ctx.__enter__()
    except RuntimeError as e:
        c.check(False, "SHA256SUMS case: mount: %s" % e)
        return
    try:
        readers = [subprocess.Popen(["cat", os.path.join(mnt, "SHA256SUMS")], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL),
                   subprocess.Popen(["getfattr", "-n", "user.modelfs.sha256",
                                     os.path.join(mnt, "tensors", "b_remote")],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        time.sleep(1.0)
        c.check(all(p.poll() is None for p in readers),
                "SHA256SUMS and the xattr wait for the LINKS tensor")
        for p in readers:
            p.send_signal(signal.SIGKILL)
        start = time.time()
        ended = all(p.wait(timeout=PROMPT) is not None for p in readers)
        c.check(ended and time.time() - start < PROMPT,
                "kill -9 ends a SHA256SUMS reader and a getfattr waiting on a download (%.2f s)"
                % (time.time() - start))
        took, res = timed(lambda: os.listdir(mnt))
        c.check(took < PROMPT and not isinstance(res, Exception), "the mount still answers")
    finally:
        ctx.__exit__(None, None, None)


def check_big_decode(c, modelfs, env, work):
    """While one open decodes and hashes a large zstd member (512 MiB),
    an open of another produced (deflate) member of the same carton, a
    stat and an ls return at once: productions run on job threads, not
    under the content layer's lock (issue 11, item 4)."""
    import numpy as np
    cart = gen_carton.Carton(gen_carton.runner_toml("gen/big_decode"), "deflate")
    # Compressible, so the carton stays small; the daemon still writes and
    # hashes 512 MiB. Each of 8192 values 16384 times over (np.repeat's
    # values; its 1.7 s against 0.06 s for the broadcast's copy).
    runs = np.arange(1 << 13, dtype=np.float32)[:, None]
    cart.tensor("big", np.broadcast_to(runs, (1 << 13, 1 << 14)).reshape(-1), "zstd")
    cart.add("model/main.py", b"pass\n", "deflate")
    files = cart.finish()
    model = os.path.join(work, "big_decode.carton")
    with open(model, "wb") as fh:
        fh.write(gen_carton.zip_bytes(cart.members(files)))
    del files, cart
    try:
        ctx = mfstest.mounted(modelfs, model, env=env)
        mnt = ctx.__enter__()
    except RuntimeError as e:
        c.check(False, "big decode case: mount: %s" % e)
        return
    try:
        big = {}

        def open_big():
            start = time.time()
            with open(os.path.join(mnt, "tensors", "big"), "rb") as f:
                big["opened"] = time.time()
                big["took"] = big["opened"] - start
                big["first"] = f.read(4)
        t = threading.Thread(target=open_big, daemon=True)
        t.start()
        time.sleep(0.05)
        results = []
        for what, fn in (("a deflate member", lambda: read(os.path.join(mnt, "files/model/main.py"))),
                         ("stat model.json", lambda: os.stat(os.path.join(mnt, "model.json"))),
                         ("ls tensors", lambda: os.listdir(os.path.join(mnt, "tensors")))):
            took, res = timed(fn)
            results.append((what, took, res, time.time()))
        t.join(120)
        c.check("first" in big, "the 512 MiB zstd member opens (%.2f s)" % big.get("took", -1))
        for what, took, res, done in results:
            if "opened" in big and done > big["opened"]:
                # A fast machine decoded it first: nothing to show, nothing wrong.
                print("  (%s ended after the big open: not a measure)" % what)
                continue
            c.check(not isinstance(res, Exception) and took < PROMPT,
                    "%s while a 512 MiB zstd member is decoded: %.3f s, %r"
                    % (what, took, res if isinstance(res, Exception) else "ok"))
    finally:
        ctx.__exit__(None, None, None)


def run(c, t):
    env = t.env
    work = tempfile.mkdtemp(prefix="modelfs-stuck-")
    srv = Silent()
    try:
        check(c, t.modelfs, env, work, srv)
        check_sums(c, t.modelfs, env, work, srv)
        check_big_decode(c, t.modelfs, env, work)
    finally:
        srv.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("stuck download tests", run, __doc__))
