#!/usr/bin/python3
"""Writes modelfs's own safetensors test models, each with NAME.expect.json
(schema fixture-expect/1, like ../shared/fixtures), and a sharded folder.

    /usr/bin/python3 scripts/gen_safetensors.py OUTDIR [SHARDED_OUTDIR]

Layout (huggingface/safetensors README): u64 LE header length N, N bytes of
JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
{str: str}} padded with spaces to a multiple of 8, then the data; offsets are
relative to the byte after the header. Plain Python (json, struct) and numpy.
Output is deterministic.

  gen_dtypes.safetensors   every dtype of the spec (F4 and F6 packed), names
                           with / . : and unicode, a scalar, zero-size tensors
  gen_names.safetensors    empty, '.'-led, '%', control-character and long names
  gen_empty.safetensors    no tensors, no __metadata__
  gen_many.safetensors     3000 small tensors, in reverse header order
  bad_*.safetensors        refused (expect "corrupt", with error_contains)
  SHARDED_OUTDIR/sharded/  model.safetensors.index.json + 2 shards
"""

import hashlib
import json
import os
import struct
import sys

import numpy as np

# The spec's dtypes: (name, bits, numpy dtype name as modelfs reports it).
DTYPES = [
    ("BOOL", 8, "bool"), ("U8", 8, "uint8"), ("I8", 8, "int8"), ("U16", 16, "uint16"),
    ("I16", 16, "int16"), ("U32", 32, "uint32"), ("I32", 32, "int32"), ("U64", 64, "uint64"),
    ("I64", 64, "int64"), ("F16", 16, "float16"), ("BF16", 16, "bfloat16"), ("F32", 32, "float32"),
    ("F64", 64, "float64"), ("C64", 64, "complex64"), ("F8_E4M3", 8, "float8_e4m3fn"),
    ("F8_E5M2", 8, "float8_e5m2"), ("F8_E8M0", 8, "float8_e8m0fnu"),
    ("F8_E4M3FNUZ", 8, "float8_e4m3fnuz"), ("F8_E5M2FNUZ", 8, "float8_e5m2fnuz"),
    ("F4", 4, "float4_e2m1fn"), ("F6_E2M3", 6, "float6_e2m3fn"), ("F6_E3M2", 6, "float6_e3m2fn"),
]
BITS = {d: b for d, b, _ in DTYPES}
NP_NAME = {d: n for d, _, n in DTYPES}


class T:
    def __init__(self, name, dtype, shape, data=None):
        self.name, self.dtype, self.shape = name, dtype, list(shape)
        n = int(np.prod(self.shape, dtype=np.int64)) * BITS[dtype]
        assert n % 8 == 0, name
        nbytes = n // 8
        if data is None:
            rng = np.random.default_rng(len(name) * 7919 + nbytes)
            data = rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes()
            if dtype == "BOOL":
                data = bytes(b & 1 for b in data)
        assert len(data) == nbytes, name
        self.data = data


def header_bytes(tensors, metadata, offsets, order, pad=True):
    doc = {}
    if metadata is not None:
        doc["__metadata__"] = metadata
    for i in order:
        t = tensors[i]
        doc[t.name] = {"dtype": t.dtype, "shape": t.shape, "data_offsets": list(offsets[i])}
    h = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return h


def build(tensors, metadata=None, header_order=None, pad=True):
    """The file's bytes and the expect entries (data order = list order)."""
    offsets, at = [], 0
    for t in tensors:
        offsets.append((at, at + len(t.data)))
        at += len(t.data)
    order = header_order if header_order is not None else list(range(len(tensors)))
    h = header_bytes(tensors, metadata, offsets, order, pad)
    data = struct.pack("<Q", len(h)) + h + b"".join(t.data for t in tensors)
    entries = []
    for i, t in enumerate(tensors):
        entries.append({"name": t.name, "dtype": NP_NAME[t.dtype], "shape": t.shape,
                        "nbytes": len(t.data), "sha256": hashlib.sha256(t.data).hexdigest(),
                        "st_dtype": t.dtype, "data_offsets": list(offsets[i]),
                        "header_index": order.index(i)})
    return data, entries, len(h)


def write(outdir, fname, data, entries=(), metadata=None, header_size=None, expect="readable",
          error=None):
    path = os.path.join(outdir, fname)
    with open(path, "wb") as f:
        f.write(data)
    doc = {"schema": "fixture-expect/1", "fixture": fname, "format": "safetensors",
           "expect": expect, "made_by": "modelfs scripts/gen_safetensors.py (json, struct, numpy)",
           "file_size": len(data), "file_sha256": hashlib.sha256(data).hexdigest()}
    if metadata is not None:
        doc["metadata"] = metadata
    if header_size is not None:
        doc["header_size"], doc["data_start"] = header_size, 8 + header_size
    if error is not None:
        doc["error_contains"] = error
    doc["tensor_count"] = len(entries)
    doc["tensors"] = list(entries)
    with open(path + ".expect.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def good(outdir):
    ts = []
    for d, bits, _ in DTYPES:
        n = 8 if bits % 8 else 3      # 8 packed elements are whole bytes
        ts.append(T("dtype/%s.weight" % d.lower(), d, [2, n]))
    ts += [T("scalar:pi", "F32", [], np.float32(3.14159).tobytes()),
           T("zero.size", "F16", [0, 4], b""), T("zero/scalar-free", "I64", [3, 0, 2], b""),
           T("ユニコード/名前.β", "F32", [2, 2]), T("model.layers.0/self_attn:q", "BF16", [4, 4])]
    meta = {"format": "pt", "note": "modelfs ✓", "empty": "", "json": "{\"a\": [1, 2]}"}
    data, entries, n = build(ts, meta, header_order=list(reversed(range(len(ts)))))
    write(outdir, "gen_dtypes.safetensors", data, entries, meta, n)

    long_name = "layer." * 60 + "weight"        # 366 bytes: cut and hashed in tensors/
    ts = [T("", "U8", [2]), T(".hidden", "U8", [1]), T("100%", "I32", [1]),
          T("tab\tand\x01ctl", "U8", [3]), T(long_name, "F32", [2]), T("a/b/../c", "U8", [1]),
          T("%2F", "U8", [1])]
    data, entries, n = build(ts, None, pad=False)
    write(outdir, "gen_names.safetensors", data, entries, None, n)

    data, entries, n = build([], None)
    write(outdir, "gen_empty.safetensors", data, entries, None, n)

    ts = [T("blk.%04d.w" % i, "F32", [2]) for i in range(3000)]
    data, entries, n = build(ts, {"count": "3000"}, header_order=list(reversed(range(3000))))
    write(outdir, "gen_many.safetensors", data, entries, {"count": "3000"}, n)


def raw_file(header, data=b""):
    return struct.pack("<Q", len(header)) + header + data


def bad(outdir):
    def w(fname, blob, error):
        write(outdir, fname, blob, expect="corrupt", error=error)

    ok = b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    w("bad_header_past_eof.safetensors", struct.pack("<Q", 5000) + ok, "runs past the end of the file")
    w("bad_header_too_big.safetensors", struct.pack("<Q", 200_000_000) + ok + bytes(8),
      "over the 100 MB")
    w("bad_not_json.safetensors", raw_file(b'{"a": nope}'), "not valid JSON")
    w("bad_offsets_past.safetensors",
      raw_file(b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', bytes(8)),
      "run past the end of the data")
    w("bad_overlap.safetensors",
      raw_file(b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
               b'"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', bytes(12)), "overlap")
    w("bad_gap.safetensors",
      raw_file(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', bytes(8)), "gap")
    w("bad_size.safetensors",
      raw_file(b'{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', bytes(8)), "hold 8")
    w("bad_trailing.safetensors", raw_file(ok, bytes(12)), "the file holds 12")
    w("bad_dtype.safetensors",
      raw_file(b'{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}', bytes(16)),
      "unknown dtype")
    w("bad_packed.safetensors",
      raw_file(b'{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}}', bytes(1)),
      "not a whole number of bytes")
    w("bad_overflow.safetensors",
      raw_file(b'{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}'),
      "overflows")
    w("bad_dims.safetensors",
      raw_file(b'{"a":{"dtype":"U8","shape":[' + b",".join([b"1"] * 2000) +
               b'],"data_offsets":[0,1]}}', bytes(1)), "dimensions")
    w("bad_negative.safetensors",
      raw_file(b'{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}', bytes(1)),
      "not a non-negative integer")
    w("bad_deep.safetensors", raw_file(b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}"), "nesting deeper")
    w("bad_utf8.safetensors",
      raw_file(b'{"a\xff":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', bytes(1)),
      "invalid UTF-8")
    w("bad_duplicate.safetensors",
      raw_file(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
               b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', bytes(2)), "duplicate key")
    w("bad_metadata.safetensors", raw_file(b'{"__metadata__":{"n":1}}'), "is not a string")
    w("bad_missing.safetensors", raw_file(b'{"a":{"dtype":"U8","shape":[1]}}', bytes(1)),
      "missing data_offsets")
    w("bad_surrogate.safetensors",
      raw_file(b'{"\\ud800":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', bytes(1)),
      "surrogate")


def sharded(outdir):
    """A sharded model: tensors split over two shards by the index."""
    d = os.path.join(outdir, "sharded")
    os.makedirs(d, exist_ok=True)
    shards = {
        "model-00001-of-00002.safetensors": [T("embed.weight", "F32", [8, 4]),
                                              T("layers.0/attn:q", "BF16", [4, 4]),
                                              T("ユニコード", "I64", [3])],
        "model-00002-of-00002.safetensors": [T("layers.1.mlp", "F16", [2, 6]),
                                              T("lm_head.scale", "F64", []),
                                              T("empty", "F32", [0])],
    }
    weight_map, expect, total = {}, [], 0
    for fname, ts in shards.items():
        data, entries, n = build(ts, {"format": "pt"})
        with open(os.path.join(d, fname), "wb") as f:
            f.write(data)
        for e in entries:
            weight_map[e["name"]] = fname
            e["shard"] = fname
            expect.append(e)
        total += sum(len(t.data) for t in ts)
    index = {"metadata": {"total_size": total, "note": "modelfs sharded"}, "weight_map": weight_map}
    with open(os.path.join(d, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        json.dump(index, f, indent=2, ensure_ascii=False)
    with open(os.path.join(outdir, "sharded.expect.json"), "w", encoding="utf-8") as f:
        json.dump({"schema": "fixture-expect/1", "fixture": "sharded", "format": "safetensors",
                   "expect": "readable", "metadata": index["metadata"],
                   "tensor_count": len(expect), "tensors": expect}, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    good(argv[1])
    bad(argv[1])
    if len(argv) == 3:
        os.makedirs(argv[2], exist_ok=True)
        sharded(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
