"""A server log replayed in the model: the log's settings and the requests its Prefill lines imply
(engine_model.scenario_from_log), plus the requests already streaming when the log begins, and, if asked,
the story switches (mixed chunk, chunk size, prefill-decode interval) on top. Pure functions: no Streamlit.

Why the requests already streaming: a log usually starts mid-traffic. Its first lines report requests
running that no Prefill line in the log introduces; without them a log showing the chunked-prefill stall
(forty replies running when a long prompt arrives) replays with nobody to stall, and every Decode line's
tokens are charged to the few requests seen, stretching a 22 s log into minutes of simulated decode.
"""

from __future__ import annotations

import bisect
import math
import re

from pydantic import ValidationError

from app.server.controls import AS_LOGGED
from engine_model import (
    ASSUMED_OUTPUT_LEN,
    InputError,
    ParsedLog,
    Scenario,
    Timeline,
    check_deployment,
    scenario_from_log,
    validate,
)
from engine_model import log_settings as settings

MAX_REQUESTS = 2000  # requests a replay reads from the Prefill lines (the first ones), unless raised
MID_REPLY_PROMPT = 2000  # prompt of a request already streaming, when the KV pool is unknown (assumption)
TYPE_TAG = re.compile(r"^(int|float|str|bool|none|literal\[.*\]|function-.*|constrained-.*)$")  # union arms
SWITCHES = {"mixed": "enable_mixed_chunk", "chunk": "chunked_prefill_size",
            "interval": "prefill_decode_interval"}


def running_at_start(timeline: Timeline) -> int:
    """Requests the first scheduler line reports running (a Prefill line counts the batch before its own)."""
    first = next((s for s in timeline.samples if s.num_running_reqs is not None), None)
    return first.num_running_reqs if first is not None else 0


def finish_steps(timeline: Timeline, arrivals: list[float], num: int) -> list[int]:
    """Decode steps each of the `num` requests already streaming at the log's start still runs (an estimate).

    The i-th of them finishes at the first line by which i + 1 requests have left the batch: a request has
    left for every one that arrived (and is not queued) while the running batch did not grow. Until then it
    gets a token every decode step the Decode lines stand for. None finishing: they stream to the log's end.
    """
    decodes = sorted((d.end_at, d.num_steps) for d in timeline.decodes)
    ends: list[float] = []
    for sample in sorted(timeline.samples, key=lambda s: s.at):
        if sample.kind != "decode" or sample.num_running_reqs is None or len(ends) >= num:
            continue  # a Prefill line's #running-req leaves out requests still being prefilled
        gone = (bisect.bisect_left(arrivals, sample.at) - (sample.num_queue_reqs or 0)
                - (sample.num_running_reqs - num))
        ends += [sample.at] * max(0, min(gone, num) - len(ends))
    total = sum(steps for _, steps in decodes)
    ends += [math.inf] * (num - len(ends))
    return [max(1, total if t == math.inf else sum(steps for end, steps in decodes if end <= t))
            for t in ends]


def streaming_requests(parsed: ParsedLog, timeline: Timeline,
                       arrivals: list[float]) -> tuple[list[dict], int, str | None]:
    """The requests already streaming at the log's first line, as explicit mid-reply requests; the tokens
    they account for in the Decode lines; and a note saying what was assumed (None if there are none)."""
    num = running_at_start(timeline)
    if num <= 0:
        return [], 0, None
    first = next(s for s in timeline.samples if s.num_running_reqs is not None)
    pool = settings(parsed).get("max_total_tokens")
    prompt = (max(1, round(first.token_usage * pool / num)) if isinstance(pool, int) and first.token_usage
              else MID_REPLY_PROMPT)
    steps = finish_steps(timeline, sorted(arrivals), num)
    requests = [{"rid": f"streaming-{i:04d}", "group": "streaming", "arrival_at": 0.0, "prompt_len": prompt,
                 "output_len": n + 1, "already_generated": 1} for i, n in enumerate(steps)]
    span = f"{min(steps):,}" if min(steps) == max(steps) else f"{min(steps):,} to {max(steps):,}"
    how = ("the first line's token usage × the KV pool, shared among them" if prompt != MID_REPLY_PROMPT
           else "an assumption: the log does not say the KV pool's size")
    note = (f"{num} requests already streaming when the log begins (its first line reports them running): "
            f"prompt {prompt:,} tokens each ({how}); they stream {span} more tokens, one per "
            "decode step the Decode lines stand for, each until the batch's counts say it left")
    return requests, sum(steps), note


def reply_length(timeline: Timeline, arrivals: list[float], accounted: int,
                 max_requests: int = MAX_REQUESTS) -> int | None:
    """Mean reply of the requests the Prefill lines introduce: the Decode lines' tokens (steps × running)
    less those the already-streaming requests account for, over the requests seen. When the replay keeps
    only the first `max_requests`, only the Decode lines up to the last of them count."""
    until = max(arrivals) if len(arrivals) >= max_requests else math.inf
    generated = sum(d.num_steps * d.num_running_reqs for d in timeline.decodes if d.end_at <= until)
    generated -= accounted
    return max(1, round(generated / len(arrivals))) if generated > 0 and arrivals else None


def provenance(note: str, reply: int, is_assumed: bool) -> str:
    """The engine's 'from the log: …; estimated: …; assumed: …' note with the reply length this page set."""
    if not note.startswith("from the log:"):
        return note
    if is_assumed:
        return note.replace("reply length 1", f"reply length {reply}")
    note = note.replace(", reply length 1", "")
    if "estimated: nothing" in note:
        return note.replace("estimated: nothing", "estimated: reply length (from the Decode lines)")
    return note.replace("; assumed:", ", reply length (from the Decode lines); assumed:")


def replay_scenario(parsed: ParsedLog, timeline: Timeline, base: Scenario, output_len: int | None,
                    switches: dict | None = None, picked: dict | None = None,
                    max_requests: int = MAX_REQUESTS) -> tuple[Scenario, list[str]]:
    """The log as a scenario on its own deployment (or the one `picked`), with the requests already streaming
    and any switch not left AS_LOGGED; the first `max_requests` of the requests its Prefill lines introduce.
    Raises InputError naming the field for anything the model cannot run, a deployment that cannot run
    included (the engine's one check)."""
    try:
        # reply lengths are set below, once the requests already streaming are known
        scenario, notes = scenario_from_log(parsed, base, output_len=1, max_requests=max_requests,
                                            picked=picked)
    except ValidationError as err:
        raise named(err) from None
    data = scenario.model_dump(mode="json", exclude_none=True)
    seen = data["workload"]["requests"]
    streaming, accounted, note = streaming_requests(parsed, timeline, [r["arrival_at"] for r in seen])
    arrivals = [r["arrival_at"] for r in seen]
    estimated = reply_length(timeline, arrivals, accounted, max_requests) if output_len is None else None
    reply = output_len or estimated or ASSUMED_OUTPUT_LEN
    for request in seen:
        request["output_len"] = reply
    said = (f"each reply assumed {reply} tokens" if output_len or not estimated else
            f"each reply {reply} tokens: the Decode lines' tokens not accounted for by the requests already "
            "streaming, over the requests seen (an estimate)")
    is_assumed = bool(output_len or not estimated)
    notes = [provenance(n.replace("each reply assumed 1 tokens", said), reply, is_assumed) for n in notes]
    data["workload"]["requests"] = streaming + seen
    data["limits"]["max_requests"] = max(data["limits"]["max_requests"], len(streaming) + len(seen))
    _switch(data, switches or {})
    scenario = validate(data)
    check_deployment(scenario)
    return scenario, notes + ([note] if note else [])


def streak_note(run_lines: list, num_stalled: int, num_model: int, resolved: dict, timeline: Timeline) -> str:
    """How the log's and the model's back-to-back prefill passes are counted, and why they differ if they do.

    Both count passes while replies were running (a pass with nobody running stalls no one). `run_lines`:
    the log's longest run of full-chunk Prefill lines; `resolved`: the model run's resolved settings.
    """
    chunk_size = timeline.chunk_size
    text = ("Counted alike: back-to-back prefill passes while replies were running (the log's run of full "
            "chunks with no Decode line between; the model's consecutive prefill passes).")
    reasons = []
    model_chunk = resolved.get("chunked_prefill_size")
    if chunk_size and model_chunk != chunk_size:
        reasons.append(f"the model's chunk size is {model_chunk or 'off'}, the log's {chunk_size:,}")
    cap = resolved.get("max_running_requests")
    most = max(((r.num_running_reqs or 0) + r.num_new_reqs for r in run_lines), default=0)
    if isinstance(cap, int) and most > cap:
        reasons.append(f"the model caps running requests at {cap:,}, the log ran {most:,}")
    if num_stalled != num_model:
        reasons.append("arrivals are estimates (the lines' times to the second, or earlier where #queue-req "
                       "said a request was waiting) and prompts are equal shares of each line's tokens, so "
                       "passes can pack differently")
        text += f" They differ ({num_stalled} vs {num_model}): " + "; ".join(reasons) + "."
    last = run_lines[-1] if run_lines else None
    ends_log = last is not None and timeline.samples[-1].line_no == last.line_no
    if ends_log and last.num_queue_reqs:
        text += (f" The log's run ends with {last.num_queue_reqs:,} requests still queued at its last line: "
                 "SGLang went on prefilling them after it, and the replay has only the requests the lines "
                 "show.")
    return text


def with_switches(scenario: Scenario, switches: dict) -> Scenario:
    """A replayed scenario under the switches not left AS_LOGGED: the same requests, without reading the log
    again (for a log at the size limit that took 0.3 s a rerun)."""
    data = scenario.model_dump(mode="json", exclude_none=True)
    _switch(data, switches)
    return validate(data)


def _switch(data: dict, switches: dict) -> None:
    for key, value in switches.items():
        if value != AS_LOGGED:
            data["engine"][SWITCHES[key]] = switch_value(key, value)


def switch_value(key: str, value):
    if key == "mixed":
        return value == "on"
    if key == "chunk":
        return -1 if value == "off" else value
    return value


def named(err: ValidationError) -> InputError:
    """A pydantic error as the one line the page shows: the field, what is allowed, what it got."""
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"] if not TYPE_TAG.match(str(p))) or "the log's settings"
    return InputError(where, f"{first['msg']} (got {repr(first.get('input'))[:80]})")
