#!/usr/bin/python3
"""OpenVINO IR pairs (STEM.xml + STEM.bin) written per the IR
specification (openvino docs "OpenVINO IR format", operation specs for
Parameter/Const/Add/Result; element type names and bit widths from
src/core/src/type/element_type.cpp), with numpy making the weights, and
beside each file of a pair its expectation (STEM.xml.expect.json,
STEM.bin.expect.json: either file mounts the pair). Ground truth: numpy's
bytes and the sizes the spec gives (elements x bits, rounded up to bytes
for packed types), never modelfs.

Also hostile pairs (expect: corrupt): a billion-laughs DOCTYPE, an
external entity, deep nesting, huge attribute counts, offsets past the
.bin or overflowing, a shape product overflowing, a wrong size, duplicate
layer ids, an edge to a missing layer, a .bin that is a symlink.

usage: gen_openvino.py OUTDIR HOSTILE_DIR
"""
import hashlib
import json
import os
import sys
from xml.sax.saxutils import quoteattr

import numpy as np

# IR name: (bits, dtype shown, numpy dtype to make values, packed)
TYPES = {
    "f32": (32, "float32", np.float32), "f16": (16, "float16", np.float16),
    "f64": (64, "float64", np.float64), "bf16": (16, "bfloat16", np.uint16),
    "i8": (8, "int8", np.int8), "u8": (8, "uint8", np.uint8),
    "i16": (16, "int16", np.int16), "u16": (16, "uint16", np.uint16),
    "i32": (32, "int32", np.int32), "u32": (32, "uint32", np.uint32),
    "i64": (64, "int64", np.int64), "u64": (64, "uint64", np.uint64),
    "boolean": (8, "bool", np.bool_),
    "f8e4m3": (8, "float8_e4m3fn", np.uint8), "f8e5m2": (8, "float8_e5m2", np.uint8),
    "f8e8m0": (8, "float8_e8m0fnu", np.uint8),
    "i4": (4, "int4", None), "u4": (4, "uint4", None),
    "u1": (1, None, None), "nf4": (4, None, None), "f4e2m1": (4, None, None),
}


def values(rng, et, shape):
    """The stored bytes of a Const of type et and shape."""
    bits, _, npt = TYPES[et]
    n = int(np.prod(shape, dtype=np.int64))
    if npt is None:
        nbytes = (n * bits + 7) // 8
        return rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes()
    if npt == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_).tobytes()
    if np.issubdtype(npt, np.floating):
        return (rng.standard_normal(n) * 3).astype(npt).tobytes()
    info = np.iinfo(npt)
    return rng.integers(info.min, info.max, n, dtype=npt, endpoint=True).tobytes()


class IR:
    def __init__(self, name, version=11):
        self.name, self.version = name, version
        self.layers, self.edges, self.bin = [], [], bytearray()
        self.rt_info = ""
        self.consts = []  # (name, et, shape, offset, bytes)

    def const(self, name, et, shape, data, align=0, lid=None, extra=""):
        while align and len(self.bin) % align:
            self.bin.append(0)
        off = len(self.bin)
        self.bin += data
        lid = len(self.layers) if lid is None else lid
        dims = "".join("<dim>%d</dim>" % d for d in shape)
        self.layers.append(
            '<layer id="%d" name=%s type="Const" version="opset1">\n'
            '\t\t\t<data element_type="%s" shape="%s" offset="%d" size="%d"%s/>\n'
            '\t\t\t<rt_info><attribute name="fused_names" version="0" value=%s/></rt_info>\n'
            '\t\t\t<output><port id="0" precision="%s">%s</port></output>\n\t\t</layer>'
            % (lid, quoteattr(name), et, ",".join(map(str, shape)), off, len(data), extra,
               quoteattr(name), et.upper(), dims))
        self.consts.append((name, et, list(shape), off, bytes(data)))
        return lid

    def layer(self, typ, name, ins=(), outs=(), lid=None):
        lid = len(self.layers) if lid is None else lid
        def ports(tag, ps, first):
            if not ps:
                return ""
            return "<%s>%s</%s>" % (tag, "".join(
                '<port id="%d" precision="FP32">%s</port>' % (first + i, "".join("<dim>%d</dim>" % d for d in p))
                for i, p in enumerate(ps)), tag)
        data = '<data shape="%s" element_type="f32"/>' % ",".join(map(str, outs[0])) if typ == "Parameter" else ""
        self.layers.append('<layer id="%d" name=%s type="%s" version="opset1">%s%s%s</layer>'
                           % (lid, quoteattr(name), typ, data, ports("input", ins, 0),
                              ports("output", outs, len(ins))))
        return lid

    def edge(self, a, ap, b, bp):
        self.edges.append('<edge from-layer="%d" from-port="%d" to-layer="%d" to-port="%d"/>' % (a, ap, b, bp))

    def xml(self, head=""):
        return ('<?xml version="1.0"?>\n%s<net name=%s version="%d">\n\t<layers>\n\t\t%s\n\t</layers>\n'
                '\t<edges>\n\t\t%s\n\t</edges>\n%s</net>\n'
                % (head, quoteattr(self.name), self.version, "\n\t\t".join(self.layers),
                   "\n\t\t".join(self.edges), self.rt_info)).encode()


def tensor_expect(name, et, shape, data, off):
    bits, dtype, _ = TYPES[et]
    return {"name": name, "dtype": dtype, "shape": shape, "nbytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "offset": off, "element_type": et}


def write(out, stem, ir, xml=None, meta=None):
    xml = ir.xml() if xml is None else xml
    px, pb = os.path.join(out, stem + ".xml"), os.path.join(out, stem + ".bin")
    with open(px, "wb") as f:
        f.write(xml)
    with open(pb, "wb") as f:
        f.write(ir.bin)
    tensors = [tensor_expect(*c[:3], c[4], c[3]) for c in ir.consts]
    for path, size, storage in ((px, len(xml), "external"), (pb, len(ir.bin), None)):
        e = {"format": "openvino", "expect": "readable", "file_size": size,
             "format_version": ir.version, "tensor_count": len(tensors),
             "tensors": [dict(t, **({"storage": storage} if storage else {})) for t in tensors],
             "net": {"name": ir.name, "version": str(ir.version)}}
        if meta:
            e["rt_info"] = meta
        with open(path + ".expect.json", "w") as f:
            json.dump(e, f, indent=1)


def write_corrupt(out, stem, xml, binary, why, bin_link=None):
    px, pb = os.path.join(out, stem + ".xml"), os.path.join(out, stem + ".bin")
    with open(px, "wb") as f:
        f.write(xml)
    if bin_link:
        if os.path.lexists(pb):
            os.remove(pb)
        os.symlink(bin_link, pb)
    else:
        with open(pb, "wb") as f:
            f.write(binary)
    with open(px + ".expect.json", "w") as f:
        json.dump({"format": "openvino", "expect": "corrupt", "file_size": len(xml),
                   "error_contains": why}, f, indent=1)


def small_model():
    """Parameter -> Add(const) -> Result, the spec's example shape."""
    ir = IR("small")
    rng = np.random.default_rng(1)
    p = ir.layer("Parameter", "input", outs=[(1, 3)])
    c = ir.const("bias", "f32", [1, 3], values(rng, "f32", [1, 3]))
    a = ir.layer("Add", "add", ins=[(1, 3), (1, 3)], outs=[(1, 3)])
    r = ir.layer("Result", "output", ins=[(1, 3)])
    ir.edge(p, 0, a, 0)
    ir.edge(c, 0, a, 1)
    ir.edge(a, 2, r, 0)
    ir.rt_info = ('\t<rt_info>\n\t\t<MO_version value="2024.0"/>\n\t\t<Runtime_version value="2024.0.0"/>\n'
                  '\t\t<conversion_parameters>\n\t\t\t<framework value="onnx"/>\n'
                  '\t\t\t<is_python_object value="False"/>\n\t\t</conversion_parameters>\n\t</rt_info>\n')
    meta = {"MO_version": "2024.0", "Runtime_version": "2024.0.0",
            "conversion_parameters": {"framework": "onnx", "is_python_object": "False"}}
    return ir, meta


def all_types():
    """One Const of every element type, some unaligned, a scalar, an
    empty one, a name with entities and one given twice."""
    ir = IR("all types & <kinds>")
    rng = np.random.default_rng(2)
    shapes = {"u1": [3, 5], "i4": [7], "u4": [2, 3], "nf4": [5], "f4e2m1": [4, 2]}
    for et in TYPES:
        shape = shapes.get(et, [2, 3])
        ir.const("w_" + et, et, shape, values(rng, et, shape), align=1 if et in ("f64", "i64") else 0)
    ir.const("scalar", "f32", [], values(rng, "f32", []))
    ir.const("empty", "f32", [0, 4], b"")
    ir.const("dup", "i32", [2], values(rng, "i32", [2]))
    ir.const("dup", "i32", [3], values(rng, "i32", [3]))
    ir.const("caf\u00e9 \"q\" <&>", "u8", [4], values(rng, "u8", [4]))
    # No layer name: the output port's first tensor name, else const_ID.
    lid = ir.const("unnamed_port", "u8", [2], values(rng, "u8", [2]))
    ir.layers[lid] = ir.layers[lid].replace(' name="unnamed_port"', "").replace(
        '<port id="0" precision="U8">', '<port id="0" precision="U8" names="port_name,alias">')
    ir.consts[-1] = ("port_name",) + ir.consts[-1][1:]
    lid = ir.const("unnamed", "u8", [1], values(rng, "u8", [1]))
    ir.layers[lid] = ir.layers[lid].replace(' name="unnamed"', "")
    ir.consts[-1] = ("const_%d" % lid,) + ir.consts[-1][1:]
    ir.layer("Result", "out", ins=[(2, 3)])
    ir.edge(0, 0, len(ir.layers) - 1, 0)
    return ir


def hostile(out):
    good = small_model()[0]
    body = good.xml().split(b"\n", 1)[1]
    bn = bytes(good.bin)
    laughs = ('<!DOCTYPE net [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
              '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>\n')
    write_corrupt(out, "bad_laughs", b'<?xml version="1.0"?>\n' + laughs.encode() +
                  body.replace(b'name="small"', b'name="&d;"'), bn, "DOCTYPE")
    xxe = '<!DOCTYPE net [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
    write_corrupt(out, "bad_xxe", b'<?xml version="1.0"?>\n' + xxe.encode() +
                  body.replace(b'name="small"', b'name="&x;"'), bn, "DOCTYPE")
    write_corrupt(out, "bad_entity", body.replace(b'name="small"', b'name="&x;"'), bn, "predefined")
    deep = b"<net name='d' version='11'><layers/><rt_info>" + b"<a>" * 5000 + b"</a>" * 5000 + b"</rt_info></net>"
    write_corrupt(out, "bad_deep", deep, b"", "nested")
    attrs = b" ".join(b'a%d="1"' % i for i in range(5000))
    write_corrupt(out, "bad_attrs", b"<net name='a' version='11' " + attrs + b"><layers/></net>", b"",
                  "attributes")
    def const_xml(extra_attrs, shape="2", et="f32", size=8):
        ir = IR("h")
        ir.layers.append('<layer id="0" name="c" type="Const" version="opset1"><data element_type="%s" '
                         'shape="%s" %s size="%d"/></layer>' % (et, shape, extra_attrs, size))
        return ir.xml()
    write_corrupt(out, "bad_past_end", const_xml('offset="4"'), b"\0" * 8, "past the end")
    write_corrupt(out, "bad_offset_overflow", const_xml('offset="18446744073709551615"'), b"\0" * 8,
                  "past the end")
    write_corrupt(out, "bad_offset_huge", const_xml('offset="99999999999999999999999"'), b"\0" * 8,
                  "decimal")
    write_corrupt(out, "bad_shape_overflow", const_xml('offset="0"', shape="4294967296,4294967296,16"),
                  b"\0" * 8, "overflows")
    write_corrupt(out, "bad_size", const_xml('offset="0"', size=7), b"\0" * 8, "size 7")
    write_corrupt(out, "bad_type", const_xml('offset="0"', et="f33"), b"\0" * 8, "f33")
    dup = good.xml().replace(b'<layer id="3"', b'<layer id="2"')
    write_corrupt(out, "bad_dup_id", dup, bn, "given twice")
    missing = good.xml().replace(b'to-layer="3"', b'to-layer="9"')
    write_corrupt(out, "bad_edge", missing, bn, "not in <layers>")
    write_corrupt(out, "bad_bin_link", good.xml(), b"", "symlink", bin_link="/etc/hostname")
    write_corrupt(out, "bad_no_bin", good.xml(), b"", "cannot open")
    os.remove(os.path.join(out, "bad_no_bin.bin"))
    write_corrupt(out, "bad_utf8", good.xml().replace(b"small", b"sm\xffll"), bn, "UTF-8")
    write_corrupt(out, "bad_unclosed", good.xml()[:-8], bn, "ends inside")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    ir, meta = small_model()
    write(out, "small", ir, meta=meta)
    write(out, "all_types", all_types())
    ir, meta = small_model()
    ir.name = "bom"
    write(out, "bom_comments", ir, xml=b"\xef\xbb\xbf" + ir.xml(head="<!-- a comment -->\n<?pi x?>\n").replace(
        b"<layers>", b"<layers><!-- <layer id='99'/> --><![CDATA[ ]]>"), meta=meta)
    os.makedirs(sys.argv[2], exist_ok=True)
    # rt_info of many same-named children and attributes: a list, in order
    # (graph.json and model.json in bounded time).
    ir, _ = small_model()
    ir.name = "many"
    ir.rt_info = ("\t<rt_info>\n\t\t<framework>%s</framework>\n\t\t<wide %s/>\n\t</rt_info>\n"
                  % ("".join('<item name="k%d" value="v%d"/>' % (i, i) for i in range(5000)),
                     " ".join('a%d="%d"' % (i, i) for i in range(3000))))
    meta = {"framework": {"@children": [{"item": {"name": "k%d" % i, "value": "v%d" % i}}
                                        for i in range(5000)]},
            "wide": {"a%d" % i: "%d" % i for i in range(3000)}}
    write(out, "many", ir, meta=meta)
    hostile(sys.argv[2])


if __name__ == "__main__":
    main()
