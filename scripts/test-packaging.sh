#!/usr/bin/env bash
# Packaging, checked the way users take the library (each way as docs/install.md
# shows it), from the already-built build directory:
#   1. cmake --install into a fresh prefix: headers, shared (SONAME) and
#      static library without the reference, the program, CMake package,
#      pkg-config files
#   2. tests/consumer (its own CMake project) against that prefix with
#      find_package(gelu_fusion CONFIG REQUIRED), shared and static
#   3. the same main.cpp with plain g++ and pkg-config, shared and static
#   4. tests/consumer with the checkout inside it (add_subdirectory)
#   5. pip install --no-build-isolation . in a fresh venv that sees the
#      project venv's PyTorch, pytest (tests/python) against it from outside
#      the source tree; pip wheel, and that wheel installed in a second venv
# Everything goes to a fresh temporary folder, removed at the end
# (KEEP=1 keeps it). Environment: BUILD (default build), JOBS, VENV (the
# project's venv, default .venv: scripts/python-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
BUILD=${BUILD:-build}
JOBS=${JOBS:-2}
VENV=${VENV:-$repo/.venv}
[ -f "$BUILD/CMakeCache.txt" ] || { echo "test-packaging: build $BUILD first (make build)" >&2; exit 1; }
build=$(cd "$BUILD" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/gelu-fusion-packaging.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
unset PYTHONPATH  # the installed package only, never build/python
start=$SECONDS
step() { echo "== test-packaging [$((SECONDS - start)) s]: $*"; }
fail() { echo "test-packaging: FAIL: $*" >&2; exit 1; }

step "1. cmake --install $BUILD --prefix <fresh prefix>"
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$prefix/$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
for f in include/gelu/gelu.hpp include/gelu/version.hpp bin/gelu-fusion; do
  [ -f "$prefix/$f" ] || fail "$f not installed"
done
for f in libgelu_fusion.a libgelu_fusion.so pkgconfig/gelu_fusion.pc \
         pkgconfig/gelu_fusion_static.pc cmake/gelu_fusion/gelu_fusionConfig.cmake \
         cmake/gelu_fusion/gelu_fusionConfigVersion.cmake; do
  [ -e "$libdir/$f" ] || fail "lib/$f not installed"
done
soname=$(readelf -d "$libdir/libgelu_fusion.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ -n "$soname" ] && [ -e "$libdir/$soname" ] || fail "libgelu_fusion.so: no SONAME link ($soname)"
# The double-precision reference (gelu::ref) is for tests and tools only.
for lib in libgelu_fusion.a libgelu_fusion.so; do
  ! nm -C "$libdir/$lib" | grep -q 'gelu::ref::' || fail "$lib holds gelu::ref code"
done
"$prefix/bin/gelu-fusion" ops >/dev/null

step "2. find_package(gelu_fusion CONFIG REQUIRED) (tests/consumer)"
cmake -S tests/consumer -B "$work/consumer-cmake" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer-cmake" -j "$JOBS" >/dev/null
"$work/consumer-cmake/consumer"
"$work/consumer-cmake/consumer_static"

# pkg-config (Debian: pkgconf). The shared build runs with the prefix on
# LD_LIBRARY_PATH, the static one must not need libgelu_fusion.so at all:
# gelu_fusion_static.pc names the archive, since with both in one folder
# -lgelu_fusion picks the .so (and `g++ -static` needs every library as an
# archive, Highway's too).
step "3. g++ with pkg-config: gelu_fusion (shared), gelu_fusion_static"
export PKG_CONFIG_PATH=$libdir/pkgconfig
g++ -o "$work/consumer-pc-shared" tests/consumer/main.cpp $(pkg-config --cflags --libs gelu_fusion)
g++ -o "$work/consumer-pc-static" tests/consumer/main.cpp $(pkg-config --cflags --libs gelu_fusion_static)
LD_LIBRARY_PATH=$libdir "$work/consumer-pc-shared"
"$work/consumer-pc-static"
readelf -d "$work/consumer-pc-shared" | grep -q "NEEDED.*\[$soname\]" ||
  fail "consumer-pc-shared does not load $soname"
! readelf -d "$work/consumer-pc-static" | grep -q "NEEDED.*libgelu_fusion" ||
  fail "consumer-pc-static needs libgelu_fusion.so"
# --static: what a fully static link needs (Debian's Highway has no archive,
# so it is checked as text, not linked).
static_libs=$(pkg-config --libs --static gelu_fusion)
[[ " $static_libs " == *" -lhwy "* && " $static_libs " == *" -fopenmp "* ]] ||
  fail "pkg-config --libs --static gelu_fusion: $static_libs (no -lhwy or -fopenmp)"

# A Debug build: the same CMake code path in a fraction of the compile time
# (the kernels at -O3 for every SIMD target take minutes).
step "4. add_subdirectory(<checkout>) (tests/consumer, Debug)"
cmake -S tests/consumer -B "$work/consumer-subdir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DGELU_FUSION_SOURCE_DIR="$repo" \
  -DGELU_MEASURE_COMPILES="${GELU_MEASURE_COMPILES:-OFF}" >/dev/null
cmake --build "$work/consumer-subdir" -j "$JOBS" >/dev/null
bash scripts/check-build-bounds.sh "$work/consumer-subdir"
"$work/consumer-subdir/consumer"
"$work/consumer-subdir/consumer_static"

# pip builds through CMake in $BUILD (setup.py), which is already built. No
# index: a user's venv has torch (pip install torch==2.11.0) before it
# installs gelu_fusion; here a fresh venv sees the project venv's packages
# (torch, pytest, wheel) through a .pth file instead of a second download
# of PyTorch's GBs, and gelu_fusion installs into the fresh venv itself.
# Never Debian's site-packages (no --system-site-packages): its torch is
# not the one the extension is built for.
fresh_venv() {
  /usr/bin/python3 -m venv "$1"
  "$1/bin/python" - "$VENV" <<'PY'
import os, site, subprocess, sys
parent = subprocess.check_output([os.path.join(sys.argv[1], "bin", "python"), "-c",
                                  "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 text=True).strip()
with open(os.path.join(site.getsitepackages()[0], "project-venv.pth"), "w") as f:
    f.write(parent + "\n")
PY
}
step "5. pip install --no-build-isolation . (a fresh venv), pytest"
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 GELU_FUSION_BUILD_DIR=$build
fresh_venv "$work/venv"
"$work/venv/bin/pip" install -q --no-build-isolation .
mkdir "$work/elsewhere"
cd "$work/elsewhere"
"$work/venv/bin/python" - <<'PY'
import sys, torch, gelu_fusion
assert gelu_fusion.__file__.startswith(sys.prefix), gelu_fusion.__file__
print("gelu_fusion", gelu_fusion.__version__, "from", gelu_fusion.__file__,
      "with torch", torch.__version__)
PY
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/tests/python"
cd "$repo"

step "5b. pip wheel --no-build-isolation ., installed in a second venv"
"$work/venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$work/wheels" .
fresh_venv "$work/venv-wheel"
"$work/venv-wheel/bin/pip" install -q "$work"/wheels/gelu_fusion-*.whl
cd "$work/elsewhere"
"$work/venv-wheel/bin/python" - <<'PY'
import sys, torch, gelu_fusion
assert gelu_fusion.__file__.startswith(sys.prefix), gelu_fusion.__file__
x = torch.linspace(-8, 8, 101)
torch.testing.assert_close(gelu_fusion.gelu(x), torch.nn.functional.gelu(x))
print("wheel: gelu_fusion", gelu_fusion.__version__, "ok")
PY
step "all ways work"
