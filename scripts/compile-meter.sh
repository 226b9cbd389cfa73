#!/usr/bin/env bash
# A compiler launcher (CMake's CMAKE_CXX_COMPILER_LAUNCHER, with
# GELU_MEASURE_COMPILES=ON): runs the compile under GNU time and appends
# "<peak KiB> <seconds> <object>" to $GELU_COMPILE_LOG, which
# scripts/check-build-bounds.sh reads. The peak is the largest resident set
# of the compile's processes (cc1plus, not the driver).
set -u
log=${GELU_COMPILE_LOG:?compile-meter.sh: GELU_COMPILE_LOG is not set}
out=unknown
prev=
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
tmp=$(mktemp)
/usr/bin/time -o "$tmp" -f '%M %e' "$@"
rc=$?
echo "$(cat "$tmp") $out" >>"$log"
rm -f "$tmp"
exit $rc
