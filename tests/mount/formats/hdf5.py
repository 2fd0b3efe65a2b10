"""HDF5 (Keras / TensorFlow weights): the generic checks of
scripts/gen_hdf5.py's models (every dataset's bytes, dtype and shape as
h5py reads them), and its own: every attribute of every group and dataset
in model.json equal to h5py's value (strings decoded, arrays as nested
lists), Keras's model_config parsed under metadata.keras, each served
tensor's bytes equal to what h5dump (hdf5-tools, a second reader) writes
of the dataset; hostile files (EXTRAS): object header continuations and
B-trees that loop, heap offsets past the end, huge counts, a file cut
short, extensible arrays and v2 B-trees of chunks whose addresses pass
the end, loop or whose counts lie, bad checksums (patched structures
re-signed with lookup3 where the check behind the checksum is meant),
each refused with exit 5 and one line naming the file.
"""
import errno
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile

import mfstest

try:
    import h5py
    import numpy as np
except ImportError:
    h5py = None

DIRS = ("gen/hdf5",)


def py_value(v):
    """An attribute as h5py reads it, as model.json holds it."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    if isinstance(v, np.ndarray):
        return [py_value(x) for x in v] if v.ndim > 0 else py_value(v[()])
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def attrs_of(obj):
    out = {}
    for k in obj.attrs.keys():
        v = obj.attrs[k]
        # Complex attributes are a note in model.json, not numbers.
        kind = getattr(getattr(v, "dtype", None), "kind", "")
        out[k] = "(compound of %d bytes (h5py's complex: r, i): not read by modelfs)" % \
            v.dtype.itemsize if kind == "c" else py_value(v)
    return out


def h5dump_bytes(model, name, tmp):
    """The dataset's bytes as h5dump writes them in the file's own byte order."""
    out = os.path.join(tmp, "d.bin")
    if os.path.exists(out):
        os.unlink(out)
    r = subprocess.run(["h5dump", "-d", "/" + name, "-b", "FILE", "-o", out, model],
                       capture_output=True, timeout=60)
    if r.returncode != 0 or not os.path.exists(out):
        return None
    with open(out, "rb") as f:
        return f.read()


def check_model(c, t, model, expect, mount):
    if h5py is None:
        c.skip("no h5py: HDF5 attribute checks")
        return
    if expect is None or expect.get("expect") != "readable":
        return
    try:
        mnt = mount()
    except RuntimeError as err:
        c.check(False, "%s: mount: %s" % (model, err))
        return
    name = os.path.basename(model)
    doc = json.loads(mfstest.read_bytes(os.path.join(mnt, "model.json")))
    if model.endswith(".keras"):
        c.equal(doc["metadata"].get("keras"), expect["keras"],
                "%s: metadata.keras vs config.json and metadata.json" % name)
        c.equal(doc["metadata"].get("container"), "keras", "%s: container" % name)
        return
    meta = doc["metadata"].get("attributes", {})
    by_name = {x["name"]: x for x in doc["tensors"]}
    groups = {}
    with h5py.File(model, "r") as f:
        groups["/"] = attrs_of(f)

        def visit(n, o):
            if isinstance(o, h5py.Group):
                groups["/" + n] = attrs_of(o)
            elif n in by_name:
                c.equal(by_name[n].get("attributes", {}), attrs_of(o),
                        "%s: %s attributes vs h5py" % (name, n))
        f.visititems(visit)
        for g, want in groups.items():
            c.equal(meta.get(g, {}), want, "%s: group %s attributes vs h5py" % (name, g))
        cfg = f.attrs.get("model_config")
        if cfg is not None:
            c.equal(doc["metadata"].get("keras", {}).get("model_config"), json.loads(cfg),
                    "%s: metadata.keras.model_config vs the attribute's JSON" % name)
    if shutil.which("h5dump") is None:
        c.skip("no h5dump: HDF5 second-reader checks")
        return
    tmp = tempfile.mkdtemp(prefix="modelfs-h5-")
    try:
        # h5dump starts a process per dataset: a few per model suffice.
        served = [x for x in doc["tensors"] if "problem" not in x and x["nbytes"] > 0
                  and x["dtype"] != "string"][:4]
        for x in served:
            want = h5dump_bytes(model, x["name"], tmp)
            c.equal(mfstest.read_bytes(os.path.join(mnt, x["path"])), want,
                    "%s: %s bytes vs h5dump -b FILE" % (name, x["name"]))
    finally:
        shutil.rmtree(tmp)


def refused(c, build, path, what, contains, env):
    r = subprocess.run([os.path.join(build, "modelfs-ls"), path], capture_output=True, text=True,
                       env=env, timeout=60)
    c.equal(r.returncode, 5, what + " refused (modelfs-ls exit)")
    lines = r.stderr.strip().splitlines()
    c.check(len(lines) == 1 and path in lines[0] and contains in lines[0],
            "%s: one line naming the file and %r: %r" % (what, contains, r.stderr))


def patched(data, at, fmt, *values):
    b = bytearray(data)
    struct.pack_into(fmt, b, at, *values)
    return bytes(b)


def lookup3(data):
    """Bob Jenkins's lookup3 hashlittle (initial value 0): the checksum of
    HDF5's version 2 metadata, to re-sign a structure patched on purpose so
    that the check after the checksum is reached."""
    m = 0xffffffff

    def rot(x, k):
        return ((x << k) | (x >> (32 - k))) & m

    n = len(data)
    a = b = c = (0xdeadbeef + n) & m
    i = 0
    while n - i > 12:
        a = (a + int.from_bytes(data[i:i + 4], "little")) & m
        b = (b + int.from_bytes(data[i + 4:i + 8], "little")) & m
        c = (c + int.from_bytes(data[i + 8:i + 12], "little")) & m
        a = (a - c) & m; a ^= rot(c, 4); c = (c + b) & m   # noqa: E702
        b = (b - a) & m; b ^= rot(a, 6); a = (a + c) & m   # noqa: E702
        c = (c - b) & m; c ^= rot(b, 8); b = (b + a) & m   # noqa: E702
        a = (a - c) & m; a ^= rot(c, 16); c = (c + b) & m  # noqa: E702
        b = (b - a) & m; b ^= rot(a, 19); a = (a + c) & m  # noqa: E702
        c = (c - b) & m; c ^= rot(b, 4); b = (b + a) & m   # noqa: E702
        i += 12
    if n == i:
        return c
    tail = bytes(data[i:]) + bytes(12 - (n - i))
    a = (a + int.from_bytes(tail[0:4], "little")) & m
    b = (b + int.from_bytes(tail[4:8], "little")) & m
    c = (c + int.from_bytes(tail[8:12], "little")) & m
    c ^= b; c = (c - rot(b, 14)) & m   # noqa: E702
    a ^= c; a = (a - rot(c, 11)) & m   # noqa: E702
    b ^= a; b = (b - rot(a, 25)) & m   # noqa: E702
    c ^= b; c = (c - rot(b, 16)) & m   # noqa: E702
    a ^= c; a = (a - rot(c, 4)) & m    # noqa: E702
    b ^= a; b = (b - rot(a, 14)) & m   # noqa: E702
    c ^= b; c = (c - rot(b, 24)) & m   # noqa: E702
    return c


def signed_len(data, at, most=1 << 16):
    """The length of the checksummed structure at `at`: the first L whose
    checksum is the 4 bytes after it."""
    for n in range(6, min(most, len(data) - at - 4)):
        if lookup3(data[at:at + n]) == struct.unpack_from("<I", data, at + n)[0]:
            return n
    raise AssertionError("no checksum found at %d" % at)


def repatched(data, at, n, where, fmt, *values):
    """`data` patched at `where` inside the structure of `n` checksummed
    bytes at `at`, its checksum made right again."""
    b = bytearray(patched(data, where, fmt, *values))
    struct.pack_into("<I", b, at + n, lookup3(bytes(b[at:at + n])))
    return bytes(b)


def unlimited_file(path, maxshape, shape, chunks, **kw):
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("x", data=np.arange(int(np.prod(shape)), dtype="<i2").reshape(shape),
                         chunks=chunks, maxshape=maxshape, **kw)
    with open(path, "rb") as fh:
        return fh.read()


def hostile_indexes(tmp):
    """Extensible arrays and v2 B-trees of chunks patched (and re-signed,
    so that the checks past the checksums are reached)."""
    out = []
    ea = unlimited_file(os.path.join(tmp, "ea.h5"), (None, 4), (400, 4), (1, 4))
    hd = ea.index(b"EAHD")
    hn = 12 + 6 * 8 + 8                                     # 8-byte lengths and offsets
    assert signed_len(ea, hd, hn + 1) == hn
    out.append(("ea_checksum.h5", patched(ea, hd + 20, "<B", ea[hd + 20] ^ 1),
                "an extensible array header with a byte changed", "checksum does not match"))
    out.append(("ea_iblock_end.h5", repatched(ea, hd, hn, hd + hn - 8, "<Q", 1 << 40),
                "an extensible array index block past the end", "passes the end"))
    out.append(("ea_min_elems.h5", repatched(ea, hd, hn, hd + 9, "<B", 3),
                "an extensible array of data blocks of 3 elements", "impossible"))
    out.append(("ea_elem_size.h5", repatched(ea, hd, hn, hd + 6, "<B", 3),
                "extensible array elements of 3 bytes", "elements of 3 bytes"))
    ib = ea.index(b"EAIB")
    ibn = signed_len(ea, ib)
    # The index block: prefix (6), header address, 4 elements, 6 data
    # block addresses, then the super blocks'.
    first_sb = ib + 6 + 8 + 4 * 8 + 6 * 8
    assert ea.index(b"EASB") == struct.unpack_from("<Q", ea, first_sb)[0]
    out.append(("ea_sblock_end.h5", repatched(ea, ib, ibn, first_sb, "<Q", 1 << 40),
                "an extensible array super block past the end", "passes the end"))
    out.append(("ea_elem_outside.h5", repatched(ea, ib, ibn, ib + 6 + 8, "<Q", len(ea) - 2),
                "an extensible array chunk past the end", "passes the end"))
    sb = ea.index(b"EASB")
    sbn = signed_len(ea, sb)
    # The super block's first data block address pointing at the super block itself.
    out.append(("ea_dblock_loop.h5", repatched(ea, sb, sbn, sb + 6 + 8 + 4, "<Q", sb),
                "an extensible array data block that is its super block", "EADB"))
    bt = unlimited_file(os.path.join(tmp, "bt.h5"), (None, None), (300, 8), (1, 4))
    bh = bt.index(b"BTHD\x00\x0a")
    bhn = 18 + 8 + 8
    assert signed_len(bt, bh, bhn + 1) == bhn and struct.unpack_from("<H", bt, bh + 12)[0] >= 1
    out.append(("bt2_deep.h5", repatched(bt, bh, bhn, bh + 12, "<H", 100),
                "a v2 B-tree of depth 100", "depth 100"))
    out.append(("bt2_total.h5", repatched(bt, bh, bhn, bh + 18 + 8, "<Q", 599),
                "a v2 B-tree whose header counts a record too few", "its nodes hold"))
    root = struct.unpack_from("<Q", bt, bh + 16)[0]
    assert bt[root:root + 4] == b"BTIN"
    rn = signed_len(bt, root)
    nrec = struct.unpack_from("<H", bt, bh + 16 + 8)[0]
    kids = root + 6 + nrec * (8 + 16)                       # type 10 records of 2 dimensions
    out.append(("bt2_loop.h5", repatched(bt, root, rn, kids, "<Q", root),
                "a v2 B-tree node whose child is itself", "no leaf B-tree node"))
    leaf = struct.unpack_from("<Q", bt, kids)[0]
    assert bt[leaf:leaf + 4] == b"BTLF"
    ln = signed_len(bt, leaf)
    out.append(("bt2_leaf_checksum.h5", patched(bt, leaf + 6, "<B", bt[leaf + 6] ^ 1),
                "a v2 B-tree leaf with a byte changed", "checksum does not match"))
    out.append(("bt2_chunk_outside.h5", repatched(bt, leaf, ln, leaf + 6 + 8, "<Q", 1 << 40),
                "a v2 B-tree chunk outside the dataset", "outside the dataset"))
    out.append(("bt2_chunk_twice.h5", repatched(bt, leaf, ln, leaf + 6 + 24 + 8, "<QQ",
                                                *struct.unpack_from("<QQ", bt, leaf + 6 + 8)),
                "two v2 B-tree chunks at the same offsets", "same offsets"))
    return out


def small_file(path, libver, dense=False):
    with h5py.File(path, "w", libver=libver) as f:
        f.attrs["layer_names"] = np.array([b"dense"])
        g = f.create_group("dense")
        g.create_dataset("kernel:0", data=np.arange(6, dtype="<f4").reshape(2, 3))
        for i in range(12 if dense else 0):
            f.create_dataset("w%02d" % i, data=np.array([i], "<i4"))
    with open(path, "rb") as fh:
        return fh.read()


def hostile_files(tmp):
    """(name, bytes, what it is, what the message says) for each hostile file,
    patched from h5py's own output at places found by their signatures."""
    out = []
    old = small_file(os.path.join(tmp, "old.h5"), "earliest")
    root = struct.unpack_from("<Q", old, 64)[0]            # the root entry's object header
    assert old[root] == 1 and struct.unpack_from("<H", old, root + 16)[0] == 0x10
    out.append(("cont_loop_v1.h5", patched(old, root + 24, "<Q", root + 16),
                "a v1 continuation pointing back at its header", "loop back"))
    tree = old.index(b"TREE")
    out.append(("btree_level.h5", patched(old, tree + 5, "<B", 1),
                "a group B-tree leaf claiming level 1", "level"))
    out.append(("btree_count.h5", patched(old, tree + 6, "<H", 0xffff),
                "a group B-tree with 65535 entries", "passes the end"))
    snod = old.index(b"SNOD")
    out.append(("heap_offset.h5", patched(old, snod + 8, "<Q", 0xfffffff),
                "a link name offset past its local heap", "past the heap"))
    heap = old.index(b"HEAP")
    out.append(("heap_size.h5", patched(old, heap + 8, "<Q", 1 << 40),
                "a local heap larger than the file", "passes the end"))
    out.append(("sb_version.h5", patched(old, 8, "<B", 7), "superblock version 7", "version 7"))
    out.append(("cut.h5", old[:len(old) // 2], "a file cut in half", "passes the end"))
    out.append(("ohdr_count.h5", patched(old, root + 8, "<I", 0xfffffff0),
                "an object header larger than the file", "passes the end"))
    path = os.path.join(tmp, "chunks.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(8, dtype="<i4"), chunks=(4,))
    with open(path, "rb") as fh:
        ch = fh.read()
    ctree = ch.index(b"TREE\x01")
    # Keys of a 1-D chunk tree: size, mask, two offsets; the second key's first offset.
    out.append(("chunk_twice.h5", patched(ch, ctree + 24 + 32 + 8, "<Q", 0),
                "two chunks at the same offsets", "same offsets"))
    out.append(("chunk_outside.h5", patched(ch, ctree + 24 + 32 + 8, "<Q", 1 << 40),
                "a chunk outside its dataset", "outside the dataset"))
    out.append(("chunk_address.h5", patched(ch, ctree + 24 + 24, "<Q", 1 << 40),
                "a chunk past the end of the file", "passes the end"))
    new = small_file(os.path.join(tmp, "new.h5"), "latest", dense=True)
    ohdr = struct.unpack_from("<Q", new, 36)[0]            # superblock 3: root object header
    assert new[ohdr:ohdr + 4] == b"OHDR"
    flags = new[ohdr + 5]
    start = 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
    width = 1 << (flags & 3)
    first = ohdr + start + width
    frhp = new.index(b"FRHP")
    tw = 14 + 10 * 8 + 2 * 8
    out.append(("fheap_width.h5", patched(new, frhp + tw, "<H", 3),
                "a fractal heap of width 3", "doubling table"))
    bthd = new.index(b"BTHD")
    bthd_n = 18 + 8 + 8
    out.append(("bt2_root_count.h5", repatched(new, bthd, bthd_n, bthd + 16 + 8, "<H", 0xffff),
                "a v2 B-tree root said to hold 65535 records", "at most"))
    out.append(("bt2_type.h5", repatched(new, bthd, bthd_n, bthd + 5, "<B", 6),
                "a v2 B-tree of the wrong type", "B-tree header"))
    out.append(("bt2_header_checksum.h5", patched(new, bthd + 7, "<B", new[bthd + 7] ^ 1),
                "a v2 B-tree header with a byte changed", "checksum does not match"))
    # A continuation message in the root header pointing at the header's own messages.
    pos, end = first, first + new[ohdr + start]
    cont = None
    while pos + 4 <= end:
        t, size = new[pos], struct.unpack_from("<H", new, pos + 1)[0]
        if t == 0x10:
            cont = pos + 4
            break
        pos += 4 + size
    if cont is not None:
        # Its checksum no longer matches: refused before the loop is seen
        # (the loop check itself is the v1 case's).
        out.append(("cont_loop_v2.h5", patched(new, cont, "<Q", first),
                    "a v2 continuation pointing back at its header", "checksum does not match"))
    out.append(("sb3_checksum.h5", patched(new, 20, "<B", new[20] ^ 1),
                "superblock 3 with a byte changed", "superblock's checksum"))
    return out + hostile_indexes(tmp)


def check_hostile(c, t):
    if h5py is None:
        c.skip("no h5py: HDF5 hostile files")
        return
    tmp = tempfile.mkdtemp(prefix="modelfs-h5-")
    try:
        for name, data, what, contains in hostile_files(tmp):
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(data)
            refused(c, t.build, path, what, contains, t.env)
        old = small_file(os.path.join(tmp, "old.h5"), "earliest")
        # The (2, 3) dataspace: version 1, rank 2, any flags, then the dimensions.
        ds_sig = re.search(re.escape(bytes([1, 2])) + b"[\\x00-\\x03]" + re.escape(
            bytes(5) + struct.pack("<QQ", 2, 3)), old, re.S).start()
        # Dimensions whose product passes 2^64: refused.
        path = os.path.join(tmp, "overflow_dims.h5")
        with open(path, "wb") as f:
            f.write(patched(old, ds_sig + 8, "<QQ", 1 << 62, 1 << 62))
        refused(c, t.build, path, "dimensions of 2^124 elements", "2^64", t.env)
        # Dimensions far beyond the storage: listed with a problem, served as its bytes.
        path = os.path.join(tmp, "huge_dims.h5")
        with open(path, "wb") as f:
            f.write(patched(old, ds_sig + 8, "<QQ", 1 << 40, 3))
        r = subprocess.run([os.path.join(t.build, "modelfs-ls"), path, "model.json"],
                           capture_output=True, text=True, env=t.env, timeout=60)
        if c.equal(r.returncode, 0, "huge dimensions: listed"):
            doc = json.loads(r.stdout)
            x = [x for x in doc["tensors"] if x["name"] == "dense/kernel:0"]
            c.check(x and "problem" in x[0] and x[0]["dtype"] == "bytes",
                    "huge dimensions: flagged with a problem: %r" % x)
        check_bad_chunks(c, t, tmp)
    finally:
        shutil.rmtree(tmp)


def check_bad_chunks(c, t, tmp):
    """A chunk whose bytes are damaged: the mount lists the dataset (the
    index is sound) and the other tensors read; the damaged one does not
    (a checksum that does not match, deflate data that does not inflate)."""
    ls = os.path.join(t.build, "modelfs-ls")
    for what, kw in [("fletcher32", {"fletcher32": True}), ("deflate", {"compression": "gzip"})]:
        path = os.path.join(tmp, "bad_%s.h5" % what)
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(64, dtype="<i4"), chunks=(64,), **kw)
            f.create_dataset("ok", data=np.arange(4, dtype="<f4"))
            off = f["x"].id.get_chunk_info(0).byte_offset
        with open(path, "r+b") as fh:
            fh.seek(off + 2)
            b = fh.read(1)
            fh.seek(off + 2)
            fh.write(bytes([b[0] ^ 0x5a]))
        r = subprocess.run([ls, path, "tensors/ok"], capture_output=True, env=t.env, timeout=60)
        c.equal(r.stdout, np.arange(4, dtype="<f4").tobytes(), "damaged %s chunk: the other tensor reads" % what)
        r = subprocess.run([ls, path, "tensors/x"], capture_output=True, text=False, env=t.env, timeout=60)
        c.check(r.returncode != 0 and b"HDF5" in r.stderr and r.stdout == b"",
                "damaged %s chunk: its tensor refused (%d, %r)" % (what, r.returncode, r.stderr))
        with mfstest.mounted(t.modelfs, path, t.env) as mnt:
            c.equal(mfstest.read_or_errno(os.path.join(mnt, "tensors", "x")), (None, errno.EIO),
                    "damaged %s chunk: EIO through the mount" % what)


EXTRAS = (check_hostile,)
