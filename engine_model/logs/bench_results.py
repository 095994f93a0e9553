"""bench_serving's results read back, and measured beside the model.

SGLang 0.5.23's `python -m sglang.bench_serving --output-file F --output-details` appends one JSON line per
run to F (sglang/benchmark/serving.py): the run's arguments and summary (`backend`, `request_rate`,
`max_concurrency`, `duration`, `completed`, `*_ttft_ms`, `*_itl_ms`, ...) and, per request in the
dataset's order, `input_lens`, `output_lens`, `ttfts` (seconds), `itls` (a list of seconds per request:
one gap per streamed chunk after the first), `generated_texts` and `errors` (empty when it succeeded; a
failed request has ttft 0, no gaps, output length 0). The export's runner (engine_model/bench_runner.py)
writes the same keys and `who_waits` (each request's rid, group and tokens streamed before the run).

`read_bench_results` reads such a file (or an upload's bytes) and refuses a line that is not one whole JSON
object with those lists, naming the line and what is allowed; nothing is dropped silently (failed requests
are kept and counted). `compare(run, model_requests, edges)` sets TTFT and ITL, p50 / p95 / p99 / max,
measured beside the model per prompt-length bucket and per group.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine_model.core import Request
from engine_model.errors import InputError
from engine_model.files import SNIFF_BYTES, decode, name_of, read_capped, sniff
from engine_model.metrics import bucket_label, gaps, ttft

MAX_BYTES = 256 * 2**20  # a run's generated texts make long lines: 1,000 replies of 2,000 tokens ≈ 10 MB
MAX_RUNS = 1000
STATS = ("p50", "p95", "p99", "max")
ALLOWED = ("one JSON object per line, as `python -m sglang.bench_serving --output-file F --output-details` "
           "or the export's run_test.py writes it")


@dataclass(frozen=True)
class MeasuredRequest:
    """One request as the client measured it. ttft_s is None when it failed (`error` says why)."""

    index: int
    input_len: int | None
    output_len: int | None
    ttft_s: float | None
    itls_s: tuple[float, ...]
    error: str = ""
    rid: str | None = None
    group: str | None = None
    num_generated_before: int = 0


@dataclass(frozen=True)
class BenchRun:
    """One line of a bench_serving output file: one run."""

    line_no: int
    tag: str | None
    backend: str
    request_rate: float | str | None
    max_concurrency: int | None
    requests: tuple[MeasuredRequest, ...]

    @property
    def num_failed(self) -> int:
        return sum(1 for r in self.requests if r.error)

    @property
    def name(self) -> str:
        return self.tag or f"line {self.line_no}"


def read_bench_results(source: str | bytes | Path, where: str = "bench_serving output") -> list[BenchRun]:
    """Every run in the file, in file order; InputError naming the line for anything else."""
    if isinstance(source, Path):
        where, data = name_of(source), read_capped(source, MAX_BYTES)
    else:
        data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else bytes(source)
        if len(data) > MAX_BYTES:
            raise InputError(where, f"is {len(data):,} bytes; the limit is {MAX_BYTES:,}")
        sniff(data[:SNIFF_BYTES], where)
    text, bad_line = decode(data)
    if bad_line is not None:
        raise InputError(f"{where} line {bad_line}", "holds bytes that are not UTF-8; allowed: " + ALLOWED)
    lines = text.split("\n")
    runs = []
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        cut = line_no == len(lines)  # the last line, with no newline after it
        at = f"{where} line {line_no}"
        runs.append(_run(_json_line(line, at, cut), line_no, at))
        if len(runs) > MAX_RUNS:
            raise InputError(f"{where} line {line_no}", f"more than {MAX_RUNS:,} runs; split the file")
    if not runs:
        raise InputError(where, "holds no results; allowed: " + ALLOWED)
    return runs


def _json_line(line: str, where: str, cut: bool) -> dict:
    try:
        value = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as err:
        decoding = isinstance(err, json.JSONDecodeError)
        detail = f"at character {err.pos + 1}: {err.msg}" if decoding else "nested too deep"
        if cut and decoding and line.lstrip().startswith("{"):
            raise InputError(where, f"is cut off (the last line, no newline, its JSON broken {detail}): the "
                                    "run was still writing or the file was truncated; rerun it or remove the "
                                    "line") from None
        raise InputError(where, f"is not JSON ({detail}); allowed: {ALLOWED}") from None
    if not isinstance(value, dict):
        raise InputError(where, f"is a JSON {type(value).__name__}, not an object; allowed: {ALLOWED}")
    return value


def _run(obj: dict, line_no: int, where: str) -> BenchRun:
    if "ttfts" not in obj or "itls" not in obj:
        raise InputError(where, "has no per-request results (ttfts, itls): run bench_serving with "
                                "--output-details, or use the export's run_test.py")
    ttfts = _list(obj, "ttfts", where, None)
    n = len(ttfts)
    itls = _list(obj, "itls", where, n)
    input_lens, output_lens = _list(obj, "input_lens", where, n), _list(obj, "output_lens", where, n)
    errors = _list(obj, "errors", where, n)
    extra = obj.get("who_waits") or {}
    if not isinstance(extra, dict):
        raise InputError(f"{where} who_waits", "must be an object of rids, groups, num_generated_before")
    rids, groups = _list(extra, "rids", where, n), _list(extra, "groups", where, n)
    before = _list(extra, "num_generated_before", where, n)
    requests = []
    for i in range(n):
        at = f"{where} request {i}"
        error = "" if errors is None or errors[i] is None else errors[i]
        if not isinstance(error, str):
            raise InputError(f"{at} errors", "must be a string (empty when the request succeeded)")
        requests.append(MeasuredRequest(
            i, _count(input_lens, i, f"{at} input_lens"), _count(output_lens, i, f"{at} output_lens"),
            None if error else _seconds(ttfts[i], f"{at} ttfts"), _gaps(itls[i], f"{at} itls"), error,
            None if rids is None else str(rids[i]), None if groups is None else str(groups[i]),
            _count(before, i, f"{at} num_generated_before") or 0))
    rate = obj.get("request_rate")
    return BenchRun(line_no, obj.get("tag") if isinstance(obj.get("tag"), str) else None,
                    str(obj.get("backend", "")), rate if isinstance(rate, int | float | str) else None,
                    obj.get("max_concurrency") if isinstance(obj.get("max_concurrency"), int) else None,
                    tuple(requests))


def _list(obj: dict, key: str, where: str, n: int | None) -> list | None:
    value = obj.get(key)
    if value is None and n is not None:
        return None
    if not isinstance(value, list):
        raise InputError(f"{where} {key}", "must be a list, one entry per request")
    if n is not None and len(value) != n:
        raise InputError(f"{where} {key}", f"has {len(value):,} entries but ttfts has {n:,}: the run is "
                                           "partial or the line was edited; every list has one entry per "
                                           "request")
    return value


def _seconds(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InputError(where, f"is {str(value)[:40]!r}; allowed: a finite number of seconds ≥ 0")
    return float(value)


def _gaps(value, where: str) -> tuple[float, ...]:
    if not isinstance(value, list):
        raise InputError(where, "must be a list of seconds (the gaps between streamed chunks)")
    return tuple(_seconds(gap, f"{where}[{k}]") for k, gap in enumerate(value))


def _count(values: list | None, i: int, where: str) -> int | None:
    if values is None:
        return None
    value = values[i]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(where, f"is {str(value)[:40]!r}; allowed: a whole number of tokens ≥ 0")
    return value


@dataclass(frozen=True)
class Row:
    """One statistic of one metric over one set of requests, measured and modelled (seconds)."""

    scope: str  # "all", "bucket" or "group"
    name: str  # "all", "0-8191", "questions"
    metric: str  # "TTFT" or "ITL"
    stat: str  # "p50", "p95", "p99", "max"
    measured_s: float | None
    model_s: float | None
    num_measured: int  # values behind measured_s: requests for TTFT, gaps for ITL
    num_model: int

    @property
    def diff_s(self) -> float | None:
        return None if self.measured_s is None or self.model_s is None else self.measured_s - self.model_s


@dataclass(frozen=True)
class Comparison:
    run: str
    rows: tuple[Row, ...]
    notes: tuple[str, ...]  # failed requests, lengths the server counted differently, unmatched requests


def compare(run: BenchRun, model_requests: list[Request], edges: list[int]) -> Comparison:
    """Measured beside the model: TTFT and ITL, p50 / p95 / p99 / max, over all requests, per prompt-length
    bucket (the model's prompt_len, `metrics.bucket_edges`) and per group. A measured request is matched to
    the model's by rid where the file has them, else by position (the export's order). Mid-reply requests
    give no TTFT, and their gaps count from the token the model's run began after."""
    pairs, notes = _pairs(run, model_requests)
    sets: dict[tuple[str, str], list[tuple[MeasuredRequest, Request]]] = {("all", "all"): pairs}
    for m, r in pairs:
        sets.setdefault(("bucket", bucket_label(r.prompt_len, edges)), []).append((m, r))
        sets.setdefault(("group", r.group), []).append((m, r))
    rows = []
    for (scope, name), members in sets.items():
        ok = [(m, r) for m, r in members if not m.error]
        measured = {"TTFT": [m.ttft_s for m, r in ok if not r.is_mid_reply],
                    "ITL": [g for m, _ in ok for g in m.itls_s[max(0, m.num_generated_before - 1):]]}
        model = {"TTFT": [t for _, r in members if (t := ttft(r)) is not None],
                 "ITL": [float(g) for _, r in members for g in gaps(r)]}
        for metric in ("TTFT", "ITL"):
            for stat in STATS:
                rows.append(Row(scope, name, metric, stat, _stat(measured[metric], stat),
                                _stat(model[metric], stat), len(measured[metric]), len(model[metric])))
    return Comparison(run.name, tuple(rows), tuple(notes))


def _pairs(run: BenchRun, model_requests: list[Request]) -> tuple[list, list[str]]:
    notes = []
    if run.num_failed:
        notes.append(f"{run.num_failed} of {len(run.requests)} requests failed; their TTFT and gaps are left "
                     f"out (first error: {next(r.error for r in run.requests if r.error)[:200]})")
    by_rid = {r.rid: r for r in model_requests}
    if all(m.rid is not None for m in run.requests):
        missing = [m.rid for m in run.requests if m.rid not in by_rid]
        if missing:
            raise InputError(f"{run.name} who_waits rids",
                             f"{missing[0]!r} and {len(missing) - 1} more are not among the scenario's "
                             "requests: pick the scenario the export was made from")
        pairs = [(m, by_rid[m.rid]) for m in run.requests]
    else:
        if len(run.requests) > len(model_requests):
            raise InputError(run.name, f"holds {len(run.requests):,} requests; the scenario has "
                                       f"{len(model_requests):,}: pick the scenario the export was made from")
        pairs = list(zip(run.requests, model_requests, strict=False))
    if len(pairs) < len(model_requests):
        notes.append(f"the file holds {len(pairs):,} of the scenario's {len(model_requests):,} requests; the "
                     "model's figures are over the same ones")
    off = [(m, r) for m, r in pairs
           if m.input_len is not None and m.input_len != r.prompt_len and not m.error]
    if off:
        m, r = off[0]
        notes.append(f"{len(off)} prompts were counted differently by the server (e.g. {r.rid}: "
                     f"{m.input_len:,} tokens, the model's {r.prompt_len:,})")
    return pairs, notes


def _stat(values: list[float], stat: str) -> float | None:
    if not values:
        return None
    if stat == "max":
        return float(max(values))
    return float(np.percentile(values, float(stat[1:])))
