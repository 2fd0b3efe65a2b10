"""TensorFlow.js's own checks, beyond the generic ones: every weight of the
manifest against an independent reader (json + the shards concatenated in
Python: a weight's bytes are its slice of its group), through the mount;
`location`/`offset` or `pieces` pointing at those bytes; the dequantized
f32/ views of uint8/uint16 weights against numpy's q * scale + min, the
float16 ones against numpy's float32; strings as JSON; graph.json is the
modelTopology, metadata the other keys; a folder holding model.json and its
shards mounts it as a model; models saved by npm's @tensorflow/tfjs
itself (scripts/tfjs_save.js; skipped, visibly, when npm cannot install
it); hostile manifests (sizes that lie, shape overflow, negative dims, path
traversal, symlinks out, missing shards, a huge manifest, deep JSON)
refused with exit 5 and one line naming the file.
"""
import errno
import hashlib
import json
import os
import shutil
import struct
import subprocess
import tempfile

import mfstest
import numpy as np
mfstest.cache_npy_header_filter(np)

DIRS = ("gen/tfjs",)

SIZES = {"float32": 4, "int32": 4, "bool": 1, "complex64": 8}
QSIZES = {"uint8": 1, "uint16": 2, "float16": 2}
NP = {"float32": "<f4", "int32": "<i4", "bool": "|b1", "complex64": "<c8", "uint8": "|u1",
      "uint16": "<u2", "float16": "<f2"}


def read_manifest(model):
    """An independent reader: [(entry, stored bytes, group, group offset)]."""
    with open(model) as f:
        doc = json.load(f)
    out = []
    for gi, g in enumerate(doc if isinstance(doc, list) else doc["weightsManifest"]):
        data = b""
        for p in g["paths"]:
            with open(os.path.join(os.path.dirname(model), p), "rb") as f:
                data += f.read()
        at = 0
        for w in g["weights"]:
            n = int(np.prod(w["shape"], dtype=np.int64))
            if w["dtype"] == "string":
                start = at
                for _ in range(n):
                    at += 4 + struct.unpack_from("<I", data, at)[0]
                out.append((w, data[start:at], gi, start))
                continue
            q = w.get("quantization")
            size = QSIZES[q["dtype"]] if q else SIZES[w["dtype"]]
            out.append((w, data[at:at + n * size], gi, at))
            at += n * size
    return doc, out


def strings_of(raw, n):
    vals, at = [], 0
    for _ in range(n):
        k = struct.unpack_from("<I", raw, at)[0]
        vals.append(raw[at + 4:at + 4 + k].decode())
        at += 4 + k
    return vals


PAGE = os.sysconf("SC_PAGE_SIZE")


def page_joinable(pieces):
    """Whether a weight's pieces (local shards) are served in place, mapped
    end to end: at most 32, each after the first starting a page of its
    shard, each before the last ending on a page boundary of the run."""
    if not 2 <= len(pieces) <= 32:
        return False
    at = pieces[0]["offset"] % PAGE
    for i, p in enumerate(pieces):
        if i and p["offset"] % PAGE:
            return False
        at += p["nbytes"]
        if i + 1 < len(pieces) and at % PAGE:
            return False
    return True


def check_weights(c, name, model, mnt, want=None):
    """Every weight through the mount `mnt` (a model's root) against the
    manifest and shards, and against the expectation `want` when given."""
    doc, weights = read_manifest(model)
    with open(os.path.join(mnt, "model.json")) as f:
        table = json.load(f)
    by_name = {t["name"]: t for t in table["tensors"]}
    c.equal(len(table["tensors"]), len(weights), name + ": one tensor per weight")
    expect = {t["name"]: t for t in (want or {}).get("tensors", [])}
    for w, raw, gi, at in weights:
        what = "%s: %s" % (name, w["name"])
        t = by_name.get(w["name"])
        if not c.check(t is not None, what + " is in the table"):
            continue
        c.equal(t["group"], gi, what + " group")
        c.equal(t["group_offset"], at, what + " group_offset")
        c.equal(t["tfjs_dtype"], w["dtype"], what + " tfjs_dtype")
        c.equal(t.get("quantization"), w.get("quantization"), what + " quantization")
        c.equal(t["shape"], w["shape"], what + " shape")
        got = mfstest.read_bytes(os.path.join(mnt, t["path"]))
        n = int(np.prod(w["shape"], dtype=np.int64))
        if w["dtype"] == "string":
            c.equal(json.loads(got), strings_of(raw, n), what + " strings as JSON")
            c.equal(t["stored_nbytes"], len(raw), what + " stored_nbytes")
            if w["name"] in expect:
                c.equal(json.loads(got), expect[w["name"]]["values"], what + " strings vs numpy's")
            continue
        c.check(got == raw, what + " bytes through the mount vs the shards")
        if w["name"] in expect:
            c.equal(hashlib.sha256(got).hexdigest(), expect[w["name"]]["sha256"], what + " sha256 vs numpy's")
        # Where the table says the bytes are.
        if "pieces" in t:
            joined = b""
            for p in t["pieces"]:
                with open(os.path.join(os.path.dirname(model), p["location"]), "rb") as f:
                    f.seek(p["offset"])
                    joined += f.read(p["nbytes"])
            c.check(joined == raw and len(t["pieces"]) > 1, what + " pieces point at its bytes")
            inplace = page_joinable(t["pieces"])
            c.equal(t.get("decoded"), None if inplace else True,
                    what + " across shards: %s" % ("mapped end to end" if inplace else "decoded"))
            JOINED[inplace] += 1
        elif raw:
            with open(os.path.join(os.path.dirname(model), t["location"]), "rb") as f:
                f.seek(t["offset"])
                c.check(f.read(len(raw)) == raw, what + " location and offset point at its bytes")
        q = w.get("quantization")
        stored = np.frombuffer(raw, dtype=NP[q["dtype"] if q else w["dtype"]]).reshape(w["shape"])
        if q and q["dtype"] in ("uint8", "uint16") and w["dtype"] == "int32":
            # decodeWeights rounds these to int32: no float32 view.
            c.check("f32" not in t, what + " (quantized int32) has no f32/ view")
        elif q and q["dtype"] in ("uint8", "uint16"):
            deq = (stored.astype(np.float64) * q["scale"] + q["min"]).astype("<f4")
            if c.check("f32" in t, what + " has a dequantized f32/ view"):
                view = mfstest.np_load(np, os.path.join(mnt, t["f32"]))
                c.equal(view.dtype.str, "<f4", what + " f32 view dtype")
                c.check(view.shape == deq.shape and view.tobytes() == deq.tobytes(),
                        what + " f32 view = q * scale + min")
                # dequantized_sha256: numpy's (gen_tfjs.py); f32_sha256: tfjs's decodeWeights.
                for key in ("dequantized_sha256", "f32_sha256"):
                    if key in expect.get(w["name"], {}):
                        c.equal(hashlib.sha256(view.tobytes()).hexdigest(), expect[w["name"]][key],
                                what + " f32 view vs the expectation's " + key)
        elif q and q["dtype"] == "float16":
            view = mfstest.np_load(np, os.path.join(mnt, t["f32"]))
            c.check(view.tobytes() == stored.astype("<f4").tobytes(), what + " float16 f32 view")
    if isinstance(doc, list):
        c.equal(table["metadata"], {}, name + ": a manifest alone has no metadata")
        c.check(not os.path.exists(os.path.join(mnt, "graph.json")), name + ": a manifest alone has no graph.json")
        return
    if "modelTopology" in doc:
        with open(os.path.join(mnt, "graph.json")) as f:
            c.equal(json.load(f), doc["modelTopology"], name + ": graph.json is modelTopology")
    c.equal(table["metadata"], {k: v for k, v in doc.items() if k not in ("modelTopology", "weightsManifest")},
            name + ": metadata is the other keys")


JOINED = {True: 0, False: 0}   # weights across shards seen, by whether mapped in place


def check_model(c, t, model, expect, mount):
    if expect is None or expect.get("format") != "tfjs" or not os.path.isfile(model):
        return
    before = dict(JOINED)
    check_weights(c, os.path.relpath(model), model, mount(), expect)
    if os.path.basename(model) == "paged.json" and PAGE == 4096:
        # Its shards are pages: both kinds must be met there.
        seen = {k: JOINED[k] - before[k] for k in JOINED}
        c.equal(seen, {True: 2, False: 1}, "paged.json holds weights across shards of both kinds (mapped end to end, copied)")


def check_folder(c, t):
    """A folder holding model.json and its shards (a repository): the
    model.json is a model of the folder's mount."""
    repo = os.path.join(t.gen, "tfjs_repo")
    if not os.path.isdir(repo):
        return c.skip("%s is absent" % repo)
    with open(os.path.join(repo, "model.json.expect.json")) as f:
        want = json.load(f)
    with mfstest.mounted(t.modelfs, repo, t.env) as mnt:
        c.check(os.path.isdir(os.path.join(mnt, "model.json", "tensors")), "tfjs_repo/: model.json is a model")
        check_weights(c, "tfjs_repo/model.json", os.path.join(repo, "model.json"), os.path.join(mnt, "model.json"),
                      want)


# ---- hostile manifests ---------------------------------------------------

def write(d, name, doc, shards):
    os.makedirs(d, exist_ok=True)
    for p, b in shards.items():
        with open(os.path.join(d, p), "wb") as f:
            f.write(b)
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def one(weights, paths=("s.bin",)):
    return {"weightsManifest": [{"paths": list(paths), "weights": weights}]}


def refused(c, t, path, what, contains):
    r = subprocess.run([t.modelfs_ls, path], capture_output=True, text=True, env=t.env, timeout=60)
    c.equal(r.returncode, 5, what + " refused (modelfs-ls exit)")
    lines = r.stderr.strip().splitlines()
    c.check(len(lines) == 1 and path in lines[0] and contains in lines[0],
            "%s: one line naming the file and %r: %r" % (what, contains, r.stderr))


def check_hostile(c, t):
    tmp = tempfile.mkdtemp(prefix="modelfs-tfjs-")
    try:
        f32 = {"name": "w", "shape": [4], "dtype": "float32"}
        d = os.path.join(tmp, "m")
        p = write(d, "past.json", one([f32, dict(f32, name="v")]), {"s.bin": b"\0" * 20})
        refused(c, t, p, "a weight past the shards' end", "pass the end of its shards")
        p = write(d, "huge.json", one([dict(f32, shape=[2**32, 2**32, 2**32])]), {})
        refused(c, t, p, "a shape of more than 2^64 elements", "more than 2^64 elements")
        p = write(d, "bytes.json", one([dict(f32, shape=[2**62])]), {})
        refused(c, t, p, "a shape of more than 2^64 bytes", "pass the end")
        p = write(d, "neg.json", one([dict(f32, shape=[-1, 4])]), {})
        refused(c, t, p, "a negative dimension", "non-negative integers")
        p = write(d, "float.json", one([dict(f32, shape=[2.5])]), {})
        refused(c, t, p, "a fractional dimension", "non-negative integers")
        p = write(d, "dtype.json", one([dict(f32, dtype="int64")]), {})
        refused(c, t, p, "an unknown dtype", "\"dtype\" is none of")
        p = write(d, "noscale.json", one([dict(f32, quantization={"dtype": "uint8"})]), {"s.bin": b"\0" * 4})
        refused(c, t, p, "uint8 quantization without scale", "\"scale\" and \"min\"")
        p = write(d, "strpast.json", one([{"name": "s", "shape": [2], "dtype": "string"}]),
                  {"s.bin": struct.pack("<I", 3) + b"abc" + struct.pack("<I", 1000)})
        refused(c, t, p, "a string longer than the shards", "string weight")
        p = write(d, "strbomb.json", one([{"name": "s", "shape": [2**40], "dtype": "string"}]),
                  {"s.bin": b"\0" * 4000})
        refused(c, t, p, "2^40 strings in 4000 bytes", "string weight")
        with open(os.path.join(tmp, "outside.bin"), "wb") as f:
            f.write(b"\0" * 16)
        p = write(d, "dotdot.json", one([f32], ["../outside.bin"]), {})
        refused(c, t, p, "a shard path with ..", "not a relative path")
        p = write(d, "abs.json", one([f32], [os.path.join(tmp, "outside.bin")]), {})
        refused(c, t, p, "an absolute shard path", "not a relative path")
        p = write(d, "dot.json", one([f32], ["./s.bin"]), {})
        refused(c, t, p, "a shard path with .", "not a relative path")
        os.symlink(os.path.join(tmp, "outside.bin"), os.path.join(d, "link.bin"))
        p = write(d, "link.json", one([f32], ["link.bin"]), {})
        refused(c, t, p, "a shard that is a symlink out", "symlinks are not followed")
        os.makedirs(os.path.join(tmp, "elsewhere"))
        with open(os.path.join(tmp, "elsewhere", "x.bin"), "wb") as f:
            f.write(b"\0" * 16)
        os.symlink(os.path.join(tmp, "elsewhere"), os.path.join(d, "sub"))
        p = write(d, "subdir.json", one([f32], ["sub/x.bin"]), {})
        refused(c, t, p, "a shard below a symlinked folder", "symlinks are not followed")
        p = write(d, "manyweights.json", '{"weightsManifest": [{"paths": [], "weights": [' +
                  ",".join(["{}"] * ((1 << 20) + 1)) + "]}]}", {})
        refused(c, t, p, "2^20 + 1 weights", "more than 1048576 weights")
        p = write(d, "missing.json", one([f32], ["nope.bin"]), {})
        refused(c, t, p, "a missing shard", "cannot open shard nope.bin")
        p = write(d, "deep.json", '{"weightsManifest": [], "modelTopology": ' + "[" * 5000 + "]" * 5000 + "}", {})
        refused(c, t, p, "JSON nested 5000 deep", "not valid JSON")
        p = write(d, "notjson.json", '{"weightsManifest": [', {})
        refused(c, t, p, "a manifest cut short", "not valid JSON")
        p = write(d, "many.json", {"weightsManifest": [{"paths": ["s.bin"] * 70000, "weights": []}]},
                  {"s.bin": b""})
        refused(c, t, p, "70,000 shard paths", "more than 65536 shards")
        p = write(d, "big.json", '{"weightsManifest": [], "pad": "' + "x" * (65 << 20) + '"}', {})
        r = subprocess.run([t.modelfs_ls, p], capture_output=True, text=True, env=t.env, timeout=60)
        c.check(r.returncode != 0, "a model.json of 65 MiB is not mounted")
        os.unlink(p)
        # Shard edited after the mount: EIO, not other bytes.
        p = write(d, "edit.json", one([f32]), {"e.bin": b"\1" * 16})
        with open(p, "w") as f:
            json.dump(one([f32], ["e.bin"]), f)
        with mfstest.mounted(t.modelfs, p, t.env) as mnt:
            with open(os.path.join(d, "e.bin"), "wb") as f:
                f.write(b"\2" * 16)
            # (read_or_errno gives (bytes, 0) or (None, errno): this once
            # compared that pair with bytes, which could not fail.)
            r = mfstest.read_or_errno(os.path.join(mnt, "tensors", "w"))
            c.equal(r, (None, errno.EIO), "a shard rewritten after the mount reads as an error")
        # The same for a weight mapped end to end over two page-sized
        # shards, its second shard rewritten after the mount (once read,
        # its pages are the kernel's: a later read may not reach modelfs).
        w2 = {"name": "w", "shape": [2 * PAGE // 4], "dtype": "float32"}
        p = write(d, "edit2.json", one([w2], ["e1.bin", "e2.bin"]),
                  {"e1.bin": b"\1" * PAGE, "e2.bin": b"\1" * PAGE})
        with mfstest.mounted(t.modelfs, p, t.env) as mnt:
            with open(os.path.join(d, "e2.bin"), "r+b") as g:
                g.write(b"\2" * PAGE)
            r = mfstest.read_or_errno(os.path.join(mnt, "tensors", "w"))
            c.equal(r, (None, errno.EIO), "a weight over two page-sized shards, its second rewritten after the mount")
    finally:
        shutil.rmtree(tmp)


# ---- models saved by @tensorflow/tfjs itself ------------------------------

def tfjs_version(t):
    with open(os.path.join(t.build, "npm-tfjs", "node_modules", "@tensorflow", "tfjs", "package.json")) as f:
        return json.load(f)["version"]


def check_npm(c, t):
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.normpath(os.path.join(here, "..", "..", ".."))
    r = subprocess.run(["sh", os.path.join(src, "scripts", "fetch_npm.sh"), "tfjs", "@tensorflow/tfjs@4",
                        os.path.join(t.build, "npm-tfjs"), "node_modules/@tensorflow/tfjs/package.json"],
                       capture_output=True, text=True, timeout=400)
    if r.returncode == 77:
        return c.skip("@tensorflow/tfjs from npm: %s" % r.stderr.strip())
    if not c.equal(r.returncode, 0, "fetch_npm.sh @tensorflow/tfjs: %s" % r.stderr.strip()):
        return
    out = tempfile.mkdtemp(prefix="modelfs-tfjs-npm-")
    try:
        env = dict(os.environ, NODE_PATH=os.path.join(t.build, "npm-tfjs", "node_modules"))
        r = subprocess.run(["node", os.path.join(src, "scripts", "tfjs_save.js"), out], capture_output=True,
                           text=True, env=env, timeout=120)
        if not c.equal(r.returncode, 0, "tfjs_save.js: %s" % r.stderr[-2000:]):
            return
        models = [f for f in sorted(os.listdir(out)) if f.endswith(".json") and not f.endswith(".expect.json")]
        c.equal(models, ["encoded.json", "layers.json"], "tfjs_save.js wrote its models")
        print("tfjs: %d models saved by @tensorflow/tfjs %s checked" % (len(models), tfjs_version(t)), flush=True)
        for f in models:
            model = os.path.join(out, f)
            with open(model + ".expect.json") as fh:
                want = json.load(fh)
            with mfstest.mounted(t.modelfs, model, t.env) as mnt:
                check_weights(c, "npm " + f, model, mnt, want)
                with open(os.path.join(mnt, "model.json")) as fh:
                    table = {x["name"]: x for x in json.load(fh)["tensors"]}
                for w in want["tensors"]:
                    x = table.get(w["name"], {})
                    c.equal((x.get("dtype"), x.get("shape")), (w["dtype"], w["shape"]),
                            "npm %s: %s dtype and shape as tfjs says" % (f, w["name"]))
                    if "f32_sha256" in w:
                        p = os.path.join(mnt, x.get("f32", "npy/none"))
                        view = mfstest.np_load(np, p) if os.path.exists(p) else None
                        c.check(view is not None and hashlib.sha256(view.tobytes()).hexdigest() == w["f32_sha256"],
                                "npm %s: %s f32 view equals tfjs's decodeWeights" % (f, w["name"]))
    finally:
        shutil.rmtree(out)


def check_remote(c, t):
    """model.json over HTTP (a loopback server with ranges): its shards are
    the URLs beside it, and every tensor has the expectation's bytes."""
    import rangeserver
    gen = os.path.join(t.gen, "tfjs")
    if not os.path.isdir(gen):
        return c.skip("%s is absent" % gen)
    tmp = tempfile.mkdtemp(prefix="modelfs-tfjs-http-")
    srv = rangeserver.start(gen)
    try:
        for name in ("every.json", "groups.json"):
            with open(os.path.join(gen, name + ".expect.json")) as f:
                want = json.load(f)
            r = subprocess.run([t.modelfs_ls, "--cache-dir", os.path.join(tmp, "cache"), srv.url + "/" + name,
                                "SHA256SUMS"], capture_output=True, text=True, env=t.env, timeout=120)
            if not c.equal(r.returncode, 0, "http %s: SHA256SUMS (%s)" % (name, r.stderr.strip())):
                continue
            sums = {}
            for line in r.stdout.splitlines():
                h, _, p = line.partition("  ")
                sums[p] = h
            for w in want["tensors"]:
                if w["dtype"] == "string":
                    continue
                p = "tensors/" + w["name"].replace("/", "%2F")
                c.equal(sums.get(p), w["sha256"], "http %s: %s sha256" % (name, w["name"]))
    finally:
        srv.stop()
        shutil.rmtree(tmp)


def check_hub(c, t):
    """A Hub repository holding model.json and its shards (the test Hub on
    loopback): hf://ORG/REPO/model.json mounts with its shards resolved
    beside it, its tensors the expectation's bytes. (The repository as a
    folder of models does not show it yet: remote listings pick model
    files by name, formats/source/remote.c, and model.json is not one.)"""
    import hubserver
    repo = os.path.join(t.gen, "tfjs_repo")
    if not os.path.isdir(repo):
        return c.skip("%s is absent" % repo)
    with open(os.path.join(repo, "model.json.expect.json")) as f:
        want = json.load(f)
    tmp = tempfile.mkdtemp(prefix="modelfs-tfjs-hub-")
    hub = hubserver.Hub("hf_tfjs_token", page=2)
    try:
        files = {f: os.path.join(repo, f) for f in os.listdir(repo) if not f.endswith(".expect.json")}
        hub.add_repo("org/tfjs", files)
        env = dict(t.env, HF_ENDPOINT=hub.url, HF_HOME=os.path.join(tmp, "hf"), XDG_CACHE_HOME=os.path.join(tmp, "xdg"),
                   HF_TOKEN="hf_tfjs_token")
        for url, prefix in (("hf://org/tfjs/model.json", ""),):
            paths = ["%stensors/%s" % (prefix, w["name"]) for w in want["tensors"]]
            args = [t.modelfs_ls, "--sha256", url] + paths
            r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
            if not c.equal(r.returncode, 0, "%s: the tensors' sha256 (%s)" % (url, r.stderr.strip())):
                continue
            got = {ln.split()[2]: ln.split()[0] for ln in r.stdout.splitlines()}
            for w, p in zip(want["tensors"], paths):
                c.equal(got.get(p), w["sha256"], "%s: %s sha256" % (url, p))
    finally:
        hub.stop()
        shutil.rmtree(tmp)


def check_shipped(c, t):
    """The weights npm's @vladmandic/face-api ships (face-api.js's seven
    networks, uint8-quantized weights manifests: scripts/fetch_tfjs_models.sh),
    each against the shards read in Python and against @tensorflow/tfjs's
    own decodeWeights (scripts/tfjs_decode.js): stored bytes and f32/ views."""
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.normpath(os.path.join(here, "..", "..", ".."))
    d = os.path.join(t.build, "tfjs-models")
    r = subprocess.run(["sh", os.path.join(src, "scripts", "fetch_tfjs_models.sh"), d], capture_output=True,
                       text=True, timeout=400)
    if r.returncode == 77:
        return c.skip("face-api.js models from npm: %s" % r.stderr.strip())
    if not c.equal(r.returncode, 0, "fetch_tfjs_models.sh: %s" % r.stderr.strip()):
        return
    if not os.path.isdir(os.path.join(t.build, "npm-tfjs", "node_modules", "@tensorflow", "tfjs")):
        return c.skip("face-api.js models: no @tensorflow/tfjs to decode them (see check_npm)")
    models = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith("-weights_manifest.json"))
    env = dict(os.environ, NODE_PATH=os.path.join(t.build, "npm-tfjs", "node_modules"))
    r = subprocess.run(["node", os.path.join(src, "scripts", "tfjs_decode.js")] + models, capture_output=True,
                       text=True, env=env, timeout=120)
    if not c.equal(r.returncode, 0, "tfjs_decode.js: %s" % r.stderr[-2000:]):
        return
    for model in models:
        with open(model + ".expect.json") as f:
            want = json.load(f)
        with mfstest.mounted(t.modelfs, model, t.env) as mnt:
            check_weights(c, "face-api " + os.path.basename(model), model, mnt, want)
    print("tfjs: %d models shipped by @vladmandic/face-api checked" % len(models), flush=True)


EXTRAS = (check_folder, check_hostile, check_npm, check_shipped, check_remote, check_hub)
