// mount.loaders' from_pretrained: @huggingface/transformers (npm, the
// JavaScript port of transformers) loads the tiny model from each folder
// given (config.json, tokenizer.json, onnx/model.onnx and its external
// data), local files only, and embeds one sentence; prints one JSON
// object: folder -> {dims, data}, or {error}.
// usage: node transformers_run.mjs PACKAGE_DIR FOLDER...
const [pkg, ...folders] = process.argv.slice(2);
const { pipeline, env } = await import(pkg + "/dist/transformers.node.mjs");
env.allowRemoteModels = false;
const out = {};
for (const folder of folders) {
  try {
    const dir = folder.replace(/\/+$/, "");
    env.localModelPath = dir.slice(0, dir.lastIndexOf("/") + 1);
    const p = await pipeline("feature-extraction", dir.slice(dir.lastIndexOf("/") + 1), { dtype: "fp32" });
    const y = await p("hello world fs");
    out[folder] = { dims: y.dims, data: Array.from(y.data) };
  } catch (e) {
    out[folder] = { error: String(e) };
  }
}
console.log(JSON.stringify(out));
