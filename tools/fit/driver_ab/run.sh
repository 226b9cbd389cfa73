#!/bin/bash
# Driver A/B benchmark: times two versions of src/cpu/driver-inl.h in one
# process (main.cpp says how). Each side is a directory holding cpu/ (a copy
# of src/cpu with the change to try); the rest comes from this tree.
#   tools/fit/driver_ab/run.sh A_DIR B_DIR [ROUNDS] ['EXTRA FLAGS FOR B']
# DTYPES=16 in the environment times the 16-bit rows instead (main.cpp).
# e.g. cp -r src/cpu /tmp/a/cpu; cp -r src/cpu /tmp/b/cpu; edit /tmp/b/cpu;
#      tools/fit/driver_ab/run.sh /tmp/a /tmp/b 15
# Builds in seconds (one static AVX-512 target, 6 Row instantiations per
# side) instead of the library's minutes; needs an AVX-512 machine to run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags="-std=c++20 -O3 -march=skylake-avx512 -mtune=generic -DNDEBUG -I$root/include"
g++ $flags -I"$1" -Dgelu=gelu_a -DVARIANT_RUN=run_a -DVARIANT_RUN16=run16_a -c "$here/variant.cpp" -o "$out/a.o" &
g++ $flags -I"$2" ${4:-} -Dgelu=gelu_b -DVARIANT_RUN=run_b -DVARIANT_RUN16=run16_b -c "$here/variant.cpp" -o "$out/b.o" &
g++ -std=c++20 -O2 -c "$here/main.cpp" -o "$out/main.o"
wait %1 %2
g++ "$out/main.o" "$out/a.o" "$out/b.o" -o "$out/driver_ab"
"$out/driver_ab" "${3:-15}"
