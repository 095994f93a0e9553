#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) with the locked versions of the project's packages and dev tools
# (requirements.lock), once; later calls reuse it.
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
# The stamp names the lock and pyproject it was built from; when either changes, the venv is built anew
# so that it holds exactly the locked versions (scripts/lock.sh rewrites the lock).
stamp=.venv/.installed-$(cat requirements.lock pyproject.toml | sha1sum | cut -c1-12)
if [ ! -f "$stamp" ]; then
  "$PY" -m venv --clear .venv
  .venv/bin/python -m pip install --quiet -r requirements.lock
  .venv/bin/python -m pip install --quiet --no-deps -e .
  touch "$stamp"
fi
