"""ExecuTorch programs (.pte): own checks beyond the generic ones.

The models are scripts/gen_pte.py's (flatc from JSON with
schemas/program.fbs; expectations from the bytes the script placed). For
each readable one, graph.json is compared with `flatc --json` of the
file's flatbuffer ([0, program_size), read by Debian's flatc with our
schema): every plan's name, inputs, outputs, every value (its type and
fields; a Tensor's scalar type, sizes, dim_order, data_buffer_idx,
allocation_info, extra_tensor_info), the operators and every chain's
instructions. A tensor value's `path` in graph.json is the file of the
table entry with its plan and value index, and those with bytes in the
file are exactly the table's entries. model.json's plan summaries (what
each plan's tensor values are: constant, mutable_initial, planned,
runtime, external, flagged), external_tensors, segments and header are
the generator's; named_data/KEY, segments/I and backend_delegate_data/I
hold their bytes. The refused files (bad_*.pte) are refused by modelfs-ls with exit 5 and their message (the
generic part mounts them too), and so are flatbuffers made here by hand
(python3-flatbuffers, then patched): offsets that wrap around 2^32 back
onto a table (a loop, were offsets added in 32 bits), vector counts past
the end, a vtable outside the file."""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import tempfile

import mfstest

DIRS = ("gen/pte",)

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
SCHEMA = os.path.join(SRC, "schemas", "program.fbs")

KERNEL_FIELDS = {"Int": "int_val", "Bool": "bool_val", "Double": "double_val", "String": "string_val"}
INSTR_FIELDS = {"KernelCall": ("op_index", "args"), "DelegateCall": ("delegate_index", "args"),
                "MoveCall": ("move_from", "move_to"),
                "JumpFalseCall": ("cond_value_index", "destination_instruction"),
                "FreeCall": ("value_index",)}


def read(p):
    with open(p, "rb") as f:
        return f.read()


def program_bytes(data):
    """The flatbuffer: [0, program_size) behind an eh00 header, else all."""
    if data[8:12] == b"eh00":
        return data[:struct.unpack_from("<Q", data, 16)[0]]
    return data


def flatc_tensor(v):
    """What graph.json should say of a flatc Tensor."""
    eti = v.get("extra_tensor_info")
    alloc = v.get("allocation_info")
    return {
        "scalar_type": v["scalar_type"], "sizes": v.get("sizes", []),
        "dim_order": v.get("dim_order"), "storage_offset": v["storage_offset"],
        "requires_grad": v["requires_grad"], "data_buffer_idx": v["data_buffer_idx"],
        "allocation_info": None if alloc is None else {
            "memory_id": alloc["memory_id"],
            "memory_offset": alloc["memory_offset_high"] << 32 | alloc["memory_offset_low"]},
        "layout": v["layout"], "shape_dynamism": v["shape_dynamism"],
        "extra_tensor_info": None if eti is None else {
            "mutable_data_segments_idx": eti["mutable_data_segments_idx"],
            "fully_qualified_name": eti.get("fully_qualified_name"), "location": eti["location"],
            "device_type": eti["device_type"], "device_index": eti["device_index"]},
    }


def check_value(c, what, gv, fv, i):
    c.equal(gv["index"], i, what + " index")
    vt = fv.get("val_type", "NONE")
    c.equal(gv["type"], None if vt == "NONE" else vt, what + " type")
    val = fv.get("val", {})
    if vt == "Tensor":
        want = flatc_tensor(val)
        c.equal({k: gv.get(k) for k in want}, want, what + " tensor fields")
    elif vt in KERNEL_FIELDS:
        k = KERNEL_FIELDS[vt]
        if vt == "Double":
            c.check(abs(gv[k] - val[k]) <= 1e-9 * max(1.0, abs(val[k])), what + " double_val")
        else:
            c.equal(gv[k], val[k], what + " " + k)
    elif vt.endswith("List"):
        got, want = gv["items"], val.get("items", [])
        if vt == "DoubleList":
            c.check(len(got) == len(want) and all(abs(a - b) <= 1e-9 for a, b in zip(got, want)),
                    what + " items")
        else:
            c.equal(got, want, what + " items")


def check_graph(c, name, g, fj, table):
    plans = fj.get("execution_plan", [])
    c.equal(len(g["plans"]), len(plans), name + ": graph.json plan count")
    by_value = {(t["plan"], t["value_index"]): t for t in table}
    seen = set()
    for pi, (gp, fp) in enumerate(zip(g["plans"], plans)):
        what = "%s: plan %d" % (name, pi)
        c.equal((gp["index"], gp["name"], gp["inputs"], gp["outputs"]),
                (pi, fp.get("name"), fp.get("inputs"), fp.get("outputs")), what + " name, inputs, outputs")
        fc = fp.get("container_meta_type")
        c.equal(gp["container_meta_type"], fc and {"encoded_inp_str": fc.get("encoded_inp_str"),
                                                   "encoded_out_str": fc.get("encoded_out_str")},
                what + " container_meta_type")
        fvals = fp.get("values", [])
        c.equal(len(gp["values"]), len(fvals), what + " value count")
        for i, (gv, fv) in enumerate(zip(gp["values"], fvals)):
            check_value(c, "%s value %d" % (what, i), gv, fv, i)
            t = by_value.get((pi, i))
            if t is not None:
                seen.add((pi, i))
                c.equal(gv.get("path"), t["path"], "%s value %d path" % (what, i))
                c.equal(gv["kind"], t["kind"], "%s value %d kind" % (what, i))
            elif gv["type"] == "Tensor":
                c.check("path" not in gv, "%s value %d has a path but no table entry" % (what, i))
        fops = fp.get("operators", [])
        c.equal([(o["index"], o["name"], o["overload"]) for o in gp["operators"]],
                [(k, o.get("name"), o.get("overload")) for k, o in enumerate(fops)], what + " operators")
        fchains = fp.get("chains", [])
        c.equal(len(gp["chains"]), len(fchains), what + " chain count")
        for ci, (gc, fc) in enumerate(zip(gp["chains"], fchains)):
            cw = "%s chain %d" % (what, ci)
            c.equal((gc["inputs"], gc["outputs"]), (fc.get("inputs"), fc.get("outputs")), cw + " inputs, outputs")
            fins = fc.get("instructions", [])
            c.equal(len(gc["instructions"]), len(fins), cw + " instruction count")
            for ii, (gi, fi) in enumerate(zip(gc["instructions"], fins)):
                it = fi.get("instr_args_type", "NONE")
                c.equal(gi["type"], None if it == "NONE" else it, "%s instruction %d type" % (cw, ii))
                args = fi.get("instr_args", {})
                for k in INSTR_FIELDS.get(it, ()):
                    c.equal(gi.get(k), args.get(k), "%s instruction %d %s" % (cw, ii, k))
                if it == "KernelCall" and 0 <= args["op_index"] < len(fops):
                    o = fops[args["op_index"]]
                    want = o["name"] + ("." + o["overload"] if o.get("overload") else "")
                    c.equal(gi.get("op"), want, "%s instruction %d op" % (cw, ii))
        fdel = fp.get("delegates", [])
        c.equal([(d["id"], d["processed"] and {k: d["processed"][k] for k in ("location", "index")})
                 for d in gp["delegates"]],
                [(d.get("id"), d.get("processed")) for d in fdel], what + " delegates")
        for d in gp["delegates"]:
            pr = d["processed"] or {}
            if pr.get("location") == "SEGMENT" and pr["index"] < len(fj.get("segments", [])):
                c.equal(pr.get("path"), "segments/%d" % pr["index"], what + " delegate blob path")
            if pr.get("location") == "INLINE" and pr["index"] < len(fj.get("backend_delegate_data", [])):
                c.equal(pr.get("path"), "backend_delegate_data/%d" % pr["index"], what + " delegate blob path")
        c.equal(gp["non_const_buffer_sizes"], fp.get("non_const_buffer_sizes"), what + " non_const_buffer_sizes")
    c.equal(seen, set(by_value), name + ": every table entry is a tensor value of graph.json")


def check_model(c, t, model, expect, mount):
    if not model.endswith(".pte") or expect is None or expect.get("expect") != "readable":
        return
    if not t.flatc:
        return
    name = os.path.basename(model)
    data = read(model)
    try:
        mnt = mount()
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (name, e))
        return
    doc = json.loads(mfstest.read_bytes(os.path.join(mnt, "model.json")))
    g = json.loads(mfstest.read_bytes(os.path.join(mnt, "graph.json")))
    fj = mfstest.flatc_decode(SCHEMA, program_bytes(data), t.pte_tmp)
    check_graph(c, name, g, fj, doc["tensors"])

    md = doc["metadata"]
    for k, v in expect["metadata"].items():
        c.equal(md.get(k), v, "%s: metadata %s" % (name, k))
    c.equal([{k: sg[k] for k in ("offset", "size")} for sg in doc["segments"]], expect["segments"],
            name + ": segments")
    c.equal([sg.get("path") for sg in doc["segments"]], ["segments/%d" % i for i in range(len(expect["segments"]))],
            name + ": segment files")
    c.equal(doc["external_tensors"], expect["external_tensors"], name + ": external_tensors")
    c.equal([{k: p[k] for k in ("index", "name", "value_count", "tensor_values")} for p in doc["plans"]],
            expect["plans"], name + ": plan summaries")
    # Each plan's files are in its folder.
    for p, tt in ((doc["plans"][e["plan"]], e) for e in doc["tensors"]):
        c.check(tt["path"].startswith(os.path.join(p["path"], "tensors/")),
                "%s: %s is in plan %s's folder" % (name, tt["path"], p["name"]))
    # Table keys the generator knows.
    want = list(expect["tensors"])
    for e, w in zip(doc["tensors"], want):
        c.equal((e["name"], e["plan"], e["value_index"], e["kind"], e["data_buffer_idx"], e["scalar_type"],
                 e["dim_order"], e.get("stored_shape"), "problem" in e),
                (w["name"], w["plan"], w["value_index"], w["kind"], w["data_buffer_idx"], w["scalar_type"],
                 w["dim_order"], w.get("stored_shape"), bool(w.get("problem"))),
                "%s: tensor %r keys" % (name, w["name"]))
    # Every segment is a file, its bytes the file's at the generator's range.
    for i, sg in enumerate(expect["segments"]):
        p = os.path.join(mnt, "segments", str(i))
        c.equal(mfstest.read_bytes(p) if os.path.isfile(p) else None, data[sg["offset"]:sg["offset"] + sg["size"]],
                "%s: segments/%d bytes" % (name, i))
    # Inline delegate blobs, in place.
    bdd = md.get("backend_delegate_data", [])
    c.equal(len(bdd), len(expect.get("backend_delegate_data", [])), name + ": backend_delegate_data count")
    for i, (got, w) in enumerate(zip(bdd, expect.get("backend_delegate_data", []))):
        raw = mfstest.read_bytes(os.path.join(mnt, got["path"]))
        c.equal((hashlib.sha256(raw).hexdigest(), len(raw), raw == data[got["offset"]:got["offset"] + got["size"]]),
                (w["sha256"], w["size"], True), "%s: backend_delegate_data/%d bytes" % (name, i))
    # named_data blobs, in place.
    nd = {n["key"]: n for n in md.get("named_data", [])}
    c.equal(sorted(nd), sorted(n["key"] for n in expect["named_data"]), name + ": named_data keys")
    for n in expect["named_data"]:
        got = nd.get(n["key"])
        if c.check(got is not None and "path" in got, "%s: named_data %r has a file" % (name, n["key"])):
            raw = mfstest.read_bytes(os.path.join(mnt, got["path"]))
            c.equal((hashlib.sha256(raw).hexdigest(), len(raw)), (n["sha256"], n["size"]),
                    "%s: named_data %r bytes" % (name, n["key"]))
    t.pte_count += 1


def setup(c, t):
    t.pte_tmp = tempfile.mkdtemp(prefix="modelfs-pte-")
    t.pte_count = 0
    t.flatc = shutil.which("flatc") is not None
    if not t.flatc:
        c.skip("flatc is not installed: no cross-check of graph.json")


def check_refusals(c, t):
    """The refused files, by modelfs-ls (the generic part mounts them)."""
    gen = os.path.join(t.gen, "pte")
    for f in sorted(os.listdir(gen)):
        if not (f.startswith("bad_") and f.endswith(".pte")):
            continue
        with open(os.path.join(gen, f + ".expect.json")) as fh:
            want = json.load(fh)["error_contains"]
        model = os.path.join(gen, f)
        r = subprocess.run([t.modelfs_ls, model], capture_output=True, text=True, env=t.env, timeout=60)
        c.equal(r.returncode, 5, f + ": modelfs-ls exit")
        c.check(model in r.stderr and want in r.stderr and len(r.stderr.strip().splitlines()) == 1,
                "%s: message %r names the file and says %r" % (f, r.stderr, want))
    if t.flatc:
        c.check(t.pte_count >= 3, "readable models checked against flatc: %d" % t.pte_count)
    shutil.rmtree(t.pte_tmp, ignore_errors=True)


# ---- hostile files written here ------------------------------------------------

def field_pos(buf, table, fid):
    """Where field `fid` of the table at `table` is (0: absent)."""
    vt = table - struct.unpack_from("<i", buf, table)[0]
    vtsize = struct.unpack_from("<H", buf, vt)[0]
    if 4 + 2 * fid + 2 > vtsize:
        return 0
    o = struct.unpack_from("<H", buf, vt + 4 + 2 * fid)[0]
    return table + o if o else 0


def tiny_program():
    """One plan with one EValue (a Tensor with sizes [2]); the bytes and
    the positions of the EValue, the Tensor, the values and sizes vectors."""
    import flatbuffers
    b = flatbuffers.Builder(256)
    b.StartVector(4, 1, 4)
    b.PrependInt32(2)
    sizes = b.EndVector()
    b.StartObject(10)
    b.PrependInt8Slot(0, 6, 0)
    b.PrependUOffsetTRelativeSlot(2, sizes, 0)
    tensor = b.EndObject()
    b.StartObject(2)
    b.PrependUint8Slot(0, 5, 0)
    b.PrependUOffsetTRelativeSlot(1, tensor, 0)
    ev = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(ev)
    values = b.EndVector()
    b.StartObject(10)
    b.PrependUOffsetTRelativeSlot(2, values, 0)
    plan = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(plan)
    plans = b.EndVector()
    b.StartObject(8)
    b.PrependUOffsetTRelativeSlot(1, plans, 0)
    b.Finish(b.EndObject(), file_identifier=b"ET12")
    out = bytearray(b.Output())
    pos = lambda off: len(out) - off  # noqa: E731  (the Builder counts from the end)
    return out, {"evalue": pos(ev), "tensor": pos(tensor), "values": pos(values), "sizes": pos(sizes)}


def hostile_files():
    """(name, bytes, what the refusal says): offsets that wrap around 2^32
    back onto a table (a loop, if offsets were added in 32 bits), counts
    past the end, a vtable pointing outside."""
    out = []
    buf, at = tiny_program()
    ok = bytes(buf)
    out.append(("ok", ok, None))
    # EValue.val pointing back at the EValue itself, modulo 2^32.
    b = bytearray(ok)
    f = field_pos(b, at["evalue"], 1)
    struct.pack_into("<I", b, f, (at["evalue"] - f) % (1 << 32))
    out.append(("loop_evalue", bytes(b), "points past the end"))
    # The Tensor's sizes pointing back at the Program's root.
    b = bytearray(ok)
    f = field_pos(b, at["tensor"], 2)
    struct.pack_into("<I", b, f, (0 - f) % (1 << 32))
    out.append(("loop_sizes", bytes(b), "points past the end"))
    # The values vector claims 2^31 - 1 entries.
    b = bytearray(ok)
    struct.pack_into("<I", b, at["values"], 0x7fffffff)
    out.append(("values_count", bytes(b), "runs past the end"))
    # The sizes vector claims 2^30 int32s (4 GiB).
    b = bytearray(ok)
    struct.pack_into("<I", b, at["sizes"], 1 << 30)
    out.append(("sizes_count", bytes(b), "runs past the end"))
    # The Tensor's vtable offset points before the file.
    b = bytearray(ok)
    struct.pack_into("<i", b, at["tensor"], at["tensor"] + 64)
    out.append(("vtable_outside", bytes(b), "vtable out of range"))
    return out


def check_hostile(c, t):
    """Hand-made flatbuffers: refused with exit 5 and one line naming the
    file (or, the unharmed one, listed), in bounded time."""
    try:
        files = hostile_files()
    except ImportError:
        c.skip("python3-flatbuffers is not installed: no hand-made hostile programs")
        return
    tmp = tempfile.mkdtemp(prefix="modelfs-pte-hostile-")
    try:
        for name, data, want in files:
            model = os.path.join(tmp, name + ".pte")
            with open(model, "wb") as f:
                f.write(data)
            r = subprocess.run([t.modelfs_ls, model], capture_output=True, text=True, env=t.env, timeout=60)
            if name == "ok":
                c.equal(r.returncode, 0, "hostile: the unharmed program lists (%s)" % r.stderr.strip())
                continue
            c.equal(r.returncode, 5, "hostile %s: modelfs-ls exit" % name)
            c.check(model in r.stderr and want in r.stderr and len(r.stderr.strip().splitlines()) == 1,
                    "hostile %s: one line naming the file and saying %r: %r" % (name, want, r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_short_tables(c, t):
    """ExecuTorch's serializer writes DataSegment tables whose vtable
    declares an inline size too small for their u64 fields (its arduino
    and Qualcomm example programs do); its runtime, with flatbuffers'
    Verifier, reads them. segment.pte with every DataSegment's declared
    size cut to 4 bytes lists the same tensors at the same offsets."""
    model = os.path.join(t.gen, "pte", "segment.pte")
    data = bytearray(read(model))
    root = struct.unpack_from("<I", data, 0)[0]
    fp = field_pos(data, root, 4)            # Program.segments
    vec = fp + struct.unpack_from("<I", data, fp)[0]
    for i in range(struct.unpack_from("<I", data, vec)[0]):
        el = vec + 4 + 4 * i
        table = el + struct.unpack_from("<I", data, el)[0]
        vt = table - struct.unpack_from("<i", data, table)[0]
        struct.pack_into("<H", data, vt + 2, 4)
    tmp = tempfile.mkdtemp(prefix="modelfs-pte-short-")
    try:
        short = os.path.join(tmp, "short.pte")
        with open(short, "wb") as f:
            f.write(data)
        docs = []
        for m in (model, short):
            r = subprocess.run([t.modelfs_ls, m, "model.json"], capture_output=True, env=t.env, timeout=60)
            c.equal(r.returncode, 0, "short tables: modelfs-ls %s: %s" % (os.path.basename(m), r.stderr.decode().strip()))
            docs.append(json.loads(r.stdout) if r.returncode == 0 else {"tensors": None})
        c.equal([(e["name"], e["offset"], e["nbytes"]) for e in docs[1]["tensors"] or []],
                [(e["name"], e["offset"], e["nbytes"]) for e in docs[0]["tensors"] or []],
                "short tables: the same tensors at the same offsets")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


EXTRAS = (check_refusals, check_hostile, check_short_tables)
