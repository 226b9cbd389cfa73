# GELU_PYTHON: the Python interpreter whose torch the PyTorch adapter builds
# against, and that pytest, the report's PyTorch peer, its chart and the
# examples run with. By default the project's virtualenv, .venv at the
# repository root (scripts/install-deps.sh makes it, with the pinned torch
# and transformers from PyPI: scripts/python-env.sh); `make` passes it.
include_guard(GLOBAL)
set(GELU_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
  "Python with torch: the adapter's build, pytest, the report, the examples")
