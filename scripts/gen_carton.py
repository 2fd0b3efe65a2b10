#!/usr/bin/python3
"""Writes modelfs's own Carton test packages, each with NAME.expect.json
(schema fixture-expect/1, like ../shared/fixtures/carton, plus the keys
below), for tests/mount/formats/carton.py and the fuzz corpus.

    /usr/bin/python3 scripts/gen_carton.py OUTDIR

The zip files are written byte by byte (struct), not with zipfile: zstd
members (method 93, python3-zstandard), ZIP64 records, Unix symlink
attributes, and hostile names (NUL, backslash, "..") need full control.
Layout follows docs/specification/format.md and Carton's packer (save.rs):
carton.toml, misc/, tensor_data/ (tensor_{i}.bin|.toml + index.toml), model/,
then MANIFEST (sorted "path=sha256" lines of every file but MANIFEST and
LINKS) and LINKS, both stored. Output is deterministic.

  gen_mixed.carton      stored, deflate and zstd members; numeric, string
                        and nested tensors; a symlink member; datetimes and
                        unknown tables in carton.toml
  gen_zip64.carton      ZIP64 end records and extra fields on every member
  gen_minimal.carton    carton.toml and model/ only: no MANIFEST, no tensor_data
  gen_tampered.carton   members (and a string tensor's .toml) that differ
                        from MANIFEST, a member that decodes past its size
  gen_slip.carton       "..", absolute, backslash, NUL, "." and empty names,
                        a 300-byte component, duplicates, an escaping symlink
  gen_missing.carton    a MANIFEST line whose file is nowhere
  gen_flagged.carton    index.toml entries served raw with a `problem`
  gen_links.carton      a LINKS file (content in gen_links.carton.links/)
  gen_absurd.carton     a declared size no deflate data can reach (refused)
  gen_truncated.carton  cut before its central directory (refused)
  gen_plain.zip         a zip without carton.toml (not a carton)
  gen_unpacked/         an unpacked carton folder (symlinks, a FIFO)

Keys beyond the fixtures' (all optional):
  "error_contains"   refused ("corrupt"/"unknown"): text the message has
  "unreadable"       {path in the mount: text of the reason}: EIO on read,
                     and modelfs-ls --verify names it
  "hidden"           names that must appear nowhere in the mount
  "symlinks"         {member: the member it serves}
  "duplicates"       {member: sha256 of the copy that must be served}
  "warnings_contain" texts that metadata.warnings must hold
  "problem"          (in a tensor) the entry is flagged
"""

import datetime
import hashlib
import json
import os
import shutil
import struct
import sys
import tomllib
import zlib

try:
    import zstandard
except ImportError:
    print("gen_carton: python3-zstandard is missing (apt-get install python3-zstandard)",
          file=sys.stderr)
    sys.exit(3)
import numpy as np

METHODS = {"stored": 0, "deflate": 8, "zstd": 93}
FF32 = 0xFFFFFFFF
DOS_DATE, DOS_TIME = (0 << 9) | (1 << 5) | 1, 0   # 1980-01-01 00:00
UNIX_FILE, UNIX_LINK = 0o100644 << 16, 0o120777 << 16


def sha(b):
    return hashlib.sha256(b).hexdigest()


def compress(method, data):
    if method == "stored":
        return data
    if method == "deflate":
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush()
    if method == "zstd":
        return zstandard.ZstdCompressor(level=3).compress(data)
    raise ValueError(method)


class Member:
    """One zip entry. `name` may be bytes (hostile names); `declared` and
    `comp` override the size and compressed bytes written."""

    def __init__(self, name, data, method="deflate", symlink=False, declared=None, comp=None):
        self.name = name.encode() if isinstance(name, str) else name
        self.data, self.method, self.symlink = data, method, symlink
        self.declared, self.comp = declared, comp


def zip_bytes(members, zip64=False):
    out, cd = bytearray(), bytearray()
    for m in members:
        comp = m.comp if m.comp is not None else compress(m.method, m.data)
        size = m.declared if m.declared is not None else len(m.data)
        crc = zlib.crc32(m.data)
        method = METHODS[m.method]
        flags = 0x800 if any(b >= 0x80 for b in m.name) else 0
        need = 63 if method == 93 else (45 if zip64 else 20)
        lho = len(out)
        if zip64:
            lextra = struct.pack("<HHQQ", 1, 16, size, len(comp))
            s32 = c32 = FF32
        else:
            lextra, s32, c32 = b"", size, len(comp)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, need, flags, method, DOS_TIME, DOS_DATE,
                           crc, c32, s32, len(m.name), len(lextra)) + m.name + lextra + comp
        cextra = struct.pack("<HHQQQ", 1, 24, size, len(comp), lho) if zip64 else b""
        attrs = UNIX_LINK if m.symlink else UNIX_FILE
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, need, flags, method, DOS_TIME,
                          DOS_DATE, crc, c32, s32, len(m.name), len(cextra), 0, 0, 0, attrs,
                          FF32 if zip64 else lho) + m.name + cextra
    cd_off, n = len(out), len(members)
    out += cd
    if zip64:
        e64 = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 45, 0, 0, n, n, len(cd), cd_off)
        out += struct.pack("<IIQI", 0x07064B50, 0, e64, 1)
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, FF32, FF32, 0)
    else:
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(cd), cd_off, 0)
    return bytes(out)


def toml_str(s):
    # JSON's escapes are TOML's; DEL must be escaped in TOML basic strings.
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def manifest_bytes(files, exclude=("MANIFEST", "LINKS")):
    return "".join("%s=%s\n" % (p, sha(d)) for p, d in
                   sorted(files.items(), key=lambda kv: kv[0].encode())
                   if p not in exclude).encode()


def plain(v):
    """tomllib's value with dates and times as the ISO text model.json
    keeps (the generator writes them so that isoformat() gives that text)."""
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    return v


class Carton:
    """A carton under construction: files in packing order, tensors in index
    order, and what the expectation says about them."""

    def __init__(self, toml_text, method="deflate"):
        self.method = method
        self.toml_text = toml_text
        self.files = {"carton.toml": toml_text.encode()}
        self.methods = {}
        self.tensors, self.index = [], []
        self.linked, self.links_urls = {}, {}

    def add(self, path, data, method=None):
        self.files[path] = data
        if method:
            self.methods[path] = method

    def tensor(self, name, arr, method=None):
        i = len(self.index)
        f = "tensor_%d.bin" % i
        # One copy (tobytes): a little-endian contiguous array is not copied
        # before it, as astype would (512 MiB in mount.stuck).
        data = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
        self.add("tensor_data/" + f, data, method)
        self.index.append({"name": name, "dtype": str(arr.dtype), "shape": list(arr.shape), "file": f})
        self.tensors.append({"name": name, "dtype": str(arr.dtype), "shape": list(arr.shape),
                             "file": f, "nbytes": len(data), "sha256": sha(data)})

    def strings(self, name, values, shape, method=None):
        i = len(self.index)
        f = "tensor_%d.toml" % i
        data = ("data = [%s]\n" % ", ".join(toml_str(s) for s in values)).encode()
        self.add("tensor_data/" + f, data, method)
        self.index.append({"name": name, "dtype": "string", "shape": shape, "file": f})
        self.tensors.append({"name": name, "dtype": "string", "shape": shape, "file": f,
                             "nbytes": None, "sha256": None, "values": values,
                             "file_sha256": sha(data)})

    def nested(self, name, inner):
        self.index.append({"name": name, "dtype": "nested", "inner": inner})
        self.tensors.append({"name": name, "dtype": "nested", "shape": None, "file": None,
                             "nbytes": None, "sha256": None, "inner": inner})

    def index_toml(self):
        out = []
        for e in self.index:
            out.append("[[tensor]]")
            out.append("name = %s" % toml_str(e["name"]))
            out.append("dtype = %s" % toml_str(e["dtype"]))
            if "shape" in e:
                out.append("shape = %s" % json.dumps(e["shape"]))
            if "file" in e:
                out.append("file = %s" % toml_str(e["file"]))
            out.append("inner = [%s]" % ", ".join(toml_str(n) for n in e.get("inner", [])))
            out.append("")
        return "\n".join(out).encode()

    def link(self, path, data, urls):
        self.linked[path] = data
        self.links_urls[sha(data)] = urls

    def finish(self, manifest=True):
        """{path: bytes} of every member, MANIFEST (and LINKS) included."""
        if self.index:
            self.files["tensor_data/index.toml"] = self.index_toml()
        files = dict(self.files)
        if manifest:
            everything = dict(files)
            everything.update(self.linked)
            files["MANIFEST"] = manifest_bytes(everything)
        if self.links_urls:
            lines = ["version = 1", "", "[urls]"]
            lines += ["%s = [%s]" % (s, ", ".join(toml_str(u) for u in us))
                      for s, us in self.links_urls.items()]
            files["LINKS"] = ("\n".join(lines) + "\n").encode()
        return files

    def order(self, files):
        """Carton's packing order."""
        def rank(p):
            for i, pre in enumerate(("carton.toml", "misc/", "tensor_data/", "model/")):
                if p == pre or p.startswith(pre):
                    return i
            return 4 if p not in ("MANIFEST", "LINKS") else 5
        return sorted(files, key=lambda p: (rank(p), p == "LINKS"))

    def members(self, files):
        return [Member(p, files[p], "stored" if p in ("MANIFEST", "LINKS") else
                       self.methods.get(p, self.method)) for p in self.order(files)]

    def expect(self, name, blob, files, members, **extra):
        e = {"schema": "fixture-expect/1", "fixture": name, "format": "carton",
             "expect": "readable",
             "made_by": "scripts/gen_carton.py (modelfs), byte-by-byte zip writer",
             "file_size": len(blob), "file_sha256": sha(blob)}
        md = {"carton_toml": plain(tomllib.loads(self.toml_text))}
        if "MANIFEST" in files:
            man = {}
            for line in files["MANIFEST"].decode().splitlines():
                p, s = line.rsplit("=", 1)
                man.setdefault(p, s)
            md["manifest"] = man
            md["manifest_sha256"] = sha(files["MANIFEST"])
        if "LINKS" in files:
            md["links"] = tomllib.loads(files["LINKS"].decode())
        md["linked_only_files"] = sorted(self.linked)
        e["metadata"] = md
        e["linked_only_detail"] = {p: {"size": len(d), "sha256": sha(d)} for p, d in self.linked.items()}
        e["zip_entries"] = [{"name": m.name.decode(), "size": len(m.data), "sha256": sha(m.data),
                             "compression": m.method} for m in members]
        e["tensor_count"] = len(self.tensors)
        e["tensors"] = self.tensors
        e.update(extra)
        return e


def write(out, name, blob, expect):
    with open(os.path.join(out, name), "wb") as f:
        f.write(blob)
    with open(os.path.join(out, name + ".expect.json"), "w") as f:
        json.dump(expect, f, indent=1, ensure_ascii=False)
        f.write("\n")


TOML_MIXED = '''spec_version = 1
model_name = "gen/mixed"
short_description = "stored, deflate and zstd members"
released = 2024-01-02T03:04:05+01:00
built_on = 2024-01-02
built_at = 2024-01-02T03:04:05
daily_at = 07:32:00
required_platforms = []

[[input]]
name = "x"
dtype = "float32"
shape = ["batch", 4]

[[output]]
name = "y"
dtype = "int32"
shape = "*"

[runner]
runner_name = "python"
required_framework_version = "=3.11"
runner_compat_version = 1

[runner.opts]
threads = 4
ratio = 0.25
fast = false
list = [1, "two", 3.5]

[unknown_table.deep]
kept = "yes"
numbers = [[1, 2], [3]]
'''


def runner_toml(name):
    return ('spec_version = 1\nmodel_name = %s\n\n[runner]\nrunner_name = "python"\n'
            'required_framework_version = "=3.11"\nrunner_compat_version = 1\n\n'
            '[runner.opts]\nentrypoint_package = "main"\nentrypoint_fn = "get_model"\n'
            % toml_str(name))


def gen_mixed(out, rng):
    c = Carton(TOML_MIXED)
    c.add("misc/readme.md", b"# gen/mixed\n", "stored")
    c.tensor("weights/w0", rng.standard_normal((3, 4)).astype(np.float32), "zstd")
    c.tensor("bias", np.arange(-4, 4, dtype=np.int32), "stored")
    c.tensor("half.u16", np.arange(9, dtype=np.uint16).reshape(3, 3), "deflate")
    c.tensor("scalar", np.array(2.5, dtype=np.float64), "zstd")
    c.tensor("empty", np.zeros((2, 0), dtype=np.int8), "stored")
    c.strings("words", ["zero", "ünï", "", 'q"\\', "tab\there", "\x7f del"], [2, 3], "zstd")
    c.tensor("_carton_nested_inner_@tensor_data/ragged_0", np.arange(3, dtype=np.int64), "deflate")
    c.strings("_carton_nested_inner_@tensor_data/ragged_1", ["a", "b"], [2], "deflate")
    c.nested("ragged", ["_carton_nested_inner_@tensor_data/ragged_0",
                        "_carton_nested_inner_@tensor_data/ragged_1"])
    main = b"def get_model():\n    return None\n"
    c.add("model/main.py", main, "zstd")
    c.add("model/weights/big.bin", rng.integers(0, 4, 16384, dtype=np.uint8).tobytes(), "zstd")
    c.add("model/sub dir/ünicode name.txt", "naïve\n".encode(), "deflate")
    # A symlink member, as Carton's packer stores links inside model/: its
    # data is the relative target, its MANIFEST line the target's sha256.
    c.add("model/link.py", main)
    files = c.finish()
    members = c.members(files)
    for m in members:
        if m.name == b"model/link.py":
            m.data, m.symlink, m.method = b"main.py", True, "stored"
    blob = zip_bytes(members)
    e = c.expect("gen_mixed.carton", blob, files, members, symlinks={"model/link.py": "model/main.py"})
    for z in e["zip_entries"]:
        if z["name"] == "model/link.py":  # served as its target
            z["size"], z["sha256"] = len(main), sha(main)
    write(out, "gen_mixed.carton", blob, e)


def gen_zip64(out, rng):
    c = Carton(runner_toml("gen/zip64"), "zstd")
    c.tensor("t", rng.standard_normal(16).astype(np.float32))
    c.add("model/main.py", b"print('zip64')\n")
    files = c.finish()
    members = c.members(files)
    blob = zip_bytes(members, zip64=True)
    write(out, "gen_zip64.carton", blob, c.expect("gen_zip64.carton", blob, files, members))


def gen_minimal(out, rng):
    c = Carton(runner_toml("gen/minimal"), "stored")
    c.add("model/main.py", b"def get_model():\n    return 1\n")
    files = c.finish(manifest=False)
    members = c.members(files)
    blob = zip_bytes(members)
    write(out, "gen_minimal.carton", blob, c.expect("gen_minimal.carton", blob, files, members))


def gen_tampered(out, rng):
    c = Carton(runner_toml("gen/tampered"), "deflate")
    c.tensor("good", np.arange(4, dtype=np.float32), "stored")
    c.tensor("bad.stored", np.arange(8, dtype=np.int16), "stored")
    c.tensor("bad.zstd", np.arange(6, dtype=np.float64), "zstd")
    c.strings("bad.strings", ["x", "y"], [2])
    c.add("model/weights.bin", bytes(range(256)) * 4, "stored")
    c.add("model/main.py", b"pass\n", "zstd")
    files = c.finish()
    honest = dict(files)
    # Change the bytes after MANIFEST was written (same sizes).
    files["model/weights.bin"] = b"\xff" + files["model/weights.bin"][1:]
    files["tensor_data/tensor_1.bin"] = files["tensor_data/tensor_1.bin"][::-1]
    files["tensor_data/tensor_2.bin"] = bytes(len(files["tensor_data/tensor_2.bin"]))
    files["tensor_data/tensor_3.toml"] = files["tensor_data/tensor_3.toml"].replace(b'"y"', b'"z"')
    members = c.members(files)
    # A member whose deflate data holds more than its declared size.
    over = b"0123456789" * 10
    members.insert(-1, Member("misc/overlong.txt", over[:10], "deflate", comp=compress("deflate", over)))
    blob = zip_bytes(members)
    e = c.expect("gen_tampered.carton", blob, honest, [m for m in members if m.name != b"misc/overlong.txt"],
                 unreadable={
                     "files/model/weights.bin": "does not match MANIFEST",
                     "files/tensor_data/tensor_1.bin": "does not match MANIFEST",
                     "files/tensor_data/tensor_2.bin": "does not match MANIFEST",
                     "files/tensor_data/tensor_3.toml": "does not match MANIFEST",
                     "tensors/bad.stored": "does not match MANIFEST",
                     "tensors/bad.zstd": "does not match MANIFEST",
                     "tensors/bad.strings": "does not match MANIFEST",
                     "files/misc/overlong.txt": "more than the declared",
                 })
    e["tensors"][3]["values"] = ["x", "z"]  # what the (tampered) file says; never served
    write(out, "gen_tampered.carton", blob, e)


def gen_slip(out, rng):
    c = Carton(runner_toml("gen/slip"), "deflate")
    c.add("model/main.py", b"safe\n")
    files = c.finish()
    # A MANIFEST line with an escaping path, ignored.
    files["MANIFEST"] += b"../manifest_escape.txt=" + sha(b"x").encode() + b"\n"
    members = c.members(files)
    hostile = [
        Member(b"../evil.txt", b"evil\n"),
        Member(b"/abs.txt", b"abs\n"),
        Member(b"model/../../escaped_up.txt", b"up\n"),
        Member(b"model\\back.txt", b"back\n"),
        Member(b"model/nul\x00.txt", b"nul\n"),
        Member(b"./dot.txt", b"dot\n"),
        Member(b"model//double.txt", b"double\n"),
        Member(b"", b"empty name\n"),
        Member(b"model/" + b"L" * 300 + b".txt", b"long\n"),
        Member(b"model/dup.txt", b"first\n"),
        Member(b"model/dup.txt", b"second\n", "stored"),
        Member(b"model/escape", b"../../../etc/passwd", "stored", symlink=True),
        Member(b"model/main.py/inner.txt", b"a file is in the way\n"),
    ]
    allm = members[:-1] + hostile + members[-1:]
    blob = zip_bytes(allm)
    kept = [m for m in members] + [hostile[9]]
    e = c.expect("gen_slip.carton", blob, files, kept,
                 hidden=["evil.txt", "abs.txt", "escaped_up.txt", "back.txt", "model\\back.txt", "nul",
                         "dot.txt", "double.txt", "L" * 300 + ".txt", "manifest_escape.txt",
                         "inner.txt"],
                 duplicates={"model/dup.txt": sha(b"first\n")},
                 unreadable={"files/model/escape": "not a file of the carton"},
                 warnings_contain=["unsafe name", "appears again", "manifest_escape.txt",
                                   "NUL", "in the way"])
    e["metadata"]["manifest"].pop("../manifest_escape.txt", None)
    write(out, "gen_slip.carton", blob, e)


def gen_missing(out, rng):
    c = Carton(runner_toml("gen/missing"), "zstd")
    c.add("model/main.py", b"pass\n")
    c.add("model/gone.bin", b"never packed\n")
    files = c.finish()
    del files["model/gone.bin"]
    members = c.members(files)
    blob = zip_bytes(members)
    e = c.expect("gen_missing.carton", blob, files, members,
                 unreadable={"files/model/gone.bin": "neither in the carton nor in LINKS"})
    e["metadata"]["missing_files"] = ["model/gone.bin"]
    write(out, "gen_missing.carton", blob, e)


def gen_flagged(out, rng):
    c = Carton(runner_toml("gen/flagged"), "deflate")
    c.tensor("ok", np.arange(3, dtype=np.int32))
    c.tensor("short", np.arange(3, dtype=np.int32))
    c.index[-1]["shape"] = [4]          # 16 bytes declared, 12 stored
    c.tensors[-1].update(dtype="bytes", shape=[12], problem=True)
    c.tensor("odd", np.arange(2, dtype=np.int32))
    c.index[-1]["dtype"] = "complex256"
    c.tensors[-1].update(dtype="bytes", shape=[8], problem=True)
    c.index.append({"name": "nofile", "dtype": "float32", "shape": [1], "file": "absent.bin"})
    c.tensors.append({"name": "nofile", "dtype": "bytes", "shape": [0], "nbytes": 0,
                      "sha256": sha(b""), "problem": True})
    c.strings("count", ["a", "b", "c"], [2, 2])
    c.tensors[-1].update(shape=[3], problem=True)
    c.nested("holes", ["ok", "no such tensor"])
    c.tensors[-1]["problem"] = True
    files = c.finish()
    members = c.members(files)
    blob = zip_bytes(members)
    write(out, "gen_flagged.carton", blob, c.expect("gen_flagged.carton", blob, files, members))


LINKED_DATA = np.arange(5000, dtype=np.float32).tobytes()


def links_carton(urls, name="gen_links.carton", data=LINKED_DATA):
    """A carton whose model/linked.bin lives only behind `urls` (the mount
    tests make their own with a 127.0.0.1 server's URLs)."""
    c = Carton(runner_toml("gen/links"), "zstd")
    c.tensor("local", np.arange(4, dtype=np.float32))
    c.add("model/main.py", b"pass\n")
    c.link("model/linked.bin", data, urls)
    files = c.finish()
    members = c.members(files)
    blob = zip_bytes(members)
    return blob, c.expect(name, blob, files, members)


def gen_links(out, rng):
    # Port 9 (discard) on the loopback: nothing listens, nothing leaves the host.
    blob, e = links_carton(["http://127.0.0.1:9/" + sha(LINKED_DATA)])
    write(out, "gen_links.carton", blob, e)
    d = os.path.join(out, "gen_links.carton.links")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, sha(LINKED_DATA)), "wb") as f:
        f.write(LINKED_DATA)


def gen_absurd(out, rng):
    c = Carton(runner_toml("gen/absurd"), "deflate")
    c.add("model/main.py", b"pass\n")
    files = c.finish()
    members = c.members(files)
    members[1].declared = 0xFFFFFFF0   # 4 GiB from a few bytes of deflate
    blob = zip_bytes(members)
    write(out, "gen_absurd.carton", blob,
          {"schema": "fixture-expect/1", "fixture": "gen_absurd.carton", "format": "carton",
           "expect": "corrupt", "error_contains": "declares 4294967280 bytes",
           "file_size": len(blob), "tensor_count": 0, "tensors": []})


def gen_truncated(out, rng):
    c = Carton(runner_toml("gen/truncated"), "deflate")
    c.add("model/main.py", b"pass\n")
    files = c.finish()
    blob = zip_bytes(c.members(files))
    blob = blob[:len(blob) // 2]
    write(out, "gen_truncated.carton", blob,
          {"schema": "fixture-expect/1", "fixture": "gen_truncated.carton", "format": "carton",
           "expect": "corrupt", "error_contains": "end of central directory",
           "file_size": len(blob), "tensor_count": 0, "tensors": []})


def gen_plain_zip(out, rng):
    blob = zip_bytes([Member("hello.txt", b"not a carton\n")])
    write(out, "gen_plain.zip", blob,
          {"schema": "fixture-expect/1", "fixture": "gen_plain.zip", "format": "carton",
           "expect": "unknown", "error_contains": "not a model file",
           "file_size": len(blob), "tensor_count": 0, "tensors": []})


def gen_unpacked(out, rng):
    root = os.path.join(out, "gen_unpacked")
    shutil.rmtree(root, ignore_errors=True)
    c = Carton(runner_toml("gen/unpacked"))
    c.tensor("w", rng.standard_normal((2, 2)).astype(np.float32))
    c.strings("s", ["α", "β"], [2])
    c.add("model/main.py", b"def get_model():\n    pass\n")
    c.add("model/deep/er/x.json", b"{}\n")
    files = c.finish()
    for p, d in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, p)) or root, exist_ok=True)
        with open(os.path.join(root, p), "wb") as f:
            f.write(d)
    # Inside link: served as its target. Outside link and FIFO: skipped.
    os.symlink("main.py", os.path.join(root, "model/alias.py"))
    os.symlink("/etc/hostname", os.path.join(root, "model/outside"))
    os.mkfifo(os.path.join(root, "model/pipe"))
    listed = dict(files)
    listed["model/alias.py"] = files["model/main.py"]
    e = c.expect("gen_unpacked", b"", files, [])
    del e["zip_entries"], e["file_size"], e["file_sha256"]
    e["directory_files"] = [{"name": p, "size": len(d), "sha256": sha(d)}
                            for p, d in sorted(listed.items())]
    e["hidden"] = ["outside", "pipe"]
    e["warnings_contain"] = ["model/outside", "model/pipe"]
    with open(root + ".expect.json", "w") as f:
        json.dump(e, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20240601)
    for g in (gen_mixed, gen_zip64, gen_minimal, gen_tampered, gen_slip, gen_missing,
              gen_flagged, gen_links, gen_absurd, gen_truncated, gen_plain_zip, gen_unpacked):
        g(out, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
