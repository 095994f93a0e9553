"""Load public request traces (Azure, Mooncake, BurstGPT, plain JSONL) as arrival times and lengths.

A `str` is always the trace's text and a `Path` is always a file, so uploaded text can never name a file
on the server. Rows that cannot be used are skipped and counted by kind, with the first few line numbers.
"""

import csv
import json
import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from engine_model.errors import InputError

MAX_BYTES = 200_000_000
MAX_ROWS = 5_000_000
MAX_TOKENS = 10_000_000
MAX_SECONDS = 1e10  # about 300 years
MAX_EXAMPLES = 5
FORMATS = ("azure", "mooncake", "burstgpt", "jsonl")
COLUMNS = {
    "azure": ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    "burstgpt": ("Timestamp", "Request tokens", "Response tokens"),
    "mooncake": ("timestamp", "input_length", "output_length"),
    "jsonl": ("arrival_at", "prompt_len", "output_len"),
}


@dataclass(frozen=True)
class TraceRequest:
    arrival_at: float  # seconds after the first request
    prompt_len: int
    output_len: int


@dataclass(frozen=True)
class Trace:
    requests: list[TraceRequest]
    fmt: str
    num_rows: int
    num_skipped: int
    skipped_by_kind: dict[str, int]
    skipped_examples: list[tuple[int, str]]  # (line number, reason)
    warnings: list[str] = field(default_factory=list)


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


def mooncake_row(row: dict) -> tuple[float, int, int]:
    return (
        seconds("timestamp", row["timestamp"], 0.001),
        tokens("input_length", row["input_length"], allow_zero=False),
        tokens("output_length", row["output_length"], allow_zero=True),
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


def detect(first_line: str) -> str:
    """The format from the header (CSV) or the first object's keys (JSON Lines)."""
    if first_line.lstrip().startswith("{"):
        try:
            keys = set(json.loads(first_line))
        except (ValueError, TypeError, RecursionError):
            raise InputError("line 1", "starts with '{' but is not a JSON object") from None
        if {"timestamp", "input_length", "output_length"} <= keys:
            return "mooncake"
        if {"prompt_len", "output_len"} <= keys and keys & {"arrival_at", "arrival_s"}:
            return "jsonl"
        raise InputError(
            "line 1", f"JSON keys {sorted(keys)[:8]} match no format; expected {expected_text()}"
        )
    try:
        header = {name.strip() for name in split_csv(first_line)}
    except Skip:
        raise InputError("line 1 (header)", f"is not a CSV header; expected {expected_text()}") from None
    for fmt in ("azure", "burstgpt"):
        if set(COLUMNS[fmt]) <= header:
            return fmt
    raise InputError("line 1 (header)", f"found columns {sorted(header)[:8]}; expected {expected_text()}")


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


def csv_rows(lines: list[str], fmt: str):
    """(line number, dict by column name) for each data line; a short row becomes a Skip."""
    header = [name.strip() for name in split_csv(lines[0])]
    for line_no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            cells = split_csv(line)
        except Skip as skip:
            yield line_no, skip
            continue
        if len(cells) < len(header):
            yield line_no, Skip("wrong_columns", f"has {len(cells)} columns, the header has {len(header)}")
            continue
        yield line_no, dict(zip(header, cells, strict=False))


def json_rows(lines: list[str]):
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            yield line_no, Skip("bad_json", "is not valid JSON")
            continue
        yield line_no, row if isinstance(row, dict) else Skip("bad_json", "is JSON but not an object")


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


def read_text(source: str | bytes | Path) -> tuple[str, list[str]]:
    if isinstance(source, Path):
        if not source.is_file():
            raise InputError(str(source), "is not a readable file")
        if source.stat().st_size > MAX_BYTES:
            raise InputError(str(source), f"is {source.stat().st_size:,} bytes; the limit is {MAX_BYTES:,}")
        source = source.read_bytes()
    if isinstance(source, bytes | bytearray):
        if len(source) > MAX_BYTES:
            raise InputError("trace", f"is {len(source):,} bytes; the limit is {MAX_BYTES:,}")
        try:
            return bytes(source).decode("utf-8"), []
        except UnicodeDecodeError as error:
            line_no = source.count(b"\n", 0, error.start) + 1
            return bytes(source).decode("utf-8", "replace"), [
                f"line {line_no}: bytes that are not UTF-8 were replaced"
            ]
    if not isinstance(source, str):
        raise InputError("trace", f"expected text, bytes or a Path, got {type(source).__name__}")
    if len(source) > MAX_BYTES:
        raise InputError("trace", f"is {len(source):,} characters; the limit is {MAX_BYTES:,}")
    return source, []


def split_lines(text: str) -> list[str]:
    nul = text.find("\x00", 0, 65536)
    if nul >= 0:
        raise InputError(
            f"trace line {text.count(chr(10), 0, nul) + 1}",
            "contains NUL bytes: this looks binary; "
            f"expected a CSV or JSON Lines text file ({expected_text()})",
        )
    lines = [line.rstrip("\r") for line in text.removeprefix("\ufeff").split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def read_rows(
    lines: list[str], fmt: str, cut_last: bool, tally: Tally
) -> tuple[list[tuple[float, int, int]], int]:
    reader = ROW_READERS[fmt]
    source = json_rows(lines) if fmt in ("mooncake", "jsonl") else csv_rows(lines, fmt)
    rows, num_rows = [], 0
    for line_no, row in source:
        num_rows += 1
        if num_rows > MAX_ROWS:
            tally.skip(
                line_no,
                "over_row_limit",
                f"rows after {MAX_ROWS:,} were not read",
                sum(1 for line in lines[line_no - 1 :] if line.strip()),
            )
            break
        try:
            if isinstance(row, Skip):
                raise row
            rows.append(reader(row))
        except KeyError as missing:
            tally.skip(
                line_no,
                "missing_field",
                f"line {line_no}: has no '{missing.args[0]}' (expected {', '.join(COLUMNS[fmt])})",
            )
        except Skip as skip:
            cut = cut_last and line_no == len(lines)
            kind = "truncated_last_line" if cut else skip.kind
            tally.skip(
                line_no, kind, f"line {line_no}: {skip}{' (the last line looks cut off)' if cut else ''}"
            )
    return rows, num_rows


def check_options(window, speedup: float, sample: float, max_requests: int | None) -> None:
    if window is not None:
        start, end = window
        if not (math.isfinite(start) and start >= 0 and end > start):
            raise InputError("window", f"is {window}; expected (start_s, end_s) with 0 <= start_s < end_s")
    if not (isinstance(speedup, int | float) and math.isfinite(speedup) and speedup > 0):
        raise InputError("speedup", f"is {speedup}; expected a number > 0")
    if not (isinstance(sample, int | float) and 0 < sample <= 1):
        raise InputError("sample", f"is {sample}; expected a fraction in (0, 1]")
    if max_requests is not None and (not isinstance(max_requests, int) or max_requests < 1):
        raise InputError("max_requests", f"is {max_requests}; expected a whole number >= 1 or None")


def shape(
    rows, window, speedup: float, sample: float, max_requests: int | None, seed: int
) -> list[TraceRequest]:
    """Sort, rebase on the first request, cut the window, sample, speed up, then keep the first max_requests."""
    rows = sorted(rows, key=lambda row: row[0])
    if not rows:
        return []
    kept = [(t - rows[0][0], p, o) for t, p, o in rows]
    if window is not None:
        kept = [row for row in kept if window[0] <= row[0] < window[1]]
    if kept:
        kept = [(t - kept[0][0], p, o) for t, p, o in kept]
    if sample < 1:
        rng = random.Random(seed)
        kept = [row for row in kept if rng.random() < sample]
    if kept:
        kept = [((t - kept[0][0]) / speedup, p, o) for t, p, o in kept]
    return [TraceRequest(round(t, 6), p, o) for t, p, o in kept[:max_requests]]


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
    """Requests from a trace: a `str` is the text itself, a `Path` a file. Raises InputError when unusable."""
    check_options(window, speedup, sample, max_requests)
    if fmt is not None and fmt not in FORMATS:
        raise InputError("fmt", f"is '{fmt}'; expected one of {', '.join(FORMATS)} or None to detect it")
    text, warnings = read_text(path_or_text)
    lines = split_lines(text)
    if not lines:
        raise InputError("trace", f"is empty: nothing usable was found; expected {expected_text()}")
    fmt = fmt or detect(lines[0])
    if fmt in ("azure", "burstgpt") and not set(COLUMNS[fmt]) <= {c.strip() for c in lines[0].split(",")}:
        raise InputError(
            "line 1 (header)", f"expected columns {', '.join(COLUMNS[fmt])}; found '{lines[0][:120]}'"
        )
    tally = Tally()
    rows, num_rows = read_rows(lines, fmt, not text.endswith("\n"), tally)
    requests = shape(rows, window, speedup, sample, max_requests, seed)
    if not requests:
        raise InputError("trace", nothing_usable(num_rows, len(rows), tally))
    return Trace(requests, fmt, num_rows, tally.total, tally.by_kind, tally.examples, warnings)


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
    prompts = np.array([r.prompt_len for r in trace.requests], dtype=np.int64)
    outputs = np.array([r.output_len for r in trace.requests], dtype=np.int64)
    is_long = prompts >= long_threshold
    duration = trace.requests[-1].arrival_at - trace.requests[0].arrival_at
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
