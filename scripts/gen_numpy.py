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
  gen_records.npy        a structured dtype: served raw with a problem
  gen_stored.npz         np.savez: keys with / . : and unicode, every dtype
  gen_deflate.npz        np.savez_compressed, with a Fortran and a big-endian member
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
import zipfile

import numpy as np
import numpy.lib.format as fmt

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


def entry(name, a, blob, **more):
    """The expectation for array `a` as written in `blob` (an .npy)."""
    off = header_len(blob)
    stored = blob[off:]
    fortran = a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous
    simple = a.dtype.names is None and a.dtype.kind != "O"
    e = {"name": name,
         "dtype": a.dtype.newbyteorder("=").name if simple else None,
         "shape": list(a.shape), "nbytes": len(stored),
         "sha256": hashlib.sha256(stored).hexdigest(),
         "descr": fmt.dtype_to_descr(a.dtype) if a.dtype.names is None else
         [list(x) for x in fmt.dtype_to_descr(a.dtype)],
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
