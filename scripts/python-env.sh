#!/usr/bin/env bash
# Makes the project's virtualenv (default .venv at the repository root; VENV
# names another) from Debian's /usr/bin/python3 with the packages pinned in
# scripts/python-requirements.txt, from PyPI. Idempotent: silent and quick
# when the venv already holds exactly those pins (a copy of the file in the
# venv records what was installed); run again after the file changes, it
# installs the difference. scripts/install-deps.sh calls it, so `make` does.
#
# Debian's interpreter, not another one on PATH: python3-venv gives it venv,
# python3-dev the headers Inductor's CPU backend (torch.compile) compiles
# against, g++ the compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-$PWD/.venv}
req=scripts/python-requirements.txt
stamp=$VENV/gelu-fusion-requirements.txt

if [ -x "$VENV/bin/python" ] && cmp -s "$req" "$stamp"; then
  exit 0
fi

pins=$(grep -Eo '^(torch|transformers)==[^ ]+' "$req" | tr '\n' ' ')
echo "python-env: installing ${pins}and the test tools into $VENV (PyPI)" >&2
[ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv "$VENV"
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$VENV/bin/pip" install -q -r "$req"
# What the build and the tests rely on, checked once here rather than as
# a failure deep in a build.
"$VENV/bin/python" - "$req" <<'PY'
import re, sys, sysconfig, os
import torch, transformers
pins = dict(re.findall(r"^(torch|transformers)==(\S+)", open(sys.argv[1]).read(), re.M))
got = {"torch": torch.__version__.split("+")[0], "transformers": transformers.__version__}
bad = {k: (v, got[k]) for k, v in pins.items() if got[k] != v}
if bad:
    sys.exit(f"python-env: pinned versions not installed: {bad}")
inc = sysconfig.get_paths()["include"]
if not os.path.exists(os.path.join(inc, "Python.h")):
    sys.exit(f"python-env: no {inc}/Python.h (python3-dev): Inductor needs it")
PY
cp "$req" "$stamp"
