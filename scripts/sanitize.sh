#!/usr/bin/env bash
# Sanitizer and fuzzer runs. Each mode has its own build directory, made by
# CMake (cmake/sanitizers.cmake), so it never disturbs the plain build and a
# second run rebuilds only what changed.
#
#   scripts/sanitize.sh asan        unit tests under AddressSanitizer + UBSan
#                                   (clang + LLVM libomp; build-asan). Not g++:
#                                   its -O1 -g ASan+UBSan build of the
#                                   forced-inline kernel drivers (then one
#                                   file of row kernels) ran over 30 minutes
#                                   on 2 cores; clang is several times faster
#                                   here (docs/notes/build-times-log.md)
#   scripts/sanitize.sh tsan        the threaded tests under ThreadSanitizer
#                                   (clang + LLVM libomp with its Archer tool,
#                                   which tells TSan about OpenMP's
#                                   synchronization; build-tsan)
#   scripts/sanitize.sh fuzz SECS   the API fuzzer for SECS seconds (clang,
#                                   libFuzzer + ASan + UBSan; build-fuzz);
#                                   fails on any finding
#
# SIMD targets: these builds compile the CPU kernels for this CPU's best
# target only (-march=native and HWY_COMPILE_ONLY_STATIC, set by
# cmake/sanitizers.cmake whatever GELU_SIMD_TARGETS says), not every target
# as the Release build does: each target costs about as much again under
# the sanitizers, the costliest compiles of `make test`. That target is the
# code dispatch runs on this machine, and the kernel code is shared between
# targets (only the vector width and instructions differ), so the memory,
# undefined-behaviour and race checks keep their reach; the lower targets
# and the scalar fallback are compiled and tested, without a sanitizer, by
# the Release build (`make test-unit`), which keeps every target.
#
# GELU_SANITIZE_MARCH=haswell (AVX2), nehalem (SSE4), ...: the -march whose
# best target these builds compile instead, in build-asan-haswell etc. (the
# fuzzer on a narrower target: GELU_SANITIZE_MARCH=haswell make fuzz).
#
# Environment: JOBS (build parallelism, default 2); GELU_WERROR (ON: warnings
# are errors, as the Makefile sets in CI); GELU_MEASURE_COMPILES (ON: log
# each compile's memory, scripts/check-build-bounds.sh); TSAN_FILTER (a gtest filter for
# the TSan tests). The ASan run leaves out the tests labelled slow
# (tests/CMakeLists.txt: the 2^24-pattern sweeps, ~3x slower under ASan and
# run by the plain build anyway, and the MPFR check of the double reference,
# which touches no library memory).
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-2}
mode=${1:?usage: scripts/sanitize.sh asan|tsan|fuzz [seconds]}
march=${GELU_SANITIZE_MARCH:-native}
suffix=
[ "$march" = native ] || suffix=-$march

# -O1 -g: the usual sanitizer setting, and far cheaper to compile than -O2
# for template-heavy SIMD code. The compiler (CXX) is read on the first
# configure only; later runs reuse the directory as it is.
configure() {  # dir, compiler, extra cmake args...
  local dir=$1 cxx=$2
  shift 2
  CXX=$cxx cmake -S . -B "$dir" -G Ninja -DGELU_WITH_TORCH=OFF -DGELU_WITH_TOOLS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g' \
    "-DGELU_WERROR=${GELU_WERROR:-OFF}" \
    "-DGELU_MEASURE_COMPILES=${GELU_MEASURE_COMPILES:-OFF}" \
    "-DGELU_SANITIZE_MARCH=$march" "$@" >/dev/null
}

case "$mode" in
  asan)
    configure build-asan$suffix clang++ -DGELU_SANITIZE=address -DGELU_FUZZ=OFF
    cmake --build build-asan$suffix -j "$JOBS" --target gelu_tests
    # detect_leaks: the OpenMP runtime's thread pool lives until exit by design.
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-asan$suffix --output-on-failure -j "$JOBS" -LE slow
    ;;
  tsan)
    configure build-tsan$suffix clang++ -DGELU_SANITIZE=thread -DGELU_FUZZ=OFF
    cmake --build build-tsan$suffix -j "$JOBS" --target gelu_tsan_tests
    # libomp itself is not instrumented; Archer (libarcher.so, LLVM's OMPT
    # tool for TSan) reports OpenMP's fork, barriers and join to TSan, and
    # scripts/tsan.supp ignores libomp's own internal locking (one line,
    # with its reason).
    archer=$(ls /usr/lib/llvm-*/lib/libarcher.so 2>/dev/null | sed -n 1p)
    [ -n "$archer" ] || { echo "sanitize.sh: libarcher.so not found (libomp-dev)" >&2; exit 1; }
    OMP_TOOL_LIBRARIES=$archer ARCHER_OPTIONS=verbose=1 \
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp \
      build-tsan$suffix/tests/gelu_tsan_tests --gtest_filter="${TSAN_FILTER:-*}"
    ;;
  fuzz)
    secs=${2:-60}
    dir=build-fuzz$suffix
    configure "$dir" clang++ -DGELU_SANITIZE=address -DGELU_FUZZ=ON
    cmake --build "$dir" -j "$JOBS" --target fuzz_api
    # The SIMD target the kernels were compiled for (their namespace).
    echo "sanitize.sh: fuzz_api's kernels: $(nm -C "$dir/fuzz_api" |
      grep -o 'gelu::cpu::N_[A-Z0-9_]*' | sort -u | sed 's/.*::N_//' | tr '\n' ' ')"
    mkdir -p "$dir/corpus"
    # New inputs go to build-fuzz/corpus; fuzz/corpus is the committed seed.
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$dir/fuzz_api" -max_total_time="$secs" -timeout=20 -max_len=4096 \
      -rss_limit_mb=4096 -print_final_stats=1 "-artifact_prefix=$dir/" \
      "$dir/corpus" fuzz/corpus
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan|fuzz [seconds]" >&2
    exit 2
    ;;
esac
