#!/bin/sh
# The whole test suite: installs what it needs, builds twice with warnings
# as errors (normal, and with AddressSanitizer + UndefinedBehaviorSanitizer),
# runs ctest in both,
# then (MODELFS_FUZZ_SECONDS > 0) runs every libFuzzer target that long.
# Real mounts need root (or fusermount3) and /dev/fuse; without them the
# mount tests say SKIP.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

./scripts/install-deps.sh

build_and_test() {
    dir=$1
    shift
    echo "== $dir: configure and build"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMODELFS_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
    echo "== $dir: ctest"
    (cd "$dir" && ctest --output-on-failure -j "$jobs")
}

build_and_test build
build_and_test build-asan -DMODELFS_SANITIZE=ON

seconds=${MODELFS_FUZZ_SECONDS:-0}
if [ "$seconds" -gt 0 ]; then
    echo "== build-fuzz: libFuzzer targets, $seconds s each"
    cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DMODELFS_FUZZ=ON -DMODELFS_WERROR=ON >/dev/null
    cmake --build build-fuzz -j "$jobs"
    for f in build-fuzz/tests/fuzz/fuzz_*; do
        name=$(basename "$f" | sed 's/^fuzz_//')
        corpus=build-fuzz/corpus-$name
        mkdir -p "$corpus"
        [ -d "tests/fuzz/corpus/$name" ] && cp -n tests/fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
        "$f" -max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1 "$corpus" \
            >"build-fuzz/$name.log" 2>&1 || { tail -50 "build-fuzz/$name.log"; exit 1; }
        echo "fuzz_$name: $(grep -m1 'stat::number_of_executed_units' "build-fuzz/$name.log" | awk '{print $2}') runs, no crash"
    done
fi
echo "test.sh: all stages passed"
