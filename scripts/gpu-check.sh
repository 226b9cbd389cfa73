#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine, from a bundle built elsewhere
# (docs/cuda.md): `make gpu-bundle` on the build machine makes gpu-bundle/
# (scripts/gpu-bundle.sh); on the GPU machine, with the bundle beside the
# checkout, this script runs its stages. It compiles nothing, unless the
# carried PyTorch extension cannot load (scripts/gpu-build-extension.sh
# then rebuilds that one from the carried libraries, and says so).
#
#   scripts/gpu-check.sh [--dry-run] STAGE...
#
# Stages (each within about 4 minutes on an H100/H200; `all` runs them all):
#   smoke     loads the library and the extension, one op per dtype on the
#             device against the host, prints the device (under a minute)
#   accuracy  the GPU C++ tests (bundle's bin/gelu_cuda_tests), every one
#   memcheck  compute-sanitizer memcheck over the GPU C++ tests but the
#             sweeps; "skipped: unsupported by compute-sanitizer" where the
#             sanitizer does not support the device
#   torch     tests/python/test_cuda.py
#   graphs    CUDA graph capture (tests/python/test_cuda_graphs.py)
#   bench     scripts/gpu_bench.py: each op per dtype against PyTorch's
#
# Each stage writes STAGE.log and STAGE.json (what it measured, rewritten
# after each test) into $OUT, else gpu-results/, and ends with one line
#   gpu-check STAGE: N passed, N failed, N skipped
# A test may skip only for a reason listed below (EXPECTED_SKIPS); any
# other skip fails its stage. Every stage runs even when one before failed;
# the exit status is 1 if any failed.
#
# --dry-run: for the build machine (no GPU; `make test` runs it). The same
# stages, the GPU tests skipping for want of a device (the one extra reason
# allowed), the bundle's checks, and that each stage's closing line and
# JSON appear. Before any stage, in both modes, the bundle is checked: its
# size (at most 64 MiB), its files, and that every shared library its
# programs load is in it or is one the GPU machine has (the C and C++
# runtimes, OpenMP, the CUDA driver, the libraries of the machine's torch).
#
# Environment: OUT (results folder), GPU_CHECK_BUNDLE (gpu-bundle),
# GELU_PYTHON (a Python with torch; else .venv/bin/python or python3),
# GPU_CHECK_STAGE_SECONDS (230: each stage's commands are stopped then),
# GPU_CHECK_SANITIZER (compute-sanitizer to use).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

# Skips that are expected, as "TEST-GLOB|REASON" (gpu_check_results.py):
# with a GPU, the CPU-only test that checks the error without one, and the
# empty shape {} of the ops that need a bias of rank >= 1.
EXPECTED_SKIPS='CudaApi.WithoutAGpuAValidCallThrows|a CUDA device is present
All/CudaOps.BiasGelu*/*_r|bias needs rank >= 1
compute-sanitizer|unsupported by compute-sanitizer'
# In the dry run, also the tests that need a device, and memcheck where this
# machine has no compute-sanitizer.
DRY_RUN_SKIPS='*|no CUDA device
*|no CUDA device (or no CUDA backend)
compute-sanitizer|not installed on this machine (dry run)'

usage() {
  echo "usage: scripts/gpu-check.sh [--dry-run] STAGE...  (stages: smoke accuracy memcheck torch graphs bench all)" >&2
  exit 2
}
all_stages=(smoke accuracy memcheck torch graphs bench)
mode=gpu
stages=()
for a in "$@"; do
  case "$a" in
    --dry-run) mode=dry-run ;;
    all) stages+=("${all_stages[@]}") ;;
    smoke | accuracy | memcheck | torch | graphs | bench) stages+=("$a") ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown stage or option '$a'" >&2; usage ;;
  esac
done
[ ${#stages[@]} -gt 0 ] || usage

bundle=${GPU_CHECK_BUNDLE:-gpu-bundle}
case "$bundle" in /*) ;; *) bundle=$repo/$bundle ;; esac
out=${OUT:-gpu-results}
case "$out" in /*) ;; *) out=$repo/$out ;; esac
mkdir -p "$out"
limit=${GPU_CHECK_STAGE_SECONDS:-230}
# The bundle's libraries (Highway) for the tests and the extension.
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPU_CHECK_EXPECTED_SKIPS=$EXPECTED_SKIPS
if [ "$mode" = dry-run ]; then
  GPU_CHECK_EXPECTED_SKIPS+=$'\n'$DRY_RUN_SKIPS
  unset GELU_REQUIRE_GPU
else
  export GELU_REQUIRE_GPU=1  # the tests fail, not skip, without a device
fi
t0=$(date +%s)
say() { echo "== gpu-check [$(($(date +%s) - t0)) s] $*"; }
die() { echo "gpu-check: FAIL: $*" >&2; exit 1; }

# --- before any stage: the bundle, the Python, the device -------------------
py=${GELU_PYTHON:-}
if [ -z "$py" ]; then
  for c in .venv/bin/python python3 python; do
    if command -v "$c" >/dev/null && "$c" -c 'import torch' 2>/dev/null; then
      py=$(command -v "$c"); break
    fi
  done
fi
[ -n "$py" ] || die "no Python with torch (set GELU_PYTHON)"
results() { "$py" "$repo/scripts/gpu_check_results.py" "$@"; }

{
  say "mode $mode; bundle $bundle; results in $out"
  bash scripts/gpu-bundle-check.sh "$bundle" || die "the bundle is incomplete (see above); run 'make gpu-bundle' on the build machine"
  "$py" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "CUDA", torch.version.cuda)'
  if [ "$mode" = gpu ]; then
    command -v nvidia-smi >/dev/null || die "no GPU: nvidia-smi is not installed (on a machine without a GPU use --dry-run)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
      || die "no GPU: nvidia-smi lists no device"
    "$py" -c 'import torch; assert torch.cuda.is_available(), "torch sees no CUDA device"; print("torch sees", torch.cuda.get_device_name())' \
      || die "$py: torch cannot use the GPU"
  fi
} 2>&1 | tee "$out/preflight.log"
[ "${PIPESTATUS[0]}" = 0 ] || exit 1

# The extension: the carried one, else (GPU machine only) rebuilt from the
# carried libraries into build-gpu-ext/python.
ext_path=
pick_extension() {
  [ -z "$ext_path" ] || return 0
  local err
  if err=$(PYTHONPATH=$bundle/python "$py" -c 'import gelu_fusion' 2>&1); then
    ext_path=$bundle/python
    echo "extension: carried ($ext_path/gelu_fusion/_gelu_fusion_ops.so)"
    return 0
  fi
  echo "extension: the carried one cannot load: $(echo "$err" | tail -1)"
  if [ "$mode" = dry-run ]; then
    echo "extension: the dry run does not rebuild it: the bundle must load as carried"
    return 1
  fi
  local rebuilt=$repo/build-gpu-ext/python
  if [ -f "$rebuilt/gelu_fusion/_gelu_fusion_ops.so" ] &&
    PYTHONPATH=$rebuilt "$py" -c 'import gelu_fusion' 2>/dev/null; then
    ext_path=$rebuilt
    echo "extension: rebuilt on this machine by an earlier stage ($ext_path/gelu_fusion/_gelu_fusion_ops.so)"
    return 0
  fi
  bash scripts/gpu-build-extension.sh "$bundle" build-gpu-ext "$py" || return 1
  ext_path=$rebuilt
  echo "extension: rebuilt on this machine ($ext_path/gelu_fusion/_gelu_fusion_ops.so)"
}

# Seconds left of the stage's $limit (deadline: set as each stage starts);
# every command of a stage runs under `timeout` with what is left.
deadline=0
left() {
  local l=$((deadline - $(date +%s)))
  echo $((l > 1 ? l : 1))
}

tests_bin=$bundle/bin/gelu_cuda_tests
run_gtest() {  # json part filter: the GPU C++ tests, parsed as they run
  local json=$1 part=$2 filter=$3 rc=$out/.rc.$$
  echo "+ gelu_cuda_tests --gtest_filter=$filter"
  { set +e; timeout -k 10 "$(left)" "$tests_bin" \
      --gtest_filter="$filter" 2>&1; echo $? >"$rc"; } | results gtest "$json" "$part" "$rc"
  rm -f "$rc"
}

run_pytest() {  # json part test...: pytest with outcomes into the JSON
  local json=$1 part=$2 rc=0
  shift 2
  pick_extension || { results problem "$json" "the gelu_fusion extension cannot load"; return 0; }
  echo "+ pytest $*"
  PYTHONPATH=$ext_path:$repo/scripts GELU_FUSION_REPO=$repo GPU_CHECK_JSON=$json \
    GPU_CHECK_PART=$part timeout -k 10 "$(left)" "$py" -m pytest -q -p no:cacheprovider \
    -p gpu_check_pytest -rs "$@" || rc=$?
  case $rc in
    0 | 1) ;;  # 1: failures, each already in the JSON
    124 | 137) results problem "$json" "pytest stopped at the stage's limit ($limit s)" ;;
    *) results problem "$json" "pytest exited with $rc (interrupted, usage or internal error, or no test collected)" ;;
  esac
}

# --- the stages --------------------------------------------------------------
stage_smoke() {
  local json=$1 rc=0
  run_gtest "$json" cpp 'CudaApi.MisuseThrowsTheCpuErrors:CudaApi.WithoutAGpuAValidCallThrows:All/CudaOps.Gelu/none_*_r_13_17'
  pick_extension || { results problem "$json" "the gelu_fusion extension cannot load"; return 0; }
  echo "+ scripts/gpu_smoke.py"
  PYTHONPATH=$ext_path:$repo/scripts timeout -k 10 "$(left)" "$py" scripts/gpu_smoke.py "$json" || rc=$?
  [ $rc = 0 ] || results problem "$json" "scripts/gpu_smoke.py exited with $rc"
}

stage_accuracy() {
  run_gtest "$1" cpp '*'
}

stage_memcheck() {
  local json=$1 san=${GPU_CHECK_SANITIZER:-} log=$out/memcheck.sanitizer.log rc
  # All but the sweeps and the 12 GiB test, one form (the forms share the
  # indexing that memcheck checks).
  local filter='CudaApi.*:All/CudaOps.*/none_*-*IndicesPast2To31*'
  if [ -z "$san" ]; then
    local nvcc
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    for c in compute-sanitizer "$(dirname "$nvcc")/compute-sanitizer" \
      /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
      if command -v "$c" >/dev/null; then san=$(command -v "$c"); break; fi
    done
  fi
  if [ -z "$san" ]; then
    if [ "$mode" = dry-run ]; then
      results skip "$json" sanitizer compute-sanitizer "not installed on this machine (dry run)"
      echo "no compute-sanitizer here: the same tests without it"
      run_gtest "$json" cpp "$filter"
      return 0
    fi
    results fail "$json" sanitizer compute-sanitizer "no compute-sanitizer (PATH, next to nvcc, /usr/local/cuda)"
    return 0
  fi
  echo "+ $san --tool memcheck --leak-check full gelu_cuda_tests --gtest_filter=$filter"
  rc=$out/.rc.$$
  { set +e; timeout -k 10 "$(left)" "$san" --tool memcheck \
      --leak-check full --error-exitcode 3 --print-limit 100 "$tests_bin" \
      --gtest_filter="$filter" 2>&1; echo $? >"$rc"; } | tee "$log" | results gtest "$json" cpp
  local code
  code=$(cat "$rc"); rm -f "$rc"
  results set "$json" sanitizer exit_code "$code"
  case $code in
    124 | 137)
      results problem "$json" "memcheck: stopped at the stage's time limit ($limit s)"
      return 0
      ;;
  esac
  if grep -E '^=+ ' "$log" | grep -Eqi 'device (is )?not supported|unsupported device|not supported on this device|does not support this device|no supported device|vgpu.*not supported'; then
    echo "skipped: unsupported by compute-sanitizer"
    results skip "$json" sanitizer compute-sanitizer "unsupported by compute-sanitizer"
    return 0
  fi
  local errors
  errors=$(sed -n 's/^=* ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -1)
  if [ -z "$errors" ]; then
    results fail "$json" sanitizer compute-sanitizer "no ERROR SUMMARY (exit code $code)"
  elif [ "$errors" != 0 ]; then
    results fail "$json" sanitizer compute-sanitizer "$errors errors reported ($log)"
  elif [ "$code" != 0 ]; then
    results fail "$json" sanitizer compute-sanitizer "exit code $code"
  else
    results pass "$json" sanitizer compute-sanitizer
  fi
  if ! grep -q '^\[ RUN      \]' "$log"; then
    results problem "$json" "memcheck: no test ran under compute-sanitizer"
  fi
}

stage_torch() {
  run_pytest "$1" pytest tests/python/test_cuda.py
}

stage_graphs() {
  run_pytest "$1" pytest tests/python/test_cuda_graphs.py \
    tests/python/test_cuda.py::test_current_stream_graph_and_no_sync
}

stage_bench() {
  local json=$1 rc=0 args=()
  pick_extension || { results problem "$json" "the gelu_fusion extension cannot load"; return 0; }
  [ "$mode" = gpu ] || { args=(--cpu); echo "dry run: a tiny run on the CPU"; }
  PYTHONPATH=$ext_path:$repo/scripts timeout -k 10 "$(left)" "$py" scripts/gpu_bench.py \
    "$json" "${args[@]}" || rc=$?
  [ $rc = 0 ] || results problem "$json" "scripts/gpu_bench.py exited with $rc"
}

device="none (dry run)"
if [ "$mode" = gpu ]; then
  device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
fi
failed=()
for s in "${stages[@]}"; do
  json=$out/$s.json log=$out/$s.log
  results begin "$json" "$s" "$mode" "$device" "$bundle/bundle.json"
  deadline=$(($(date +%s) + limit))
  {
    say "stage $s"
    rc=0
    (set -e; "stage_$s" "$json") || rc=$?
    [ $rc = 0 ] || results problem "$json" "the stage's script failed (exit $rc)"
    results close "$json" || true
  } 2>&1 | if [ "$mode" = dry-run ]; then
    # Every skipped test's lines in the log only; here the stage's summary.
    tee "$log" | grep -E '^(== gpu-check|gpu-check |extension:|  (FAILED |PROBLEM: |skipped |\.\.\. ))' || true
  else
    tee "$log"
  fi
  # Its closing line and JSON, as the stage left them.
  line=$(grep -E "^gpu-check $s: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$" "$log" | tail -1 || true)
  status=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["status"])' "$json" 2>/dev/null || echo missing)
  if [ -z "$line" ]; then
    echo "gpu-check: stage $s printed no closing line" >&2; failed+=("$s")
  elif [ "$status" != passed ]; then
    [ "$status" = failed ] || echo "gpu-check: stage $s left no JSON with its status ($json)" >&2
    failed+=("$s")
  fi
done
say "done: ${#stages[@]} stages, results in $out"
if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu-check: FAIL: ${failed[*]}"
  exit 1
fi
echo "gpu-check: PASS ($mode: ${stages[*]})"
