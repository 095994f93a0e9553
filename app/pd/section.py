"""Single engine vs PD disaggregation, on the same GPUs, and deferred decode allocation (early vs
prefill_complete).

The ten o'clock page offers two presets: its own workload split into prefill and decode pools, and the scaled
upstream replica (scenarios/upstream_pd_replica.toml); Your server splits an uploaded trace the same way
(`compare_ui`). Each case runs under both allocation policies on the same seed, beside the same requests on
as many GPUs without PD, so the trade is read side by side: cards early -> prefill_complete, a table whose
every row says its GPUs, the charts on one time axis, and the checklist to read before enabling it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from app import compute, state
from app.charts import views
from app.charts.frames import RunFrames
from app.charts.timelines import shared_y_max
from app.charts.words import never_got_a_token
from app.pd import params, tables
from app.pd.presets import BASELINES, baseline, policy_runs, preset_data, split_tp
from app.present import checklist
from app.present import verdict as verdict_words
from app.story.headline import headline_cards, tradeoff_cards
from app.story.tour import PD_CHARTS, focus_marker
from app.ui.cards import cards_ui
from app.ui.chart import chart_ui
from app.ui.exports import pd_numbers_ui
from app.ui.fold import folded
from engine_model import (
    MIX,
    STORIES,
    UPSTREAM_SOURCE,
    InputError,
    Scenario,
    check_deployment,
    num_gpus,
    policy_trade,
    ranged,
    read_toml,
    trade_statement,
)

Runner = Callable[[Scenario], tuple[RunFrames, str]]  # a run and the key its charts are cached under


def story_runner(scenario: Scenario) -> tuple[RunFrames, str]:
    return compute.run_scenario(scenario), compute.run_key(scenario)


@dataclass
class Case:
    """What one PD comparison runs: a single-engine case (or the upstream replica, with its own [pd])."""

    data: dict
    run: Runner = story_runner
    preset: str = "rush"  # "rush", "upstream" or "trace"
    story: tuple[Scenario, RunFrames] | None = None  # the page's own run, shown beside (the ten o'clock one)
    group: str = "short"  # whose wait `little_difference` explains
    who: str = ""  # that group in words ("" : "the <group>")
    page: str = state.PD_PAGE  # the key prefix of its charts


def _param(param: str) -> str:
    """The session key of the section's widget for URL parameter `param`, seeded once from the URL. The
    section opens hidden, unless the link sets any of its parameters (it is then shown as the link says)."""
    key = params.widget_key(param)
    default = params.DEFAULTS[param]
    if param == state.PD_ON:
        default = default or any(p in st.query_params for p in state.PD_PARAMS if p != state.PD_ON)
    note = state.seed_param(key, param, default, params.PARSERS[param])
    if note is not None:
        st.warning(note)
    return key


def _settings_ui(data: dict) -> tuple[str, int, int, int, int, str]:
    """Preset, decode KV cap, worker counts, the workers' TP and the comparison without PD. The upstream
    preset fixes its own worker counts and TP: their controls show them, greyed out."""
    row = st.container(horizontal=True, gap="medium", vertical_alignment="bottom")  # wraps when narrow
    cols = [row.container(width=width) for width in (250, 230, 170, 170, 190, 280)]
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
    for col, label, key, fixed in zip(cols[2:4], ("Prefill workers", "Decode workers"), keys,
                                      params.upstream_workers(), strict=True):
        if preset == "upstream":
            counts.append(col.slider(label, 1, params.MAX_WORKERS, value=fixed, disabled=True,
                                     help="The upstream replica fixes this count."))
        else:
            counts.append(col.slider(label, 1, params.MAX_WORKERS, key=key))
    story_tp = int(data.get("hardware", {}).get("tp_size", 1))
    tp = worker_tp_ui(cols[4], story_tp, split_tp(data, sum(counts)), preset == "upstream",
                      key=_param(state.PD_TP))
    base = base_ui(cols[5], key=_param(state.PD_BASE))
    return preset, cap, counts[0], counts[1], tp, base


def worker_tp_ui(col, case_tp: int, split: int, fixed: bool = False, **widget) -> int:
    """Each PD worker's TP (0: the case's GPUs split between the workers, `split` each): the workers times
    their TP are PD's GPUs."""
    if fixed:
        return col.selectbox("Worker TP", [params.upstream_tp()], disabled=True,
                             format_func=lambda v: f"TP {v}",
                             help="The upstream replica fixes its workers' TP (with attention DP).")
    return col.selectbox("Worker TP", params.WORKER_TPS,
                         format_func=lambda v: f"TP {v}" if v else split_words(case_tp, split),
                         help="Each prefill and decode worker's tensor parallel size: PD uses (prefill + "
                              "decode workers) × this many GPUs. By default the workers split the story's "
                              "GPUs (TP 8, 1 + 1 workers: TP 4 each), so PD runs on the GPUs you have "
                              "today.", **widget)


def split_words(case_tp: int, split: int) -> str:
    """The default worker TP in words: 'split the 8 GPUs: TP 4', or one GPU that cannot be split."""
    return f"split the {case_tp} GPUs: TP {split}" if case_tp > 1 else "TP 1 (one GPU: 2)"


def base_ui(col, **widget) -> str:
    """The comparison on the same GPUs without PD."""
    return col.selectbox("Without PD, on the same GPUs", list(BASELINES), format_func=BASELINES.get,
                         help="What PD is measured against, on the same requests: your engine as it runs "
                              "today (on as many GPUs as PD: where PD needs more, as many copies of it, "
                              "round robin), one engine per PD worker (SGLang's --dp-size, each at the "
                              "workers' TP), or one engine whose TP spans every GPU.", **widget)


def section_values() -> dict:
    """The section's settings as its widgets hold them (seeded from the URL on first use), by URL name."""
    return {param: st.session_state[_param(param)] for param in state.PD_PARAMS}


def today_cards_ui(values: dict, today: RunFrames) -> bool:
    """With the section shown on the ten o'clock workload, the page's headline cards read today → PD, on
    the section's own layout and runs (the same cache): one row per policy that can start. Returns whether
    it drew them (else the page shows its usual before → after)."""
    section = section_values()
    if not section[state.PD_ON] or section[state.PD_PRESET] != "rush":
        return False
    story = STORIES["ten_oclock_rush"].with_mix(values.get(MIX))
    data = preset_data("rush", values)
    counts = (section[state.PD_PREFILL_WORKERS], section[state.PD_DECODE_WORKERS])
    shaped, runs, refused = policy_runs(data, section[state.PD_CAP], *counts, section[state.PD_TP],
                                        compute.run_scenario)
    pd = shaped.get("early", shaped.get("prefill_complete"))
    if pd is None:
        return False
    rows = list(runs.items())
    fixed = _fixed(story_runner, shaped, refused)
    try:
        same = baseline(data, "today", pd)
        base = today if same.engine.dp_size == 1 else compute.run_scenario(same)
    except InputError:
        return False
    st.markdown(f"#### Today → PD on the same GPUs ({tables.deployment(pd)})")
    banded = ranged(pd)
    st.caption("The PD section below is on: these cards read your engine today "
               f"({tables.layout(same)}) → PD on the same requests; the section says why each moves."
               + (f" {banded.band.words()}" if banded else ""))
    for policy, run in rows:
        cards_ui(headline_cards(story, base, run, ranges=ranged(shaped[policy])), f"##### PD, {policy}")
    for policy in refused:
        if policy in fixed:
            scenario, run = fixed[policy]
            head = f"##### PD, {policy}: cannot start here; on its fix, {tables.fix_words(scenario)}"
            cards_ui(headline_cards(story, base, run, ranges=ranged(scenario)), head)
        else:
            st.caption(f"PD under {policy} cannot start on this layout: the section below says why and names "
                       "the fix.")
    return True


def deferred_allocation_ui(rush_values: dict | None = None, single: RunFrames | None = None) -> dict:
    """The ten o'clock page's PD section: the page's single-engine run (`single`) beside the same requests
    on PD's GPUs without PD, and PD under both allocation policies. Returns its URL parameters (non-default
    only)."""
    story = STORIES["ten_oclock_rush"].with_mix((rush_values or {}).get(MIX))
    st.markdown("### Split prefill from decode (PD disaggregation)")
    focus_marker(story, "pd")
    on = st.toggle("Show PD disaggregation: early vs prefill_complete decode allocation",
                   key=_param(state.PD_ON))
    if not on:
        return {}
    values = rush_values or story.defaults
    scenario = story.scenario(values)
    preset, cap, num_prefill, num_decode, tp, base = _settings_ui(preset_data("rush", values))
    mine = (scenario, single) if preset == "rush" and single is not None else None
    case = Case(preset_data(preset, values), preset=preset, story=mine,
                group=story.stream_group if preset == "rush" else "short")
    compare_ui(case, cap, num_prefill, num_decode, base, tp if preset == "rush" else 0)
    return _params(on, preset, cap, num_prefill, num_decode, tp, base)


def compare_ui(case: Case, cap: int, num_prefill: int, num_decode: int, base: str,
               worker_tp: int = 0) -> None:
    """PD under both policies beside the same requests without PD on the same GPUs: the verdict against
    today, what runs, the trade, the table, the charts, the phases and the checklist. A policy that cannot
    run says why and hides nothing that can: the engines on the same GPUs and the other policy stay."""
    scenarios, runs, refused = policy_runs(case.data, cap, num_prefill, num_decode, worker_tp,
                                           _guarded(case.run))
    pd = scenarios.get("early", scenarios.get("prefill_complete"))
    if pd is None:
        _refused_ui(refused)
        return
    without = _baseline(case, base, pd)
    frames = {policy: run for policy, (run, _) in runs.items()}
    fixed = _fixed(case.run, scenarios, refused) if without is not None else {}
    if without is not None:
        verdict_ui(*tables.verdicts(pd, frames, {p: e.problem for p, e in refused.items()}, without, fixed))
    _refused_ui(refused)
    _what_runs_ui(case, pd, frames.get("early"), without)
    if len(frames) == 2:
        _tradeoff_ui(frames, case, tables.deployment(scenarios["early"]))
    _policy_table_ui(case, scenarios, frames, without, cap, fixed)
    if runs:
        _charts_ui(case, runs)
        _phase_table_ui(frames, num_gpus(pd))
    same = next(iter(frames.values()), without[2] if without else case.story and case.story[1])
    checklist_ui(checklist.of_runs(scenarios.get("prefill_complete", pd), frames.get("early"),
                                   frames.get("prefill_complete"), same, without and without[2]))


def _guarded(run: Runner) -> Runner:
    """`run`, with any other failure as a refusal: the PD model is new; never let it take the page down."""
    def guarded(scenario: Scenario):
        try:
            return run(scenario)
        except InputError:
            raise
        except Exception as err:
            raise InputError(type(err).__name__, str(err)) from err
    return guarded


def _fixed(run: Runner, scenarios: dict, refused: dict) -> dict:
    """Each refused policy on its refusal's first fix that keeps the policy and the GPUs (e.g. TP 1 workers on
    the same GPUs for prefill_complete), run: policy -> (scenario, run); a fix that changes either, or cannot
    run, is left out (the verdict compares on the same GPUs)."""
    out = {}
    for policy, err in refused.items():
        if policy not in scenarios:
            continue
        shaped = scenarios[policy]
        fix = next((f for f in getattr(err, "fixes", ())
                    if not any(key.endswith("decode_allocation_policy") for key, _ in f.settings)
                    and num_gpus(f.apply(shaped)) == num_gpus(shaped)), None)
        if fix is None:
            continue
        try:
            scenario = fix.apply(shaped)
            check_deployment(scenario)
            out[policy] = scenario, run(scenario)[0]
        except InputError:
            continue
    return out


def verdict_ui(against: verdict_words.Against, verdicts: list) -> None:
    """The section's lead: each policy against today on the same GPUs, both waits per prompt length."""
    with st.container(border=True):
        st.markdown("\n\n".join(verdict_words.lines(against, verdicts)))


def _refused_ui(refused: dict[str, InputError]) -> None:
    """Why a policy cannot run here, once per reason (both policies refused alike: one message)."""
    reasons = {}
    for policy, err in refused.items():
        reasons.setdefault((err.where, err.problem), []).append(policy)
    for (where, problem), policies in reasons.items():
        who = "PD under either policy" if len(policies) == 2 else f"PD under {policies[0]}"
        st.warning(f"**{who} cannot run here.** `{where}`: {problem.rstrip('.')}. The rows below show what "
                   "can.", icon=":material/block:")


def _baseline(case: Case, base: str, pd: Scenario) -> tuple[str, Scenario, RunFrames] | None:
    """(label, scenario, run) of the same requests on PD's GPUs without PD; None when not asked or refused.
    Today's engine on the GPUs PD uses is the page's own run (`case.story`), not run again."""
    try:
        scenario = baseline(case.data, base, pd)
        if scenario is None:
            return None
        if base == "today" and case.story is not None and scenario.engine.dp_size == 1:
            scenario, run = case.story
        else:
            run, _ = case.run(scenario)
    except InputError as err:
        st.warning(f"**Without PD on the same GPUs ({BASELINES[base]}) cannot run:** `{err.where}`: "
                   f"{err.problem}", icon=":material/block:")
        return None
    return tables.baseline_label(base, scenario, case.preset != "upstream"), scenario, run


def _is_story(case: Case, without) -> bool:
    """Whether the comparison without PD is the page's own run (today's engine on the same GPUs)."""
    return without is not None and case.story is not None and without[1] is case.story[0]


def _what_runs_ui(case: Case, pd: Scenario, run: RunFrames | None, without) -> None:
    """Every deployment of the section in one list: model, GPUs, and KV per rank and per worker (a PD that
    did not run: its shape)."""
    lines = [f"- **PD**: {tables.what_runs(pd, run)}"]
    if without is not None:
        label, scenario, base_run = without
        lines.append(f"- **{label}**: {tables.what_runs(scenario, base_run)}")
    if case.story is not None and not _is_story(case, without):
        lines.append(f"- **the story's engine** (above): {tables.what_runs(*case.story)}")
    elif case.preset == "upstream":
        lines.append("- The story above runs other hardware: these rows are the upstream replica's.")
    st.markdown("**What runs here**\n" + "\n".join(lines))


def _tradeoff_ui(runs: dict, case: Case, deployment: str) -> None:
    """early -> prefill_complete on the four numbers PR #40703 reports, on the PD deployment named;
    on the upstream replica, the model's changes beside theirs and what the model leaves out; why a preset
    shows little."""
    rows = tables.tradeoff(runs["early"], runs["prefill_complete"])
    cards_ui(tradeoff_cards(rows), f"#### early → prefill_complete ({deployment})")
    if case.preset == "upstream":
        _upstream_ui(runs)
    else:
        st.caption("Both sides of each card run the same PD deployment (above). The figures PR #40703 "
                   "reports come from another test, the upstream replica's shape (choose that preset on the "
                   "ten o'clock page to see them beside the model's).")
    why = tables.little_difference(runs["early"], runs["prefill_complete"], case.group, case.who)
    if why:
        st.info(why, icon=":material/info:")


def _upstream_ui(runs: dict) -> None:
    """The model's four changes beside those PR #40703 reports, and in words which it does not reproduce."""
    trades = policy_trade(runs["early"].summary, runs["prefill_complete"].summary)
    st.markdown("##### This model beside what PR #40703 reports")
    st.dataframe(tables.upstream_table(trades), hide_index=True, width="stretch")
    sentences = trade_statement(trades)
    shown = st.warning if any(not t.matches for t in trades) else st.info
    shown("\n\n".join(sentences), icon=":material/compare_arrows:")
    st.caption(f"Upstream: {UPSTREAM_SOURCE}. This model: the benchmark requests (without the warm-up) of "
               "this preset's seed, one run per policy; the PD notes of the project give the mean of seeds 1 "
               "and 2, as upstream averaged two runs.")


def _charts_ui(case: Case, runs: dict) -> None:
    """Each policy's workers, KV per worker and where each request's time went, side by side on one time
    axis; in a fold built when opened (the tour's PD steps open it)."""
    with folded("Each policy's workers, their KV and where each request's time went, side by side",
                PD_CHARTS, icon=":material/view_column:") as is_open:
        if not is_open:
            return
        end = max(run.end_at for run, _ in runs.values())
        y_max = shared_y_max([run.kv for run, _ in runs.values()])  # the two sides on one scale
        columns = st.columns(2)
        for col, (policy, (run, key)) in zip(columns, runs.items(), strict=False):
            with col:  # specs shared by every session under (run, end, y_max): app.ui.chart
                for view in views.pd_views(run, policy, end, y_max):
                    chart_ui(case.page, *view, cache_key=(key, end, tuple(sorted(y_max.items()))))


def _params(on, preset, cap, num_prefill, num_decode, tp, base) -> dict:
    """The section's URL parameters, non-default only."""
    if preset == "upstream":  # its worker counts and TP are the preset's, not the controls'
        num_prefill = num_decode = 1
        tp = 0
    return {state.PD_ON: "1" if on else None, state.PD_PRESET: preset if preset != "rush" else None,
            state.PD_CAP: cap or None, state.PD_PREFILL_WORKERS: num_prefill if num_prefill != 1 else None,
            state.PD_DECODE_WORKERS: num_decode if num_decode != 1 else None, state.PD_TP: tp or None,
            state.PD_BASE: base if base != params.DEFAULTS[state.PD_BASE] else None}


def _phase_table_ui(runs: dict, gpus: int) -> None:
    """Mean seconds per request in each phase, per group and policy (`summary(result).pd.phase_s`)."""
    st.markdown(f"##### Mean time per request in each phase (PD, {gpus} GPUs under either policy)")
    st.dataframe(tables.phase_table(runs), hide_index=True, width="stretch")
    st.caption("A phase a group never entered reads 0 s (e.g. under prefill_complete nothing holds decode KV "
               "before its prefill ends).")


def _policy_table_ui(case: Case, scenarios: dict, runs: dict, without, cap: int = 0,
                     fixed: dict | None = None) -> None:
    """TTFT and ITL by prompt-length bucket, and throughput: the story's engine, the same GPUs without PD,
    then PD under each policy (a refused one on its fix, where it ran: `fixed`); every row with its GPUs."""
    arms = {}
    if case.story is not None and not _is_story(case, without):
        arms["the story's engine"] = case.story
    if without is not None:
        arms[without[0]] = without[1:]
    arms |= {f"PD, {p}": (scenarios[p], run) for p, run in runs.items()}
    shown = arms | {f"PD, {p} with the fix": pair for p, pair in (fixed or {}).items()}
    st.dataframe(tables.policy_table(shown), hide_index=True, width="stretch")
    pd_numbers_ui(case.page, arms, runs)  # the cards and this table as an image; the PD charts' export note
    extra = f" — it never fit the {cap:,}-token decode cap" if cap else ""
    for sentence in dict.fromkeys(s for run in runs.values() for s in never_got_a_token(run.requests, extra)):
        st.caption(sentence)
    counted = next((run.summary.population for _, run in arms.values()), "every request")
    st.caption(f"These rows are the model's, on this case, over {counted} (the cards and the verdict count "
               "the same). GPUs: what each deployment uses (what runs, above).")


def checklist_ui(checks: list) -> None:
    """Before you enable prefill_complete: seed 000's checks on this case (app.present.checklist)."""
    st.markdown("#### Before you enable prefill_complete")
    st.table(checklist.frame(checks).set_index("check"))
    st.caption("Each check reads pass, fail or unknown from this case: its requests, its runs under both "
               "policies and its settings. The constraints are those SGLang 0.5.23 checks when it starts "
               "(`_validate_prefill_complete`, the bootstrap handshake, the KV manager's pool check).")
