"""One candidate run: the setting applied to the scenario, the one feasibility check every entry point calls
(engine_model/feasibility.py), then the run and its waits per group. A top-level function of strings, so a
process pool or a Dask worker runs it as the caller would, and the same inputs give the same `Outcome`."""

from __future__ import annotations

import json
import resource
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np

from engine_model.advise.space import Budget, Candidate, Layout, first_value
from engine_model.config import Scenario
from engine_model.core import RequestState
from engine_model.errors import InputError
from engine_model.feasibility import refusal
from engine_model.metrics import finish, gaps, max_itl, ttft
from engine_model.replicas import num_gpus
from engine_model.scenario_io import validate
from engine_model.simulation import simulate


@dataclass(frozen=True)
class Outcome:
    """What one candidate did: refused (and why), or its output and each group's waits (seconds)."""

    key: str
    candidate: Candidate
    gpus: int
    refused: str | None = None
    output_tok_s: float | None = None
    waits: dict = field(default_factory=dict)  # group -> {wait: seconds or None} (targets.WAITS)
    unfinished: int = 0  # requests that did not finish (refused at intake, cut off)
    cut_off: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0  # CPU seconds of the run in its process (wall_s less what other processes took)
    peak_mib: float = 0.0  # the peak resident memory of the process that ran it, after the run

    @property
    def runs(self) -> bool:
        return self.refused is None

    @property
    def output_per_gpu(self) -> float | None:
        return None if self.output_tok_s is None else self.output_tok_s / self.gpus

    def wait(self, group: str, wait: str) -> float | None:
        return self.waits.get(group, {}).get(wait)

    def worst(self, wait: str) -> float | None:
        """The most-waiting group's value of `wait`."""
        values = [w[wait] for w in self.waits.values() if w.get(wait) is not None]
        return max(values) if values else None

    def to_dict(self) -> dict:
        doc = asdict(self)
        doc.pop("candidate")
        return {
            **doc,
            "setting": self.candidate.words,
            "layout": self.candidate.layout.words,
            "pd": self.candidate.layout.is_pd,
            "output_per_gpu": self.output_per_gpu,
        }


@lru_cache(maxsize=8)
def base_of(scenario_json: str) -> Scenario:
    return validate(json.loads(scenario_json))


def candidate_of(key: str) -> Candidate:
    """The inverse of `Candidate.key` for the keys `space` writes (a key crosses processes as text)."""
    values = dict(item.split("=", 1) for item in key.split(" "))
    pd = "pd.prefill.num_workers" in values
    attn_dp = values.get("engine.enable_dp_attention") == "true"
    layout = Layout(
        int(values["hardware.tp_size"]),
        engines=1 if attn_dp else int(values["engine.dp_size"]),
        prefill=int(values.get("pd.prefill.num_workers", 0)),
        decode=int(values.get("pd.decode.num_workers", 0)),
        policy=json.loads(values["pd.decode_allocation_policy"]) if pd else "",
        attn_dp=int(values["engine.dp_size"]) if attn_dp else 0,
    )
    running = values.get("engine.max_running_requests")
    return Candidate(
        layout,
        values["engine.enable_mixed_chunk"] == "true",
        json.loads(values["engine.chunked_prefill_size"]),
        json.loads(values["engine.schedule_policy"]),
        float(values["engine.schedule_conservativeness"]),
        None if running is None else int(running),
        json.loads(values.get("engine.speculative_algorithm", "null")),
        first_of(values),
    )


def first_of(values: dict) -> str | None:
    """The group a key puts first, as "INDEX:NAME" (`Candidate.first`)."""
    found = [k for k in values if k.startswith("workload.groups.") and k.endswith(".priority")]
    if not found:
        return None
    index = found[0].split(".")[2]
    return first_value(index, json.loads(values[f"workload.groups.{index}.name"]))


def evaluate(scenario_json: str, budget: tuple, key: str) -> Outcome:
    """Run one candidate: refused with SGLang's reason (the config's or feasibility's), or its waits."""
    started, cpu = time.perf_counter(), time.process_time()
    candidate, budget = candidate_of(key), Budget(*budget)
    try:
        scenario = candidate.scenario(base_of(scenario_json), budget)
        refused = refusal(scenario)
    except InputError as err:
        return Outcome(key, candidate, candidate.layout.gpus, refused=f"{err.where}: {err.problem}")
    if refused is not None:
        return Outcome(key, candidate, num_gpus(scenario), refused=f"{refused.where}: {refused.problem}")
    result = simulate(scenario)
    waits, output_tok_s = waits_of(result.requests)
    return Outcome(
        key,
        candidate,
        num_gpus(scenario),
        output_tok_s=output_tok_s,
        waits=waits,
        unfinished=sum(r.state is not RequestState.FINISHED for r in result.requests),
        cut_off=result.cut_off,
        wall_s=time.perf_counter() - started,
        cpu_s=time.process_time() - cpu,
        peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )


def waits_of(requests) -> tuple[dict, float | None]:
    """Each group's waits and the output throughput, as engine_model.metrics.group_metrics computes them
    (`ttft_s.p95`, `max_itl_s.max`, `itl_s.p99`, `output_throughput_tok_s`), each request's gaps computed
    once rather than once per group and again overall (tests/test_advise.py checks they agree)."""
    groups: dict[str, list] = {}
    for req in requests:
        groups.setdefault(req.group, []).append((ttft(req), max_itl(req), gaps(req)))
    waits = {}
    for name, rows in groups.items():
        firsts = [t for t, _, _ in rows if t is not None]
        pauses = [m for _, m, _ in rows if m is not None]
        spread = [g for _, _, g in rows if g.size]
        waits[name] = {
            "ttft_p95": float(np.percentile(firsts, 95)) if firsts else None,
            "longest_pause": float(max(pauses)) if pauses else None,
            "itl_p99": float(np.percentile(np.concatenate(spread), 99)) if spread else None,
        }
    ends = [finish(r) for r in requests if r.state is RequestState.FINISHED]
    span = (max(ends) - min(r.arrival_at for r in requests)) if ends else 0.0
    num_tokens = sum(len(r.token_times) for r in requests)
    return waits, (num_tokens / span if span > 0 else None)
