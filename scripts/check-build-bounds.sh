#!/usr/bin/env bash
# The build's bounds, after the builds that `make test` runs (each configured
# with GELU_MEASURE_COMPILES=ON, as CI does):
#   - fails if any compiler process went over 2 GiB of resident memory
#     (scripts/compile-meter.sh logged it), since `make` and `pip install`
#     run one compile per 2 GiB available (scripts/jobs.sh);
#   - prints the slowest translation units of each build (.ninja_log), and
#     those over 90 s, without failing: machines are shared and noisy.
# Usage: scripts/check-build-bounds.sh BUILD_DIR...
set -euo pipefail
limit_kib=$((2 * 1024 * 1024))
status=0
for dir in "$@"; do
  log=$dir/compile-memory.log
  [ -f "$log" ] || { echo "build bounds: $dir: no compile-memory.log (not measured)"; continue; }
  read -r peak obj < <(sort -rn "$log" | awk 'NR == 1 {print $1, $3}')
  echo "build bounds: $dir: $(wc -l <"$log") compiles, largest $((peak / 1024)) MiB ($obj)"
  if awk -v l="$limit_kib" '$1 > l {found = 1} END {exit !found}' "$log"; then
    echo "build bounds: FAIL: compiler processes over 2 GiB in $dir:" >&2
    awk -v l="$limit_kib" '$1 > l {printf "  %d MiB %s\n", $1 / 1024, $3}' "$log" >&2
    status=1
  fi
  if [ -f "$dir/.ninja_log" ]; then
    echo "build bounds: $dir: slowest units (s, .ninja_log; 90 s is the bound):"
    awk 'NR > 1 && $4 ~ /\.o$/ {printf "%8.1f %s%s\n", ($2 - $1) / 1000, $4, (($2 - $1) > 90000 ? "  (over 90 s)" : "")}' \
      "$dir/.ninja_log" | sort -rn | awk 'NR <= 5'  # not head: it would close the
    # pipe early, and sort's next write would die of SIGPIPE (pipefail: exit 141)
  fi
done
exit $status
