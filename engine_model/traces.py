"""Load public request traces (Azure, Mooncake, BurstGPT, plain JSONL) as arrival times and lengths.

A `str` is always the trace's text and a `Path` is always a file, so uploaded text can never name a file
on the server. Rows that cannot be used are skipped and counted by kind, with the first few line numbers.
"""

import csv
import itertools
import json
import math
import random
from array import array
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from engine_model.config import MAX_SPEEDUP, MAX_TOKENS, MAX_TRACE_SECONDS, MIN_SPEEDUP
from engine_model.errors import InputError
from engine_model.files import Lines
from engine_model.metrics import bucket_labels

MAX_BYTES = 200_000_000
MAX_ROWS = 3_000_000  # about 170 MB a million once loaded: the whole load stays under 1 GB
# characters; a trace row is about a hundred, a Mooncake row with hash ids a few thousand
MAX_LINE = 1_000_000
MAX_SECONDS = MAX_TRACE_SECONDS  # about 300 years
MAX_EXAMPLES = 5
FORMATS = ("azure", "mooncake", "burstgpt", "jsonl")
COLUMNS = {
    "azure": ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    "burstgpt": ("Timestamp", "Request tokens", "Response tokens"),
    "mooncake": ("timestamp", "input_length", "output_length"),
    "jsonl": ("arrival_at", "prompt_len", "output_len"),
}


@dataclass(frozen=True, slots=True)
class TraceRequest:
    arrival_at: float  # seconds after the first request
    prompt_len: int
    output_len: int
    hash_ids: tuple[int, ...] = ()  # Mooncake: the prompt's 512-token blocks (equal ids, equal blocks)


@dataclass(frozen=True)
class Trace:
    requests: list[TraceRequest]
    fmt: str
    num_rows: int
    num_skipped: int
    skipped_by_kind: dict[str, int]
    skipped_examples: list[tuple[int, str]]  # (line number, reason)
    warnings: list[str] = field(default_factory=list)
    stopped: str | None = None  # why reading stopped before the end of the file; None: it read it all
    # usable rows read but not kept, by why: "outside_window", "not_sampled", "past_max_requests"
    dropped: dict[str, int] = field(default_factory=dict)
    num_unread: int = 0  # lines after reading stopped (counted, never parsed); `stopped` says why
    stopped_by: str | None = None  # what stopped reading: "window", "max_requests" or "max_rows"

    @property
    def num_not_kept(self) -> int:
        """Rows of the file that are not among the requests: skipped, dropped or never read."""
        return self.num_skipped + sum(self.dropped.values()) + self.num_unread


class Skip(Exception):
    """One row that cannot be used; `kind` groups the count, the message is the reason."""

    def __init__(self, kind: str, reason: str):
        self.kind = kind
        super().__init__(reason)


# ---- reading one value ---------------------------------------------------------------------------


def number(name: str, value: object) -> int | float:
    """A JSON or CSV value as a finite number, else Skip."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise Skip("not_a_number", f"{name} is '{value[:30]}', not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Skip("not_a_number", f"{name} is {str(value)[:30]}, not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise Skip("not_a_number", f"{name} is {value}, not a finite number")
    if value < 0:
        raise Skip("negative", f"{name} is {str(value)[:30]}; it cannot be negative")
    return value


def tokens(name: str, value: object, *, allow_zero: bool) -> int:
    value = number(name, value)
    if value > MAX_TOKENS:
        raise Skip(
            "too_large", f"{name} is {str(value)[:30]}; more than {MAX_TOKENS:,} tokens is not a real request"
        )
    if value != int(value):
        raise Skip("not_a_number", f"{name} is {value}, not a whole number of tokens")
    if value == 0 and not allow_zero:
        raise Skip("zero_length", f"{name} is 0; a request needs at least one prompt token")
    return int(value)


def seconds(name: str, value: object, scale: float = 1.0) -> float:
    value = number(name, value)
    if value > MAX_SECONDS / scale:
        raise Skip("too_large", f"{name} is {str(value)[:30]}; that is more than 300 years")
    return value * scale


def wall_clock(value: str) -> float:
    """`2023-11-16 18:15:46.6805900` (any number of fractional digits) -> seconds since 1970."""
    whole, _, fraction = value.strip().partition(".")
    try:
        if fraction and not fraction.isdigit():
            raise ValueError
        stamp = datetime.fromisoformat(whole).replace(tzinfo=UTC)
        return stamp.timestamp() + (float("0." + fraction) if fraction else 0.0)
    except ValueError:
        raise Skip(
            "bad_timestamp", f"TIMESTAMP is '{value[:40]}', expected YYYY-MM-DD HH:MM:SS.fffffff"
        ) from None


# ---- one row per format: (time in seconds, prompt_len, output_len) ---------------------------------


def azure_row(row: dict) -> tuple[float, int, int]:
    return (
        wall_clock(row["TIMESTAMP"]),
        tokens("ContextTokens", row["ContextTokens"], allow_zero=False),
        tokens("GeneratedTokens", row["GeneratedTokens"], allow_zero=True),
    )


def burstgpt_row(row: dict) -> tuple[float, int, int]:
    output_len = tokens("Response tokens", row["Response tokens"], allow_zero=True)
    if output_len == 0:
        raise Skip("failed_request", "Response tokens is 0: BurstGPT marks a failed request this way")
    return (
        seconds("Timestamp", row["Timestamp"]),
        tokens("Request tokens", row["Request tokens"], allow_zero=False),
        output_len,
    )


MAX_HASH_ID = 2**31 - 1


def block_ids(value: object) -> tuple[int, ...]:
    """Mooncake's `hash_ids`: a list of whole numbers from 0 to 2^31 - 1 (absent: no blocks), else Skip."""
    if not isinstance(value, list) or len(value) > MAX_TOKENS // 512 + 1:
        raise Skip("bad_hash_ids", f"hash_ids is {str(value)[:30]}, not a list of at most "
                   f"{MAX_TOKENS // 512 + 1:,} block ids")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item <= MAX_HASH_ID:
            raise Skip("bad_hash_ids", f"hash_ids holds {str(item)[:30]}; expected whole numbers from 0 to "
                       f"{MAX_HASH_ID:,}")
    return tuple(value)


def mooncake_row(row: dict) -> tuple[float, int, int, tuple[int, ...]]:
    return (
        seconds("timestamp", row["timestamp"], 0.001),
        tokens("input_length", row["input_length"], allow_zero=False),
        tokens("output_length", row["output_length"], allow_zero=True),
        block_ids(row.get("hash_ids", [])),
    )


def jsonl_row(row: dict) -> tuple[float, int, int]:
    arrival = row["arrival_at"] if "arrival_at" in row else row["arrival_s"]
    return (
        seconds("arrival_at", arrival),
        tokens("prompt_len", row["prompt_len"], allow_zero=False),
        tokens("output_len", row["output_len"], allow_zero=True),
    )


ROW_READERS = {"azure": azure_row, "burstgpt": burstgpt_row, "mooncake": mooncake_row, "jsonl": jsonl_row}


# ---- format detection and line splitting ---------------------------------------------------------


def detect(line_no: int, first_line: str) -> str:
    """The format from the header (CSV) or the first object's keys (JSON Lines)."""
    where = f"line {line_no}"
    if first_line.lstrip().startswith("{"):
        try:
            keys = set(json.loads(first_line))
        except (ValueError, TypeError, RecursionError):
            raise InputError(where, "starts with '{' but is not a JSON object") from None
        if {"timestamp", "input_length", "output_length"} <= keys:
            return "mooncake"
        if {"prompt_len", "output_len"} <= keys and keys & {"arrival_at", "arrival_s"}:
            return "jsonl"
        raise InputError(where, f"JSON keys {sorted(keys)[:8]} match no format; expected {expected_text()}")
    try:
        header = {name.strip() for name in split_csv(first_line)}
    except Skip:
        raise InputError(f"{where} (header)", f"is not a CSV header; expected {expected_text()}") from None
    for fmt in ("azure", "burstgpt"):
        if set(COLUMNS[fmt]) <= header:
            return fmt
    found = sorted(name[:40] for name in header)[:8]
    raise InputError(f"{where} (header)", f"found columns {found}; expected {expected_text()}")


def expected_text() -> str:
    return (
        "; ".join(f"{fmt}: {', '.join(cols)}" for fmt, cols in COLUMNS.items())
        + " (jsonl also takes arrival_s)"
    )


def split_csv(line: str) -> list[str]:
    if '"' not in line and "\r" not in line:
        return line.split(",")
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        raise Skip("bad_csv", "is not a valid CSV row") from None


def csv_rows(header: list[str], lines):
    """(line number, dict by column name or Skip, whether the line ended) for each data line."""
    for line_no, line, complete in lines:
        if line is None:
            yield line_no, Skip("line_too_long", f"is longer than {MAX_LINE:,} characters"), complete
            continue
        if not line.strip():
            continue
        try:
            cells = split_csv(line)
        except Skip as skip:
            yield line_no, skip, complete
            continue
        if len(cells) < len(header):
            yield (line_no, Skip("wrong_columns", f"has {len(cells)} columns, the header has {len(header)}"),
                   complete)
            continue
        yield line_no, dict(zip(header, cells, strict=False)), complete


def json_rows(lines):
    for line_no, line, complete in lines:
        if line is None:
            yield line_no, Skip("line_too_long", f"is longer than {MAX_LINE:,} characters"), complete
            continue
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            yield line_no, Skip("bad_json", "is not valid JSON"), complete
            continue
        yield (line_no, row if isinstance(row, dict) else Skip("bad_json", "is JSON but not an object"),
               complete)


# ---- the whole load ------------------------------------------------------------------------------


@dataclass
class Tally:
    by_kind: dict[str, int] = field(default_factory=dict)
    examples: list[tuple[int, str]] = field(default_factory=list)

    def skip(self, line_no: int, kind: str, reason: str, count: int = 1) -> None:
        self.by_kind[kind] = self.by_kind.get(kind, 0) + count
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append((line_no, reason))

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())


@dataclass
class Rows:
    """Usable rows, packed: 24 bytes a row, so five million rows take 120 MB, not gigabytes of tuples;
    Mooncake's hash_ids 4 bytes an id more, and 8 a row where the file has them."""

    times: array = field(default_factory=lambda: array("d"))
    prompts: array = field(default_factory=lambda: array("q"))
    outputs: array = field(default_factory=lambda: array("q"))
    blocks: array = field(default_factory=lambda: array("i"))  # every row's hash_ids, end to end
    block_ends: array | None = None  # where each row's hash_ids end in `blocks` (None: no row has any)

    def add(self, row: tuple) -> None:
        self.times.append(row[0])
        self.prompts.append(row[1])
        self.outputs.append(row[2])
        if len(row) > 3 and (row[3] or self.block_ends is not None):
            if self.block_ends is None:
                self.block_ends = array("q", [0]) * (len(self.times) - 1)
            self.blocks.extend(row[3])
            self.block_ends.append(len(self.blocks))
        elif self.block_ends is not None:
            self.block_ends.append(len(self.blocks))

    def hash_ids(self, index: int) -> tuple[int, ...]:
        if self.block_ends is None:
            return ()
        return tuple(self.blocks[self.block_ends[index - 1] if index else 0:self.block_ends[index]])

    def __len__(self) -> int:
        return len(self.times)


@dataclass
class Cutter:
    """Says when reading can stop: while the rows so far are in time order, the window's end or
    max_requests kept rows means no later row can change the result (`shape` keeps the earliest).
    It draws the same sampling numbers as `shape`, in the same order. An out-of-order row turns it off."""

    window: tuple[float, float] | None
    sample: float
    max_requests: int | None
    seed: int
    is_on: bool = True
    first_at: float | None = None
    last_at: float = -math.inf
    num_kept: int = 0
    why: str = ""
    kind: str = ""  # "window" or "max_requests"

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.is_on = self.window is not None or self.max_requests is not None

    def is_done(self, at: float) -> bool:
        if not self.is_on or at < self.last_at:
            self.is_on = False
            return False
        self.last_at = at
        self.first_at = at if self.first_at is None else self.first_at
        since = at - self.first_at
        if self.window is not None and since >= self.window[1]:
            self.why, self.kind = f"the window ends at {self.window[1]:g} s", "window"
            return True
        if (self.window is not None and since < self.window[0]) or (
            self.sample < 1 and not self.rng.random() < self.sample
        ):
            return False
        self.num_kept += 1
        if self.max_requests is None or self.num_kept < self.max_requests:
            return False
        self.why, self.kind = f"max_requests ({self.max_requests:,}) rows were kept", "max_requests"
        return True


def header_of(lines) -> tuple[int, str] | None:
    """The first line that is not blank, without a byte-order mark; None when there is none."""
    for line_no, line, _ in lines:
        if line is None:
            raise InputError(f"line {line_no}",
                             f"is longer than {MAX_LINE:,} characters; expected {expected_text()}")
        line = line.removeprefix("\ufeff")
        if line.strip():
            return line_no, line
    return None


def read_rows(source, fmt: str, tally: Tally, cutter: Cutter) -> tuple[Rows, int, str | None]:
    """Usable rows, the number of data rows read, and why reading stopped early (None: at the end)."""
    reader, rows, num_rows = ROW_READERS[fmt], Rows(), 0
    for line_no, row, complete in source:
        if num_rows >= MAX_ROWS:
            return rows, num_rows, f"only the first {MAX_ROWS:,} rows were read; the rest were not"
        num_rows += 1
        try:
            if isinstance(row, Skip):
                raise row
            values = reader(row)
        except KeyError as missing:
            reason = f"line {line_no}: has no '{missing.args[0]}' (expected {', '.join(COLUMNS[fmt])})"
            tally.skip(line_no, "missing_field", reason)
            continue
        except Skip as skip:
            kind = skip.kind if complete else "truncated_last_line"
            tally.skip(line_no, kind,
                       f"line {line_no}: {skip}{'' if complete else ' (the last line looks cut off)'}")
            continue
        rows.add(values)
        if cutter.is_done(values[0]):
            return rows, num_rows, (f"reading stopped after line {line_no}: {cutter.why} and the rows so far "
                                    "are in time order")
    return rows, num_rows, None


def check_options(window, speedup: float, sample: float, max_requests: int | None) -> None:
    if window is not None:
        start, end = window
        if not (math.isfinite(start) and start >= 0 and end > start):
            raise InputError("window", f"is {window}; expected (start_s, end_s) with 0 <= start_s < end_s")
    if not (isinstance(speedup, int | float) and MIN_SPEEDUP <= speedup <= MAX_SPEEDUP):
        raise InputError("speedup", f"is {speedup}; expected a number from {MIN_SPEEDUP} to {MAX_SPEEDUP:g}")
    if not (isinstance(sample, int | float) and 0 < sample <= 1):
        raise InputError("sample", f"is {sample}; expected a fraction in (0, 1]")
    if max_requests is not None and (not isinstance(max_requests, int) or max_requests < 1):
        raise InputError("max_requests", f"is {max_requests}; expected a whole number >= 1 or None")


def shape(
    rows: Rows, window, speedup: float, sample: float, max_requests: int | None, seed: int
) -> tuple[list[TraceRequest], dict[str, int]]:
    """Sort, rebase on the first request, cut the window, sample, speed up, then keep the first
    max_requests. Also how many usable rows each step dropped."""
    if not len(rows):
        return [], {}
    order = np.argsort(np.frombuffer(rows.times, dtype=np.float64), kind="stable")
    at = np.frombuffer(rows.times, dtype=np.float64)[order]
    at = at - at[0]
    dropped = {}
    if window is not None:
        inside = (window[0] <= at) & (at < window[1])
        order, at = order[inside], at[inside]
        dropped["outside_window"] = len(rows) - len(at)
    if len(at):
        at = at - at[0]
    if sample < 1:
        rng, kept, seen = random.Random(seed), [], 0
        for index in range(len(at)):
            seen += 1
            if rng.random() < sample:
                kept.append(index)
                if max_requests is not None and len(kept) >= max_requests:
                    break
        dropped["not_sampled"] = seen - len(kept)
        dropped["past_max_requests"] = len(at) - seen
        order, at = order[kept], at[kept]
    if len(at):
        at = (at - at[0]) / speedup
    num = len(at) if max_requests is None else min(len(at), max_requests)
    dropped["past_max_requests"] = dropped.get("past_max_requests", 0) + len(at) - num
    requests = [
        TraceRequest(round(float(at[i]), 6), rows.prompts[order[i]], rows.outputs[order[i]],
                     rows.hash_ids(int(order[i])))
        for i in range(num)
    ]
    return requests, {why: n for why, n in dropped.items() if n}


def count_lines(source) -> int:
    """Lines left that hold anything, counted without parsing them."""
    return sum(1 for _, line, _ in source if line is None or line.strip())


def load_trace(
    path_or_text: str | bytes | Path,
    *,
    fmt: str | None = None,
    window: tuple[float, float] | None = None,
    speedup: float = 1.0,
    sample: float = 1.0,
    max_requests: int | None = None,
    seed: int = 0,
) -> Trace:
    """Requests from a trace: a `str` is the text itself, a `Path` a file. Raises InputError when unusable.

    Rows are read one at a time; reading stops once the result is settled (max_requests kept, or the
    window's end passed) while the rows are in time order, so a large file costs what it contributes.
    """
    check_options(window, speedup, sample, max_requests)
    if fmt is not None and fmt not in FORMATS:
        raise InputError("fmt", f"is '{fmt}'; expected one of {', '.join(FORMATS)} or None to detect it")
    with Lines(path_or_text, max_bytes=MAX_BYTES, max_line=MAX_LINE) as lines:
        source = iter(lines)
        first = header_of(source)
        if first is None:
            raise InputError("trace", f"is empty: nothing usable was found; expected {expected_text()}")
        fmt = fmt or detect(*first)
        tally, cutter = Tally(), Cutter(window, sample, max_requests, seed)
        if fmt in ("mooncake", "jsonl"):
            rows = json_rows(itertools.chain([(*first, True)], source))
        else:
            rows = csv_rows(csv_header(*first, fmt), source)
        rows, num_rows, stopped = read_rows(rows, fmt, tally, cutter)
        num_unread = count_lines(source) if stopped else 0
        stopped_by = (cutter.kind or "max_rows") if stopped else None
        warnings = ([] if lines.bad_line is None
                    else [f"line {lines.bad_line}: bytes that are not UTF-8 were replaced"])
    requests, dropped = shape(rows, window, speedup, sample, max_requests, seed)
    if not requests:
        raise InputError("trace", nothing_usable(num_rows, len(rows), tally))
    return Trace(requests, fmt, num_rows, tally.total, tally.by_kind, tally.examples, warnings, stopped,
                 dropped, num_unread, stopped_by)


def csv_header(line_no: int, line: str, fmt: str) -> list[str]:
    header = [name.strip() for name in split_csv(line)]
    if not set(COLUMNS[fmt]) <= set(header):
        raise InputError(
            f"line {line_no} (header)", f"expected columns {', '.join(COLUMNS[fmt])}; found '{line[:120]}'"
        )
    return header


def nothing_usable(num_rows: int, num_usable: int, tally: Tally) -> str:
    if num_usable:
        return f"nothing usable was found: {num_usable} good rows, but none fell in the window or the sample"
    reasons = "; ".join(reason for _, reason in tally.examples[:3]) or "no data rows"
    return f"nothing usable was found: {num_rows} rows, {tally.total} skipped ({reasons})"


# ---- the mix of a trace --------------------------------------------------------------------------

PERCENTILES = (50, 90, 95, 99, 100)


@dataclass(frozen=True)
class Mix:
    num_requests: int
    long_threshold: int
    num_long: int  # prompt_len >= long_threshold
    long_share: float  # of requests
    long_token_share: float  # of prompt tokens
    num_prompt_tokens: int
    prompt_len_percentiles: dict[int, float]  # linear interpolation, one decimal; 100 is the maximum
    output_len_percentiles: dict[int, float]
    duration_s: float  # first to last arrival
    mean_arrival_rate: float | None  # requests per second: (n - 1) / duration_s

    def headline(self) -> str:
        return (
            f"{share(self.long_share)} of requests carry {share(self.long_token_share)} of the prompt tokens "
            f"(prompts of {self.long_threshold:,} tokens or more)"
        )


def share(fraction: float) -> str:
    """0.02 -> '2 %'; small non-zero shares keep a decimal so they do not read as zero."""
    if fraction == 0 or fraction >= 0.01:
        return f"{fraction * 100:.0f} %"
    return f"{fraction * 100:.1f} %" if fraction >= 0.001 else "< 0.1 %"


def request_mix(trace: Trace, long_threshold: int = 8192) -> Mix:
    if not trace.requests:
        raise InputError("trace", "has no requests, so it has no mix")
    return mix_of([r.prompt_len for r in trace.requests], [r.output_len for r in trace.requests],
                  [r.arrival_at for r in trace.requests], long_threshold)


def mix_of(prompt_lens, output_lens, arrivals, long_threshold: int = 8192) -> Mix:
    """The mix of any requests: a trace's, a run's or a replayed log's (at least one)."""
    prompts = np.array(prompt_lens, dtype=np.int64)
    outputs = np.array(output_lens, dtype=np.int64)
    is_long = prompts >= long_threshold
    duration = float(max(arrivals) - min(arrivals))
    return Mix(
        num_requests=len(prompts),
        long_threshold=long_threshold,
        num_long=int(is_long.sum()),
        long_share=float(is_long.mean()),
        long_token_share=float(prompts[is_long].sum() / prompts.sum()),
        num_prompt_tokens=int(prompts.sum()),
        prompt_len_percentiles={p: round(float(np.percentile(prompts, p)), 1) for p in PERCENTILES},
        output_len_percentiles={p: round(float(np.percentile(outputs, p)), 1) for p in PERCENTILES},
        duration_s=duration,
        mean_arrival_rate=(len(prompts) - 1) / duration if duration > 0 else None,
    )


BUCKET_PERCENTILES = (50, 90, 99, 100)


def bucket_mix(trace: Trace, edges: list[int]) -> dict[str, dict]:
    """Per prompt-length bucket (the labels of the run summary's metrics.buckets): how many requests, and
    prompt and output length percentiles (100 is the maximum). Empty buckets are left out."""
    prompts = np.array([r.prompt_len for r in trace.requests], dtype=np.int64)
    outputs = np.array([r.output_len for r in trace.requests], dtype=np.int64)
    lows = [0, *edges]
    out = {}
    for label, low, high in zip(bucket_labels(edges), lows, [*edges, None], strict=True):
        inside = (prompts >= low) & (prompts < high) if high is not None else prompts >= low
        if inside.any():
            out[label] = {
                "num_requests": int(inside.sum()),
                "prompt_len": {p: round(float(np.percentile(prompts[inside], p)), 1)
                               for p in BUCKET_PERCENTILES},
                "output_len": {p: round(float(np.percentile(outputs[inside], p)), 1)
                               for p in BUCKET_PERCENTILES},
            }
    return out
