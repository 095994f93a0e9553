"""A run's summary as one typed record: resolved config, metrics by group and bucket, iteration counts.

`summary(result)` returns a `Summary`; the CLI's `--json` is `Summary.to_json()`, whose keys are the
documented contract: `config`, `metrics.overall|groups.<g>|buckets.<label>`, `iterations`
(`num_retractions` ...), `rejected` and, for a PD run, `pd`.
"""

from __future__ import annotations

from collections import Counter

from engine_model.core import PassKind, RequestState
from engine_model.metrics import Metrics, Typed, all_metrics
from engine_model.pd.figures import PDFigures, client_requests, pd_figures
from engine_model.simulation import Result


class IterationCounts(Typed):
    prefill: int
    decode: int
    mixed: int
    idle: int
    total: int
    num_retractions: int
    num_retracted_requests: int
    num_preemptions: int = 0  # committed preempt_to_schedule calls (priority scheduling)
    num_preempted_requests: int = 0  # running requests they released, counted each time


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
    benchmark: Metrics | None = None  # the benchmark client's requests alone (BENCH_CLIENT); None without one

    def to_json(self) -> dict:
        """The CLI's JSON document (no `pd` key for a single engine, no `benchmark` key without a benchmark
        client)."""
        empty = {key for key in ("pd", "benchmark") if getattr(self, key) is None}
        return self.model_dump(mode="json", exclude=empty)

    @property
    def measured(self) -> Metrics:
        """The requests every comparison reports: the benchmark client's where the workload has one (as
        bench_serving reports, without its warm-up), else every request."""
        return self.benchmark or self.metrics

    @property
    def population(self) -> str:
        """Whose numbers `measured` holds, in words."""
        if self.benchmark is None:
            return "every request"
        num = self.benchmark.overall.num_requests
        warm = self.metrics.overall.num_requests - num
        return f"the {num:,} benchmark requests (without the {warm:,} warm-up)"


def iteration_counts(result: Result) -> IterationCounts:
    counts = Counter(it.kind for it in result.iterations)
    return IterationCounts(
        **{kind.value: counts.get(kind, 0) for kind in PassKind},
        total=len(result.iterations),
        num_retractions=len(result.retractions),
        num_retracted_requests=sum(len(r.rids) for r in result.retractions),
        num_preemptions=len(result.preemptions),
        num_preempted_requests=sum(len(p.rids) for p in result.preemptions),
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


BENCH_CLIENT = "bench"  # the closed-loop pool a benchmark reports on; its warm-up is another pool


def benchmark_metrics(result: Result) -> Metrics | None:
    """metrics.* over the benchmark client's requests alone; None when the workload has no such client."""
    members = client_requests(result).get(BENCH_CLIENT)
    return all_metrics(members, result.scenario.metrics.bucket_edges) if members else None


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
        benchmark=benchmark_metrics(result),
    )
