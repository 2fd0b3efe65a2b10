"""PyTorch checkpoints (issue 10): their own checks, beyond the generic ones.

1. Every pytorch model with an .expect.json in DIRS: the table's
   pytorch keys (stride, storage_offset, contiguous, storage_type,
   storage_key, zip_member, storage_nbytes, shares_storage_with,
   same_object_as), metadata, each tensor's bytes and its .npy twin (numpy).
2. Independent readers: Python's pickletools.dis (stdlib) lists the
   pickle's GLOBALs and persistent ids, which must match the table; torch
   (when importable; skipped visibly otherwise) loads each model and its
   tensors' bytes must be the mounted files' bytes.
3. Hostile files made here: globals that would run code (os.system,
   builtins.eval, subprocess, exec, through GLOBAL, STACK_GLOBAL and INST)
   must be refused naming the global, and the command must not have run;
   absurd lengths and memo indexes, deep nesting, exponential sharing,
   missing or too-small storages, huge zero-stride views, overlapping zip
   members and bad byteorder are refused with exit
   5, one line naming the file, the offset and the problem, in bounded
   time; a compressed data.pkl is read.
"""
import errno
import hashlib
import io
import json
import os
import pickle
import pickletools
import shutil
import struct
import subprocess
import tempfile
import time
import zipfile

import mfstest
import numpy as np
mfstest.cache_npy_header_filter(np)
from gen_pytorch import Pickle, Raw, Storage, Tensor, write_checkpoint

DIRS = ("gen/pytorch", "shared/fixtures/pytorch")

KEYS = ("stride", "storage_offset", "contiguous", "storage_type", "storage_key", "zip_member",
        "storage_nbytes")


def data_pkl(model):
    with zipfile.ZipFile(model) as z:
        name = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
        return z.read(name)


def pickle_facts(pkl):
    """(GLOBALs, storage keys) by pickletools, which builds nothing. The
    strings are followed through the memo (torch's pickler PUTs 'storage'
    once and GETs it for every later persistent id)."""
    globs, keys, strings, memo, last = set(), set(), [], {}, None
    for op, arg, _ in pickletools.genops(pkl):
        if op.name == "GLOBAL":
            globs.add(arg.replace(" ", "."))
        if op.name in ("BINUNICODE", "SHORT_BINUNICODE"):
            strings.append(arg)
            last = arg
            continue
        if op.name in ("BINPUT", "LONG_BINPUT") and last is not None:
            memo[arg] = last
        elif op.name in ("BINGET", "LONG_BINGET") and arg in memo:
            strings.append(memo[arg])
        elif op.name not in ("BINPUT", "LONG_BINPUT"):
            strings.append(None)
        last = None
    # A persistent id is ('storage', type, KEY, location, numel): the key
    # is the first string after 'storage' (the type is a GLOBAL).
    for i, x in enumerate(strings):
        if x == "storage":
            nxt = [y for y in strings[i + 1:i + 4] if y is not None]
            if nxt:
                keys.add(nxt[0])
    return globs, keys


def setup(c, t):
    try:
        import torch
    except ImportError:
        torch = None
        c.skip("import torch failed: the torch.load cross-check is not run")
    t.torch = torch


def check_model(c, t, model, expect, mount):
    if expect is None or expect.get("format") != "pytorch" or expect.get("expect") != "readable":
        return
    files = check_mounted(c, model, expect, mount)
    if files is not None and t.torch is not None:
        torch_check(c, t.torch, model, files)


def check_mounted(c, model, expect, mount):
    name = os.path.basename(model)
    try:
        mnt = mount()
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (name, e))
        return None
    with open(os.path.join(mnt, "model.json")) as f:
        doc = json.load(f)
    c.equal(doc["metadata"], expect["metadata"], "%s: metadata" % name)
    got = {t["name"]: t for t in doc["tensors"]}
    files = {}
    for want in expect["tensors"]:
        what = "%s: %s" % (name, want["name"])
        t = got.get(want["name"])
        if not c.check(t is not None, what + " missing"):
            continue
        for k in KEYS:
            if k in want:
                c.equal(t.get(k), want[k], "%s %s" % (what, k))
        for k in ("shares_storage_with", "same_object_as"):
            c.equal(t.get(k), want.get(k), "%s %s" % (what, k))
        with open(os.path.join(mnt, t["path"]), "rb") as f:
            data = f.read()
        files[want["name"]] = data
        c.equal(hashlib.sha256(data).hexdigest(), want["sha256"], what + " bytes")
        if "npy" in t:
            a = np.load(os.path.join(mnt, t["npy"]))
            dtype = t.get("npy_dtype", t["dtype"])
            c.check(a.shape == tuple(want["shape"]) and a.tobytes() == data and
                    a.dtype == np.dtype(dtype), what + " .npy: %s %s" % (a.dtype, a.shape))
            if t.get("byte_order") == "big":
                c.check(a.dtype.byteorder == ">" or a.dtype.itemsize == 1, what + " .npy is '>'")
    # pickletools, an independent reader of the pickle.
    globs, keys = pickle_facts(data_pkl(model))
    c.check(all(g.startswith(("torch.", "collections.OrderedDict")) for g in globs),
            "%s: pickletools GLOBALs %s" % (name, sorted(globs)))
    c.equal(sorted({t["storage_key"] for t in doc["tensors"]}), sorted(keys),
            "%s: storage keys vs pickletools" % name)
    return files


def torch_check(c, torch, model, files):
    """torch.load's tensors, their bytes as loaded, against the mount."""
    name = os.path.basename(model)
    try:
        obj = torch.load(model, map_location="cpu")
    except Exception as e:  # noqa: BLE001 - a format this torch does not know
        c.skip("%s: torch %s cannot load it (%s)" % (name, torch.__version__, str(e)[:80]))
        return

    def walk(v, path):
        if isinstance(v, torch.Tensor):
            yield path, v
        elif isinstance(v, dict):
            for k, x in v.items():
                yield from walk(x, "%s.%s" % (path, k) if path else str(k))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                yield from walk(x, "%s.%d" % (path, i) if path else str(i))

    seen = 0
    for path, t in walk(obj, ""):
        t = t.detach().contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        c.equal(hashlib.sha256(raw).hexdigest(),
                hashlib.sha256(files.get(path, b"<missing>")).hexdigest(),
                "%s: %s: torch.load's bytes vs the mount" % (name, path))
        seen += 1
    c.equal(seen, len(files), "%s: tensors torch.load sees" % name)


def torch_written(c, t):
    torch, build, env = t.torch, t.build, t.env
    if torch is None:
        return
    """Checkpoints torch.save itself writes (a module's state_dict with its
    _metadata, an nn.Parameter, an optimizer's state with int keys, a
    tensor as the root, tensors in a list, sliced and expanded views,
    bfloat16): every tensor torch.load sees is a file with its bytes."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    opt = torch.optim.Adam(m.parameters())
    m(torch.randn(5, 3)).sum().backward()
    opt.step()
    cases = {
        "module_sd.pt": m.state_dict(),
        "param.pt": {"p": torch.nn.Parameter(torch.randn(2, 3))},
        "opt.pt": {"model": m.state_dict(), "optimizer": opt.state_dict(), "epoch": 1},
        "root_tensor.pt": torch.arange(6.).reshape(2, 3).t(),
        "list.pt": {"xs": [torch.ones(2), torch.zeros(3, dtype=torch.int8)]},
        "slices.pt": {"a": torch.arange(20.).reshape(4, 5)[1:3, ::2], "b": torch.arange(10)[::3],
                      "e": torch.ones(3).expand(2, 3)},
        "bf16.pt": {"w": torch.randn(3, 3).to(torch.bfloat16)},
    }

    def flat(o, path=""):
        if isinstance(o, torch.Tensor):
            yield path, o
        elif isinstance(o, dict):
            for k, v in o.items():
                yield from flat(v, "%s.%s" % (path, k) if path else str(k))
        elif isinstance(o, (list, tuple)):
            for i, v in enumerate(o):
                yield from flat(v, "%s.%d" % (path, i) if path else str(i))

    modelfs_ls = os.path.join(build, "modelfs-ls")
    work = tempfile.mkdtemp(prefix="modelfs-pt-")
    try:
        for fn, obj in cases.items():
            path = os.path.join(work, fn)
            torch.save(obj, path)
            r = subprocess.run([modelfs_ls, path, "model.json"], capture_output=True, env=env,
                               timeout=30)
            if not c.equal(r.returncode, 0, "%s (torch.save): %s" % (fn, r.stderr[:200])):
                continue
            got = {t["name"]: t["path"] for t in json.loads(r.stdout)["tensors"]}
            names = []
            for name, t in flat(torch.load(path)):
                names.append(name)
                t = t.detach().contiguous()
                raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
                data = subprocess.run([modelfs_ls, path, got.get(name, "missing")],
                                      capture_output=True, env=env, timeout=30).stdout
                c.equal(hashlib.sha256(data).hexdigest(), hashlib.sha256(raw).hexdigest(),
                        "%s (torch.save): %s bytes" % (fn, name))
            c.equal(sorted(got), sorted(names), "%s (torch.save): tensor names" % fn)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- hostile files ---------------------------------------------------------


def run_ls(modelfs_ls, path, env, timeout=30):
    t0 = time.time()
    r = subprocess.run([modelfs_ls, path], capture_output=True, env=env, timeout=timeout)
    return r.returncode, r.stderr.decode(errors="replace"), time.time() - t0


def refused(c, modelfs_ls, path, needle, env):
    try:
        code, err, secs = run_ls(modelfs_ls, path, env)
    except subprocess.TimeoutExpired:
        c.check(False, "%s: modelfs-ls hung" % path)
        return
    what = os.path.basename(path)
    c.equal(code, 5, what + ": exit code (stderr %r)" % err)
    lines = err.strip().splitlines()
    c.equal(len(lines), 1, what + ": one line")
    c.check(lines and lines[0].startswith("modelfs-ls: %s: byte " % path) and needle in lines[0],
            "%s: message %r lacks the file, an offset or %r" % (what, err, needle))
    c.check(secs < 10, "%s: took %.1f s" % (what, secs))


def tensor_ok():
    s = Storage("0", np.arange(4, dtype=np.float32))
    return s, Tensor(s, 0, (4,), (1,))


def hostile_pickles(marker):
    """(file stem, pickle bytes, what the message must contain)."""
    cmd = ("touch " + marker).encode()
    X = lambda b: b"X" + struct.pack("<I", len(b)) + b  # noqa: E731
    p2 = b"\x80\x02"
    out = []
    # The classic: os.system via GLOBAL (posix.system on Linux pickles).
    for mod, name in [(b"os", b"system"), (b"posix", b"system"), (b"builtins", b"eval"),
                      (b"__builtin__", b"exec"), (b"subprocess", b"check_call"),
                      (b"torch", b"load")]:
        arg = X(b"__import__('os').system('" + cmd + b"')") if name in (b"eval", b"exec") else X(cmd)
        out.append(("global_%s_%s" % (mod.decode().strip("_"), name.decode()),
                    p2 + b"c" + mod + b"\n" + name + b"\n(" + arg + b"tR.", mod.decode() + "." + name.decode()))
    # STACK_GLOBAL (protocol 4) and INST (protocol 0).
    su = lambda b: b"\x8c" + bytes([len(b)]) + b  # noqa: E731
    out.append(("stack_global", b"\x80\x04" + su(b"os") + su(b"system") + b"\x93" + su(cmd) + b"\x85R.",
                "os.system"))
    out.append(("inst", b"(" + X(cmd) + b"ios\nsystem\n.", "os.system"))
    # Hidden after a valid tensor, inside a dict.
    s, t = tensor_ok()
    p = Pickle()
    p.value({"ok": t, "evil": Raw(b"cos\nsystem\n(" + X(cmd) + b"tR")})
    out.append(("after_tensor", p.stop(), "os.system"))
    # Absurd lengths and indexes.
    out.append(("long4", p2 + b"\x8b\xff\xff\xff\x7f" + b"\x00" * 8 + b".", "LONG4"))
    out.append(("long4_negative", p2 + b"\x8b\xff\xff\xff\xff.", "LONG4"))
    out.append(("binbytes8", b"\x80\x04\x8e" + struct.pack("<Q", 2**63) + b"ab.", "BINBYTES8"))
    out.append(("binunicode", p2 + b"X\xff\xff\xff\xff" + b"abc.", "BINUNICODE"))
    out.append(("memo_put", p2 + b"N" + b"r\xf0\xff\xff\xff" + b".", "LONG_BINPUT"))
    out.append(("memo_get", p2 + b"j\xff\xff\xff\xff.", "LONG_BINGET"))
    out.append(("memo_unset", p2 + b"Nq\x00h\x05.", "BINGET"))
    # Deep nesting: 100,000 MARKs; 100,000 nested lists.
    out.append(("marks", p2 + b"(" * 100000 + b"N.", "MARK"))
    out.append(("nested_lists", p2 + b"}X\x01\x00\x00\x00k" + b"]" * 100000 + b"a" * 99999 + b"s.",
                "nested deeper"))
    # Exponential sharing: L(i+1) = [L(i), L(i)], 64 levels.
    b = bytearray(p2 + b"}X\x01\x00\x00\x00k]")
    for i in range(64):
        b += b"q" + bytes([i]) + b"0(h" + bytes([i]) + b"h" + bytes([i]) + b"l"
    b += b"s."
    out.append(("shared_bomb", bytes(b), "visit bound"))
    # One list of 1000 pairs given to OrderedDict 200,000 times (items
    # copied per call), and a 100 KB key reached through 200,000 references.
    b = bytearray(p2 + b"ccollections\nOrderedDict\nq\x00]q\x01(" + b"K\x01K\x02\x86" * 1000 + b"e")
    b += b"h\x00h\x01\x85R0" * 200000 + b"N."
    out.append(("odict_bomb", bytes(b), "container items"))
    b = bytearray(p2 + b"}X\x01\x00\x00\x00k}q\x00" + X(b"k" * 100000) + b"K\x01s0]q\x01(")
    b += b"h\x00" * 200000 + b"es."
    out.append(("long_key", bytes(b), "budget"))
    out.append(("no_stop", p2 + b"}", "without STOP"))
    out.append(("ext1", p2 + b"\x82\x01.", "EXT1"))
    out.append(("qtensor", p2 + b"ctorch._utils\n_rebuild_qtensor\n.", "a quantized tensor"))
    out.append(("subclass", p2 + b"ctorch._tensor\n_rebuild_from_type_v2\n(ctorch._utils\n"
                b"_rebuild_tensor_v2\nc__main__\nSub\n", "__main__.Sub"))
    out.append(("reduce_storage", p2 + b"ctorch\nFloatStorage\n)R.", "FloatStorage"))
    return out


def tensor_pickle(storage_key="0", numel=4, offset=0, shape=(4,), stride=(1,)):
    s = Storage(storage_key, np.arange(max(numel, 1), dtype=np.float32)[:numel])
    return {"t": Tensor(s, offset, shape, stride)}, s


def overlapping_zip(path):
    """Two central-directory entries for one local header and its data."""
    obj, s = tensor_pickle()
    write_checkpoint(path, obj, [s])
    with open(path, "rb") as f:
        data = bytearray(f.read())
    eocd = data.rfind(b"PK\x05\x06")
    cd_size, cd_off = struct.unpack_from("<II", data, eocd + 12)
    cd = data[cd_off:cd_off + cd_size]
    # Point the second entry (data/0) at the first one's local header.
    second = cd.find(b"PK\x01\x02", 4)
    struct.pack_into("<I", cd, second + 42, 0)
    data[cd_off:cd_off + cd_size] = cd
    with open(path, "wb") as f:
        f.write(data)


def hostile(c, t):
    build, env = t.build, t.env
    modelfs_ls = os.path.join(build, "modelfs-ls")
    modelfs = os.path.join(build, "modelfs")
    work = tempfile.mkdtemp(prefix="modelfs-pt-")
    marker = os.path.join(work, "EXECUTED")
    try:
        for stem, pkl, needle in hostile_pickles(marker):
            path = os.path.join(work, stem + ".pt")
            write_checkpoint(path, None, [tensor_ok()[0]], top=stem, pickle_bytes=pkl)
            refused(c, modelfs_ls, path, needle, env)
        # One of them through a mount, too: refused, nothing mounted.
        mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
        r = subprocess.run([modelfs, os.path.join(work, "global_os_system.pt"), mnt],
                           capture_output=True, text=True, env=env, timeout=60)
        c.equal(r.returncode, 5, "os.system: modelfs refuses the mount")
        c.check("os.system" in r.stderr, "os.system: modelfs names the global: %r" % r.stderr)
        c.check(not os.path.ismount(mnt), "os.system: nothing mounted")
        os.rmdir(mnt)
        c.check(not os.path.exists(marker), "no hostile pickle ran its command")

        cases = []
        obj, s = tensor_pickle(storage_key="7")
        path = os.path.join(work, "missing_member.pt")
        write_checkpoint(path, obj, [])
        cases.append((path, "has no member"))
        obj, s = tensor_pickle(numel=4, offset=2, shape=(2, 2), stride=(2, 1))
        path = os.path.join(work, "past_storage.pt")
        write_checkpoint(path, obj, [s])
        cases.append((path, "reaches past its storage"))
        obj, s = tensor_pickle(numel=1, shape=(2**40,), stride=(0,))
        path = os.path.join(work, "zero_stride_huge.pt")
        write_checkpoint(path, obj, [s])
        cases.append((path, "more than modelfs makes"))
        obj, s = tensor_pickle(numel=1, shape=(2**62, 2**62), stride=(0, 0))
        path = os.path.join(work, "shape_overflow.pt")
        write_checkpoint(path, obj, [s])
        cases.append((path, "overflow"))
        path = os.path.join(work, "overlap.pt")
        overlapping_zip(path)
        cases.append((path, "overlap"))
        obj, s = tensor_pickle()
        path = os.path.join(work, "byteorder.pt")
        write_checkpoint(path, obj, [s], byteorder="middle")
        cases.append((path, "byteorder"))
        for path, needle in cases:
            refused(c, modelfs_ls, path, needle, env)

        # A compressed data.pkl and storage: a correct tree.
        obj, s = tensor_pickle()
        path = os.path.join(work, "deflated_pkl.pt")
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("deflated_pkl/data.pkl", Pickle().value(obj).stop())
            z.writestr("deflated_pkl/data/0", s.array.tobytes())
            z.writestr("deflated_pkl/version", "3\n")
        with open(path, "wb") as f:
            f.write(buf.getvalue())
        r = subprocess.run([modelfs_ls, path, "tensors/t"], capture_output=True, env=env, timeout=30)
        c.equal((r.returncode, r.stdout), (0, s.array.tobytes()), "deflated data.pkl and storage")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def python_pickles(c, t):
    build, env = t.build, t.env
    """Metadata-only checkpoints written by Python's own pickle module
    (protocols 2 to 5: another writer's choice of opcodes, FRAME, MEMOIZE,
    SHORT_BINUNICODE, EMPTY_SET/ADDITEMS, builtins.set)."""
    d = {"cfg": {"lr": 0.1, "name": "x", "layers": [1, 2, 3]}, "t": (1, None, True),
         "big": 2**80, "neg": -2**70, "u": "ünï", "s": {3, 1, 2}, "e": {}}
    want = {"cfg.lr": 0.1, "cfg.name": "x", "cfg.layers": [1, 2, 3], "t": [1, None, True],
            "big": "0x%x" % 2**80, "neg": "-0x%x" % 2**70, "u": "ünï", "s": [1, 2, 3], "e": {}}
    work = tempfile.mkdtemp(prefix="modelfs-pt-")
    try:
        for proto in range(2, 6):
            path = os.path.join(work, "proto%d.pt" % proto)
            write_checkpoint(path, None, [], top="proto%d" % proto,
                             pickle_bytes=pickle.dumps(d, protocol=proto))
            r = subprocess.run([os.path.join(build, "modelfs-ls"), path, "model.json"],
                               capture_output=True, env=env, timeout=30)
            if c.equal(r.returncode, 0, "protocol %d: %s" % (proto, r.stderr[:200])):
                c.equal(json.loads(r.stdout)["metadata"], want, "protocol %d: metadata" % proto)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def truncated_while_mounted(c, t):
    build, env = t.build, t.env
    """A strided view is made from the mapping on open: the model file cut
    short first makes that open fail (EIO), and the daemon stays up."""
    work = tempfile.mkdtemp(prefix="modelfs-pt-")
    try:
        base = Storage("0", np.arange(1 << 16, dtype=np.float32))
        path = os.path.join(work, "cut.pt")
        write_checkpoint(path, {"t": Tensor(base, 0, (256, 256), (1, 256))}, [base])
        with mfstest.mounted(os.path.join(build, "modelfs"), path, env) as mnt:
            os.truncate(path, 1024)
            data, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "t"))
            c.equal((data, err), (None, 5), "cut.pt: the strided view reads as EIO")
            c.check(os.path.exists(os.path.join(mnt, "model.json")), "cut.pt: the mount still answers")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def broadcast_bomb(c, t):
    build, env = t.build, t.env
    """A 1.5 KB torch.save file with 8 stride-0 views of shape [2^28] of
    one 16-byte storage (1 GiB each, made on open): with every view open at
    once and default options the daemon stays under 1 GiB of its own
    memory (it held 5 GB: the default cache_size was a quarter of RAM,
    whatever the file); a view that does not fit fails its open (ENOMEM)
    or read, and one that opens reads as torch would give it."""
    work = tempfile.mkdtemp(prefix="modelfs-pt-")
    try:
        s = Storage("0", np.array([1.5, 2.5, 3.5, 4.5], np.float32))
        path = os.path.join(work, "bomb.pt")
        write_checkpoint(path, {"v%d" % i: Tensor(s, i % 4, (1 << 28,), (0,)) for i in range(8)}, [s])
        c.check(os.path.getsize(path) < 4096, "bomb.pt is %d bytes" % os.path.getsize(path))
        with mfstest.mounted(os.path.join(build, "modelfs"), path, env) as mnt:
            pid = mfstest.daemon_pid(mnt)
            base = mfstest.rss(pid)["RssAnon"] if pid else 0
            held, opened, worst = [], 0, 0
            try:
                for i in range(8):
                    try:
                        f = open(os.path.join(mnt, "tensors", "v%d" % i), "rb", buffering=0)
                    except OSError as e:
                        c.check(e.errno in (errno.ENOMEM, errno.EIO), "v%d: open: %s" % (i, e))
                        continue
                    held.append(f)
                    try:
                        head = f.read(8)
                        opened += 1
                        want = struct.pack("<f", [1.5, 2.5, 3.5, 4.5][i % 4]) * 2
                        c.equal(head, want, "v%d: its first elements" % i)
                    except OSError as e:
                        c.check(e.errno in (errno.ENOMEM, errno.EIO), "v%d: read: %s" % (i, e))
                    if pid:
                        worst = max(worst, mfstest.rss(pid)["RssAnon"] - base)
            finally:
                for f in held:
                    f.close()
            print("bomb.pt: %d of 8 views made, the daemon grew by %d MiB at most"
                  % (opened, worst >> 20), flush=True)
            c.check(pid is not None and worst < (1 << 30),
                    "bomb.pt: the daemon grew by %d MiB with every view open" % (worst >> 20))
            c.check(os.path.exists(os.path.join(mnt, "model.json")), "bomb.pt: the mount still answers")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def lazy_local_headers(c, t):
    build, env = t.build, t.env
    """Issue 19, item 1: a checkpoint laid out by torch's own writer (every
    member's data 64-byte aligned behind an "FB" extra field) mounts
    without reading its storages' local headers: 300 storages, and the load
    reads a few dozen ranges (it read one more per storage). Each is read
    on its tensor's first open: a local header that puts its data
    elsewhere gives EIO for that tensor only, the others read as written."""
    work = tempfile.mkdtemp(prefix="modelfs-pt-")
    try:
        n = 300
        storages = [Storage(str(i), np.arange(i, i + 5 + i % 7, dtype=np.float32)) for i in range(n)]
        obj = {"w%03d" % i: Tensor(st, 0, st.array.shape, (1,)) for i, st in enumerate(storages)}
        path = os.path.join(work, "aligned.pt")
        write_checkpoint(path, obj, storages, aligned=True)
        ls = os.path.join(build, "modelfs-ls")
        log = os.path.join(work, "ranges")
        renv = dict(env, MODELFS_SOURCE="read", MODELFS_SOURCE_LOG=log)
        r = subprocess.run([ls, path], capture_output=True, env=renv, timeout=60)
        with open(log) as f:
            gets = sum(1 for line in f if line.startswith("get "))
        c.check(r.returncode == 0 and gets < 50,
                "aligned.pt: listed (exit %d) reading %d ranges for %d storages" % (r.returncode, gets, n))
        # A copy whose storage 7 has a local header 64 bytes longer than
        # its place: the central directory and the other members unchanged.
        data = bytearray(open(path, "rb").read())
        z = zipfile.ZipFile(path)
        info = z.getinfo("archive/data/7")
        off = info.header_offset
        xlen = struct.unpack_from("<H", data, off + 28)[0]
        struct.pack_into("<H", data, off + 28, xlen + 64)
        bad = os.path.join(work, "moved.pt")
        with open(bad, "wb") as f:
            f.write(data)
        if not mfstest.can_mount():
            return
        with mfstest.mounted(os.path.join(build, "modelfs"), path, env) as mnt:
            ok = all(open(os.path.join(mnt, "tensors", "w%03d" % i), "rb").read() ==
                     storages[i].array.tobytes() for i in range(n))
            c.check(ok, "aligned.pt: every tensor reads as written")
        with mfstest.mounted(os.path.join(build, "modelfs"), bad, env) as mnt:
            data7, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "w007"))
            c.equal((data7, err), (None, errno.EIO), "moved.pt: w007's local header disagrees: EIO")
            c.equal(open(os.path.join(mnt, "tensors", "w008"), "rb").read(), storages[8].array.tobytes(),
                    "moved.pt: w008 reads as written")
        # Cut short under the mount before any tensor was opened: the
        # model changed, so its tensors read as EIO (the one whose local
        # header is past the cut too), never other bytes, and the daemon
        # answers.
        cut = os.path.join(work, "cut.pt")
        shutil.copy(path, cut)
        with mfstest.mounted(os.path.join(build, "modelfs"), cut, env) as mnt:
            os.truncate(cut, os.path.getsize(cut) // 2)
            mfstest.evict(cut)
            last, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "w%03d" % (n - 1)))
            c.equal((last, err), (None, errno.EIO), "cut.pt: a tensor past the cut reads as EIO")
            first, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "w000"))
            c.equal((first, err), (None, errno.EIO), "cut.pt: w000 of the changed file reads as EIO")
            c.check(os.path.exists(os.path.join(mnt, "model.json")), "cut.pt: the mount still answers")
        r = subprocess.run([ls, bad, "tensors/w007"], capture_output=True, env=env, timeout=60)
        c.check(r.returncode == 8 and b'"archive/data/7"' in r.stderr,
                "moved.pt: modelfs-ls refuses w007 naming its member: exit %d %r"
                % (r.returncode, r.stderr[-200:]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


EXTRAS = (truncated_while_mounted, broadcast_bomb, lazy_local_headers, python_pickles, torch_written, hostile)
