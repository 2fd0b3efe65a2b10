#!/bin/sh
# @msgpack/msgpack 2.8.0, the second msgpack reader of mount.flax
# (tests/mount/flax_reader.cjs), installed once with npm into DIR (not
# globally); prints the path of its package folder. Exits 77 (the tests'
# skip code) when npm is missing or the registry cannot be reached.
exec "${0%/*}/fetch_npm.sh" fetch_msgpack_js @msgpack/msgpack@2.8.0 \
    "${1:?usage: fetch_msgpack_js.sh DIR}" node_modules/@msgpack/msgpack
