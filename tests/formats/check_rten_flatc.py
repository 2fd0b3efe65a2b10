#!/usr/bin/python3
"""Decodes RTen models with Debian's flatc and our schemas/rten.fbs (an
independent reader) and checks that modelfs reads the same constants: names,
shapes, dtypes, storage and byte offsets, and the same metadata.

usage: check_rten_flatc.py MODELFS_LS SCHEMA DIR...
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mfstest  # noqa: E402

CDTYPE = {"Int32": "int32", "Float32": "float32", "Int8": "int8", "UInt8": "uint8"}
UNION = {"FloatData": "float32", "Int32Data": "int32", "Int8Data": "int8", "UInt8Data": "uint8"}
GRAPH_ATTRS = {"IfAttrs": ["then_branch", "else_branch"], "LoopAttrs": ["body"]}



def constants(graph, path, out):
    for node in graph.get("nodes", []):
        kind, data = node.get("data_type"), node.get("data", {})
        if kind == "ConstantNode":
            out.append((path, node.get("name", ""), data))
        elif kind == "OperatorNode" and data.get("attrs_type") in GRAPH_ATTRS:
            for attr in GRAPH_ATTRS[data["attrs_type"]]:
                sub = data.get("attrs", {}).get(attr)
                if sub is not None:
                    constants(sub, path + [node.get("name", ""), attr], out)


def main(argv):
    modelfs_ls, schema = argv[1], argv[2]
    c = mfstest.Checker("rten flatc cross-check")
    if shutil.which("flatc") is None:
        c.skip("flatc is not installed")
        return c.finish()
    tmp = tempfile.mkdtemp()
    for d in argv[3:]:
        if not os.path.isdir(d):
            c.skip("%s is absent" % d)
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith(".rten"):
                continue
            path = os.path.join(d, f)
            data = open(path, "rb").read()
            base, tensor_base = 0, None
            if data[:4] == b"RTEN":
                moff, mlen, toff = struct.unpack("<QQQ", data[8:32])
                base, tensor_base, model = moff, toff, data[moff:moff + mlen]
            else:
                model = data
            fj = mfstest.flatc_decode(schema, model, tmp)
            doc = json.loads(subprocess.run([modelfs_ls, path, "model.json"], check=True,
                                            capture_output=True).stdout)
            found = []
            constants(fj["graph"], [], found)
            c.equal(len(doc["tensors"]), len(found), "%s: constant count" % f)
            for t, (gpath, name, cn) in zip(doc["tensors"], found):
                what = "%s: %r" % (f, name)
                c.equal(t["name"], name, what + " name (file order)")
                c.equal(t.get("graph", []), gpath, what + " graph path")
                c.equal(t["shape"], cn.get("shape", []), what + " shape")
                if cn.get("dtype") is not None:
                    c.equal(t["dtype"], CDTYPE[cn["dtype"]], what + " dtype")
                else:
                    c.equal(t["dtype"], UNION[cn["data_type"]], what + " dtype (from the union)")
                if cn.get("data_offset") is not None and tensor_base is not None:
                    c.equal(t["storage"], "external", what + " storage")
                    c.equal(t["offset"], tensor_base + cn["data_offset"], what + " offset")
                else:
                    c.equal(t["storage"], "inline", what + " storage")
                    n = len(cn["data"]["data"])
                    c.equal(t["nbytes"] // max(1, {"float32": 4, "int32": 4}.get(t["dtype"], 1)), n,
                            what + " inline element count")
                    c.check(base <= t["offset"] <= base + len(model), what + " inline offset inside the model data")
            meta = dict(fj.get("metadata", {}))
            meta["schema_version"] = fj.get("schema_version", 0)
            c.equal(doc["metadata"], meta, "%s: metadata" % f)
    shutil.rmtree(tmp, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
