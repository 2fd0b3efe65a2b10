#!/bin/sh
# Generates the project's own test models into OUTDIR/<format>/ (each with
# its .expect.json). Used by ctest, the benchmarks and the demo.
set -eu
out=${1:?usage: gen_models.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
mkdir -p "$out/rten"
"$py" "$here/gen_rten.py" "$out/rten"
mkdir -p "$out/gguf" && "$py" "$here/gen_gguf.py" "$out/gguf"
for g in ptd tb; do
    if [ -f "$here/gen_$g.py" ]; then
        mkdir -p "$out/$g"
        "$py" "$here/gen_$g.py" "$out/$g"
    fi
done
"$py" "$here/gen_safetensors.py" "$out/safetensors" "$out/safetensors_sharded"
"$py" "$here/gen_numpy.py" "$out/numpy"
mkdir -p "$out/carton"
"$py" "$here/gen_carton.py" "$out/carton"
"$py" "$here/gen_onnx.py" "$out/onnx"
mkdir -p "$out/pytorch" && "$py" "$here/gen_pytorch.py" "$out/pytorch"
"$py" "$here/gen_tflite.py" "$out/tflite"
echo "gen_models: models written to $out"
