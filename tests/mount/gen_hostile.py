#!/usr/bin/python3
"""Small files that used to blow up at mount (issue 7, items 7, 8, 11),
for tests/mount/test_hostile_mount.py:

  bomb_index.carton    a 64 MiB index.toml deflated to ~64 KiB
  bomb_strings.carton  a 64 MiB string tensor .toml, deflated, listed 4 times
  dag.rten, dag16.rten If nodes whose then and else branches are one
                       subgraph, 24 levels deep, zero-padded to 1 / 16 MiB
  collide.carton       2^16 members whose names share one slot of the old
                       FNV-1a tree hash
  collide.rten         2^15 tensors, the same
  bigmanifest.carton   a MANIFEST of 65 MiB (deflated) for 3 files
  bigurls.carton       a LINKS entry whose URLs take more than 64 KiB

usage: gen_hostile.py OUTDIR
"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import flatbuffers  # noqa: E402
import gen_carton as gc  # noqa: E402
import gen_rten as gr  # noqa: E402

MIB = 1 << 20
# Tree indexes of the folders the names go in: the root is 0, tensors/ 1
# (made first for every format), files/ 2 (the Carton driver's first).
TENSORS_DIR, FILES_DIR = 1, 2
RTEN_SCHEMA = os.path.join(HERE, "..", "..", "schemas", "rten.fbs")
COLLIDE_BITS = 24   # the old table's slot is the hash's low bits: 2^24 slots is far more than used


# ---- the old tree hash and names that collide under it ----------------------

def old_fnv_low32(parent, name):
    """Low 32 bits of fs/tree.c's old FNV-1a-64 of (parent, name): they
    depend only on the low 32 bits of the state, whose multiplier is then
    0x1b3 (the low half of the FNV-64 prime)."""
    h = 0xcbf29ce484222325 & 0xFFFFFFFF
    for b in struct.pack("<I", parent) + name:
        h = ((h ^ b) * 0x1b3) & 0xFFFFFFFF
    return h


def _step(h, block):
    for b in block:
        h = ((h ^ b) * 0x1b3) & 0xFFFFFFFF
    return h


# What the birthday search below finds for the tensors/ and files/ folders,
# stage by stage (it took ~3 s of Python per call): the pairs are checked
# each time, so a wrong entry fails loudly instead of colliding nothing.
KNOWN_PAIRS = {
    TENSORS_DIR: [("a9h8", "bhbr"), ("byjy", "c0sd"), ("b9qz", "cpje"), ("b9w8", "cjeb"),
                  ("b3k8", "ctar"), ("byjy", "c0sd"), ("b9qz", "cpje"), ("b9w8", "cjeb"),
                  ("b3k8", "ctar"), ("byjy", "c0sd"), ("b9qz", "cpje"), ("b9w8", "cjeb"),
                  ("b3k8", "ctar"), ("byjy", "c0sd"), ("b9qz", "cpje"), ("b9w8", "cjeb")],
    FILES_DIR: [("a9a8", "bhkr"), ("a5d8", "blfr"), ("aqt6", "cb2a"), ("b3k8", "ctar"),
                ("b3f8", "ctdv"), ("b2i8", "cugv"), ("b7g8", "cper"), ("aqt6", "cb2a"),
                ("b3k8", "ctar"), ("b3f8", "ctdv"), ("b2i8", "cugv"), ("b7g8", "cper"),
                ("aqt6", "cb2a"), ("b3k8", "ctar"), ("b3f8", "ctdv"), ("b2i8", "cugv")],
}


def colliding_names(parent, stages):
    """2^stages names of 4*stages bytes with one low-COLLIDE_BITS old hash.
    The low k bits of FNV-1a's state depend only on its low k bits, so at
    each stage two 4-byte blocks that take those bits to one value (a
    birthday search) make every choice of blocks collide (Joux)."""
    alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789"
    mask = (1 << COLLIDE_BITS) - 1
    h = _step(0xcbf29ce484222325 & 0xFFFFFFFF, struct.pack("<I", parent)) & mask
    pairs = []
    blocks = [bytes((a, b, c, d)) for a in alphabet for b in alphabet for c in alphabet
              for d in alphabet] if stages > len(KNOWN_PAIRS.get(parent, [])) else []
    known = KNOWN_PAIRS.get(parent, [])
    for stage in range(stages):
        if stage < len(known):
            # The search's own answer, kept: checked, not searched again.
            a, b = (x.encode() for x in known[stage])
            s = _step(h, a) & mask
            assert s == _step(h, b) & mask, "KNOWN_PAIRS[%d][%d] does not collide" % (parent, stage)
            pairs.append((a, b))
            h = s
            continue
        seen = {}
        for blk in blocks:
            s = _step(h, blk) & mask
            if s in seen:
                pairs.append((seen[s], blk))
                h = s
                break
            seen[s] = blk
        else:
            raise AssertionError("no collision found")
    names = [b""]
    for a, b in pairs:
        names = [n + a for n in names] + [n + b for n in names]
    return names


# ---- cartons ------------------------------------------------------------------

def deflated(path, data):
    m = gc.Member(path, data, "deflate")
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    m.comp = c.compress(data) + c.flush()
    return m


def carton(members):
    toml = gc.runner_toml("hostile").encode()
    # More than 65535 members need the ZIP64 end records.
    return gc.zip_bytes([gc.Member("carton.toml", toml, "stored")] + members,
                        zip64=len(members) >= 0xFFFF)


def bomb_index():
    entry = b'[[tensor]]\nname = "t"\ndtype = "float32"\nshape = [1]\nfile = "x.bin"\n'
    data = entry * ((64 * MIB) // len(entry))
    return carton([deflated("tensor_data/index.toml", data)])


def bomb_strings():
    data = b"data = [" + b'"",' * ((60 * MIB) // 3) + b"]\n"
    index = b"".join(b'[[tensor]]\nname = "s%d"\ndtype = "string"\nshape = [%d]\nfile = "s.toml"\n'
                     % (i, (60 * MIB) // 3) for i in range(4))
    return carton([deflated("tensor_data/s.toml", data),
                   gc.Member("tensor_data/index.toml", index, "deflate")])


def collide_carton(names):
    return carton([gc.Member(n, b"", "stored") for n in names])


def big_manifest():
    files = {"model/a.py": b"print(1)\n", "model/b.py": b"print(2)\n"}
    lines = gc.manifest_bytes(files)
    pad = b"model/none=" + b"0" * 64 + b"\n"
    data = lines + pad * ((65 * MIB) // len(pad))
    return carton([gc.Member(p, d, "deflate") for p, d in files.items()] +
                  [deflated("MANIFEST", data)])


BIG_URLS_SHA = gc.sha(b"linked file\n")


def big_urls():
    files = {"model/a.py": b"print(1)\n"}
    man = gc.manifest_bytes(dict(files, **{"model/linked.bin": b"linked file\n"}))
    urls = ", ".join('"https://example.invalid/%s/%05d"' % ("x" * 1200, i) for i in range(60))
    links = ('version = 1\n\n[urls]\n%s = [%s]\n' % (BIG_URLS_SHA, urls)).encode()
    assert len(links) > 66000
    return carton([gc.Member(p, d, "deflate") for p, d in files.items()] +
                  [gc.Member("MANIFEST", man, "stored"), gc.Member("LINKS", links, "stored")])


# ---- rten ---------------------------------------------------------------------

def rten_v2(model, size):
    header = b"RTEN" + struct.pack("<IQQQ", 2, 32, len(model), 32 + len(model))
    blob = header + model
    return blob + b"\0" * max(0, size - len(blob))


def node(b, name, kind, data):
    s = b.CreateString(name)
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, s, 0)
    b.PrependUint8Slot(1, kind, 0)
    b.PrependUOffsetTRelativeSlot(2, data, 0)
    return b.EndObject()


def graph(b, nodes):
    nv = gr.vec(b, "off", nodes)
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(0, nv, 0)
    return b.EndObject()


def dag_rten(levels, size):
    """A graph of one If node whose then and else branches are the same
    table, which is again such a graph, `levels` deep: 2^levels visits."""
    b = flatbuffers.Builder(1024)
    b.StartObject(2)
    g = graph(b, [node(b, "v", gr.KIND_VALUE, b.EndObject())])
    for level in range(levels):
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(0, g, 0)
        b.PrependUOffsetTRelativeSlot(1, g, 0)
        attrs = b.EndObject()
        ins, outs = gr.vec(b, "i32", []), gr.vec(b, "i32", [])
        b.StartObject(5)
        b.PrependUint8Slot(0, gr.OP_IF, 0)
        b.PrependUint8Slot(1, gr.ATTRS_IF, 0)
        b.PrependUOffsetTRelativeSlot(2, attrs, 0)
        b.PrependUOffsetTRelativeSlot(3, ins, 0)
        b.PrependUOffsetTRelativeSlot(4, outs, 0)
        op = b.EndObject()
        g = graph(b, [node(b, "if%d" % level, gr.KIND_OPERATOR, op)])
    b.StartObject(3)
    b.PrependInt32Slot(0, 1, 0)
    b.PrependUOffsetTRelativeSlot(1, g, 0)
    b.Finish(b.EndObject())
    return rten_v2(bytes(b.Output()), size)


def collide_rten(names):
    """One Float32 constant per name. Made by flatc from JSON: the Python
    builder took 5 s for 32,768 nodes."""
    node = '{"name":"%s","data_type":"ConstantNode","data":{"shape":[1],' \
           '"data_type":"FloatData","data":{"data":[0.0]},"dtype":"Float32"}}'
    doc = '{"schema_version":1,"graph":{"nodes":[%s]}}' % ",".join(
        node % n.decode("ascii") for n in names)
    with tempfile.TemporaryDirectory(prefix="modelfs-flatc-") as tmp:
        src = os.path.join(tmp, "collide.json")
        with open(src, "w") as f:
            f.write(doc)
        subprocess.run(["flatc", "-b", "-o", tmp, RTEN_SCHEMA, src], check=True)
        # flatc names its output after the schema's file_extension.
        with open(os.path.join(tmp, "collide.rten"), "rb") as f:
            model = f.read()
    tensor_off = (32 + len(model) + 63) // 64 * 64
    return rten_v2(model, tensor_off)


def main(argv):
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    models = {
        "bomb_index.carton": bomb_index,
        "bomb_strings.carton": bomb_strings,
        "dag.rten": lambda: dag_rten(24, MIB),
        "dag16.rten": lambda: dag_rten(24, 16 * MIB),
        "collide.carton": lambda: collide_carton(colliding_names(FILES_DIR, 16)),
        "collide.rten": lambda: collide_rten(colliding_names(TENSORS_DIR, 15)),
        "bigmanifest.carton": big_manifest,
        "bigurls.carton": big_urls,
    }
    for name, make in models.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(make())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
