#!/usr/bin/python3
"""Checks the .ptd and TensorBuffers drivers against two independent sources:

 1. Debian's flatc decoding the metadata with schemas/flat_tensor.fbs or
    schemas/tensorbuffers.fbs (the flatbuffer cut out of the file here, with
    struct, not by modelfs): names, dtypes, shapes, offsets, sizes, metadata
    must equal what `modelfs-ls MODEL model.json` reports;
 2. every NAME.expect.json: name, dtype (null = our "bytes"), shape, nbytes
    and sha256 of every tensor, plus the format's extras. Every tensor's
    bytes are read through modelfs-ls, one process per model:
    `modelfs-ls --sha256 MODEL PATH...` prints each one's sha256 and size.

Models: ../shared/fixtures/{ptd,tensorbuffers} (SHARED_DIR from argv[2] or
$MFS_SHARED_DIR; skipped visibly when absent) and the output of
scripts/gen_ptd.py and scripts/gen_tb.py: the GEN_DIRs given (or
$MFS_GEN_DIR), each a folder of models or scripts/gen_models.sh's OUTDIR
with ptd/ and tb/; without either, they are generated into a temporary
folder. Models whose expectation is "corrupt" must be refused with exit
code 5 and the expected message.

usage: /usr/bin/python3 check_ptd_tb.py MODELFS_LS [SHARED_DIR [GEN_DIR...]]
Ends with "ptd/tb checks: N passed, M failed"; exits 1 on any failure.
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mfstest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SCHEMAS = os.path.join(ROOT, "schemas")

ET_NUMPY = {
    "BYTE": "uint8", "CHAR": "int8", "SHORT": "int16", "INT": "int32", "LONG": "int64",
    "HALF": "float16", "FLOAT": "float32", "DOUBLE": "float64", "COMPLEXHALF": "complex32",
    "COMPLEXFLOAT": "complex64", "COMPLEXDOUBLE": "complex128", "BOOL": "bool",
    "QINT8": "qint8", "QUINT8": "quint8", "QINT32": "qint32", "BFLOAT16": "bfloat16",
    "QUINT4X2": "quint4x2", "QUINT2X4": "quint2x4", "BITS1x8": "bits1x8", "BITS2x4": "bits2x4",
    "BITS4x2": "bits4x2", "BITS8": "bits8", "BITS16": "bits16", "FLOAT8E5M2": "float8_e5m2",
    "FLOAT8E4M3FN": "float8_e4m3fn", "FLOAT8E5M2FNUZ": "float8_e5m2fnuz",
    "FLOAT8E4M3FNUZ": "float8_e4m3fnuz", "UINT16": "uint16", "UINT32": "uint32",
    "UINT64": "uint64",
}
TB_NUMPY = {"Float32": "float32", "Float64": "float64", "Int8": "int8", "Int16": "int16",
            "Int32": "int32", "Int64": "int64", "UInt8": "uint8", "UInt16": "uint16",
            "UInt32": "uint32", "UInt64": "uint64"}

# The ExecuTorch 0.6 layout (see the end of schemas/flat_tensor.fbs), for
# flatc only; written next to scalar_type.fbs in a temporary folder.
FLAT_TENSOR_V06 = """
include "scalar_type.fbs";
namespace modelfs.flat_tensor06;
file_identifier "FT01";
table TensorMetadata { fully_qualified_name: string; scalar_type: modelfs.executorch.ScalarType;
  sizes: [int]; dim_order: [ubyte]; segment_index: uint; offset: ulong; }
table DataSegment { offset: ulong; size: ulong; }
table NamedData { key: string; segment_index: uint; }
table FlatTensor { version: uint; tensor_alignment: uint; tensors: [TensorMetadata];
  segments: [DataSegment]; named_data: [NamedData]; }
root_type FlatTensor;
"""



def as_int(v):
    """Our documents write u64 values above INT64_MAX as decimal strings."""
    return int(v) if isinstance(v, str) and v.isdigit() else v



def ls(modelfs_ls, model, path=None):
    args = [modelfs_ls, model] + ([path] if path else [])
    return subprocess.run(args, capture_output=True)


# ---- flatc cross-checks -------------------------------------------------------

def ptd_flatc(c, name, data, doc, exp, tmp):
    magic, hlen, fo, fs, sbo, sds = struct.unpack_from("<4sIQQQQ", data, 8)
    md = doc["metadata"]
    c.equal(md["header"], {"magic": magic.decode(), "length": hlen, "flatbuffer_offset": fo,
                           "flatbuffer_size": fs, "segment_base_offset": sbo,
                           "segment_data_size": sds}, name + ": FH01 header")
    c.equal(md["file_identifier"], data[4:8].decode(), name + ": file identifier")
    legacy = exp.get("metadata", {}).get("schema") == "executorch-0.6"
    schema = os.path.join(SCHEMAS, "flat_tensor.fbs")
    if legacy:
        shutil.copy(os.path.join(SCHEMAS, "scalar_type.fbs"), tmp)
        schema = os.path.join(tmp, "flat_tensor06.fbs")
        with open(schema, "w") as f:
            f.write(FLAT_TENSOR_V06)
    fj = mfstest.flatc_decode(schema, data[:fo + fs], tmp)
    c.equal(md["flat_tensor_version"], fj.get("version", 0), name + ": version")
    segs = fj.get("segments", [])
    c.equal(md["segment_count"], len(segs), name + ": segment count")
    c.equal(doc.get("segments"), [{"offset": sbo + s["offset"], "size": s["size"]} for s in segs],
            name + ": segment table")
    entries = [(t.get("fully_qualified_name", ""), t, t, t.get("offset", 0))
               for t in fj.get("tensors", [])] if legacy else []
    entries += [(n.get("key", ""), n, n.get("tensor_layout"), None)
                for n in fj.get("named_data", [])]
    if legacy:
        c.equal(md.get("tensor_alignment"), fj.get("tensor_alignment", 0), name + ": tensor_alignment")
    c.equal(len(doc["tensors"]), len(entries), name + ": entry count")
    for t, (key, nd, layout, inner) in zip(doc["tensors"], entries):
        what = "%s: %r" % (name, key)
        c.equal(t["name"], key, what + " name (file order)")
        si = nd.get("segment_index", 0)
        c.equal(t["segment_index"], si, what + " segment_index")
        c.equal(t["has_tensor_layout"], layout is not None, what + " has_tensor_layout")
        if layout is not None:
            c.equal(t["scalar_type"], layout.get("scalar_type", "BYTE"), what + " scalar_type")
            c.equal(t["dim_order"], layout.get("dim_order", []), what + " dim_order")
        if si >= len(segs):
            c.check("problem" in t and t["nbytes"] == 0, what + " bad segment index flagged")
            continue
        seg = segs[si]
        base = sbo + seg["offset"]
        if inner is None:
            c.equal((t["offset"], t["nbytes"]), (base, seg["size"]), what + " offset, nbytes")
        else:
            c.equal(t["offset"], base + inner, what + " offset (0.6: segment + offset)")
        if "problem" in t:
            c.equal((t["dtype"], t["shape"]), ("bytes", [t["nbytes"]]), what + " flagged: raw bytes")
        elif layout is None:
            c.equal((t["dtype"], t["shape"]), ("bytes", [seg["size"]]), what + " blob")
        else:
            c.equal(t["dtype"], ET_NUMPY.get(layout.get("scalar_type", "BYTE")), what + " dtype")
            c.equal(t["shape"], layout.get("sizes", []), what + " shape")


def tb_flatc(c, name, data, doc, exp, tmp):
    (size,) = struct.unpack_from("<I", data, len(data) - 8)
    fb_off = len(data) - 8 - size
    fj = mfstest.flatc_decode(os.path.join(SCHEMAS, "tensorbuffers.fbs"), data[fb_off:len(data) - 8], tmp)
    md = doc["metadata"]
    c.equal((md["version"], md["model"]), (fj.get("version"), fj.get("model")),
            name + ": version, model")
    c.equal((md["flatbuffer_offset"], md["flatbuffer_size"]), (fb_off, size), name + ": flatbuffer")
    c.equal(md["has_operations_field"], "operations" in fj, name + ": operations field")
    ops = [{"id": as_int(o["id"]), "operation": o["operation"], "output": as_int(o["output"]),
            "input_operations": [as_int(i) for i in o["input_operations"]]}
           for o in md["operations"]]
    want = [{"id": o.get("id", 0), "operation": o.get("operation", "None"),
             "output": o.get("output", 0), "input_operations": o.get("input_operations", [])}
            for o in fj.get("operations", [])]
    c.equal(ops, want, name + ": operations")
    tensors = fj.get("tensors", [])
    c.equal(len(doc["tensors"]), len(tensors), name + ": tensor count")
    for t, ft in zip(doc["tensors"], tensors):
        what = "%s: %r" % (name, ft.get("name", ""))
        c.equal(t["name"], ft.get("name", ""), what + " name (file order)")
        c.equal(as_int(t["id"]), ft.get("id", 0), what + " id")
        c.equal(t["data_type"], ft.get("data_type", "None"), what + " data_type")
        c.equal((t["offset"], t["nbytes"]), (ft.get("data_offset", 0), ft.get("data_size", 0)),
                what + " data_offset, data_size")
        if "problem" in t:
            c.equal((t["dtype"], t["shape"]), ("bytes", [t["nbytes"]]), what + " flagged: raw bytes")
        else:
            c.equal((t["dtype"], t["shape"]), (TB_NUMPY.get(ft.get("data_type")), ft.get("shape")),
                    what + " dtype, shape")


# ---- expectations ----------------------------------------------------------------

def check_tensor(c, t, e, sums, what):
    dtype = "bytes" if e["dtype"] is None else e["dtype"]
    shape = [e["nbytes"]] if e["shape"] is None else e["shape"]
    c.equal((t["dtype"], t["shape"], t["nbytes"]), (dtype, shape, e["nbytes"]),
            what + " dtype, shape, nbytes")
    got, code, err = sums
    want = (e["sha256"], e["nbytes"])
    c.equal(got.get(t["path"], "exit %d: %s" % (code, err)), want,
            what + " sha256, size of modelfs-ls --sha256 " + t["path"])
    for key in ("scalar_type", "dim_order", "segment_index"):
        if e.get(key) is not None:
            c.equal(t.get(key), e[key], what + " " + key)
    if "id" in e:
        c.equal(as_int(t.get("id")), e["id"], what + " id")
    if "data_offset" in e:
        c.equal(t["offset"], e["data_offset"], what + " data_offset")
    if "problem" in e:
        c.equal("problem" in t, e["problem"], what + " flagged with a problem")


def check_metadata(c, name, doc, exp):
    md, em = doc["metadata"], exp.get("metadata", {})
    if exp["format"] == "ptd":
        pairs = [("flat_tensor_version", md.get("flat_tensor_version")),
                 ("segment_count", md.get("segment_count")),
                 ("file_identifier", md.get("file_identifier")),
                 ("header_magic", md.get("header", {}).get("magic")),
                 ("tensor_alignment", md.get("tensor_alignment")), ("schema", md.get("schema"))]
    else:
        ops = [{k: (as_int(v) if k != "input_operations" else [as_int(x) for x in v])
                for k, v in o.items()} for o in md.get("operations", [])]
        pairs = [("version", md.get("version")), ("model", md.get("model")),
                 ("has_operations_field", md.get("has_operations_field")),
                 ("flatbuffer_size", md.get("flatbuffer_size")), ("operations", ops)]
    for key, got in pairs:
        if key in em:
            c.equal(got, em[key], "%s: metadata %s" % (name, key))


def check_expect(c, modelfs_ls, model, data, doc, exp):
    name = os.path.basename(model)
    c.equal((doc["format"], doc["file"]["size"]), (exp["format"], exp["file_size"]),
            name + ": format, file size")
    c.equal(hashlib.sha256(data).hexdigest(), exp["file_sha256"], name + ": file sha256")
    check_metadata(c, name, doc, exp)
    c.equal(doc["tensor_count"], exp.get("tensor_count", len(exp["tensors"])), name + ": tensor count")
    # Match by name; duplicates in file order.
    ours = {}
    for t in doc["tensors"]:
        ours.setdefault(t["name"], []).append(t)
    seg_names = {}
    for t in doc["tensors"]:
        if "segment_index" in t:
            seg_names.setdefault(t["segment_index"], []).append(t["name"])
    sums = mfstest.ls_sums(modelfs_ls, model, [t["path"] for t in doc["tensors"]])
    for e in exp["tensors"]:
        what = "%s: %r" % (name, e["name"])
        if not c.check(bool(ours.get(e["name"])), what + " present"):
            continue
        t = ours[e["name"]].pop(0)
        check_tensor(c, t, e, sums, what)
        if "shares_data_with" in e:
            others = sorted(n for n in seg_names.get(t.get("segment_index"), []) if n != e["name"])
            c.equal(others, sorted(e["shares_data_with"]), what + " shares its segment with")


def check_model(c, modelfs_ls, model, tmp):
    name = os.path.basename(model)
    with open(model + ".expect.json", encoding="utf-8") as f:
        exp = json.load(f)
    with open(model, "rb") as f:
        data = f.read()
    if exp["expect"] == "corrupt":
        r = ls(modelfs_ls, model)
        err = r.stderr.decode("utf-8", "replace")
        c.check(r.returncode == 5 and exp.get("error_contains", "") in err and "byte " in err,
                "%s: refused with exit 5 and a message naming the byte and %r (exit %d: %s)"
                % (name, exp.get("error_contains"), r.returncode, err.strip()))
        return
    r = ls(modelfs_ls, model, "model.json")
    if not c.check(r.returncode == 0, "%s: modelfs-ls exit %d: %s"
                   % (name, r.returncode, r.stderr.decode("utf-8", "replace").strip())):
        return
    doc = json.loads(r.stdout)
    if shutil.which("flatc"):
        (ptd_flatc if exp["format"] == "ptd" else tb_flatc)(c, name, data, doc, exp, tmp)
    check_expect(c, modelfs_ls, model, data, doc, exp)


def models(d, exts):
    if not os.path.isdir(d):
        return []
    return [os.path.join(d, f) for f in sorted(os.listdir(d))
            if f.endswith(exts) and os.path.exists(os.path.join(d, f + ".expect.json"))]


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    modelfs_ls = argv[1]
    shared = argv[2] if len(argv) > 2 else os.environ.get(
        "MFS_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
    c = mfstest.Checker("ptd/tb checks")
    tmp = tempfile.mkdtemp(prefix="check_ptd_tb-")
    if shutil.which("flatc") is None:
        print("SKIP: flatc is not installed: no flatc cross-check")
    found = []
    for sub, exts in (("ptd", (".ptd",)), ("tensorbuffers", (".tb",))):
        d = os.path.join(shared, "fixtures", sub)
        if os.path.isdir(d):
            found += models(d, exts)
        else:
            print("SKIP: %s is absent" % d)
    gens = argv[3:] or ([os.environ["MFS_GEN_DIR"]] if os.environ.get("MFS_GEN_DIR") else [])
    if not gens:
        gens = [os.path.join(tmp, "gen")]
        for script in ("gen_ptd.py", "gen_tb.py"):
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), gens[0]],
                           check=True)
    for gen in gens:
        # A folder of models, or scripts/gen_models.sh's OUTDIR with ptd/ and tb/.
        for d in (gen, os.path.join(gen, "ptd"), os.path.join(gen, "tb")):
            found += models(d, (".ptd", ".tb"))
    for model in found:
        work = os.path.join(tmp, "flatc")
        os.makedirs(work, exist_ok=True)
        check_model(c, modelfs_ls, model, work)
        shutil.rmtree(work)
    shutil.rmtree(tmp, ignore_errors=True)
    print("%d models" % len(found))
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
