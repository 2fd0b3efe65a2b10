#!/usr/bin/python3
"""Writes modelfs's own ExecuTorch .ptd test models, each with NAME.expect.json
(schema fixture-expect/1, like ../shared/fixtures).

    /usr/bin/python3 scripts/gen_ptd.py OUTDIR

The files follow the layout of ExecuTorch's FlatTensorSerializer
(extension/flat_tensor/serialize/serialize.py): a FlatTensor flatbuffer with
identifier FT01, the 40-byte FH01 header inserted at byte 8 and padded to 48
(the root offset moves by 48), padding to segment_alignment, then the
segments, each at lcm(segment_alignment, alignment) from segment_base_offset.
The flatbuffers are built with python3-flatbuffers' Builder; the layout facts
are those of schemas/flat_tensor.fbs. Output is deterministic.

  gen_many.ptd       5000 keys: tensors of several dtypes, blobs, shared segments
  gen_names.ptd      empty, unicode, long (> 255 bytes), '/', '.', '%' and
                     control-character keys, a duplicate key, every dtype name,
                     dim orders, a scalar, zero-size data, three keys on one segment
  gen_legacy06.ptd   the ExecuTorch 0.6 schema (tensors + tensor_alignment)
  gen_flagged.ptd    entries modelfs serves as raw bytes with a `problem`
  gen_bad_segment.ptd, gen_truncated.ptd   refused (expect "corrupt")
"""

import hashlib
import json
import math
import os
import struct
import sys

import flatbuffers
import numpy as np

SCALAR_TYPES = {
    "uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6,
    "float64": 7, "complex32": 8, "complex64": 9, "complex128": 10, "bool": 11, "qint8": 12,
    "quint8": 13, "qint32": 14, "bfloat16": 15, "quint4x2": 16, "quint2x4": 17,
    "bits1x8": 18, "bits2x4": 19, "bits4x2": 20, "bits8": 21, "bits16": 22,
    "float8_e5m2": 23, "float8_e4m3fn": 24, "float8_e5m2fnuz": 25, "float8_e4m3fnuz": 26,
    "uint16": 27, "uint32": 28, "uint64": 29,
}
ITEMSIZE = {"complex32": 4, "complex64": 8, "complex128": 16, "float64": 8, "int64": 8,
            "uint64": 8, "float32": 4, "int32": 4, "uint32": 4, "qint32": 4, "float16": 2,
            "bfloat16": 2, "int16": 2, "uint16": 2, "bits16": 2}
ET_NAMES = [  # schemas/scalar_type.fbs, by number
    "BYTE", "CHAR", "SHORT", "INT", "LONG", "HALF", "FLOAT", "DOUBLE", "COMPLEXHALF",
    "COMPLEXFLOAT", "COMPLEXDOUBLE", "BOOL", "QINT8", "QUINT8", "QINT32", "BFLOAT16",
    "QUINT4X2", "QUINT2X4", "BITS1x8", "BITS2x4", "BITS4x2", "BITS8", "BITS16", "FLOAT8E5M2",
    "FLOAT8E4M3FN", "FLOAT8E5M2FNUZ", "FLOAT8E4M3FNUZ", "UINT16", "UINT32", "UINT64"]
HEADER_LEN = 40
PADDED_HEADER_LEN = 48


def itemsize(dtype):
    return ITEMSIZE.get(dtype, 1)


def aligned(n, a):
    return (n + a - 1) // a * a


class Entry:
    """One named_data key: bytes plus an optional layout (dtype, sizes, dim_order).
    `layout` may carry a raw scalar type number instead of a dtype name (flagged files)."""

    def __init__(self, key, data, layout=None, alignment=1, seg=None, expect=None):
        self.key, self.data, self.layout, self.alignment = key, data, layout, alignment
        self.seg = seg          # forced segment index (flagged files), else de-duplicated
        self.expect = expect    # overrides for the expectation (flagged entries)


def tensor(key, arr, dtype=None, dim_order=None, alignment=1):
    """A tensor entry from a numpy array stored in dim_order memory order."""
    arr = np.asarray(arr)
    sizes = list(arr.shape)
    order = list(range(arr.ndim)) if dim_order is None else list(dim_order)
    stored = np.ascontiguousarray(arr.transpose(order))
    return Entry(key, stored.tobytes(), (dtype or arr.dtype.name, sizes, order), alignment)


def raw(key, data, alignment=1):
    return Entry(key, bytes(data), None, alignment)


# ---- flatbuffer --------------------------------------------------------------

def vec_scalars(b, fmt_prepend, size, values):
    b.StartVector(size, len(values), size)
    for v in reversed(values):
        fmt_prepend(v)
    return b.EndVector()


def vec_offsets(b, offs):
    b.StartVector(4, len(offs), 4)
    for o in reversed(offs):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def layout_fields(b, layout):
    """(scalar_type, sizes offset, dim_order offset) for a layout tuple."""
    dtype, sizes, order = layout
    st = SCALAR_TYPES[dtype] if isinstance(dtype, str) else dtype
    sv = vec_scalars(b, b.PrependInt32, 4, sizes)
    dv = vec_scalars(b, b.PrependUint8, 1, order)
    return st, sv, dv


def add_layout_slots(b, first, st, sv, dv):
    b.PrependInt8Slot(first, st, 0)
    b.PrependUOffsetTRelativeSlot(first + 1, sv, 0)
    b.PrependUOffsetTRelativeSlot(first + 2, dv, 0)


def segment_tables(b, segs):
    offs = []
    for off, size in segs:
        b.StartObject(2)
        b.PrependUint64Slot(0, off, 0)
        b.PrependUint64Slot(1, size, 0)
        offs.append(b.EndObject())
    return vec_offsets(b, offs)


def named_tables(b, named):
    """named: (key, segment_index, layout or None); key None = absent."""
    offs = []
    for key, si, layout in named:
        k = b.CreateString(key) if key is not None else None
        lay = None
        if layout is not None:
            st, sv, dv = layout_fields(b, layout)
            b.StartObject(3)
            add_layout_slots(b, 0, st, sv, dv)
            lay = b.EndObject()
        b.StartObject(3)
        if k is not None:
            b.PrependUOffsetTRelativeSlot(0, k, 0)
        b.PrependUint32Slot(1, si, 0)
        if lay is not None:
            b.PrependUOffsetTRelativeSlot(2, lay, 0)
        offs.append(b.EndObject())
    return vec_offsets(b, offs)


def flat_tensor(segs, named, version=0):
    b = flatbuffers.Builder(1024)
    nv = named_tables(b, named)
    sv = segment_tables(b, segs)
    b.StartObject(3)
    b.PrependUint32Slot(0, version, 0)
    b.PrependUOffsetTRelativeSlot(1, sv, 0)
    b.PrependUOffsetTRelativeSlot(2, nv, 0)
    b.Finish(b.EndObject(), file_identifier=b"FT01")
    return bytes(b.Output())


def flat_tensor_v06(segs, tensors, named, tensor_alignment, version=0):
    """tensors: (name, layout, segment_index, offset)."""
    b = flatbuffers.Builder(1024)
    toffs = []
    for name, layout, si, off in tensors:
        k = b.CreateString(name)
        st, sv, dv = layout_fields(b, layout)
        b.StartObject(6)
        b.PrependUOffsetTRelativeSlot(0, k, 0)
        add_layout_slots(b, 1, st, sv, dv)
        b.PrependUint32Slot(4, si, 0)
        b.PrependUint64Slot(5, off, 0)
        toffs.append(b.EndObject())
    tv = vec_offsets(b, toffs)
    nv = named_tables(b, named)
    sv = segment_tables(b, segs)
    b.StartObject(5)
    b.PrependUint32Slot(0, version, 0)
    b.PrependUint32Slot(1, tensor_alignment, 0)
    b.PrependUOffsetTRelativeSlot(2, tv, 0)
    b.PrependUOffsetTRelativeSlot(3, sv, 0)
    b.PrependUOffsetTRelativeSlot(4, nv, 0)
    b.Finish(b.EndObject(), file_identifier=b"FT01")
    return bytes(b.Output())


# ---- file --------------------------------------------------------------------

def place_segments(blobs, segment_alignment):
    """blobs: (bytes, alignment). Returns [(offset, size)] and the segment data."""
    segs, data = [], bytearray()
    for blob, align in blobs:
        a = math.lcm(segment_alignment, align)
        prev_end = segs[-1][0] + segs[-1][1] if segs else 0
        off = aligned(prev_end, a)
        data += b"\0" * (off - len(data)) + blob
        segs.append((off, len(blob)))
    return segs, bytes(data)


def assemble(fb, seg_data, segment_alignment, seg_data_size=None, trailer=b""):
    """Inserts the FH01 header into flatbuffer `fb` and appends the segments."""
    sbo = aligned(len(fb) + PADDED_HEADER_LEN, segment_alignment)
    header = struct.pack("<4sIQQQQ", b"FH01", HEADER_LEN, PADDED_HEADER_LEN, len(fb), sbo,
                         len(seg_data) if seg_data_size is None else seg_data_size)
    header += b"\0" * (PADDED_HEADER_LEN - len(header))
    (root,) = struct.unpack_from("<I", fb, 0)
    out = struct.pack("<I", root + PADDED_HEADER_LEN) + fb[4:8] + header + fb[8:]
    out += b"\0" * (sbo - len(out))
    return out + seg_data + trailer, sbo


def build(entries, segment_alignment=128):
    """NamedDataStore-like: identical bytes share one segment (the first key's
    alignment applies) unless an entry forces its segment index."""
    blobs, index_of, named = [], {}, []
    for e in entries:
        if e.seg is not None:
            named.append((e.key, e.seg, e.layout))
            continue
        si = index_of.get(e.data)
        if si is None:
            si = index_of[e.data] = len(blobs)
            blobs.append((e.data, e.alignment))
        named.append((e.key, si, e.layout))
    segs, seg_data = place_segments(blobs, segment_alignment)
    data, sbo = assemble(flat_tensor(segs, named), seg_data, segment_alignment)
    return data, named, segs


# ---- expectations ------------------------------------------------------------

def expect_entry(name, data, layout, extra=None):
    e = {"name": name, "dtype": None, "shape": None, "nbytes": len(data),
         "sha256": hashlib.sha256(data).hexdigest()}
    if layout is not None:
        dtype, sizes, order = layout
        e.update(dtype=dtype, shape=list(sizes), scalar_type=ET_NAMES[SCALAR_TYPES[dtype]],
                 dim_order=list(order))
    e.update(extra or {})
    return e


def write(outdir, fname, data, tensors, metadata, expect="readable", error=None):
    path = os.path.join(outdir, fname)
    with open(path, "wb") as f:
        f.write(data)
    doc = {"schema": "fixture-expect/1", "fixture": fname, "format": "ptd", "expect": expect,
           "made_by": "modelfs scripts/gen_ptd.py (python3-flatbuffers Builder)",
           "file_size": len(data), "file_sha256": hashlib.sha256(data).hexdigest(),
           "metadata": metadata, "tensor_count": len(tensors), "tensors": tensors}
    if error:
        doc["error_contains"] = error
    with open(path + ".expect.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def simple(outdir, fname, entries, segment_alignment=128):
    data, named, segs = build(entries, segment_alignment)
    exp = [expect_entry(e.key, e.data, e.layout, {"segment_index": n[1]})
           for e, n in zip(entries, named)]
    write(outdir, fname, data, exp, {"flat_tensor_version": 0, "segment_count": len(segs),
                                      "segment_alignment": segment_alignment})


# ---- the models --------------------------------------------------------------

def gen_many(outdir):
    rng = np.random.RandomState(1234)
    kinds = ["float32", "int64", "float16", "int8", "uint8", "int32", "float64", "bool"]
    entries = []
    for i in range(5000):
        if i % 97 == 5:
            entries.append(raw(f"blob/{i}", rng.bytes(1 + i % 31)))
        elif i % 50 == 7:
            prev = entries[-1]      # same bytes: shares the previous key's segment
            entries.append(Entry(f"tied/{i}", prev.data, prev.layout))
        else:
            dt = kinds[i % len(kinds)]
            shape = (1 + i % 5, 1 + (i // 5) % 4)
            if dt == "bool":
                arr = rng.randint(0, 2, size=shape).astype(bool)
            else:
                arr = (rng.standard_normal(shape) * 50).astype(dt)
            entries.append(tensor(f"layers.{i // 10}.param_{i % 10}", arr))
    simple(outdir, "gen_many.ptd", entries, segment_alignment=16)


def gen_names(outdir):
    rng = np.random.RandomState(99)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    shared = f32(4).tobytes()
    entries = [
        tensor("", f32(2)),
        tensor("ünïcode/名前.weight", f32(3)),
        tensor("x" * 300, f32(1)),
        tensor("é" * 200, f32(2)),
        tensor("/leading/slash", f32(1)),
        tensor(".hidden", f32(1)),
        tensor("100%25 percent", f32(1)),
        tensor("tab\tnew\nline", f32(1)),
        tensor("dup", f32(2)),
        tensor("dup", f32(3)),
        tensor("nchw.to.nhwc", f32(2, 3, 4, 5), dim_order=[0, 2, 3, 1], alignment=64),
        tensor("transposed", f32(3, 2), dim_order=[1, 0]),
        tensor("scalar", np.float32(3.5)),
        tensor("zero.size", np.zeros((0, 5), np.float32)),
        Entry("shared.f32", shared, ("float32", [4], [0]), 16),
        Entry("shared.i32", shared, ("int32", [4], [0]), 512),
        raw("shared.raw", shared),
        raw("blob.opaque", bytes(range(256)) * 3, alignment=4096),
        raw("blob.empty", b""),
    ]
    # Every dtype name modelfs knows, from raw bytes of the right size.
    for name, code in SCALAR_TYPES.items():
        n = 6 * itemsize(name)
        data = rng.bytes(n) if name != "bool" else bytes(rng.randint(0, 2, 6).tolist())
        entries.append(Entry(f"dtype.{name}", data, (name, [2, 3], [0, 1])))
    simple(outdir, "gen_names.ptd", entries, segment_alignment=32)


def gen_legacy06(outdir):
    """ExecuTorch 0.6: all tensors packed in segment 0 at tensor_alignment
    offsets (shared bytes stored once), named_data blobs in their own segments."""
    rng = np.random.RandomState(6)
    tensor_alignment = 16
    arrs = [("w", rng.standard_normal((3, 4)).astype(np.float32), None),
            ("b", rng.standard_normal(4).astype(np.float16), None),
            ("idx", np.arange(5, dtype=np.int64), None),
            ("chlast", rng.standard_normal((1, 2, 3, 2)).astype(np.float32), [0, 2, 3, 1])]
    packed, tensors, exp = bytearray(), [], []
    for name, arr, order in arrs:
        e = tensor(name, arr, dim_order=order)
        packed += b"\0" * (aligned(len(packed), tensor_alignment) - len(packed))
        tensors.append((name, e.layout, 0, len(packed)))
        packed += e.data
        exp.append(expect_entry(name, e.data, e.layout, {"segment_index": 0}))
    tensors.append(("w.alias", tensors[0][1], 0, tensors[0][3]))   # a tied weight
    exp.append(dict(exp[0], name="w.alias"))
    blobs = [(bytes(packed), 1), (b"delegate blob", 1), (bytes(range(40)), 1)]
    segs, seg_data = place_segments(blobs, 64)
    named = [("backend/blob", 1, None), ("other.blob", 2, None)]
    for key, si, _ in named:
        exp.append(expect_entry(key, blobs[si][0], None, {"segment_index": si}))
    fb = flat_tensor_v06(segs, tensors, named, tensor_alignment)
    data, _ = assemble(fb, seg_data, 64)
    write(outdir, "gen_legacy06.ptd", data, exp,
          {"flat_tensor_version": 0, "segment_count": 3, "tensor_alignment": tensor_alignment,
           "schema": "executorch-0.6"})


def gen_flagged(outdir):
    """Entries modelfs must flag (served as raw bytes with a `problem` key),
    next to a good one. The last segment lies past segment_data_size (its
    bytes are in the file, after the declared segment data)."""
    good = np.arange(4, dtype=np.float32).tobytes()
    eight = bytes(range(8))
    blobs = [(good, 1), (eight, 1), (b"", 1)]
    segs, seg_data = place_segments(blobs, 16)
    extra = bytes(range(100, 112))
    segs.append((aligned(len(seg_data), 16), len(extra)))
    trailer = b"\0" * (segs[-1][0] - len(seg_data)) + extra
    named = [
        ("good", 0, ("float32", [4], [0])),
        ("index.out.of.range", 7, ("float32", [2], [0])),
        ("size.mismatch", 1, ("float32", [3], [0])),
        ("negative.size", 1, ("float32", [-1, 2], [0, 1])),
        ("dim_order.not.permutation", 1, ("float32", [1, 2], [0, 0])),
        ("dim_order.wrong.length", 1, ("float32", [2], [0, 1])),
        ("unknown.scalar.type", 1, (99, [8], [0])),
        ("empty.segment.with.layout", 2, ("int32", [3], [0])),
        ("past.segment.data", 3, ("uint8", [12], [0])),
        (None, 0, ("float32", [4], [0])),           # no key at all: name ""
    ]
    data, _ = assemble(flat_tensor(segs, named), seg_data, 16, trailer=trailer)
    served = {0: good, 1: eight, 2: b"", 3: extra}
    exp = []
    for key, si, layout in named:
        blob = served.get(si, b"")
        flagged = key not in ("good", None)
        e = expect_entry(key or "", blob, None if flagged else layout,
                         {"segment_index": si, "problem": flagged})
        exp.append(e)
    write(outdir, "gen_flagged.ptd", data, exp,
          {"flat_tensor_version": 0, "segment_count": len(segs)})


def gen_refused(outdir):
    # A non-empty segment past the end of the file.
    segs, seg_data = place_segments([(b"abcd", 1)], 16)
    fb = flat_tensor([(0, 4), (4096, 16)], [("ok", 0, None), ("far", 1, None)])
    data, _ = assemble(fb, seg_data, 16)
    write(outdir, "gen_bad_segment.ptd", data, [], {}, expect="corrupt",
          error="runs past the end of the file")
    # Segment data declared longer than the file (a truncated download).
    blob = np.arange(64, dtype=np.float32).tobytes()
    data, _, _ = build([tensor("w", np.arange(64, dtype=np.float32))], 16)
    write(outdir, "gen_truncated.ptd", data[:-len(blob) // 2], [], {}, expect="corrupt",
          error="truncated")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_ptd.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    gen_many(outdir)
    gen_names(outdir)
    gen_legacy06(outdir)
    gen_flagged(outdir)
    gen_refused(outdir)


if __name__ == "__main__":
    main()
