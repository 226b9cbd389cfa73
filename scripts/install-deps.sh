#!/usr/bin/env bash
# Installs the Debian packages gelu-fusion needs, once: silent and quick when
# everything is already there. Idempotent; run as root (or with sudo).
set -euo pipefail

packages=(
  cmake ninja-build g++ make            # build
  ccache time                           # the edit loop; compile-meter.sh (CI)
  libhwy-dev                            # SIMD (Google Highway)
  libgtest-dev libbenchmark-dev         # tests, microbenchmarks
  libmpfr-dev                           # reference checks against MPFR
  clang libclang-rt-14-dev              # libFuzzer and sanitizer runtimes
  clang-format                          # make format, make format-check (CI)
  libomp-dev                            # LLVM OpenMP + Archer, for TSan
  libdnnl-dev                           # oneDNN, a peer in the report
  python3-torch libtorch-dev            # PyTorch adapter and peer
  libopenblas0-openmp                   # a real BLAS for torch matmuls (examples/train_mlp.py)
  python3-pytest python3-numpy python3-matplotlib python3-mpmath
  pkgconf                               # pkg-config, for the packaging checks
  python3-venv python3-pip python3-setuptools python3-wheel  # pip install .
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
