#!/usr/bin/env bash
# Compares the output bytes of two builds of the library, kernel call by
# kernel call (tools/fit/output_digest.cpp: every op, form, dtype and SIMD
# target this CPU runs, streamed and plain stores, strided and narrow rows):
#
#   tools/fit/output_digest.sh OLD_BUILD_DIR NEW_BUILD_DIR
#
# Each directory holds a built libgelu_fusion.so (cmake --build DIR --target
# gelu_fusion_shared). One digest program, linked against the new build's
# library, runs once with each library; exits 1 on any difference and lists
# the calls that differ.
set -euo pipefail
cd "$(dirname "$0")/../.."
old=$(realpath "${1:?usage: output_digest.sh OLD_BUILD_DIR NEW_BUILD_DIR}")
new=$(realpath "${2:?usage: output_digest.sh OLD_BUILD_DIR NEW_BUILD_DIR}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -std=c++20 -O2 -Iinclude -Isrc -I. tools/fit/output_digest.cpp \
  -L"$new" -lgelu_fusion -lhwy -o "$tmp/digest"
LD_LIBRARY_PATH=$old "$tmp/digest" >"$tmp/old.txt"
LD_LIBRARY_PATH=$new "$tmp/digest" >"$tmp/new.txt"
lines=$(wc -l <"$tmp/new.txt")
if diff "$tmp/old.txt" "$tmp/new.txt" >"$tmp/diff.txt"; then
  echo "output_digest: $lines kernel calls, every output byte the same"
else
  echo "output_digest: outputs differ ($lines calls):"
  grep '^[<>]' "$tmp/diff.txt" | head -40
  exit 1
fi
