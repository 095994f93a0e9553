"""Small scenarios for specification tests: explicit requests, the reference tool's linear cost."""

from engine_model.config import CostConfig, EngineConfig, RequestConfig, Scenario, WorkloadConfig
from engine_model.core import PassKind
from engine_model.simulation import Result, simulate


def req(rid, prompt, output, at=0.0, **kw) -> RequestConfig:
    return RequestConfig(rid=rid, prompt_len=prompt, output_len=output, arrival_at=at, **kw)


def scenario(requests, *, pool=200_000, chunk=8192, max_running=64, **engine) -> Scenario:
    """The normal loop by default, as the reference tool runs SGLang (overlap=False:
    `disable_overlap_schedule`)."""
    engine.setdefault("disable_overlap_schedule", True)
    return Scenario(
        engine=EngineConfig(context_length=131072, max_total_tokens=pool, chunked_prefill_size=chunk,
                            max_running_requests=max_running, **engine),
        cost=CostConfig(kind="linear"),
        workload=WorkloadConfig(requests=list(requests)),
    )


def run(requests, **kw) -> Result:
    return simulate(scenario(requests, **kw))


def passes(result: Result) -> list:
    """Each forward pass as (kind, {rid: extend}) with decode rows as extend 1."""
    out = []
    for it in result.iterations:
        if it.kind is PassKind.IDLE:
            continue
        rows = {r.rid: r.extend for r in it.prefill_rows}
        rows.update(dict.fromkeys(it.decode_rids, 1))
        out.append((it.kind.value, rows))
    return out


def prefill_extends(result: Result) -> list[list[tuple[str, int]]]:
    return [[(r.rid, r.extend) for r in it.prefill_rows] for it in result.iterations if it.prefill_rows]


def by_rid(result: Result):
    return {r.rid: r for r in result.requests}


def scheduler(**engine):
    """A bare Scheduler with the linear cost, for tests that set its state by hand."""
    import random

    from engine_model.cost import LinearCost
    from engine_model.resolve import resolve
    from engine_model.scheduler import Scheduler

    return Scheduler(resolve(scenario([], **engine)), LinearCost(), random.Random(0))


def request(rid, prompt, output, **kw):
    from engine_model.core import Request

    return Request(rid=rid, group="g", arrival_at=0.0, prompt_len=prompt, output_len=output,
                   max_new_tokens=kw.pop("max_new_tokens", output), **kw)
