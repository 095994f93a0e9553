"""The PD section's numbers as a person reads them: tables with words for headers and units, the trade-off
early -> prefill_complete, and why a preset shows little of it. Pure functions: no Streamlit."""

from __future__ import annotations

import pandas as pd

from app.charts.frames import RunFrames
from app.charts.words import NO_TOKEN, bucket_words
from app.pd.charts import SPAN_LABELS
from app.present.fmt import fmt_seconds, seconds_cell
from engine_model import GPUS, MODELS, Scenario, Trade, num_gpus, policy_trade

PHASE_ORDER = ("waiting", "waiting_for_decode_kv", "prefill", "transfer", "decode")
SAME_TTFT = 0.05  # p95 first tokens within 5 % of each other: the policies barely differ


def _seconds(value: float | None, has_tokens: bool) -> str:
    return seconds_cell(value, "not measured" if has_tokens else NO_TOKEN)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def gpu_name(key: str) -> str:
    return GPUS[key].name if key in GPUS else key


def deployment(scenario: Scenario) -> str:
    """How many engines or workers, at which TP, on how many of which GPU: '2 engines × TP 1 on 2 × H100 SXM
    80GB', '1 prefill + 1 decode worker × TP 4 (DP attention 4) on 8 × …'."""
    gpus, tp, gpu = num_gpus(scenario), scenario.hardware.tp_size, gpu_name(scenario.hardware.gpu)
    if scenario.pd is None:
        k = scenario.engine.dp_size
        return f"{'one engine' if k == 1 else _plural(k, 'engine')} × TP {tp} on {gpus} × {gpu}"
    roles = []
    for name in ("prefill", "decode"):
        role = getattr(scenario.pd, name)
        dp = f" (DP attention {role.dp_size})" if role.dp_size > 1 else ""
        on = f" on {gpu_name(role.gpu)}" if role.gpu and role.gpu != scenario.hardware.gpu else ""
        roles.append(f"{role.num_workers} {name} × TP {role.tp_size or tp}{dp}{on}")
    return f"{' + '.join(roles)} on {gpus} × {gpu}"


def what_runs(scenario: Scenario, run: RunFrames | None) -> str:
    """The model, its precision and the KV pools as the run resolved them, per rank and per worker (a PD
    decode worker's pool is its DP ranks' pools together); without a run (it cannot run), the deployment."""
    m = scenario.model
    name = MODELS[m.name].name if m.name in MODELS else m.name
    head = f"{name} ({m.weight_dtype} weights, {m.kv_dtype} KV), {deployment(scenario)}"
    if run is None:
        return f"{head}: cannot run (above)"
    if scenario.pd is None:
        pool, k = run.summary.config["resolved"]["max_total_tokens"], scenario.engine.dp_size
        return f"{head}. KV pool {pool:,} tokens per engine" + (f", {pool * k:,} in all" if k > 1 else "")
    pools = []
    for name in ("prefill", "decode"):
        role, rank = getattr(scenario.pd, name), run.summary.pd.roles[name]["max_total_tokens"]
        per = (f"{rank:,} tokens per DP rank × {role.dp_size} ranks = {rank * role.dp_size:,} per worker"
               if role.dp_size > 1 else f"{rank:,} tokens per worker")
        pools.append(f"{name} KV {per}" + (f", {rank * role.dp_size * role.num_workers:,} in all"
                                           if role.num_workers > 1 else ""))
    said = "; ".join(pools)
    return f"{head}. {said[:1].upper()}{said[1:]}"


def policy_table(arms: dict[str, tuple[Scenario, RunFrames]]) -> pd.DataFrame:
    """First token, gaps and output per prompt-length bucket, one block of rows per deployment, each with
    its GPU count."""
    rows = []
    for arm, (scenario, run) in arms.items():
        for bucket, m in run.summary.metrics.buckets.items():
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
                        | {f"{SPAN_LABELS[p]} (mean)": _mean(phases.get(p, 0.0)) for p in PHASE_ORDER})
    return pd.DataFrame(rows)


def tradeoff(early: RunFrames, late: RunFrames) -> list[dict]:
    """The four figures the maintainers measured, early -> prefill_complete (the benchmark client's requests
    where the preset has one, as bench_serving reports; else every request)."""
    return [{"label": t.figure.label + (", tokens/s" if t.figure.stat is None else ""), "key": t.figure.key,
             "early": t.early, "prefill_complete": t.prefill_complete,
             "better": "higher" if t.figure.stat is None else "lower",
             "unit": "tok/s" if t.figure.stat is None else "s"}
            for t in policy_trade(early.summary, late.summary)]


def upstream_table(trades: list[Trade]) -> pd.DataFrame:
    """The model's change beside the maintainers', figure by figure."""
    return pd.DataFrame([{"figure": t.figure.label, "this model": t.words[0], "upstream": t.words[1],
                          "within 2× of upstream": "yes" if t.matches else "no"} for t in trades])


def little_difference(early: RunFrames, late: RunFrames, group: str, who: str = "") -> str | None:
    """Why the two policies barely differ on this preset, from where `group`'s time went (`who`: the group
    in words, by default "the <group>"); None when the p95 first tokens differ by more than SAME_TTFT."""
    a, b = (r.summary.metrics.value(None, "ttft_s", "p95") for r in (early, late))
    if a is None or b is None or abs(b - a) > SAME_TTFT * max(a, b):
        return None
    pe, pl = early.summary.pd.phase_s.get(group, {}), late.summary.pd.phase_s.get(group, {})
    wait_e = pe.get("waiting", 0.0) + pe.get("waiting_for_decode_kv", 0.0)
    wait_l = pl.get("waiting", 0.0) + pl.get("waiting_for_decode_kv", 0.0)
    return (f"Here the two policies barely differ (p95 first token {fmt_seconds(a)} and {fmt_seconds(b)}): "
            f"prefill is the bottleneck, so the policy moves where {who or 'the ' + group} wait, not how "
            f"long. On average they wait {fmt_seconds(wait_e)} under early "
            f"({fmt_seconds(pe.get('waiting_for_decode_kv', 0.0))} of it for decode KV) and "
            f"{fmt_seconds(wait_l)} under prefill_complete (at prefill). The upstream replica, whose decode "
            "KV is capped, shows the trade-off.")
