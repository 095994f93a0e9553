"""Write a server log, its /metrics scrapes and a /server_info for one run of the model (see SOURCE.md).

    .venv/bin/python tests/data/sglang_metrics/make_data.py tests/data/sglang_metrics

A chat service on one H100 (Llama-3.1-8B, SGLang defaults: chunk 8,192, mixed chunk off): replies stream
in at 3 a second; at 9 s someone pastes a 100,000-token prompt. The model runs it; this script writes
what SGLang 0.5.23 would have printed and exported for that run:

- `chat_long_prompt.log`: a `server_args={...}` line, the scheduler's startup line, a `Prefill batch` line
  per prefill pass and a `Decode batch` line every 40 decode passes (facts §8.1-8.4), stamped to the second;
- `chat_long_prompt.prom`: a scrape every 5 s, each after a `# scraped_at` line, written by
  `prometheus_client` from metrics declared with SGLang 0.5.23's names, label names, types and default
  bucket bounds (`observability/metrics_collector.py`, facts §8.5), observed the way SGLang observes them
  (§8.6: TTFT at the first token, each later gap as an ITL value, e2e and TPOT at the finish, queue time at
  admission; scheduler gauges set at each log line). `_created` series are off, as in SGLang's
  multiprocess exposition. The HELP texts are ours;
- `server_info.json`: the fields of /server_info the reader uses, with this run's resolved values.

Nothing here was recorded from a real server: the times come from the model's cost model.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from engine_model import PassKind, pass_shape, simulate, validate
from engine_model.cost import cost_of
from engine_model.resolve import gpu_of, mem_fraction_of, model_of

START = datetime(2026, 3, 2, 14, 0, 0, tzinfo=UTC)
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
SCRAPE_EVERY_S = 5
DECODE_LOG_INTERVAL = 40
ITL = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100,
       0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0)
TTFT = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E = (*TTFT, 600, 1200, 1800, 2400)
QUEUE = (0.0, 0.001, 0.005, 0.010, 0.050, 0.100, 0.200, 0.500, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70,
         80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000)
TOKENIZER_LABELS = {"model_name": MODEL, "engine_type": "unified"}
SCHEDULER_LABELS = {**TOKENIZER_LABELS, "tp_rank": "0", "pp_rank": "0", "moe_ep_rank": "0"}
SCENARIO = {
    "name": "chat_long_prompt",
    "hardware": {"gpu": "h100-sxm"}, "model": {"name": "llama-3.1-8b"},
    "engine": {"chunked_prefill_size": "auto", "enable_mixed_chunk": False},
    "cost": {"front_end": False},  # the scheduler's times alone: no front-end loop (engine_model/frontend.py)
    "workload": {"groups": [
        {"name": "chat", "count": 90, "prompt_len": {"dist": "uniform", "low": 800, "high": 3000},
         "output_len": {"dist": "uniform", "low": 150, "high": 400}, "arrival": {"kind": "poisson",
                                                                                   "rate_per_s": 3.0}},
        {"name": "paste", "count": 1, "prompt_len": 100_000, "output_len": 200,
         "arrival": {"kind": "at", "start_at": 9.0}}]},
}


def stamp(at: float) -> str:
    return (START + timedelta(seconds=at)).strftime("[%Y-%m-%d %H:%M:%S]")


def metrics(registry: CollectorRegistry) -> dict:
    def hist(name, buckets, labels):
        return Histogram(f"sglang:{name}", f"{name} (test data)", labelnames=labels, buckets=buckets,
                         registry=registry)

    tokenizer, streaming = list(TOKENIZER_LABELS), [*TOKENIZER_LABELS, "is_streaming"]
    return {
        "ttft": hist("time_to_first_token_seconds", TTFT, streaming),
        "itl": hist("inter_token_latency_seconds", ITL, tokenizer),
        "tpot": hist("request_time_per_output_token_seconds", ITL, streaming),
        "e2e": hist("e2e_request_latency_seconds", E2E, streaming),
        "queue": hist("queue_time_seconds", QUEUE, list(SCHEDULER_LABELS)),
        **{name: Gauge(f"sglang:{name}", f"{name} (test data)", labelnames=list(SCHEDULER_LABELS),
                       registry=registry)
           for name in ("num_running_reqs", "num_queue_reqs", "token_usage", "gen_throughput",
                        "num_used_tokens", "max_total_num_tokens")},
        **{name: Counter(f"sglang:{name}", f"{name} (test data)", labelnames=streaming, registry=registry)
           for name in ("prompt_tokens", "generation_tokens", "num_requests")},
    }


def request_events(result) -> list[tuple[float, str, tuple]]:
    """(time, metric, values) for every observation SGLang's tokenizer and scheduler would make."""
    events = []
    for req in result.requests:
        times = req.token_times
        if req.first_scheduled_at is not None and not req.num_generated_before:
            events.append((req.first_scheduled_at, "queue", (req.first_scheduled_at - req.arrival_at,)))
        if not times:
            continue
        if not req.num_generated_before:
            events.append((times[0], "ttft", (times[0] - req.arrival_at,)))
        events += [(b, "itl", (b - a,)) for a, b in zip(times, times[1:], strict=False)]
        if req.finished_at is not None:
            events.append((req.finished_at, "finish", (req, times)))
    return events


def log_lines_and_gauges(result, pool: int) -> tuple[list[str], list[tuple[float, str, tuple]]]:
    """The scheduler's log lines and, at each, the gauges SGLang sets when it logs. "cuda graph" is whether
    that pass replayed a CUDA graph in the run (`RooflineCost.graph_of`: decode graphs, and the breakable
    prefill graphs 0.5.23 runs by default for chunks up to their captured sizes)."""
    cost = cost_of(result.scenario)
    lines, events, decodes, last = [], [], 0, (0.0, 0)
    generated, last_prefill_at = 0, 0.0
    prompts, done = {r.rid: r.prompt_len for r in result.requests}, {}
    for it in result.iterations:
        if it.kind is PassKind.IDLE:
            continue
        running, queued, usage = it.num_running, it.num_waiting, it.kv_used / pool
        graph = bool(cost.graph_of(pass_shape(it)))
        if it.kind is PassKind.PREFILL:
            tokens = sum(row.extend for row in it.prefill_rows)
            for row in it.prefill_rows:
                done[row.rid] = done.get(row.rid, 0) + row.extend
            pending = prompts[it.chunked_rid] - done[it.chunked_rid] if it.chunked_rid else 0
            throughput = tokens / max(it.end_at - last_prefill_at, 1e-9)  # since the last Prefill line
            last_prefill_at = it.end_at
            lines.append(f"{stamp(it.end_at)} Prefill batch, #new-seq: {len(it.prefill_rows)}, "
                         f"#new-token: {tokens}, #cached-token: 0, token usage: {usage:.2f}, "
                         f"#running-req: {running}, #queue-req: {queued}, #pending-token: {pending}, "
                         f"cuda graph: {graph}, input throughput (token/s): {throughput:.2f}")
        else:
            decodes += 1
            generated += len(it.decode_rids)
            if decodes % DECODE_LOG_INTERVAL:
                continue
            throughput = (generated - last[1]) / max(it.end_at - last[0], 1e-9)
            last = (it.end_at, generated)
            running = len(it.decode_rids)
            lines.append(f"{stamp(it.end_at)} Decode batch, #running-req: {running}, #token: {it.kv_used}, "
                         f"token usage: {usage:.2f}, cuda graph: {graph}, gen throughput (token/s): "
                         f"{throughput:.2f}, #queue-req: {queued}")
            events.append((it.end_at, "gen_throughput", (throughput,)))
        events += [(it.end_at, name, (value,)) for name, value in (
            ("num_running_reqs", running), ("num_queue_reqs", queued), ("token_usage", round(usage, 2)),
            ("num_used_tokens", it.kv_used))]
    return lines, events


def apply(m: dict, name: str, values: tuple) -> None:
    streaming = {**TOKENIZER_LABELS, "is_streaming": "true"}
    if name == "itl":
        m["itl"].labels(**TOKENIZER_LABELS).observe(values[0])
    elif name == "ttft":
        m["ttft"].labels(**streaming).observe(values[0])
    elif name == "queue":
        m["queue"].labels(**SCHEDULER_LABELS).observe(values[0])
    elif name == "finish":
        req, times = values
        m["e2e"].labels(**streaming).observe(req.finished_at - req.arrival_at)
        if len(times) > 1 and not req.num_generated_before:
            m["tpot"].labels(**streaming).observe((times[-1] - times[0]) / (len(times) - 1))
        m["prompt_tokens"].labels(**streaming).inc(req.prompt_len)
        m["generation_tokens"].labels(**streaming).inc(len(times))
        m["num_requests"].labels(**streaming).inc()
    else:
        m[name].labels(**SCHEDULER_LABELS).set(values[0])


def scrapes(result, events: list, pool: int) -> str:
    prometheus_client.disable_created_metrics()
    registry = CollectorRegistry()
    m = metrics(registry)
    m["max_total_num_tokens"].labels(**SCHEDULER_LABELS).set(pool)
    events = sorted(events, key=lambda e: e[0])
    out, i = [], 0
    for k in range(int(result.end_at // SCRAPE_EVERY_S) + 2):
        at = k * SCRAPE_EVERY_S
        while i < len(events) and events[i][0] <= at:
            apply(m, events[i][1], events[i][2])
            i += 1
        out.append(f"# scraped_at {(START + timedelta(seconds=at)).strftime('%Y-%m-%dT%H:%M:%SZ')}\n")
        out.append(generate_latest(registry).decode())
    return "".join(out)


def server_info(resolved: dict, pool: int) -> dict:
    args = {"model_path": MODEL, "served_model_name": MODEL,
            "chunked_prefill_size": resolved["chunked_prefill_size"], "enable_mixed_chunk": False,
            "max_running_requests": None, "max_total_tokens": None,
            "max_prefill_tokens": 16384, "schedule_policy": "fcfs", "page_size": 1, "stream_interval": 1,
            "speculative_algorithm": None, "disaggregation_mode": "null", "tp_size": 1, "dp_size": 1,
            "enable_dp_attention": False, "disable_overlap_schedule": False, "enable_metrics": True,
            "decode_log_interval": DECODE_LOG_INTERVAL, "schedule_conservativeness": 1.0,
            "prefill_decode_interval": 0}
    return {**args, "status": "ready", "max_total_num_tokens": pool, "max_req_input_len": 131066,
            "internal_states": [{**args, "effective_max_running_requests_per_dp":
                                 resolved["max_running_requests"], "last_gen_throughput": 0.0}],
            "version": "0.5.23", "frontend": "python"}


INFO_ONLY = ("status", "max_total_num_tokens", "max_req_input_len", "internal_states", "version", "frontend")


def available_gib(scenario, chunk: int | None) -> float:
    """The startup line's available_gpu_mem: what mem_fraction_static leaves of the GPU (an estimate: the
    real figure is measured after the CUDA graphs are captured)."""
    gpu = gpu_of(scenario)
    fraction, _ = mem_fraction_of(scenario, gpu, model_of(scenario), chunk)
    return gpu.memory_gib * (1 - fraction)


def main(folder: Path) -> None:
    scenario = validate(SCENARIO)
    result = simulate(scenario)
    resolved = result.resolved.to_dict()
    pool = resolved["max_total_tokens"]
    args = {k: v for k, v in server_info(resolved, pool).items() if k not in INFO_ONLY}
    head = [f"{stamp(0)} server_args={args}",
            f"{stamp(0)} max_total_num_tokens={pool}, "
            f"chunked_prefill_size={resolved['chunked_prefill_size']}, max_prefill_tokens=16384, "
            f"max_running_requests={resolved['max_running_requests']}, "
            f"context_len=131072, "
            f"available_gpu_mem={available_gib(scenario, resolved['chunked_prefill_size']):.2f} GB"]
    lines, gauge_events = log_lines_and_gauges(result, pool)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "chat_long_prompt.log").write_text("\n".join(head + lines) + "\n")
    events = request_events(result) + gauge_events
    (folder / "chat_long_prompt.prom").write_text(scrapes(result, events, pool))
    (folder / "server_info.json").write_text(json.dumps(server_info(resolved, pool), indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
