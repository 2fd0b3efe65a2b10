#!/usr/bin/python3
"""Writes modelfs's own NumPy test models (.npy and .npz), each with
NAME.expect.json (schema fixture-expect/1, like ../shared/fixtures).

    /usr/bin/python3 scripts/gen_numpy.py OUTDIR

Written with numpy itself (np.save, np.savez, np.savez_compressed,
numpy.lib.format.write_array for versions 2.0 and 3.0) and zipfile; the
hostile ones are patched bytes. Output is deterministic.

  gen_*.npy              every numeric dtype little- and big-endian, Fortran
                         order (2-D, 3-D, 1-D), scalars, zero-size, versions 2.0/3.0
  gen_object.npy         an object array (a pickle): served raw with a problem
  gen_records.npy        a structured dtype
  dt_*.npy               numpy's own dtypes: datetime64 and timedelta64 (units,
                         generic, multipliers), str (U), bytes (S), void (V),
                         long double and its complex, structured dtypes (the
                         dict form with offsets and itemsize, aligned, nested,
                         subarrays, titles, Latin-1 / UTF-8 / escaped names),
                         big-endian and Fortran-ordered variants, a crafted 'g'
  dtraw_*.npy            descrs numpy cannot read or that need pickling:
                         served raw with a problem
  gen_stored.npz         np.savez: keys with / . : and unicode, every dtype
  gen_deflate.npz        np.savez_compressed, with a Fortran and a big-endian member
  gen_members*.npz       (Stored, Deflate) numpy's dtypes as members, and every
                         kind of member np.load lists: '.npy' (key ''), a name
                         with a NUL (cut there), an array without .npy, bytes
                         that are not an array, a directory entry
  bad_*.npy, bad_*.npz   refused (expect "corrupt", with error_contains): absurd
                         shapes and header lengths, non-literal headers, members
                         lying about sizes, a Deflate bomb
"""

import hashlib
import io
import json
import os
import struct
import sys
import warnings
import zipfile

import numpy as np
import numpy.lib.format as fmt

# Headers that need format 2.0 or 3.0 are what the tests want.
warnings.filterwarnings("ignore", message="Stored array in format")

NUMERIC = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float16", "float32", "float64", "complex64", "complex128"]


def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if np.dtype(dtype).kind == "b":
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    raw = rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8).tobytes()
    a = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)
    if np.dtype(dtype).kind in "fc":
        a = np.nan_to_num(a.astype(np.dtype(dtype).newbyteorder("=")), nan=1.5, posinf=2.5, neginf=-2.5)
    return np.array(a, dtype=dtype)


def npy_bytes(a, version=None):
    f = io.BytesIO()
    fmt.write_array(f, a, version=version, allow_pickle=True)
    return f.getvalue()


def header_len(blob):
    return (10 + struct.unpack("<H", blob[8:10])[0]) if blob[6] == 1 else 12 + struct.unpack("<I", blob[8:12])[0]


def as_json(v):
    """A descr as JSON has it (tuples become lists)."""
    return json.loads(json.dumps(v))


def entry(name, a, blob, **more):
    """The expectation for array `a` as written in `blob` (an .npy): dtype
    is numpy's dtype.name (None for an object array, served raw)."""
    off = header_len(blob)
    stored = blob[off:]
    fortran = a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous
    e = {"name": name,
         "dtype": None if a.dtype.hasobject else a.dtype.name,
         "shape": list(a.shape), "nbytes": len(stored),
         "sha256": hashlib.sha256(stored).hexdigest(),
         "descr": as_json(fmt.dtype_to_descr(a.dtype)),
         "fortran_order": bool(fortran), "data_offset": off, "npy_version": [blob[6], blob[7]]}
    if a.dtype.byteorder == ">":
        e["stored_byte_order"] = "big"
    e.update(more)
    return e


def write(outdir, fname, data, entries=(), expect="readable", error=None, extra=None):
    path = os.path.join(outdir, fname)
    with open(path, "wb") as f:
        f.write(data)
    doc = {"schema": "fixture-expect/1", "fixture": fname, "format": "numpy", "expect": expect,
           "made_by": "modelfs scripts/gen_numpy.py (numpy %s, zipfile)" % np.__version__,
           "file_size": len(data), "file_sha256": hashlib.sha256(data).hexdigest()}
    if error is not None:
        doc["error_contains"] = error
    doc.update(extra or {})
    doc["tensor_count"] = len(entries)
    doc["tensors"] = list(entries)
    with open(path + ".expect.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def write_npy(outdir, stem, a, version=None):
    blob = npy_bytes(a, version)
    write(outdir, stem + ".npy", blob, [entry(stem, a, blob)])


def raw_entry(name, data, member, compression):
    """A member that is not an .npy array: np.load gives its bytes."""
    return {"name": name, "dtype": None, "shape": None, "nbytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "member": member, "compression": compression}


def npz(outdir, fname, arrays, compression):
    """Like np.savez(_compressed) (which this numpy writes the same way),
    with a fixed timestamp so that reruns give the same bytes."""
    f = io.BytesIO()
    entries = []
    with zipfile.ZipFile(f, "w", compression=compression) as z:
        for key, a in arrays:
            blob = npy_bytes(a)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = compression
            z.writestr(info, blob)
            entries.append(entry(key, a, blob, member=key + ".npy",
                                 compression="stored" if compression == zipfile.ZIP_STORED else "deflate"))
    write(outdir, fname, f.getvalue(), entries)
    return f.getvalue()


def good(outdir):
    for i, dt in enumerate(NUMERIC):
        write_npy(outdir, "gen_%s" % dt, sample(dt, (3, 4), i))
        if np.dtype(dt).itemsize > 1 and dt != "bool":
            write_npy(outdir, "gen_%s_be" % dt, sample(dt, (5,), i).astype(np.dtype(dt).newbyteorder(">")))
    write_npy(outdir, "gen_fortran3d", np.asfortranarray(sample("float32", (2, 3, 4), 40)))
    write_npy(outdir, "gen_fortran2d_be", np.asfortranarray(sample(">i4", (3, 5), 41)))
    write_npy(outdir, "gen_fortran1d", np.asfortranarray(sample("int16", (7,), 42)))
    write_npy(outdir, "gen_scalar", np.array(7, dtype="<i8"))
    write_npy(outdir, "gen_zero", np.zeros((0, 5), dtype="<f8"))
    write_npy(outdir, "gen_v2", sample("float32", (4, 2), 43), version=(2, 0))
    write_npy(outdir, "gen_v3", sample("uint16", (3,), 44), version=(3, 0))
    write_npy(outdir, "gen_object", np.array([1, "two", None], dtype=object))
    write_npy(outdir, "gen_records", np.array([(1, 2.5), (3, 4.5)], dtype=[("a", "<i4"), ("b", "<f8")]))

    arrays = [(dt, sample(dt, (2, 3), 60 + i)) for i, dt in enumerate(NUMERIC)]
    arrays += [("layer/0.weight", sample("float32", (4,), 80)), ("a.b:c", sample("int8", (2,), 81)),
               ("ユニコード", sample("uint8", (3,), 82)), ("scalar", np.array(1.5)),
               ("empty", np.zeros((0,), dtype="<i2"))]
    npz(outdir, "gen_stored.npz", arrays, zipfile.ZIP_STORED)
    arrays = [("weights", sample("float32", (64, 64), 90)), ("zeros", np.zeros((256, 256), "<f4")),
              ("fortran", np.asfortranarray(sample("float64", (3, 4), 91))),
              ("big", sample(">u4", (10,), 92)), ("one", np.array([1], dtype="<i8")),
              ("empty", np.zeros((2, 0), dtype="<f4"))]
    npz(outdir, "gen_deflate.npz", arrays, zipfile.ZIP_DEFLATED)
    numpy_dtypes(outdir)
    numpy_dtypes_raw(outdir)
    npz_members(outdir, "gen_members.npz", zipfile.ZIP_STORED, ".npy")
    npz_members(outdir, "gen_members_deflate.npz", zipfile.ZIP_DEFLATED, "nul.npy@hidden")


def raw_bytes(rng, n):
    return rng.integers(0, 256, n, dtype=np.uint8).tobytes()


def long_double(values, dtype):
    """Long doubles (and their complex) with the 6 bytes of x87 padding
    zeroed: np.save writes whatever memory held, the same bytes each run
    only when set."""
    a = np.array(values, dtype=dtype)
    raw = bytearray(a.tobytes())
    for i in range(0, len(raw), 16):
        at = i + (10 if a.dtype.byteorder != ">" else 0)
        raw[at:at + 6] = bytes(6)
    return np.frombuffer(bytes(raw), dtype=a.dtype).reshape(a.shape).copy()


def times(rng, dtype, shape):
    """datetime64 / timedelta64 values (and one NaT) of `dtype`."""
    n = int(np.prod(shape, dtype=np.int64))
    v = rng.integers(-10 ** 9, 10 ** 9, n, dtype=np.int64)
    if n > 1:
        v[1] = np.iinfo(np.int64).min  # NaT
    return v.view(np.dtype(dtype).newbyteorder("=")).astype(dtype).reshape(shape)


def texts(rng, dtype, shape):
    words = ["", "a", "é", "名前", "🙂x", "abcdefg", "tab\t", "ÿ"]
    n = int(np.prod(shape, dtype=np.int64))
    return np.array([words[int(i)] for i in rng.integers(0, len(words), n)], dtype=dtype).reshape(shape)


def records(rng, dtype, shape):
    """Random bytes as records: every byte of every field (and padding) set."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(raw_bytes(rng, n * dt.itemsize), dtype=dt).reshape(shape).copy()


NESTED = [("id", "<i8"), ("pos", "<f4", (3,)),
          ("rec", [("name", "<U4"), ("t", "<M8[ms]"), ("flags", "|b1", (2,))]),
          (("Title", "tt"), ">i2"), ("raw", "|V3"), ("s", "|S5"), ("grid", "<u2", (2, 2))]


def numpy_dtypes(outdir):
    """numpy's own dtypes: each is a tensor of its bytes and its twin
    carries the same descr."""
    rng = np.random.default_rng(200)
    for stem, dt, shape in [("dt_M8_s", "<M8[s]", (2, 3)), ("dt_M8_ns", "<M8[ns]", (4,)),
                            ("dt_M8_generic", "<M8", (3,)), ("dt_M8_25s", "<M8[25s]", (3,)),
                            ("dt_M8_us_be", ">M8[us]", (4,)), ("dt_m8_ns", "<m8[ns]", (5,)),
                            ("dt_m8_h_be", ">m8[h]", (2, 2)), ("dt_m8_generic", "<m8", (3,)),
                            ("dt_m8_3W", "<m8[3W]", (2,))]:
        write_npy(outdir, stem, times(rng, dt, shape))
    write_npy(outdir, "dt_M8_D_fortran", np.asfortranarray(times(rng, "<M8[D]", (3, 4))))
    write_npy(outdir, "dt_M8_scalar", np.array(np.datetime64("2020-02-29", "D")))
    for stem, dt, shape in [("dt_U5", "<U5", (2, 3)), ("dt_U3_be", ">U3", (4,)), ("dt_U1", "<U1", (3,))]:
        write_npy(outdir, stem, texts(rng, dt, shape))
    write_npy(outdir, "dt_U7_be_fortran", np.asfortranarray(texts(rng, ">U7", (2, 3))))
    write_npy(outdir, "dt_U2_zero", np.zeros((0, 3), "<U2"))
    write_npy(outdir, "dt_S24", np.array([raw_bytes(rng, 24), b"abc", b"a\0b"], dtype="S24"))
    write_npy(outdir, "dt_S1", np.array([b"x", b"", b"\xff"], dtype="S1"))
    write_npy(outdir, "dt_S3_fortran", np.asfortranarray(np.array([[b"ab", b"c"], [b"def", b""]], "S3")))
    # Zero-size strings: numpy saves a field's view as '|S0' (numpy's name
    # "bytes", with shape (3,) and no bytes).
    write_npy(outdir, "dt_S0", np.zeros(3, dtype=[("a", "S0")])["a"])
    write_npy(outdir, "dt_V12", records(rng, "V12", (3,)))
    write_npy(outdir, "dt_V5_2d", records(rng, "V5", (2, 2)))
    write_npy(outdir, "dt_V0", np.zeros(3, "V0"))
    write_npy(outdir, "dt_f16", long_double([1.0 / 3, -2.5, 1e300, 0.0], "<f16"))
    write_npy(outdir, "dt_f16_be", long_double([1.0 / 7, 3.5], ">f16"))
    write_npy(outdir, "dt_f16_fortran", np.asfortranarray(long_double([[1, 2, 3], [4, 5, 6]], "<f16")))
    write_npy(outdir, "dt_c32", long_double([1 + 2j, -0.5j], "<c32"))
    write_npy(outdir, "dt_c32_be", long_double([3 - 1j], ">c32"))
    # Structured: numpy's list of tuples, written by np.save from each way
    # of making one.
    write_npy(outdir, "dt_rec_dict", records(rng, {"names": ["a", "b"], "formats": ["<i4", "<f8"],
                                                    "offsets": [0, 8], "itemsize": 24}, (3,)))
    write_npy(outdir, "dt_rec_offsets", records(rng, {"names": ["x", "y", "z"],
                                                       "formats": ["u1", "<M8[s]", "<U2"],
                                                       "offsets": [2, 8, 16], "itemsize": 40}, (2,)))
    write_npy(outdir, "dt_rec_aligned", records(rng, np.dtype([("a", "u1"), ("b", "<i4"), ("c", "<f8")],
                                                              align=True), (4,)))
    write_npy(outdir, "dt_rec_nested", records(rng, NESTED, (2,)))
    write_npy(outdir, "dt_rec_nested_fortran", np.asfortranarray(records(rng, NESTED, (2, 3))))
    write_npy(outdir, "dt_rec_be", records(rng, [("a", ">i4"), ("b", ">f8"), ("c", ">U2"),
                                                 ("d", ">M8[s]"), ("e", ">f16")], (3,)))
    write_npy(outdir, "dt_rec_deep", records(rng, [("a", [("b", [("c", [("d", [("e", "<i2")])])])]),
                                                   ("f", "u1")], (2,)))
    write_npy(outdir, "dt_rec_latin1", records(rng, [("é", "<i2"), ("ñ", "<i2")], (2,)))    # 1.0
    write_npy(outdir, "dt_rec_utf8", records(rng, [("é", "<i4"), ("名前", "<f4")], (2,)))  # 3.0
    write_npy(outdir, "dt_rec_escapes", records(rng, [("it's", "<i4"), ("back\\slash", "<i4"),
                                                      ("new\nline", "u1"), ("both'\"", "u1"),
                                                      ("tab\t\x01", "u1")], (2,)))
    write_npy(outdir, "dt_rec_empty", np.zeros(4, dtype=[]))
    write_npy(outdir, "dt_rec_S0", np.zeros(2, dtype=[("a", "S0"), ("b", "<i4")]))
    write_npy(outdir, "dt_rec_zero", records(rng, [("a", "<i4"), ("b", "<U3")], (0, 2)))
    write_npy(outdir, "dt_rec_v2", records(rng, [("f%d" % i, "<i2") for i in range(5000)], (1,)))
    # A one-character type code, as an older writer may put it: numpy
    # reads 'g' as its long double.
    a = long_double([0.25, 8.0], "<f16")
    blob = npy_raw("{'descr': 'g', 'fortran_order': False, 'shape': (2,), }" + " " * 69 + "\n",
                   a.tobytes())
    e = entry("dt_typecode_g", a, blob)
    e["descr"] = "g"  # as written; numpy's own is '<f16'
    write(outdir, "dt_typecode_g.npy", blob, [e])


def numpy_dtypes_raw(outdir):
    """Descrs with no tensor form: served raw with a problem."""
    def w(stem, header, data, shape, problem, **more):
        blob = npy_raw(header, data)
        off = header_len(blob)
        write(outdir, stem + ".npy", blob, [dict({
            "name": stem, "dtype": None, "shape": shape, "nbytes": len(blob) - off,
            "sha256": hashlib.sha256(blob[off:]).hexdigest(), "data_offset": off, "problem": problem},
            **more)])
    a = np.array([(1, None)], dtype=[("a", "<i4"), ("o", "O")])
    blob = npy_bytes(a)
    e = entry("dtraw_object_field", a, blob)
    e["problem"] = "objects"
    write(outdir, "dtraw_object_field.npy", blob, [e])
    w("dtraw_dup_names", "{'descr': [('a', '<i4'), ('a', '<f4')], 'fortran_order': False, "
      "'shape': (1,), }\n", bytes(8), [1], "twice")
    w("dtraw_huge_item", "{'descr': '<U1000000000', 'fortran_order': False, 'shape': (1,), }\n",
      bytes(8), [1], "no tensor form")
    w("dtraw_too_deep", "{'descr': " + "[('a', " * 20 + "'<i4'" + ")]" * 20 +
      ", 'fortran_order': False, 'shape': (1,), }\n", bytes(4), [1], "deeper",
      modelfs_bound=True)  # numpy reads it: records nest at most 16 deep in modelfs


def npz_members(outdir, fname, compression, first):
    """numpy's dtypes as members, and every kind of member np.load lists:
    '.npy' (key ''), a name holding a NUL (np.load cuts it there: key
    'nul'), an array without .npy, bytes that are not an array (a '.npy'
    name too), a directory entry. The zip is written by zipfile and the
    NUL put into the name afterwards (zipfile would cut it)."""
    rng = np.random.default_rng(300)
    comp = "stored" if compression == zipfile.ZIP_STORED else "deflate"
    members = [("when.npy", times(rng, "<M8[ns]", (3,))), ("text.npy", texts(rng, ">U4", (2, 2))),
               ("blob.npy", np.array([b"ab", b"cdefg"], "S7")), ("rec.npy", records(rng, NESTED, (3,))),
               ("ld.npy", long_double([1.5, -3.0], "<f16")),
               ("recf.npy", np.asfortranarray(records(rng, [("a", "<i2"), ("b", "S3")], (2, 3)))),
               (".npy", np.arange(4, dtype="<i4")), ("nul.npy@hidden", np.arange(3, dtype="<f8")),
               ("plain", np.arange(5, dtype="<u2")), ("notes.txt", b"not an array\n"),
               ("fake.npy", b"\x93NUMP but not quite"), ("sub/", b"")]
    # The member named `first` first (the probe reads the first name).
    at = [m[0] for m in members].index(first)
    members = members[at:] + members[:at]
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w", compression=compression) as z:
        for name, v in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = compression
            z.writestr(info, npy_bytes(v) if isinstance(v, np.ndarray) else v)
    data = f.getvalue().replace(b"nul.npy@hidden", b"nul.npy\0hidden")
    path = os.path.join(outdir, fname)
    with open(path, "wb") as out:
        out.write(data)
    # The expectation from what np.load gives for each key.
    entries = []
    with np.load(path) as npz, zipfile.ZipFile(path) as z:
        for key, info in zip(npz.files, z.infolist()):
            v = npz[key]
            if isinstance(v, np.ndarray):
                entries.append(entry(key, v, z.read(info), member=info.filename, compression=comp))
            else:
                entries.append(raw_entry(key, v, info.filename, comp))
    write(outdir, fname, data, entries)


def npy_raw(header_text, data=b"", version=1, length=None):
    h = header_text.encode("latin1")
    if version == 1:
        pre = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h) if length is None else length)
    else:
        pre = b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", len(h) if length is None else length)
    return pre + h + data


def bad(outdir):
    def w(fname, blob, error):
        write(outdir, fname, blob, expect="corrupt", error=error)

    w("bad_absurd_shape.npy",
      npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }\n"),
      "overflows")
    w("bad_huge_shape.npy",
      npy_raw("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000,), }\n", bytes(16)),
      "truncated")
    w("bad_many_dims.npy",
      npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }\n" % ("1," * 100)),
      "at most 64")
    w("bad_header_len.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n",
                                    bytes(4), version=2, length=0x7fffffff), "at most")
    w("bad_header_past_end.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n",
                                         b"", version=1, length=5000), "runs past the end")
    w("bad_extra_key.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n",
                                   bytes(4)), "exactly")
    w("bad_expression.npy", npy_raw("{'descr': '<f4', 'fortran_order': __import__('os'), 'shape': (1,)}\n",
                                    bytes(4)), "dict literal")
    w("bad_dup_key.npy", npy_raw("{'descr': '<f4', 'descr': '<f4', 'shape': (1,)}\n", bytes(4)),
      "twice")
    w("bad_deep.npy", npy_raw("{'descr': " + "[" * 100 + "]" * 100 + ", 'fortran_order': False, "
                              "'shape': (1,)}\n", bytes(4)), "nesting")
    w("bad_version.npy", b"\x93NUMPY\x09\x00" + bytes(8), "unsupported .npy version")
    # np.load does not read a dict (it is how dtype() takes a record, not
    # a descr np.save writes).
    w("bad_dict_descr.npy", npy_raw("{'descr': {'names': ['a'], 'formats': ['<i4']}, "
                                    "'fortran_order': False, 'shape': (1,), }\n", bytes(4)),
      "neither a dtype string nor a list")
    w("bad_records_truncated.npy",
      npy_raw("{'descr': [('a', '<i4'), ('b', '<f8', (1000,))], 'fortran_order': False, "
              "'shape': (1000,), }\n", bytes(64)), "truncated")
    # An npz member whose central directory claims more than it holds: the
    # header then describes more bytes than the member has.
    blob = npy_bytes(sample("float32", (16,), 5))
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
        info = zipfile.ZipInfo("a.npy", date_time=(1980, 1, 1, 0, 0, 0))
        z.writestr(info, blob[:-32])
    data = bytearray(f.getvalue())
    w("bad_member_short.npz", bytes(data), "truncated")
    # Sizes that disagree between the local header and the central directory.
    cd = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, cd + 20, len(blob) + 64)   # compressed size
    w("bad_member_sizes.npz", bytes(data), "")
    # A small array followed by 1 MB of zeros in a Deflate member: a bomb
    # whose decoded size the array does not account for.
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo("x.npy", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, npy_bytes(np.array([1.0], dtype="<f4")) + bytes(1 << 20))
    w("bad_deflate_trailing.npz", f.getvalue(), "after the array")


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    good(argv[1])
    bad(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
