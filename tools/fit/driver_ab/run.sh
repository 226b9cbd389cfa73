#!/bin/bash
# Driver A/B benchmark: times two versions of src/cpu/driver-inl.h in one
# process (main.cpp says how). Each side is a directory holding cpu/ (a copy
# of src/cpu with the change to try); the rest comes from this tree.
#   tools/fit/driver_ab/run.sh A_DIR B_DIR [ROUNDS] ['EXTRA FLAGS FOR B']
# DTYPES=16 in the environment times the 16-bit rows instead (main.cpp);
# MAIN=same_outputs.cpp builds the output check instead (same_outputs.sh).
# MARCH='haswell -maes' (g++'s -march and more flags) builds both sides for
# that CPU, and its best Highway target is the one timed (printed first):
# Highway's AVX2 and SSE4 want AES and PCLMUL, which g++ 12's haswell and
# nehalem leave out, so 'haswell -maes' gives AVX2, 'nehalem -mpclmul -maes'
# SSE4; the default, skylake-avx512, AVX3.
# e.g. cp -r src/cpu /tmp/a/cpu; cp -r src/cpu /tmp/b/cpu; edit /tmp/b/cpu;
#      tools/fit/driver_ab/run.sh /tmp/a /tmp/b 15
# Builds in seconds (one static target, 6 Row instantiations per side)
# instead of the library's minutes; runs where MARCH's CPU would.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags="-std=c++20 -O3 -march=${MARCH:-skylake-avx512} -mtune=generic -DNDEBUG -I$root/include"
g++ $flags -I"$1" -I"$root/src" -Dgelu=gelu_a -DVARIANT_RUN=run_a -DVARIANT_RUN16=run16_a -c "$here/variant.cpp" -o "$out/a.o" &
g++ $flags -I"$2" -I"$root/src" ${4:-} -Dgelu=gelu_b -Dvariant_target=variant_target_b -DVARIANT_RUN=run_b -DVARIANT_RUN16=run16_b -c "$here/variant.cpp" -o "$out/b.o" &
g++ -std=c++20 -O2 -c "$here/${MAIN:-main.cpp}" -o "$out/main.o"
wait %1 %2
g++ "$out/main.o" "$out/a.o" "$out/b.o" -o "$out/driver_ab"
"$out/driver_ab" "${3:-15}"
