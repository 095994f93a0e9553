"""Before you enable prefill_complete: the four checks of seed 000, evaluated on one case.

  (a) mix       do long prompts carry the tokens? share of requests and of prompt tokens at or above the
                long threshold (the first prompt-length bucket edge)
  (b) waits     first token (p95) and gap between tokens (p99) per prompt-length bucket, early vs
                prefill_complete: does the change lower a first token without raising a gap?
  (c) headroom  under early: decode KV reserved but idle, and the mean wait for decode KV; with headroom the
                change has little to fix
  (d) the feature's constraints, one check each, against the deployment's settings: every worker on a
                release that has it (upgrade all with early in place, then switch), Mooncake (TCP mode
                included), the Python bootstrap registry, attention TP/CP/PP of one per rank, no decode
                radix cache or decode HiCache, no staging buffers, a full-attention or DSA KV pool, both
                roles on one policy; numbered d1-d8 in that order
  (e) today     PD (prefill_complete where it can start, else early) against today's engine(s) on the same
                GPUs: the two waits per prompt-length bucket (engine_model.pd.verdict); ours, not seed 000's

Each check reads pass, fail or unknown with the facts behind it (numbers and settings, never words: the app
words them, app/present/checklist.py). The constraints are those `_validate_prefill_complete`
(arg_groups/pd_disaggregation_hook.py), the bootstrap handshake and the KV manager's pool check
(disaggregation/common/conn.py) enforce in SGLang 0.5.23. The thresholds of (a)-(c) are ours: assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from engine_model.config import Scenario
from engine_model.hardware import model as model_preset
from engine_model.pd import attention
from engine_model.pd.trade import FIGURES
from engine_model.pd.verdict import verdict
from engine_model.traces import Mix
from engine_model.versions import capabilities, first_release

FIRST_RELEASE = first_release("has_prefill_complete")  # 0.5.22
Status = Literal["pass", "fail", "unknown"]
LONG_TOKEN_SHARE = 0.25  # (a) passes when long prompts carry at least this share of the prompt tokens
TTFT_GAIN = 0.05  # (b) a bucket's p95 first token must fall by at least this share ...
ITL_LOSS = 0.10  # ... and no bucket's p99 gap may rise by more than this share
KV_WAIT_SHARE = 0.10  # (c) decode KV is scarce when its wait is at least this share of the mean first token
MOONCAKE = ("mooncake", "mooncake_tcp")
UPSTREAM_ITL = next(f.upstream for f in FIGURES if f.key == "itl")  # seed 000: p99 gap +93 %
DEFAULT = "default"  # a setting's source: SGLang's default, which the case keeps
SET = "set"  # the case sets it
LOG = "log"  # the server's log says so


@dataclass(frozen=True)
class Check:
    key: str
    part: str  # "a", "b", "c" or "d"
    status: Status
    facts: dict = field(default_factory=dict)


def mix_check(mix: Mix | None) -> Check:
    """(a): long prompts carry at least LONG_TOKEN_SHARE of the prompt tokens."""
    if mix is None:
        return Check("mix", "a", "unknown")
    facts = {"num_requests": mix.num_requests, "num_long": mix.num_long, "long_share": mix.long_share,
             "long_token_share": mix.long_token_share, "long_threshold": mix.long_threshold,
             "at_least": LONG_TOKEN_SHARE}
    return Check("mix", "a", "pass" if mix.long_token_share >= LONG_TOKEN_SHARE else "fail", facts)


def change(before: float | None, after: float | None) -> float | None:
    return None if not before or after is None else after / before - 1


def waits_check(early, late) -> Check:
    """(b): per bucket, p95 first token and p99 gap under both policies (run summaries)."""
    if early is None or late is None:
        return Check("waits", "b", "unknown")
    buckets = {}
    for label, e in early.measured.buckets.items():  # the benchmark's requests where there is one
        lt = late.measured.buckets.get(label)
        if lt is None:
            continue
        buckets[label] = {"num_requests": e.num_requests,
                          "ttft_p95": (e.ttft_s.p95, lt.ttft_s.p95), "itl_p99": (e.itl_s.p99, lt.itl_s.p99)}
    ttft = [c for b in buckets.values() if (c := change(*b["ttft_p95"])) is not None]
    itl = [c for b in buckets.values() if (c := change(*b["itl_p99"])) is not None]
    if not ttft:
        return Check("waits", "b", "unknown", {"buckets": buckets})
    facts = {"buckets": buckets, "best_ttft_change": min(ttft), "worst_itl_change": max(itl, default=None),
             "ttft_gain": TTFT_GAIN, "itl_loss": ITL_LOSS, "upstream_itl_change": UPSTREAM_ITL}
    good = min(ttft) <= -TTFT_GAIN and all(c <= ITL_LOSS for c in itl)
    return Check("waits", "b", "pass" if good else "fail", facts)


def headroom_check(early) -> Check:
    """(c): under early, decode KV reserved but idle (share of the decode pools over the run) and the mean
    wait for decode KV beside the mean first token. Passes (the change has something to fix) when that
    wait is at least KV_WAIT_SHARE of the mean first token."""
    if early is None or early.pd is None:
        return Check("headroom", "c", "unknown")
    pd, metrics = early.pd, early.metrics
    decode = [w for name, w in pd.workers.items() if name.startswith("decode")]
    pool_token_s = sum(w.kv_capacity for w in decode) * early.end_at
    num = sum(m.num_requests for m in metrics.groups.values())
    wait = sum(pd.phase_s.get(g, {}).get("waiting_for_decode_kv", 0.0) * m.num_requests
               for g, m in metrics.groups.items()) / max(num, 1)
    ttft = metrics.overall.ttft_s.mean
    facts = {"reserved_idle_token_s": pd.kv_reserved_idle_token_s,
             "reserved_idle_share": pd.kv_reserved_idle_token_s / pool_token_s if pool_token_s else None,
             "decode_pool_tokens": sum(w.kv_capacity for w in decode), "num_decode_workers": len(decode),
             "max_reserved": max((w.max_kv_reserved for w in decode), default=0),
             "wait_for_kv_s": wait, "ttft_mean_s": ttft, "at_least": KV_WAIT_SHARE}
    if not ttft:
        return Check("headroom", "c", "unknown", facts)
    return Check("headroom", "c", "pass" if wait >= KV_WAIT_SHARE * ttft else "fail", facts)


# ---- (d) the constraints ---------------------------------------------------------------------------------
# A deployment's settings: key -> (value, source). A key that is missing is unknown.
Settings = dict[str, tuple[object, str]]


def settings_of(scenario: Scenario) -> Settings:
    """A PD scenario's settings. What the model cannot turn on (decode radix cache, HiCache, staging
    buffers, the Rust registry, context or pipeline parallelism) is SGLang's default, which it keeps."""
    pd = scenario.pd
    out: Settings = {"version": (scenario.engine.version, SET), "backend": (pd.transfer_backend, SET),
                     "kv_pool": ("dsa" if model_preset(scenario.model.name).is_dsa else "full", SET),
                     "cp_size": (1, DEFAULT), "dcp_size": (1, DEFAULT), "pp_size": (1, DEFAULT),
                     "decode_radix_cache": (False, DEFAULT), "decode_hicache": (False, DEFAULT),
                     "staging_buffer": (False, DEFAULT), "rust_registry": (False, DEFAULT)}
    for role in ("prefill", "decode"):
        cfg = getattr(pd, role)
        tp = cfg.tp_size or scenario.hardware.tp_size
        out[f"{role}_policy"] = (pd.policy(role), SET)
        out[f"{role}_attn_tp"] = (tp // cfg.dp_size, SET)
        out[f"{role}_attn_dp"] = (cfg.dp_size, SET)
    return out


def settings_of_log(args: dict, version: str | None = None) -> Settings:
    """One server's settings from its log's server_args: its own role only; environment variables
    (staging buffers, the Rust registry) are not in a log."""
    def arg(name):
        return (args[name], LOG) if name in args else None

    role = args.get("disaggregation_mode")
    out = {key: found for key, name in (("backend", "disaggregation_transfer_backend"),
                                        ("cp_size", "attn_cp_size"), ("dcp_size", "dcp_size"),
                                        ("pp_size", "pp_size"))
           if (found := arg(name)) is not None}
    if version:
        out["version"] = (version, LOG)
    if role in ("prefill", "decode"):
        if "disaggregation_decode_allocation_policy" in args:
            out[f"{role}_policy"] = arg("disaggregation_decode_allocation_policy")
        tp, dp = args.get("tp_size"), attention_dp_of(args)
        if isinstance(tp, int) and isinstance(dp, int) and dp > 0:
            out[f"{role}_attn_tp"] = (tp // dp, LOG)
            out[f"{role}_attn_dp"] = (dp, LOG)
    if role == "decode":
        for key, name in (("decode_radix_cache", "disaggregation_decode_enable_radix_cache"),
                          ("decode_hicache", "enable_hierarchical_cache")):
            if (found := arg(name)) is not None:
                out[key] = found
    return out


def attention_dp_of(args: dict):
    """A log's attention DP size: --attn-dp-size (0.5.22+), or its deprecated spelling --dp-size N
    --enable-dp-attention; 1 without either."""
    if isinstance(args.get("attn_dp_size"), int) and args["attn_dp_size"] > 1:
        return args["attn_dp_size"]
    return args.get("dp_size", 1) if args.get("enable_dp_attention") else 1


def _off(value) -> bool:
    return not value


def _one(value) -> bool:
    return value == 1


def _any(value) -> bool:
    return True


CONSTRAINTS = {  # check -> {setting: what it must be}
    "version": {"version": lambda v: capabilities(v).has_prefill_complete},
    "backend": {"backend": lambda b: b in MOONCAKE},
    "registry": {"rust_registry": _off},
    "attention": {"prefill_attn_tp": _one, "decode_attn_tp": _one, "prefill_attn_dp": _any,
                  "decode_attn_dp": _any, "cp_size": _one, "dcp_size": _one, "pp_size": _one},
    "decode_cache": {"decode_radix_cache": _off, "decode_hicache": _off},
    "staging": {"staging_buffer": _off},
    "kv_pool": {"kv_pool": lambda kind: kind in ("full", "dsa")},
}


def constraint(key: str, settings: Settings) -> Check:
    """Fails when a known setting breaks the rule, passes when every one is known and keeps it."""
    rules = CONSTRAINTS[key]
    known = {name: settings[name] for name in rules if name in settings}
    facts = {"settings": known, "missing": [name for name in rules if name not in known]}
    if key == "version":
        facts["needs"] = FIRST_RELEASE
    if any(not rules[name](value) for name, (value, _) in known.items()):
        return Check(key, "d", "fail", facts)
    return Check(key, "d", "unknown" if facts["missing"] else "pass", facts)


def attention_check(settings: Settings, refusal: str | None = None, model: str | None = None) -> Check:
    """Attention TP of one per rank. Failing, it carries SGLang's refusal (`refusal`: the one the run raised,
    with its fix; else worded from the settings). Reached through attention DP, it is unknown: the rule
    holds, but 0.5.22 and 0.5.23 refuse it as published (engine_model.pd.attention)."""
    check = constraint("attention", settings)
    facts = check.facts
    if check.status == "fail":
        role = next((r for r in attention.ROLES if not _one(settings.get(f"{r}_attn_tp", (1,))[0])), None)
        if refusal is None and role is not None:
            dp = settings.get(f"{role}_attn_dp", (1,))[0]
            refusal = attention.words(role, settings[f"{role}_attn_tp"][0] * dp, dp, model=model)
        return Check("attention", "d", "fail", facts | ({"refusal": refusal} if refusal else {}))
    dps = [settings[f"{r}_attn_dp"][0] for r in attention.ROLES if f"{r}_attn_dp" in settings]
    if any(dp > 1 for dp in dps) and not attention.PUBLISHED_SEES_ATTENTION_DP:
        return Check("attention", "d", "unknown", facts | {"published": attention.published_words(model)})
    return check


def same_policy(settings: Settings) -> Check:
    """Both roles on one policy (the bootstrap handshake rejects a mismatch)."""
    known = {name: settings[name] for name in ("prefill_policy", "decode_policy") if name in settings}
    facts = {"settings": known, "missing": [n for n in ("prefill_policy", "decode_policy") if n not in known]}
    if facts["missing"]:
        return Check("same_policy", "d", "unknown", facts)
    return Check("same_policy", "d", "pass" if len({v for v, _ in known.values()}) == 1 else "fail", facts)


def constraint_checks(settings: Settings, refusal: str | None = None,
                      model: str | None = None) -> list[Check]:
    return [*(attention_check(settings, refusal, model) if key == "attention" else constraint(key, settings)
              for key in CONSTRAINTS), same_policy(settings)]


def today_check(today, early=None, late=None) -> Check:
    """(e): PD under prefill_complete (under early when prefill_complete did not run) against today's
    engine(s) on the same GPUs (run summaries of the same requests). Passes when no prompt-length bucket's
    p95 first token or longest pause is worse than today's (engine_model.pd.verdict: within 5 % is the
    same); unknown without both runs."""
    pd, policy = (late, "prefill_complete") if late is not None else (early, "early")
    if today is None or pd is None:
        return Check("today", "e", "unknown")
    found = verdict(policy, today, pd)
    buckets = {b.label: {"num_requests": (b.pd or b.today).num_requests,
                         "ttft_p95": (b.today and b.today.ttft_p95, b.pd and b.pd.ttft_p95),
                         "longest_gap": (b.today and b.today.longest_gap, b.pd and b.pd.longest_gap),
                         "first_token": b.first_token, "pause": b.pause}
               for b in found.buckets}
    facts = {"policy": policy, "buckets": buckets, "throughput": found.throughput}
    sides = [side for b in buckets.values() for side in (b["first_token"], b["pause"])]
    if not sides or all(side == "unknown" for side in sides):
        return Check("today", "e", "unknown", facts)
    return Check("today", "e", "fail" if "worse" in sides else "pass", facts)


def checklist(mix: Mix | None, early=None, late=None, settings: Settings | None = None,
              refusal: str | None = None, model: str | None = None, today=None) -> list[Check]:
    """Every check, (a) to (e). `early`, `late`: summaries of PD runs under each policy (None: not run);
    `refusal`: SGLang's refusal of the attention TP, with its fix (`engine_model.pd.attention.refusal`);
    `model`: the model's preset key, where known; `today`: the summary of today's engine(s) on the same
    GPUs and requests (None: not run)."""
    return [mix_check(mix), waits_check(early, late), headroom_check(early),
            *constraint_checks(settings or {}, refusal, model), today_check(today, early, late)]


def of_scenario(scenario: Scenario, mix: Mix | None, early=None, late=None, today=None) -> list[Check]:
    """The checklist of a PD scenario: its settings, and its attention refusal with the fix."""
    refused = attention.refusal(scenario)
    return checklist(mix, early, late, settings_of(scenario), refused and refused.problem,
                     scenario.model.name, today)

