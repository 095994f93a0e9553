"""Single engine vs PD disaggregation, and deferred decode allocation (early vs prefill_complete).

Two presets: the ten o'clock workload split into prefill and decode pools, and the scaled upstream replica
(scenarios/upstream_pd_replica.toml). Each preset runs under both allocation policies on the same seed, so
the trade is read side by side.
"""

from __future__ import annotations

import copy

import pandas as pd
import streamlit as st

from app import compute, state
from app.charts import timelines
from app.pd.charts import SPAN_LABELS, request_phases
from app.story.tour import focus_marker
from app.ui.chart import chart_ui
from app.ui.fmt import fmt_seconds
from engine_model import STORIES, InputError, read_toml, validate

CAPS = (0, 32768, 65536, 131072, 163840, 262144)  # 0: the preset's own (None would blank the selectbox)
PRESETS = {"rush": "Ten o'clock workload, split", "upstream": "Upstream test replica (scaled)"}
MAX_WORKERS = 8


def _param(param: str, default, parse) -> str:
    """The session key of the section's widget for URL parameter `param`, seeded once from the URL."""
    key = state.keys(state.PD_PAGE).widget(param)
    note = state.seed_param(key, param, default, parse)
    if note is not None:
        st.warning(note)
    return key


def _on(text: str) -> bool:
    if text not in ("0", "1", "false", "true"):
        raise ValueError("expected 1 (shown) or 0 (hidden)")
    return text in ("1", "true")


def _preset(text: str) -> str:
    if text not in PRESETS:
        raise ValueError(f"expected one of {', '.join(PRESETS)}")
    return text


def _cap(text: str) -> int:
    if text in ("none", ""):
        return 0
    if not text.isdigit() or int(text) not in CAPS:
        raise ValueError(f"expected one of {', '.join(map(str, CAPS))}")
    return int(text)


def _workers(text: str) -> int:
    """A worker count from 1 to MAX_WORKERS; anything else is refused with a note (never clamped silently)."""
    if not text.isdigit() or not 1 <= int(text) <= MAX_WORKERS:
        raise ValueError(f"expected a whole number from 1 to {MAX_WORKERS}")
    return int(text)


def pd_scenario(preset: str, rush_values: dict, policy: str, cap, num_prefill: int, num_decode: int):
    """The upstream replica as written, or the page's own ten o'clock run (same requests, GPU, model and seed)
    with the `[pd]` block of scenarios/ten_oclock_rush_pd.toml."""
    if preset == "upstream":
        data = copy.deepcopy(read_toml("upstream_pd_replica"))
    else:
        data = STORIES["ten_oclock_rush"].scenario(rush_values).model_dump(mode="json", exclude_none=True)
        data["name"] = "ten_oclock_rush_pd"
        data["pd"] = copy.deepcopy(read_toml("ten_oclock_rush_pd")["pd"])
        data["pd"].setdefault("prefill", {})["num_workers"] = num_prefill
        data["pd"].setdefault("decode", {})["num_workers"] = num_decode
    data["pd"]["decode_allocation_policy"] = policy
    if cap:
        data["pd"]["decode_kv_cap_per_rank"] = cap
    return validate(data)


def deferred_allocation_ui(rush_values: dict | None = None, single=None) -> dict:
    """The PD section: the page's single-engine run (`single`) beside PD under both allocation policies.
    Returns its URL parameters (non-default only)."""
    st.markdown("### Split prefill from decode (PD disaggregation)")
    focus_marker(STORIES["ten_oclock_rush"], "pd")
    on = st.toggle("Show PD disaggregation: early vs prefill_complete decode allocation",
                   key=_param(state.PD_ON, True, _on))
    if not on:
        return {}
    preset_key = _param(state.PD_PRESET, "rush", _preset)
    cap_key = _param(state.PD_CAP, 0, _cap)
    pw_key = _param(state.PD_PREFILL_WORKERS, 1, _workers)
    dw_key = _param(state.PD_DECODE_WORKERS, 1, _workers)
    with st.container(horizontal=True, gap="medium", vertical_alignment="bottom"):  # a row that wraps
        cols = [st.container(width=w) for w in (270, 360, 230, 230)]  # each label and value whole
    preset = cols[0].selectbox("Preset", list(PRESETS), key=preset_key, format_func=PRESETS.get)
    cap = cols[1].selectbox("Decode KV cap per rank (tokens)", CAPS, key=cap_key,
                            format_func=lambda v: f"{v:,}" if v else "the preset's (upstream 163,840; ten o'clock none)",
                            help="--max-total-tokens on decode ranks, as the upstream test capped it to create pressure.")
    num_prefill = cols[2].slider("Prefill workers", 1, MAX_WORKERS, key=pw_key, disabled=preset == "upstream")
    num_decode = cols[3].slider("Decode workers", 1, MAX_WORKERS, key=dw_key, disabled=preset == "upstream")
    runs, run_keys = {}, {}
    try:
        for policy in ("early", "prefill_complete"):
            scenario = pd_scenario(preset, rush_values or STORIES["ten_oclock_rush"].defaults, policy, cap, num_prefill, num_decode)
            runs[policy], run_keys[policy] = compute.run_scenario(scenario), compute.run_key(scenario)
    except InputError as err:
        st.error(f"**This PD combination cannot run.** `{err.where}`: {err.problem}", icon=":material/block:")
        return _params(on, preset, cap, num_prefill, num_decode)
    except Exception as err:  # the PD model is new; never let it take the page down
        st.warning(f"The PD model could not run this preset ({type(err).__name__}: {err}).")
        return _params(on, preset, cap, num_prefill, num_decode)
    _policy_table_ui(runs, single if preset == "rush" else None)
    left, right = st.columns(2)
    end = max(r.end_at for r in runs.values())
    for col, (policy, run) in zip((left, right), runs.items(), strict=True):
        with col:  # specs shared by every session under (run, end): app.ui.chart
            key = (run_keys[policy], end)
            chart_ui(state.PD_PAGE, f"{policy}-passes", f"{policy}: one lane per worker",
                     "Each worker's forward passes. Prefill workers run prefill chunks; decode workers decode.",
                     lambda r=run: timelines.pass_timeline(r.passes, None, end), cache_key=key)
            chart_ui(state.PD_PAGE, f"{policy}-kv", f"{policy}: KV per worker",
                     "Orange: decode KV reserved for requests still in prefill or transfer — held, not yet used. "
                     "With prefill_complete it stays near zero.",
                     lambda r=run: timelines.kv_occupancy(r.kv, r.retractions, None, end), cache_key=key)
            chart_ui(state.PD_PAGE, f"{policy}-phases", f"{policy}: where each request's time went",
                     "One lane per request: grey waiting at prefill, purple waiting for decode KV, orange prefill "
                     "chunks, thin blue the KV transfer, dark blue decoding. Under early, decode KV is reserved "
                     "before prefill may start; under prefill_complete, after it ends.",
                     lambda r=run: request_phases(r.spans, end), cache_key=key)
    _phase_table_ui(runs)
    return _params(on, preset, cap, num_prefill, num_decode)


def _params(on, preset, cap, num_prefill, num_decode) -> dict:
    """The section's URL parameters, non-default only."""
    return {state.PD_ON: None if on else "0", state.PD_PRESET: preset if preset != "rush" else None,
            state.PD_CAP: cap or None, state.PD_PREFILL_WORKERS: num_prefill if num_prefill != 1 else None,
            state.PD_DECODE_WORKERS: num_decode if num_decode != 1 else None}


def _phase_table_ui(runs: dict) -> None:
    """Mean seconds per request in each phase, per group and policy (`summary(result).pd.phase_s`)."""
    rows = [{"policy": policy, "group": group}
            | {SPAN_LABELS.get(k, k): fmt_seconds(v) for k, v in phases.items()}
            for policy, run in runs.items() for group, phases in run.summary.pd.phase_s.items()]
    st.markdown("##### Mean time per request in each phase")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def _policy_table_ui(runs: dict, single=None) -> None:
    """TTFT and ITL by prompt-length bucket, and throughput: single engine, then PD under each policy."""
    rows = []
    arms = ({"single engine": single} if single is not None else {}) | {f"PD, {p}": run for p, run in runs.items()}
    for policy, run in arms.items():
        for bucket, m in run.summary.metrics.buckets.items():
            rows.append({"deployment": policy, "prompt tokens": bucket, "requests": m.num_requests,
                         "p95 first token": fmt_seconds(m.ttft_s.p95), "p99 gap between tokens": fmt_seconds(m.itl_s.p99),
                         "longest gap": fmt_seconds(m.max_itl_s.max),
                         "output tok/s": f"{m.output_throughput_tok_s or 0:,.0f}"})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption("The maintainers' measurement on the real test: about +27% output throughput and −49% p95 TTFT, but "
               "+93% p99 inter-token latency with prefill_complete (mean of two runs; seed 000). These rows are the "
               "model's, on this preset.")
