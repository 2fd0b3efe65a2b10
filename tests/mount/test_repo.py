#!/usr/bin/python3
"""A folder laid out like a classic transformers repository on the Hub
(issue 36): one model in every weight format such a repository holds —
model.safetensors, pytorch_model.bin, model.onnx, tf_model.h5,
flax_model.msgpack, rust_model.ot (TorchScript), model.tflite,
openvino/openvino_model.xml + .bin, tfjs/model.json + its shards — beside
config.json, tokenizer.json, vocab.txt and README.md. Each weight file is
a generated model of its format (gen_models.sh), copied under the name a
repository gives it. Mounted

 - as a local folder (`modelfs DIR MNT`),
 - file by file over http (`modelfs URL... MNT`, rangeserver.py on
   loopback; a pair by its .xml or model.json),
 - whole from the test Hub (`modelfs hf://org/bert MNT`, hubserver.py),

every weight file is a model, the same (tree, bytes of every file, every
xattr) as the local file mounted alone; the other files are none (no
model, no ERROR), and modelfs-ls DIR names no weight file as "not a model
file of a known format". A format whose generator made no model here
(its driver missing) is a visible SKIP, not a pass.

usage: test_repo.py BUILD_DIR GEN_DIR
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hubserver  # noqa: E402
import mfstest  # noqa: E402
import rangeserver  # noqa: E402

# (path in the repository, candidates in GEN_DIR: the first present is
# used; for a pair, its other files beside it, as (candidate, path)).
WEIGHTS = [
    ("model.safetensors", ["safetensors/gen_dtypes.safetensors", "safetensors/gen_names.safetensors"], ()),
    ("pytorch_model.bin", ["pytorch/nested.pt", "pytorch/dtypes.pt"], ()),
    ("model.onnx", ["onnx/gen_constants.onnx"], ()),
    ("tf_model.h5", ["hdf5/tf_model.h5"], ()),
    ("flax_model.msgpack", ["flax/flax_model.msgpack"], ()),
    ("rust_model.ot", ["torchscript/rust_model.ot", "torchscript/scripted.pt",
                       "pytorch/torchscript.pt"], ()),
    ("model.tflite", ["tflite/dtypes.tflite"], ()),
    ("openvino/openvino_model.xml", ["openvino/small.xml", "openvino/model.xml"],
     (("%s.bin", "openvino/openvino_model.bin"),)),
    ("tfjs/model.json", ["tfjs_repo/model.json"],
     (("group1-shard1of2.bin", "tfjs/group1-shard1of2.bin"),
      ("group1-shard2of2.bin", "tfjs/group1-shard2of2.bin"))),
]
OTHERS = {
    "config.json": b'{"architectures": ["BertForMaskedLM"], "model_type": "bert"}\n',
    "tokenizer.json": b'{"version": "1.0", "model": {"type": "WordPiece"}}\n',
    "vocab.txt": b"[PAD]\n[UNK]\n[CLS]\n[SEP]\n",
    "README.md": b"# a model card\n",
}


def build_repo(c, gen, root):
    """The repository under `root`: {path: local file} of every file, and
    {path: local model file} of each weight file found."""
    files, weights = {}, {}
    for path, cands, parts in WEIGHTS:
        src = next((os.path.join(gen, p) for p in cands if os.path.isfile(os.path.join(gen, p))),
                   None)
        if src is None:
            c.skip("%s: no generated model of its format (%s)" % (path, ", ".join(cands)))
            continue
        dst = os.path.join(root, path)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(src, dst)
        files[path] = dst
        ok = True
        for other, rel in parts:
            o = os.path.join(os.path.dirname(src), other % os.path.splitext(os.path.basename(src))[0]
                             if "%s" in other else other)
            if not os.path.isfile(o):
                c.check(False, "%s: %s missing beside %s" % (path, o, src))
                ok = False
                continue
            shutil.copy(o, os.path.join(root, rel))
            files[rel] = os.path.join(root, rel)
        if ok:
            weights[path] = dst
    for path, data in OTHERS.items():
        with open(os.path.join(root, path), "wb") as f:
            f.write(data)
        files[path] = os.path.join(root, path)
    return files, weights


def models_in(mnt):
    """The model folders of a mount of several models (paths with a
    model.json), and its ERROR folders."""
    found, errors = [], []
    for d, dirs, names in os.walk(mnt):
        rel = os.path.relpath(d, mnt)
        if rel == ".":
            dirs[:] = [n for n in dirs if n != "files"]  # the files view: no models
        if "model.json" in names and rel != ".":
            found.append(rel)
            dirs[:] = []
        elif "ERROR" in names:
            errors.append(rel)
            dirs[:] = []
    return sorted(found), sorted(errors)


def compare_all(c, what, mnt, where_of, weights, locals_):
    """Each weight file's model in `mnt` (at where_of(path)) against its
    local mount."""
    found, errors = models_in(mnt)
    c.equal(errors, [], "%s: no ERROR folders" % what)
    c.equal(sorted(found), sorted(where_of(p) for p in weights), "%s: its models" % what)
    for path in sorted(weights):
        mfstest.same_mounts(c, "%s: %s" % (what, path), os.path.join(mnt, where_of(path)),
                            locals_[path])


def body(c, t):
    gen = t.args[0]
    root = mfstest.scratch("modelfs-repo-")
    files, weights = build_repo(c, gen, root)
    if not weights:
        c.skip("no weight file at all: nothing mounted")
        return
    # modelfs-ls DIR: every weight file a model, none "not a model file".
    r = subprocess.run([t.modelfs_ls, root], capture_output=True, text=True, env=t.env,
                       timeout=120)
    for path in weights:
        c.check(("d            - %s/" % path) in r.stdout.splitlines(),
                "modelfs-ls DIR lists %s as a model (%s)" % (path, r.stderr[-300:]))
        c.check(path not in r.stderr, "modelfs-ls DIR says of %s: %s" % (path, r.stderr[-300:]))
    locals_ = {}
    stack = []
    srv = rangeserver.start(root)
    hub = hubserver.Hub("hf_modelfsTESTtoken0123456789", page=3)
    try:
        for path, local in sorted(weights.items()):
            stack.append(mfstest.mounted(t.modelfs, local, t.env))
            locals_[path] = stack[-1].__enter__()
        with mfstest.mounted(t.modelfs, root, t.env) as mnt:
            compare_all(c, "local folder", mnt, lambda p: p, weights, locals_)
        urls = [srv.url + "/" + p for p in sorted(weights)]
        with mfstest.mounted(t.modelfs, urls[-1], t.env, extra=urls[:-1]) as mnt:
            compare_all(c, "http", mnt, lambda p: os.path.basename(p), weights, locals_)
        hub.add_repo("org/bert", files)
        env = dict(t.env, HF_ENDPOINT=hub.url, HF_HOME=os.path.join(root, ".hf-home"),
                   XDG_CACHE_HOME=os.path.join(root, ".cache"))
        with mfstest.mounted(t.modelfs, "hf://org/bert", env) as mnt:
            compare_all(c, "hf://org/bert", mnt, lambda p: p, weights, locals_)
    except RuntimeError as e:
        c.check(False, "mount: %s" % e)
    finally:
        for m in reversed(stack):
            m.__exit__(None, None, None)
        hub.stop()
        srv.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("repository tests", body, doc=__doc__, min_args=1))
