#!/usr/bin/python3
"""TensorFlow.js models (model.json + shard files) for the tests, written
from the format's facts (tfjs-core/src/io: types.ts' ModelJSON and
WeightsManifestConfig, io_utils.ts' encodeWeights/decodeWeights): each
group's weights laid end to end over its shards, float32/int32/bool/
complex64 as little-endian values, strings as a 4-byte little-endian
length and the bytes, quantized weights as uint8/uint16 (value = q *
scale + min) or float16. Shards are cut at a small byte count, as
tfjs-converter's weight_shard_size_bytes does, so weights span shards.

usage: gen_tfjs.py OUTDIR REPODIR

Writes OUTDIR/NAME.json (+ NAME-groupG-shardIofN.bin) with NAME.json.expect.json
(ground truth from numpy: dtype, shape, nbytes, sha256 of the stored
bytes; strings' values; a quantized weight's dequantized float32 sha256),
and REPODIR (a folder holding model.json and its shards, as a
Hub repository has them, with model.json.expect.json).
"""
import hashlib
import json
import os
import struct
import sys

import numpy as np


def sha(b):
    return hashlib.sha256(b).hexdigest()


def weight(name, arr, dtype=None, quant=None):
    """(manifest entry, stored bytes, expectation) of one weight."""
    arr = np.asarray(arr)
    entry = {"name": name, "shape": list(arr.shape)}
    want = {"name": name, "shape": list(arr.shape)}
    if dtype == "string":
        raw = b"".join(struct.pack("<I", len(s.encode())) + s.encode() for s in arr.reshape(-1).tolist())
        entry["dtype"] = "string"
        want.update(dtype="string", values=arr.reshape(-1).tolist(), stored_nbytes=len(raw))
        return entry, raw, want
    if quant is not None:
        qd, scale, mn = quant
        entry["dtype"] = "float32"
        entry["quantization"] = {"dtype": qd}
        if qd == "float16":
            raw = arr.astype("<f2").tobytes()
            want["dtype"] = "float16"
        else:
            entry["quantization"].update(scale=scale, min=mn, original_dtype="float32")
            raw = arr.astype("<u1" if qd == "uint8" else "<u2").tobytes()
            want["dtype"] = qd
            # decodeWeights: v * scale + min in doubles, kept as float32.
            deq = (arr.astype(np.float64) * scale + mn).astype("<f4")
            want["dequantized_sha256"] = sha(deq.tobytes())
    else:
        np_dt = {"float32": "<f4", "int32": "<i4", "bool": "|b1", "complex64": "<c8"}[dtype]
        entry["dtype"] = dtype
        raw = arr.astype(np_dt).tobytes()
        want["dtype"] = dtype
    want.update(nbytes=len(raw), sha256=sha(raw))
    return entry, raw, want


def write_model(out, json_name, prefix, groups, shard_size, extra=None):
    """Writes the model.json `json_name` in `out` with `groups` (each a
    list of weight() results), each group's bytes cut into shards of
    `shard_size`; returns the expectation."""
    manifest, tensors = [], []
    for gi, ws in enumerate(groups):
        data = b"".join(raw for _, raw, _ in ws)
        n = max(1, -(-len(data) // shard_size))
        paths = []
        for i in range(n):
            p = "%sgroup%d-shard%dof%d.bin" % (prefix, gi + 1, i + 1, n)
            with open(os.path.join(out, p), "wb") as f:
                f.write(data[i * shard_size:(i + 1) * shard_size])
            paths.append(p)
        manifest.append({"paths": paths, "weights": [e for e, _, _ in ws]})
        tensors += [w for _, _, w in ws]
    doc = {"modelTopology": {"class_name": "Sequential", "config": {"name": "seq", "layers": [
               {"class_name": "Dense", "config": {"units": 5, "name": "dense"}}]}},
           "format": "layers-model", "generatedBy": "gen_tfjs.py", "convertedBy": None,
           "weightsManifest": manifest}
    doc.update(extra or {})
    path = os.path.join(out, json_name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return {"format": "tfjs", "expect": "readable", "file_size": os.path.getsize(path),
            "tensor_count": len(tensors), "tensors": tensors}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(36)
    every = [
        weight("dense/kernel", rng.standard_normal((4, 5)).astype(np.float32), "float32"),
        weight("dense/bias", rng.standard_normal(5).astype(np.float32), "float32"),
        weight("ids", rng.integers(-2**31, 2**31, 7).astype(np.int32), "int32"),
        weight("mask", rng.integers(0, 2, (3, 3)).astype(bool), "bool"),
        weight("spectrum", (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(np.complex64),
               "complex64"),
        weight("vocab", np.array(["a", "h\u00e9llo", "", "x" * 70]), "string"),
        weight("q8", rng.integers(0, 256, (3, 7)), quant=("uint8", 0.0078125, -1.0)),
        weight("q16", rng.integers(0, 65536, (2, 9)), quant=("uint16", 1.5e-05, -0.5)),
        weight("half", rng.standard_normal((3, 4)).astype(np.float16), quant=("float16", None, None)),
        weight("empty", np.zeros((0, 3), np.float32), "float32"),
        weight("scalar", np.float32(3.25), "float32"),
    ]
    exp = write_model(out, "every.json", "every-", [every], 64,
                      {"userDefinedMetadata": {"note": "made by gen_tfjs.py"}})
    with open(os.path.join(out, "every.json.expect.json"), "w") as f:
        json.dump(exp, f, indent=1)
    # Two groups; one shard each for the second; a weight of exactly one shard.
    g1 = [weight("conv/kernel", rng.standard_normal((3, 3, 2, 2)).astype(np.float32), "float32")]
    g2 = [weight("b", rng.standard_normal(8).astype(np.float32), "float32"),
          weight("names", np.array([["left", "right"], ["up", "down"]]), "string")]
    exp = write_model(out, "groups.json", "groups-", [g1, g2], 144)
    with open(os.path.join(out, "groups.json.expect.json"), "w") as f:
        json.dump(exp, f, indent=1)
    # Shards of 4096 bytes (pages here), as TF.js's 4 MiB ones are: a
    # weight across two and one across four (mapped end to end in place),
    # one from mid-page over the next cut (too), and one over 40 shards
    # (more than are mapped together: copied).
    paged = [weight("head", rng.standard_normal(100).astype(np.float32), "float32"),
             weight("span", rng.standard_normal(3000).astype(np.float32), "float32"),
             weight("pad", rng.standard_normal(124).astype(np.float32), "float32"),
             weight("four", rng.standard_normal(4096).astype(np.float32), "float32"),
             weight("forty", rng.standard_normal(40 * 1024).astype(np.float32), "float32")]
    exp = write_model(out, "paged.json", "paged-", [paged], 4096)
    with open(os.path.join(out, "paged.json.expect.json"), "w") as f:
        json.dump(exp, f, indent=1)
    # A folder as a repository has it: model.json and shards.
    repo = sys.argv[2]
    os.makedirs(repo, exist_ok=True)
    exp = write_model(repo, "model.json", "",
                      [[weight("w", rng.standard_normal((6, 6)).astype(np.float32), "float32"),
                        weight("q", rng.integers(0, 256, 20), quant=("uint8", 0.5, 2.0))]], 100)
    with open(os.path.join(repo, "model.json.expect.json"), "w") as f:
        json.dump(exp, f, indent=1)


if __name__ == "__main__":
    main()
