#!/usr/bin/python3
"""Writes modelfs's own GGUF test models, each with NAME.expect.json
(schema fixture-expect/1, like ../shared/fixtures/gguf).

    /usr/bin/python3 scripts/gen_gguf.py OUTDIR

Our own GGUF writer (ggml-org/ggml docs/gguf.md), plain Python + numpy:
"GGUF", u32 version, u64 tensor count, u64 KV count, the KV pairs (u64
length + bytes for strings; u32 type, u64 count for arrays), the tensor
infos (name, u32 n_dims, u64 ne[] fastest first, u32 ggml type, u64 offset
relative to the data section), zero padding to the alignment, the data
(each tensor padded to the alignment). Block types get random bytes of the
right size. Output is deterministic.

  gen_all.gguf        v3: every scalar and array type (nested too), u64 2^64-1,
                      i64 -2^63, every plain and block ggml type, names with
                      / . : and unicode, a duplicate name, a 0-d and a zero-size tensor
  gen_blocks.gguf     every ggml type up to id 30 but Q8_1, unique names (for older gguf-py readers)
  gen_v2.gguf         v2, general.alignment 64
  gen_tokenizer.gguf  a 150,000-token tokenizer (tokens, scores, token types)
"""

import hashlib
import json
import os
import struct
import sys

import numpy as np

GGUF_VERSION = 3

# GGUF value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
TYPE_NAMES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string",
              "array", "uint64", "int64", "float64"]
SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
              BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}

QK_K = 256
# ggml type id: (name, numpy dtype or None for block types, block size, type size)
GGML_TYPES = {
    0: ("F32", "float32", 1, 4), 1: ("F16", "float16", 1, 2),
    2: ("Q4_0", None, 32, 18), 3: ("Q4_1", None, 32, 20), 6: ("Q5_0", None, 32, 22),
    7: ("Q5_1", None, 32, 24), 8: ("Q8_0", None, 32, 34), 9: ("Q8_1", None, 32, 36),
    10: ("Q2_K", None, QK_K, 84), 11: ("Q3_K", None, QK_K, 110), 12: ("Q4_K", None, QK_K, 144),
    13: ("Q5_K", None, QK_K, 176), 14: ("Q6_K", None, QK_K, 210), 15: ("Q8_K", None, QK_K, 292),
    16: ("IQ2_XXS", None, QK_K, 66), 17: ("IQ2_XS", None, QK_K, 74),
    18: ("IQ3_XXS", None, QK_K, 98), 19: ("IQ1_S", None, QK_K, 50), 20: ("IQ4_NL", None, 32, 18),
    21: ("IQ3_S", None, QK_K, 110), 22: ("IQ2_S", None, QK_K, 82), 23: ("IQ4_XS", None, QK_K, 136),
    24: ("I8", "int8", 1, 1), 25: ("I16", "int16", 1, 2), 26: ("I32", "int32", 1, 4),
    27: ("I64", "int64", 1, 8), 28: ("F64", "float64", 1, 8), 29: ("IQ1_M", None, QK_K, 56),
    30: ("BF16", "bfloat16", 1, 2), 34: ("TQ1_0", None, QK_K, 54), 35: ("TQ2_0", None, QK_K, 66),
    39: ("MXFP4", None, 32, 17), 40: ("NVFP4", None, 64, 36), 41: ("Q1_0", None, 128, 18),
}


def gstr(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


class KV:
    """A metadata pair: key, GGUF type, value. Arrays: typ=ARR and value
    (element type, [elements]); an element of an array of arrays is itself
    (element type, [elements])."""

    def __init__(self, key, typ, value):
        self.key, self.typ, self.value = key, typ, value


def enc_value(typ, v):
    if typ == STR:
        return gstr(v)
    if typ == ARR:
        et, items = v
        out = struct.pack("<IQ", et, len(items))
        return out + b"".join(enc_value(et, x) for x in items)
    return struct.pack(SCALAR_FMT[typ], v)


def json_value(typ, v):
    """What model.json must hold: float32 as the double nearest it."""
    if typ == ARR:
        et, items = v
        return [json_value(et, x) for x in items]
    if typ == F32:
        return float(np.float32(v))
    if typ == BOOL:
        return bool(v)
    return v


def type_string(typ, v):
    if typ != ARR:
        return TYPE_NAMES[typ]
    et, items = v
    if et != ARR:
        return "array[%s]" % TYPE_NAMES[et]
    inner = [type_string(ARR, x) for x in items]
    if not inner:
        return "array[array]"
    return "array[%s]" % (inner[0] if all(x == inner[0] for x in inner) else "mixed")


class Tensor:
    """name, ggml type id, ne (fastest first), raw bytes."""

    def __init__(self, name, type_id, ne, data):
        self.name, self.type_id, self.ne, self.data = name, type_id, list(ne), data


def plain(name, a, type_id=None):
    a = np.ascontiguousarray(a)
    tid = type_id if type_id is not None else {
        "float32": 0, "float16": 1, "float64": 28, "int8": 24, "int16": 25, "int32": 26,
        "int64": 27}[a.dtype.name]
    return Tensor(name, tid, list(reversed(a.shape)), a.tobytes())


def blocks(name, type_id, ne, rng):
    _, _, bs, ts = GGML_TYPES[type_id]
    n = 1
    for d in ne:
        n *= d
    return Tensor(name, type_id, ne, rng.integers(0, 256, n // bs * ts, dtype=np.uint8).tobytes())


def align_up(n, a):
    return (n + a - 1) // a * a


def write(outdir, fname, kvs, tensors, version=GGUF_VERSION, alignment=32, note=""):
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    head += b"".join(gstr(kv.key) + struct.pack("<I", kv.typ) + enc_value(kv.typ, kv.value)
                     for kv in kvs)
    offsets, at = [], 0
    for t in tensors:
        offsets.append(at)
        at = align_up(at + len(t.data), alignment)
    for t, off in zip(tensors, offsets):
        head += gstr(t.name) + struct.pack("<I", len(t.ne)) + b"".join(struct.pack("<Q", d) for d in t.ne)
        head += struct.pack("<IQ", t.type_id, off)
    data_start = align_up(len(head), alignment)
    body = bytearray(head + b"\0" * (data_start - len(head)))
    for t, off in zip(tensors, offsets):
        body += b"\0" * (data_start + off - len(body))
        body += t.data
    body += b"\0" * (align_up(len(body), alignment) - len(body))
    path = os.path.join(outdir, fname)
    with open(path, "wb") as f:
        f.write(body)
    records = []
    for t, off in zip(tensors, offsets):
        name, np_dtype, bs, ts = GGML_TYPES[t.type_id]
        rec = {"name": t.name, "dtype": np_dtype or name.lower(), "shape": list(reversed(t.ne)),
               "nbytes": len(t.data), "sha256": hashlib.sha256(t.data).hexdigest(),
               "ggml_type": name, "ggml_type_id": t.type_id, "ggml_shape": t.ne,
               "data_offset": off, "block_size": bs, "type_size": ts}
        records.append(rec)
    expect = {
        "schema": "fixture-expect/1", "fixture": fname, "format": "gguf", "expect": "readable",
        "made_by": "modelfs scripts/gen_gguf.py", "file_size": len(body),
        "file_sha256": hashlib.sha256(body).hexdigest(),
        "metadata": {kv.key: json_value(kv.typ, kv.value) for kv in kvs},
        "metadata_types": {kv.key: type_string(kv.typ, kv.value) for kv in kvs},
        "gguf_version": version, "format_version": version, "alignment": alignment,
        "kv_count": len(kvs), "data_offset": data_start, "notes": note,
        "tensor_count": len(tensors), "tensors": records,
    }
    with open(path + ".expect.json", "w") as f:
        json.dump(expect, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return path


def all_kvs():
    return [
        KV("general.architecture", STR, "modelfs-gen"),
        KV("general.name", STR, "every type \"q\" \\ ✓\n"),
        KV("t.u8", U8, 255), KV("t.i8", I8, -128), KV("t.u16", U16, 65535), KV("t.i16", I16, -32768),
        KV("t.u32", U32, 4294967295), KV("t.i32", I32, -2147483648), KV("t.f32", F32, 0.1),
        KV("t.bool", BOOL, True), KV("t.false", BOOL, False), KV("t.str.empty", STR, ""),
        KV("t.u64", U64, 2 ** 64 - 1), KV("t.i64", I64, -2 ** 63), KV("t.f64", F64, -1e-300),
        KV("t.f32.tiny", F32, 1e-45), KV("t.f32.big", F32, 3.4028234663852886e38),
        KV("t.arr.u8", ARR, (U8, [0, 255])), KV("t.arr.i8", ARR, (I8, [-128, 127])),
        KV("t.arr.u16", ARR, (U16, [0, 65535])), KV("t.arr.i16", ARR, (I16, [-32768, 32767])),
        KV("t.arr.u32", ARR, (U32, [0, 4294967295])), KV("t.arr.i32", ARR, (I32, [-1, 2147483647])),
        KV("t.arr.f32", ARR, (F32, [0.5, -1.25, 0.1])), KV("t.arr.bool", ARR, (BOOL, [True, False])),
        KV("t.arr.str", ARR, (STR, ["a", "", "ü/テ", "tab\there"])),
        KV("t.arr.u64", ARR, (U64, [0, 2 ** 64 - 1])), KV("t.arr.i64", ARR, (I64, [-2 ** 63, 2 ** 63 - 1])),
        KV("t.arr.f64", ARR, (F64, [1e300, -2.5])), KV("t.arr.empty", ARR, (U32, [])),
        KV("t.arr.empty_nested", ARR, (ARR, [])),
        KV("t.nested", ARR, (ARR, [(I32, [1, 2]), (I32, [])])),
        KV("t.nested.mixed", ARR, (ARR, [(I32, [1]), (STR, ["x"])])),
        KV("t.nested3", ARR, (ARR, [(ARR, [(F64, [1.5]), (F64, [])])])),
        KV("clé/unicode:名前", STR, "key with / : and unicode"),
        KV("general.file_type", U32, 1),
    ]


def gen_all(outdir):
    rng = np.random.default_rng(20260614)
    ts = [
        plain("token_embd.weight", rng.standard_normal((4, 8)).astype(np.float32)),
        plain("f16/w:ユニコード", rng.standard_normal((3, 5)).astype(np.float16)),
        Tensor("bf16.w", 30, [6, 2], rng.integers(0, 65536, 12, dtype=np.uint16).astype("<u2").tobytes()),
        plain("f64", rng.standard_normal(3)), plain("i8", np.arange(-3, 4, dtype=np.int8)),
        plain("i16", np.arange(6, dtype=np.int16).reshape(2, 3)),
        plain("i32", np.arange(5, dtype=np.int32)), plain("i64", np.array([-2 ** 63, 2 ** 63 - 1])),
        plain("dup", np.ones(2, np.float32)), plain("dup", np.zeros(3, np.float32)),
        Tensor("scalar", 0, [], struct.pack("<f", 2.5)),
        Tensor("empty", 0, [0, 4], b""),
        Tensor(".hidden/β", 0, [2, 1, 1, 1], struct.pack("<2f", 1, 2)),
    ]
    for tid, (name, np_dtype, bs, _) in sorted(GGML_TYPES.items()):
        if np_dtype is None:
            ts.append(blocks("blk.%s.weight" % name.lower(), tid, [bs * 2, 3], rng))
    write(outdir, "gen_all.gguf", all_kvs(), ts,
          note="every value type and every ggml type; block tensors hold random bytes")


def gen_blocks(outdir):
    """Every ggml type up to BF16 (id 30) once, no duplicate names: what
    older gguf-py readers can read whole. Q8_1 is left out: their tables
    say 40 bytes per block, ggml's block_q8_1 is 36 (gen_all has it)."""
    rng = np.random.default_rng(30)
    ts = []
    for tid, (name, np_dtype, bs, ts_) in sorted(GGML_TYPES.items()):
        if tid > 30 or tid == 9:
            continue
        if np_dtype is None:
            ts.append(blocks("b.%s" % name, tid, [bs, 2], rng))
        else:
            ts.append(Tensor("p.%s" % name, tid, [3, 2], rng.integers(0, 256, 6 * ts_, dtype=np.uint8).tobytes()))
    write(outdir, "gen_blocks.gguf", [KV("general.architecture", STR, "blocks")], ts,
          note="every ggml type with id <= 30 but Q8_1; random bytes")


def gen_v2(outdir):
    rng = np.random.default_rng(2)
    kvs = [KV("general.architecture", STR, "v2"), KV("general.alignment", U32, 64),
           KV("v2.count", U64, 7), KV("v2.names", ARR, (STR, ["x", "y"]))]
    ts = [plain("a", rng.standard_normal(3).astype(np.float32)),
          blocks("q", 8, [64, 2], rng), plain("b", np.arange(10, dtype=np.int16))]
    write(outdir, "gen_v2.gguf", kvs, ts, version=2, alignment=64, note="GGUF v2, alignment 64")


def tokenizer_kvs(n):
    toks = ["<unk>", "<s>", "</s>"] + ["\u2581tok%d" % i for i in range(n - 4)] + ["\"q\\\n"]
    return [
        KV("general.architecture", STR, "llama"),
        KV("tokenizer.ggml.model", STR, "llama"),
        KV("tokenizer.ggml.tokens", ARR, (STR, toks)),
        KV("tokenizer.ggml.scores", ARR, (F32, [-i / 4 for i in range(n)])),
        KV("tokenizer.ggml.token_type", ARR, (I32, [2, 3, 3] + [1] * (n - 3))),
        KV("tokenizer.ggml.small", ARR, (I32, list(range(1024)))),
        KV("tokenizer.ggml.nested", ARR, (ARR, [(U8, [1] * 700), (U8, [2] * 700)])),
        KV("tokenizer.ggml.bos_token_id", U32, 1),
    ]


def gen_tokenizer(outdir, n=150000, fname="gen_tokenizer.gguf"):
    ts = [plain("token_embd.weight", np.zeros((4, 4), np.float32))]
    return write(outdir, fname, tokenizer_kvs(n), ts,
                 note="%d-token tokenizer: its arrays go to metadata/*.json" % n)


def main(argv):
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    gen_all(outdir)
    gen_blocks(outdir)
    gen_v2(outdir)
    gen_tokenizer(outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
