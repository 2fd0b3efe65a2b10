"""The checks test_formats.py makes of every model of every format, on
one mount of it (formats/NAME.py adds a format's own):

generic: a model with an .expect.json of a format whose table places
  tensors in the file (mfstest.STORED_FORMATS): the mounted tree against
  modelfs-ls (listing, and the sha256 of every file that is not a tensor),
  model.toml against model.json, then every tensor against the
  expectation (dtype, shape, nbytes, storage, sha256 through the mount,
  the user.modelfs.* xattrs, listxattr, ENOTSUP for other namespaces, the
  offset pointing at its bytes in the file, problem flags, graph paths),
  and EROFS for every kind of change; a model the expectation calls
  corrupt is refused by both programs with exit 5 and one line.
npy: every model: the .npy twins, with numpy itself (check_twins).
"""
import collections
import errno
import hashlib
import io
import json
import os
import subprocess
import tempfile
import tomllib

import mfstest

EROFS = 30


def without_nulls(v):
    """The document as TOML carries it: TOML has no null, so null members
    are left out, a null item of an array is written {}, integers above
    2^63-1 are decimal strings, and bytes that are not UTF-8 are U+FFFD
    (README)."""
    if isinstance(v, dict):
        return {toml_text(k): without_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [{} if x is None else without_nulls(x) for x in v]
    if isinstance(v, int) and not isinstance(v, bool) and v > 2 ** 63 - 1:
        return str(v)
    if isinstance(v, str):
        return toml_text(v)
    return v


def toml_text(s):
    """A string as model.toml has it: each byte that is not UTF-8 (\\udcXX
    in model.json) is U+FFFD there."""
    try:
        s.encode("utf-8")
        return s  # no surrogate: the common case, checked in C
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xdc80 <= ord(ch) <= 0xdcff else ch for ch in s)


def tensor_key(t):
    # A TFLite tensor's subgraph is its index (subgraph 0 the main one).
    return (t["name"], tuple(t.get("graph_path", t.get("graph", [])) or []), t.get("subgraph", 0))


_file_bytes = {}


def file_bytes(path):
    """The bytes of a model (or its external data) file, read once per
    model: the offsets of thousands of tensors are checked against them."""
    if path not in _file_bytes:
        with open(path, "rb") as f:
            _file_bytes[path] = f.read()
    return _file_bytes[path]


def strided_bytes(model, t):
    """The C-order bytes of a view that starts at t["offset"] in the file
    and steps by t["stride"] elements."""
    import numpy as np
    item = t["nbytes"] // max(1, int(np.prod(t["shape"])))
    raw = np.frombuffer(file_bytes(model), np.uint8)
    dims = [(n - 1) * s for n, s in zip(t["shape"], t["stride"]) if n > 0]
    if t["offset"] + (sum(dims) + 1) * item > len(raw):
        return b""  # reaches past the file: the check fails
    view = np.lib.stride_tricks.as_strided(raw[t["offset"]:], shape=tuple(t["shape"]) + (item,),
                                           strides=tuple(s * item for s in t["stride"]) + (1,),
                                           writeable=False)
    return np.ascontiguousarray(view).tobytes()


def check_refused(c, build, model, expect, env):
    """A model the expectation calls corrupt: both programs refuse it with
    exit 5 and one line naming the file and the problem."""
    name = os.path.basename(model)
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    for args in ([os.path.join(build, "modelfs"), model, mnt], [os.path.join(build, "modelfs-ls"), model]):
        r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
        what = "%s: %s refuses it" % (name, os.path.basename(args[0]))
        c.equal(r.returncode, 5, what)
        c.check(model in r.stderr and expect.get("error_contains", "") in r.stderr,
                "%s: message %r lacks the file or %r" % (what, r.stderr, expect.get("error_contains")))
    if os.path.ismount(mnt):
        mfstest.unmount(mnt)
    os.rmdir(mnt)


def generic_applies(model, expect):
    """Whether the generic checks are made of this model: a file with an
    expectation, of a format whose table places tensors in the file."""
    return (expect is not None and expect.get("format") in mfstest.STORED_FORMATS
            and os.path.isfile(model))


def check_model(c, build, model, expect, env, mount):
    """The generic checks; mount() gives the runner's mount point of the
    model (mounting it on the first call), or raises RuntimeError."""
    _file_bytes.clear()
    name = os.path.basename(model)
    modelfs_ls = os.path.join(build, "modelfs-ls")
    if expect.get("expect") == "corrupt":
        check_refused(c, build, model, expect, env)
        return
    if expect.get("expect") == "readable_or_error":
        # Either exposed exactly (the checks below) or refused clearly.
        r = subprocess.run([modelfs_ls, model], capture_output=True, text=True, env=env, timeout=60)
        if r.returncode != 0:
            check_refused(c, build, model, expect, env)
            return
    try:
        ls = mfstest.ls_tree(modelfs_ls, model, env)
    except RuntimeError as e:
        c.check(False, "%s: %s" % (name, e))
        return
    try:
        mnt = mount()
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (name, e))
        return
    check_mounted(c, name, model, mnt, ls, expect, modelfs_ls, env)


def check_mounted(c, name, model, mnt, ls, expect, modelfs_ls, env):
    # The mounted tree is exactly what modelfs-ls lists, byte for byte.
    tree = mfstest.walk_tree(mnt)
    c.equal(sorted(tree.items(), key=str), sorted(ls.items(), key=str), "%s: tree vs modelfs-ls" % name)
    paths = [p for p, size in sorted(ls.items()) if size is not None and not p.startswith("tensors/")]
    sums, code, err = mfstest.ls_sums(modelfs_ls, model, paths, env)
    for path in paths:
        data = mfstest.read_bytes(os.path.join(mnt, path))
        c.equal((hashlib.sha256(data).hexdigest(), len(data)), sums.get(path, "exit %d: %s" % (code, err)),
                "%s: %s bytes vs modelfs-ls --sha256" % (name, path))

    doc = json.loads(mfstest.read_bytes(os.path.join(mnt, "model.json")))
    tdoc = tomllib.loads(mfstest.read_bytes(os.path.join(mnt, "model.toml")).decode())
    c.equal(tdoc, without_nulls(doc), "%s: model.toml parses (tomllib) to the same document as model.json" % name)

    c.equal(doc["format"], expect["format"], "%s: format" % name)
    if "format_version" in expect:
        c.equal(doc["format_version"], expect["format_version"], "%s: format_version" % name)
    c.equal(doc["file"], {"name": name, "size": expect["file_size"]}, "%s: file" % name)
    want_meta = dict(expect.get("metadata", {}))
    if "schema_version" in expect:
        want_meta["schema_version"] = expect["schema_version"]
    if expect["format"] in ("rten", "pytorch", "torchscript"):
        c.equal(doc["metadata"], want_meta, "%s: metadata" % name)
    c.equal(doc["tensor_count"], expect["tensor_count"], "%s: tensor_count" % name)
    c.equal(len(doc["tensors"]), expect["tensor_count"], "%s: table length" % name)

    # Match by name (+ graph path for rten), in file order for duplicates.
    got = collections.defaultdict(list)
    for t in doc["tensors"]:
        got[tensor_key(t)].append(t)
    paths = set()
    ns_asked = False
    for want in expect["tensors"]:
        key = tensor_key(want)
        if not c.check(got.get(key), "%s: tensor %r missing from model.json" % (name, key)):
            continue
        t = got[key].pop(0)
        what = "%s: tensor %r" % (name, want["name"])
        want_dtype = want["dtype"] if want["dtype"] is not None else "bytes"
        # A raw blob (dtype null in the expectation) is a 1-D array of bytes;
        # a shape the expectation still gives (raw records) is the declared one.
        want_shape = [want["nbytes"]] if want["dtype"] is None or want["shape"] is None else want["shape"]
        if (want["dtype"] is None and expect.get("expect") == "readable_or_error" and
                expect["format"] == "numpy" and "problem" not in t and "descr" in want):
            # "Expose the records or refuse" (shared/fixtures/numpy/structured.npy):
            # modelfs exposes a structured dtype as numpy reads it, named
            # as numpy names it.
            want_dtype, want_shape = mfstest.npy_descr_dtype(want["descr"]).name, want["shape"]
        c.equal(t["dtype"], want_dtype, what + " dtype")
        c.equal(t["shape"], want_shape, what + " shape")
        if want_dtype == "bytes" and want["dtype"] is None and want["shape"] is not None:
            c.equal(t.get("declared_shape"), want["shape"], what + " declared_shape")
        if want_dtype != "string":
            c.equal(t["nbytes"], want["nbytes"], what + " nbytes")
        if "storage" in want:
            c.equal(t.get("storage"), want["storage"], what + " storage")
        c.check(t["path"] not in paths, what + " path %r used twice" % t["path"])
        paths.add(t["path"])
        p = os.path.join(mnt, t["path"])
        if not c.check(os.path.isfile(p), what + " file %s" % t["path"]):
            continue
        if want_dtype == "string":
            # A string tensor is a JSON array of its strings (README).
            c.equal(json.loads(mfstest.read_bytes(p)), want["values"], what + " strings through the mount")
            c.equal(os.stat(p).st_size, t["nbytes"], what + " file size")
        else:
            c.equal(os.stat(p).st_size, want["nbytes"], what + " file size")
            c.equal(mfstest.sha256_file(p), want["sha256"], what + " sha256 through the mount")
        c.equal(os.getxattr(p, "user.modelfs.name"), want["name"].encode("utf-8", "surrogateescape"),
                what + " xattr name")
        c.equal(os.getxattr(p, "user.modelfs.dtype").decode(), want_dtype, what + " xattr dtype")
        c.equal(json.loads(os.getxattr(p, "user.modelfs.shape")), want_shape, what + " xattr shape")
        c.equal(int(os.getxattr(p, "user.modelfs.offset")), t["offset"], what + " xattr offset")
        c.equal(sorted(os.listxattr(p)), ["user.modelfs.dtype", "user.modelfs.name",
                                          "user.modelfs.offset", "user.modelfs.sha256",
                                          "user.modelfs.shape"], what + " listxattr")
        # ENOTSUP (not ENODATA), so ls -l stops asking after one file.
        # The daemon answers so from the name's namespace alone, before
        # it looks at what the file is: asked of a model's first tensor
        # file (and of model.json below), not of all 5,000 of a big one.
        for ns in () if ns_asked else ("security.selinux", "system.posix_acl_access"):
            ns_asked = True
            try:
                os.getxattr(p, ns)
                c.check(False, what + " %s exists" % ns)
            except OSError as e:
                c.equal(e.errno, errno.ENOTSUP, what + " %s errno" % ns)
        # The offset is in the model file, or in the external file of
        # `location` beside it (ONNX): mfstest.stored_path. Bytes made on
        # open are not stored as served anywhere (mfstest.made_on_open).
        if want_dtype == "string" or want["nbytes"] == 0 or mfstest.made_on_open(t):
            pass
        elif "pieces" in t:
            # Stored in several files (TF.js shards), served end to end.
            raw = b"".join(file_bytes(os.path.join(os.path.dirname(model), q["location"]))
                           [q["offset"]:q["offset"] + q["nbytes"]] for q in t["pieces"])
            c.equal(hashlib.sha256(raw).hexdigest(), want["sha256"], what + " pieces point at its bytes")
        elif t.get("contiguous", True):
            raw = file_bytes(mfstest.stored_path(model, t))[t["offset"]:t["offset"] + want["nbytes"]]
            c.equal(hashlib.sha256(raw).hexdigest(), want["sha256"], what + " offset points at its bytes")
        elif want["nbytes"] > 0:
            # A strided view (pytorch): the offset is its first element's,
            # the elements are `stride` elements apart from there.
            c.equal(hashlib.sha256(strided_bytes(model, t)).hexdigest(), want["sha256"],
                    what + " offset and stride point at its elements")
        if want.get("problem"):
            c.check("problem" in t, what + " is flagged with a problem")
        gp = want.get("graph_path")
        if gp:
            c.equal(t.get("graph_path", t.get("graph")), gp, what + " graph")

    # Read-only: every kind of change is refused with EROFS.
    probe = os.path.join(mnt, "model.json")
    for ns in ("security.selinux", "system.posix_acl_access"):
        try:
            os.getxattr(probe, ns)
            c.check(False, "%s: model.json: %s exists" % (name, ns))
        except OSError as e:
            c.equal(e.errno, errno.ENOTSUP, "%s: model.json: %s errno" % (name, ns))
    for what, fn in [
        ("create", lambda: open(os.path.join(mnt, "new"), "w")),
        ("open for writing", lambda: open(probe, "r+b")),
        ("unlink", lambda: os.unlink(probe)),
        ("rename", lambda: os.rename(probe, os.path.join(mnt, "x"))),
        ("chmod", lambda: os.chmod(probe, 0o644)),
        ("mkdir", lambda: os.mkdir(os.path.join(mnt, "d"))),
        ("setxattr", lambda: os.setxattr(probe, "user.x", b"1")),
    ]:
        try:
            fn()
            c.check(False, "%s: %s succeeded on a read-only mount" % (name, what))
        except OSError as e:
            c.equal(e.errno, EROFS, "%s: %s errno" % (name, what))


# ---- the .npy twins ----------------------------------------------------------

def why_none(t):
    """Why an entry has no .npy (None when it should have one)."""
    if "problem" in t:
        return "problem"
    if t["dtype"] in ("string", "nested"):
        return t["dtype"]
    if "element_bits" in t:
        return "packed %d-bit elements" % t["element_bits"]
    return None


def check_twins(c, model, mnt):
    """The .npy twins of a mounted model, with numpy itself: for every
    tensor entry with an `npy` key, np.load of the mounted file (of its
    path with mmap_mode="r" for the model's first twin, of the bytes read
    through the mount for the others) equals np.frombuffer of the tensor's
    bytes with the table's dtype (`npy_dtype` where given) and stored
    shape; entries without one are those the README says get none; npy/
    holds nothing else; a read across the header and the data gives the
    same bytes."""
    import numpy as np
    mfstest.cache_npy_header_filter(np)
    name = os.path.relpath(model)
    if mfstest.is_collection(mnt):
        return  # a folder of models (mount.multi checks those)
    with open(os.path.join(mnt, "model.json")) as f:
        doc = json.load(f)
    listed = set()
    listed_once = False
    for t in doc["tensors"]:
        what = "%s: %s" % (name, t["path"])
        if "npy" not in t:
            c.check(why_none(t) is not None, "%s (%s) has no .npy" % (what, t["dtype"]))
            continue
        c.check(why_none(t) is None, "%s has a .npy but is %s" % (what, why_none(t)))
        listed.add(t["npy"])
        npy = os.path.join(mnt, t["npy"])
        # The tensor's bytes from the model file where model.json places
        # them as served (the generic checks test every offset), else
        # through the mount: the twin is what this test reads there.
        raw = mfstest.stored_bytes(model, doc.get("format"), t)
        try:
            if raw is None:
                raw = mfstest.read_bytes(os.path.join(mnt, t["path"]))
        except OSError as e:
            # Unreadable (tampered, not fetched): its twin too.
            try:
                mfstest.read_bytes(npy)
                c.check(False, "%s: tensor fails (%s) but its .npy reads" % (what, e))
            except OSError:
                c.check(True, what)
            continue
        # A NumPy file's own descr, read by numpy (numpy's dtypes:
        # datetime64, str, structured... whose names do not say it all).
        dtype = mfstest.npy_descr_dtype(t["descr"]) if "descr" in t else \
            np.dtype(t.get("npy_dtype", t["dtype"]))
        shape = t.get("stored_shape", t["shape"])
        if dtype.itemsize == 0:
            c.equal(raw, b"", what + ": no bytes for elements of size 0")
            want = np.ndarray(tuple(shape), dtype)  # np.empty makes S0 S1
        elif t.get("memory_order") == "fortran":
            # A NumPy file's Fortran order: the twin says so too.
            want = np.frombuffer(raw, dtype=dtype).reshape(t["shape"], order="F")
        else:
            want = np.frombuffer(raw, dtype=dtype).reshape(shape)
        # The whole file, and (the same open file) one read across the
        # header's end.
        fd = os.open(npy, os.O_RDONLY)
        try:
            chunks = []
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                chunks.append(b)
            whole = b"".join(chunks)
            head = len(whole) - len(raw)
            part = os.pread(fd, 100, max(head - 10, 0))
        finally:
            os.close(fd)
        # numpy reads what the mount served: from the path, mapped, as
        # users load it, for a model's first twin (and the big one);
        # from those same bytes for the others (one open, not three).
        if not listed_once:
            got = np.load(npy, mmap_mode="r", max_header_size=1 << 24)
            listed_once = True
            if c.check(isinstance(got, np.memmap) or got.size == 0, what + ": mapped"):
                c.equal(getattr(got, "offset", 0) % 64, 0, what + ": data offset a multiple of 64")
        else:
            got = np.load(io.BytesIO(whole), max_header_size=1 << 24)
        c.check(got.dtype == want.dtype and got.shape == want.shape and
                got.tobytes() == want.tobytes(),
                "%s: np.load gives %s %s, want %s %s" % (what, got.dtype, got.shape,
                                                         want.dtype, want.shape))
        del got
        if "npy_axes" in t:
            c.equal(list(np.transpose(want, t["npy_axes"]).shape), t["shape"],
                    what + ": npy_axes gives the logical shape")
        c.check(head % 64 == 0 and whole[head:] == raw and whole.startswith(b"\x93NUMPY"),
                what + ": header + tensor bytes")
        c.check(part == whole[max(head - 10, 0):max(head - 10, 0) + 100],
                what + ": a read across header and data")
    present = set()
    for d, _dirs, files in os.walk(mnt):
        # npy/ folders, and npy/NESTED/ for a nested tensor's inner
        # ones (not a nested tensor named npy: tensors/npy/).
        p = os.path.relpath(d, mnt).split(os.sep)
        if any(p[-k:][0] == "npy" and p[-k - 1:-k] != ["tensors"] for k in (1, 2) if len(p) >= k):
            present.update(os.path.relpath(os.path.join(d, f), mnt) for f in files)
    c.equal(sorted(present - listed), [], name + ": files under npy/ the table does not list")
