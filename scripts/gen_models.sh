#!/bin/sh
# Generates the project's own test models into OUTDIR/<format>/ (each with
# its .expect.json). Used by ctest, the benchmarks and the demo.
# The generators are independent: they run side by side (ctest's mount
# tests all wait for this one), and any that fails fails the whole.
set -eu
out=${1:?usage: gen_models.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3

# What the models depend on: every script and schema here, and the
# versions of the tools the generators call. MFS_GEN_REUSE=DIR copies DIR
# instead (another build's models) when it was made from the same.
stamp=$( (cat "$here"/*.py "$here"/gen_models.sh "$here"/../schemas/*;
          "$py" -c 'import numpy, onnx, sys; print(sys.version, numpy.__version__, onnx.__version__)';
          "$py" -c 'import h5py; print(h5py.__version__, h5py.version.hdf5_version)' 2>/dev/null || true;
          "$py" -c 'import torch; print(torch.__version__)' 2>/dev/null || true;
          flatc --version 2>/dev/null || true) | sha256sum | cut -d' ' -f1)
reuse=${MFS_GEN_REUSE:-}
if [ -n "$reuse" ] && [ -f "$reuse/.stamp" ] && [ "$(cat "$reuse/.stamp")" = "$stamp" ]; then
    rm -rf "$out"
    mkdir -p "$out"
    cp -a "$reuse/." "$out/"
    echo "gen_models: models copied from $reuse (made from the same scripts and tools)"
    exit 0
fi
rm -f "$out/.stamp"
pids=""
run() {
    "$py" "$@" &
    pids="$pids $!"
}
for g in rten gguf ptd tb carton pytorch; do
    mkdir -p "$out/$g"
    run "$here/gen_$g.py" "$out/$g"
done
run "$here/gen_safetensors.py" "$out/safetensors" "$out/safetensors_sharded"
run "$here/gen_numpy.py" "$out/numpy"
run "$here/gen_onnx.py" "$out/onnx"
run "$here/gen_onnx_tensor.py" "$out/onnx_tensor"
run "$here/gen_tflite.py" "$out/tflite"
run "$here/gen_flax.py" "$out/flax"
mkdir -p "$out/pte"
run "$here/gen_pte.py" "$out/pte"
run "$here/gen_tfjs.py" "$out/tfjs" "$out/tfjs_repo"
run "$here/gen_hdf5.py" "$out/hdf5"
run "$here/gen_openvino.py" "$out/openvino" "$out/openvino_hostile"
# TorchScript: written and read back by torch itself (python3-torch).
run "$here/gen_torchscript.py" "$out/torchscript"
# Not models: the zip layer's archives for unit.test_zip, made once here
# (70,000 entries through Python's zipfile take seconds).
run "$here/gen_zips.py" "$out/zips"
failed=0
for p in $pids; do
    wait "$p" || failed=1
done
if [ "$failed" -ne 0 ]; then
    echo "gen_models: a generator failed (above)" >&2
    exit 1
fi
echo "$stamp" >"$out/.stamp"
echo "gen_models: models written to $out"
