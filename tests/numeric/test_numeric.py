#!/usr/bin/python3
"""The numeric codec (formats/codecs/numeric.h) through num_decode, bit for bit:

1. every tensor of SHARED/fixtures/gguf/quants.gguf (each block type gguf-py
   dequantizes, and bfloat16) against gguf-py's own values in
   quants.gguf.f32.npz (skipped, visibly, when SHARED is absent);
2. every code of the float8 types, e8m0, both float4 packings, all 65536
   bfloat16 and float16 values, complex32 and the integers, against values
   computed here from the definitions (OCP MX, ml_dtypes, IEEE 754) or by
   numpy;
3. that a wrong decoder is caught: the same bytes read as another type, and
   a reference with one bit changed, must both be reported as mismatches.

usage: test_numeric.py NUM_DECODE SHARED_DIR
"""
import math
import os
import struct
import subprocess
import sys

import numpy as np

NUM_DECODE = sys.argv[1]
SHARED = sys.argv[2]
failures = []
ran = 0


def decode(dtype, data, f64=False):
    """num_decode's output for `data`, as uint32 (float32) or uint64 bits."""
    args = [NUM_DECODE] + (["--f64"] if f64 else []) + [dtype]
    p = subprocess.run(args, input=bytes(data), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.decode()))
    return np.frombuffer(p.stdout, dtype="<u8" if f64 else "<u4")


def mismatch(got, want):
    """None when equal bit for bit, else a short description."""
    got = np.asarray(got).ravel()
    want = np.asarray(want).ravel()
    if got.shape != want.shape:
        return "%d numbers, expected %d" % (got.size, want.size)
    bad = np.nonzero(got != want)[0]
    if bad.size == 0:
        return None
    i = bad[0]
    return "%d of %d differ; first at %d: 0x%x, expected 0x%x" % (
        bad.size, got.size, i, int(got[i]), int(want[i]))


def check(what, got, want):
    global ran
    ran += 1
    why = mismatch(got, want)
    if why is None:
        print("ok   %s" % what)
    else:
        print("FAIL %s: %s" % (what, why))
        failures.append(what)


def f32_bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


# --- 1. GGUF blocks against gguf-py --------------------------------------

def gguf_tensors(path):
    """(name, absolute offset) of each tensor, from the GGUF header."""
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, buf, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string():
        nonlocal pos
        n = take("Q")
        s = buf[pos:pos + n].decode()
        pos += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q",
              11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(scalar[t])

    assert buf[:4] == b"GGUF", "not GGUF"
    pos = 4
    _version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    alignment = 32
    for _ in range(n_kv):
        key = string()
        v = value(take("I"))
        if key == "general.alignment":
            alignment = v
    infos = []
    for _ in range(n_tensors):
        name = string()
        ndim = take("I")
        for _ in range(ndim):
            take("Q")
        take("I")
        infos.append((name, take("Q")))
    start = (pos + alignment - 1) // alignment * alignment
    return buf, [(name, start + off) for name, off in infos]


def test_gguf():
    import json
    base = os.path.join(SHARED, "fixtures", "gguf", "quants.gguf")
    if not all(os.path.exists(base + ext) for ext in ("", ".expect.json", ".f32.npz")):
        print("SKIP gguf: %s (and its .expect.json, .f32.npz) not found" % base)
        return
    expect = json.load(open(base + ".expect.json"))
    ref = np.load(base + ".f32.npz")
    buf, offsets = gguf_tensors(base)
    offsets = dict(offsets)
    seen = set()
    for t in expect["tensors"]:
        name, dtype = t["name"], t["dtype"]
        start = offsets[name]
        data = buf[start:start + t["nbytes"]]
        check("gguf %s (%s, %d bytes)" % (name, dtype, len(data)), decode(dtype, data),
              ref[name].astype("<f4").view("<u4"))
        # to_f64 is to_f32 widened.
        check("gguf %s as float64" % dtype, decode(dtype, data, f64=True),
              ref[name].astype("<f8").view("<u8"))
        seen.add(dtype)
    gguf_blocks = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k",
                   "q6_k", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m",
                   "iq4_nl", "iq4_xs", "tq1_0", "tq2_0", "mxfp4", "nvfp4"}
    missing = gguf_blocks - seen
    check("gguf fixture covers every block type (missing: %s)" % sorted(missing),
          np.array([len(missing)]), np.array([0]))

    # 3. A wrong decoder is caught: iq4_nl's blocks (18 bytes, 32 numbers)
    # read as q4_0 (the same sizes) must not match gguf-py's iq4_nl values.
    for t in expect["tensors"]:
        if t["dtype"] == "iq4_nl":
            start = offsets[t["name"]]
            data = buf[start:start + t["nbytes"]]
            wrong = mismatch(decode("q4_0", data), ref[t["name"]].view("<u4"))
            check("negative: iq4_nl blocks read as q4_0 are reported (%s)" % wrong,
                  np.array([wrong is not None]), np.array([True]))


# --- 2. small floats from their definitions --------------------------------

QNAN = 0x7FC00000


def minifloat(code, ebits, mbits, bias, special):
    """float32 bits of one code, from the format's definition.

    special: "ieee" (exponent all ones: infinity or NaN), "fn" (only all
    ones is NaN), "fnuz" (only the code 1000...0 is NaN; no -0), "finite".
    NaN: float32's quiet NaN with the code's top bit as sign (ml_dtypes'
    conversion); its payload is not defined by the formats."""
    width = 1 + ebits + mbits
    sign = code >> (width - 1)
    mag = code & ((1 << (width - 1)) - 1)
    e, m = mag >> mbits, mag & ((1 << mbits) - 1)
    nan = QNAN | sign << 31
    if special == "ieee" and e == (1 << ebits) - 1:
        return nan if m else (0xFF800000 if sign else 0x7F800000)
    if special == "fn" and mag == (1 << (width - 1)) - 1:
        return nan
    if special == "fnuz" and sign and mag == 0:
        return nan
    if e == 0:
        v = m * 2.0 ** (1 - bias - mbits)
    else:
        v = (1 + m / 2.0 ** mbits) * 2.0 ** (e - bias)
    v = -v if sign else v
    if v == 0 and sign:
        v = -0.0
    bits = int(np.float32(v).view(np.uint32))
    assert float(np.float32(v)) == v, "not exact in float32"
    return bits


F8 = {
    "float8_e4m3fn": (4, 3, 7, "fn"),
    "float8_e4m3fnuz": (4, 3, 8, "fnuz"),
    "float8_e5m2": (5, 2, 15, "ieee"),
    "float8_e5m2fnuz": (5, 2, 16, "fnuz"),
}


def f8_table(name):
    return np.array([minifloat(x, *F8[name]) for x in range(256)], dtype=np.uint32)


def e8m0_table():
    return np.array([QNAN if x == 255 else int(np.float32(math.ldexp(1.0, x - 127)).view(np.uint32))
                     for x in range(256)], dtype=np.uint32)


def as_f32(bits):
    return np.array(bits, dtype=np.uint32).view(np.float32)


def test_small_floats():
    # The reference itself, against values the specifications list.
    e4 = as_f32(f8_table("float8_e4m3fn"))
    assert e4[0x7E] == 448 and e4[0x01] == 2.0 ** -9 and np.isnan(e4[0x7F]) and np.isnan(e4[0xFF])
    assert e4[0x80] == 0 and np.signbit(e4[0x80]) and e4[0x38] == 1.0
    e4z = as_f32(f8_table("float8_e4m3fnuz"))
    assert e4z[0x7F] == 240 and e4z[0x01] == 2.0 ** -10 and np.isnan(e4z[0x80])
    assert np.isnan(e4z).sum() == 1 and e4z[0x40] == 1.0
    e5 = as_f32(f8_table("float8_e5m2"))
    assert e5[0x7B] == 57344 and np.isinf(e5[0x7C]) and np.isinf(e5[0xFC]) and e5[0xFC] < 0
    assert np.isnan(e5[0x7D]) and e5[0x01] == 2.0 ** -16 and e5[0x3C] == 1.0
    e5z = as_f32(f8_table("float8_e5m2fnuz"))
    assert e5z[0x7F] == 57344 and e5z[0x01] == 2.0 ** -17 and np.isnan(e5z).sum() == 1
    e8 = as_f32(e8m0_table())
    assert e8[127] == 1.0 and e8[0] == 2.0 ** -127 and e8[254] == 2.0 ** 127 and np.isnan(e8[255])

    codes = bytes(range(256))
    for name in F8:
        check("%s: all 256 codes" % name, decode(name, codes), f8_table(name))
        check("%s: to_f64" % name, decode(name, codes, f64=True),
              as_f32(f8_table(name)).astype("<f8").view("<u8"))
        # Past 1024 numbers the decoder uses a table: the same values.
        check("%s: 64 KiB" % name, decode(name, codes * 256), np.tile(f8_table(name), 256))
    check("float8_e8m0fnu: all 256 codes", decode("float8_e8m0fnu", codes), e8m0_table())
    check("float8_e8m0fnu: 64 KiB", decode("float8_e8m0fnu", codes * 256),
          np.tile(e8m0_table(), 256))

    # float4 e2m1: two a byte, low nibble first.
    e2m1 = [minifloat(n, 2, 1, 1, "finite") for n in range(16)]
    assert list(as_f32(e2m1)[:8]) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert list(as_f32(e2m1)[8:]) == [-0.0, -0.5, -1, -1.5, -2, -3, -4, -6]
    assert np.signbit(as_f32(e2m1)[8])
    want = np.array([e2m1[b & 15] if k == 0 else e2m1[b >> 4] for b in range(256) for k in (0, 1)],
                    dtype=np.uint32)
    for name in ("float4_e2m1fn_x2", "float4_e2m1fn"):
        check("%s: every byte (both nibbles)" % name, decode(name, codes), want)

    # bfloat16: the high half of a float32.
    all16 = np.arange(65536, dtype="<u2")
    check("bfloat16: all 65536", decode("bfloat16", all16.tobytes()),
          all16.astype(np.uint32) << 16)
    check("bfloat16: to_f64", decode("bfloat16", all16.tobytes(), f64=True),
          (all16.astype(np.uint32) << 16).view(np.float32).astype("<f8").view("<u8"))

    # float16 against numpy's own conversion. numpy keeps a NaN's sign and
    # payload (the payload shifted up 13 bits) as the C decoder does, so
    # all 65536 compare as exact bits.
    f16 = all16.view("<f2").astype("<f4").view("<u4")
    check("float16: all 65536 (numpy)", decode("float16", all16.tobytes()), f16)
    # to_f64 is to_f32 widened (numeric.h): a signalling NaN comes out
    # quiet, as the float32 to float64 conversion of the hardware (and of
    # numpy's astype) makes it.
    check("float16: to_f64 is to_f32 widened", decode("float16", all16.tobytes(), f64=True),
          all16.view("<f2").astype("<f4").astype("<f8").view("<u8"))
    # complex32: (re, im) float16 pairs.
    pairs = np.stack([all16, all16[::-1]], axis=1).ravel()
    check("complex32: 65536 pairs", decode("complex32", pairs.tobytes()),
          pairs.view("<f2").astype("<f4").view("<u4"))


def test_q1_0():
    # q1_0 is not in the fixture (gguf-py dequantizes it since after the
    # fixture's version): a float16 d, then 128 sign bits, low bit first;
    # a set bit is d, a clear one -d (gguf-py's Q1_0.dequantize_blocks).
    rng = np.random.default_rng(10)
    d = rng.standard_normal(8).astype("<f2")
    bits = rng.integers(0, 256, (8, 16), dtype=np.uint8)
    blocks = np.concatenate([d.view(np.uint8).reshape(8, 2), bits], axis=1)
    signs = np.unpackbits(bits, axis=1, bitorder="little").astype(bool)
    d32 = d.astype("<f4").reshape(8, 1)
    check("q1_0: 8 blocks", decode("q1_0", blocks.tobytes()),
          np.where(signs, d32, -d32).astype("<f4").view("<u4"))


def test_plain():
    rng = np.random.default_rng(21)
    raw = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    for name in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                 "float32", "float64", "complex64", "complex128"):
        dt = np.dtype(name).newbyteorder("<")
        values = np.frombuffer(raw, dtype=dt)
        if dt.kind == "c":
            values = values.view(dt.type(0).real.dtype.newbyteorder("<"))
        check("%s: to_f64" % name, decode(name, raw, f64=True), values.astype("<f8").view("<u8"))
        if dt.itemsize <= 2 or name in ("float32", "complex64"):
            check("%s: to_f32" % name, decode(name, raw), values.astype("<f4").view("<u4"))
    bools = bytes([0, 1, 2, 255, 0])
    check("bool: nonzero is 1", decode("bool", bools), f32_bits([0, 1, 1, 1, 0]))
    # Integers too wide for float32 have no to_f32.
    for name in ("int32", "uint32", "int64", "uint64", "float64", "complex128"):
        p = subprocess.run([NUM_DECODE, name], input=raw, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        check("%s: no to_f32" % name, np.array([p.returncode]), np.array([2]))


def test_sub_int():
    """int1..int7, uint1..uint7: a value is the low N bits (two's
    complement for intN), one a byte (torch) or packed 8/N a byte, the
    first in the low bits (ONNX, TFLite: int4 uint4 int2 uint2)."""
    every = bytes(range(256))
    b = np.arange(256, dtype=np.int64)
    for sign in ("int", "uint"):
        for bits in range(1, 8):
            name = "%s%d" % (sign, bits)

            def val(x):
                x = x & ((1 << bits) - 1)
                return np.where(x >= 1 << (bits - 1), x - (1 << bits), x) if sign == "int" else x
            want = val(b).astype(np.float64)
            check("%s: a byte each" % name, decode(name, every), f32_bits(want))
            check("%s: a byte each, f64" % name, decode(name, every, f64=True),
                  want.view("<u8"))
            if bits in (2, 4):
                per = 8 // bits
                packed = val((b[:, None] >> (np.arange(per) * bits)).reshape(-1))
                check("%s: packed, low bits first" % name, decode(name + "@packed", every),
                      f32_bits(packed.astype(np.float64)))
    # Neighbours told apart: int4 is not uint4, packed is not a byte each.
    check("int4 and uint4 differ", np.array([(decode("int4", every) != decode("uint4", every)).any()]),
          np.array([True]))


def test_refused():
    for name, words in (("q8_k", "no dequantization is defined for q8_k"),
                        ("q8_1", "no dequantization is defined for q8_1"),
                        ("float6_e2m3fn", "6-bit"), ("float128", "long double"),
                        ("qint8", "scale"), ("bits16", "bits"), ("bytes", "bytes"),
                        ("string", "string"),
                        ("nonsense", "unknown")):
        p = subprocess.run([NUM_DECODE, "--info", name], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        err = p.stderr.decode()
        check("%s refused: %s" % (name, err.strip()),
              np.array([p.returncode, words in err]), np.array([2, True]))


def test_info():
    want = {"float4_e2m1fn_x2": "2 1 1 0 1 1", "float4_e2m1fn": "2 1 1 0 1 1",
            "complex32": "1 4 2 0 1 1", "bfloat16": "1 2 1 0 1 1", "float16": "1 2 1 0 1 1",
            "float32": "1 4 1 0 0 1", "float64": "1 8 1 0 0 0", "int64": "1 8 1 1 0 0",
            "uint16": "1 2 1 2 0 1", "bool": "1 1 1 3 0 1", "q4_k": "256 144 1 0 1 1",
            "iq1_m": "256 56 1 0 1 1", "nvfp4": "64 36 1 0 1 1", "q1_0": "128 18 1 0 1 1",
            "mxfp4": "32 17 1 0 1 1"}
    for name, line in want.items():
        got = subprocess.run([NUM_DECODE, "--info", name], stdout=subprocess.PIPE).stdout.decode()
        check("%s info: %s" % (name, got.strip()), np.array([got.strip() == line]),
              np.array([True]))


def test_negative():
    # 3. Reading e4m3fn's codes as e4m3fnuz must be reported, and so must a
    # reference with one bit changed: the comparison cannot pass vacuously.
    codes = bytes(range(256))
    wrong = mismatch(decode("float8_e4m3fnuz", codes), f8_table("float8_e4m3fn"))
    check("negative: e4m3fn codes read as e4m3fnuz are reported (%s)" % wrong,
          np.array([wrong is not None]), np.array([True]))
    bent = f8_table("float8_e5m2").copy()
    bent[77] ^= 1
    wrong = mismatch(decode("float8_e5m2", codes), bent)
    check("negative: one changed bit is reported (%s)" % wrong,
          np.array([wrong is not None]), np.array([True]))


def main():
    assert sys.byteorder == "little", "num_decode writes host floats"
    np.seterr(invalid="ignore")     # casts of NaN
    test_gguf()
    test_small_floats()
    test_q1_0()
    test_plain()
    test_sub_int()
    test_refused()
    test_info()
    test_negative()
    print("%d passed, %d failed" % (ran - len(failures), len(failures)))
    if failures:
        return 1
    return 0 if ran else 77


if __name__ == "__main__":
    sys.exit(main())
