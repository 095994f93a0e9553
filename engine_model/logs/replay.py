"""'Simulate this server': a scenario from a parsed log's settings and its observed request pattern."""

from __future__ import annotations

from engine_model.config import EngineConfig, Scenario
from engine_model.errors import InputError
from engine_model.logs.observed import scenario_hints
from engine_model.logs.parse import ParsedLog
from engine_model.logs.timeline import Timeline, build_timeline
from engine_model.scenario_io import validate

ASSUMED_OUTPUT_LEN = 256  # logs do not say how long replies were (assumption; editable)
ENGINE_KEYS = set(EngineConfig.model_fields)
MODELLED_POLICIES = ("fcfs", "lof", "random")


def estimated_output_len(timeline: Timeline, num_requests: int) -> int | None:
    """Mean reply length: each Decode line stands for `decode_log_interval` decode steps of its #running-req
    requests, so sum(steps x running) / requests. None when the log has no Decode line."""
    generated = sum(d.num_steps * d.num_running_reqs for d in timeline.decodes)
    if not generated or not num_requests:
        return None
    return max(1, round(generated / num_requests))


def scenario_from_log(parsed: ParsedLog, base: Scenario, *, output_len: int | None = None,
                      max_requests: int = 2000) -> tuple[Scenario, list[str]]:
    """The base scenario's GPU and model, with the log's engine settings and its observed requests.

    `output_len` None: estimated from the Decode lines, else ASSUMED_OUTPUT_LEN. Returns the scenario and
    notes on what was estimated, so the page can say where numbers came from.
    """
    hints = scenario_hints(parsed)
    observed = hints.pop("observed_requests")[:max_requests]
    timeline = build_timeline(parsed)
    if "chunked_prefill_size" not in hints and timeline.chunk_size_source == "inferred":
        hints["chunked_prefill_size"] = timeline.chunk_size  # the log's own passes, not this GPU's default
    reply_note = f"each reply assumed {output_len} tokens"
    if output_len is None:
        output_len = estimated_output_len(timeline, len(observed))
        reply_note = ((f"each reply {output_len} tokens: the Decode lines' decode steps x running requests "
                       "over the requests seen (an estimate)") if output_len
                      else f"each reply assumed {ASSUMED_OUTPUT_LEN} tokens")
        output_len = output_len or ASSUMED_OUTPUT_LEN
    engine = {k: v for k, v in hints.items() if k in ENGINE_KEYS}
    notes = ["engine settings from the log: "
             f"{', '.join(f'{k}={v}' for k, v in engine.items()) or 'none found'}"]
    if timeline.chunk_size_source == "inferred":
        notes.append(f"chunked_prefill_size {timeline.chunk_size:,} inferred: the log states none, and its "
                     "largest #new-token repeats")
    policy = engine.get("schedule_policy")
    if policy is not None and policy not in MODELLED_POLICIES:
        del engine["schedule_policy"]
        notes.append(f"schedule_policy {policy!r} runs as fcfs: the model has no radix cache, and SGLang "
                     "falls back to fcfs without one too")
    requests = [{"rid": f"log-{i:04d}", "group": "observed", "arrival_at": at,
                 "prompt_len": max(1, round(prompt)), "output_len": output_len}
                for i, (at, prompt) in enumerate(observed)]
    notes.append(f"{len(requests)} requests estimated from Prefill lines (arrival: the line's time to the "
                 "second, or an earlier line's where its #queue-req says the request was already waiting; "
                 f"prompt: its share of #new-token, cached tokens left out); {reply_note}")
    if not requests:
        notes.append("no Prefill lines with new requests: nothing to simulate")
    data = base.model_dump()
    data.update(name="your_server", workload={"requests": requests})
    data["engine"].update(engine)
    try:
        return validate(data), notes
    except InputError as err:  # a setting or a figure read from the log that no scenario accepts
        raise InputError(f"the log's {err.where}", err.problem) from None
