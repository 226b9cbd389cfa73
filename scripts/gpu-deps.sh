#!/usr/bin/env bash
# Copies into BUNDLE/lib the shared libraries that the bundle's programs and
# extension load and the GPU machine lacks (it has no Debian packages and no
# network): each library ldd resolves outside the bundle that is not one the
# GPU machine has (scripts/gpu-machine-libs.sh), under its SONAME, and then
# what those load in turn. Today that is Highway (libhwy.so.1); GoogleTest
# is linked statically. scripts/gpu-bundle.sh calls it.
# Usage: scripts/gpu-deps.sh BUNDLE_DIR
set -euo pipefail
bundle=${1:?usage: scripts/gpu-deps.sh BUNDLE_DIR}
source "$(dirname "$0")/gpu-machine-libs.sh"
mkdir -p "$bundle/lib"
abs=$(cd "$bundle" && pwd)
copied=()
for round in 1 2 3; do  # the copied libraries' own dependencies too
  added=0
  while IFS= read -r -d '' f; do
    head -c 4 "$f" | grep -q 'ELF' || continue
    while read -r name arrow path _; do
      [ "$arrow" = "=>" ] && [ "$path" != "not" ] || continue
      [[ "$path" == "$abs"/* ]] && continue
      on_gpu_machine "$name" && continue
      [ -e "$abs/lib/$name" ] && continue
      cp -L "$path" "$abs/lib/$name"
      copied+=("$name ($path)")
      added=1
    done < <(LD_LIBRARY_PATH=$abs/lib ldd "$f" 2>/dev/null || true)
  done < <(find "$abs" -type f \( -path '*/bin/*' -o -name '*.so' -o -name '*.so.*' \) -print0)
  [ $added = 1 ] || break
  [ $round -lt 3 ] || { echo "gpu-deps: libraries still missing after 3 rounds" >&2; exit 1; }
done
for c in "${copied[@]}"; do echo "gpu-deps: $c"; done
