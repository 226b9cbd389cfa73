#!/usr/bin/env bash
# Tests of scripts/gpu-check.sh on the build machine (`make test`, after the
# dry run): that it fails where it must, with a message naming the cause.
#   - broken copies of the bundle: without the PyTorch extension, without
#     Highway, over 64 MiB;
#   - memcheck with stand-ins for compute-sanitizer: one that calls the
#     device unsupported (a skip, not a failure), one that reports an error
#     (a failure), one that runs the tests cleanly (a pass);
#   - the result parser: an unexpected skip and a crashed test fail, the
#     listed skips do not; the pytest plugin counts a stray skip a failure;
#   - without --dry-run and without a GPU it stops at once, saying so.
# Usage: scripts/test-gpu-check.sh [BUNDLE_DIR]   (gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bundle=${1:-gpu-bundle}
[ -d "$bundle" ] || { echo "test-gpu-check: no bundle at $bundle (make gpu-bundle)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${GELU_PYTHON:-}
[ -n "$py" ] || { [ -x .venv/bin/python ] && py=.venv/bin/python || py=python3; }
py=$(command -v "$py")
py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py")  # absolute, the venv's link kept
export GELU_PYTHON=$py
failures=0
n=0

check() {  # name, want-rc (0 or fail), regex the output must match, command...
  local name=$1 want=$2 re=$3 rc=0
  shift 3
  n=$((n + 1))
  "$@" >"$work/out" 2>&1 || rc=$?
  if { [ "$want" = 0 ] && [ $rc != 0 ]; } || { [ "$want" = fail ] && [ $rc = 0 ]; }; then
    echo "test-gpu-check: FAIL: $name: exit $rc, expected $want" >&2
    tail -20 "$work/out" | sed 's/^/  | /' >&2
    failures=$((failures + 1))
  elif ! grep -Eq -- "$re" "$work/out"; then
    echo "test-gpu-check: FAIL: $name: no line matches /$re/" >&2
    tail -20 "$work/out" | sed 's/^/  | /' >&2
    failures=$((failures + 1))
  else
    echo "test-gpu-check: ok: $name: $(grep -E -m1 -- "$re" "$work/out")"
  fi
}

broken() {  # name: a copy of the bundle in $work/name
  rm -rf "${work:?}/$1"
  cp -a "$bundle" "$work/$1"
  echo "$work/$1"
}

b=$(broken no-extension)
rm "$b/python/gelu_fusion/_gelu_fusion_ops.so"
check "bundle without the extension" fail 'MISSING: python/gelu_fusion/_gelu_fusion_ops.so \(the PyTorch extension\)' \
  env GPU_CHECK_BUNDLE="$b" OUT="$work/r1" bash scripts/gpu-check.sh --dry-run smoke

b=$(broken no-highway)
rm "$b/lib/libhwy.so.1"
check "bundle without Highway" fail 'MISSING: libhwy\.so\.1 \(needed by bin/gelu_cuda_tests' \
  env GPU_CHECK_BUNDLE="$b" OUT="$work/r2" bash scripts/gpu-check.sh --dry-run smoke

b=$(broken too-large)
truncate -s 65M "$b/lib/padding"
check "bundle over 64 MiB" fail 'TOO LARGE: [0-9]+ MiB, at most 64 MiB' bash scripts/gpu-bundle-check.sh "$b"
rm -rf "$work/no-extension" "$work/no-highway" "$work/too-large"

# Stand-ins for compute-sanitizer: each runs the tests (the argument that
# names gelu_cuda_tests, and what follows it), then says its line.
fake() {  # name, lines to print after the tests, exit code
  cat >"$work/$1" <<EOF
#!/usr/bin/env bash
echo "========= COMPUTE-SANITIZER"
while [ \$# -gt 0 ] && [[ "\$1" != */gelu_cuda_tests ]]; do shift; done
"\$@"
printf '%s\n' $2
exit $3
EOF
  chmod +x "$work/$1"
  echo "$work/$1"
}
san=$(fake unsupported "'========= Error: Device not supported. Please refer to the \"Supported Devices\" section of the sanitizer documentation'" 1)
check "memcheck, device unsupported by compute-sanitizer: skipped" 0 '^gpu-check memcheck: [0-9]+ passed, 0 failed, [0-9]+ skipped' \
  env GPU_CHECK_SANITIZER="$san" OUT="$work/r3" bash scripts/gpu-check.sh --dry-run memcheck
grep -q '^skipped: unsupported by compute-sanitizer$' "$work/r3/memcheck.log" \
  || { echo "test-gpu-check: FAIL: memcheck did not say 'skipped: unsupported by compute-sanitizer'" >&2; failures=$((failures + 1)); }
san=$(fake reports-error "'========= Invalid __global__ write of size 4 bytes' '========= ERROR SUMMARY: 1 error'" 3)
check "memcheck, an error reported: fails" fail 'FAILED sanitizer: compute-sanitizer: 1 errors reported' \
  env GPU_CHECK_SANITIZER="$san" OUT="$work/r4" bash scripts/gpu-check.sh --dry-run memcheck
san=$(fake clean "'========= ERROR SUMMARY: 0 errors'" 0)
check "memcheck, no error: passes" 0 '^gpu-check memcheck: [1-9][0-9]* passed, 0 failed' \
  env GPU_CHECK_SANITIZER="$san" OUT="$work/r5" bash scripts/gpu-check.sh --dry-run memcheck

cat >"$work/hangs" <<'EOF'
#!/usr/bin/env bash
echo "[ RUN      ] CudaApi.Hangs"
exec sleep 60
EOF
chmod +x "$work/hangs"
check "a stage past its time limit fails, saying so" fail "stopped at the stage's time limit" \
  env GPU_CHECK_SANITIZER="$work/hangs" GPU_CHECK_STAGE_SECONDS=2 OUT="$work/r6" \
  bash scripts/gpu-check.sh --dry-run memcheck

# The parser, on GoogleTest's output as a GPU run prints it.
gpu_skips='CudaApi.WithoutAGpuAValidCallThrows|a CUDA device is present
All/CudaOps.BiasGelu*/*_r|bias needs rank >= 1'
parse() {  # json, gtest output on stdin
  "$py" scripts/gpu_check_results.py begin "$1" accuracy gpu
  GPU_CHECK_EXPECTED_SKIPS=$gpu_skips "$py" scripts/gpu_check_results.py gtest "$1" cpp >/dev/null
  GPU_CHECK_EXPECTED_SKIPS=$gpu_skips "$py" scripts/gpu_check_results.py close "$1"
}
expected='[ RUN      ] CudaApi.WithoutAGpuAValidCallThrows
x.cpp:94: Skipped
a CUDA device is present

[  SKIPPED ] CudaApi.WithoutAGpuAValidCallThrows (0 ms)
[ RUN      ] All/CudaOps.BiasGelu/none_f32_r
x.cpp:84: Skipped
bias needs rank >= 1
[  SKIPPED ] All/CudaOps.BiasGelu/none_f32_r (0 ms)
[ RUN      ] All/CudaOps.Gelu/none_f32_r_7
[       OK ] All/CudaOps.Gelu/none_f32_r_7 (1 ms)'
check "parser: the listed skips" 0 '^gpu-check accuracy: 1 passed, 0 failed, 2 skipped$' \
  parse "$work/p1.json" <<<"$expected"
check "parser: a skip not listed fails" fail "unexpected skip: 'needs 12 GiB of device memory'" \
  parse "$work/p2.json" <<<"$expected
[ RUN      ] CudaApi.IndicesPast2To31
x.cpp:163: Skipped
needs 12 GiB of device memory
[  SKIPPED ] CudaApi.IndicesPast2To31 (0 ms)"
check "parser: a listed reason on another test fails" fail "All/CudaOps.Gelu/none_f32_r: unexpected skip" \
  parse "$work/p3.json" <<<"[ RUN      ] All/CudaOps.Gelu/none_f32_r
x.cpp:84: Skipped
bias needs rank >= 1
[  SKIPPED ] All/CudaOps.Gelu/none_f32_r (0 ms)"
check "parser: parameterized failures count, each" fail '^gpu-check accuracy: 1 passed, 2 failed, 2 skipped$' \
  parse "$work/p5.json" <<<"$expected
[ RUN      ] All/CudaOps.Gelu/none_f32_r_13_17
x.cpp:40: Failure
[  FAILED  ] All/CudaOps.Gelu/none_f32_r_13_17, where GetParam() = (4-byte object <00-00 00-00>, { 13, 17 }) (0 ms)
[ RUN      ] All/CudaOps.Gelu/none_bf16_r_13_17
x.cpp:40: Failure
[  FAILED  ] All/CudaOps.Gelu/none_bf16_r_13_17, where GetParam() = (4-byte object <00-00 00-00>, { 13, 17 }) (0 ms)
[  FAILED  ] 2 tests, listed below:
[  FAILED  ] All/CudaOps.Gelu/none_f32_r_13_17, where GetParam() = (4-byte object <00-00 00-00>, { 13, 17 })"
check "parser: a test that never finished fails" fail 'CudaF32Sweep.GeluAndBackward/none: started and never finished' \
  parse "$work/p4.json" <<<"$expected
[ RUN      ] Forms/CudaF32Sweep.GeluAndBackward/none"

# The pytest plugin: a stray skip is a failure, whatever pytest's summary says.
mkdir -p "$work/pyt"
cat >"$work/pyt/test_plugin.py" <<'EOF'
import pytest


def test_passes():
    pass


def test_skips():
    pytest.skip("some reason nobody listed")
EOF
"$py" scripts/gpu_check_results.py begin "$work/p6.json" torch gpu
check "pytest plugin: a stray skip fails" fail "test_skips: unexpected skip: 'some reason nobody listed'" \
  env PYTHONPATH="$repo/scripts" GPU_CHECK_JSON="$work/p6.json" GPU_CHECK_EXPECTED_SKIPS= \
  bash -c "cd '$work/pyt' && '$py' -m pytest -q -p no:cacheprovider -p gpu_check_pytest test_plugin.py >/dev/null; '$py' '$repo/scripts/gpu_check_results.py' close '$work/p6.json'"

if "$py" -c 'import sys, torch; sys.exit(torch.cuda.is_available())'; then
  check "no GPU, no --dry-run: stops at once" fail 'no GPU' \
    env OUT="$work/r7" bash scripts/gpu-check.sh smoke
fi
check "an unknown stage is an error" fail "unknown stage or option 'smok'" \
  bash scripts/gpu-check.sh smok

echo "test-gpu-check: $((n - failures)) of $n checks passed"
[ "$failures" = 0 ]
