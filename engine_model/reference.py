"""Read and write the formats of the SGLang reference tool (shared/tools/sglang_reference), and compare.

`scenario_from_workload` turns a reference `workload.json` into a scenario with the same linear
predictor; `write_trace` writes our run as `iteration.jsonl` + `request.jsonl`; `compare` measures how
closely two traces agree, pass by pass.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

from engine_model.config import CostConfig, EngineConfig, RequestConfig, Scenario, WorkloadConfig
from engine_model.core import PassKind
from engine_model.errors import InputError
from engine_model.simulation import Result

REFERENCE_CONTEXT_LEN = 131072  # the tool's model/config.json: max_position_embeddings
REFERENCE_POOL = 200000  # the tool's default max_total_tokens
SERVER_ARGS = {
    "chunked_prefill_size", "enable_mixed_chunk", "max_total_tokens", "max_running_requests",
    "max_prefill_tokens", "prefill_decode_interval", "prefill_decode_interval_min_bs", "schedule_policy",
    "page_size",
    "disable_radix_cache", "schedule_conservativeness", "retraction_policy", "prefill_max_requests",
    # bench/sglang_reference/run_priority.py passes these too (issue 42)
    "enable_priority_scheduling", "schedule_low_priority_values_first",
    "priority_scheduling_preemption_threshold", "disable_priority_preemption", "max_queued_requests",
}
NOT_MODELLED: dict[str, tuple] = {}  # every server arg the tool takes is modelled now
MODES = {PassKind.PREFILL: "EXTEND", PassKind.DECODE: "DECODE", PassKind.MIXED: "MIXED"}
TTFT_TOLERANCE = 0.02
ITL_TOLERANCE = 0.02
PASS_AGREEMENT = 0.95


def load_json(path: Path, what: str) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise InputError(str(path), f"{what} not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(str(path), f"not valid JSON ({err})") from None


def scenario_from_workload(path: Path) -> Scenario:
    data = load_json(path, "workload file")
    if not isinstance(data, dict) or not isinstance(data.get("requests"), list):
        raise InputError(str(path), "needs an object with a 'requests' list")
    args = dict(data.get("server_args") or {})
    unknown = sorted(set(args) - SERVER_ARGS)
    if unknown:
        raise InputError(f"{path}: server_args.{unknown[0]}",
                         f"not accepted; allowed: {', '.join(sorted(SERVER_ARGS))}")
    if args.get("disable_radix_cache") and args.get("schedule_policy") == "shortest-prefill-first":
        raise InputError(f"{path}: server_args.schedule_policy", "shortest-prefill-first needs the radix "
                         "cache (SGLang: 'Experimental shortest-prefill-first requires prefix caching')")
    if args.get("disable_radix_cache") and any(isinstance(r, dict) and r.get("ignore_eos")
                                               for r in data["requests"]):
        raise InputError(f"{path}: server_args.disable_radix_cache", "with ignore_eos requests SGLang admits "
                         "through add_one_req_ignore_eos, which is not modelled")
    for key, allowed in NOT_MODELLED.items():
        if key in args and args.pop(key) not in allowed:
            raise InputError(f"{path}: server_args.{key}", f"only {allowed} is modelled")
    args.setdefault("max_total_tokens", REFERENCE_POOL)
    requests = []
    for i, req in enumerate(data["requests"]):
        if not isinstance(req, dict):
            raise InputError(f"{path}: requests[{i}]", "must be an object")
        fields = {k: v for k, v in req.items() if k not in ("arrival_s", "prompt_seed", "group")}
        seed = req.get("prompt_seed")
        requests.append(RequestConfig(arrival_at=req.get("arrival_s", 0.0),
                                      group=req.get("group", "requests"),
                                      prefix_group=None if seed is None else f"seed-{seed}", **fields))
    predictor = data.get("predictor") or {}
    return Scenario(
        name=data.get("name") or Path(path).parent.name,
        description=data.get("description", ""),
        engine=EngineConfig(context_length=REFERENCE_CONTEXT_LEN, disable_overlap_schedule=True, **args),
        cost=CostConfig(kind="linear", **predictor),
        workload=WorkloadConfig(requests=requests),
    )


def write_trace(result: Result, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "iteration.jsonl", "w") as f:
        num = 0
        for it in result.iterations:
            if it.kind is PassKind.IDLE:
                continue
            num += 1
            rows = [{"rid": r.rid, "kind": "prefill", "extend": r.extend, "past_kv": r.past_kv}
                    for r in it.prefill_rows]
            rows += [{"rid": rid, "kind": "decode", "extend": 1} for rid in it.decode_rids]
            f.write(json.dumps({
                "iter": num, "t_start": it.start_at, "t_end": it.end_at, "forward_mode": MODES[it.kind],
                "latency": it.duration_s, "new_tokens": it.num_new_tokens, "past_kv_sum": it.past_kv_sum,
                "new_token_ratio": it.new_token_ratio, "waiting": it.num_waiting,
                "kv_free": it.kv_capacity - it.kv_used, "rows": rows,
            }) + "\n")
    with open(out / "request.jsonl", "w") as f:
        for r in result.requests:
            f.write(json.dumps({
                "rid": r.rid, "arrival_s": r.arrival_at, "prompt_len": r.prompt_len,
                "output_len": r.output_len,
                "return_logprob": r.return_logprob, "first_scheduled_s": r.first_scheduled_at,
                "first_token_s": r.token_times[0] if r.token_times else None, "finish_s": r.finished_at,
                "finish_reason": r.state.value, "num_retractions": r.num_retractions,
                "token_times": r.token_times,
            }) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    """A JSON Lines file, or its gzipped copy (`name.jsonl.gz`) when only that exists."""
    path, rows = Path(path), []
    gz = path.with_name(path.name + ".gz")
    opener = gzip.open if not path.exists() and gz.exists() else open
    path = gz if opener is gzip.open else path
    try:
        with opener(path, "rt") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as err:
                        raise InputError(f"{path}:{n}", f"not valid JSON ({err})") from None
    except FileNotFoundError:
        raise InputError(str(path), "not found; expected iteration.jsonl and request.jsonl") from None
    return rows


def pass_key(it: dict) -> tuple:
    """A pass's kind and every request's extend length in it."""
    try:
        return it["forward_mode"], tuple(sorted(Counter((r["rid"], r["extend"]) for r in it["rows"]).items()))
    except (KeyError, TypeError) as err:
        raise InputError(f"iteration {it.get('iter', '?')}", f"missing field {err}") from None


def relative_error(ours: float | None, ref: float | None) -> float:
    if ours is None or ref is None:
        return 0.0 if ours == ref else float("inf")
    return abs(ours - ref) / abs(ref) if ref else abs(ours - ref)


def max_gap(times: list[float]) -> float | None:
    return max((b - a for a, b in zip(times, times[1:], strict=False)), default=None)


def compare(ref_dir: Path, our_dir: Path) -> dict:
    ref_its, our_its = (read_jsonl(Path(ref_dir) / "iteration.jsonl"),
                        read_jsonl(Path(our_dir) / "iteration.jsonl"))
    matching = sum(pass_key(a) == pass_key(b) for a, b in zip(ref_its, our_its, strict=False))
    num_passes = max(len(ref_its), len(our_its), 1)
    ref_reqs = {r["rid"]: r for r in read_jsonl(Path(ref_dir) / "request.jsonl")}
    our_reqs = {r["rid"]: r for r in read_jsonl(Path(our_dir) / "request.jsonl")}
    ttft_err, itl_err = {}, {}
    for rid, ref in ref_reqs.items():
        ours = our_reqs.get(rid, {})
        ref_times, our_times = ref.get("token_times") or [], ours.get("token_times") or []
        ref_ttft = ref_times[0] - ref["arrival_s"] if ref_times else None
        our_ttft = our_times[0] - ours["arrival_s"] if our_times else None
        ttft_err[rid] = relative_error(our_ttft, ref_ttft)
        itl_err[rid] = relative_error(max_gap(our_times), max_gap(ref_times))
    worst_ttft = max(ttft_err, key=ttft_err.get) if ttft_err else None
    worst_itl = max(itl_err, key=itl_err.get) if itl_err else None
    report = {
        "num_passes_ref": len(ref_its), "num_passes_ours": len(our_its),
        "pass_agreement": matching / num_passes,
        "first_mismatch": next((i + 1 for i, (a, b) in enumerate(zip(ref_its, our_its, strict=False))
                                if pass_key(a) != pass_key(b)), None),
        "worst_ttft_error": ttft_err.get(worst_ttft, 0.0), "worst_ttft_rid": worst_ttft,
        "worst_max_itl_error": itl_err.get(worst_itl, 0.0), "worst_max_itl_rid": worst_itl,
    }
    report["ok"] = (report["pass_agreement"] >= PASS_AGREEMENT
                    and report["worst_ttft_error"] <= TTFT_TOLERANCE
                    and report["worst_max_itl_error"] <= ITL_TOLERANCE)
    return report
