#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) with the project and its dev tools, once; later calls reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for candidate in python3.13 python3.12 python3.11 python3; do
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      PY=$candidate; break
    fi
  done
fi
[ -n "$PY" ] || { echo "error: Python >= 3.11 is needed" >&2; exit 1; }
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[dev]'
  rm -f .venv/.installed-*; touch "$stamp"
fi
