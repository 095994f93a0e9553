"""The PD section's numbers as a person reads them: tables with words for headers and units, the trade-off
early -> prefill_complete, and why a preset shows little of it. Pure functions: no Streamlit."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from app.charts.frames import RunFrames
from app.charts.words import NO_TOKEN, bucket_words
from app.pd.charts import SPAN_LABELS
from app.pd.presets import POLICIES
from app.present.fmt import fmt_seconds, seconds_cell
from app.present.verdict import Against
from engine_model import (
    GPUS,
    MODELS,
    InputError,
    Scenario,
    Trade,
    Verdict,
    deployment_of,
    kv_dtype_of,
    num_gpus,
    policy_trade,
    refused_verdict,
    verdict,
)

PHASE_ORDER = ("waiting", "waiting_for_decode_kv", "prefill", "transfer", "decode")
PHASE_HEADS = {"transfer": "KV transfer after prefill"}  # engine_model.pd.figures: the part it adds
SAME_TTFT = 0.05  # p95 first tokens within 5 % of each other: the policies barely differ


def _seconds(value: float | None, has_tokens: bool) -> str:
    return seconds_cell(value, "not measured" if has_tokens else NO_TOKEN)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def gpu_name(key: str) -> str:
    return GPUS[key].name if key in GPUS else key


def layout(scenario: Scenario) -> str:
    """How many engines or workers at which TP: 'one engine × TP 8', '2 engines × TP 1', '1 prefill × TP 4 +
    1 decode × TP 4 (DP attention 4)'."""
    tp = scenario.hardware.tp_size
    if scenario.pd is None:
        k = scenario.engine.dp_size
        return f"{'one engine' if k == 1 else _plural(k, 'engine')} × TP {tp}"
    roles = []
    for name in ("prefill", "decode"):
        role = getattr(scenario.pd, name)
        dp = f" (DP attention {role.dp_size})" if role.dp_size > 1 else ""
        on = f" on {gpu_name(role.gpu)}" if role.gpu and role.gpu != scenario.hardware.gpu else ""
        roles.append(f"{role.num_workers} {name} × TP {role.tp_size or tp}{dp}{on}")
    return " + ".join(roles)


def gpus(scenario: Scenario) -> str:
    """'8 × H100 SXM 80GB'."""
    return f"{num_gpus(scenario)} × {gpu_name(scenario.hardware.gpu)}"


def deployment(scenario: Scenario) -> str:
    """How many engines or workers, at which TP, on how many of which GPU: '2 engines × TP 1 on 2 × H100 SXM
    80GB', '1 prefill × TP 4 (DP attention 4) + 1 decode × TP 4 … on 8 × …'."""
    return f"{layout(scenario)} on {gpus(scenario)}"


def model_name(scenario: Scenario) -> str:
    """'Llama-3.1-70B': the preset's name, or the model as the scenario names it."""
    return MODELS[scenario.model.name].name if scenario.model.name in MODELS else scenario.model.name


def model_words(scenario: Scenario) -> str:
    """'Llama-3.1-70B, bf16 weights, bf16 KV'."""
    m = scenario.model
    return f"{model_name(scenario)}, {m.weight_dtype} weights, {kv_dtype_of(scenario)} KV"


def verdict_of(policy: str, today: RunFrames, pd: RunFrames) -> Verdict:
    """One policy's run against today's (engine_model.verdict over both runs' summaries)."""
    return verdict(policy, today.summary, pd.summary)


def baseline_label(kind: str, scenario: Scenario, yours: bool = True) -> str:
    """A comparison without PD as its row reads: 'your engine today', '2 copies of your engine, round
    robin', '3 engines, round robin', 'one engine, TP 8'. `yours`: whether the case is the person's own
    engine (not a preset's, such as the upstream replica, whose 'today' is its engines on its GPUs)."""
    k = scenario.engine.dp_size
    if kind == "today" and yours:
        return "your engine today" if k == 1 else f"{k} copies of your engine, round robin"  # `verdicts`
    return f"{k} engines, round robin" if k > 1 else f"one engine, TP {scenario.hardware.tp_size}"


def fix_words(scenario: Scenario) -> str:
    """A refusal's fix as it ran: '4 prefill × TP 1 + 4 decode × TP 1, nvfp4 weights, fp8 KV'."""
    m = scenario.model
    return f"{layout(scenario)}, {m.weight_dtype} weights, {kv_dtype_of(scenario)} KV"


def verdicts(pd: Scenario, runs: dict[str, RunFrames], refused: dict[str, str], without,
             fixed: dict[str, tuple[Scenario, RunFrames]] | None = None) -> tuple[Against, list[Verdict]]:
    """Each policy against the comparison without PD (`without`: label, scenario, run, as `baseline_label`
    names it; today's engine by default) on the same requests: what is compared, and one verdict per policy
    (a refused one with its reason, then, where its fix ran (`fixed`), the fix's own verdict)."""
    label, today, today_run = without
    found = []
    for p in POLICIES:
        if p in runs:
            found.append(verdict_of(p, today_run, runs[p]))
        elif p in refused:
            found.append(refused_verdict(p, refused[p]))
            if p in (fixed or {}):
                scenario, run = fixed[p]
                found.append(replace(verdict_of(p, today_run, run), fixed=fix_words(scenario)))
    n_pd, n_today = num_gpus(pd), num_gpus(today)
    note = ""
    if label.endswith("copies of your engine, round robin"):
        note = (f"Your engine runs on {_plural(today.hardware.tp_size, 'GPU')}; PD needs {n_pd}, so today "
                f"is shown as {today.engine.dp_size} copies of it, dealt round robin (SGLang's --dp-size).")
    if n_today != n_pd:
        note += f" Not the same GPUs: {n_today} without PD, {n_pd} with."
    yours = label.startswith("your") or "of your engine" in label
    population = next(iter(runs.values()), today_run).summary.population
    return Against(gpus(pd), layout(today), layout(pd), population, note.strip(),
                   "today" if yours else "without PD"), found


def what_runs(scenario: Scenario, run: RunFrames | None) -> str:
    """The model, its precision as SGLang runs it on these GPUs (engine_model.deployed: the GEMM backend
    where it is not the native one), and the KV pools as resolved, per rank and per worker (a PD decode
    worker's pool is its DP ranks' pools together); without a run (it cannot run), the deployment."""
    head = f"{precision_words(scenario)}, {deployment(scenario)}"
    if run is None:
        return f"{head}: cannot run (above)"
    found = deployment_of(scenario)
    if not found.is_pd:
        role = found.roles[0]
        return (f"{head}. KV pool {role.kv_per_rank:,} tokens per engine"
                + (f", {role.kv_in_all:,} in all" if role.num_workers > 1 else ""))
    pools = []
    for role in found.roles:
        per = (f"{role.kv_per_rank:,} tokens per DP rank × {role.dp_size} ranks = {role.kv_per_worker:,} per "
               "worker" if role.dp_size > 1 else f"{role.kv_per_rank:,} tokens per worker")
        in_all = f", {role.kv_in_all:,} in all" if role.num_workers > 1 else ""
        pools.append(f"{role.name} KV {per}{in_all}")
    said = "; ".join(pools)
    return f"{head}. {said[:1].upper()}{said[1:]}"


def precision_words(scenario: Scenario) -> str:
    """'Llama-3.1-70B (bf16 weights, bf16 KV)'; a quantized checkpoint names the path SGLang runs it on:
    'Llama-3.1-70B (nvfp4 weights via Marlin W4A16 (4-bit weights, bf16 compute; …), fp8 KV)'."""
    m, name = scenario.model, model_name(scenario)
    try:
        path = deployment_of(scenario).roles[0].weights
    except InputError:
        path = None
    weights = path.words if path is not None and path.runs and path.weight_dtype != "bf16" \
        else f"{m.weight_dtype} weights"
    return f"{name} ({weights}, {kv_dtype_of(scenario)} KV)"


def policy_table(arms: dict[str, tuple[Scenario, RunFrames]]) -> pd.DataFrame:
    """First token, gaps and output per prompt-length bucket, one block of rows per deployment, each with
    its GPU count."""
    rows = []
    for arm, (scenario, run) in arms.items():
        for bucket, m in run.summary.measured.buckets.items():  # one population: Summary.measured
            got = m.num_output_tokens > 0
            rows.append({
                "deployment": arm, "GPUs": num_gpus(scenario), "prompt length (tokens)": bucket_words(bucket),
                "requests": m.num_requests,
                "first token, p95": _seconds(m.ttft_s.p95, got),
                "gap between tokens, p99": _seconds(m.itl_s.p99, got),
                "longest gap": _seconds(m.max_itl_s.max, got),
                "output (tokens/s)": (f"{m.output_throughput_tok_s:,.0f}" if m.output_throughput_tok_s
                                      else "0")})
    return pd.DataFrame(rows)


def _mean(seconds: float) -> str:
    return "0 s" if seconds < 5e-5 else fmt_seconds(seconds)


def phase_table(runs: dict[str, RunFrames]) -> pd.DataFrame:
    """Mean seconds per request in each phase, per policy and group. A phase a group never entered is 0 s."""
    rows = []
    for policy, run in runs.items():
        for group, phases in run.summary.pd.phase_s.items():
            rows.append({"policy": policy, "group": group}
                        | {f"{PHASE_HEADS.get(p, SPAN_LABELS[p])} (mean)": _mean(phases.get(p, 0.0))
                           for p in PHASE_ORDER})
    return pd.DataFrame(rows)


def tradeoff(early: RunFrames, late: RunFrames) -> list[dict]:
    """The four figures PR #40703 reports, early -> prefill_complete (the benchmark client's requests
    where the preset has one, as bench_serving reports; else every request)."""
    return [{"label": t.figure.label + (", tokens/s" if t.figure.stat is None else ""), "key": t.figure.key,
             "early": t.early, "prefill_complete": t.prefill_complete,
             "better": "higher" if t.figure.stat is None else "lower",
             "unit": "tok/s" if t.figure.stat is None else "s"}
            for t in policy_trade(early.summary, late.summary)]


def upstream_table(trades: list[Trade]) -> pd.DataFrame:
    """The model's change beside what PR #40703 reports, figure by figure."""
    return pd.DataFrame([{"figure": t.figure.label, "this model": t.words[0], "upstream": t.words[1],
                          "within 2× of upstream": "yes" if t.matches else "no"} for t in trades])


def little_difference(early: RunFrames, late: RunFrames, group: str, who: str = "") -> str | None:
    """Why the two policies barely differ on this preset, from where `group`'s time went (`who`: the group
    in words, by default "the <group>"); None when the p95 first tokens differ by more than SAME_TTFT."""
    a, b = (r.summary.measured.overall.ttft_s.p95 for r in (early, late))
    if a is None or b is None or abs(b - a) > SAME_TTFT * max(a, b):
        return None
    pe, pl = early.summary.pd.phase_s.get(group, {}), late.summary.pd.phase_s.get(group, {})
    wait_e = pe.get("waiting", 0.0) + pe.get("waiting_for_decode_kv", 0.0)
    wait_l = pl.get("waiting", 0.0) + pl.get("waiting_for_decode_kv", 0.0)
    return (f"Here the two policies barely differ (p95 first token over {early.summary.population}: "
            f"{fmt_seconds(a)} and {fmt_seconds(b)}): "
            f"prefill is the bottleneck, so the policy moves where {who or 'the ' + group} wait, not how "
            f"long. On average they wait {fmt_seconds(wait_e)} under early "
            f"({fmt_seconds(pe.get('waiting_for_decode_kv', 0.0))} of it for decode KV) and "
            f"{fmt_seconds(wait_l)} under prefill_complete (at prefill). The upstream replica, whose decode "
            "KV is capped, shows the trade-off.")
