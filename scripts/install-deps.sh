#!/usr/bin/env bash
# Installs the Debian packages gelu-fusion needs, then the project's Python
# virtualenv (.venv: PyTorch, transformers and the test tools from PyPI,
# scripts/python-env.sh), once: silent and quick when everything is already
# there. Idempotent; run as root (or with sudo).
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
  python3-numpy python3-mpmath          # tools/fit/fit_gelu.py (by hand)
  pkgconf                               # pkg-config, for the packaging checks
  # The virtualenv's interpreter (PyTorch, pytest, the report's peer:
  # scripts/python-env.sh): venv, and the headers Inductor compiles against.
  python3-venv python3-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

bash "$(dirname "$0")/python-env.sh"
