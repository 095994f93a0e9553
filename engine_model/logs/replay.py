"""'Simulate this server': a scenario from a parsed log's settings and its observed request pattern."""

from __future__ import annotations

import math

from engine_model.config import EngineConfig, Scenario
from engine_model.errors import InputError
from engine_model.feasibility import check as check_deployment
from engine_model.hardware import ACTIVATION_RESERVE_GIB, GIB, weight_bytes
from engine_model.logs.deployment import LogDeployment, deployment_from_log
from engine_model.logs.observed import scenario_hints
from engine_model.logs.parse import ParsedLog, settings
from engine_model.logs.timeline import Timeline, build_timeline
from engine_model.resolve import gpu_of, mem_fraction_of, model_of, resolve
from engine_model.scenario_io import validate

ASSUMED_OUTPUT_LEN = 256  # logs do not say how long replies were (assumption; editable)
ENGINE_KEYS = set(EngineConfig.model_fields)
MODELLED_POLICIES = ("fcfs", "lof", "random")
NOT_MATCHED = "Not matched: "  # a note about what the replay could not honour starts with it


def estimated_output_len(timeline: Timeline, num_requests: int) -> int | None:
    """Mean reply length: each Decode line stands for `decode_log_interval` decode steps of its #running-req
    requests, so sum(steps x running) / requests. None when the log has no Decode line."""
    generated = sum(d.num_steps * d.num_running_reqs for d in timeline.decodes)
    if not generated or not num_requests:
        return None
    return max(1, round(generated / num_requests))


def scenario_from_log(parsed: ParsedLog, base: Scenario, *, output_len: int | None = None,
                      max_requests: int = 2000, picked: dict | None = None) -> tuple[Scenario, list[str]]:
    """The log's deployment (model from `model_path`, `tp_size`, dtypes: engine_model/logs/deployment.py) on
    the base scenario's GPU (a log does not name its GPU), with the log's engine settings and its observed
    requests; refused, like every entry point, when that deployment cannot run (engine_model.deployment).

    `output_len` None: estimated from the Decode lines, else ASSUMED_OUTPUT_LEN. `picked`: a person's model,
    tp_size, weight_dtype or kv_dtype over the log's (noted). Returns the scenario and
    notes on what was read, estimated and not matched ("Not matched: ..."), so the page can say where
    numbers came from.
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
    if requests and not parsed.has_times:
        notes.append("assumed: every request arrives at 0 s — the log has no timestamps, so it gives the "
                     "requests' order but not their arrival times")
    notes.append(provenance(engine, timeline, parsed.has_times, output_len if reply_note.startswith(
        "each reply assumed") else None))
    if not requests:
        notes.append("no Prefill lines with new requests: nothing to simulate")
    data = base.model_dump()
    data.update(name="your_server", workload={"requests": requests})
    # the log's times are the scheduler's: each prompt was tokenized before its Prefill line, so the replay
    # does not tokenize it again (engine_model/frontend.py)
    data["cost"]["front_end"] = False
    data["engine"].update(engine)
    deployment = deployment_from_log(settings(parsed))
    deployment.pick(picked or {})
    deployment.apply(data)
    try:
        scenario = validate(data)
        scenario, fraction_note = fit_log_pool(scenario, "mem_fraction_static" in engine)
    except InputError as err:  # a setting or a figure read from the log that no scenario accepts
        raise InputError(f"the log's {err.where}", err.problem) from None
    check_deployment(scenario)
    return scenario, [*notes, *fraction_note, *deployment_notes(deployment, scenario)]


def provenance(engine: dict, timeline: Timeline, timed: bool, assumed_reply: int | None) -> str:
    """One sentence: which of the replay's numbers came from the log, which were estimated, which assumed."""
    read = [f"{key}" for key in engine] + ["prompt lengths (#new-token)"]
    read += ["arrival times (the lines' stamps)"] if timed else []
    estimated = ["chunked_prefill_size"] if timeline.chunk_size_source == "inferred" else []
    assumed = ["the GPU", f"reply length {assumed_reply}" if assumed_reply else ""]
    assumed += [] if timed else ["arrival times (all at 0 s)"]
    estimated += [] if assumed_reply else ["reply length (from the Decode lines)"]
    return (f"from the log: {', '.join(read)}; estimated: {', '.join(estimated) or 'nothing'}; assumed: "
            f"{', '.join(a for a in assumed if a)} (every other setting at the SGLang default)")


def fit_log_pool(scenario: Scenario, is_fraction_logged: bool) -> tuple[Scenario, list[str]]:
    """The log's KV pool is what its server measured. When the log does not state mem_fraction_static and
    this release's derived fraction leaves less room than the log's pool took, the fraction that holds it is
    inferred (it must stay below 1: beyond, the pool cannot fit this GPU at all, and SGLang would cap it)."""
    pool = scenario.engine.max_total_tokens
    try:
        res = resolve(scenario)
    except InputError:  # the deployment cannot run at all: the check says why
        return scenario, []
    if pool is None or is_fraction_logged or pool <= res.max_total_tokens:
        return scenario, []
    gpu, model = gpu_of(scenario), model_of(scenario)
    needed = (pool * res.kv_bytes_per_token + weight_bytes(model, scenario.model.weight_dtype) / res.tp_size
              + ACTIVATION_RESERVE_GIB * GIB) / (gpu.memory_gib * GIB)
    fraction = math.ceil(needed * 1000) / 1000
    if fraction >= 1:
        return scenario, []
    derived, _ = mem_fraction_of(scenario, gpu, model, res.chunked_prefill_size)
    engine = scenario.engine.model_copy(update={"mem_fraction_static": fraction})
    return scenario.model_copy(update={"engine": engine}), [
        f"mem_fraction_static {fraction:g} inferred: the log states none, and its KV pool of {pool:,} tokens "
        f"needs that share of {gpu.name}'s memory beside {model.name}'s weights (SGLang "
        f"{scenario.engine.version} would derive {derived:g})"]


def deployment_notes(deployment: LogDeployment, scenario: Scenario) -> list[str]:
    """What the log's deployment was read as, and what was not matched (the GPU always: logs do not name
    it; a KV pool the picked GPU cannot hold)."""
    res = resolve(scenario)
    notes = [f"deployment from the log: {'; '.join(deployment.matched)}"] * bool(deployment.matched)
    unmatched = [f"the GPU: a log does not name it; the replay runs on {res.gpu_name} (pick yours)",
                 *deployment.unmatched]
    wanted = scenario.engine.max_total_tokens
    if wanted is not None and wanted > res.max_total_tokens:
        unmatched.append(f"the log's KV pool of {wanted:,} tokens does not fit on {res.tp_size} × "
                         f"{res.gpu_name} at TP {res.tp_size} beside {res.model_name}: the replay runs with "
                         f"the {res.max_total_tokens:,} that fit, as SGLang would; the server had more "
                         "memory (pick its GPU)")
    return [*notes, *(f"{NOT_MATCHED}{item}" for item in unmatched)]
