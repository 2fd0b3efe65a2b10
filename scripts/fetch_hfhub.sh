#!/bin/sh
# @huggingface/hub 2.17.5, the Hub's own JavaScript client, which
# mount.real_clients runs against tests/mount/hubserver.py; installed once
# with npm into DIR (not globally). Prints the path of its package folder.
# Exits 77 (the tests' skip code) when npm is missing or the registry
# cannot be reached, so that the test says so and goes on without it.
set -eu
dir=${1:?usage: fetch_hfhub.sh DIR}
pkg=@huggingface/hub@2.17.5
out="$dir/node_modules/@huggingface/hub"
if [ -f "$dir/.complete" ] && [ -f "$out/package.json" ]; then
    echo "$out"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "fetch_hfhub: npm is not installed" >&2
    exit 77
fi
mkdir -p "$dir"
if ! timeout 300 npm install --prefix "$dir" --no-audit --no-fund --no-save --silent "$pkg" \
        >"$dir/npm.log" 2>&1; then
    echo "fetch_hfhub: npm install $pkg failed (registry unreachable?): $(tail -n 3 "$dir/npm.log")" >&2
    exit 77
fi
[ -f "$out/package.json" ] || { echo "fetch_hfhub: $pkg installed no $out" >&2; exit 1; }
touch "$dir/.complete"
echo "$out"
