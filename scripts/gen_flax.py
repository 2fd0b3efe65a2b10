#!/usr/bin/python3
"""Flax msgpack checkpoints (flax_model.msgpack) for the tests, written
with Debian's python3-msgpack in Flax's layout (flax/serialization.py):
a map of maps, one per module; arrays as ext 1 holding msgpack of
(shape, dtype.name, C-order bytes) packed with use_bin_type, 0-d numpy
scalars as ext 3, native Python complex as ext 2 holding (real, imag);
an array over Flax's chunk limit (2^30 bytes, not configurable) as
{'__msgpack_chunked_array__': True, 'shape': {'0': ...}, 'chunks':
{'0': ext 1, ...}} of 1-D pieces, here laid out by hand with small
pieces. bfloat16, which numpy lacks, is written as jax writes it: the
name 'bfloat16' and the raw 2-byte values. Beside each MODEL,
MODEL.expect.json: the tensors, their bytes and sha256 from numpy;
hostile files with expect "corrupt" and the message they must give.

usage: gen_flax.py OUTDIR
"""
import hashlib
import json
import os
import struct
import sys

import msgpack
import numpy as np

EXT_NDARRAY, EXT_COMPLEX, EXT_NPSCALAR = 1, 2, 3


class BF16:
    """An array Flax would write as dtype 'bfloat16': the upper halves of
    float32 values (round to nearest even, as ml_dtypes casts)."""

    def __init__(self, values):
        f = np.asarray(values, dtype=np.float32)
        u = f.view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        self.bits = u.astype(np.uint16).reshape(f.shape)
        self.shape = f.shape

    def tobytes(self):
        return self.bits.tobytes()


def array_payload(shape, dtype_name, raw):
    return msgpack.packb((tuple(shape), dtype_name, raw), use_bin_type=True)


def ext_default(x):
    """What Flax's _msgpack_ext_pack does, written from its facts."""
    if isinstance(x, BF16):
        return msgpack.ExtType(EXT_NDARRAY, array_payload(x.shape, "bfloat16", x.tobytes()))
    if isinstance(x, Unknown):
        return msgpack.ExtType(EXT_NDARRAY, array_payload(x.shape, x.name, x.raw))
    if isinstance(x, np.ndarray):
        return msgpack.ExtType(EXT_NDARRAY, array_payload(x.shape, x.dtype.name, x.tobytes("C")))
    if isinstance(x, np.generic):
        a = np.asarray(x)
        return msgpack.ExtType(EXT_NPSCALAR, array_payload(a.shape, a.dtype.name, a.tobytes()))
    if isinstance(x, complex):
        return msgpack.ExtType(EXT_COMPLEX, msgpack.packb((x.real, x.imag)))
    raise TypeError(type(x))


def pack(tree):
    return msgpack.packb(tree, default=ext_default, strict_types=True, use_bin_type=True)


def chunked(arr, per):
    """Flax's chunked form of `arr` with `per` elements a chunk."""
    flat = arr.reshape(-1)
    return {"__msgpack_chunked_array__": True,
            "shape": {str(i): d for i, d in enumerate(arr.shape)},
            "chunks": {str(k): flat[i:i + per] for k, i in enumerate(range(0, flat.size, per))}}


def leaves(tree, prefix=""):
    """(name, array, storage) of every tensor, in document order."""
    for k, v in tree.items():
        name = prefix + "." + str(k) if prefix else str(k)
        if isinstance(v, dict) and "__msgpack_chunked_array__" in v:
            parts = [v["chunks"][str(i)] for i in range(len(v["chunks"]))]
            shape = tuple(v["shape"][str(i)] for i in range(len(v["shape"])))
            yield name, np.concatenate(parts).reshape(shape), "chunked"
        elif isinstance(v, dict):
            yield from leaves(v, name)
        elif isinstance(v, (np.ndarray, BF16, Unknown, np.generic)):
            yield name, v, "in_place"


class Unknown:
    """An array of a dtype name modelfs does not read (a newer ml_dtypes
    type): its bytes as they are."""

    def __init__(self, shape, name, raw):
        self.shape, self.name, self.raw = tuple(shape), name, raw


def describe(name, a, storage):
    if isinstance(a, Unknown):
        return {"name": name, "dtype": None, "shape": list(a.shape), "nbytes": len(a.raw),
                "sha256": hashlib.sha256(a.raw).hexdigest(), "storage": storage,
                "declared_dtype": a.name, "problem": True}
    if isinstance(a, BF16):
        dtype, shape, raw = "bfloat16", list(a.shape), a.tobytes()
    else:
        arr = np.asarray(a)
        dtype, shape, raw = arr.dtype.name, list(arr.shape), arr.tobytes("C")
    return {"name": name, "dtype": dtype, "shape": shape, "nbytes": len(raw),
            "sha256": hashlib.sha256(raw).hexdigest(), "storage": storage}


def write(out, name, tree, values=None):
    data = pack(tree)
    # The independent check of our writer: msgpack's own reader gets the
    # tree back (ext payloads as Flax reads them).
    back = msgpack.unpackb(data, raw=False, strict_map_key=False)
    assert set(back) == set(str(k) for k in tree), name
    path = os.path.join(out, name)
    with open(path, "wb") as f:
        f.write(data)
    tensors = [describe(n, a, s) for n, a, s in leaves(tree)]
    expect = {"format": "flax", "format_version": 0, "expect": "readable",
              "file_size": len(data), "tensor_count": len(tensors), "tensors": tensors}
    if values is not None:
        expect["values"] = values
    with open(path + ".expect.json", "w") as f:
        json.dump(expect, f, indent=1)


def write_corrupt(out, name, data, contains):
    path = os.path.join(out, name)
    with open(path, "wb") as f:
        f.write(data)
    with open(path + ".expect.json", "w") as f:
        json.dump({"format": "flax", "expect": "corrupt", "file_size": len(data),
                   "error_contains": contains}, f, indent=1)


def bert_like(rng):
    """A transformers-style flax_model.msgpack: modules nested by name."""
    h = 16
    layer = lambda: {
        "attention": {"self": {q: {"kernel": rng.standard_normal((h, h)).astype(np.float32),
                                   "bias": np.zeros(h, np.float32)} for q in ("query", "key", "value")}},
        "output": {"dense": {"kernel": rng.standard_normal((h, h)).astype(np.float32),
                             "bias": rng.standard_normal(h).astype(np.float32)},
                   "LayerNorm": {"scale": np.ones(h, np.float32), "bias": np.zeros(h, np.float32)}},
    }
    return {"bert": {
        "embeddings": {"word_embeddings": {"embedding": rng.standard_normal((64, h)).astype(np.float32)},
                       "LayerNorm": {"scale": np.ones(h, np.float32), "bias": np.zeros(h, np.float32)}},
        "encoder": {"layer": {"0": layer(), "1": layer()}},
        "pooler": {"dense": {"kernel": rng.standard_normal((h, h)).astype(np.float32),
                             "bias": np.zeros(h, np.float32)}},
    }}


def dtypes_tree(rng):
    return {
        "params": {
            "f32": {"kernel": rng.standard_normal((3, 5)).astype(np.float32)},
            "f16": rng.standard_normal((4, 2)).astype(np.float16),
            "bf16": {"embedding": BF16(rng.standard_normal((6, 4)))},
            "f64": rng.standard_normal(3),
            "i8": np.arange(-8, 8, dtype=np.int8).reshape(4, 4),
            "i32": np.arange(12, dtype=np.int32).reshape(2, 3, 2) * -7,
            "i64": np.array([1 << 40, -(1 << 50), 3], dtype=np.int64),
            "u8": np.arange(250, 256, dtype=np.uint8),
            "mask": np.array([[True, False], [False, True]]),
            "c64": (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64),
            "zero_size": np.zeros((0, 3), np.float32),
            "f8b11": Unknown((2, 2), "float8_e4m3b11fnuz", bytes([1, 2, 3, 4])),
            "empty": {},
        },
        "batch_stats": {"mean": np.float32(0.25), "count": np.int64(7)},
        "step": 100,
        "lr": 0.001,
        "name": "adam",
        "none": None,
        "flag": True,
        "phase": complex(1.5, -2.0),
    }


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(36)
    write(out, "flax_model.msgpack", bert_like(rng))
    write(out, "dtypes.msgpack", dtypes_tree(rng), values={
        "step": 100, "lr": 0.001, "name": "adam", "none": None, "flag": True,
        "phase": {"real": 1.5, "imag": -2.0}})
    big = rng.standard_normal((10, 7)).astype(np.float32)
    ints = np.arange(45, dtype=np.int32).reshape(3, 15)
    write(out, "chunked.msgpack", {"model": {
        "embedding": chunked(big, 16),       # 5 chunks, the last short
        "ids": chunked(ints, 45),            # one chunk
        "bias": np.ones(7, np.float32)}})

    # Hostile files (refused with exit 5, the message naming the problem).
    arr = lambda shape, dt, raw: msgpack.ExtType(EXT_NDARRAY, array_payload(shape, dt, raw))
    packh = lambda t: msgpack.packb(t, use_bin_type=True)
    ok_ext = packh({"w": arr((2,), "float32", b"\0" * 8)})
    # A good array first (the probe's evidence), then key "x" and the bomb.
    two = b"\x82" + packh("w") + packh(arr((2,), "float32", b"\0" * 8)) + b"\xa1x"
    # Depth bomb: 100,000 nested maps (one byte of key each).
    write_corrupt(out, "depth_bomb.msgpack", two + b"\x81\xa1a" * 100000 + b"\xc0",
                  "nested more than 64 deep")
    # Length bombs: a bin, a map, an array, an ext claiming far past the end.
    write_corrupt(out, "bin_bomb.msgpack", two + b"\xc6\xff\xff\xff\xf0",
                  "bin runs past the end")
    write_corrupt(out, "map_bomb.msgpack", b"\xdf\xff\xff\xff\xff" + ok_ext[1:],
                  "claims more pairs than bytes are left")
    write_corrupt(out, "array_bomb.msgpack", two + b"\xdd\x7f\xff\xff\xff\xc0",
                  "claims more items than bytes are left")
    write_corrupt(out, "ext_bomb.msgpack", b"\x81\xa1w\xc9\xff\xff\xff\x00\x01" + ok_ext[6:],
                  "ext runs past the end")
    # Many leaves under a long name: what the table would keep passes the
    # budget (64 MiB + 16 bytes per byte of the file) long before memory.
    write_corrupt(out, "budget.msgpack",
                  b"\x82" + packh("w") + packh(arr((2,), "float32", b"\0" * 8)) + packh("k" * 65000)
                  + b"\xde\x03\xe8" + b"\xa1a\xc0" * 1000, "needs more memory than modelfs allows")
    # Lying shapes: the shape's elements are not the bytes.
    write_corrupt(out, "lying_shape.msgpack", packh({"w": arr((1000, 1000), "float32", b"\0" * 16)}),
                  "holds 16 bytes")
    write_corrupt(out, "overflow_shape.msgpack",
                  packh({"w": arr((1 << 40, 1 << 40), "float32", b"\0" * 16)}),
                  "more than 2^64 elements")
    write_corrupt(out, "huge_shape_count.msgpack",
                  b"\x81\xa1w\xc7\x20\x01\x93\xdd\xff\xff\xff\xff" + b"\0" * 26,
                  "claims more items than bytes are left")
    write_corrupt(out, "many_dims.msgpack", packh({"w": arr((1,) * 65, "float32", b"\0" * 4)}),
                  "65 dimensions")
    bad_chunks = {"w": {"__msgpack_chunked_array__": True, "shape": {"0": 9},
                        "chunks": {"0": arr((4,), "float32", b"\0" * 16)}}}
    write_corrupt(out, "chunked_lie.msgpack", packh(bad_chunks), "chunks hold 16 bytes")
    write_corrupt(out, "trailing.msgpack", ok_ext + b"\xc0", "1 bytes after the msgpack document")
    write_corrupt(out, "reserved.msgpack", two + b"\xc1",
                  "byte 0xc1 is no msgpack type")


if __name__ == "__main__":
    main()
