"""Check a server with everything it gives: its log, its /metrics scrapes, its /server_info, side by side.

The log's verdict stands; the metrics are put beside it in time (each scrape interval next to the Prefill
lines of the same seconds) and say whether the replies' inter-token gaps show the stall. The rules and
their limits are written out in docs/logs-and-traces.md §8.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from engine_model.logs.diagnose import Diagnosis, diagnose
from engine_model.logs.histogram import Quantile
from engine_model.logs.parse import ParsedLog, settings
from engine_model.logs.scrape import ScrapeSet
from engine_model.logs.scrape_report import MetricsReport, Tail, report, streaming_share
from engine_model.logs.server_info import Mismatch, ServerInfo, mismatches
from engine_model.logs.timeline import Timeline, build_timeline
from engine_model.logs.understate import understatements

STALL_KINDS = ("chunked_prefill_stall", "prefill_queue_ramp")
MAX_SHIFT_H = 14  # time zones lie within ±14 h of UTC


@dataclass(frozen=True)
class Aligned:
    """One scrape interval beside the log: the replies' gaps and the Prefill lines of the same seconds."""

    start_at: float  # seconds since 1970
    end_at: float
    start_s: float  # seconds since the log's first line
    end_s: float
    itl: Tail | None  # None: no gap was recorded in the interval
    num_running: float | None  # the gauge at the interval's end
    num_queued: float | None
    num_prefill_lines: int
    num_full_chunks: int
    max_new_tokens: int
    lines: tuple[int, int] | None  # first and last Prefill line in it


@dataclass(frozen=True)
class ServerCheck:
    verdict: str
    diagnosis: Diagnosis | None
    settings: dict  # the log's, with /server_info's where the log is silent
    log_settings: dict  # the log's own (server_args and the scheduler's startup line)
    metrics: MetricsReport | None
    scrapes: ScrapeSet | None  # what was read, and what was not (counts, reasons)
    info: ServerInfo | None
    mismatches: list[Mismatch]
    aligned: list[Aligned]
    alignment: str  # "" when aligned; otherwise why not, in words
    metrics_say: str  # "confirms", "does_not_show" or "cannot_tell"
    sentence: str  # what the metrics say beside the verdict, in words
    understates: list[str]  # why the ITL tail may understate a stall here


def log_epoch(parsed: ParsedLog) -> float | None:
    """Seconds since 1970 of the log's first stamp, read as UTC like the parser reads it."""
    if parsed.first_timestamp is None:
        return None
    return datetime.fromisoformat(parsed.first_timestamp).replace(tzinfo=UTC).timestamp()


def clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S")


def span_of(timeline: Timeline, epoch: float) -> tuple[float, float] | None:
    times = [p.at for p in timeline.prefills] + [d.end_at for d in timeline.decodes]
    return (epoch + min(times), epoch + max(times)) if times else None


def align(timeline: Timeline, epoch: float, metrics: MetricsReport) -> list[Aligned]:
    rows = []
    for interval in metrics.intervals:
        start, end = interval.start_at, interval.end_at
        inside = [p for p in timeline.prefills if start < epoch + p.at <= end]
        rows.append(Aligned(
            start, end, round(start - epoch, 3), round(end - epoch, 3), interval.tails.get("itl_s"),
            interval.gauges.get("num_running_reqs"), interval.gauges.get("num_queue_reqs"), len(inside),
            sum(p.is_full_chunk for p in inside), max((p.num_new_tokens for p in inside), default=0),
            (inside[0].line_no, inside[-1].line_no) if inside else None))
    return rows


def why_not_aligned(parsed: ParsedLog | None, metrics: MetricsReport | None, found: ScrapeSet | None,
                    timeline: Timeline | None) -> str:
    """'' when the scrapes can be set beside the log's lines; else the reason, in words."""
    if parsed is None or metrics is None or found is None:
        return "needs both a log and scrapes"
    if log_epoch(parsed) is None or timeline is None or span_of(timeline, 0.0) is None:
        return "the log's lines carry no timestamps"
    times = [s.at for s in found.scrapes]
    if len(times) < 2:
        return "one scrape holds everything since the server started; two or more give intervals"
    if None in times:
        return ("the scrapes carry no time: put a '# scraped_at 2026-03-02T14:00:05Z' line before each "
                "(date -u +'# scraped_at %FT%TZ' writes one)")
    first, last = span_of(timeline, log_epoch(parsed))
    if times[-1] < first or times[0] > last:
        gap_h = ((times[0] - last) if times[0] > last else (first - times[-1])) / 3600
        hint = (" If one of them is in another time zone (SGLang stamps its log in the server's local "
                "time), write the scrape markers in the same zone." if gap_h <= MAX_SHIFT_H else "")
        return (f"the scrapes ({clock(times[0])}–{clock(times[-1])}) and the log ({clock(first)}–"
                f"{clock(last)}) do not overlap{' on the same day' if gap_h < 24 else ''}.{hint}")
    return ""


def check_server(parsed: ParsedLog | None, found: ScrapeSet | None = None, info: ServerInfo | None = None,
                 *, rank: str | None = None) -> ServerCheck:
    """The log's diagnosis, the metrics' tails and the resolved settings, and what they say together."""
    log_settings = settings(parsed) if parsed is not None else {}
    known = info.settings if info is not None else {}
    merged = {**known, **log_settings}
    found_diagnosis = diagnose(parsed, rank=rank, known=known) if parsed is not None else None
    metrics = report(found) if found is not None and found.scrapes else None
    timeline = build_timeline(parsed, rank=rank, known=known) if parsed is not None else None
    why = why_not_aligned(parsed, metrics, found, timeline)
    rows = align(timeline, log_epoch(parsed), metrics) if not why else []
    say, sentence = metrics_sentence(found_diagnosis, rows, metrics, why)
    verdict = found_diagnosis.verdict if found_diagnosis is not None else metrics_verdict(metrics)
    notes = understatements(merged, metrics, streaming_share(found) if found else None,
                            parsed.version_hints if parsed else [])
    return ServerCheck(verdict, found_diagnosis, merged, log_settings, metrics, found, info,
                       mismatches(log_settings, info) if info is not None else [], rows, why, say, sentence,
                       notes)


def metrics_verdict(metrics: MetricsReport | None) -> str:
    """Without a log: the KV stall if requests were retracted; a pause the log must explain; healthy when
    the inter-token gaps were recorded and none was long; else unknown."""
    if metrics is None:
        return "unknown"
    if metrics.counters.get("num_retracted_requests") or any(
            v for _, v in metrics.gauges.get("num_retracted_reqs", [])):
        return "kv_retraction"
    itl = metrics.tails.get("itl_s")
    if itl is None or not itl.count:
        return "unknown"
    return "needs_log" if itl.num_long > 0 else "healthy"


# ---- the sentence beside the verdict ---------------------------------------------------------------


def stall_lines(diagnosis: Diagnosis | None) -> tuple[str, int, int] | None:
    """(kind, first line, last line) of the worst run behind an observed prefill stall, if there is one."""
    if diagnosis is None:
        return None
    finding = next((f for f in diagnosis.findings if f.kind in STALL_KINDS and f.severity == "observed"),
                   None)
    if finding is None or not finding.evidence:
        return None
    return finding.kind, finding.evidence[0][0], finding.evidence[-1][0]


def beside(rows: list[Aligned], first: int, last: int) -> list[Aligned]:
    """The intervals holding the run's lines, and the one after: the stalled gaps are recorded only when
    the next token comes, after the run."""
    hit = [i for i, r in enumerate(rows) if r.lines and r.lines[0] <= last and r.lines[1] >= first]
    if not hit:
        return []
    return rows[hit[0]: min(hit[-1] + 2, len(rows))]


def bucket_words(top: tuple[float, float]) -> str:
    lower, upper = top
    return f"{lower:g} s and up" if upper == float("inf") else f"{lower:g}–{upper:g} s"


def metrics_sentence(diagnosis: Diagnosis | None, rows: list[Aligned], metrics: MetricsReport | None,
                     why: str) -> tuple[str, str]:
    if metrics is None:
        return "cannot_tell", "No scrape was given."
    if why:
        return "cannot_tell", f"The metrics cannot be set beside the log's lines: {why}."
    stall = stall_lines(diagnosis)
    if stall is None:
        return "cannot_tell", quiet_sentence(rows)
    kind, first, last = stall
    near = beside(rows, first, last)
    if not near:
        return "cannot_tell", f"No scrape interval covers log lines {first}-{last}."
    silent = [r for r in near if r.itl is None and (r.num_running or 0) > 0]
    gaps = [r for r in near if r.itl is not None and r.itl.num_long > 0]
    run = f"the back-to-back Prefill lines {first}-{last}"
    name = "the chunked-prefill stall" if kind == "chunked_prefill_stall" else "the queue ramp"
    if not silent and not gaps:
        worst = max((r.itl.top for r in near if r.itl and r.itl.top), default=None)
        longest = f" (the longest in the {bucket_words(worst)} bucket)" if worst else ""
        return "does_not_show", (f"The metrics do not show it: beside {run}, no inter-token gap reached "
                                 f"half a second{longest}. The notes below say why the tail can understate "
                                 "a stall.")
    parts, p99 = [], ""
    if silent:
        parts.append(f"from {clock(silent[0].start_at)} to {clock(silent[-1].end_at)} no inter-token gap was "
                     f"recorded while {max(r.num_running or 0 for r in silent):.0f} replies were running")
    if gaps:
        worst = max(gaps, key=lambda r: r.itl.num_long)
        parts.append(f"{sum(r.itl.num_long for r in gaps):,.0f} gaps longer than {worst.itl.long_bound:g} s "
                     f"were recorded by {clock(gaps[-1].end_at)} (the longest in the "
                     f"{bucket_words(worst.itl.top)} bucket)")
        p99 = p99_words(worst)
    return "confirms", (f"The metrics agree: {'; then '.join(parts)}, beside {run}: {name}."
                        + (f" {p99}" if p99 else ""))


def p99_words(row: Aligned) -> str:
    """Why the interval's p99 may not show the stall: one long gap per waiting reply is a tiny share."""
    p99: Quantile | None = row.itl.quantiles.get("p99")
    if p99 is None or p99.upper > row.itl.long_bound:
        return ""
    share = row.itl.num_long / row.itl.count
    p999 = row.itl.quantiles.get("p99_9")
    where = bucket_words((p99.lower, p99.upper))
    return (f"That interval's ITL p99 is only {p99.value:.3g} s (interpolated in the {where} bucket): the "
            f"stall gives each waiting reply one long gap, {share:.1%} of the interval's "
            f"{row.itl.count:,.0f}, so p99 hides it" + (f"; p99.9 is {p999_words(p999)}." if p999 else "."))


def p999_words(q: Quantile) -> str:
    return (f"{q.value:g} s or more (above the last bucket)" if q.is_above_last
            else f"{q.value:.3g} s")


def quiet_sentence(rows: list[Aligned]) -> str:
    """No prefill stall in the log: where the longest gaps fell, and what the log shows there."""
    gaps = [r for r in rows if r.itl is not None and r.itl.num_long > 0]
    if not gaps:
        return "No inter-token gap was longer than about half a second in any scrape interval."
    worst = max(gaps, key=lambda r: r.itl.num_long)
    lines = (f" the log has {worst.num_prefill_lines} Prefill lines there (up to {worst.max_new_tokens:,} "
             f"new tokens, {worst.num_full_chunks} full chunks)" if worst.lines
             else " the log has no Prefill line there")
    return (f"The longest gaps fell in {clock(worst.start_at)}–{clock(worst.end_at)} "
            f"({worst.itl.num_long:,.0f} longer than {worst.itl.long_bound:g} s);{lines}.")
