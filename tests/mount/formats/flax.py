"""Flax msgpack's own checks, beyond the generic ones (which check every
tensor's dtype, shape, bytes and offset against scripts/gen_flax.py's
expectations, and the hostile files it writes: depth, length and count
bombs, lying shapes and chunks, each refused with exit 5 naming the file
and the problem):

  - an independent reader: Debian's python3-msgpack unpacks every file
    with Flax's ext types decoded as flax/serialization.py does; every
    array (chunked ones joined), named by its keys joined with '.', is a
    tensor of model.json with that dtype and shape and those bytes
    through the mount, and there are no others; every other leaf is in
    the metadata's "values" as msgpack gives it;
  - a second reader: @msgpack/msgpack from npm (scripts/fetch_msgpack_js.sh,
    into BUILD_DIR/npm-msgpack; skipped, visibly, when npm cannot install
    it), in one node process for every file, must find the same tensors,
    dtypes, shapes and sha256;
  - the skeleton (flax_skeleton.c): a file of 1 MiB of arrays loaded
    through a source that reads each range (MODELFS_SOURCE=read, as a
    remote source does) gives the same model.json reading a few KiB, not
    its arrays; and a file of 4 MiB mounted from http:// on loopback
    (tests/mount/rangeserver.py) fetches a fraction of it at mount and
    serves the same model.json and tensors as the local file.
"""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

import mfstest
import msgpack
import rangeserver
import numpy as np

DIRS = ("gen/flax",)

HERE = os.path.dirname(os.path.abspath(__file__))
FETCH = os.path.join(HERE, "..", "..", "..", "scripts", "fetch_msgpack_js.sh")
NODE_READER = os.path.join(HERE, "..", "flax_reader.cjs")


class Arr:
    def __init__(self, shape, dtype, raw):
        self.shape, self.dtype, self.raw = list(shape), dtype, raw


def ext_hook(code, data):
    if code in (1, 3):
        shape, dtype, raw = msgpack.unpackb(data, raw=True)
        return Arr(shape, dtype.decode(), raw)
    if code == 2:
        re, im = msgpack.unpackb(data)
        return {"real": re, "imag": im}
    return msgpack.ExtType(code, data)


def independent(path):
    """(tensors {name: Arr}, values {name: value}) by python3-msgpack."""
    with open(path, "rb") as f:
        doc = msgpack.unpackb(f.read(), ext_hook=ext_hook, raw=False, strict_map_key=False)
    tensors, values = {}, {}

    def walk(v, name):
        if isinstance(v, Arr):
            tensors[name] = v
        elif isinstance(v, dict) and "__msgpack_chunked_array__" in v:
            parts = [v["chunks"][str(i)] for i in range(len(v["chunks"]))]
            shape = [v["shape"][str(i)] for i in range(len(v["shape"]))]
            tensors[name] = Arr(shape, parts[0].dtype, b"".join(p.raw for p in parts))
        elif isinstance(v, dict) and set(v) != {"real", "imag"}:
            for k, x in v.items():
                walk(x, "%s.%s" % (name, k) if name else str(k))
        else:
            values[name] = v
    walk(doc, "")
    return tensors, values


def check_model(c, t, model, expect, mount):
    if expect is None or expect.get("expect") != "readable":
        return
    name = os.path.basename(model)
    tensors, values = independent(model)
    mnt = mount()
    doc = json.loads(mfstest.read_bytes(os.path.join(mnt, "model.json")))
    got = {x["name"]: x for x in doc["tensors"]}
    c.equal(sorted(got), sorted(tensors), "%s: tensors vs python3-msgpack" % name)
    for n, a in tensors.items():
        x = got.get(n)
        if x is None:
            continue
        # A dtype modelfs does not read: its bytes, the declared dtype and
        # shape beside them.
        dt, shape = ((x.get("declared_dtype"), x.get("declared_shape")) if x.get("problem")
                     else (x["dtype"], x["shape"]))
        c.equal((dt, shape, x["nbytes"]), (a.dtype, a.shape, len(a.raw)),
                "%s: %s dtype, shape, nbytes vs python3-msgpack" % (name, n))
        c.check(mfstest.read_bytes(os.path.join(mnt, x["path"])) == a.raw,
                "%s: %s bytes through the mount vs python3-msgpack" % (name, n))
        # f32/ views of the types numpy lacks or widens, from the bits.
        if x["dtype"] in ("bfloat16", "float16") and c.check("f32" in x, "%s: %s has an f32 view"
                                                              % (name, n)):
            bits = np.frombuffer(a.raw, np.uint16)
            want = ((bits.astype(np.uint32) << 16).view(np.float32) if x["dtype"] == "bfloat16"
                    else bits.view(np.float16).astype(np.float32)).reshape(a.shape)
            got32 = np.load(os.path.join(mnt, x["f32"]))
            c.check(got32.dtype == np.float32 and np.array_equal(got32, want, equal_nan=True),
                    "%s: %s f32 view vs its bits" % (name, n))
    meta = {v["name"]: v["value"] for v in doc["metadata"].get("values", [])}
    c.equal(meta, values, "%s: metadata values vs python3-msgpack" % name)
    if "values" in expect:
        c.equal(meta, expect["values"], "%s: metadata values vs the generator" % name)
    t.flax_models = getattr(t, "flax_models", []) + [(model, expect)]


def check_second_reader(c, t):
    models = getattr(t, "flax_models", [])
    if not models:
        return
    r = subprocess.run([FETCH, os.path.join(t.build, "npm-msgpack")], capture_output=True, text=True,
                       timeout=400)
    if r.returncode != 0:
        c.skip("@msgpack/msgpack not available (%s): the second reader is not run"
               % r.stderr.strip()[-200:])
        return
    pkg = os.path.abspath(r.stdout.strip())
    r = subprocess.run(["node", NODE_READER, pkg] + [m for m, _ in models], capture_output=True,
                       text=True, timeout=60)
    if not c.check(r.returncode == 0, "node reader ran: %s" % r.stderr[-300:]):
        return
    res = json.loads(r.stdout)
    for model, expect in models:
        name = os.path.basename(model)
        want = {x["name"]: [x.get("declared_dtype", x["dtype"]), x["shape"], x["nbytes"], x["sha256"]]
                for x in expect["tensors"]}
        got = {n: [x["dtype"], x["shape"], x["nbytes"], x["sha256"]]
               for n, x in res[model]["tensors"].items()}
        c.equal(got, want, "%s: tensors by @msgpack/msgpack vs the mount's expectation" % name)


def flax_file(path, layers, shape, seed):
    """A Flax file of `layers` modules of a kernel of `shape` and a bias;
    returns the arrays by name."""
    rng = np.random.default_rng(seed)
    tree = {"layer_%d" % i: {"kernel": rng.standard_normal(shape).astype(np.float32),
                             "bias": np.full(shape[-1], i, np.float32)} for i in range(layers)}
    pay = lambda a: msgpack.ExtType(1, msgpack.packb((a.shape, a.dtype.name, a.tobytes()),
                                                     use_bin_type=True))
    with open(path, "wb") as f:
        f.write(msgpack.packb({"params": tree, "step": 3}, default=pay, use_bin_type=True))
    return {"params.%s.%s" % (m, k): a for m, d in tree.items() for k, a in d.items()}


def check_remote(c, t):
    if not mfstest.can_mount():
        return
    work = tempfile.mkdtemp(prefix="modelfs-flax-")
    srv = rangeserver.start(work)
    try:
        path = os.path.join(work, "flax_model.msgpack")
        arrays = flax_file(path, 4, (512, 1024), 11)   # 2 MiB kernels, as mount.remote's ONNX
        size = os.path.getsize(path)
        url = srv.url + "/flax_model.msgpack"
        ls = os.path.join(t.build, "modelfs-ls")
        local = subprocess.run([ls, path, "model.json"], capture_output=True, env=t.env, timeout=60)
        extra = ("-o", "cache_dir=" + os.path.join(work, "cache"))
        with mfstest.mounted(t.modelfs, url, t.env, extra) as mnt:
            fetched = mfstest.range_bytes(srv.log)
            c.check(fetched <= size // 4, "flax_model.msgpack over http: the mount fetched %d bytes "
                    "of %d" % (fetched, size))
            c.equal(mfstest.read_bytes(os.path.join(mnt, "model.json")), local.stdout,
                    "flax_model.msgpack over http: model.json as the local file's")
            doc = json.loads(local.stdout)
            ok = all(mfstest.read_bytes(os.path.join(mnt, x["path"])) == arrays[x["name"]].tobytes()
                     for x in doc["tensors"])
            c.check(ok and len(doc["tensors"]) == len(arrays),
                    "flax_model.msgpack over http: every tensor's bytes")
    except RuntimeError as e:
        c.check(False, "flax_model.msgpack over http: mount: %s" % e)
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)


def check_skeleton(c, t):
    work = tempfile.mkdtemp(prefix="modelfs-flax-")
    try:
        rng = np.random.default_rng(7)
        layers = {"layer_%d" % i: {"kernel": rng.standard_normal((256, 128)).astype(np.float32),
                                   "bias": np.full(128, i, np.float32)} for i in range(8)}
        pay = lambda a: msgpack.ExtType(1, msgpack.packb((a.shape, a.dtype.name, a.tobytes()),
                                                         use_bin_type=True))
        data = msgpack.packb({"params": layers, "step": 3}, default=pay, use_bin_type=True)
        path = os.path.join(work, "big.msgpack")
        with open(path, "wb") as f:
            f.write(data)
        ls = os.path.join(t.build, "modelfs-ls")
        log = os.path.join(work, "ranges")
        whole = subprocess.run([ls, path, "model.json"], capture_output=True, env=t.env, timeout=60)
        renv = dict(t.env, MODELFS_SOURCE="read", MODELFS_SOURCE_LOG=log)
        skel = subprocess.run([ls, path, "model.json"], capture_output=True, env=renv, timeout=60)
        c.check(whole.returncode == 0 and skel.returncode == 0 and whole.stdout == skel.stdout,
                "big.msgpack: model.json by the skeleton equals the mapped load's (exit %d, %d)"
                % (whole.returncode, skel.returncode))
        with open(log) as f:
            got = sum(int(line.split()[2]) for line in f if line.startswith("get "))
        c.check(got < len(data) // 8, "big.msgpack (%d bytes): the load read %d bytes, not its arrays"
                % (len(data), got))
        k = subprocess.run([ls, path, "tensors/params.layer_5.kernel"], capture_output=True, env=renv,
                           timeout=60)
        c.equal(hashlib.sha256(k.stdout).hexdigest(),
                hashlib.sha256(layers["layer_5"]["kernel"].tobytes()).hexdigest(),
                "big.msgpack: a tensor read through that source")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_folder(c, t):
    """A Hub repository's folder: flax_model.msgpack is a model beside the
    others (recognised by its bytes, whatever its name)."""
    work = tempfile.mkdtemp(prefix="modelfs-flax-")
    try:
        repo = os.path.join(work, "repo")
        os.makedirs(repo)
        src = os.path.join(t.gen, "flax", "flax_model.msgpack")
        shutil.copy(src, os.path.join(repo, "flax_model.msgpack"))
        shutil.copy(os.path.join(t.gen, "flax", "dtypes.msgpack"), os.path.join(repo, "weights.bin"))
        ls = os.path.join(t.build, "modelfs-ls")
        r = subprocess.run([ls, work], capture_output=True, text=True, env=t.env, timeout=60)
        paths = {line.split()[-1] for line in r.stdout.splitlines()}
        c.check(r.returncode == 0 and "repo/flax_model.msgpack/model.json" in paths and
                "repo/weights.bin/tensors/params.bf16.embedding" in paths,
                "a folder: both Flax files are models (exit %d)" % r.returncode)
        one = subprocess.run([ls, work, "repo/flax_model.msgpack/model.json"], capture_output=True,
                             env=t.env, timeout=60)
        alone = subprocess.run([ls, src, "model.json"], capture_output=True, env=t.env, timeout=60)
        c.equal(json.loads(one.stdout)["tensors"], json.loads(alone.stdout)["tensors"],
                "a folder: the model's table as the file's alone")
    finally:
        shutil.rmtree(work, ignore_errors=True)


EXTRAS = (check_second_reader, check_skeleton, check_remote, check_folder)
