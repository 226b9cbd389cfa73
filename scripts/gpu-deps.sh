#!/usr/bin/env bash
# Copies the build's C++ dependencies that the GPU machine lacks (it has no
# Debian packages and no network) from this machine's Debian packages into
# third_party/prefix, with their own layout: Highway (headers, library,
# CMake config) and GoogleTest/GoogleMock (headers, static libraries, CMake
# config). scripts/gpu-check.sh finds them there. third_party/ is not
# committed: pass it along with the checkout (the device tool's `carry`).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=third_party/prefix
rm -rf "$prefix"
mkdir -p "$prefix"
for pkg in libhwy1 libhwy-dev libgtest-dev libgmock-dev; do
  dpkg -L "$pkg" >/dev/null 2>&1 || { echo "gpu-deps: $pkg is not installed" >&2; exit 1; }
  dpkg -L "$pkg" | while read -r f; do
    case "$f" in /usr/share/*) continue ;; esac
    if [ -f "$f" ] || [ -L "$f" ]; then
      mkdir -p "$prefix$(dirname "$f")"
      cp -a "$f" "$prefix$f"
    fi
  done
done
du -sh "$prefix" | sed 's/^/gpu-deps: /'
