"""Single engine vs PD disaggregation, and deferred decode allocation (early vs prefill_complete).

Two presets: the ten o'clock workload split into prefill and decode pools, and the scaled upstream replica
(scenarios/upstream_pd_replica.toml). Each preset runs under both allocation policies on the same seed, so
the trade is read side by side: cards early -> prefill_complete, then the charts on one time axis.
"""

from __future__ import annotations

import streamlit as st

from app import compute, state
from app.charts import views
from app.charts.words import never_got_a_token
from app.pd import params, tables
from app.pd.presets import pd_scenario
from app.present.fmt import fmt_seconds
from app.present.numbers import Price, fmt_rate
from app.story.headline import price_cards
from app.story.tour import focus_marker
from app.ui.chart import chart_ui
from engine_model import (
    STORIES,
    UPSTREAM_SOURCE,
    InputError,
    policy_trade,
    read_toml,
    trade_statement,
)

POLICIES = ("early", "prefill_complete")


def _param(param: str) -> str:
    """The session key of the section's widget for URL parameter `param`, seeded once from the URL."""
    key = params.widget_key(param)
    note = state.seed_param(key, param, params.DEFAULTS[param], params.PARSERS[param])
    if note is not None:
        st.warning(note)
    return key


def _settings_ui() -> tuple[str, int, int, int]:
    """Preset, decode KV cap and worker counts. The upstream preset fixes its own worker counts: its sliders
    show them, greyed out."""
    row = st.container(horizontal=True, gap="medium", vertical_alignment="bottom")  # wraps when narrow
    cols = [row.container(width=width) for width in (250, 230, 230, 230)]
    preset = cols[0].selectbox("Preset", list(params.PRESETS), key=_param(state.PD_PRESET),
                               format_func=params.PRESETS.get)
    own = read_toml("upstream_pd_replica")["pd"].get("decode_kv_cap_per_rank") if preset == "upstream" else 0
    cap = cols[1].selectbox("Decode KV cap per rank (tokens)", params.CAPS, key=_param(state.PD_CAP),
                            format_func=lambda v: f"{v:,}" if v else (f"preset's: {own:,}" if own
                                                                      else "none"),
                            help="--max-total-tokens on decode ranks, as the upstream test capped it to "
                                 "create pressure. The upstream replica's own cap is 163,840 tokens; the "
                                 "ten o'clock workload has none.")
    keys = (_param(state.PD_PREFILL_WORKERS), _param(state.PD_DECODE_WORKERS))
    counts = []
    for col, label, key, fixed in zip(cols[2:], ("Prefill workers", "Decode workers"), keys,
                                      params.upstream_workers(), strict=True):
        if preset == "upstream":
            counts.append(col.slider(label, 1, params.MAX_WORKERS, value=fixed, disabled=True,
                                     help="The upstream replica fixes this count."))
        else:
            counts.append(col.slider(label, 1, params.MAX_WORKERS, key=key))
    return preset, cap, counts[0], counts[1]


def deferred_allocation_ui(rush_values: dict | None = None, single=None) -> dict:
    """The PD section: the page's single-engine run (`single`) beside PD under both allocation policies.
    Returns its URL parameters (non-default only)."""
    st.markdown("### Split prefill from decode (PD disaggregation)")
    focus_marker(STORIES["ten_oclock_rush"], "pd")
    on = st.toggle("Show PD disaggregation: early vs prefill_complete decode allocation",
                   key=_param(state.PD_ON))
    if not on:
        return {}
    preset, cap, num_prefill, num_decode = _settings_ui()
    url = _params(on, preset, cap, num_prefill, num_decode)
    runs, run_keys = {}, {}
    try:
        for policy in POLICIES:
            scenario = pd_scenario(preset, rush_values or STORIES["ten_oclock_rush"].defaults, policy, cap,
                                   num_prefill, num_decode)
            runs[policy], run_keys[policy] = compute.run_scenario(scenario), compute.run_key(scenario)
    except InputError as err:
        st.error(f"**This PD combination cannot run.** `{err.where}`: {err.problem}", icon=":material/block:")
        return url
    except Exception as err:  # the PD model is new; never let it take the page down
        st.warning(f"The PD model could not run this preset ({type(err).__name__}: {err}).")
        return url
    _tradeoff_ui(runs, preset)
    _policy_table_ui(runs, single if preset == "rush" else None, cap)
    _charts_ui(runs, run_keys)
    _phase_table_ui(runs)
    return url


def _tradeoff_ui(runs: dict, preset: str) -> None:
    """early -> prefill_complete on the four numbers the maintainers measured; on the upstream replica, the
    model's changes beside theirs and what the model leaves out; why a preset shows little."""
    st.markdown("#### early → prefill_complete")
    rows = tables.tradeoff(runs["early"], runs["prefill_complete"])
    price_cards(st.columns(len(rows)), [Price(row["label"], row["early"], row["prefill_complete"],
                                              fmt_seconds if row["unit"] == "s" else fmt_rate, row["better"])
                                        for row in rows], False)
    if preset == "upstream":
        _upstream_ui(runs)
    else:
        st.caption("The maintainers' figures come from another test, the upstream replica's shape (choose "
                   "that preset to see them beside the model's).")
    group = STORIES["ten_oclock_rush"].stream_group if preset == "rush" else "short"
    why = tables.little_difference(runs["early"], runs["prefill_complete"], group)
    if why:
        st.info(why, icon=":material/info:")


def _upstream_ui(runs: dict) -> None:
    """The model's four changes beside the maintainers', and in words which it does not reproduce."""
    trades = policy_trade(runs["early"].summary, runs["prefill_complete"].summary)
    st.markdown("##### This model beside the maintainers' measurement")
    st.dataframe(tables.upstream_table(trades), hide_index=True, width="stretch")
    sentences = trade_statement(trades)
    shown = st.warning if any(not t.matches for t in trades) else st.info
    shown("\n\n".join(sentences), icon=":material/compare_arrows:")
    st.caption(f"Upstream: {UPSTREAM_SOURCE}. This model: the benchmark requests (without the warm-up) of "
               "this preset's seed, one run per policy; the PD notes of the project give the mean of seeds 1 "
               "and 2, as upstream averaged two runs.")


def _charts_ui(runs: dict, run_keys: dict) -> None:
    """Each policy's workers, KV per worker and where each request's time went, side by side on one time
    axis."""
    end = max(r.end_at for r in runs.values())
    left, right = st.columns(2)
    for col, (policy, run) in zip((left, right), runs.items(), strict=True):
        with col:  # specs shared by every session under (run, end): app.ui.chart
            for view in views.pd_views(run, policy, end):
                chart_ui(state.PD_PAGE, *view, cache_key=(run_keys[policy], end))


def _params(on, preset, cap, num_prefill, num_decode) -> dict:
    """The section's URL parameters, non-default only."""
    if preset == "upstream":  # its worker counts are the preset's, not the sliders'
        num_prefill = num_decode = 1
    return {state.PD_ON: None if on else "0", state.PD_PRESET: preset if preset != "rush" else None,
            state.PD_CAP: cap or None, state.PD_PREFILL_WORKERS: num_prefill if num_prefill != 1 else None,
            state.PD_DECODE_WORKERS: num_decode if num_decode != 1 else None}


def _phase_table_ui(runs: dict) -> None:
    """Mean seconds per request in each phase, per group and policy (`summary(result).pd.phase_s`)."""
    st.markdown("##### Mean time per request in each phase")
    st.dataframe(tables.phase_table(runs), hide_index=True, width="stretch")
    st.caption("A phase a group never entered reads 0 s (e.g. under prefill_complete nothing holds decode KV "
               "before its prefill ends).")


def _policy_table_ui(runs: dict, single=None, cap: int = 0) -> None:
    """TTFT and ITL by prompt-length bucket, and throughput: single engine, then PD under each policy."""
    arms = (({"single engine": single} if single is not None else {})
            | {f"PD, {p}": run for p, run in runs.items()})
    st.dataframe(tables.policy_table(arms), hide_index=True, width="stretch")
    extra = f" — it never fit the {cap:,}-token decode cap" if cap else ""
    for sentence in dict.fromkeys(s for run in runs.values() for s in never_got_a_token(run.requests, extra)):
        st.caption(sentence)
    st.caption("These rows are the model's, on this preset, over every request.")
