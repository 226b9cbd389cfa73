#!/usr/bin/env bash
# The fallback of scripts/gpu-check.sh on the GPU machine when the bundle's
# PyTorch extension cannot load there (another torch, another C++ runtime):
# compiles only the extension's sources (adapters/torch/csrc) against that
# machine's torch, and links them with the bundle's prebuilt libraries
# (lib/libgelu_fusion*.a.gz, lib/libhwy.so.1) and the CUDA toolkit's static
# runtime. No CMake configure of the project, no kernel compiled.
# Usage: scripts/gpu-build-extension.sh BUNDLE_DIR OUT_DIR PYTHON
#   writes OUT_DIR/python/gelu_fusion (the bundle's Python files and the
#   new _gelu_fusion_ops.so); JOBS compiles at a time (nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:?usage: scripts/gpu-build-extension.sh BUNDLE_DIR OUT_DIR PYTHON}
dest=${2:?usage: scripts/gpu-build-extension.sh BUNDLE_DIR OUT_DIR PYTHON}
py=${3:?usage: scripts/gpu-build-extension.sh BUNDLE_DIR OUT_DIR PYTHON}
jobs=${JOBS:-$(nproc)}
fail() { echo "gpu-build-extension: $*" >&2; exit 1; }
for f in lib/libgelu_fusion.a.gz lib/libgelu_fusion_cuda.a.gz lib/libhwy.so.1; do
  [ -f "$bundle/$f" ] || fail "$bundle/$f is missing"
done
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || fail "no nvcc: the CUDA toolkit's headers and static runtime are needed"
cuda=$(cd "$(dirname "$nvcc")/.." && pwd)
torch=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))') \
  || fail "$py cannot import torch"
abi=$("$py" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
cxx=${CXX:-g++}

rm -rf "$dest"
mkdir -p "$dest/obj" "$dest/python/gelu_fusion"
for lib in libgelu_fusion libgelu_fusion_cuda; do
  gzip -dc "$bundle/lib/$lib.a.gz" >"$dest/$lib.a"
done
echo "gpu-build-extension: compiling adapters/torch/csrc ($jobs at a time) against $torch"
flags=(-O2 -fPIC -std=c++20 -DNDEBUG -DGELU_TORCH_CUDA "-D_GLIBCXX_USE_CXX11_ABI=$abi"
  -Isrc -Iinclude -isystem "$torch/include" -isystem "$torch/include/torch/csrc/api/include"
  -isystem "$cuda/include")
export cxx dest
printf '%s\n' adapters/torch/csrc/*.cpp | xargs -P "$jobs" -I{} sh -c \
  'o="$dest/obj/$(basename "{}" .cpp).o"; '"$cxx"' "$@" -c "{}" -o "$o" || exit 255' \
  sh "${flags[@]}" || fail "compiling the extension failed"
"$cxx" -shared -o "$dest/python/gelu_fusion/_gelu_fusion_ops.so" "$dest"/obj/*.o \
  "$dest/libgelu_fusion_cuda.a" "$dest/libgelu_fusion.a" "$bundle/lib/libhwy.so.1" \
  -L"$torch/lib" -Wl,--no-as-needed -ltorch -ltorch_cpu -ltorch_cuda -lc10 -lc10_cuda \
  -Wl,--as-needed -L"$cuda/lib64" -L"$cuda/targets/x86_64-linux/lib" -lcudart_static \
  -fopenmp -ldl -lrt -lpthread || fail "linking the extension failed"
# The package's Python files, its subpackages included.
find "$bundle/python/gelu_fusion" -name '*.py' | while read -r f; do
  rel=${f#"$bundle/python/"}
  mkdir -p "$dest/python/$(dirname "$rel")"
  cp "$f" "$dest/python/$rel"
done
rm -rf "$dest/obj" "$dest"/*.a
echo "gpu-build-extension: $dest/python/gelu_fusion/_gelu_fusion_ops.so"
