#!/usr/bin/env bash
# Sanitizer and fuzzer runs (issue 7). Each mode builds in its own directory
# so that it never disturbs the plain build.
#
#   scripts/sanitize.sh asan        unit tests under AddressSanitizer + UBSan
#                                   (g++, libgomp; build-asan)
#   scripts/sanitize.sh tsan        the threaded tests under ThreadSanitizer
#                                   (clang + LLVM libomp with its Archer tool,
#                                   which tells TSan about OpenMP's
#                                   synchronization; build-tsan)
#   scripts/sanitize.sh fuzz SECS   the API fuzzer for SECS seconds (clang,
#                                   libFuzzer + ASan + UBSan; build-fuzz);
#                                   fails on any finding
#
# Environment: JOBS (build parallelism, default 2); ASAN_EXCLUDE (a ctest -E
# regex of tests too slow under ASan and run by the plain build anyway: the
# 2^24-pattern sweeps of the f32 math and of every op (~4 min plain, ~3x that
# under ASan) and the MPFR check of the double reference, which touches no
# library memory); TSAN_FILTER (a gtest filter for the TSan tests).
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-2}
ASAN_EXCLUDE=${ASAN_EXCLUDE:-AccuracySweep|GeluMathTest|RefVsMpfr|Sweep|Exhaustive}
mode=${1:?usage: scripts/sanitize.sh asan|tsan|fuzz [seconds]}

# Sanitized builds compile the Highway kernels for one SIMD target only: the
# best this machine has (-march=native; HWY_COMPILE_ONLY_STATIC trumps the
# kernels' HWY_COMPILE_ALL_ATTAINABLE), i.e. the code dynamic dispatch runs
# here. Every target under sanitizers costs ~4x the build time; the plain
# build still tests every target. -O1 -g: the usual sanitizer setting, and
# far cheaper to compile than -O2 for template-heavy SIMD code.
NATIVE='-march=native -DHWY_COMPILE_ONLY_STATIC=1'
configure() {  # dir, extra cmake args...
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DGELU_WITH_TORCH=OFF -DGELU_WITH_TOOLS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g' \
    "$@" >/dev/null
}

case "$mode" in
  asan)
    flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer $NATIVE"
    configure build-asan -DCMAKE_CXX_COMPILER=g++ "-DCMAKE_CXX_FLAGS=$flags" \
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined"
    cmake --build build-asan -j "$JOBS"
    # detect_leaks: libgomp's thread pool lives until exit by design.
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-asan --output-on-failure -j "$JOBS" \
      -E "$ASAN_EXCLUDE"
    ;;
  tsan)
    # Only the library and the threaded tests are built under TSan (the rest
    # of the suite runs in the plain and ASan builds): the concurrent-callers
    # test and the thread-count determinism tests.
    flags="-fsanitize=thread -fno-omit-frame-pointer $NATIVE"
    configure build-tsan -DCMAKE_CXX_COMPILER=clang++ "-DCMAKE_CXX_FLAGS=$flags" \
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread"
    cmake --build build-tsan -j "$JOBS" --target gelu_fusion gelu_ref
    clang++ -std=c++20 -O1 -g $flags -fopenmp -Iinclude -Isrc -I. -Itests \
      $(ls tests/reliability_*_test.cpp tests/ops_inplace_threads_test.cpp 2>/dev/null) \
      build-tsan/libgelu_ref.a build-tsan/libgelu_fusion.a -lhwy -lgtest -lgtest_main -lpthread \
      -o build-tsan/tsan_tests
    # libomp itself is not instrumented; Archer (libarcher.so, LLVM's OMPT
    # tool for TSan) reports OpenMP's fork, barriers and join to TSan, and
    # scripts/tsan.supp ignores libomp's own internal locking (one line,
    # with its reason).
    archer=$(ls /usr/lib/llvm-*/lib/libarcher.so 2>/dev/null | head -n 1)
    [ -n "$archer" ] || { echo "sanitize.sh: libarcher.so not found (libomp-dev)" >&2; exit 1; }
    OMP_TOOL_LIBRARIES=$archer ARCHER_OPTIONS=verbose=1 \
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp \
      build-tsan/tsan_tests --gtest_filter="${TSAN_FILTER:-*}"
    ;;
  fuzz)
    secs=${2:-60}
    flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer $NATIVE"
    configure build-fuzz -DCMAKE_CXX_COMPILER=clang++ \
      "-DCMAKE_CXX_FLAGS=$flags -fsanitize=fuzzer-no-link"
    cmake --build build-fuzz -j "$JOBS" --target gelu_fusion gelu_ref
    clang++ -std=c++20 -O1 -g $flags -fsanitize=fuzzer -fopenmp \
      -Iinclude -Isrc -I. fuzz/fuzz_api.cpp build-fuzz/libgelu_ref.a build-fuzz/libgelu_fusion.a \
      $(pkg-config --libs libhwy 2>/dev/null || echo -lhwy) \
      -o build-fuzz/fuzz_api
    mkdir -p build-fuzz/corpus
    # New inputs go to build-fuzz/corpus; fuzz/corpus is the committed seed.
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      build-fuzz/fuzz_api -max_total_time="$secs" -timeout=20 -max_len=4096 \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=build-fuzz/ \
      build-fuzz/corpus fuzz/corpus
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan|fuzz [seconds]" >&2
    exit 2
    ;;
esac
