#!/usr/bin/env bash
# How many compiles to run at once: one per core, but no more than available
# memory / 2 GiB (a kernel unit's compiler stays under 2 GiB; checked in CI by
# scripts/check-build-bounds.sh), and at least one.
cores=$(nproc 2>/dev/null || echo 1)
kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || true)
jobs=$cores
if [ -n "$kib" ]; then
  by_memory=$((kib / (2 * 1024 * 1024)))
  [ "$by_memory" -lt "$jobs" ] && jobs=$by_memory
fi
[ "$jobs" -lt 1 ] && jobs=1
echo "$jobs"
