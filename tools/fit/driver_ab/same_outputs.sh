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
MAIN=same_outputs.cpp exec "$(dirname "$0")/run.sh" "$1" "$2"
