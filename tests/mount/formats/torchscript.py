"""TorchScript archives (issue 36): their own checks, beyond the generic ones.

1. Every generated archive (scripts/gen_torchscript.py, written by
   torch.jit.save and with its expectation from torch.jit.load and
   Python's own unpickler): model.json's classes by module path, its code/
   and extra/ listing, each tensor's stride, storage offset, contiguity and
   storage sharing; and, live, torch.jit.load(...).state_dict() (plus the
   constants its code names) byte for byte against the files through the
   mount.
2. Archives torch writes here and now: a traced and a scripted module of
   torch.nn's own layers (Sequential, LSTM, Embedding, LayerNorm): every
   state_dict tensor a file with its bytes; any other tensor attribute
   (LSTM's _flat_weights) the same object as one of them.
3. Hostile archives: a TorchScript object made with arguments, one that is
   its own state, a module containing itself, exponential sharing through
   modules, 5,000 classes, os.system beside __torch__ classes (refused,
   naming it, never run), a constants.pkl that is not a tuple, an
   attribute set twice: exit 5, one line naming the file, the offset and
   the problem, in bounded time.
"""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

import mfstest
from gen_pytorch import Pickle, Storage, Tensor, write_checkpoint
import numpy as np
from formats.pytorch import refused

DIRS = ("gen/torchscript",)


def setup(c, t):
    try:
        import torch
    except ImportError:
        torch = None
        c.skip("import torch failed: the torch.jit.load cross-check is not run")
    t.torch = torch


def check_model(c, t, model, expect, mount):
    if expect is None or expect.get("format") != "torchscript":
        return
    name = os.path.basename(model)
    try:
        mnt = mount()
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (name, e))
        return
    with open(os.path.join(mnt, "model.json")) as f:
        doc = json.load(f)
    ts = doc.get("torchscript", {})
    c.equal(ts.get("classes"), expect["classes"], "%s: classes by module path" % name)
    c.equal([x["name"] for x in ts.get("code", [])], expect["code"], "%s: code/ listed" % name)
    c.equal([x["name"] for x in ts.get("extra_files", [])], expect["extra_files"],
            "%s: extra/ listed" % name)
    got = {x["name"]: x for x in doc["tensors"]}
    for want in expect["tensors"]:
        x = got.get(want["name"], {})
        for k in ("stride", "storage_offset", "contiguous"):
            c.equal(x.get(k), want[k], "%s: %s %s" % (name, want["name"], k))
        c.equal(sorted(x.get("shares_storage_with", [])), sorted(want.get("shares_storage_with", [])),
                "%s: %s shares_storage_with" % (name, want["name"]))
    if t.torch is not None:
        torch_check(c, t.torch, model, mnt, got)


def c_bytes(torch, v):
    v = v.detach().contiguous()
    return (v.view(torch.int16) if v.dtype == torch.bfloat16 else v).numpy().tobytes()


def torch_check(c, torch, model, mnt, got):
    """torch.jit.load's own tensors against the mounted files."""
    name = os.path.basename(model)
    m = torch.jit.load(model)
    named = list(m.state_dict().items())
    try:
        named += [("CONSTANTS." + k, v) for k, v in m.code_with_constants[1].const_mapping.items()
                  if isinstance(v, torch.Tensor)]
    except AttributeError:
        pass
    for tname, v in named:
        x = got.get(tname)
        if not c.check(x is not None, "%s: %s (torch.jit.load) missing from the mount" % (name, tname)):
            continue
        data = mfstest.read_bytes(os.path.join(mnt, x["path"]))
        c.equal(hashlib.sha256(data).hexdigest(), hashlib.sha256(c_bytes(torch, v)).hexdigest(),
                "%s: %s: torch.jit.load's bytes vs the mount" % (name, tname))
    c.equal(len(named), len(got), "%s: tensors torch.jit.load sees" % name)


def torch_written(c, t):
    """nn layers torch scripts and traces here: every state_dict tensor a
    file with its bytes (modelfs-ls, no mount)."""
    torch = t.torch
    if torch is None:
        return
    torch.manual_seed(1)
    seq = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.LayerNorm(4),
                              torch.nn.Linear(4, 3)).eval()
    lstm = torch.nn.LSTM(3, 5, num_layers=2).eval()
    cases = {"seq_script.pt": torch.jit.script(seq),
             "seq_trace.pt": torch.jit.trace(seq, torch.tensor([[1, 2, 3]])),
             "lstm_script.pt": torch.jit.script(lstm)}
    modelfs_ls = os.path.join(t.build, "modelfs-ls")
    work = tempfile.mkdtemp(prefix="modelfs-ts-")
    try:
        for fn, m in cases.items():
            path = os.path.join(work, fn)
            m.save(path)
            r = subprocess.run([modelfs_ls, path, "model.json"], capture_output=True, env=t.env,
                               timeout=30)
            if not c.equal(r.returncode, 0, "%s: %s" % (fn, r.stderr[:300])):
                continue
            doc = json.loads(r.stdout)
            c.equal(doc["format"], "torchscript", fn + ": format")
            got = {x["name"]: x["path"] for x in doc["tensors"]}
            sd = torch.jit.load(path).state_dict()
            c.check(set(sd) <= set(got), "%s: every state_dict name is a file: %s missing"
                    % (fn, sorted(set(sd) - set(got))))
            # Other tensor attributes (LSTM's _flat_weights list) are the
            # same objects as parameters: shown, and said to be.
            for x in doc["tensors"]:
                if x["name"] not in sd:
                    c.check(x.get("same_object_as") in sd, "%s: %s, not in the state_dict, is "
                            "the same object as one that is: %r" % (fn, x["name"],
                                                                   x.get("same_object_as")))
            for k, v in sd.items():
                data = subprocess.run([modelfs_ls, path, got.get(k, "missing")],
                                      capture_output=True, env=t.env, timeout=30).stdout
                c.equal(hashlib.sha256(data).hexdigest(), hashlib.sha256(c_bytes(torch, v)).hexdigest(),
                        "%s: %s bytes" % (fn, k))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- hostile archives --------------------------------------------------------


def module(p, cls="M"):
    """NEWOBJ of a __torch__ class with no arguments."""
    return p.glob("__torch__", cls).op(b")").op(b"\x81")


def hostile_cases(marker):
    """(stem, data.pkl, constants.pkl or None, what the message must contain)."""
    out = []
    p = Pickle().glob("__torch__", "M").int(1).op(b"\x85").op(b"\x81")
    out.append(("with_args", p.stop(), None, "made with arguments"))
    p = module(Pickle())
    p.put()
    out.append(("own_state", p.get(0).op(b"b").stop(), None, "its own state"))
    p = module(Pickle())
    p.put()
    p.op(b"}").str("me").get(0).op(b"s").op(b"b")
    out.append(("contains_itself", p.stop(), None, "nested deeper than 100"))
    p = module(Pickle()).op(b"}").op(b"b")
    _, prev = p.put()
    for _ in range(60):
        module(p).op(b"}").op(b"(").str("a").get(prev).str("b").get(prev).op(b"u").op(b"b")
        _, prev = p.put()
    out.append(("sharing_bomb", p.stop(), None, "more memory than the budget"))
    p = Pickle()
    for i in range(5000):
        p.glob("__torch__", "C%d" % i).op(b"0")
    out.append(("many_classes", module(p).stop(), None, "more than 4096 TorchScript classes"))
    p = module(Pickle()).op(b"}").str("x").glob("os", "system").str("touch " + marker)
    p.op(b"\x85").op(b"R").op(b"s").op(b"b")
    out.append(("os_system", p.stop(), None, "refuses global 'os.system'"))
    out.append(("constants_none", module(Pickle()).op(b"}").op(b"b").stop(), b"\x80\x02N.",
                "constants.pkl is not a tuple"))
    return out


def hostile(c, t):
    modelfs_ls = os.path.join(t.build, "modelfs-ls")
    work = tempfile.mkdtemp(prefix="modelfs-ts-")
    marker = os.path.join(work, "EXECUTED")
    try:
        for stem, pkl, consts, needle in hostile_cases(marker):
            path = os.path.join(work, stem + ".pt")
            extra = [("code/__torch__.py", b"class M(Module):\n  pass\n")]
            if consts is not None:
                extra.append(("constants.pkl", consts))
            write_checkpoint(path, None, [], top=stem, pickle_bytes=pkl, extra_members=extra)
            refused(c, modelfs_ls, path, needle, t.env)
        c.check(not os.path.exists(marker), "no hostile archive ran its command")

        # An attribute set twice (BUILD twice): two tensors of one name, the
        # second shown as duplicates are (README "names").
        s = Storage("0", np.arange(4, dtype=np.float32))
        p = module(Pickle())
        p.put()
        p.op(b"}").str("w").value(Tensor(s, 0, (4,), (1,))).op(b"s").op(b"b")
        p.op(b"}").str("w").value(Tensor(s, 0, (4,), (1,))).op(b"s").op(b"b")
        path = os.path.join(work, "twice.pt")
        write_checkpoint(path, None, [s], top="twice", pickle_bytes=p.stop(),
                         extra_members=[("code/__torch__.py", b"")])
        r = subprocess.run([modelfs_ls, path], capture_output=True, text=True, env=t.env, timeout=30)
        c.check(r.returncode == 0 and "tensors/w\n" in r.stdout and "tensors/w%~2\n" in r.stdout,
                "twice.pt: both tensors, the second as a duplicate name: %d %r %r"
                % (r.returncode, r.stdout[-300:], r.stderr[:300]))

        # A torch.save checkpoint with a code/ member is read as TorchScript:
        # its one tensor is there; a __torch__ class in a plain checkpoint is
        # refused as before (no code/, no constants.pkl).
        p = Pickle().op(b"}").str("t").value(Tensor(s, 0, (4,), (1,))).op(b"s")
        path = os.path.join(work, "code_only.pt")
        write_checkpoint(path, None, [s], top="code_only", pickle_bytes=p.stop(),
                         extra_members=[("code/__torch__/m.py", b"pass\n")])
        r = subprocess.run([modelfs_ls, path, "tensors/t"], capture_output=True, env=t.env,
                           timeout=30)
        c.equal((r.returncode, r.stdout), (0, s.array.tobytes()), "code/ beside data.pkl: read")
        path = os.path.join(work, "plain_torch_class.pt")
        write_checkpoint(path, None, [], top="plain_torch_class",
                         pickle_bytes=module(Pickle()).op(b"}").op(b"b").stop())
        refused(c, modelfs_ls, path, "refuses global '__torch__.M'", t.env)
    finally:
        shutil.rmtree(work, ignore_errors=True)


EXTRAS = (torch_written, hostile)
