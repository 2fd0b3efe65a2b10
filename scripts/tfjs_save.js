// Writes TensorFlow.js models with npm's @tensorflow/tfjs itself (pure JS,
// the cpu backend), for tests/mount/formats/tfjs.py:
//  - layers.json: a tf.sequential model saved through tf.io.withSaveHandler
//    (the artifacts the library hands an IO handler: modelTopology,
//    weightSpecs, weightData), its weightData cut into 100-byte shards;
//  - encoded.json: int32, bool, complex64, string and float32 tensors
//    encoded by tf.io.encodeWeights, plus quantized weights: the JS API has
//    no quantizing save (tfjs-converter, Python, does that), so their bytes
//    are laid out here following the facts (uint8/uint16 q with scale and
//    min; float16), and their values come from the library's own
//    tf.io.decodeWeights.
// Each with NAME.json.expect.json: every weight's dtype (as stored), shape,
// nbytes and the sha256 of its stored bytes, computed here from the
// library's arrays; quantized ones add f32_sha256, the sha256 of the
// float32 values decodeWeights gives.
// usage: NODE_PATH=.../node_modules node tfjs_save.js OUTDIR
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const tf = require('@tensorflow/tfjs');

const out = process.argv[2];
const SHARD = 100;

function sha(buf) {
  return crypto.createHash('sha256').update(Buffer.from(buf)).digest('hex');
}

function bytesOf(wd) {
  // weightData: one ArrayBuffer, or (tfjs >= 4.10) a list of them.
  const parts = Array.isArray(wd) ? wd : [wd];
  return Buffer.concat(parts.map((b) => Buffer.from(b)));
}

function writeModel(name, artifacts, specs, data, tensors) {
  const paths = [];
  const n = Math.max(1, Math.ceil(data.length / SHARD));
  for (let i = 0; i < n; i++) {
    const p = `${name}-group1-shard${i + 1}of${n}.bin`;
    fs.writeFileSync(path.join(out, p), data.subarray(i * SHARD, (i + 1) * SHARD));
    paths.push(p);
  }
  const doc = Object.assign({}, artifacts, {weightsManifest: [{paths, weights: specs}]});
  const file = path.join(out, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(doc));
  const expect = {format: 'tfjs', expect: 'readable', file_size: fs.statSync(file).size,
                  tensor_count: tensors.length, tensors};
  fs.writeFileSync(`${file}.expect.json`, JSON.stringify(expect, null, 1));
}

// The stored bytes of each weight as decodeWeights' tensors give them.
function storedOf(specs, data) {
  const decoded = tf.io.decodeWeights(data.buffer.slice(data.byteOffset, data.byteOffset + data.length), specs);
  const list = [];
  let at = 0;
  for (const s of specs) {
    const t = decoded[s.name];
    const count = s.shape.reduce((a, b) => a * b, 1);
    const entry = {name: s.name, shape: s.shape};
    if (s.dtype === 'string') {
      // Walked in the encoded bytes (decodeWeights' strings are not the
      // UTF-8 bytes in every version): each a 4-byte length and the bytes.
      const vals = [];
      let n = 0;
      for (let i = 0; i < count; i++) {
        const len = data.readUInt32LE(at + n);
        vals.push(data.subarray(at + n + 4, at + n + 4 + len).toString('utf8'));
        n += 4 + len;
      }
      if (t.size !== count) throw new Error(`${s.name}: decodeWeights gave ${t.size} strings`);
      Object.assign(entry, {dtype: 'string', values: vals, stored_nbytes: n});
      at += n;
    } else if (s.quantization) {
      const q = s.quantization;
      const size = q.dtype === 'uint8' ? 1 : 2;
      const raw = data.subarray(at, at + count * size);
      const vals = t.dataSync();
      Object.assign(entry, {dtype: q.dtype, nbytes: raw.length, sha256: sha(raw),
                            f32_sha256: sha(new Uint8Array(new Float32Array(vals).buffer))});
      at += count * size;
    } else {
      const vals = t.dataSync();
      let raw;
      if (s.dtype === 'bool') raw = Uint8Array.from(vals);
      else if (s.dtype === 'complex64') {
        // A complex tensor's values interleave real and imaginary parts.
        raw = new Uint8Array(new Float32Array(vals).buffer);
      } else raw = new Uint8Array(vals.buffer, vals.byteOffset, vals.byteLength);
      Object.assign(entry, {dtype: s.dtype, nbytes: raw.length, sha256: sha(raw)});
      at += raw.length;
    }
    list.push(entry);
  }
  if (at !== data.length) throw new Error(`weights take ${at} bytes of ${data.length}`);
  return list;
}

// float32 -> float16 bits, round to nearest even (for laying out float16
// quantization; decodeWeights reads them back).
function f16bits(x) {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  let e = ((u >>> 23) & 0xff) - 127 + 15;
  let m = u & 0x7fffff;
  if (e <= 0) return sign;              // tiny values: the test's are not
  if (e >= 31) return sign | 0x7c00;
  let h = sign | (e << 10) | (m >>> 13);
  const rest = m & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h += 1;
  return h;
}

async function main() {
  await tf.setBackend('cpu');
  fs.mkdirSync(out, {recursive: true});

  // A layers model, saved by the library.
  const model = tf.sequential();
  model.add(tf.layers.dense({units: 7, inputShape: [5], activation: 'relu', name: 'd1'}));
  model.add(tf.layers.dense({units: 3, name: 'd2'}));
  let art;
  await model.save(tf.io.withSaveHandler(async (a) => {
    art = a;
    return {modelArtifactsInfo: {dateSaved: new Date(), modelTopologyType: 'JSON'}};
  }));
  const data = bytesOf(art.weightData);
  const {weightSpecs} = art;
  const meta = {modelTopology: art.modelTopology, format: art.format, generatedBy: art.generatedBy,
                convertedBy: art.convertedBy || null};
  writeModel('layers', meta, weightSpecs, data, storedOf(weightSpecs, data));

  // Tensors of every dtype, encoded by the library.
  const named = [
    {name: 'ints', tensor: tf.tensor1d([1, -2, 3, 2147483647, -2147483648], 'int32')},
    {name: 'flags', tensor: tf.tensor2d([[true, false, true], [false, false, true]], [2, 3], 'bool')},
    {name: 'z', tensor: tf.complex([1.5, -2, 3.25, 0.5], [0, 1, -1, 2.75]).reshape([2, 2])},
    {name: 'words', tensor: tf.tensor1d(['tf', 'h\u00e9llo', '', 'x'.repeat(130)], 'string')},
    {name: 'f', tensor: tf.randomNormal([6, 5], 0, 1, 'float32', 7)},
  ];
  const enc = await tf.io.encodeWeights(named);
  const specs = enc.specs.slice();
  const parts = [bytesOf(enc.data)];
  // Quantized weights, laid out as tfjs-converter writes them.
  const q8 = Uint8Array.from({length: 24}, (_, i) => (i * 37 + 11) % 256);
  specs.push({name: 'q8', shape: [4, 6], dtype: 'float32',
              quantization: {dtype: 'uint8', scale: 0.01171875, min: -1.25, original_dtype: 'float32'}});
  parts.push(Buffer.from(q8));
  const q16 = Uint16Array.from({length: 15}, (_, i) => (i * 4099 + 7) % 65536);
  specs.push({name: 'q16', shape: [3, 5], dtype: 'float32',
              quantization: {dtype: 'uint16', scale: 3.0517578125e-05, min: -0.75,
                             original_dtype: 'float32'}});
  parts.push(Buffer.from(q16.buffer));
  const half = Uint16Array.from([0.5, -1.25, 3.140625, 100, -0.0009765625, 65504].map(f16bits));
  specs.push({name: 'half', shape: [2, 3], dtype: 'float32', quantization: {dtype: 'float16'}});
  parts.push(Buffer.from(half.buffer));
  const all = Buffer.concat(parts);
  writeModel('encoded', {format: 'layers-model', generatedBy: `TensorFlow.js tfjs-core v${tf.version_core}`,
                         convertedBy: null}, specs, all, storedOf(specs, all));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
