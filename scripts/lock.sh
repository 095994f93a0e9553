#!/usr/bin/env bash
# Rewrites requirements.lock from pyproject.toml: one pinned version of every package, for Python >= 3.11.
#   scripts/lock.sh                           after a dependency was added or removed (other pins kept)
#   scripts/lock.sh --upgrade                 every package to its newest version within pyproject's ranges
#   scripts/lock.sh --upgrade-package NAME    one package
# uv is a tool run here, not a dependency: taken from PATH, or installed into a throwaway venv.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=$(command -v uv || true)
if [ -z "$UV" ]; then
  tool=$(mktemp -d)
  trap 'rm -rf "$tool"' EXIT
  python3 -m venv "$tool" && "$tool/bin/python" -m pip install --quiet uv
  UV=$tool/bin/uv
fi
"$UV" pip compile pyproject.toml --extra dev --extra cluster --universal --python-version 3.11 --quiet \
  --custom-compile-command scripts/lock.sh -o requirements.lock "$@"
