#!/bin/sh
# s3rver 3.7.1, the S3 server mount.s3 also reads models from, installed
# once with npm into DIR (not globally); prints the path of its program.
# Exits 77 (the tests' skip code) when npm is missing or the registry
# cannot be reached, so that the test says so and goes on without it.
set -eu
dir=${1:?usage: fetch_s3rver.sh DIR}
pkg=s3rver@3.7.1
bin="$dir/node_modules/.bin/s3rver"
if [ -f "$dir/.complete" ] && [ -x "$bin" ]; then
    echo "$bin"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "fetch_s3rver: npm is not installed" >&2
    exit 77
fi
mkdir -p "$dir"
if ! timeout 300 npm install --prefix "$dir" --no-audit --no-fund --no-save --silent "$pkg" \
        >"$dir/npm.log" 2>&1; then
    echo "fetch_s3rver: npm install $pkg failed (registry unreachable?): $(tail -n 3 "$dir/npm.log")" >&2
    exit 77
fi
[ -x "$bin" ] || { echo "fetch_s3rver: $pkg installed no $bin" >&2; exit 1; }
touch "$dir/.complete"
echo "$bin"
