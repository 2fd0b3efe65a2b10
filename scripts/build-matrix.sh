#!/bin/sh
# Builds (no tests) every build type with gcc and with clang, warnings as
# errors (-DMODELFS_WERROR=ON), each from clean in build-matrix/CC-TYPE, plus
# the two instrumented builds scripts/test.sh makes (gcc ASan/UBSan, clang
# libFuzzer). Fails if any build fails or its log shows a warning: a
# packager's build must be warning-free whatever build type or compiler it
# uses (the optimization level changes what the compiler warns about, e.g.
# -Wmaybe-uninitialized at -O3). One line per build, then a closing line;
# each build's log stays in build-matrix/NAME.log.
set -u
cd "$(dirname "$0")/.." || exit 1
jobs=$(nproc 2>/dev/null || echo 2)

combos="gcc:Debug gcc:Release gcc:RelWithDebInfo gcc:MinSizeRel
        clang:Debug clang:Release clang:RelWithDebInfo clang:MinSizeRel
        gcc:RelWithDebInfo:asan clang:RelWithDebInfo:fuzz"

mkdir -p build-matrix
failed=0
total=0
for combo in $combos; do
    cc=${combo%%:*}
    rest=${combo#*:}
    type=${rest%%:*}
    extra=""
    case $rest in *:*) extra=${rest#*:} ;; esac
    name=$cc-$type${extra:+-$extra}
    dir=build-matrix/$name
    log=build-matrix/$name.log
    case $extra in
        asan) opts="-DMODELFS_SANITIZE=ON" ;;
        fuzz) opts="-DMODELFS_FUZZ=ON" ;;
        *) opts="" ;;
    esac
    # The TSan copies of the libraries (tests/CMakeLists.txt) compile with
    # their own -O1 -g1: under Release and MinSizeRel exactly as under
    # RelWithDebInfo (-DNDEBUG too), which builds them.
    case $type in
        Release|MinSizeRel) opts="$opts -DMODELFS_TSAN=OFF" ;;
    esac
    total=$((total + 1))
    start=$(date +%s)
    # shellcheck disable=SC2086
    if cmake -S . -B "$dir" -G "Unix Makefiles" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE="$type" \
            -DMODELFS_WERROR=ON -DMODELFS_SANITIZE=OFF -DMODELFS_FUZZ=OFF $opts >"$log" 2>&1 &&
       cmake --build "$dir" --clean-first -j "$jobs" -- -k >>"$log" 2>&1; then
        status=ok
    else
        status=FAILED
    fi
    # -Werror covers the compiler's warnings, not cmake's or the linker's;
    # the count includes all of them (make -k goes on past a failed file).
    nwarn=$(grep -c -i -E 'warning:|\[-Werror|cmake warning' "$log")
    [ "$nwarn" -gt 0 ] && status=FAILED
    printf '%-28s %-6s  %d warnings  %ds\n' "$name" "$status" "$nwarn" $(($(date +%s) - start))
    if [ "$status" != ok ]; then
        failed=$((failed + 1))
        grep -i -E 'warning:|error:|cmake (warning|error)' "$log" | sort -u | head -20 | sed 's/^/    /'
        echo "    (full log: $log)"
    fi
done
if [ "$failed" -gt 0 ]; then
    echo "build-matrix: $failed of $total builds FAILED"
    exit 1
fi
echo "build-matrix: all $total builds ok, no warnings"
