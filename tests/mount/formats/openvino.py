"""OpenVINO IR's own checks, beyond the generic ones, with Python's
xml.etree (Debian's expat) and numpy as the independent reader: every
Const layer of the .xml is a tensor whose bytes through the mount are
.bin[offset:offset+size]; its element type, layer id, packed bits and
the IR shape of types shown as bytes (u1, nf4, f4e2m1) in model.json;
f32/ views of i4/u4 (unpacked low nibble first), f16 and bf16 against
numpy; graph.json's layers (id, name, type) and edges against the XML's;
model.json's net name, version and rt_info. Each pair is mounted from
either file (both have an expectation). Hostile pairs (billion laughs,
an external entity, an undefined entity, deep nesting, 5,000 attributes,
offsets past the .bin or overflowing, a shape overflowing, a wrong size,
an unknown type, duplicate layer ids, an edge to a missing layer, a .bin
that is a symlink or missing, bad UTF-8, a cut document) are refused by
both programs with exit 5 and a message naming the file, from the .xml
and from the .bin.
"""
import json
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import format_checks
import mfstest
import numpy as np

DIRS = ("gen/openvino",)
OWN_DIRS = ("gen/openvino_hostile",)


def read_ir(xml_path):
    """(root, {layer id: layer element}) as expat reads the .xml."""
    root = ET.parse(xml_path).getroot()
    return root, {int(l.get("id")): l for l in root.find("layers").findall("layer")}


def unpack4(raw, n, signed):
    b = np.frombuffer(raw, np.uint8)
    v = np.stack([b & 15, b >> 4], axis=1).reshape(-1)[:n].astype(np.int8)
    return np.where(v > 7, v - 16, v) if signed else v


def check_f32(c, what, mnt, t, et, raw, shape):
    n = int(np.prod(shape, dtype=np.int64))
    want = None
    if et in ("i4", "u4"):
        want = unpack4(raw, n, et == "i4").astype(np.float32)
    elif et == "f16":
        want = np.frombuffer(raw, np.float16).astype(np.float32)
    elif et == "bf16":
        want = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
    if want is None:
        return
    if not c.check("f32" in t, what + " has an f32/ view"):
        return
    got = np.load(os.path.join(mnt, t["f32"]))
    c.equal(list(got.shape), list(shape), what + " f32 view shape")
    c.check(np.array_equal(got.reshape(-1), want, equal_nan=True), what + " f32 view values vs numpy")


def check_model(c, t, model, expect, mount):
    if expect is None or expect.get("expect") != "readable":
        return
    xml_path = model[:-4] + ".xml"
    bin_path = model[:-4] + ".bin"
    root, layers = read_ir(xml_path)
    with open(bin_path, "rb") as f:
        binary = f.read()
    name = os.path.basename(model)
    mnt = mount()
    doc = json.loads(mfstest.read_bytes(os.path.join(mnt, "model.json")))
    c.equal(doc["metadata"].get("name"), root.get("name"), name + ": net name vs expat")
    c.equal(doc["metadata"].get("version"), root.get("version"), name + ": net version vs expat")
    c.equal(doc["metadata"].get("rt_info"), expect.get("rt_info"), name + ": rt_info")
    consts = [l for l in layers.values() if l.get("type") == "Const"]
    c.equal(doc["tensor_count"], len(consts), name + ": one tensor per Const layer")
    by_id = {tt["layer_id"]: tt for tt in doc["tensors"]}
    for l in consts:
        d = l.find("data")
        lid, et = int(l.get("id")), d.get("element_type")
        what = "%s: Const %d (%s)" % (name, lid, et)
        tt = by_id.get(lid)
        if not c.check(tt is not None, what + " in the table"):
            continue
        off, size = int(d.get("offset")), int(d.get("size"))
        raw = binary[off:off + size]
        port = l.find("output/port")
        want_name = l.get("name") or (port.get("names").split(",")[0] if port is not None and port.get("names")
                                      else "const_%d" % lid)
        c.equal(tt["name"], want_name, what + " name")
        c.equal(tt["element_type"], et, what + " element_type")
        c.equal(mfstest.read_bytes(os.path.join(mnt, tt["path"])), raw, what + " bytes vs .bin[offset:+size]")
        shape = [int(x) for x in d.get("shape").split(",")] if d.get("shape") else []
        if tt["dtype"] == "bytes":
            c.equal(tt.get("declared_shape"), shape, what + " declared_shape")
        else:
            c.equal(tt["shape"], shape, what + " shape")
        if et in ("i4", "u4", "u1", "nf4", "f4e2m1"):
            c.equal(tt.get("element_bits"), 1 if et == "u1" else 4, what + " element_bits")
        if model.endswith(".xml"):
            c.equal(tt.get("location"), os.path.basename(bin_path), what + " location")
        check_f32(c, what, mnt, tt, et, raw, shape)
    g = json.loads(mfstest.read_bytes(os.path.join(mnt, "graph.json")))
    c.equal([(x["id"], x.get("name"), x.get("type")) for x in g["layers"]],
            [(int(l.get("id")), l.get("name"), l.get("type")) for l in root.find("layers").findall("layer")],
            name + ": graph.json layers vs expat")
    c.equal([(e["from_layer"], e["from_port"], e["to_layer"], e["to_port"]) for e in g["edges"]],
            [tuple(int(e.get(k)) for k in ("from-layer", "from-port", "to-layer", "to-port"))
             for e in root.find("edges").findall("edge")], name + ": graph.json edges vs expat")


def check_hostile(c, t):
    d = os.path.join(t.gen, "openvino_hostile")
    n = 0
    for model, expect in mfstest.expected_models(c, [d], {"openvino"}):
        format_checks.check_refused(c, t.build, model, expect, t.env)
        # The same pair from its .bin: refused too, never served.
        b = model[:-4] + ".bin"
        if os.path.isfile(b) and not os.path.islink(b) and os.path.getsize(b) > 0:
            r = subprocess.run([t.modelfs_ls, b], capture_output=True, text=True, env=t.env, timeout=60)
            c.equal(r.returncode, 5, "%s: modelfs-ls refuses it (%s)" % (os.path.basename(b), r.stderr.strip()))
        n += 1
    c.check(n >= 15, "hostile pairs checked: %d" % n)


def check_folder(c, t):
    """A folder holding a pair (and nothing else) mounts as one model,
    named by its .xml, its tensors the .bin's bytes; a .bin that is a
    symlink out of the folder is refused in a folder mount too."""
    src = os.path.join(t.gen, "openvino")
    with tempfile.TemporaryDirectory(prefix="modelfs-ov-") as d:
        for f in ("small.xml", "small.bin"):
            shutil.copy(os.path.join(src, f), d)
        with mfstest.mounted(t.modelfs, d, t.env) as mnt:
            c.equal(sorted(os.listdir(mnt)), ["files", "models.json", "small.xml"],
                    "folder: the pair is one model (and the files view)")
            with open(os.path.join(d, "small.bin"), "rb") as f:
                c.equal(mfstest.read_bytes(os.path.join(mnt, "small.xml", "tensors", "bias")), f.read()[:12],
                        "folder: bias bytes vs the .bin")
        os.remove(os.path.join(d, "small.bin"))
        os.symlink(os.path.join(src, "small.bin"), os.path.join(d, "small.bin"))
        r = subprocess.run([t.modelfs_ls, d], capture_output=True, text=True, env=t.env, timeout=60)
        c.check("symlink" in r.stdout + r.stderr and "tensors/bias" not in r.stdout,
                "folder: a .bin symlinked out is refused (%s)" % (r.stdout + r.stderr).strip()[:300])


FETCH_NPM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts",
                         "fetch_npm.sh")
NODE_READ = r"""
const ov = require(process.argv[1]);
const core = new ov.Core();
core.readModel(process.argv[2], process.argv[3]).then(m => {
  const out = m.getOps().filter(o => o.getTypeName() === "Constant")
                        .map(o => o.getFriendlyName());
  console.log(JSON.stringify(out));
}).catch(e => { console.error(String(e)); process.exit(3); });
"""


def check_npm(c, t):
    """npm's openvino-node (the OpenVINO runtime) as a second reader: the
    Const layers it reads from each generated pair are the tensors the
    expectation lists. Skipped, visibly, when it does not install or its
    native runtime does not load here."""
    d = os.path.join(t.build, "npm", "openvino")
    failed = os.path.join(t.build, "npm", "openvino.failed")
    if os.path.exists(failed):
        # Tried once in this build: npm is not asked again on every run
        # (remove the file to retry).
        with open(failed) as f:
            c.skip("npm openvino-node (%s): %s" % (failed, f.read().strip()))
        return
    r = subprocess.run(["sh", FETCH_NPM, "openvino", "openvino-node@2026.4.0", d, "node_modules/openvino-node"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        why = r.stderr.strip() or "exit %d" % r.returncode
        with open(failed, "w") as f:
            f.write(why + "\n")
        c.skip("npm openvino-node: %s" % why)
        return
    pkg = r.stdout.strip()
    for stem in ("small", "all_types"):
        x = os.path.join(t.gen, "openvino", stem + ".xml")
        with open(x + ".expect.json") as f:
            want = sorted(tt["name"] for tt in json.load(f)["tensors"])
        p = subprocess.run(["node", "-e", NODE_READ, pkg, x, x[:-4] + ".bin"], capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 0:
            c.skip("openvino-node's runtime does not read %s here: %s" % (stem, p.stderr.strip()[-300:]))
            continue
        c.equal(sorted(json.loads(p.stdout)), want, "%s: openvino-node's Constants vs the expectation" % stem)


def check_remote(c, t):
    """A pair served over HTTP (rangeserver.py, loopback) mounted from its
    .xml's URL: the .bin beside it is fetched by range; every tensor's
    bytes are .bin[offset:+size] and the table is the local mount's."""
    import rangeserver
    d = os.path.join(t.gen, "openvino")
    srv = rangeserver.start(d)
    try:
        with tempfile.TemporaryDirectory(prefix="modelfs-ov-cache-") as cache:
            for stem in ("small", "all_types"):
                x = os.path.join(d, stem + ".xml")
                with open(x[:-4] + ".bin", "rb") as f:
                    binary = f.read()
                with mfstest.mounted(t.modelfs, srv.url + "/" + stem + ".xml", t.env,
                                     extra=("-o", "cache_dir=" + cache)) as rmnt, \
                        mfstest.mounted(t.modelfs, x, t.env) as lmnt:
                    rdoc = json.loads(mfstest.read_bytes(os.path.join(rmnt, "model.json")))
                    ldoc = json.loads(mfstest.read_bytes(os.path.join(lmnt, "model.json")))
                    c.equal(rdoc["tensors"], ldoc["tensors"], "remote %s: table vs the local mount" % stem)
                    for tt in rdoc["tensors"]:
                        c.equal(mfstest.read_bytes(os.path.join(rmnt, tt["path"])),
                                binary[tt["offset"]:tt["offset"] + tt["nbytes"]],
                                "remote %s: %s bytes vs the .bin" % (stem, tt["name"]))
                # From the .bin's URL: its .xml fetched beside it, the same
                # tree as the local .bin's.
                env = dict(t.env, XDG_CACHE_HOME=cache)
                for what in ([], ["SHA256SUMS"]):
                    r = subprocess.run([t.modelfs_ls, srv.url + "/" + stem + ".bin"] + what,
                                       capture_output=True, env=env, timeout=60)
                    l = subprocess.run([t.modelfs_ls, x[:-4] + ".bin"] + what,
                                       capture_output=True, env=t.env, timeout=60)
                    c.check(r.returncode == 0 and r.stdout == l.stdout and l.stdout,
                            "remote %s.bin: %s vs the local .bin's (%s)"
                            % (stem, what[0] if what else "the tree", r.stderr.decode()[-300:]))
            # A .bin with no IR beside it: the unknown-format exit, saying both.
            junk = os.path.join(d, "no_ir_beside.bin")
            with open(junk, "wb") as f:
                f.write(b"\x07" * 1000)
            try:
                r = subprocess.run([t.modelfs_ls, srv.url + "/no_ir_beside.bin"], capture_output=True,
                                   text=True, env=dict(t.env, XDG_CACHE_HOME=cache), timeout=60)
            finally:
                os.unlink(junk)
            c.check(r.returncode == 4 and "nor an OpenVINO IR .bin" in r.stderr
                    and "no_ir_beside.xml" in r.stderr,
                    "remote .bin without an IR: exit 4 naming the .xml (%d, %s)"
                    % (r.returncode, r.stderr.strip()[-300:]))
    finally:
        srv.stop()


EXTRAS = (check_hostile, check_folder, check_remote, check_npm)
