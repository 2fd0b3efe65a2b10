#!/usr/bin/python3
"""Writes the zip layer's test archives (formats/codecs/zip.c), each with
NAME.zip.expect.json, for tests/unit/test_zip.c.

    /usr/bin/python3 scripts/gen_zips.py OUTDIR

Archives made with Python's zipfile (py_*.zip), and archives written byte by
byte with struct (zstd members, method 93, compressed with
python3-zstandard; ZIP64 central directory fields; hostile layouts).
Exits 3, writing nothing, when python3-zstandard is missing. Deterministic.

Expectation (JSON):
  {"expect": "ok" | "corrupt",
   "corrupt_offset": N,            (corrupt: the absolute offset to report)
   "skipped": N,                   (entries with a NUL in the name: dropped)
   "count": N, "entries_digest": H (instead of "entries" past 1000 entries:
                                    see digest())
   "entries": [{"name", "name_hex", "size", "comp_size", "method",
                "raw_method", "unsafe", "is_dir", "sha256",
                "decode_error": true|false, "made_by", "external_attr"}]}
"unsafe" follows formats/codecs/zip_read.h: an empty name, a leading '/', a backslash,
an empty, "." or ".." component, a component over 255 bytes, or a directory entry
(trailing '/').
"""

import hashlib
import io
import json
import os
import random
import struct
import sys
import warnings
import zipfile
import zlib

try:
    import zstandard
except ImportError:
    print("gen_zips: python3-zstandard is missing (apt-get install python3-zstandard)",
          file=sys.stderr)
    sys.exit(3)

RNG = random.Random(20240521)
DATE = (1980, 1, 1, 0, 0, 0)
METHODS = {0: "stored", 8: "deflate", 93: "zstd"}
FF32 = 0xFFFFFFFF
MADE_BY = 0x031E  # Unix, spec 3.0 (hand-written archives)


def rand(n):
    return RNG.randbytes(n)


def unsafe(name):
    if name == b"" or b"\\" in name or name.endswith(b"/"):
        return True
    return any(c in (b"", b".", b"..") or len(c) > 255 for c in name.split(b"/"))


def digest(entries):
    """One sha256 standing for a long entry list: over each entry's name
    bytes, NUL, size in decimal, NUL, method, NUL, sha256 of its bytes, LF."""
    h = hashlib.sha256()
    for e in entries:
        h.update(bytes.fromhex(e["name_hex"]) + b"\0%d\0%s\0%s\n"
                 % (e["size"], e["method"].encode(), e["sha256"].encode()))
    return h.hexdigest()


def write(outdir, fname, data, expect):
    with open(os.path.join(outdir, fname), "wb") as f:
        f.write(data)
    expect = dict(expect)
    expect["zip"] = fname
    if len(expect.get("entries", [])) > 1000:
        entries = expect.pop("entries")
        expect["count"] = len(entries)
        expect["entries_digest"] = digest(entries)
    with open(os.path.join(outdir, fname + ".expect.json"), "w", encoding="utf-8") as f:
        json.dump(expect, f, indent=1, ensure_ascii=False)
        f.write("\n")


def entry(name, content, method, comp_size, made_by, attr, decode_error=False):
    """The expectation for one kept entry."""
    return {
        "name": name.decode("utf-8", "replace"),
        "name_hex": name.hex(),
        "size": len(content) if content is not None else None,
        "comp_size": comp_size,
        "method": METHODS.get(method, "other"),
        "raw_method": method,
        "unsafe": unsafe(name),
        "is_dir": name.endswith(b"/"),
        "sha256": hashlib.sha256(content).hexdigest() if not decode_error else None,
        "decode_error": decode_error,
        "made_by": made_by,
        "external_attr": attr,
    }


# ---------------------------------------------------------------- zipfile

def py_zip(outdir, fname, members, *, force_zip64=False):
    """members: (name str, bytes, compress_type). Expectations are read back
    with zipfile itself."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are the point of one test
        with zipfile.ZipFile(buf, "w") as z:
            for name, data, method in members:
                info = zipfile.ZipInfo(name, DATE)
                info.compress_type = method
                if name.endswith("/"):
                    info.external_attr = (0o40755 << 16) | 0x10
                if force_zip64:
                    with z.open(info, "w", force_zip64=True) as w:
                        w.write(data)
                else:
                    z.writestr(info, data)
    data = buf.getvalue()
    entries = []
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for info in z.infolist():
            raw = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")
            entries.append(entry(raw, z.read(info), info.compress_type, info.compress_size,
                                 (info.create_system << 8) | info.create_version,
                                 info.external_attr))
    write(outdir, fname, data, {"expect": "ok", "skipped": 0, "entries": entries})


def gen_python(outdir):
    S, D = zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED
    text = b"".join(b"line %d of a compressible text\n" % i for i in range(3000))
    py_zip(outdir, "py_stored.zip", [
        ("hello.txt", b"hello world\n", S),
        ("empty", b"", S),
        ("dir/", b"", S),
        ("dir/with space.bin", rand(1000), S),
        ("unicod\u00e9/\u540d\u524d.txt", "caf\u00e9\n".encode(), S),
        ("weights/w.bin", rand(65536 + 7), S),
    ])
    py_zip(outdir, "py_deflate.zip", [
        ("text.txt", text, D),
        ("random.bin", rand(100000), D),
        ("empty.bin", b"", D),
        ("zeros.bin", bytes(1 << 20), D),
        ("small", b"abc", D),
        ("stored.bin", rand(300), S),
    ])
    py_zip(outdir, "py_zip64.zip", [
        ("a.txt", text[:5000], D),
        ("b.bin", rand(5000), S),
        ("c.empty", b"", D),
    ], force_zip64=True)
    py_zip(outdir, "py_dups.zip", [
        ("same.txt", b"first\n", S),
        ("other.txt", b"other\n", D),
        ("same.txt", b"second, longer\n", D),
        ("same.txt", b"", S),
    ])
    py_zip(outdir, "py_unsafe.zip", [
        ("../evil", b"evil", S),
        ("/abs", b"abs", S),
        ("a\\b", b"backslash", S),
        ("a//b", b"empty component", S),
        ("./dot", b"dot", S),
        ("x/../y", b"dotdot inside", S),
        ("ok/..hidden", b"not a dotdot component", S),
        ("trailing/", b"", S),
        ("", b"empty name", S),
        (" spaced name ", b"fine", D),
        ("fine/name.txt", b"fine", D),
        ("d/" + "n" * 255, b"longest name", S),
        ("d/" + "n" * 256, b"name too long", S),
    ])
    # More than 65535 entries: zipfile writes the ZIP64 end record.
    py_zip(outdir, "py_many.zip",
           [("d%02d/f%05d" % (i // 1000, i), b"%d" % i if i % 3 else b"", S)
            for i in range(70000)])
    py_zip(outdir, "py_empty.zip", [])


# ---------------------------------------------------------------- by hand

class M:
    """One member as written by hand. payload: the bytes as stored; size/crc:
    what the directory declares (default: those of `content`)."""

    def __init__(self, name, content, method, payload=None, *, size=None, crc=None,
                 comp_size=None, flags=0, zip64=False, local_nlen=None, lho=None,
                 descriptor=False, attr=0o100644 << 16):
        self.name = name if isinstance(name, bytes) else name.encode()
        self.content, self.method = content, method
        if payload is None:
            payload = compress(content, method)
        self.payload = payload
        self.size = len(content) if size is None else size
        self.crc = zlib.crc32(content) if crc is None else crc
        self.comp_size = len(payload) if comp_size is None else comp_size
        self.flags = flags | (0x800 if any(b > 127 for b in self.name) else 0)
        self.zip64, self.local_nlen, self.lho = zip64, local_nlen, lho
        self.descriptor, self.attr = descriptor, attr
        if descriptor:
            self.flags |= 0x08


def deflate_raw(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def zstd(data, **kw):
    return zstandard.ZstdCompressor(level=3, **kw).compress(data)


def compress(data, method):
    if method == 8:
        return deflate_raw(data)
    if method == 93:
        return zstd(data)
    return data


def build(members, *, end64=False, comment=b"", trailing=b"", count=None,
          cd_offset=None, disk=0, loc64_offset=None):
    """The archive's bytes and where its parts are: {"lho": [..], "data": [..],
    "cd": offset, "cde": [..], "eocd": offset, "loc64": offset}."""
    out = bytearray()
    where = {"lho": [], "data": [], "cde": []}
    for m in members:
        lho = len(out)
        where["lho"].append(lho)
        extra = b""
        lsize, lcsize, lcrc = m.size, m.comp_size, m.crc
        if m.zip64:
            extra = struct.pack("<HHQQ", 1, 16, m.size, m.comp_size)
            lsize = lcsize = FF32
        if m.descriptor:
            lsize = lcsize = lcrc = 0
            extra = b""
        nlen = len(m.name) if m.local_nlen is None else m.local_nlen
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if m.zip64 else 20, m.flags,
                           m.method, 0, 0x21, lcrc, lcsize, lsize, nlen, len(extra))
        out += m.name + extra
        where["data"].append(len(out))
        out += m.payload
        if m.descriptor:
            out += struct.pack("<IIII", 0x08074B50, m.crc, m.comp_size & FF32, m.size & FF32)
    cd = len(out)
    where["cd"] = cd
    for m, lho in zip(members, where["lho"]):
        where["cde"].append(len(out))
        lho = m.lho if m.lho is not None else lho
        csize, size, off, extra = m.comp_size, m.size, lho, b""
        if m.zip64:
            extra = struct.pack("<HHQQQ", 1, 24, m.size, m.comp_size, lho)
            csize = size = off = FF32
        if size > FF32 or csize > FF32:
            raise ValueError("member needs zip64=True")
        out += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, MADE_BY, 45 if m.zip64 else 20,
                           m.flags, m.method, 0, 0x21, m.crc, csize, size, len(m.name),
                           len(extra), 0, 0, 0, m.attr, off)
        out += m.name + extra
    cd_size = len(out) - cd
    n = len(members) if count is None else count
    cdo = cd if cd_offset is None else cd_offset
    if end64:
        r = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 45, disk, 0, n, n,
                           cd_size, cdo)
        where["loc64"] = len(out)
        out += struct.pack("<IIQI", 0x07064B50, 0, r if loc64_offset is None else loc64_offset, 1)
        where["eocd"] = len(out)
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, FF32, FF32,
                           len(comment))
    else:
        where["eocd"] = len(out)
        out += struct.pack("<IHHHHIIH", 0x06054B50, disk, disk, n & 0xFFFF, n & 0xFFFF,
                           cd_size, cdo, len(comment))
    out += comment + trailing
    return bytes(out), where


def ok(outdir, fname, members, **kw):
    """members: M, or (M,) for a member whose decoding must fail."""
    plain = [m[0] if isinstance(m, tuple) else m for m in members]
    data, _ = build(plain, **kw)
    entries = []
    for m in members:
        bad = isinstance(m, tuple)
        if bad:
            m = m[0]
        if b"\0" in m.name:
            continue
        e = entry(m.name, m.content, m.method, m.comp_size, MADE_BY, m.attr, decode_error=bad)
        e["size"] = m.size
        entries.append(e)
    skipped = sum(1 for m in plain if b"\0" in m.name)
    write(outdir, fname, data, {"expect": "ok", "skipped": skipped, "entries": entries})


def corrupt(outdir, fname, data, offset):
    write(outdir, fname, data, {"expect": "corrupt", "corrupt_offset": offset})


def gen_zstd(outdir):
    text = b"".join(b"spec_version = 1 # line %d\n" % i for i in range(500))
    rnd = rand(200000)
    two = zstd(b"first frame|") + zstd(b"second frame")
    skippable = struct.pack("<II", 0x184D2A50, 4) + b"skip" + zstd(b"after a skippable frame")
    ok(outdir, "zstd.zip", [
        M("carton.toml", text, 93),
        M("random.bin", rnd, 93),
        M("zeros.bin", bytes(2 << 20), 93),
        M("empty.bin", b"", 93),
        M("multi.bin", b"first frame|second frame", 93, two),
        M("nosize.bin", text[:3000], 93, zstd(text[:3000], write_content_size=False)),
        M("skippable.bin", b"after a skippable frame", 93, skippable),
        M("checksum.bin", text[:777], 93, zstd(text[:777], write_checksum=True)),
        M("stored.bin", rnd[:1234], 0),
        M("deflate.txt", text, 8),
        M("descriptor.bin", text[:999], 93, descriptor=True),
        M("model/main.py", b"print('hi')\n", 93),
    ])
    # ZIP64 directory fields (all three saturated, values in the extra field)
    # and a ZIP64 end record on a small archive.
    ok(outdir, "zip64_cd.zip", [
        M("a.zst", text, 93, zip64=True),
        M("b.bin", rnd[:5000], 0, zip64=True),
        M("c.txt", text[:100], 8),
        M("d.deflate", text[:4000], 8, zip64=True),
    ], end64=True)
    ok(outdir, "nul_name.zip", [
        M(b"a\0b", b"hidden", 0),
        M("fine", b"visible", 0),
        M(b"\0", b"", 0),
    ])
    # A comment holding a fake end record whose comment cannot fit.
    fake = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 9, 9, 1, 1, 0xFFFF)
    ok(outdir, "comment.zip", [M("x", b"x", 0)], comment=b"a comment " + fake + b" end")
    ok(outdir, "trailing.zip", [M("x", b"xyz", 8)], trailing=b"junk after the end record")
    # Small ones, also the fuzzer's seeds (tests/fuzz/corpus/zip).
    ok(outdir, "small_mixed.zip", [
        M("carton.toml", b"spec_version = 1\n", 93),
        M("a/stored.bin", b"\x00\x01\x02\x03", 0),
        M("a/deflate.txt", b"deflate " * 8, 8),
        M("a/nosize.zst", b"abc" * 10, 93, zstd(b"abc" * 10, write_content_size=False)),
        M("z64/b.zst", b"zip64 " * 5, 93, zip64=True),
        M("z64/c.bin", b"zip64 stored", 0, zip64=True),
        M("dir/", b"", 0),
        M("../up", b"x", 0),
        M("link", b"a/stored.bin", 0, attr=0o120777 << 16),
    ], end64=True)
    ok(outdir, "small_errors.zip", [
        (M("small.zst", b"0123456789", 93, size=9),),
        (M("large.zst", b"0123456789", 93, size=11),),
        (M("crc.deflate", b"0123456789", 8, crc=1),),
        (M("cut.deflate", b"0123456789" * 3, 8, deflate_raw(b"0123456789" * 3)[:-2]),),
        M("fine.zst", b"fine", 93),
    ])
    big = bytes(64 << 20)
    ok(outdir, "decode_errors.zip", [
        M("size_small.zst", text, 93),
        (M("declared_small.zst", text, 93, size=len(text) - 1),),
        (M("declared_large.zst", text, 93, size=len(text) + 1),),
        (M("declared_small_nosize.zst", text, 93, zstd(text, write_content_size=False),
           size=len(text) - 1),),
        (M("declared_large_nosize.zst", text, 93, zstd(text, write_content_size=False),
           size=len(text) + 1),),
        (M("bomb.zst", big, 93, size=100, crc=zlib.crc32(big[:100])),),
        (M("bomb_nosize.zst", big, 93, zstd(big, write_content_size=False), size=100,
           crc=zlib.crc32(big[:100])),),
        (M("bad_crc.zst", text, 93, crc=zlib.crc32(text) ^ 1),),
        (M("garbage.zst", b"12345678", 93, b"not zstd at all"),),
        (M("truncated.zst", text, 93, zstd(text)[:-5]),),
        (M("bad_crc.bin", b"stored bytes", 0, crc=zlib.crc32(b"stored bytes") ^ 1),),
        (M("bad_crc.deflate", text, 8, crc=zlib.crc32(text) ^ 1),),
        (M("declared_small.deflate", text, 8, size=len(text) - 1),),
        (M("declared_large.deflate", text, 8, size=len(text) + 1),),
        (M("truncated.deflate", text, 8, deflate_raw(text)[:-9]),),
        (M("garbage.deflate", b"1234", 8, b"\xff\xff\xff\xff\xff\xff"),),
        (M("empty_payload.deflate", b"", 8, b""),),
        (M("size_mismatch.bin", b"stored!", 0, b"stored!", size=6),),
        (M("bzip2.bin", b"whatever", 12, b"BZh9whatever"),),
        (M("encrypted.bin", b"secret", 0, flags=1),),
        M("good.txt", b"still decodes\n", 8),
    ])


def gen_corrupt(outdir):
    base = [M("one.txt", b"first member\n", 0), M("two.zst", b"second member\n" * 20, 93)]
    data, w = build(base)
    write_ok = data  # the valid archive the cases below break
    del write_ok

    bad = [M("one.txt", b"first member\n", 0),
           M("two.zst", b"second member\n" * 20, 93, local_nlen=0xFFFF)]
    data, w = build(bad)
    corrupt(outdir, "bad_local_name.zip", data, w["lho"][1])

    bad = [M("one.txt", b"first member\n", 0),
           M("two.zst", b"second member\n" * 20, 93, comp_size=0x7FFFFFFF)]
    data, w = build(bad)
    corrupt(outdir, "data_past_end.zip", data, w["data"][1])

    bad = [M("one.txt", b"first member\n", 0, lho=0x10000)]
    data, w = build(bad)
    corrupt(outdir, "lho_out_of_range.zip", data, w["cde"][0])

    data, w = build(base)
    d = bytearray(data)
    d[w["lho"][1]:w["lho"][1] + 4] = b"PK\x09\x09"
    corrupt(outdir, "bad_local_sig.zip", bytes(d), w["lho"][1])

    data, w = build(base)
    d = bytearray(data)
    d[w["cde"][1]:w["cde"][1] + 4] = b"PK\x01\x09"
    corrupt(outdir, "bad_central_sig.zip", bytes(d), w["cde"][1])

    data, w = build(base)
    corrupt(outdir, "truncated.zip", data[:w["eocd"] + 10], max(0, w["eocd"] + 10 - 22 - 0xFFFF))

    data, w = build(base, cd_offset=1 << 20)
    corrupt(outdir, "cd_past_end.zip", data, w["eocd"])

    data, w = build(base, count=5)
    corrupt(outdir, "count_mismatch.zip", data, w["eocd"])

    data, w = build(base, disk=1)
    corrupt(outdir, "multi_disk.zip", data, w["eocd"])

    m = M("needs64.bin", b"abc", 0)
    m.size = FF32  # saturated, but no ZIP64 extra field
    data, w = build([m])
    corrupt(outdir, "zip64_missing_extra.zip", data, w["cde"][0])

    data, w = build(base, end64=True, loc64_offset=1 << 30)
    corrupt(outdir, "bad_zip64_locator.zip", data, w["loc64"])

    corrupt(outdir, "not_a_zip.zip", rand(300), 0)
    corrupt(outdir, "tiny.zip", b"PK\x05\x06", 0)


def main():
    if len(sys.argv) != 2:
        print("usage: gen_zips.py OUTDIR", file=sys.stderr)
        sys.exit(2)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    gen_python(outdir)
    gen_zstd(outdir)
    gen_corrupt(outdir)


if __name__ == "__main__":
    main()
