#!/usr/bin/python3
"""The tools that load models, loading from the files view (issue 37).

A tiny repository made here: a BERT-shaped ONNX model (input_ids ->
last_hidden_state, a Gather of an embedding table) with its weights as
external data (onnx/model.onnx + onnx/model.onnx_data), its config.json,
tokenizer.json and tokenizer_config.json, a pytorch_model.bin written by
torch.save, an .npy and a model.safetensors of 100 tensors. Mounted as a
local folder (`modelfs DIR MNT`) and from the test Hub (`modelfs
hf://org/tiny MNT`), each loader reads MNT/files/... and must give what
it gives from the local files:

 - torch.load (Debian's python3-torch) of pytorch_model.bin: every tensor;
 - np.load(mmap_mode="r") of the .npy;
 - onnxruntime-node (npm): InferenceSession.create(MNT/files/onnx/
   model.onnx), its external data read beside it: the same outputs;
 - transformers.js (npm @huggingface/transformers, from_pretrained's
   JavaScript port): pipeline("feature-extraction", MNT/files), local files
   only: the same embedding;
 - a safetensors reader mapping the file (numpy memmap over the header's
   offsets, as safe_open does) reading 3 of the 100 tensors: from the Hub,
   the byte host's GETs must ask for about those 3 tensors' bytes, not the
   file.

npm's packages come from scripts/fetch_transformers_js.sh (a visible SKIP
when npm cannot install them).

usage: test_loaders.py BUILD_DIR
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hubserver  # noqa: E402
import mfstest  # noqa: E402
import numpy as np  # noqa: E402

SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "model", "fs"]
TENSOR = 64 << 10      # each of the safetensors' 100 tensors


def write_tiny_bert(root):
    """config.json, tokenizer files and onnx/model.onnx (+ _data) of a
    model whose output is row input_ids[i] of its embedding table."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper
    hidden = 4
    table = (np.arange(len(VOCAB) * hidden, dtype=np.float32) / 10).reshape(len(VOCAB), hidden)
    inputs = [helper.make_tensor_value_info(n, T.INT64, ["batch", "seq"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("last_hidden_state", T.FLOAT, ["batch", "seq", hidden])
    g = helper.make_graph([helper.make_node("Gather", ["emb", "input_ids"], ["last_hidden_state"])],
                          "tiny", inputs, [out], [numpy_helper.from_array(table, "emb")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    os.makedirs(os.path.join(root, "onnx"))
    onnx.save_model(m, os.path.join(root, "onnx", "model.onnx"), save_as_external_data=True,
                    location="model.onnx_data", size_threshold=0)
    with open(os.path.join(root, "config.json"), "w") as f:
        json.dump({"model_type": "bert", "architectures": ["BertModel"], "hidden_size": hidden,
                   "vocab_size": len(VOCAB)}, f)
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, t in enumerate(VOCAB[:4])]
    cls, sep = {"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
           "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                          "strip_accents": None, "lowercase": True},
           "pre_tokenizer": {"type": "BertPreTokenizer"},
           "post_processor": {"type": "TemplateProcessing",
                              "single": [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep],
                              "pair": [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep,
                                       {"Sequence": {"id": "B", "type_id": 1}},
                                       {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                              "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                                                 "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
           "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
           "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                     "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(VOCAB)}}}
    with open(os.path.join(root, "tokenizer.json"), "w") as f:
        json.dump(tok, f)
    with open(os.path.join(root, "tokenizer_config.json"), "w") as f:
        json.dump({"model_max_length": 512, "tokenizer_class": "BertTokenizer", "do_lower_case": True,
                   "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                   "unk_token": "[UNK]"}, f)


def write_safetensors(path, n):
    """n tensors of TENSOR bytes each (U8, random bytes), in name order."""
    rng = np.random.default_rng(37)
    mfstest.write_safetensors_entries(path, [("t%03d" % i, "U8", [TENSOR],
                                      rng.integers(0, 256, TENSOR, dtype=np.uint8).tobytes())
                                     for i in range(n)])


def make_repo(c, root):
    """The repository: {path: local file}."""
    write_tiny_bert(root)
    np.save(os.path.join(root, "x.npy"), np.arange(3 * 5, dtype="<f8").reshape(3, 5) / 7)
    try:
        import torch
        torch.manual_seed(0)
        torch.save({"w": torch.randn(4, 3), "ids": torch.arange(6), "half": torch.randn(5).half()},
                   os.path.join(root, "pytorch_model.bin"))
    except ImportError:
        c.skip("no python3-torch: torch.load is not checked")
    write_safetensors(os.path.join(root, "model.safetensors"), 100)
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            files[os.path.relpath(p, root)] = p
    return files


def torch_same(c, what, got, want):
    import torch
    a = torch.load(got, map_location="cpu", weights_only=True)
    b = torch.load(want, map_location="cpu", weights_only=True)
    c.equal(sorted(a), sorted(b), what + ": torch.load's keys")
    for k in sorted(set(a) & set(b)):
        c.check(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), "%s: torch.load %s" % (what, k))


def node_loaders(c, t, root, views):
    """onnxruntime-node and transformers.js over each view (and the local
    folder, the ground truth)."""
    pkg = os.path.join(t.build, "npm-transformers")
    r = subprocess.run(["sh", os.path.join(SRC, "scripts", "fetch_transformers_js.sh"), pkg],
                       capture_output=True, text=True, timeout=400)
    if r.returncode == 77:
        return c.skip("npm @huggingface/transformers: %s" % r.stderr.strip()[-300:])
    if not c.equal(r.returncode, 0, "fetch_transformers_js.sh: %s" % r.stderr.strip()[-300:]):
        return
    tr = r.stdout.strip()
    ort = os.path.join(pkg, "node_modules", "onnxruntime-node")
    folders = [root] + [v for _, v in views]
    p = subprocess.run(["node", os.path.join(HERE, "ort_run.cjs"), ort] +
                       [os.path.join(f, "onnx", "model.onnx") for f in folders],
                       capture_output=True, text=True, timeout=120)
    p2 = subprocess.run(["node", os.path.join(HERE, "transformers_run.mjs"), tr] + folders,
                        capture_output=True, text=True, timeout=120)
    for label, proc, key in (("onnxruntime-node", p, lambda f: os.path.join(f, "onnx", "model.onnx")),
                             ("transformers.js", p2, lambda f: f)):
        if not c.equal(proc.returncode, 0, "%s ran: %s" % (label, proc.stderr[-300:])):
            continue
        out = json.loads(proc.stdout)
        want = out.get(key(root), {})
        c.check("data" in want and len(want["data"]) == 20, "%s on the local files: %s" % (label, want))
        for what, v in views:
            c.equal(out.get(key(v)), want, "%s: %s from the mount" % (what, label))


def three_of_hundred(c, hub, path, local):
    """A memmap of 3 tensors of the mounted safetensors, as safe_open
    maps the file: their bytes against the local file's, the bytes read,
    and the bytes the byte host was asked for meanwhile (its GETs' ranges)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    since = len(hub.requests())
    ranges = [tuple(8 + n + x for x in header[k]["data_offsets"]) for k in ("t005", "t050", "t095")]
    # In another process: a page fault here would hold this one's GIL,
    # and the test Hub's threads, which must answer it, could not run.
    r = subprocess.run([sys.executable, "-c",
                        "import hashlib, sys, numpy as np; m = np.memmap(sys.argv[1], dtype=np.uint8, "
                        "mode='r'); print(' '.join(hashlib.sha256(bytes(m[int(a):int(b)])).hexdigest() "
                        "for a, b in zip(sys.argv[2::2], sys.argv[3::2])))", path] +
                       [str(x) for ab in ranges for x in ab], capture_output=True, text=True, timeout=120)
    got = r.stdout.split()
    read = 0
    with open(local, "rb") as f:
        for i, (a, b) in enumerate(ranges):
            f.seek(a)
            want = hashlib.sha256(f.read(b - a)).hexdigest()
            c.equal(got[i] if i < len(got) else r.stderr[-200:], want, "3 of 100: tensor %d through a mapping" % i)
            read += b - a
    asked = 0
    for r in hub.requests("bytes", since):
        rng = r[3] or ""
        if rng.startswith("bytes=") and "-" in rng and rng[6:].split("-")[1]:
            first, last = rng[6:].split("-")
            asked += int(last) - int(first) + 1
    return read, asked


def limit(c, what, read, asked):
    """The header's block and each tensor's, with the kernel's
    read-around (256 KiB blocks): far from the file's 6.4 MB."""
    print("%s: 3 of 100 tensors through a mapping: %d bytes read, %d asked of the Hub (%.2fx)"
          % (what, read, asked, asked / read if read else 0))
    c.check(0 < asked <= 1.1 * read + 4 * (256 << 10),
            "%s: 3 of 100 tensors (%d bytes read): %d bytes asked of the Hub" % (what, read, asked))


def body(c, t):
    root = mfstest.scratch("modelfs-loaders-")
    repo = os.path.join(root, "tiny")
    os.makedirs(repo)
    hub = hubserver.Hub("hf_modelfsTESTtoken0123456789", page=50)
    try:
        files = make_repo(c, repo)
        hub.add_repo("org/tiny", files)
        env = dict(t.env, HF_ENDPOINT=hub.url, HF_HOME=os.path.join(root, ".hf-home"),
                   XDG_CACHE_HOME=os.path.join(root, ".cache"))
        with mfstest.mounted(t.modelfs, repo, t.env) as local_mnt, \
                mfstest.mounted(t.modelfs, "hf://org/tiny", env) as hub_mnt:
            views = [("folder", os.path.join(local_mnt, "files")),
                     ("hf://org/tiny", os.path.join(hub_mnt, "files"))]
            for what, v in views:
                if not c.check(os.path.isdir(v), "%s: the mount has files/" % what):
                    return
                if "pytorch_model.bin" in files:
                    torch_same(c, what, os.path.join(v, "pytorch_model.bin"), files["pytorch_model.bin"])
                a = np.load(os.path.join(v, "x.npy"), mmap_mode="r")
                b = np.load(files["x.npy"])
                c.check(a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b),
                        "%s: np.load(mmap_mode='r') of x.npy" % what)
                del a
            node_loaders(c, t, repo, views)
            read, asked = three_of_hundred(c, hub, os.path.join(views[1][1], "model.safetensors"),
                                           files["model.safetensors"])
            limit(c, "hf://org/tiny", read, asked)
        # The model file mounted alone: its files/NAME is the same file.
        one = dict(env, XDG_CACHE_HOME=os.path.join(root, ".cache-one"))
        with mfstest.mounted(t.modelfs, "hf://org/tiny/model.safetensors", one) as mnt:
            read, asked = three_of_hundred(c, hub, os.path.join(mnt, "files", "model.safetensors"),
                                           files["model.safetensors"])
            limit(c, "hf://org/tiny/model.safetensors alone", read, asked)
        # Read through in 1 MiB reads, as from_pretrained does: each read
        # spans 16 tensors; the read-ahead must run on across them, not
        # fetch each tensor by itself (64 GETs when it did).
        one = dict(env, XDG_CACHE_HOME=os.path.join(root, ".cache-two"))
        with mfstest.mounted(t.modelfs, "hf://org/tiny/model.safetensors", one) as mnt:
            since = len(hub.requests())
            with open(os.path.join(mnt, "files", "model.safetensors"), "rb", buffering=0) as f:
                got = hashlib.sha256()
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    got.update(b)
            with open(files["model.safetensors"], "rb") as f:
                c.equal(got.hexdigest(), hashlib.sha256(f.read()).hexdigest(),
                        "model.safetensors read through in 1 MiB reads")
            gets = len(hub.requests("bytes", since))
            print("model.safetensors (6.4 MB, 100 tensors) read through: %d GETs" % gets)
            c.check(gets <= 20, "a read through 100 tensors: %d GETs (at most 20)" % gets)
    except RuntimeError as e:
        c.check(False, "mount: %s" % e)
    finally:
        hub.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("loader tests", body, doc=__doc__, min_args=0))
