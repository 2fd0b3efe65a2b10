#!/usr/bin/python3
"""Remote models (issue 20): modelfs over a shaped link, every figure a
ratio against a baseline measured in the same run.

    sudo /usr/bin/python3 bench/remote_bench.py BUILD_DIR [--quick] [--cache DIR]

The link: Debian's nginx on 127.0.0.1 with `limit_rate 40m` per
connection (a CDN's per-connection cap), behind bench-delay-proxy, which
holds every chunk 20 ms each way (a 40 ms round trip; this kernel has no
netem). Each modelfs mount gets an empty cache_dir unless the row says
warm. Requests and bytes come from nginx's access log.

Rows:
  mount        per model (a safetensors with a 512 MiB tensor, a GGUF, an
               ONNX with external data, a PyTorch .bin): time until
               `modelfs URL MNT` returns, requests and bytes fetched
               (target: <= 3 requests per file, bytes ~ its header)
  100 shards   `modelfs URL-of-model.safetensors.index.json MNT` for 100
               shards of 1 MiB: the shards are opened at once (target <= 2 s)
  metadata     `ls -lR` and `cat model.json` after the mount: requests
               (target 0)
  first read   `cat` of the 512 MiB tensor on a fresh mount vs one `curl`
               of the same range and eight parallel `curl`s of its eighths
               (targets: >= 5x one stream, >= 0.9x eight)
  rclone       the same `cat` through modelfs mounted on rclone's HTTP
               mount (`--vfs-cache-mode full`): modelfs alone should be faster
  np.load      np.load(npy twin, mmap_mode="r") and one pass over it, on
               a fresh mount, vs that mount's `cat` (target <= 1.5x)
  warm         the same `cat` again on the mount (page cache), and on a
               second mount from the warm cache_dir (target: no range GET,
               >= 0.9x a local mount's first read, page cache dropped)
  fetched      bytes fetched for the first read / bytes read (<= 1.1)
  traces       bytes fetched / bytes the reader read (<= 1.1), each on a
               fresh mount: sequential `cat`, 64 KiB of every MiB (strided),
               safe_open's way (a mapping of model.safetensors) touching 3
               of 100 tensors, 4 KiB random preads, four `cat`s at once;
               with --old BUILD the same (and the first read) for that
               build too, in the same run
  random 4k    4 KiB preads at random offsets of the tensor, fresh mount:
               GETs per read (target 1)
  cache_max    the cache_dir after reading the tensor with
               cache_max=64M (target: never above)
  memory       the daemon's peak RSS (VmHWM) after the first read (target:
               within the 256 MiB in-flight budget plus the daemon's own)

Exit 0 when every row was measured, 1 when the harness failed, 77 when the
machine cannot run it (not root, no /dev/fuse, no nginx or curl)."""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "scripts"))
sys.path.insert(0, os.path.join(here, "..", "tests", "mount"))
import mfstest  # noqa: E402
import numpy as np  # noqa: E402

SKIP = 77
MIB = 1 << 20
INPUTS_VERSION = 2
FULL = {"big_mib": 512, "tensors": 40, "tensor_mib": 4, "rand": 200, "hundred_mib": 4}
QUICK = {"big_mib": 64, "tensors": 8, "tensor_mib": 1, "rand": 40, "hundred_mib": 1}


def log(msg):
    print("bench: %s" % msg, file=sys.stderr, flush=True)


# ---- inputs -----------------------------------------------------------

write_safetensors = mfstest.write_safetensors_entries  # [(name, dtype, shape, bytes)]

def make_hundred(d, size):
    """hundred.safetensors: 100 tensors of hundred_mib MiB (the read-ahead
    traces); made apart from the other inputs, once."""
    path = os.path.join(d, "hundred.safetensors")
    if os.path.exists(path):
        return
    rng = np.random.default_rng(35)
    n = size["hundred_mib"] * MIB
    write_safetensors(path + ".tmp", [("t%03d" % i, "U8", [n], rng.integers(
        0, 256, n, dtype=np.uint8).tobytes()) for i in range(100)])
    os.rename(path + ".tmp", path)


def make_inputs(d, size):
    stamp = os.path.join(d, ".done")
    try:
        with open(stamp) as f:
            if f.read().strip() == str(INPUTS_VERSION):
                return
    except OSError:
        pass
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    log("making the inputs in %s" % d)
    rng = np.random.default_rng(20)
    big = rng.integers(0, 256, size["big_mib"] * MIB, dtype=np.uint8).tobytes()
    small = [("small.%03d" % i, "F32", [16384], rng.standard_normal(16384).astype(np.float32)
              .tobytes()) for i in range(100)]
    write_safetensors(os.path.join(d, "big.safetensors"),
                      [("big", "U8", [len(big)], big)] + small)
    n = size["tensor_mib"] * MIB // 4
    arrays = [rng.standard_normal(n).astype(np.float32) for _ in range(size["tensors"])]
    import gen_gguf
    gen_gguf.write(d, "model.gguf", [], [gen_gguf.plain("blk.%d.weight" % i, a)
                                         for i, a in enumerate(arrays)])
    for junk in os.listdir(d):
        if junk.endswith(".expect.json"):
            os.unlink(os.path.join(d, junk))
    import onnx
    from onnx import helper, numpy_helper
    inits = [numpy_helper.from_array(a, "w%d" % i) for i, a in enumerate(arrays)]
    graph = helper.make_graph([helper.make_node("Identity", ["w0"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [n])],
                              inits)
    onnx.save_model(helper.make_model(graph), os.path.join(d, "model.onnx"),
                    save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.onnx.data", size_threshold=0)
    import gen_pytorch
    storages, obj = [], {}
    for i, a in enumerate(arrays):
        s = gen_pytorch.Storage(str(i), a)
        storages.append(s)
        obj["layer%d.weight" % i] = gen_pytorch.Tensor(s, 0, a.shape, (1,))
    gen_pytorch.write_checkpoint(os.path.join(d, "model.bin"), obj, storages, aligned=True)
    # 100 shards of 1 MiB and their index: a sharded model's mount.
    os.makedirs(os.path.join(d, "sharded"))
    weight_map = {}
    for k in range(100):
        name = "model-%05d-of-00100.safetensors" % (k + 1)
        t = rng.standard_normal(1 << 18).astype(np.float32)
        write_safetensors(os.path.join(d, "sharded", name), [("layer%d.w" % k, "F32", [1 << 18],
                                                                t.tobytes())])
        weight_map["layer%d.w" % k] = name
    with open(os.path.join(d, "sharded", "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 100 << 20}, "weight_map": weight_map}, f)
    with open(stamp, "w") as f:
        f.write("%d\n" % INPUTS_VERSION)


# ---- the link ---------------------------------------------------------

class Link:
    """nginx (limit_rate 40m a connection; folders listed, for rclone) behind the
    20 ms delay proxy."""

    def __init__(self, build, root, tmp):
        self.tmp = tmp
        self.log_path = os.path.join(tmp, "access.log")
        self.nginx_port, self.port = mfstest.free_port(), mfstest.free_port()
        conf = os.path.join(tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write("""user root; daemon off; worker_processes 2; pid %(t)s/nginx.pid;
error_log %(t)s/error.log;
events { worker_connections 256; }
http {
  log_format b '$request_method $status $body_bytes_sent "$http_range"';
  access_log %(t)s/access.log b;
  client_body_temp_path %(t)s/body; proxy_temp_path %(t)s/proxy;
  fastcgi_temp_path %(t)s/fastcgi; uwsgi_temp_path %(t)s/uwsgi; scgi_temp_path %(t)s/scgi;
  default_type application/octet-stream;
  keepalive_requests 100000;
  sendfile on;
  server { listen 127.0.0.1:%(p)d; root %(r)s; limit_rate 40m; autoindex on; }
}
""" % {"t": tmp, "p": self.nginx_port, "r": root})
        self.nginx = subprocess.Popen(["nginx", "-p", tmp, "-c", conf],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.proxy = subprocess.Popen([os.path.join(build, "bench-delay-proxy"), str(self.port),
                                       str(self.nginx_port), "20"], stdout=subprocess.PIPE)
        self.proxy.stdout.readline()
        if not mfstest.wait_port(self.nginx_port, 10, self.nginx):
            raise RuntimeError("nginx does not listen on port %d" % self.nginx_port)
        self.base = "http://127.0.0.1:%d/" % self.port

    def mark(self):
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def since(self, mark):
        """(GETs, HEADs, body bytes) logged since `mark`."""
        time.sleep(0.2)   # nginx writes its line after the response
        gets = heads = nbytes = 0
        with open(self.log_path) as f:
            f.seek(mark)
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                if parts[0] == "GET":
                    gets += 1
                elif parts[0] == "HEAD":
                    heads += 1
                nbytes += int(parts[2])
        return gets, heads, nbytes

    def close(self):
        for p in (self.proxy, self.nginx):
            mfstest.stop_process(p)


# ---- measuring --------------------------------------------------------

class Table:
    def __init__(self):
        self.rows = []
        self.failed = False

    def add(self, row, value, baseline="", ratio="", target="", ok=None):
        verdict = "" if ok is None else ("PASS" if ok else "MISS")
        self.rows.append((row, value, baseline, ratio, target, verdict))
        log("%s: %s %s %s %s" % (row, value, ratio, target, verdict))

    def show(self):
        print("| row | modelfs | baseline | ratio | target | |")
        print("| --- | --- | --- | --- | --- | --- |")
        for r in self.rows:
            print("| %s |" % " | ".join(str(x) for x in r))


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def mount(build, url, cache, extra=()):
    mnt = tempfile.mkdtemp(prefix="modelfs-rb-mnt-")
    env = dict(os.environ)
    t, r = timed(lambda: subprocess.run([os.path.join(build, "modelfs"), "-o",
                                         "cache_dir=" + cache, *extra, url, mnt],
                                        capture_output=True, text=True, env=env, timeout=300))
    if r.returncode != 0:
        os.rmdir(mnt)
        raise RuntimeError("modelfs %s: exit %d: %s" % (url, r.returncode, r.stderr.strip()))
    return mnt, t


def cat(path):
    t, r = timed(lambda: subprocess.run(["cat", path], stdout=subprocess.DEVNULL))
    if r.returncode != 0:
        raise RuntimeError("cat %s failed" % path)
    return t


def curl_range(url, first, last):
    return subprocess.Popen(["curl", "-s", "-f", "-o", "/dev/null", "-r", "%d-%d" % (first, last),
                             url])


def curls(url, first, length, n):
    step = length // n

    def run():
        ps = [curl_range(url, first + i * step,
                         first + (length if i == n - 1 else (i + 1) * step) - 1)
              for i in range(n)]
        if any(p.wait() != 0 for p in ps):
            raise RuntimeError("curl failed")
    return timed(run)[0]


def tensor_range(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        h = json.loads(f.read(n))
    a, b = h["big"]["data_offsets"]
    return 8 + n + a, b - a


def rclone_read(build, link, root, tmp):
    """`cat` of the tensor through modelfs mounted on rclone's HTTP mount
    (`--vfs-cache-mode full`, an empty cache), both fresh: seconds, or
    None when rclone cannot mount here."""
    rmnt = tempfile.mkdtemp(prefix="modelfs-rb-rclone-")
    cache = tempfile.mkdtemp(prefix="modelfs-rb-rclone-cache-", dir="/var/tmp")
    proc = subprocess.Popen(["rclone", "mount", ":http:", rmnt, "--http-url", link.base,
                             "--vfs-cache-mode", "full", "--cache-dir", cache, "--read-only",
                             "--config", "/dev/null"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while time.time() < deadline and not os.path.ismount(rmnt):
            time.sleep(0.1)
        if not os.path.ismount(rmnt):
            log("rclone did not mount")
            return None
        mnt = tempfile.mkdtemp(prefix="modelfs-rb-onrclone-")
        subprocess.run([os.path.join(build, "modelfs"), os.path.join(rmnt, "big.safetensors"),
                        mnt], check=True, timeout=120)
        try:
            return cat(os.path.join(mnt, "tensors", "big"))
        finally:
            mfstest.unmount_and_remove(mnt)
    finally:
        subprocess.run(["fusermount", "-u", rmnt], stderr=subprocess.DEVNULL)
        mfstest.stop_process(proc, 20)
        os.rmdir(rmnt)
        shutil.rmtree(cache, ignore_errors=True)


def vm_hwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def st_header(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return 8 + n, json.loads(f.read(n))


def read_traces(build, link, root, size, fresh_cache):
    """The read-ahead traces on fresh mounts: {name: (bytes the reader
    read, bytes of the 256 KiB blocks (the http source's) those reads
    touch, bytes fetched, GETs, seconds)}."""
    out = {}
    big_url = link.base + "big.safetensors"
    hundred = link.base + "hundred.safetensors"
    big_at, length = tensor_range(os.path.join(root, "big.safetensors"))
    each = size["hundred_mib"] * MIB
    block = 256 << 10
    touched = set()

    def touch(at, n):   # the reader read [at, at + n) of the remote file
        touched.update(range(at // block, (at + n - 1) // block + 1))

    def trace(name, url, fn):
        mnt, _ = mount(build, url, fresh_cache())
        try:
            touched.clear()
            mark = link.mark()
            t, nread = timed(lambda: fn(mnt))
            gets, _, nbytes = link.since(mark)
            out[name] = (nread, len(touched) * block, nbytes, gets, t)
        finally:
            mfstest.unmount_and_remove(mnt)

    def cat_big(mnt):
        cat(os.path.join(mnt, "tensors", "big"))
        touch(big_at, length)
        return length

    def strided(mnt):
        # 64 KiB of every MiB of the first half of the tensor (rows).
        n = 0
        with open(os.path.join(mnt, "tensors", "big"), "rb", buffering=0) as f:
            for at in range(0, length // 2, MIB):
                n += len(os.pread(f.fileno(), 64 << 10, at))
                touch(big_at + at, 64 << 10)
        return n

    def mmap3(mnt):
        # safe_open's way: map model.safetensors, touch 3 of its 100 tensors.
        import mmap
        base, h = st_header(os.path.join(root, "hundred.safetensors"))
        n = 0
        with open(os.path.join(mnt, "model.safetensors"), "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            for name in ("t007", "t042", "t093"):
                a, b = h[name]["data_offsets"]
                arr = np.frombuffer(m, dtype=np.uint8, count=b - a, offset=base + a)
                int(arr.sum())
                n += b - a
                touch(base + a, b - a)
                del arr
            m.close()
        return n

    def random4k(mnt):
        rng = random.Random(4)
        fd = os.open(os.path.join(mnt, "tensors", "big"), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            for _ in range(size["rand"]):
                at = rng.randrange(0, length - 4096) & ~4095
                os.pread(fd, 4096, at)
                touch(big_at + at, 4096)
        finally:
            os.close(fd)
        return size["rand"] * 4096

    def several(mnt):
        # Four readers at once, each `cat` of its own tensor.
        base, h = st_header(os.path.join(root, "hundred.safetensors"))
        names = ["t%03d" % (10 + 20 * i) for i in range(4)]
        ps = [subprocess.Popen(["cat", os.path.join(mnt, "tensors", n)],
                               stdout=subprocess.DEVNULL) for n in names]
        if any(p.wait() != 0 for p in ps):
            raise RuntimeError("cat failed")
        for n in names:
            touch(base + h[n]["data_offsets"][0], each)
        return 4 * each

    trace("sequential cat", big_url, cat_big)
    trace("strided 64 KiB / MiB", big_url, strided)
    trace("mmap 3 of 100 tensors", hundred, mmap3)
    trace("random 4 KiB", big_url, random4k)
    trace("4 readers, 4 tensors", hundred, several)
    return out


def trace_rows(build, old, link, root, size, fresh_cache, table):
    """Bytes fetched / bytes read for every read-ahead trace, this build
    beside `old` (another build, or None), in the same run."""
    new = read_traces(build, link, root, size, fresh_cache)
    was = read_traces(old, link, root, size, fresh_cache) if old else {}
    for name, (nread, floor, nbytes, gets, t) in new.items():
        base = ""
        if name in was:
            _, _, b0, g0, t0 = was[name]
            base = "old: %.2f MB, %.3f / %.3f, %d GETs, %.2f s" % (
                b0 / 1e6, b0 / nread, b0 / floor, g0, t0)
        table.add("trace %s: fetched / read, / blocks touched" % name,
                  "%.2f MB for %.2f MB read (blocks %.2f MB), %d GETs, %.2f s" % (
                      nbytes / 1e6, nread / 1e6, floor / 1e6, gets, t),
                  base, "%.3f / %.3f" % (nbytes / nread, nbytes / floor), "<= 1.1",
                  nbytes / nread <= 1.1)


def run(build, size, root, table, old=None, traces_only=False):
    tmp = tempfile.mkdtemp(prefix="modelfs-rb-")
    link = Link(build, root, tmp)
    caches = []

    def fresh_cache():
        c = tempfile.mkdtemp(prefix="modelfs-rb-cache-", dir="/var/tmp")
        caches.append(c)
        return c
    try:
        big_url = link.base + "big.safetensors"
        off, length = tensor_range(os.path.join(root, "big.safetensors"))
        mib = length / MIB

        # Mount, per model; metadata after it.
        for name in ("big.safetensors", "model.gguf", "model.onnx", "model.bin"):
            mark = link.mark()
            mnt, t = mount(build, link.base + name, fresh_cache())
            gets, heads, nbytes = link.since(mark)
            files = 2 if name == "model.onnx" else 1
            table.add("mount %s" % name, "%.2f s, %d GETs, %d KB" % (t, gets, nbytes // 1000),
                      target="<= 3 requests per file", ok=gets + heads <= 3 * files)
            mark = link.mark()
            subprocess.run(["ls", "-lR", mnt], stdout=subprocess.DEVNULL, check=True)
            subprocess.run(["cat", os.path.join(mnt, "model.json")], stdout=subprocess.DEVNULL,
                           check=True)
            gets, heads, _ = link.since(mark)
            table.add("ls -lR, model.json %s" % name, "%d requests" % (gets + heads),
                      target="0", ok=gets + heads == 0)
            mfstest.unmount_and_remove(mnt)

        # A model of 100 shards, by its index's URL.
        mark = link.mark()
        mnt, t = mount(build, link.base + "sharded/model.safetensors.index.json", fresh_cache())
        gets, heads, nbytes = link.since(mark)
        table.add("mount 100 shards (index URL)", "%.2f s, %d GETs, %d KB" % (t, gets,
                                                                              nbytes // 1000),
                  target="<= 2 s", ok=t <= 2)
        mfstest.unmount_and_remove(mnt)

        # First read of the tensor vs curl.
        one = curls(big_url, off, length, 1)
        eight = curls(big_url, off, length, 8)
        if old:
            mnt, _ = mount(old, big_url, fresh_cache())
            t_old = cat(os.path.join(mnt, "tensors", "big"))
            mfstest.unmount_and_remove(mnt)
            table.add("first read vs 8 curls, old build", "%.2f s" % t_old,
                      "8 curls %.2f s" % eight, "%.2fx" % (eight / t_old), ">= 0.9x",
                      eight / t_old >= 0.9)
        cache = fresh_cache()
        mnt, _ = mount(build, big_url, cache)
        pid = mfstest.daemon_pid(mnt)
        mark = link.mark()
        t_cat = cat(os.path.join(mnt, "tensors", "big"))
        gets, heads, nbytes = link.since(mark)
        table.add("first read %d MiB" % mib, "%.2f s (%.0f MiB/s)" % (t_cat, mib / t_cat),
                  "one curl %.2f s" % one, "%.2fx" % (one / t_cat), ">= 5x", one / t_cat >= 5)
        table.add("first read vs 8 curls", "%.2f s" % t_cat, "8 curls %.2f s" % eight,
                  "%.2fx" % (eight / t_cat), ">= 0.9x", eight / t_cat >= 0.9)
        table.add("fetched / read", "%d MB for %d MB, %d GETs" % (nbytes // 10**6, length // 10**6,
                                                                    gets),
                  ratio="%.3f" % (nbytes / length), target="<= 1.1", ok=nbytes / length <= 1.1)
        if pid:
            hwm = vm_hwm(pid)
            table.add("daemon peak RSS", "%d MiB" % (hwm // MIB), target="<= 256 MiB + 64",
                      ok=hwm <= 320 * MIB)
        t_warm = cat(os.path.join(mnt, "tensors", "big"))
        table.add("re-read, same mount", "%.2f s (%.0f MiB/s)" % (t_warm, mib / t_warm))
        mfstest.unmount_and_remove(mnt)

        trace_rows(build, old, link, root, size, fresh_cache, table)
        if traces_only:
            return

        # rclone's HTTP mount (its full VFS cache) with modelfs on top.
        if shutil.which("rclone"):
            t_rc = rclone_read(build, link, root, tmp)
            if t_rc is not None:
                table.add("first read, rclone HTTP mount + modelfs", "%.2f s" % t_rc,
                          "modelfs %.2f s" % t_cat, "%.2fx" % (t_rc / t_cat),
                          "modelfs faster", t_cat < t_rc)
        else:
            table.add("first read, rclone HTTP mount + modelfs", "not measured: no rclone "
                      "(install-deps.sh --bench)")

        # np.load of the twin, fresh mount.
        mnt, _ = mount(build, big_url, fresh_cache())
        npy = os.path.join(mnt, "npy", "big.npy")
        code = ("import numpy as np,sys; a=np.load(sys.argv[1], mmap_mode='r'); "
                "print(int(a.view(np.uint64).sum()))")
        t_np, r = timed(lambda: subprocess.run([sys.executable, "-c", code, npy],
                                               capture_output=True, text=True))
        ok = r.returncode == 0
        table.add("np.load mmap + one pass", "%.2f s" % t_np, "cat %.2f s" % t_cat,
                  "%.2fx" % (t_np / t_cat), "<= 1.5x", ok and t_np / t_cat <= 1.5)
        mfstest.unmount_and_remove(mnt)

        # Warm remount from the cache_dir, vs a local mount's first read.
        mark = link.mark()
        mnt, _ = mount(build, big_url, cache)
        t_re = cat(os.path.join(mnt, "tensors", "big"))
        gets, heads, _ = link.since(mark)
        mfstest.unmount_and_remove(mnt)
        lmnt = tempfile.mkdtemp(prefix="modelfs-rb-local-")
        subprocess.run([os.path.join(build, "modelfs"), os.path.join(root, "big.safetensors"),
                        lmnt], check=True)
        mfstest.drop_caches()
        t_local = cat(os.path.join(lmnt, "tensors", "big"))
        mfstest.unmount_and_remove(lmnt)
        table.add("warm remount read", "%.2f s, %d GETs %d HEADs" % (t_re, gets, heads),
                  "local first read %.2f s" % t_local, "%.2fx" % (t_local / t_re),
                  ">= 0.9x, 0 GETs", gets == 0 and t_local / t_re >= 0.9)

        # 4 KiB random reads.
        mnt, _ = mount(build, big_url, fresh_cache())
        rng = random.Random(4)
        path = os.path.join(mnt, "tensors", "big")
        mark = link.mark()
        fd = os.open(path, os.O_RDONLY)
        try:
            for _ in range(size["rand"]):
                o = rng.randrange(0, length - 4096) & ~4095
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                os.pread(fd, 4096, o)
        finally:
            os.close(fd)
        gets, _, nbytes = link.since(mark)
        table.add("random 4 KiB reads", "%d reads, %d GETs, %d KB" % (size["rand"], gets,
                                                                     nbytes // 1000),
                  ratio="%.2f GETs/read" % (gets / size["rand"]), target="<= 1",
                  ok=gets <= size["rand"])
        mfstest.unmount_and_remove(mnt)

        # cache_max.
        c = fresh_cache()
        mnt, _ = mount(build, big_url, c, ("-o", "cache_max=64M"))
        cat(os.path.join(mnt, "tensors", "big"))
        mfstest.unmount_and_remove(mnt)
        used = du(c)
        table.add("cache_dir after the read", "%d MiB" % (used // MIB), target="<= 64 MiB",
                  ok=used <= 64 * MIB)
    finally:
        link.close()
        for c in caches:
            shutil.rmtree(c, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--old", help="another build (the commit before) measured beside this one "
                    "for the first read and the read-ahead traces")
    ap.add_argument("--traces", action="store_true",
                    help="stop after the first read and the read-ahead traces")
    ap.add_argument("--cache", default=os.environ.get("MODELFS_BENCH_CACHE",
                                                      "/var/tmp/modelfs-bench-cache"))
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse") or not shutil.which("nginx") or \
            not shutil.which("curl"):
        log("needs root, /dev/fuse, nginx and curl")
        return SKIP
    size = QUICK if a.quick else FULL
    root = os.path.join(a.cache, "remote-%d" % size["big_mib"])
    make_inputs(root, size)
    make_hundred(root, size)
    table = Table()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    rc = 0
    try:
        run(os.path.abspath(a.build), size, root, table,
            os.path.abspath(a.old) if a.old else None, a.traces)
    except Exception as e:  # noqa: BLE001 - the table still shows what was measured
        table.add("FAILED", str(e))
        rc = 1
    commit = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print("remote benchmark, %s, commit %s, link: limit_rate 40m + 40 ms round trip\n" %
          ("quick" if a.quick else "full", commit))
    table.show()
    return rc


if __name__ == "__main__":
    sys.exit(main())
