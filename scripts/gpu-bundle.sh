#!/usr/bin/env bash
# `make gpu-bundle`: what the GPU machine runs, in one folder, from a build
# directory configured with the CUDA backend (the main build is, where nvcc
# is found: cmake/cuda.cmake). The GPU machine compiles nothing
# (scripts/gpu-check.sh, docs/cuda.md). The bundle holds:
#   bin/gelu_cuda_tests           the GPU C++ tests (GoogleTest linked in)
#   python/gelu_fusion/           the Python package and its extension,
#                                 built against the build's torch
#   lib/libgelu_fusion*.a.gz      the CPU and CUDA libraries, compressed, in
#                                 case the extension has to be rebuilt there
#                                 (scripts/gpu-build-extension.sh)
#   lib/*.so.*                    the shared libraries they load that the GPU
#                                 machine lacks (scripts/gpu-deps.sh: Highway)
#   bundle.json                   the commit, torch, nvcc and architectures
# then checks it (scripts/gpu-bundle-check.sh: at most 64 MiB, complete).
# The benchmark is scripts/gpu_bench.py, run through the bundled extension.
# Usage: scripts/gpu-bundle.sh [BUILD_DIR [BUNDLE_DIR]]   (build, gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
dest=${2:-gpu-bundle}
fail() { echo "gpu-bundle: $*" >&2; exit 1; }

cache=$build/CMakeCache.txt
[ -f "$cache" ] || fail "$build is not configured (run make build)"
grep -q '^GELU_WITH_CUDA:BOOL=ON' "$cache" \
  || fail "$build has no CUDA backend (GELU_WITH_CUDA is not ON: was nvcc found when it was configured?)"
grep -q '^GELU_CPU_HOST_ONLY:BOOL=ON' "$cache" \
  && fail "$build compiles the CPU kernels for this CPU only (GELU_CPU_HOST_ONLY): the GPU machine's CPU may lack its instructions"
py=$(sed -n 's/^GELU_PYTHON:[A-Z]*=//p' "$cache")
[ -n "$py" ] || fail "$build has no GELU_PYTHON in its cache"

tests=$build/tests/cuda/gelu_cuda_tests
ext=$build/python/gelu_fusion/_gelu_fusion_ops.so
for f in "$tests" "$ext" "$build/libgelu_fusion.a" "$build/libgelu_fusion_cuda.a"; do
  [ -f "$f" ] || fail "$f is missing (build it: cmake --build $build)"
done

tmp=$dest.tmp
rm -rf "$tmp"
mkdir -p "$tmp/bin" "$tmp/lib" "$tmp/python/gelu_fusion"
# Symbols are not needed to run; --strip-unneeded keeps what loading needs.
strip --strip-unneeded -o "$tmp/bin/gelu_cuda_tests" "$tests"
# The package's Python files, its subpackages included.
find "$build/python/gelu_fusion" -name '*.py' | while read -r f; do
  rel=${f#"$build/python/"}
  mkdir -p "$tmp/python/$(dirname "$rel")"
  cp "$f" "$tmp/python/$rel"
done
strip --strip-unneeded -o "$tmp/python/gelu_fusion/_gelu_fusion_ops.so" "$ext"
for lib in libgelu_fusion libgelu_fusion_cuda; do
  gzip -6 -c "$build/$lib.a" >"$tmp/lib/$lib.a.gz"
done
bash scripts/gpu-deps.sh "$tmp"

arch=$(sed -n 's/^GELU_CUDA_ARCHITECTURES:[A-Z]*=//p' "$cache")
nvcc=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$cache")
"$py" - "$tmp/bundle.json" "$arch" "$("$nvcc" --version | tail -1)" \
  "$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  "$(git status --porcelain --untracked-files=no 2>/dev/null | wc -l)" <<'EOF'
import json, os, sys, torch
path, arch, nvcc, commit, dirty = sys.argv[1:]
root = os.path.dirname(path)
files = {}
for d, _, names in os.walk(root):
    for n in sorted(names):
        p = os.path.join(d, n)
        files[os.path.relpath(p, root)] = os.path.getsize(p)
json.dump({"commit": commit, "uncommitted_changes": int(dirty), "torch": torch.__version__,
           "torch_cuda": torch.version.cuda, "nvcc": nvcc, "cuda_architectures": arch,
           "files": dict(sorted(files.items()))}, open(path, "w"), indent=1)
EOF
rm -rf "$dest"
mv "$tmp" "$dest"
bash scripts/gpu-bundle-check.sh "$dest"
