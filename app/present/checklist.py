"""Before you enable prefill_complete: the engine's checklist (engine_model.checklist) in words, one row per
check. The one renderer: the ten o'clock page, Your server and the PD figure all show these rows."""

from __future__ import annotations

import pandas as pd

from app.charts.words import bucket_words
from app.present.fmt import fmt_change, fmt_seconds, fmt_share, fmt_token_s
from engine_model import Check, mix_of, scenario_checklist

HEAD = ["check", "reads", "behind it"]
MARKS = {"pass": "✓ pass", "fail": "✗ fail", "unknown": "? unknown"}
QUESTIONS = {
    "mix": "(a) Long prompts carry much of the work",
    "waits": "(b) prefill_complete lowers a first token without raising the gaps, per prompt length",
    "headroom": "(c) Decode KV is scarce under early (the case the policy targets)",
    "version": "(d1) Every worker on a release with prefill_complete, upgraded with early in place first",
    "backend": "(d2) Transfer backend Mooncake (its TCP mode included)",
    "registry": "(d3) The Python bootstrap registry, not the Rust server's",
    "attention": "(d4) Attention TP, CP and PP of one per rank",
    "decode_cache": "(d5) No decode radix cache, no decode HiCache",
    "staging": "(d6) No staging buffers",
    "kv_pool": "(d7) A full-attention or DSA KV pool (no hybrid SWA or Mamba state)",
    "same_policy": "(d8) Both roles on the same policy",
    "today": "(e) Compared with today: PD is no worse than your engine on the same GPUs, on either wait, "
             "for any prompt length",
}
NAMES = {  # a setting as the person would look for it
    "version": "SGLang version", "backend": "--disaggregation-transfer-backend",
    "rust_registry": "SGLANG_RUST_SERVER", "prefill_attn_tp": "prefill attention TP",
    "decode_attn_tp": "decode attention TP", "prefill_attn_dp": "prefill attention DP",
    "decode_attn_dp": "decode attention DP", "cp_size": "attention CP", "dcp_size": "decode CP",
    "pp_size": "PP",
    "decode_radix_cache": "decode radix cache", "decode_hicache": "decode HiCache",
    "staging_buffer": "SGLANG_DISAGG_STAGING_BUFFER", "kv_pool": "KV pool",
    "prefill_policy": "prefill's policy", "decode_policy": "decode's policy",
}
SOURCES = {"default": "SGLang's default, which this case keeps", "log": "from the log", "set": ""}


def _value(name: str, value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if name == "kv_pool":
        return {"full": "full attention", "dsa": "DeepSeek sparse attention (DSA)"}.get(value, str(value))
    if name == "backend" and value == "mooncake_tcp":
        return "mooncake_tcp (Mooncake over TCP)"
    return str(value)


def _settings(check: Check) -> str:
    """The settings behind a constraint, grouped by where each comes from; then what is not known."""
    by_source: dict[str, list[str]] = {}
    for name, (value, source) in check.facts["settings"].items():
        by_source.setdefault(source, []).append(f"{NAMES[name]} {_value(name, value)}")
    said = [", ".join(names) + (f" ({SOURCES[source]})" if SOURCES.get(source) else "")
            for source, names in by_source.items()]
    if "needs" in check.facts:
        said.append(f"needs {check.facts['needs']} or later; switch both roles once the last worker runs it")
    missing = [NAMES[name] for name in check.facts["missing"]]
    if missing:
        said.append("not known: " + ", ".join(missing))
    words = "; ".join(said)
    if "refusal" in check.facts:  # the same message the run was refused with
        words += f". {check.facts['refusal']}"
    if "published" in check.facts:
        words += (". The rule holds through attention DP (upstream's test ran TP 4 with attention DP 4), but "
                  f"{check.facts['published']}: check that your build starts with it")
    return words


def _mix(f: dict) -> str:
    return (f"{f['num_long']:,} of {f['num_requests']:,} requests ({fmt_share(f['long_share'])}) carry "
            f"{fmt_share(f['long_token_share'])} of the prompt tokens (prompts of {f['long_threshold']:,} "
            f"tokens or more); passes from {fmt_share(f['at_least'])} (our threshold)")


def _pair(values: tuple, fmt) -> str:
    before, after = values
    change = fmt_change(None if not before or after is None else after / before - 1)
    return f"{fmt(before)} → {fmt(after)} ({change})"


def _waits(f: dict) -> str:
    parts = [f"{bucket_words(label)} ({b['num_requests']:,}): first token p95 "
             f"{_pair(b['ttft_p95'], fmt_seconds)}, gap p99 {_pair(b['itl_p99'], fmt_seconds)}"
             for label, b in f["buckets"].items()]
    if "best_ttft_change" in f:
        parts.append(f"passes when a bucket's first token falls {fmt_share(f['ttft_gain'])} or more and no "
                     f"gap rises over {fmt_share(f['itl_loss'])} (our thresholds); upstream's p99 gap rose "
                     f"{fmt_change(f['upstream_itl_change'])}, which this model does not reproduce: measure "
                     "the gaps on your server")
    return "; ".join(parts)


def _headroom(f: dict) -> str:
    workers = f["num_decode_workers"]
    return (f"decode KV reserved but idle {fmt_token_s(f['reserved_idle_token_s'])} token·s, "
            f"{fmt_share(f['reserved_idle_share'])} of {f['decode_pool_tokens']:,} tokens of decode pool "
            f"({workers} decode worker{'s' if workers > 1 else ''}) over the run; over every request, the "
            f"mean wait for decode KV was {fmt_seconds(f['wait_for_kv_s'])}, beside a mean first token of "
            f"{fmt_seconds(f['ttft_mean_s'])}; passes from {fmt_share(f['at_least'])} of it (our threshold)")


def _today(f: dict) -> str:
    parts = [f"{bucket_words(label)} ({b['num_requests']:,}): first token p95 "
             f"{fmt_seconds(b['ttft_p95'][1])} vs {fmt_seconds(b['ttft_p95'][0])} today, longest pause "
             f"{fmt_seconds(b['longest_gap'][1])} vs {fmt_seconds(b['longest_gap'][0])}"
             for label, b in f["buckets"].items()]
    return (f"PD under {f['policy']}: " + "; ".join(parts)
            + "; within 5 % reads as the same (our threshold)")


UNKNOWN = {"mix": "no requests to read", "waits": "not run under both policies",
           "headroom": "not run under early", "today": "PD or today's engine not run on these requests"}


def behind(check: Check) -> str:
    """The number or setting behind one check, in words."""
    if check.part == "d":
        return _settings(check)
    if not check.facts:
        return UNKNOWN[check.key]
    return {"mix": _mix, "waits": _waits, "headroom": _headroom, "today": _today}[check.key](check.facts)


def rows(checks: list[Check]) -> list[list[str]]:
    return [[QUESTIONS[c.key], MARKS[c.status], behind(c)] for c in checks]


def table(checks: list[Check]) -> dict:
    """The checklist as a figure's table (app.present.page)."""
    return {"head": HEAD, "rows": rows(checks), "bold": 1}


def frame(checks: list[Check]) -> pd.DataFrame:
    """The checklist as the page's table: the same rows."""
    return pd.DataFrame(rows(checks), columns=HEAD)


def requests_mix(run, long_threshold: int):
    """The mix of a run's requests (its per-request frame), or None when it has none."""
    frame = run.requests
    if frame.empty:
        return None
    return mix_of(frame["prompt_len"], frame["output_len"], frame["arrival_at"], long_threshold)


def of_runs(pd_scenario, early, late, same=None, today=None) -> list[Check]:
    """The checklist of a PD case: the mix of its requests (long from the top prompt-length bucket's edge,
    the buckets (b) and (e) read), both policies' runs (None where a policy could not run; `same`: another
    run of the same requests, for the mix when neither ran), the scenario's settings, SGLang's refusal of
    its attention TP, and today's engine(s) on the same GPUs (`today`, for (e))."""
    any_run = next((run for run in (early, late, same, today) if run is not None), None)
    mix = requests_mix(any_run, pd_scenario.metrics.bucket_edges[-1]) if any_run is not None else None
    return scenario_checklist(pd_scenario, mix, early and early.summary, late and late.summary,
                              today and today.summary)
