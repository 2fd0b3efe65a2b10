// The second reader of mount.flax: @msgpack/msgpack (npm) decodes each
// Flax msgpack file given, with Flax's ext types (1 ndarray, 2 native
// complex, 3 npscalar: flax/serialization.py) registered, and prints one
// JSON object: file -> {tensors: {name: {dtype, shape, nbytes, sha256}},
// values: {name: value}}, names the keys joined with '.', chunked arrays
// ('__msgpack_chunked_array__') their chunks' bytes joined.
// usage: node flax_reader.cjs PACKAGE_DIR FILE...
"use strict";
const fs = require("fs");
const crypto = require("crypto");
const mp = require(process.argv[2]);

const codec = new mp.ExtensionCodec();
const array = (data) => {
  const [shape, dtype, bytes] = mp.decode(data);
  return { flax: "array", shape, dtype: String(dtype), bytes };
};
codec.register({ type: 1, encode: () => null, decode: array });
codec.register({ type: 3, encode: () => null, decode: array });
codec.register({
  type: 2, encode: () => null,
  decode: (data) => { const [re, im] = mp.decode(data); return { real: re, imag: im }; },
});

function walk(v, name, out) {
  if (v && v.flax === "array") {
    const h = crypto.createHash("sha256").update(v.bytes).digest("hex");
    out.tensors[name] = { dtype: v.dtype, shape: v.shape, nbytes: v.bytes.length, sha256: h };
  } else if (v && typeof v === "object" && "__msgpack_chunked_array__" in v) {
    const n = Object.keys(v.chunks).length, parts = [];
    for (let i = 0; i < n; i++) parts.push(v.chunks[String(i)].bytes);
    const all = Buffer.concat(parts.map((p) => Buffer.from(p)));
    const shape = [];
    for (let i = 0; i < Object.keys(v.shape).length; i++) shape.push(v.shape[String(i)]);
    out.tensors[name] = {
      dtype: v.chunks["0"].dtype, shape, nbytes: all.length,
      sha256: crypto.createHash("sha256").update(all).digest("hex"),
    };
  } else if (v && typeof v === "object" && !Array.isArray(v) && !("real" in v && "imag" in v)) {
    for (const k of Object.keys(v)) walk(v[k], name ? name + "." + k : k, out);
  } else {
    out.values[name] = v;
  }
}

const result = {};
for (const f of process.argv.slice(3)) {
  const out = { tensors: {}, values: {} };
  walk(mp.decode(fs.readFileSync(f), { extensionCodec: codec }), "", out);
  result[f] = out;
}
process.stdout.write(JSON.stringify(result));
