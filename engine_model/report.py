"""The JSON summary of a run: resolved config, metrics by group and bucket, iteration counts."""

from __future__ import annotations

from collections import Counter

from engine_model.core import PassKind
from engine_model.metrics import all_metrics
from engine_model.pd.figures import pd_figures
from engine_model.simulation import Result


def iteration_counts(result: Result) -> dict:
    counts = Counter(it.kind for it in result.iterations)
    out = {kind.value: counts.get(kind, 0) for kind in PassKind}
    out["total"] = len(result.iterations)
    out["num_retractions"] = len(result.retractions)
    out["num_retracted_requests"] = sum(len(r.rids) for r in result.retractions)
    return out


def resolved_config(result: Result) -> dict:
    """The scenario as given, with engine values replaced by what SGLang's defaults resolve them to."""
    config = result.scenario.model_dump(mode="json")
    res = result.resolved
    config["engine"].update(
        chunked_prefill_size=res.chunked_prefill_size,
        max_total_tokens=res.max_total_tokens,
        max_running_requests=res.max_running_requests,
        context_length=res.context_len,
    )
    config["resolved"] = res.to_dict()
    return config


def summary(result: Result) -> dict:
    doc = {
        "scenario": result.scenario.name,
        "config": resolved_config(result),
        "cost_model": result.cost_model,
        "metrics": all_metrics(result.requests, result.scenario.metrics.bucket_edges),
        "iterations": iteration_counts(result),
        "end_at": result.end_at,
        "cut_off": result.cut_off,
        "rejected": {r.rid: r.reject_reason for r in result.requests if r.reject_reason},
        "wall_s": result.wall_s,
    }
    if result.pd is not None:
        doc["pd"] = pd_figures(result)  # per-role figures; metrics.* keep their single-engine meaning
    return doc
