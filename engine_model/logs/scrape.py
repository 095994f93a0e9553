"""Read scrapes of SGLang's `/metrics` (Prometheus text format) into histograms, gauges and counters.

The metric names, types and default bucket bounds are SGLang 0.5.23's (`observability/metrics_collector.py`;
facts §8.5). Samples are parsed by `prometheus_client`'s own text parser; this module splits a file into
scrapes, keeps the families it reads, and checks each histogram (a +Inf bucket, counts that never
decrease, finite numbers). Nothing is dropped silently: every line is read, counted as another program's
or another family's sample, or counted as malformed with its reason; every series left out says why.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from engine_model.errors import InputError
from engine_model.files import decode, name_of, read_capped
from engine_model.logs.histogram import Histogram

MAX_BYTES = 20_000_000  # a file: about 150 scrapes of a real server (≈130 KB each); samples are capped below
MAX_SAMPLES = 20_000  # of the families read: about 300 a scrape, so 65 scrapes; about a second to parse
MAX_SCRAPES = 2_000
MAX_EXAMPLES = 5
MAX_LINE = 1_000_000  # characters; a real sample line is a few hundred
HISTOGRAMS = (  # SGLang name (after "sglang:") -> the name the report uses
    ("inter_token_latency_seconds", "itl_s"),
    ("time_to_first_token_seconds", "ttft_s"),
    ("e2e_request_latency_seconds", "e2e_s"),
    ("request_time_per_output_token_seconds", "tpot_s"),  # 0.5.22+
    ("queue_time_seconds", "queue_time_s"),
)
GAUGES = ("num_running_reqs", "num_queue_reqs", "token_usage", "gen_throughput", "num_used_tokens",
          "max_total_num_tokens", "num_retracted_reqs", "num_paused_reqs", "cache_hit_rate",
          "spec_accept_length")
COUNTERS = ("prompt_tokens", "generation_tokens", "num_requests", "num_aborted_requests",
            "num_retracted_requests")  # exported with a _total suffix
PREFIX = "sglang:"
WANTED = {
    **{f"{PREFIX}{name}{suffix}": (name, suffix) for name, _ in HISTOGRAMS for suffix in ("_bucket", "_count",
                                                                                          "_sum")},
    **{f"{PREFIX}{name}": (name, "") for name in GAUGES},
    **{f"{PREFIX}{name}_total": (name, "_total") for name in COUNTERS},
}
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
MARKER = re.compile(r"#\s*scraped[ _]at\b[:=]?\s*(?P<when>.*)$", re.IGNORECASE)
MARKER_HELP = ("write a time after it: '# scraped_at 2025-10-22T20:23:10Z' (ISO 8601) or '# scraped_at "
               "1761164590' (seconds since 1970)")

Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Scrape:
    """One scrape: the series of the families read, by family (the SGLang name without `sglang:`)."""

    index: int
    first_line: int
    at: float | None  # seconds since 1970 (UTC); None when the scrape carries no time
    at_source: str  # "marker" (a '# scraped_at' line), "sample timestamps", "fetched" or "none"
    histograms: dict[str, dict[Labels, Histogram]]
    gauges: dict[str, dict[Labels, float]]
    counters: dict[str, dict[Labels, float]]


@dataclass(frozen=True)
class ScrapeSet:
    """Every scrape of one or more files, in order, and what was not used."""

    scrapes: list[Scrape]
    sources: list[str]
    num_lines: int
    num_samples: int  # samples of the families read
    num_other: int  # samples of other families or programs, not read
    num_malformed: int
    malformed_examples: list[tuple[str, str]]  # (where, why)
    left_out: list[str]  # series left out, each with why
    warnings: list[str]


@dataclass
class Block:
    """The lines of one scrape, before they are parsed."""

    first_line: int
    at: float | None = None
    at_source: str = "none"
    lines: list[tuple[int, str]] = field(default_factory=list)
    keys: set = field(default_factory=set)


@dataclass
class Reading:
    """Mutable state of one read; frozen into a ScrapeSet at the end."""

    source: str
    blocks: list[Block] = field(default_factory=list)
    num_lines: int = 0
    num_samples: int = 0
    num_other: int = 0
    other_names: list[str] = field(default_factory=list)
    num_malformed: int = 0
    malformed: list[tuple[str, str]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def bad_line(self, line_no: int, why: str) -> None:
        self.num_malformed += 1
        if len(self.malformed) < MAX_EXAMPLES:
            self.malformed.append((f"{self.source} line {line_no}", why))

    def leave_out(self, why: str) -> None:
        if len(self.left_out) < 50:
            self.left_out.append(why)


def marker_time(text: str) -> float | None:
    """Seconds since 1970 of a marker's time: ISO 8601 (a missing zone is read as UTC) or epoch seconds."""
    text = text.strip()
    try:
        if re.fullmatch(r"\d{9,11}(\.\d+)?", text):
            return float(text)
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00").replace(",", "."))
    except ValueError:
        return None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


def split_blocks(reading: Reading, lines: list[str], start_line: int = 1) -> None:
    """Lines into scrapes: a '# scraped_at' line starts one, and so does a series seen twice in one."""
    block = Block(start_line)
    for line_no, raw in enumerate(lines, start=start_line):
        line = raw.rstrip("\r").strip()
        if not line:
            continue
        if len(line) > MAX_LINE:
            reading.bad_line(line_no, f"the line has {len(line):,} characters; the limit is {MAX_LINE:,}")
            continue
        if line.startswith("#"):
            marker = MARKER.match(line)
            if marker is None:
                continue  # HELP, TYPE and other comments: types come from SGLang's source, not the file
            at = marker_time(marker["when"])
            if at is None:
                reading.bad_line(line_no, f"'{line[:60]}' holds no time: {MARKER_HELP}")
                continue
            if block.lines:
                reading.blocks.append(block)
            block = Block(line_no, at, "marker")
            continue
        name = NAME.match(line)
        if name is None:
            reading.bad_line(line_no, f"'{line[:60]}' is not a Prometheus sample (name{{labels}} value)")
            continue
        if name[0] not in WANTED:
            reading.num_other += 1
            if len(reading.other_names) < 3 and name[0] not in reading.other_names:
                reading.other_names.append(name[0])
            continue
        key = line[: line.rfind("}") + 1] or name[0]
        if key in block.keys:  # the same series again: the next scrape, pasted without a marker
            reading.blocks.append(block)
            block = Block(line_no)
        block.keys.add(key)
        block.lines.append((line_no, line))
    if block.lines:
        reading.blocks.append(block)


def parsed_samples(reading: Reading, block: Block) -> list:
    """The block's samples, by prometheus_client's parser; a line it refuses is counted and skipped."""
    try:
        return [s for family in text_string_to_metric_families(text_of(block.lines)) for s in family.samples]
    except ValueError:
        pass
    samples = []
    for line_no, line in block.lines:  # find the lines it refuses, one at a time
        try:
            samples.extend(s for f in text_string_to_metric_families(line + "\n") for s in f.samples)
        except ValueError as err:
            reading.bad_line(line_no, f"not a Prometheus sample ({str(err)[:80]})")
    return samples


def text_of(lines: list[tuple[int, str]]) -> str:
    return "".join(line + "\n" for _, line in lines)


def labels_of(labels: dict, drop: str = "") -> Labels:
    return tuple(sorted((k, v) for k, v in labels.items() if k != drop))


def series_text(name: str, labels: Labels) -> str:
    inside = ",".join(f'{k}="{v}"' for k, v in labels)
    return f"{PREFIX}{name}{{{inside}}}"


def scrape_of(reading: Reading, block: Block, index: int) -> Scrape:
    """Samples -> series: gauges and counters by labels, histograms assembled from their _bucket lines."""
    gauges: dict[str, dict[Labels, float]] = {}
    counters: dict[str, dict[Labels, float]] = {}
    parts: dict[tuple[str, Labels], dict] = {}
    stamps = []
    for sample in parsed_samples(reading, block):
        name, suffix = WANTED[sample.name]
        if sample.timestamp is not None:
            stamps.append(float(sample.timestamp))
        if suffix == "_bucket":
            le = sample.labels.get("le", "")
            part = parts.setdefault((name, labels_of(sample.labels, "le")), {"buckets": []})
            part["buckets"].append((le, float(sample.value)))
        elif suffix in ("_count", "_sum"):
            parts.setdefault((name, labels_of(sample.labels)), {"buckets": []})[suffix] = float(sample.value)
        else:
            value, where = float(sample.value), series_text(name, labels_of(sample.labels))
            if not math.isfinite(value) or (suffix == "_total" and value < 0):
                reading.leave_out(f"{where} in the scrape at line {block.first_line} is {value}: not used")
                continue
            found = counters if suffix == "_total" else gauges
            found.setdefault(name, {})[labels_of(sample.labels)] = value
    histograms: dict[str, dict[Labels, Histogram]] = {}
    for (name, labels), part in parts.items():
        where = f"{series_text(name, labels)} in the scrape at line {block.first_line}"
        hist = histogram_of(reading, part, where)
        if hist is not None:
            histograms.setdefault(name, {})[labels] = hist
    at, at_source = block.at, block.at_source
    if at is None and stamps:
        at, at_source = max(stamps), "sample timestamps"
    return Scrape(index, block.first_line, at, at_source, histograms, gauges, counters)


def histogram_of(reading: Reading, part: dict, where: str) -> Histogram | None:
    """A histogram from its _bucket samples, or None with the reason: no +Inf, decreasing, not finite."""
    buckets = []
    for le, value in part["buckets"]:
        try:
            bound = float(le)
        except ValueError:
            reading.leave_out(f"{where}: bucket le='{le[:20]}' is not a number; the series is left out")
            return None
        buckets.append((bound, value))
    buckets.sort()
    bounds = [b for b, _ in buckets]
    counts = [c for _, c in buckets]
    problem = None
    if not buckets or bounds[-1] != math.inf:
        problem = "has no +Inf bucket"
    elif any(math.isnan(b) for b in bounds) or len(set(bounds)) < len(bounds):
        problem = "has a bucket bound twice (or NaN)"
    elif not all(math.isfinite(c) and c >= 0 for c in counts):
        problem = "has a bucket count that is negative, NaN or infinite"
    elif any(b < a for a, b in zip(counts, counts[1:], strict=False)):
        at = next(i for i in range(1, len(counts)) if counts[i] < counts[i - 1])
        problem = (f"has bucket counts that decrease (le={bounds[at]:g}: {counts[at]:g} after "
                   f"{counts[at - 1]:g}); cumulative counts never do")
    if problem:
        reading.leave_out(f"{where} {problem}; the series is left out")
        return None
    count = part.get("_count")
    if count is not None and count != counts[-1]:
        reading.warnings.append(f"{where}: _count {count:g} differs from the +Inf bucket {counts[-1]:g}; "
                                "the buckets are used")
    total = part.get("_sum")
    if total is not None and not math.isfinite(total):
        reading.warnings.append(f"{where}: _sum is {total}; its mean is unknown")
        total = None
    return Histogram(tuple(bounds[:-1]), tuple(counts), total)


# ---- the door: text or files in, a ScrapeSet out ------------------------------------------------------


def check_text(text: str, source: str, max_bytes: int) -> None:
    if not isinstance(text, str):
        raise InputError(source, f"expected text, got {type(text).__name__}")
    size = len(text) if len(text) * 4 <= max_bytes else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InputError(source, f"is {size:,} bytes; the limit is {max_bytes:,}. Keep the scrapes around "
                                 "the stall.")
    nul = text.find("\x00", 0, 65536)
    if nul >= 0:
        raise InputError(f"{source} line {text.count(chr(10), 0, nul) + 1}",
                         "contains NUL bytes: this looks like a binary file, not /metrics text")


def read_into(reading: Reading, text: str, max_bytes: int) -> None:
    check_text(text, reading.source, max_bytes)
    lines = text.split("\n")
    reading.num_lines += len(lines) - (lines[-1] == "")
    before = len(reading.blocks)
    split_blocks(reading, lines)
    if len(reading.blocks) == before:
        raise InputError(*not_metrics(reading, lines))


def not_metrics(reading: Reading, lines: list[str]) -> tuple[str, str]:
    """Where and why a text holds no SGLang metric: another program's metrics, a log, JSON, or anything."""
    first = next(((n, line.strip()) for n, line in enumerate(lines, 1) if line.strip()), (1, ""))
    where, head = f"{reading.source} line {first[0]}", first[1][:80]
    if reading.num_other:
        return where, (f"holds {reading.num_other:,} Prometheus samples but none of SGLang's (first: "
                       f"{', '.join(reading.other_names)}): is it SGLang's /metrics, started with "
                       "--enable-metrics?")
    if re.match(r"\S{0,64}\[\d{4}-\d{2}-\d{2} ", head):
        return where, "is a server log, not /metrics text: give it as the log"
    if head.startswith(("{", "[")):
        return where, "is JSON, not /metrics text (a /server_info? give it as --server-info)"
    return where, f"is not Prometheus text: no SGLang metric sample; it reads '{head}'"


def freeze(reading: Reading, sources: list[str], max_samples: int) -> ScrapeSet:
    scrapes, num_samples = [], 0
    for block in reading.blocks[:MAX_SCRAPES]:
        room = max_samples - num_samples
        if len(block.lines) > room:
            if room:  # the last scrape read is cut short
                block.lines = block.lines[:room]
                scrapes.append(scrape_of(reading, block, len(scrapes)))
            cut = ", the last cut short" if room else ""
            many = f"{len(scrapes)} scrape{'s' if len(scrapes) != 1 else ''}"
            reading.warnings.append(f"only the first {max_samples:,} samples were read ({many}{cut}); the "
                                    "rest of the file was not")
            num_samples = max_samples
            break
        num_samples += len(block.lines)
        scrapes.append(scrape_of(reading, block, len(scrapes)))
    if len(reading.blocks) > MAX_SCRAPES and len(scrapes) == MAX_SCRAPES:
        reading.warnings.append(f"only the first {MAX_SCRAPES:,} scrapes were read")
    if scrapes and all(s.at is not None for s in scrapes):
        ordered = sorted(scrapes, key=lambda s: s.at)
        if ordered != scrapes:
            reading.warnings.append("the scrapes were not in time order; they are sorted by their times")
        scrapes = [replace(s, index=i) for i, s in enumerate(ordered)]
    return ScrapeSet(scrapes, sources, reading.num_lines, num_samples, reading.num_other,
                     reading.num_malformed, reading.malformed, reading.left_out, reading.warnings)


def read_scrapes(texts: list[tuple[str, str]], *, max_bytes: int = MAX_BYTES,
                 max_samples: int = MAX_SAMPLES) -> ScrapeSet:
    """(source name, text) pairs -> every scrape in them, in order. Raises InputError (naming the source
    and line) for a text that holds no SGLang metric at all; anything less is counted in the result."""
    reading = Reading("metrics")
    for source, text in texts:
        reading.source = source
        read_into(reading, text, max_bytes)
    return freeze(reading, [s for s, _ in texts], max_samples)


def read_scrape_files(paths: list[str | Path], *, max_bytes: int = MAX_BYTES) -> ScrapeSet:
    """Scrape files, each read through engine_model.files (size capped, binary and compressed refused)."""
    texts, notes = [], []
    for path in paths:
        text, bad_line = decode(read_capped(path, max_bytes))
        texts.append((name_of(path), text))
        if bad_line is not None:
            notes.append(f"{name_of(path)} line {bad_line}: bytes that are not UTF-8 were replaced by �")
    found = read_scrapes(texts, max_bytes=max_bytes)
    found.warnings[:0] = notes
    return found
