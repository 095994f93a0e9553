"""Whether this app may poll a running server, and which hosts: the operator's decision, made when the app
is started. Pure: no Streamlit.

Off unless `WHO_WAITS_LIVE=1` is set in the app's environment; then loopback only, plus the hosts listed in
`WHO_WAITS_LIVE_HOSTS` (comma-separated). deploy/ never sets either (a test checks), so the hosted app can
never be made to fetch a URL a visitor types.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

ENABLE = "WHO_WAITS_LIVE"
HOSTS = "WHO_WAITS_LIVE_HOSTS"
EVERY_S = (2, 5, 10, 30)  # poll intervals offered; 5 s by default
DEFAULT_EVERY_S = 5
MAX_POLLS = 360  # kept per session: 30 minutes at 5 s, a few MB
MAX_FAILURES = 5  # polls in a row that fail before the page stops polling


@dataclass(frozen=True)
class LiveConfig:
    enabled: bool
    hosts: tuple[str, ...]  # allowed besides loopback


def live_config(environ: Mapping[str, str] = os.environ) -> LiveConfig:
    hosts = tuple(h.strip().lower() for h in environ.get(HOSTS, "").split(",") if h.strip())
    return LiveConfig(environ.get(ENABLE, "").strip() == "1", hosts)
