"""A run's summary as one typed record: resolved config, metrics by group and bucket, iteration counts.

`summary(result)` returns a `Summary`; the CLI's `--json` is `Summary.to_json()`, whose keys are the
documented contract: `config`, `metrics.overall|groups.<g>|buckets.<label>`, `iterations`
(`num_retractions` ...), `rejected` and, for a PD run, `pd`.
"""

from __future__ import annotations

from collections import Counter

from engine_model.core import PassKind, RequestState
from engine_model.metrics import Metrics, Typed, all_metrics
from engine_model.pd.figures import PDFigures, pd_figures
from engine_model.simulation import Result


class IterationCounts(Typed):
    prefill: int
    decode: int
    mixed: int
    idle: int
    total: int
    num_retractions: int
    num_retracted_requests: int


class Summary(Typed):
    scenario: str
    config: dict  # the scenario as given, engine values as resolved, plus `resolved`
    cost_model: str
    metrics: Metrics
    iterations: IterationCounts
    end_at: float
    cut_off: str | None
    rejected: dict[str, str]  # rid -> why it was refused or aborted
    unfinished: dict[str, int]  # why a request did not finish -> how many (rejections and the cut-off alike)
    wall_s: float
    pd: PDFigures | None = None  # per-role figures; metrics.* keep their single-engine meaning

    def to_json(self) -> dict:
        """The CLI's JSON document (no `pd` key for a single engine)."""
        return self.model_dump(mode="json", exclude={"pd"} if self.pd is None else set())


def iteration_counts(result: Result) -> IterationCounts:
    counts = Counter(it.kind for it in result.iterations)
    return IterationCounts(
        **{kind.value: counts.get(kind, 0) for kind in PassKind},
        total=len(result.iterations),
        num_retractions=len(result.retractions),
        num_retracted_requests=sum(len(r.rids) for r in result.retractions),
    )


def unfinished(result: Result) -> dict[str, int]:
    """Every request that did not finish, counted by its reason: refused, aborted, or cut off by a limit."""
    reasons = Counter(
        r.reject_reason or (f"cut off: {result.cut_off}" if result.cut_off
                            else "not finished when the run ended")
        for r in result.requests if r.state is not RequestState.FINISHED
    )
    return dict(reasons.most_common())


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


def summary(result: Result) -> Summary:
    return Summary(
        scenario=result.scenario.name,
        config=resolved_config(result),
        cost_model=result.cost_model,
        metrics=all_metrics(result.requests, result.scenario.metrics.bucket_edges),
        iterations=iteration_counts(result),
        end_at=result.end_at,
        cut_off=result.cut_off,
        rejected={r.rid: r.reject_reason for r in result.requests if r.reject_reason},
        unfinished=unfinished(result),
        wall_s=result.wall_s,
        pd=pd_figures(result) if result.pd is not None else None,
    )
