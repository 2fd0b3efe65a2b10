#!/bin/sh
# usage: fetch_npm.sh NAME PKG@VERSION DIR WANT
# Installs PKG@VERSION once with npm into DIR (not globally) and prints
# DIR/WANT, the file a test runs or reads (a program, a package folder).
# Exits 77 (the tests' skip code) when npm is missing or the registry
# cannot be reached, so that the test says so and goes on without it;
# NAME begins each message. Used by fetch_s3rver.sh and fetch_hfhub.sh.
set -eu
[ $# -eq 4 ] || { echo "usage: fetch_npm.sh NAME PKG@VERSION DIR WANT" >&2; exit 2; }
name=$1
pkg=$2
dir=$3
out="$dir/$4"
if [ -f "$dir/.complete" ] && [ -e "$out" ]; then
    echo "$out"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "$name: npm is not installed" >&2
    exit 77
fi
mkdir -p "$dir"
if ! timeout 300 npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "$pkg" \
        >"$dir/npm.log" 2>&1; then
    # The lines that say why (a package's install script that fetches from
    # elsewhere, as openvino-node's runtime does, fails here too), not
    # npm's pointer to its debug log.
    why=$(grep -v -e 'complete log of this run' -e '^npm error *$' "$dir/npm.log" |
          grep -m 3 -i -e 'failed' -e 'ENOTFOUND' -e 'ETIMEDOUT' -e 'ECONNREFUSED' -e 'E404' -e 'code E' | cut -c1-200 || true)
    echo "$name: npm install $pkg failed (registry unreachable?): ${why:-$(tail -n 3 "$dir/npm.log")}" >&2
    exit 77
fi
[ -e "$out" ] || { echo "$name: $pkg installed no $out" >&2; exit 1; }
touch "$dir/.complete"
echo "$out"
