// mount.loaders' ONNX runtime: onnxruntime-node (npm) makes a session from
// each model file given (its external data read from beside it, as the
// runtime does) and runs it on the tiny model's input; prints one JSON
// object: file -> {dims, data} of its output, or {error}.
// usage: node ort_run.cjs PACKAGE_DIR MODEL...
"use strict";
const ort = require(process.argv[2]);

(async () => {
  const out = {};
  for (const model of process.argv.slice(3)) {
    try {
      const s = await ort.InferenceSession.create(model);
      const ids = new ort.Tensor("int64", BigInt64Array.from([2n, 4n, 5n, 7n, 3n]), [1, 5]);
      const ones = new ort.Tensor("int64", BigInt64Array.from([1n, 1n, 1n, 1n, 1n]), [1, 5]);
      const zeros = new ort.Tensor("int64", new BigInt64Array(5), [1, 5]);
      const r = await s.run({ input_ids: ids, attention_mask: ones, token_type_ids: zeros });
      const y = r[s.outputNames[0]];
      out[model] = { dims: y.dims, data: Array.from(y.data) };
    } catch (e) {
      out[model] = { error: String(e) };
    }
  }
  console.log(JSON.stringify(out));
})();
