"""'Simulate this server': a scenario from a parsed log's settings and its observed request pattern."""

from __future__ import annotations

from engine_model.config import EngineConfig, RequestConfig, Scenario, WorkloadConfig
from engine_model.logs.diagnose import scenario_hints
from engine_model.logs.parse import ParsedLog

ASSUMED_OUTPUT_LEN = 256  # logs do not say how long replies were (assumption; editable)
ENGINE_KEYS = set(EngineConfig.model_fields)
MODELLED_POLICIES = ("fcfs", "lof", "random")


def scenario_from_log(parsed: ParsedLog, base: Scenario, *, output_len: int = ASSUMED_OUTPUT_LEN,
                      max_requests: int = 2000) -> tuple[Scenario, list[str]]:
    """The base scenario's GPU and model, with the log's engine settings and its observed requests.

    Returns the scenario and notes on what was estimated, so the page can say where numbers came from.
    """
    hints = scenario_hints(parsed)
    observed = hints.pop("observed_requests")[:max_requests]
    engine = {k: v for k, v in hints.items() if k in ENGINE_KEYS}
    notes = [f"engine settings from the log: {', '.join(f'{k}={v}' for k, v in engine.items()) or 'none found'}"]
    policy = engine.get("schedule_policy")
    if policy is not None and policy not in MODELLED_POLICIES:
        del engine["schedule_policy"]
        notes.append(f"schedule_policy {policy!r} runs as fcfs: the model has no radix cache, and SGLang falls back "
                     "to fcfs without one too")
    requests = [RequestConfig(rid=f"log-{i:04d}", group="observed", arrival_at=at, prompt_len=max(1, round(prompt)),
                              output_len=output_len) for i, (at, prompt) in enumerate(observed)]
    notes.append(f"{len(requests)} requests estimated from Prefill lines (arrival = the line's time, to the second); "
                 f"each reply assumed {output_len} tokens")
    if not requests:
        notes.append("no Prefill lines with new requests: nothing to simulate")
    scenario = base.model_copy(update={
        "name": "your_server",
        "engine": base.engine.model_copy(update=engine),
        "workload": WorkloadConfig(requests=requests),
    })
    return Scenario.model_validate(scenario.model_dump()), notes
