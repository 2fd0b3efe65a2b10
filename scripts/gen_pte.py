#!/usr/bin/python3
"""Writes the project's own ExecuTorch program (.pte) test models, each with
NAME.expect.json in the fixture-expect/1 schema (../shared/fixtures/README.md),
independently of modelfs: each Program is written as JSON and made into a
flatbuffer by Debian's flatc with schemas/program.fbs (ExecuTorch's
schema/program.fbs field for field), then, for files with segments, the
"eh00" extended header is inserted at byte 8 and the segment data appended
as ExecuTorch's serializer does (exir/_serialize/_program.py). The
expectations come from the bytes this script placed.

Models:
  inline.pte      constants in Program.constant_buffer (older files, no
                  extended header): float, int64, half, a 0-dim scalar, an
                  empty tensor, dim_order (1, 0), padded storage; an input,
                  a planned activation; every other EValue type; kernel,
                  move, jump and free instructions; an inline delegate blob
  segment.pte     constants in the constant segment behind the extended
                  header; two plans sharing constants; every scalar type
                  (quantized, float8, bfloat16, bool, uint16/32/64...);
                  dim_order (0, 2, 3, 1); a 0-dim and an empty tensor; a
                  mutable buffer with an initial state (mutable_data_segments),
                  one without (planned); an external tensor (data in a .ptd,
                  listed only); names from fully_qualified_name; named_data;
                  a delegate call
  flagged.pte     tensors whose data slot or layout is wrong, served raw with
                  a problem, beside a good one
  header24.pte    an extended header of 24 bytes (before ExecuTorch 1.0: no
                  segment_data_size); two plans of the same name
  bad_*.pte       refused files (corrupt): truncated, header too short,
                  segments past the end or overflowing, program_size past
                  the end, segments without a header, an unsupported
                  identifier, values aliased to blow up the description

usage: gen_pte.py OUTDIR
"""
import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "schemas", "program.fbs")

# ScalarType number: (ExecuTorch's name, modelfs's dtype, bytes per element).
SCALAR = {
    0: ("BYTE", "uint8", 1), 1: ("CHAR", "int8", 1), 2: ("SHORT", "int16", 2), 3: ("INT", "int32", 4),
    4: ("LONG", "int64", 8), 5: ("HALF", "float16", 2), 6: ("FLOAT", "float32", 4),
    7: ("DOUBLE", "float64", 8), 11: ("BOOL", "bool", 1), 12: ("QINT8", "qint8", 1),
    13: ("QUINT8", "quint8", 1), 14: ("QINT32", "qint32", 4), 15: ("BFLOAT16", "bfloat16", 2),
    16: ("QUINT4X2", "quint4x2", 1), 17: ("QUINT2X4", "quint2x4", 1), 22: ("BITS16", "bits16", 2),
    23: ("FLOAT8E5M2", "float8_e5m2", 1), 24: ("FLOAT8E4M3FN", "float8_e4m3fn", 1),
    25: ("FLOAT8E5M2FNUZ", "float8_e5m2fnuz", 1), 26: ("FLOAT8E4M3FNUZ", "float8_e4m3fnuz", 1),
    27: ("UINT16", "uint16", 2), 28: ("UINT32", "uint32", 4), 29: ("UINT64", "uint64", 8),
}
BY_NAME = {v[0]: k for k, v in SCALAR.items()}
NUMPY = {"uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool",
         "uint16", "uint32", "uint64"}

TENSOR_ALIGNMENT = 16
SEGMENT_ALIGNMENT = 128
HEADER_LEN = 32                 # eh00, length, program_size, segment_base_offset, segment_data_size
PADDED_HEADER_LEN = 32          # aligned to the schema's force_align (16)


def aligned(n, a):
    return (n + a - 1) // a * a


def sha(b):
    return hashlib.sha256(b).hexdigest()


def rng(seed):
    return np.random.default_rng(seed)


def values_bytes(r, st, sizes):
    """Bytes of a tensor of ScalarType `st` (its memory order is whatever
    the caller makes of them)."""
    _, dtype, size = SCALAR[st]
    n = int(np.prod(sizes)) if sizes else 1
    if dtype == "bool":
        return r.integers(0, 2, size=n).astype(np.uint8).tobytes()
    if dtype in ("float16", "float32", "float64"):
        return r.standard_normal(n).astype(dtype).astype(np.dtype(dtype).newbyteorder("<")).tobytes()
    return r.bytes(n * size)


def flatc(doc):
    tmp = tempfile.mkdtemp(prefix="gen_pte-")
    try:
        src = os.path.join(tmp, "p.json")
        with open(src, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)
        subprocess.run(["flatc", "-b", "-o", tmp, SCHEMA, src], check=True, capture_output=True)
        with open(os.path.join(tmp, "p.pte"), "rb") as f:
            return f.read()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def flatc_version():
    r = subprocess.run(["flatc", "--version"], capture_output=True, text=True)
    return r.stdout.strip().split()[-1] if r.returncode == 0 else "?"


def insert_header(fb, seg_data, seg_data_size=None, length=HEADER_LEN):
    """ExecuTorch's layout: the eh00 header inserted after the identifier,
    the root offset moved by its size, segments from segment_base_offset."""
    program_size = PADDED_HEADER_LEN + len(fb)
    base = aligned(program_size, SEGMENT_ALIGNMENT)
    head = struct.pack("<4sIQQQ", b"eh00", length, program_size, base,
                       len(seg_data) if seg_data_size is None else seg_data_size)
    head += b"\0" * (PADDED_HEADER_LEN - len(head))
    (root,) = struct.unpack_from("<I", fb, 0)
    out = struct.pack("<I", root + PADDED_HEADER_LEN) + fb[4:8] + head + fb[8:]
    out += b"\0" * (base - len(out))
    return out + seg_data, base, program_size


class Program:
    """A Program as flatc's JSON, the bytes of its constants and segments,
    and the files it should give."""

    def __init__(self, name, inline=False):
        self.name = name
        self.inline = inline
        self.plans = []
        self.buffers = [b""]          # data_buffer_idx 0: the placeholder
        self.mutable = [b""]          # mutable_data_segments[0].offsets[0]: placeholder
        self.named = []               # (key, bytes)
        self.delegate_data = []       # Program.backend_delegate_data blobs
        self.expect = []              # per tensor file, in plan order
        self.external = []
        self.counts = []
        self.extra_segments = []      # raw segments appended (flagged files)
        self.buffer_pad = {}          # constant_buffer index: extra storage bytes
        self.offset_override = {}     # constant_segment.offsets index: value

    def plan(self, name):
        self.plans.append({"name": name, "values": [], "inputs": [], "outputs": [], "chains": [],
                           "operators": [], "delegates": [], "non_const_buffer_sizes": [0, 256]})
        self.counts.append(dict(constant=0, mutable_initial=0, planned=0, runtime=0, external=0,
                                flagged=0))
        return len(self.plans) - 1

    def value(self, p, vtype, val):
        vs = self.plans[p]["values"]
        vs.append({"val_type": vtype, "val": val} if vtype else {})
        return len(vs) - 1

    def buffer(self, data):
        """A new constant; its data_buffer_idx."""
        self.buffers.append(bytes(data))
        return len(self.buffers) - 1

    def tensor(self, p, st, sizes, data=None, dim_order=None, fqn=None, buffer=None,
               alloc=None, external=False, mutable=None, problem=None, **fields):
        """A Tensor value. `data`: its constant bytes as stored (a new
        buffer), or `buffer`, an index given; `mutable`: bytes of an initial
        state; `problem`: what modelfs should serve instead (the bytes)."""
        sizes = list(sizes)
        order = list(range(len(sizes))) if dim_order is None else list(dim_order)
        t = {"scalar_type": st, "sizes": sizes, "dim_order": order}
        if data is not None and buffer is None:
            buffer = self.buffer(data)
        if mutable is not None:
            self.mutable.append(bytes(mutable))
            buffer = len(self.mutable) - 1
        if buffer is not None:
            t["data_buffer_idx"] = buffer
        if alloc is not None:
            t["allocation_info"] = {"memory_id": alloc[0], "memory_offset_low": alloc[1] & 0xffffffff,
                                    "memory_offset_high": alloc[1] >> 32}
        eti = {}
        if fqn is not None:
            eti["fully_qualified_name"] = fqn
        if external:
            eti["location"] = "EXTERNAL"
        if eti:
            t["extra_tensor_info"] = eti
        t.update(fields)
        i = self.value(p, "Tensor", t)
        kind = ("external" if external else
                ("mutable_initial" if alloc is not None else "constant") if buffer
                else "planned" if alloc is not None else "runtime")
        counts = self.counts[p]
        if kind == "external":
            counts["external"] += 1
            self.external.append({"plan": p, "value_index": i, "fully_qualified_name": fqn,
                                  "dtype": SCALAR[st][1] if st in SCALAR else None,
                                  "scalar_type": SCALAR[st][0] if st in SCALAR else st,
                                  "shape": sizes, "dim_order": order, "planned": alloc is not None,
                                  "in_place": False})
            return i
        if kind in ("planned", "runtime"):
            counts[kind] += 1
            return i
        counts["flagged" if problem is not None else kind] += 1
        stored = None if problem is not None else (
            self.mutable[buffer] if kind == "mutable_initial" else self.buffers[buffer])
        e = {"name": fqn or "value_%d" % i, "plan": p, "value_index": i, "kind": kind,
             "storage": ("mutable_data_segment" if kind == "mutable_initial" else
                         "constant_buffer" if self.inline else "constant_segment"),
             "data_buffer_idx": buffer, "scalar_type": SCALAR[st][0] if st in SCALAR else st,
             "dim_order": order}
        if problem is not None:
            e.update(dtype=None, shape=sizes, nbytes=len(problem), sha256=sha(problem), problem=True)
        else:
            e.update(dtype=SCALAR[st][1], shape=sizes, nbytes=len(stored), sha256=sha(stored))
            if order != sorted(order):
                e["stored_shape"] = [sizes[d] for d in order]
        self.expect.append(e)
        return i

    def array(self, p, st, arr, dim_order=None, **kw):
        """A constant from a numpy array, stored in dim_order memory order."""
        arr = np.asarray(arr)
        order = list(range(arr.ndim)) if dim_order is None else list(dim_order)
        stored = np.ascontiguousarray(arr.transpose(order))
        data = stored.astype(stored.dtype.newbyteorder("<")).tobytes()
        return self.tensor(p, st, arr.shape, data, dim_order=order, **kw)

    def op(self, p, name, overload):
        ops = self.plans[p]["operators"]
        ops.append({"name": name, "overload": overload})
        return len(ops) - 1

    def chain(self, p, inputs, outputs, instructions):
        self.plans[p]["chains"].append({"inputs": inputs, "outputs": outputs,
                                        "instructions": instructions})

    # ---- the file -------------------------------------------------------------

    def constant_segment(self, bufs):
        """ExecuTorch's _extract_constant_segment: each buffer padded to the
        tensor alignment, offsets from the segment's start."""
        data, offs = bytearray(), []
        for i, b in enumerate(bufs):
            offs.append(len(data))
            data += b
            if i < len(bufs) - 1:
                data += b"\0" * (aligned(len(data), TENSOR_ALIGNMENT) - len(data))
        return bytes(data), offs

    def write(self, outdir, truncate=None, mutate=None, header_length=HEADER_LEN):
        doc = {"version": 0, "execution_plan": self.plans}
        if self.delegate_data:
            doc["backend_delegate_data"] = [{"data": list(b)} for b in self.delegate_data]
        blobs = []
        if self.inline:
            doc["constant_buffer"] = [
                {"storage": list(b + b"\x5a" * self.buffer_pad.get(i, 0))} if b or i in self.buffer_pad else {}
                for i, b in enumerate(self.buffers)]
        else:
            data, offs = self.constant_segment(self.buffers)
            for k, v in self.offset_override.items():
                offs[k] = v
            doc["constant_segment"] = {"segment_index": 0, "offsets": offs}
            blobs.append(data)
            if len(self.mutable) > 1:
                mdata, moffs = self.constant_segment(self.mutable)
                doc["mutable_data_segments"] = [{"segment_index": len(blobs), "offsets": moffs}]
                blobs.append(mdata)
            named = []
            for key, b in self.named:
                named.append({"key": key, "segment_index": len(blobs)})
                blobs.append(b)
            if named:
                doc["named_data"] = named
            blobs += self.extra_segments
        segs, seg_data = [], bytearray()
        for b in blobs:
            off = aligned(len(seg_data), SEGMENT_ALIGNMENT)
            seg_data += b"\0" * (off - len(seg_data)) + b
            segs.append({"offset": off, "size": len(b)})
        if segs:
            doc["segments"] = segs
        if mutate:
            mutate(doc)
        fb = flatc(doc)
        assert fb[4:8] == b"ET12"
        base = 0
        header = None
        if self.inline:
            out = fb
        else:
            out, base, psize = insert_header(fb, bytes(seg_data), length=header_length)
            header = {"magic": "eh00", "length": header_length, "program_size": psize,
                      "segment_base_offset": base,
                      "segment_data_size": len(seg_data) if header_length >= 32 else None}
        # Where the constants are, found in the file for the expectation:
        # inline storage is wherever flatc put it (its bytes are unique).
        for e in self.expect:
            if e["storage"] == "constant_buffer" and not e.get("problem") and e["nbytes"]:
                want = self.buffers[e["data_buffer_idx"]]
                assert out.count(want) >= 1
        path = os.path.join(outdir, self.name)
        if truncate is not None:
            out = out[:truncate(len(out), base)]
        with open(path, "wb") as f:
            f.write(out)
        return out, header, segs, base

    def expectation(self, outdir, out, header, segs, base):
        meta = {"program_version": 0, "file_identifier": "ET12", "extended_header": header,
                "constant_data": "constant_buffer" if self.inline else "constant_segment",
                "segment_count": len(segs)}
        doc = {"schema": "fixture-expect/1", "fixture": self.name, "format": "pte",
               "expect": "readable", "made_by": "modelfs scripts/gen_pte.py (flatc %s)" % flatc_version(),
               "file_size": len(out), "file_sha256": sha(out), "format_version": 0,
               "metadata": meta, "tensor_count": len(self.expect), "tensors": self.expect,
               "plans": [{"index": i, "name": p["name"], "value_count": len(p["values"]),
                          "tensor_values": self.counts[i]} for i, p in enumerate(self.plans)],
               "external_tensors": self.external,
               "segments": [{"offset": base + s["offset"], "size": s["size"]} for s in segs],
               "named_data": [{"key": k, "sha256": sha(b), "size": len(b)} for k, b in self.named],
               "backend_delegate_data": [{"sha256": sha(b), "size": len(b)} for b in self.delegate_data],
               "notes": "Tensors match by name in plan order. sha256 is of the bytes as stored "
                        "(in dim_order memory order). dtype null: served raw with a problem."}
        with open(os.path.join(outdir, self.name + ".expect.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")


def kernel(op, args):
    return {"instr_args_type": "KernelCall", "instr_args": {"op_index": op, "args": args}}


# ---- the models --------------------------------------------------------------

def inline_model(outdir):
    r = rng(11)
    g = Program("inline.pte", inline=True)
    p = g.plan("forward")
    w = g.array(p, 6, r.standard_normal((3, 4)).astype(np.float32))
    g.buffer_pad[len(g.buffers) - 1] = 16        # storage longer than the tensor
    b = g.array(p, 4, np.arange(-3, 3, dtype=np.int64))
    h = g.array(p, 5, r.standard_normal((2, 3)).astype(np.float16), dim_order=[1, 0])
    s = g.array(p, 6, np.float32(2.5))           # a 0-dim scalar
    z = g.tensor(p, 6, [0, 3], b"")              # an empty tensor: no bytes
    x = g.tensor(p, 6, [3, 4])                   # an input, given at run time
    y = g.tensor(p, 6, [3, 4], alloc=(1, 48))    # a planned activation
    n = g.value(p, "Int", {"int_val": -7})
    t = g.value(p, "Bool", {"bool_val": True})
    d = g.value(p, "Double", {"double_val": 0.25})
    st = g.value(p, "String", {"string_val": "mean ✓"})
    il = g.value(p, "IntList", {"items": [1, -2, 3000000000]})
    dl = g.value(p, "DoubleList", {"items": [1.5, -0.125]})
    bl = g.value(p, "BoolList", {"items": [True, False, True]})
    tl = g.value(p, "TensorList", {"items": [w, b]})
    ol = g.value(p, "OptionalTensorList", {"items": [w, -1]})
    nul = g.value(p, "Null", {})
    none = g.value(p, None, None)
    g.plans[p]["inputs"] = [x]
    g.plans[p]["outputs"] = [y]
    g.plans[p]["container_meta_type"] = {"encoded_inp_str": "T([T([*]), D()])", "encoded_out_str": "*"}
    # An inline delegate blob, and a delegate that uses it.
    g.delegate_data.append(bytes(range(7, 47)))
    g.plans[p]["delegates"] = [{"id": "VulkanBackend", "processed": {"location": "INLINE", "index": 0},
                                "compile_specs": [{"key": "storage", "value": [1]}]}]
    mm = g.op(p, "aten::mm", "out")
    add = g.op(p, "aten::add", "out")
    g.op(p, "aten::sum", "")
    g.chain(p, [x], [y], [
        kernel(mm, [x, w, y]),
        kernel(add, [y, b, n, y]),
        {"instr_args_type": "MoveCall", "instr_args": {"move_from": y, "move_to": x}},
        {"instr_args_type": "JumpFalseCall", "instr_args": {"cond_value_index": t, "destination_instruction": 0}},
        {"instr_args_type": "FreeCall", "instr_args": {"value_index": y}},
        kernel(2, [h, s, z, d, st, il, dl, bl, tl, ol, nul, none]),
    ])
    out, header, segs, base = g.write(outdir)
    g.expectation(outdir, out, header, segs, base)


def segment_model(outdir):
    r = rng(22)
    g = Program("segment.pte")
    p = g.plan("forward")
    q = g.plan("decode")
    # One constant of every scalar type, named by fully_qualified_name.
    for code in sorted(SCALAR):
        name, dtype, size = SCALAR[code]
        g.tensor(p, code, [2, 3], values_bytes(r, code, [2, 3]), fqn="dtype.%s" % dtype)
    w = g.array(p, 6, r.standard_normal((4, 8)).astype(np.float32), fqn="linear.weight")
    conv = g.array(p, 6, r.standard_normal((2, 3, 2, 4)).astype(np.float32), dim_order=[0, 2, 3, 1],
                   fqn="conv.weight")
    g.array(p, 5, np.float16(-1.5), fqn="scale")
    g.tensor(p, 3, [5, 0], b"", fqn="empty")
    g.tensor(p, 4, [1], values_bytes(r, 4, [1]))          # no name: value_N
    kv = g.tensor(p, 6, [2, 4], fqn="k_cache", alloc=(1, 0), mutable=values_bytes(r, 6, [2, 4]))
    g.tensor(p, 6, [2, 4], fqn="v_cache", alloc=(1, 32))   # mutable buffer, no initial state
    g.tensor(p, 6, [16, 8], fqn="lora.weight", external=True)
    x = g.tensor(p, 6, [1, 8])
    y = g.tensor(p, 6, [1, 4], alloc=(1, 64), shape_dynamism="DYNAMIC_BOUND")
    g.plans[p]["inputs"], g.plans[p]["outputs"] = [x], [y]
    lin = g.op(p, "aten::linear", "out")
    g.chain(p, [x], [y], [kernel(lin, [x, w, y]), kernel(lin, [x, conv, kv])])
    g.plans[p]["delegates"] = [{"id": "XnnpackBackend", "processed": {"location": "SEGMENT", "index": 2},
                                "compile_specs": [{"key": "max", "value": [4, 0]}]}]
    g.plans[p]["chains"][0]["instructions"].append(
        {"instr_args_type": "DelegateCall", "instr_args": {"delegate_index": 0, "args": [x, y]}})
    # The second plan shares linear.weight's constant (same data_buffer_idx).
    w_idx = g.plans[p]["values"][w]["val"]["data_buffer_idx"]
    shared = g.tensor(q, 6, [4, 8], buffer=w_idx, fqn="linear.weight")
    xi = g.tensor(q, 4, [3])
    g.array(q, 11, np.array([True, False, True]), fqn="mask")
    g.plans[q]["inputs"] = [xi]
    emb = g.op(q, "aten::embedding", "out")
    g.chain(q, [xi], [shared], [kernel(emb, [shared, xi, shared])])
    g.named.append(("xnnpack/weights", bytes(range(256)) * 2))
    g.named.append(("tab\tkey", b"blob"))
    out, header, segs, base = g.write(outdir)
    g.expectation(outdir, out, header, segs, base)


def flagged_model(outdir):
    r = rng(33)
    g = Program("flagged.pte")
    p = g.plan("forward")
    good = values_bytes(r, 6, [4])
    g.tensor(p, 6, [4], good, fqn="good")
    # Laid out by constant_segment(): each buffer at a multiple of 16.
    eight = bytes(range(1, 9))
    g.tensor(p, 6, [1000], eight, fqn="past.segment.end", problem=eight)
    rest = bytes(range(50, 62))
    g.tensor(p, 99, [3], rest, fqn="unknown.scalar.type", problem=rest)
    g.tensor(p, 6, [-1, 2], rest, fqn="negative.size", problem=rest)
    g.tensor(p, 6, [2147483647] * 3, rest, fqn="sizes.overflow", problem=rest)
    g.tensor(p, 6, [1, 3], rest, dim_order=[0, 0], fqn="dim_order.not.permutation", problem=rest)
    g.tensor(p, 6, [3], rest, dim_order=[0, 1], fqn="dim_order.wrong.length", problem=rest)
    g.tensor(p, 6, [1], rest[:4], fqn="storage.offset", storage_offset=1, problem=rest[:4])
    g.tensor(p, 6, [2], fqn="index.out.of.range", buffer=99, problem=b"")
    g.tensor(p, 6, [2], rest, fqn="offset.past.segment", problem=b"")
    g.offset_override[len(g.buffers) - 1] = 1 << 20
    g.tensor(p, 6, [2], fqn="mutable.index.out.of.range", alloc=(0, 0), buffer=1,
             extra_tensor_info={"mutable_data_segments_idx": 5, "fully_qualified_name": "mutable.index.out.of.range"},
             problem=b"")
    # The layout problems are served as their segment's bytes from their
    # offset to the segment's end: the last buffer of the segment is
    # "offset.past.segment"'s, so each is followed by padding and the
    # buffers after it. Recompute from the segment as placed.
    data, offs = g.constant_segment(g.buffers)
    for e in g.expect:
        if e.get("problem") and e["storage"] == "constant_segment" and e["data_buffer_idx"] < len(offs) \
                and e["data_buffer_idx"] != len(g.buffers) - 1:
            served = data[offs[e["data_buffer_idx"]]:]
            e.update(nbytes=len(served), sha256=sha(served))
    out, header, segs, base = g.write(outdir)
    g.expectation(outdir, out, header, segs, base)


def header24_model(outdir):
    """An extended header of 24 bytes, as files before ExecuTorch 1.0 have
    it (no segment_data_size); a mutable buffer's state in the second plan."""
    r = rng(44)
    g = Program("header24.pte")
    p = g.plan("forward")
    g.array(p, 6, r.standard_normal((2, 2)).astype(np.float32), fqn="w")
    q = g.plan("forward")                       # a second plan of the same name
    g.tensor(q, 4, [3], fqn="state", alloc=(0, 0), mutable=values_bytes(r, 4, [3]))
    out, header, segs, base = g.write(outdir, header_length=24)
    g.expectation(outdir, out, header, segs, base)


def refused(outdir, name, error, data):
    with open(os.path.join(outdir, name), "wb") as f:
        f.write(data)
    doc = {"schema": "fixture-expect/1", "fixture": name, "format": "pte", "expect": "corrupt",
           "made_by": "modelfs scripts/gen_pte.py (flatc %s)" % flatc_version(),
           "file_size": len(data), "file_sha256": sha(data), "error_contains": error,
           "tensor_count": 0, "tensors": []}
    with open(os.path.join(outdir, name + ".expect.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def small(name):
    g = Program(name)
    p = g.plan("forward")
    g.array(p, 6, np.arange(64, dtype=np.float32), fqn="w")
    return g


def refused_models(outdir):
    tmp = tempfile.mkdtemp(prefix="gen_pte-bad-")
    try:
        out, _, _, base = small("x.pte").write(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # A truncated download: the segment data is cut.
    refused(outdir, "bad_truncated.pte", "truncated", out[:base + 100])
    # The header's length below its 24 bytes.
    bad = bytearray(out)
    struct.pack_into("<I", bad, 12, 8)
    refused(outdir, "bad_header_length.pte", "extended header length", bytes(bad))
    # program_size past the end of the file.
    bad = bytearray(out)
    struct.pack_into("<Q", bad, 16, len(out) + 1)
    refused(outdir, "bad_program_size.pte", "program_size", bytes(bad))
    # An identifier ExecuTorch never wrote.
    bad = bytearray(out)
    bad[4:8] = b"ET11"
    refused(outdir, "bad_identifier.pte", "unsupported ExecuTorch program identifier", bytes(bad))

    def segs(values):
        def mutate(doc):
            doc["segments"] = [{"offset": values[0], "size": values[1]}]
        return mutate
    tmp = tempfile.mkdtemp(prefix="gen_pte-bad-")
    try:
        far, _, _, _ = small("x.pte").write(tmp, mutate=segs((1 << 20, 256)))
        wrap, _, _, _ = small("y.pte").write(tmp, mutate=segs(((1 << 64) - 64, 256)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    refused(outdir, "bad_segment_past_end.pte", "runs past the end of the file", far)
    refused(outdir, "bad_segment_overflow.pte", "runs past the end of the file", wrap)
    # Segments listed, no extended header to place them.
    doc = {"execution_plan": [{"name": "forward"}], "segments": [{"offset": 0, "size": 16}],
           "constant_segment": {"segment_index": 0, "offsets": [0, 0]}}
    refused(outdir, "bad_no_header.pte", "no eh00 extended header", flatc(doc) + b"\0" * 16)
    refused(outdir, "bad_aliased.pte", "describing the program needs more than", aliased())


def aliased():
    """A Program whose 60,000 values are one EValue, whose Tensor has a
    sizes vector of 8,000 entries: 300 KB that would describe 480 million
    dimensions. flatc writes no shared tables, so this one is laid out by
    python3-flatbuffers' Builder, which can."""
    import flatbuffers
    b = flatbuffers.Builder(1 << 20)
    b.StartVector(4, 8000, 4)
    for _ in range(8000):
        b.PrependInt32(1)
    sizes = b.EndVector()
    b.StartObject(10)
    b.PrependInt8Slot(0, 6, 0)
    b.PrependUOffsetTRelativeSlot(2, sizes, 0)
    tensor = b.EndObject()
    b.StartObject(2)
    b.PrependUint8Slot(0, 5, 0)
    b.PrependUOffsetTRelativeSlot(1, tensor, 0)
    ev = b.EndObject()
    b.StartVector(4, 60000, 4)
    for _ in range(60000):
        b.PrependUOffsetTRelative(ev)
    values = b.EndVector()
    name = b.CreateString("forward")
    b.StartObject(10)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependUOffsetTRelativeSlot(2, values, 0)
    plan = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(plan)
    plans = b.EndVector()
    b.StartObject(8)
    b.PrependUOffsetTRelativeSlot(1, plans, 0)
    b.Finish(b.EndObject(), file_identifier=b"ET12")
    return bytes(b.Output())


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: gen_pte.py OUTDIR")
    if shutil.which("flatc") is None:
        print("gen_pte: flatc is not installed (apt-get install flatbuffers-compiler)", file=sys.stderr)
        return 1
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    inline_model(outdir)
    segment_model(outdir)
    flagged_model(outdir)
    header24_model(outdir)
    refused_models(outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
