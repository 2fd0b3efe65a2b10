#!/usr/bin/python3
"""Carton LINKS against hostile or awkward http servers (issue 7, items 3
and 9), all on 127.0.0.1 (an ephemeral port, stopped at the end). Every
fetch is bounded by options a user can set:
  - an endless body stops at --fetch-max / -o fetch_max (EIO, nothing kept);
  - a gzip bomb (64 KiB on the wire, 64 MiB decoded) stops at the cap too;
  - a trickle (1,100 bytes/s, above the low-speed guard) and a server that
    accepts and never answers end at fetch_timeout;
  - a fetch that would leave less than fetch_reserve free stops;
  - a daemon killed (SIGKILL) mid-download leaves nothing in links_dir;
  - SIGTERM mid-download: the transfer stops, the daemon ends, nothing left;
  - bad option values are refused.
Redirects are followed as every remote source follows them (issue 34,
defect 5; rangeserver.py on 127.0.0.1 and 127.0.0.2, one over TLS with a
test CA given as CURL_CA_BUNDLE):
  - an https URL redirected to plain http is refused: no request reaches
    the http server, the open is EIO, the log and modelfs-ls say why;
  - a Location with user:password@ is refused: no Authorization header
    reaches any server, the password is shown nowhere; the entry's next
    URL is then tried, as after any failure;
  - a redirect within http, within https, or to another host is followed;
    a 302's own body is neither written into the file nor counted against
    fetch_max; a redirect loop stops.
And files are right after fetching:
  - after the first read, stat shows the fetched size and a fresh process
    reads every byte;
  - a tensor whose tensor_data/*.bin is a LINKS file reads on the first
    mount, with its declared dtype and size;
  - a copy another mount fetched into links_dir (or one put there by hand,
    good or tampered) is used, checked, and not fetched again.

usage: test_links_hostile.py BUILD_DIR
"""
import concurrent.futures
import errno
import gzip
import hashlib
import http.server
import os
import shutil
import signal
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
import rangeserver  # noqa: E402
import webservers  # noqa: E402

import numpy as np  # noqa: E402  (gen_carton needs it too)

SERVER_MAX_S = 60          # no handler runs longer than this
BOMB = gzip.compress(bytes(64 << 20), 9)
STOP = threading.Event()


class Server(http.server.BaseHTTPRequestHandler):
    """/good/SHA, /endless/SHA, /slow-endless/SHA, /bomb/SHA, /trickle/SHA,
    /silent/SHA, /missing/SHA, /moved/SHA (302 to /good/SHA with a 64 KiB
    page); requests and body bytes sent are counted."""
    protocol_version = "HTTP/1.0"
    data = {}                   # sha -> bytes for /good/
    lock = threading.Lock()
    requests = []
    sent = 0

    def log_message(self, *args):
        pass

    def count(self, n):
        with Server.lock:
            Server.sent += n

    def stream(self, chunk, pause):
        end = time.monotonic() + SERVER_MAX_S
        try:
            while not STOP.is_set() and time.monotonic() < end:
                self.wfile.write(chunk)
                self.wfile.flush()
                self.count(len(chunk))
                if pause:
                    time.sleep(pause)
        except OSError:
            pass  # the client gave up: what we want

    def do_GET(self):
        kind, _, sha = self.path.strip("/").partition("/")
        with Server.lock:
            Server.requests.append(self.path)
        if kind == "silent":
            STOP.wait(SERVER_MAX_S)
            return
        if kind == "good" and sha in Server.data:
            body = Server.data[sha]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if kind == "moved":
            page = b"moved " * 10923
            self.send_response(302)
            self.send_header("Location", "/good/" + sha)
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        if kind == "bomb":
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(BOMB)))
            self.end_headers()
            try:
                self.wfile.write(BOMB)
            except OSError:
                pass
            return
        if kind in ("endless", "slow-endless", "trickle"):
            self.send_response(200)
            if kind == "trickle":
                self.send_header("Content-Length", str(10 << 20))
            self.end_headers()
            if kind == "endless":
                self.stream(bytes(1 << 16), 0)
            elif kind == "slow-endless":
                self.stream(bytes(1 << 16), 0.02)      # about 3 MB/s
            else:
                self.stream(bytes(110), 0.1)           # 1,100 bytes/s
            return
        self.send_response(404)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"no\n")


def requests_for(sha):
    with Server.lock:
        return [r for r in Server.requests if r.endswith(sha)]


def link_carton(path, urls, data):
    """A carton whose model/linked.bin is `data`, only behind `urls`."""
    c = gen_carton.Carton(gen_carton.runner_toml("gen/hostile"), "stored")
    c.add("model/main.py", b"pass\n")
    c.link("model/linked.bin", data, urls)
    files = c.finish()
    with open(path, "wb") as f:
        f.write(gen_carton.zip_bytes(c.members(files)))


def tensor_link_carton(path, base, arr):
    """A carton with tensor "w" whose tensor_data/tensor_1.bin is a LINKS file."""
    c = gen_carton.Carton(gen_carton.runner_toml("gen/tensorlink"), "stored")
    c.tensor("local", np.arange(4, dtype=np.float32))
    c.tensor("w", arr)
    data = c.files.pop("tensor_data/tensor_1.bin")
    sha = hashlib.sha256(data).hexdigest()
    c.link("tensor_data/tensor_1.bin", data, [base + "/good/" + sha])
    files = c.finish()
    with open(path, "wb") as f:
        f.write(gen_carton.zip_bytes(c.members(files)))
    return data, sha


def fresh_read(path, env):
    """sha256 and length of the whole file, read to EOF by another process."""
    r = subprocess.run([sys.executable, "-c",
                        "import hashlib,sys\n"
                        "d=open(sys.argv[1],'rb').read()\n"
                        "print(hashlib.sha256(d).hexdigest(), len(d))", path],
                       capture_output=True, text=True, timeout=60, env=env)
    return r.stdout.split() if r.returncode == 0 else ["error", r.stderr.strip()]


class Ctx:
    def __init__(self, build, work, base, env):
        self.ls = os.path.join(build, "modelfs-ls")
        self.modelfs = os.path.join(build, "modelfs")
        self.work, self.base, self.env = work, base, env
        self.n = 0

    def new(self, kind, data=b"payload\n" * 100):
        """A carton for one URL kind, and a fresh links_dir."""
        self.n += 1
        sha = hashlib.sha256(data).hexdigest()
        Server.data[sha] = data
        kinds = kind if isinstance(kind, list) else [kind]
        model = os.path.join(self.work, "m%d_%s.carton" % (self.n, "_".join(kinds)))
        link_carton(model, [self.base + "/" + k + "/" + sha for k in kinds], data)
        ld = os.path.join(self.work, "ld%d" % self.n)
        os.mkdir(ld)
        return model, ld, sha, data

    def ls_run(self, args, timeout=120):
        t0 = time.monotonic()
        r = subprocess.run([self.ls] + args, capture_output=True, text=True, timeout=timeout,
                           env=self.env)
        return r, time.monotonic() - t0


# ---- bounds, through modelfs-ls (the same fetch code, no FUSE) -------------------

def check_bounds(c, x):
    path = "files/model/linked.bin"
    # An endless body: stops at the cap, keeps nothing.
    model, ld, sha, _ = x.new("endless")
    r, t = x.ls_run(["--links-dir", ld, "--fetch-max", "1M", model, path])
    c.check(r.returncode == 8 and "fetch_max" in r.stderr and "1048576" in r.stderr,
            "endless body, --fetch-max 1M: exit 8 naming fetch_max: %d %r" % (r.returncode, r.stderr))
    c.check(t < 30, "endless body stopped in %.1f s" % t)
    c.equal(os.listdir(ld), [], "endless body: nothing left in links_dir")

    # A gzip bomb: the decoded bytes are counted, not the wire's.
    model, ld, sha, _ = x.new("bomb")
    r, t = x.ls_run(["--links-dir", ld, "--fetch-max", "1M", model, path])
    c.check(r.returncode == 8 and "more than 1048576 bytes (fetch_max)" in r.stderr,
            "gzip bomb, --fetch-max 1M: stops at the cap: %d %r" % (r.returncode, r.stderr))
    c.equal(os.listdir(ld), [], "gzip bomb: nothing left in links_dir")

    # A declared Content-Length above the cap fails before any body byte.
    model, ld, sha, _ = x.new("trickle")
    r, t = x.ls_run(["--links-dir", ld, "--fetch-max", "1M", model, path])
    c.check(r.returncode == 8 and "fetch_max" in r.stderr and t < 10,
            "10 MB declared, --fetch-max 1M: refused at once (%.1f s): %d %r"
            % (t, r.returncode, r.stderr))

    # A trickle above the low-speed guard, and a silent server: fetch_timeout.
    # The three wait out their timeouts at the same time.
    kinds = ("trickle", "silent", ["silent", "silent", "good"])
    runs = [x.new(kind) for kind in kinds]
    with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
        done = list(pool.map(lambda m: x.ls_run(["--links-dir", m[1], "--fetch-timeout", "3",
                                                  m[0], path]), runs))
    for kind, (model, ld, sha, _), (r, t) in zip(kinds, runs, done):
        c.check(r.returncode == 8 and "fetch_timeout" in r.stderr,
                "%s, --fetch-timeout 3: exit 8 naming fetch_timeout: %d %r" % (kind, r.returncode, r.stderr))
        c.check(2.5 < t < 15, "%s: ended after %.1f s (bound 3 s for all URLs)" % (kind, t))
        c.equal(os.listdir(ld), [], "%s: nothing left in links_dir" % kind)

    # The disk guard: a reserve above the free space stops the first write.
    model, ld, sha, _ = x.new("good")
    st = os.statvfs(ld)
    reserve = st.f_bavail * st.f_frsize + (1 << 30)
    r, t = x.ls_run(["--links-dir", ld, "--fetch-reserve", str(reserve), model, path])
    c.check(r.returncode == 8 and "fetch_reserve" in r.stderr,
            "--fetch-reserve above the free space: exit 8 naming it: %d %r" % (r.returncode, r.stderr))
    c.equal(os.listdir(ld), [], "reserve: nothing left in links_dir")

    # Within the bounds: the bytes, kept as links_dir/SHA and nothing else.
    r, t = x.ls_run(["--links-dir", ld, "--fetch-max", "1M", "--fetch-timeout", "30", model, path])
    c.check(r.returncode == 0, "good file: exit %d %r" % (r.returncode, r.stderr))
    c.equal(sorted(os.listdir(ld)), [sha], "good file: only links_dir/SHA")

    # A bad value is a usage error.
    for opt, val in (("--fetch-max", "0"), ("--fetch-max", "-1"), ("--fetch-max", "1X"),
                     ("--fetch-timeout", "0"), ("--fetch-timeout", "3s"), ("--fetch-reserve", "")):
        r, _ = x.ls_run([opt, val, model])
        c.equal(r.returncode, 2, "%s %r: usage error" % (opt, val))


# ---- through the mount -------------------------------------------------------------

def mount_opts(ld, *more):
    return ("-o", ",".join(("links_dir=" + ld,) + more))


def check_mount_bounds(c, x):
    """The -o options reach the fetch: EIO, in bounded time (three mounts
    at once, each its own daemon)."""
    def one(kind, opt, model, ld):
        try:
            with mfstest.mounted(x.modelfs, model, x.env, extra=mount_opts(ld, opt)) as mnt:
                t0 = time.monotonic()
                got, err = mfstest.read_or_errno(os.path.join(mnt, "files", "model", "linked.bin"))
                return err, time.monotonic() - t0, None
        except RuntimeError as e:
            return None, 0, e

    cases = [(kind, opt) + x.new(kind)[:2] for kind, opt in
             (("endless", "fetch_max=1M"), ("trickle", "fetch_timeout=3"), ("silent", "fetch_timeout=3"))]
    with concurrent.futures.ThreadPoolExecutor(len(cases)) as pool:
        done = list(pool.map(lambda a: one(*a), cases))
    for (kind, opt, model, ld), (err, t, e) in zip(cases, done):
        if e is not None:
            c.check(False, "mount -o %s: %s" % (opt, e))
        else:
            c.equal(err, errno.EIO, "mount, %s, -o %s: EIO" % (kind, opt))
            c.check(t < 20, "mount, %s: open ended after %.1f s" % (kind, t))
        c.equal(os.listdir(ld), [], "mount, %s: nothing left in links_dir" % kind)


def check_killed(c, x):
    """SIGKILL of a foreground daemon in the middle of a download."""
    model, ld, sha, _ = x.new("slow-endless")
    fg = mfstest.Foreground(x.modelfs, model, ("-o", "links_dir=" + ld), x.env, dir=x.work)
    mnt, d = fg.mnt, fg.p
    try:
        if not c.check(fg.mounted, "killed: mounted"):
            return
        result = {}

        def reader():
            result["r"] = mfstest.read_or_errno(os.path.join(mnt, "files", "model", "linked.bin"))
        th = threading.Thread(target=reader, daemon=True)
        before = Server.sent
        th.start()
        end = time.monotonic() + 30
        while Server.sent - before < (4 << 20) and time.monotonic() < end:
            time.sleep(0.05)
        c.check(Server.sent - before >= (4 << 20), "killed: the download was under way")
        d.send_signal(signal.SIGKILL)
        d.wait(timeout=30)
        subprocess.run(["fusermount3", "-uz", mnt], capture_output=True)
        th.join(30)
        c.check(not th.is_alive() and result.get("r", (None, 0))[1] != 0,
                "killed: the reader got an error: %r" % (result.get("r", (None, None))[1],))
        c.equal(os.listdir(ld), [], "killed mid-download: nothing left in links_dir")
    finally:
        fg.close()


def check_stopped(c, x):
    """SIGTERM to a foreground daemon in the middle of a download: the
    transfer is abandoned, the daemon ends in bounded time, nothing is left."""
    model, ld, sha, _ = x.new("slow-endless")
    fg = mfstest.Foreground(x.modelfs, model, ("-o", "links_dir=" + ld), x.env, dir=x.work)
    mnt, d = fg.mnt, fg.p
    try:
        if not c.check(fg.mounted, "stopped: mounted"):
            return
        th = threading.Thread(target=mfstest.read_or_errno,
                              args=(os.path.join(mnt, "files", "model", "linked.bin"),), daemon=True)
        before = Server.sent
        th.start()
        end = time.monotonic() + 30
        while Server.sent - before < (2 << 20) and time.monotonic() < end:
            time.sleep(0.05)
        c.check(Server.sent - before >= (2 << 20), "stopped: the download was under way")
        t0 = time.monotonic()
        d.send_signal(signal.SIGTERM)
        try:
            d.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        c.check(d.poll() is not None, "stopped: the daemon ended %.1f s after SIGTERM" % (time.monotonic() - t0))
        time.sleep(0.5)
        sent = Server.sent
        time.sleep(1)
        c.equal(Server.sent, sent, "stopped: the server sends nothing more")
        th.join(30)
        c.equal(os.listdir(ld), [], "stopped mid-download: nothing left in links_dir")
    finally:
        fg.close()


def check_sizes(c, x):
    """After a fetch, stat tells the size and a fresh process reads it all."""
    data = np.arange(300000, dtype=np.float32).tobytes()     # 1.2 MB
    model, ld, sha, _ = x.new("good", data)
    with mfstest.mounted(x.modelfs, model, x.env, extra=mount_opts(ld)) as mnt:
        p = os.path.join(mnt, "files", "model", "linked.bin")
        c.equal(os.getxattr(p, "user.modelfs.size_unknown"), b"1", "size unknown before the fetch")
        c.equal(fresh_read(p, x.env), [sha, str(len(data))], "first read, to EOF, in a fresh process")
        c.equal(os.stat(p).st_size, len(data), "stat after the fetch: the fetched size")
        c.equal(fresh_read(p, x.env), [sha, str(len(data))], "second read in a fresh process")
        arr = np.fromfile(p, dtype=np.float32)
        c.equal(arr.size, 300000, "np.fromfile after the fetch: every element")
    c.equal(len(requests_for(sha)), 1, "sizes: one request")


def check_tensor_link(c, x):
    """tensors/w, whose .bin is a LINKS file, on the first mount."""
    arr = np.arange(1250, dtype=np.float32)             # 5000 bytes
    model = os.path.join(x.work, "tensorlink.carton")
    data, sha = tensor_link_carton(model, x.base, arr)
    Server.data[sha] = data
    ld = os.path.join(x.work, "ld-tensor")
    os.mkdir(ld)
    with mfstest.mounted(x.modelfs, model, x.env, extra=mount_opts(ld)) as mnt:
        p = os.path.join(mnt, "tensors", "w")
        c.equal(os.getxattr(p, "user.modelfs.dtype"), b"float32", "linked tensor: declared dtype")
        c.equal(os.getxattr(p, "user.modelfs.shape"), b"[1250]", "linked tensor: declared shape")
        c.equal(os.stat(p).st_size, 5000, "linked tensor: declared size before the fetch")
        got, err = mfstest.read_or_errno(p)
        c.equal((err, hashlib.sha256(got or b"").hexdigest()), (0, sha), "linked tensor: first mount reads it")
        f = os.path.join(mnt, "files", "tensor_data", "tensor_1.bin")
        c.equal(fresh_read(f, x.env), [sha, "5000"], "its files/ node reads it too")
    c.equal(len(requests_for(sha)), 1, "linked tensor: fetched once for both nodes")
    r = subprocess.run([x.ls, "--links-dir", ld, model, "tensors/w"], capture_output=True,
                       timeout=60, env=x.env)
    c.check(r.returncode == 0 and r.stdout == data, "linked tensor: modelfs-ls after the fetch")

    # A LINKS tensor whose fetched file has another length than declared: EIO.
    c2 = gen_carton.Carton(gen_carton.runner_toml("gen/tensorlink2"), "stored")
    c2.tensor("v", np.arange(10, dtype=np.float32))
    good = c2.files.pop("tensor_data/tensor_0.bin")
    c2.index[0]["shape"] = [11]          # declares 44 bytes, the file has 40
    c2.link("tensor_data/tensor_0.bin", good, [x.base + "/good/" + hashlib.sha256(good).hexdigest()])
    Server.data[hashlib.sha256(good).hexdigest()] = good
    m2 = os.path.join(x.work, "tensorlink2.carton")
    with open(m2, "wb") as fh:
        fh.write(gen_carton.zip_bytes(c2.members(c2.finish())))
    ld2 = os.path.join(x.work, "ld-tensor2")
    os.mkdir(ld2)
    with mfstest.mounted(x.modelfs, m2, x.env, extra=mount_opts(ld2)) as mnt:
        c.equal(mfstest.read_or_errno(os.path.join(mnt, "tensors", "v"))[1], errno.EIO,
                "linked tensor of another length than declared: EIO")


def check_kept(c, x):
    """A copy in links_dir is used (checked) rather than fetched again."""
    model, ld, sha, data = x.new("good", os.urandom(3 << 20))
    with mfstest.mounted(x.modelfs, model, x.env, extra=mount_opts(ld)) as m1, \
            mfstest.mounted(x.modelfs, model, x.env, extra=mount_opts(ld)) as m2:
        rel = os.path.join("files", "model", "linked.bin")
        c.equal(fresh_read(os.path.join(m1, rel), x.env), [sha, str(len(data))], "kept: first mount fetches")
        c.equal(fresh_read(os.path.join(m2, rel), x.env), [sha, str(len(data))],
                "kept: second mount (both mounted before the fetch) reads it")
        c.equal(len(requests_for(sha)), 1, "kept: the second mount used links_dir/SHA, no request")

    # A tampered copy appears after the mount: checked, fetched again, replaced.
    model, ld, sha, data = x.new("good", os.urandom(1 << 20))
    with mfstest.mounted(x.modelfs, model, x.env, extra=mount_opts(ld)) as mnt:
        with open(os.path.join(ld, sha), "wb") as f:
            f.write(bytes([data[0] ^ 0xFF]) + data[1:])  # never equal to data
        c.equal(fresh_read(os.path.join(mnt, "files", "model", "linked.bin"), x.env),
                [sha, str(len(data))], "tampered copy in links_dir: not served, fetched again")
    c.equal(len(requests_for(sha)), 1, "tampered copy: one request")
    c.equal(mfstest.sha256_file(os.path.join(ld, sha)), sha, "tampered copy replaced by the good one")
    c.equal(sorted(os.listdir(ld)), [sha], "tampered copy: nothing else in links_dir")

    # A good copy put there by hand after the mount: no request at all.
    model, ld, sha, data = x.new("good", os.urandom(1 << 20))
    with mfstest.mounted(x.modelfs, model, x.env, extra=mount_opts(ld)) as mnt:
        with open(os.path.join(ld, sha), "wb") as f:
            f.write(data)
        c.equal(fresh_read(os.path.join(mnt, "files", "model", "linked.bin"), x.env),
                [sha, str(len(data))], "copy put in links_dir after the mount: served")
    c.equal(len(requests_for(sha)), 0, "copy put in links_dir after the mount: no request")


def check_edited(c, x):
    """A links_dir copy edited in place after it was checked (its mtime put
    back) is never served: a reader that has it open gets EIO; the next
    open finds the copy wrong and fetches the file again."""
    model, ld, sha, data = x.new("good", os.urandom(1 << 20))
    with mfstest.mounted(x.modelfs, model, x.env, extra=mount_opts(ld)) as mnt:
        path = os.path.join(mnt, "files", "model", "linked.bin")
        fd = os.open(path, os.O_RDONLY)
        try:
            c.equal(os.pread(fd, 4096, 0), data[:4096], "edited copy: read before the edit")
            kept = os.path.join(ld, sha)
            st = os.stat(kept)
            with open(kept, "r+b") as f:
                f.write(bytes([data[0] ^ 0xFF]))  # a changed byte, whatever data is
            os.utime(kept, ns=(st.st_atime_ns, st.st_mtime_ns))
            try:
                got = os.pread(fd, 4096, 0)
                c.check(False, "links_dir copy edited in place while open: EIO, got %d bytes" % len(got))
            except OSError as e:
                c.equal(e.errno, errno.EIO, "links_dir copy edited in place while open: errno")
        finally:
            os.close(fd)
        c.equal(fresh_read(path, x.env), [sha, str(len(data))], "edited copy: the next open fetches again")
    c.equal(len(requests_for(sha)), 2, "edited copy: fetched twice in all")


# ---- redirects (issue 34, defect 5) ----------------------------------------------

PASSWORD = "pw5ecret"


def check_redirects(c, x):
    if shutil.which("openssl") is None:
        c.skip("no openssl to make a test CA: redirect checks not run")
        return
    tmp = os.path.join(x.work, "redirects")
    root = os.path.join(tmp, "root")
    os.makedirs(root)
    ca, cert, key = webservers.make_cert(tmp)
    data = os.urandom(200000)
    sha = hashlib.sha256(data).hexdigest()
    with open(os.path.join(root, sha), "wb") as f:
        f.write(data)
    Server.data[sha] = data
    env = dict(x.env, CURL_CA_BUNDLE=ca)
    tls = rangeserver.start(root, tls=(cert, key))
    plain = rangeserver.start(root)
    other = rangeserver.start(root, host="127.0.0.2")
    servers = (tls, plain, other)
    path = "files/model/linked.bin"

    def carton(*urls):
        x.n += 1
        model = os.path.join(tmp, "r%d.carton" % x.n)
        link_carton(model, list(urls), data)
        ld = os.path.join(tmp, "ld%d" % x.n)
        os.mkdir(ld)
        return model, ld

    def ls(*args):
        r = subprocess.run([x.ls, *args], capture_output=True, text=True, timeout=60, env=env)
        return r.returncode, r.stdout, r.stderr

    def auth_headers():
        return [(s.url, p, h["authorization"]) for s in servers for p, h in s.headers
                if "authorization" in h]

    try:
        # Within https, with the test CA: followed (the CA reaches the fetch).
        tls.redirect_base = tls.url
        model, ld = carton(tls.url + "/fault/redirect/" + sha)
        code, out, err = ls("--links-dir", ld, "--verify", model)
        c.check(code == 0 and sorted(os.listdir(ld)) == [sha],
                "https -> https: followed, verified, kept (%d %r)" % (code, err))

        # https -> http: refused, nothing reaches the http server.
        tls.redirect_base = plain.url
        model, ld = carton(tls.url + "/fault/redirect/" + sha)
        since = len(plain.log)
        code, out, err = ls("--links-dir", ld, "--verify", model)
        c.check(code == 8 and "from https to" in err and plain.url + "/" + sha in err,
                "https -> http: modelfs-ls --verify refuses it, naming why (%d %r)" % (code, err))
        e, log = open_in_mount(x, model, ld, env)
        c.equal(e, errno.EIO, "https -> http: the open is EIO")
        c.check("never from https to plain http" in log,
                "https -> http: the daemon's log says why: %r" % log[-600:])
        c.equal(plain.log[since:], [], "https -> http: no request reached the http server")
        c.equal(os.listdir(ld), [], "https -> http: nothing in links_dir")

        # user:password in a Location: refused, no Authorization anywhere
        # (libcurl's own following sends them on the same host, drops
        # them for another: both are tried).
        for to in (other, plain):
            where = "another host" if to is other else "the same host"
            plain.redirect_base = "http://u:%s@%s" % (PASSWORD, to.url[len("http://"):])
            refused = plain.url + "/fault/redirect/" + sha
            model, ld = carton(refused)
            since = len(to.log)
            code, out, err = ls("--links-dir", ld, "--verify", model)
            c.check(code == 8 and "user or password" in err and to.url + "/" + sha in err,
                    "u:p@ in a Location to %s: refused, naming the URL (%d %r)" % (where, code, err))
            c.check(PASSWORD not in err + out, "u:p@ to %s: the password is shown nowhere" % where)
            e, log = open_in_mount(x, model, ld, env)
            c.equal(e, errno.EIO, "u:p@ in a Location to %s: the open is EIO" % where)
            c.check("user or password" in log and PASSWORD not in log,
                    "u:p@ to %s: the daemon's log says why, without the password: %r"
                    % (where, log[-600:]))
            c.equal([r for r in to.log[since:] if not r[1].startswith("/fault/")], [],
                    "u:p@ in a Location to %s: no request reached it" % where)
            c.equal(auth_headers(), [], "u:p@ to %s: no Authorization header anywhere" % where)
        # The entry's next URL is tried, as after any failure.
        model, ld = carton(refused, other.url + "/" + sha)
        code, out, err = ls("--links-dir", ld, "--verify", model)
        c.check(code == 0 and sorted(os.listdir(ld)) == [sha],
                "u:p@ then a good URL: the second is used (%d %r)" % (code, err))

        # Within http, to another host: followed; the bytes through the mount.
        plain.redirect_base = other.url
        model, ld = carton(plain.url + "/fault/redirect/" + sha)
        since = len(other.log)
        with mfstest.mounted(x.modelfs, model, env, extra=mount_opts(ld)) as mnt:
            c.equal(fresh_read(os.path.join(mnt, path), env), [sha, str(len(data))],
                    "http -> another host: followed, the bytes read through the mount")
        c.equal([r[1] for r in other.log[since:]], ["/" + sha], "http -> another host: one GET there")
        c.equal(sorted(os.listdir(ld)), [sha], "http -> another host: kept as links_dir/SHA")
        c.equal(auth_headers(), [], "no Authorization header was ever sent")

        # A 302's page is not the file's bytes, nor counted against fetch_max.
        model, ld, msha, mdata = x.new("moved", os.urandom(800))
        code, out, err = ls("--links-dir", ld, "--fetch-max", "1K", "--verify", model)
        c.check(code == 0 and sorted(os.listdir(ld)) == [msha],
                "a 302 with a 64 KiB page, --fetch-max 1K: the 800 bytes kept (%d %r)" % (code, err))

        # A loop ends at the redirect bound, in bounded time.
        model, ld = carton(plain.url + "/fault/loop/" + sha)
        t0 = time.monotonic()
        code, out, err = ls("--links-dir", ld, "--verify", model)
        n = sum(1 for r in plain.log if r[1].startswith("/fault/loop/"))
        c.check(code == 8 and "redirects" in err and n <= 11 and time.monotonic() - t0 < 10,
                "a redirect loop: stops after %d requests (%d %r)" % (n, code, err))
    finally:
        for s in servers:
            s.stop()


def open_in_mount(x, model, ld, env):
    """The errno of reading the LINKS file through a foreground mount (None
    when it did not mount), and the daemon's log."""
    fg = mfstest.Foreground(x.modelfs, model, mount_opts(ld), env, dir=x.work)
    try:
        if not fg.mounted:
            return None, fg.text()
        e = mfstest.read_or_errno(os.path.join(fg.mnt, "files", "model", "linked.bin"))[1]
        return e, fg.text()
    finally:
        fg.close()


def main():
    if len(sys.argv) != 2:
        mfstest.fail_main(__doc__)
    build = os.path.abspath(sys.argv[1])
    c = mfstest.Checker("test_links_hostile")
    work = tempfile.mkdtemp(prefix="modelfs-hostile-")
    logdir = os.path.join(work, "san")
    os.mkdir(logdir)
    env = mfstest.sanitizer_env(logdir)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Server)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    x = Ctx(build, work, "http://127.0.0.1:%d" % srv.server_address[1], env)
    try:
        check_bounds(c, x)
        if mfstest.can_mount():
            for f in (check_mount_bounds, check_killed, check_stopped, check_sizes, check_tensor_link, check_kept,
                      check_edited, check_redirects):
                before = c.failed
                try:
                    f(c, x)
                except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
                    c.check(False, "%s: %r" % (f.__name__, e))
                print("%s %s" % ("ok  " if c.failed == before else "FAIL", f.__name__), flush=True)
        else:
            c.skip("no /dev/fuse or fusermount3: mount checks not run")
        mfstest.check_sanitizer_reports(c, logdir)
    finally:
        STOP.set()
        srv.shutdown()
        srv.server_close()
        shutil.rmtree(work, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
