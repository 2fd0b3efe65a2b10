// The ground truth of real TensorFlow.js weights, from npm's
// @tensorflow/tfjs itself: for each weights manifest MANIFEST given
// (a JSON list of groups, as tf.io.loadWeights reads), its groups' shards
// beside it are read and handed to tf.io.decodeWeights, and
// MANIFEST.expect.json gets every weight's dtype as stored (the
// quantization's, when quantized), shape, nbytes, the sha256 of its stored
// bytes, and f32_sha256: the sha256 of the float32 values decodeWeights
// gives (its dequantization) for float32 weights.
// usage: NODE_PATH=.../node_modules node tfjs_decode.js MANIFEST...
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const tf = require('@tensorflow/tfjs');

const SIZE = {float32: 4, int32: 4, bool: 1, complex64: 8, uint8: 1, uint16: 2, float16: 2};

function sha(buf) {
  return crypto.createHash('sha256').update(Buffer.from(buf)).digest('hex');
}

async function main() {
  await tf.setBackend('cpu');
  for (const file of process.argv.slice(2)) {
    const groups = JSON.parse(fs.readFileSync(file, 'utf8'));
    const tensors = [];
    for (const g of groups) {
      const data = Buffer.concat(g.paths.map((p) => fs.readFileSync(path.join(path.dirname(file), p))));
      const ab = data.buffer.slice(data.byteOffset, data.byteOffset + data.length);
      const decoded = tf.io.decodeWeights(ab, g.weights);
      let at = 0;
      for (const w of g.weights) {
        if (w.dtype === 'string') throw new Error(`${file}: string weights are not expected here`);
        const count = w.shape.reduce((a, b) => a * b, 1);
        const stored = w.quantization ? w.quantization.dtype : w.dtype;
        const raw = data.subarray(at, at + count * SIZE[stored]);
        at += raw.length;
        const e = {name: w.name, dtype: stored, shape: w.shape, nbytes: raw.length, sha256: sha(raw)};
        if (w.dtype === 'float32') {
          e.f32_sha256 = sha(new Uint8Array(new Float32Array(decoded[w.name].dataSync()).buffer));
        }
        tensors.push(e);
      }
    }
    const expect = {format: 'tfjs', expect: 'readable', file_size: fs.statSync(file).size,
                    tensor_count: tensors.length, tensors};
    fs.writeFileSync(`${file}.expect.json`, JSON.stringify(expect, null, 1));
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
