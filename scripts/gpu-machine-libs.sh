# shellcheck shell=bash
# Sourced by scripts/gpu-deps.sh and scripts/gpu-bundle-check.sh: the shared
# libraries the GPU machine has without Debian packages, as shell patterns:
# the C and C++ runtimes and OpenMP (its g++), the CUDA driver, and the
# libraries of its torch (libtorch*, libc10*, CUDA's runtime), which
# `import torch` loads before the extension. Any other library a bundled
# program loads travels in the bundle's lib/.
on_gpu_machine() {
  case "$1" in
    linux-vdso.so.* | ld-linux-x86-64.so.* | libc.so.* | libm.so.* | libdl.so.* | \
      libpthread.so.* | librt.so.* | libstdc++.so.* | libgcc_s.so.* | libgomp.so.*) return 0 ;;
    libcuda.so.*) return 0 ;;
    libtorch*.so* | libc10*.so* | libcudart.so.* | libshm.so*) return 0 ;;
  esac
  return 1
}
