"""The PD section's settings: presets, decode KV caps, worker counts, the comparison on the same GPUs, their
URL values and defaults.

No Streamlit here, so the guided tour can set them (app.story.tour) and the tests can read them.
"""

from __future__ import annotations

from app.pd import names as state  # the URL names (app.state re-exports them; it imports Streamlit)
from app.pd.presets import BASELINES
from engine_model import read_toml

CAPS = (0, 32768, 65536, 131072, 163840, 262144)  # 0: the preset's own (None would blank the selectbox)
PRESETS = {"rush": "This page's workload, split",
           "upstream": "Upstream test replica (scaled)"}
MAX_WORKERS = 8
WORKER_TPS = (0, 1, 2, 4, 8)  # 0: the story's GPUs split between the workers (app.pd.presets.split_tp)
DEFAULTS = {state.PD_ON: False, state.PD_PRESET: "rush", state.PD_CAP: 0, state.PD_PREFILL_WORKERS: 1,
            state.PD_DECODE_WORKERS: 1, state.PD_TP: 0, state.PD_BASE: "today"}


def parse_on(text: str) -> bool:
    if text not in ("0", "1", "false", "true"):
        raise ValueError("expected 1 (shown) or 0 (hidden)")
    return text in ("1", "true")


def parse_preset(text: str) -> str:
    if text not in PRESETS:
        raise ValueError(f"expected one of {', '.join(PRESETS)}")
    return text


def parse_cap(text: str) -> int:
    if text in ("none", ""):
        return 0
    if not text.isdigit() or int(text) not in CAPS:
        raise ValueError(f"expected one of {', '.join(map(str, CAPS))}")
    return int(text)


def parse_workers(text: str) -> int:
    """A worker count from 1 to MAX_WORKERS; anything else is refused with a note (never clamped silently)."""
    if not text.isdigit() or not 1 <= int(text) <= MAX_WORKERS:
        raise ValueError(f"expected a whole number from 1 to {MAX_WORKERS}")
    return int(text)


def parse_worker_tp(text: str) -> int:
    """A worker TP of 1, 2, 4 or 8 (0 or empty: the story's GPUs split between the workers)."""
    if text in ("", "0"):
        return 0
    if not text.isdigit() or int(text) not in WORKER_TPS:
        raise ValueError(f"expected one of {', '.join(map(str, WORKER_TPS[1:]))} "
                         "(or 0: split the story's GPUs)")
    return int(text)


def parse_base(text: str) -> str:
    if text not in BASELINES:
        raise ValueError(f"expected one of {', '.join(BASELINES)}")
    return text


PARSERS = {state.PD_ON: parse_on, state.PD_PRESET: parse_preset, state.PD_CAP: parse_cap,
           state.PD_PREFILL_WORKERS: parse_workers, state.PD_DECODE_WORKERS: parse_workers,
           state.PD_TP: parse_worker_tp, state.PD_BASE: parse_base}


def upstream_tp() -> int:
    """The upstream replica's worker TP (its TOML fixes it)."""
    return int(read_toml("upstream_pd_replica")["pd"]["prefill"]["tp_size"])


def upstream_workers() -> tuple[int, int]:
    """The upstream replica's own prefill and decode worker counts (its TOML fixes them)."""
    pd = read_toml("upstream_pd_replica")["pd"]
    return int(pd["prefill"]["num_workers"]), int(pd["decode"]["num_workers"])


def widget_key(param: str) -> str:
    """The session key of the section's widget for URL parameter `param`."""
    from app import state as app_state  # Streamlit's session keys: only the page asks for them

    return app_state.keys(app_state.PD_PAGE).widget(param)
