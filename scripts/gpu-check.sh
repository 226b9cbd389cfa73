#!/usr/bin/env bash
# `make gpu-check`: the CUDA backend's check, on a machine with an NVIDIA
# GPU (docs/cuda.md). Needs nvcc, CMake, ninja, g++ and a Python with a CUDA
# build of PyTorch; no apt, no pip, no network. Steps, each timed:
#   1. the GPU and the tools are there (fails at once, clearly, without);
#   2. configure build-gpu: CUDA on, the CPU kernels for this CPU only
#      (GELU_CPU_HOST_ONLY), only the GPU tests (GELU_TESTS_CUDA_ONLY: no
#      MPFR), Highway and GoogleTest from third_party/prefix (made here
#      by scripts/gpu-deps.sh and carried along) or the system;
#   3. build the GPU tests and the PyTorch extension;
#   4. the GPU C++ tests, every one required to run (GELU_REQUIRE_GPU=1:
#      a skip is a failure), with their figures;
#   5. compute-sanitizer memcheck over the GPU C++ tests but the sweeps;
#   6. tests/python/test_cuda.py, no skip allowed.
# GPU_CHECK_BUILD (build-gpu), JOBS (cores), GELU_PYTHON override.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GPU_CHECK_BUILD:-build-gpu}
jobs=${JOBS:-$(nproc)}
t0=$(date +%s)
step() { echo "== gpu-check [$(( $(date +%s) - t0 )) s] $*"; }
fail() { echo "gpu-check: FAIL: $*" >&2; exit 1; }

step "1. the GPU and the tools"
command -v nvidia-smi >/dev/null || fail "no GPU: nvidia-smi is not installed"
gpus=$(nvidia-smi -L 2>/dev/null || true)
[ -n "$gpus" ] || fail "no GPU: nvidia-smi lists no device"
echo "$gpus"
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || fail "no nvcc (set CUDACXX)"
"$nvcc" --version | tail -1
py=${GELU_PYTHON:-}
if [ -z "$py" ]; then
  for c in .venv/bin/python python3 python; do
    if command -v "$c" >/dev/null && "$c" -c 'import torch' 2>/dev/null; then
      py=$(command -v "$c"); break
    fi
  done
fi
[ -n "$py" ] || fail "no Python with torch (set GELU_PYTHON)"
"$py" -c 'import torch; assert torch.cuda.is_available(), "torch sees no GPU"; print("torch", torch.__version__, torch.cuda.get_device_name())' \
  || fail "$py: torch cannot use the GPU"

step "2. configure $build"
# Highway and GoogleTest: third_party/prefix (scripts/gpu-deps.sh, made on
# the build machine from its Debian packages) first, else the system's.
prefix_args=()
if [ -d third_party/prefix/usr ]; then
  deps=$PWD/third_party/prefix/usr
  prefix_args=(-DCMAKE_PREFIX_PATH="$deps" -DCMAKE_INCLUDE_PATH="$deps/include")
  export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "dependencies from $deps"
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${prefix_args[@]}" \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DGELU_WITH_CUDA=ON -DGELU_CPU_HOST_ONLY=ON \
  -DGELU_TESTS_CUDA_ONLY=ON -DGELU_WITH_TOOLS=OFF -DGELU_PYTHON="$py" \
  -DGELU_MEASURE_COMPILES=ON >/dev/null

step "3. build (CUDA units and the extension, $jobs jobs)"
cmake --build "$build" -j "$jobs" --target gelu_cuda_tests gelu_fusion_python
bash scripts/check-build-bounds.sh "$build"

export GELU_REQUIRE_GPU=1
step "4. GPU C++ tests (a skip fails)"
out=$(mktemp)
"$build/tests/cuda/gelu_cuda_tests" 2>&1 | tee "$out" | grep -E '^\[ figures|FAILED|^\[  PASSED|SKIPPED' || true
grep -q '^\[  PASSED  \]' "$out" || fail "GPU C++ tests failed (output in $out)"
! grep -q '^\[  SKIPPED \]' "$out" || fail "GPU C++ tests skipped"
grep -q 'FAILED' "$out" && fail "GPU C++ tests failed (output in $out)"

step "5. compute-sanitizer memcheck (all but the sweeps)"
san=$(command -v compute-sanitizer || echo "$(dirname "$nvcc")/compute-sanitizer")
[ -x "$san" ] || fail "no compute-sanitizer next to nvcc"
"$san" --tool memcheck --leak-check full --error-exitcode 3 \
  "$build/tests/cuda/gelu_cuda_tests" --gtest_filter='-*CudaEveryPattern.*:*CudaF32Sweep.*:*IndicesPast2To31*' \
  --gtest_brief=1 || fail "memcheck found errors"

step "6. pytest tests/python/test_cuda.py (a skip fails)"
PYTHONPATH=$build/python GELU_FUSION_REPO=$PWD "$py" -m pytest -q -p no:cacheprovider \
  -rs tests/python/test_cuda.py 2>&1 | tee "$out"
grep -qE '[0-9]+ passed' "$out" && ! grep -qE 'failed|skipped|error' "$out" \
  || fail "pytest test_cuda.py: not every test passed"

step "gpu-check: PASS"
