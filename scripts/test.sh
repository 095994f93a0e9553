#!/usr/bin/env bash
# Runs the whole test suite: lint, then every test (creates .venv on first use).
# Browser tests need /usr/bin/chromium (.ci/run installs it); without it they skip, except under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/env.sh
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -n 2 --dist loadgroup "$@"
