#!/usr/bin/env bash
# Checks a GPU bundle (scripts/gpu-bundle.sh) before it travels or runs:
#   - its size: at most 64 MiB (what travels with the checkout);
#   - its files: the GPU tests, the PyTorch extension and its package, the
#     libraries, bundle.json;
#   - that every shared library its programs load is in the bundle (lib/)
#     or is one the GPU machine has without Debian packages: the C and C++
#     runtimes and OpenMP (its g++), the CUDA driver (libcuda), and the
#     libraries of its torch (libtorch*, libc10*, CUDA's runtime, which
#     `import torch` loads before the extension).
# Each problem is named on its own line; exits 1 if there is any.
# Usage: scripts/gpu-bundle-check.sh BUNDLE_DIR
set -euo pipefail
bundle=${1:?usage: scripts/gpu-bundle-check.sh BUNDLE_DIR}
max_bytes=$((64 * 1024 * 1024))
problems=0
problem() { echo "bundle: MISSING: $*" >&2; problems=$((problems + 1)); }

[ -d "$bundle" ] || { echo "bundle: $bundle does not exist; run 'make gpu-bundle' on the build machine" >&2; exit 1; }

required=(
  "bin/gelu_cuda_tests|the GPU C++ tests"
  "python/gelu_fusion/_gelu_fusion_ops.so|the PyTorch extension"
  "python/gelu_fusion/__init__.py|the gelu_fusion Python package"
  "lib/libgelu_fusion.a.gz|the CPU library (to rebuild the extension if need be)"
  "lib/libgelu_fusion_cuda.a.gz|the CUDA library (to rebuild the extension if need be)"
  "bundle.json|what the bundle was built from"
)
for r in "${required[@]}"; do
  f=${r%%|*} what=${r#*|}
  [ -s "$bundle/$f" ] || problem "$f ($what)"
done

bytes=$(du -sb "$bundle" | cut -f1)
if [ "$bytes" -gt "$max_bytes" ]; then
  echo "bundle: TOO LARGE: $((bytes / 1024 / 1024)) MiB, at most 64 MiB" >&2
  problems=$((problems + 1))
fi

source "$(dirname "$0")/gpu-machine-libs.sh"

abs_bundle=$(cd "$bundle" && pwd)
elfs=0
while IFS= read -r -d '' f; do
  head -c 4 "$f" | grep -q 'ELF' || continue
  elfs=$((elfs + 1))
  rel=${f#"$abs_bundle"/}
  ldd_out=$(LD_LIBRARY_PATH=$abs_bundle/lib ldd "$f" 2>&1) || {
    problem "$rel: ldd cannot read it: $ldd_out"
    continue
  }
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = "not" ]; then
      on_gpu_machine "$name" || problem "$name (needed by $rel: not found)"
    elif [[ "$path" != "$abs_bundle"/* ]] && ! on_gpu_machine "$name"; then
      problem "$name (needed by $rel; found at $path on this machine only: the GPU machine has no Debian packages, put it in lib/)"
    fi
  done <<<"$ldd_out"
done < <(find "$abs_bundle" -type f \( -path '*/bin/*' -o -name '*.so' -o -name '*.so.*' \) -print0)
[ "$elfs" -gt 0 ] || problem "no program or shared library in $bundle"

if [ "$problems" -gt 0 ]; then
  echo "bundle: $problems problem(s) in $bundle" >&2
  exit 1
fi
echo "bundle: $bundle: $((bytes / 1024 / 1024)) MiB ($bytes bytes), $elfs programs and libraries, every library they load carried or on the GPU machine"
