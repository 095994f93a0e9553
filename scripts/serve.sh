#!/usr/bin/env bash
# Serves the Who Waits app on http://localhost:8501 (creates .venv on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/env.sh
exec .venv/bin/streamlit run app/serve.py "$@"  # the pages of app/main.py; warms the caches at start-up
