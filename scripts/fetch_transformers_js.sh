#!/bin/sh
# @huggingface/transformers 3.x (transformers.js, with onnxruntime-node),
# mount.loaders' from_pretrained, installed once with npm into DIR (not
# globally); prints the path of its package folder. onnxruntime-node's
# install script would fetch CUDA libraries from a host other than the
# registry: told to skip them. Exits 77 (the tests' skip code) when npm is
# missing or the registry cannot be reached.
ONNXRUNTIME_NODE_INSTALL_CUDA=skip
export ONNXRUNTIME_NODE_INSTALL_CUDA
exec "${0%/*}/fetch_npm.sh" fetch_transformers_js @huggingface/transformers@3 \
    "${1:?usage: fetch_transformers_js.sh DIR}" node_modules/@huggingface/transformers
