#!/bin/bash
# Driver A/B output check (same_outputs.cpp says what it covers): whether
# two versions of src/cpu/driver-inl.h give the same bytes, call for call.
# Each side is a directory holding cpu/ (a copy of src/cpu), as for run.sh;
# MARCH picks the target as there ('haswell -maes' for AVX2, 'nehalem
# -mpclmul -maes' for SSE4, the default skylake-avx512 for AVX3).
#   tools/fit/driver_ab/same_outputs.sh A_DIR B_DIR
# A change meant to keep every output runs this on each target it touches
# before timing it with run.sh; output_digest.sh then checks the library.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags="-std=c++20 -O2 -march=${MARCH:-skylake-avx512} -DNDEBUG -I$root/include"
g++ $flags -I"$1" -I"$root/src" -Dgelu=gelu_a -DVARIANT_RUN=run_a -DVARIANT_RUN16=run16_a -c "$here/variant.cpp" -o "$out/a.o" &
g++ $flags -I"$2" -I"$root/src" -Dgelu=gelu_b -Dvariant_target=variant_target_b -DVARIANT_RUN=run_b -DVARIANT_RUN16=run16_b -c "$here/variant.cpp" -o "$out/b.o" &
g++ -std=c++20 -O2 -c "$here/same_outputs.cpp" -o "$out/main.o"
wait %1 %2
g++ "$out/main.o" "$out/a.o" "$out/b.o" -o "$out/same_outputs"
"$out/same_outputs"
