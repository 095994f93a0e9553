"""Read an SGLang server log into records: prefill lines, decode lines, retractions and startup settings.

Formats follow docs/logs-and-traces.md (facts §5.5, §8). Every line is either turned into a record or
counted (blank, unrecognised, malformed), so nothing is dropped without a trace.
"""

import math
import re
from dataclasses import dataclass, field, fields
from pathlib import Path

from engine_model.errors import InputError
from engine_model.files import decode, read_capped
from engine_model.logs.lines import (
    ANSI,
    BATCH_HEADER,
    FRAME,
    MAX_EVENTS,
    MAX_FRAMES,
    RETRACT_WORDINGS,
    SCHEDULER_TAGS,
    STAMP,
    TAG,
    Prefix,
    epoch_of,
    event_kind,
    find_message,
    message_start,
)
from engine_model.logs.startup import (
    MAX_SERVER_ARGS,
    SETTING_KEYS,
    Malformed,
    parse_server_args,
    parse_startup,
)

MAX_EXAMPLES = 5
MAX_QUOTE = 500
MAX_LINE = 1_000_000  # characters; a scheduler line is a few hundred, a server_args line a few thousand
MAX_VALUE = 1_000_000_000  # no count, token figure or throughput in a real log comes near a billion
MAX_DIGITS = 40
OUT_OF_RANGE = f"a real log's numbers lie between 0 and {MAX_VALUE:,}"

ZERO_TAG = re.compile(r"[A-Z_]+0")


@dataclass(frozen=True)
class PrefillRecord:
    """One `Prefill batch` line: a prefill (or mixed) forward pass as SGLang logged it."""

    line_no: int
    at: float
    rank: str
    text: str
    num_new_reqs: int
    num_new_tokens: int
    num_cached_tokens: int = 0
    token_usage: float | None = None
    swa_token_usage: float | None = None
    mamba_usage: float | None = None
    num_running_reqs: int | None = None
    num_queue_reqs: int | None = None
    num_pending_tokens: int | None = None
    num_replay_tokens: int | None = None
    num_bootstrap_reqs: int | None = None
    num_inflight_reqs: int | None = None
    num_optimistic_reqs: int | None = None
    num_prealloc_reqs: int | None = None
    num_transfer_reqs: int | None = None
    num_retracted_reqs: int | None = None
    graph: bool | None = None
    input_throughput: float | None = None
    iteration: int | None = None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DecodeRecord:
    """One `Decode batch` line: logged once every `decode_log_interval` decode passes."""

    line_no: int
    at: float
    rank: str
    text: str
    num_running_reqs: int
    num_tokens: int | None = None
    token_usage: float | None = None
    num_swa_tokens: int | None = None
    swa_token_usage: float | None = None
    num_mamba: int | None = None
    mamba_usage: float | None = None
    accept_len: float | None = None
    accept_rate: float | None = None
    prealloc_usage: float | None = None
    num_prealloc_reqs: int | None = None
    num_transfer_reqs: int | None = None
    num_retracted_reqs: int | None = None
    graph: bool | None = None
    gen_throughput: float | None = None
    num_queue_reqs: int | None = None
    iteration: int | None = None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RetractionRecord:
    """One retraction warning: running requests were sent back to the queue because KV ran out."""

    line_no: int
    at: float
    rank: str
    text: str
    wording: str  # "decode_oom" (older) or "kv_pool_full"
    num_retracted_reqs: int
    new_token_ratio_before: float
    new_token_ratio_after: float
    num_new_tokens_gained: int | None = None
    num_mamba_gained: int | None = None


@dataclass(frozen=True)
class EventRecord:
    """A line that says the server crashed, ran out of memory or hung (kind: "crash", "oom" or "hang")."""

    line_no: int
    at: float
    rank: str
    text: str
    kind: str


@dataclass(frozen=True)
class ParsedLog:
    prefills: list[PrefillRecord]
    decodes: list[DecodeRecord]
    retractions: list[RetractionRecord]
    server_args: dict | None  # the first server_args line; later ones (restarts) are only counted
    startup: dict | None
    num_server_args_lines: int
    num_lines: int
    num_blank: int
    num_unrecognised: int
    unrecognised_examples: list[tuple[int, str]]
    num_malformed: int
    malformed_examples: list[tuple[int, str]]
    num_untimestamped: int
    num_lines_not_read: int
    ranks: frozenset[str]
    version_hints: list[str]
    warnings: list[str]
    first_timestamp: str | None
    time_resolution_s: float
    events: list[EventRecord] = field(default_factory=list)  # the first MAX_EVENTS
    num_events: int = 0
    num_clipped: int = 0  # scheduler lines whose last field was cut off (read up to the cut)
    clipped_examples: list[tuple[int, str]] = field(default_factory=list)
    num_timestamped: int = 0  # scheduler lines (batch, retraction, event) that carried a time
    formats: list[str] = field(default_factory=list)  # the line formats seen, in words
    frames: list[str] = field(default_factory=list)  # functions named in traceback frames, first seen first
    default_decode_log_interval: int = 40  # 20 for 0.1.x's headerless decode lines

    @property
    def has_times(self) -> bool:
        """Whether the scheduler lines carry times: without them a timeline is passes in order, no seconds."""
        return self.num_timestamped > 0


# log field name -> (record attribute, value kind)
FIELDS: dict[str, tuple[str, str]] = {
    "#new-seq": ("num_new_reqs", "int"),
    "#new-token": ("num_new_tokens", "int"),
    "#cached-token": ("num_cached_tokens", "int"),
    "token usage": ("token_usage", "float"),
    "full token usage": ("token_usage", "float"),
    "swa token usage": ("swa_token_usage", "float"),
    "mamba usage": ("mamba_usage", "float"),
    "#running-req": ("num_running_reqs", "int"),
    "#queue-req": ("num_queue_reqs", "int"),
    "#pending-token": ("num_pending_tokens", "int"),
    "#replay-token": ("num_replay_tokens", "int"),
    "#bootstrap-req": ("num_bootstrap_reqs", "int"),
    "#unbootstrapped-req": ("num_bootstrap_reqs", "int"),  # the same PD prefill queues' names in mid-2025
    "#inflight-req": ("num_inflight_reqs", "int"),
    "#transferring-req": ("num_inflight_reqs", "int"),
    "#optimistic-req": ("num_optimistic_reqs", "int"),
    "#prealloc-req": ("num_prealloc_reqs", "int"),
    "#transfer-req": ("num_transfer_reqs", "int"),
    "#retracted-req": ("num_retracted_reqs", "int"),
    "#token": ("num_tokens", "int"),
    "#full token": ("num_tokens", "int"),
    "#swa token": ("num_swa_tokens", "int"),
    "mamba num": ("num_mamba", "int"),
    "accept len": ("accept_len", "float"),
    "accept rate": ("accept_rate", "float"),
    "pre-allocated usage": ("prealloc_usage", "float"),
    "cuda graph": ("graph", "bool"),
    "cpu graph": ("graph", "bool"),
    "npu graph": ("graph", "bool"),
    "musa graph": ("graph", "bool"),
    "input throughput (token/s)": ("input_throughput", "float"),
    "gen throughput (token/s)": ("gen_throughput", "float"),
}
# 0.1.x's names: `new fill batch. #seq: 1. #cached_token: 330. #new_token: 2172. #remaining_req: 57.
# #running_req: 9` (router/model_rpc.py, 0.1.6)
OLD_NAMES = {"#seq": "#new-seq", "#new_token": "#new-token", "#cached_token": "#cached-token",
             "#remaining_req": "#queue-req", "#running_req": "#running-req", "#gpu token": "#token",
             "#gpu-token": "#token", "gpu token usage": "token usage"}
OLD_DECODE_LOG_INTERVAL = 20  # 0.1.x printed its decode line every 20 decode passes (decode_forward_ct >= 20)
REQUIRED = {
    "Prefill": {"num_new_reqs": "#new-seq", "num_new_tokens": "#new-token"},
    "Decode": {"num_running_reqs": "#running-req"},
}
RECORD_TYPES = {"Prefill": PrefillRecord, "Decode": DecodeRecord}
ALLOWED = {kind: frozenset(f.name for f in fields(record)) for kind, record in RECORD_TYPES.items()}


def convert(name: str, raw: str, kind: str) -> int | float | bool:
    """One field's value; a number must be finite and within [0, MAX_VALUE], as every real log's are."""
    try:
        if kind == "bool":
            if raw not in ("True", "False"):
                raise ValueError
            return raw == "True"
        if len(raw) > MAX_DIGITS:
            raise Malformed(f"field '{name}' has a {len(raw)}-character value; {OUT_OF_RANGE}")
        value = int(raw) if kind == "int" else float(raw)
    except ValueError:
        raise Malformed(f"field '{name}' has value '{raw[:40]}', expected {kind}") from None
    if not math.isfinite(value):
        raise Malformed(f"field '{name}' has value '{raw[:40]}', expected a finite number")
    if value < 0:
        raise Malformed(f"field '{name}' has value '{raw[:40]}', expected a number >= 0")
    if value > MAX_VALUE:
        raise Malformed(f"field '{name}' has value '{raw[:40]}'; {OUT_OF_RANGE}")
    return value


def split_fields(body: str, *, cut_ok: bool = False) -> tuple[list[tuple[str, str]], bool]:
    """('name', 'value') pairs; with `cut_ok`, a last piece cut off mid-field (a clipped paste: `#queue-`,
    `#token:`, `...`) is left out and reported as True."""
    pairs, pieces = [], [p.strip().rstrip(",") for p in body.split(", ")]
    pieces = [p for p in pieces if p]
    for index, piece in enumerate(pieces):
        name, sep, raw = piece.partition(": ")
        if not sep and piece.endswith(":"):
            name, sep, raw = piece[:-1], ":", ""
        if not sep or not raw.strip():
            if cut_ok and index == len(pieces) - 1:
                return pairs, True
            raise Malformed(f"'{piece[:40]}' is not a 'name: value' field")
        pairs.append((name.strip(), raw.strip()))
    return pairs, False


def parse_batch(kind: str, body: str, common: dict, *, iteration: str | None = None,
                mixed: str | None = None) -> tuple[PrefillRecord | DecodeRecord, bool]:
    """The record of a Prefill / Decode line, and whether its last field was cut off."""
    allowed = ALLOWED[kind]
    values, extra = {}, {}
    pairs, clipped = split_fields(body, cut_ok=True)
    if mixed:  # 0.2.x: `Prefill batch(mixed #running-req: N). ...`
        pairs.append(("#running-req", mixed))
        extra["mixed"] = "True"
    for name, raw in pairs:
        attr, value_kind = FIELDS.get(OLD_NAMES.get(name, name), (None, ""))
        if attr in allowed and attr not in values:
            values[attr] = convert(name, raw, value_kind)
        else:
            extra[name] = raw
    missing = [REQUIRED[kind][attr] for attr in REQUIRED[kind] if attr not in values]
    if missing:
        raise Malformed(f"{kind} batch line lacks {', '.join(missing)}")
    values["iteration"] = int(iteration) if iteration and iteration.strip().isdigit() else None
    return RECORD_TYPES[kind](**common, **values, extra=extra), clipped


def parse_retraction(message: str, common: dict) -> RetractionRecord:
    lower = message.lower()
    wording = next(w for phrase, w in RETRACT_WORDINGS.items() if phrase in lower)
    values = dict(split_fields(message[message.index("#retracted_reqs") :])[0])
    if "#retracted_reqs" not in values or " -> " not in values.get("#new_token_ratio", ""):
        raise Malformed("retraction line lacks '#retracted_reqs: N' or '#new_token_ratio: a -> b'")
    before, _, after = values["#new_token_ratio"].partition(" -> ")
    gained = values.get("#new_tokens_gained")
    mamba = values.get("#mamba_num_gained")
    return RetractionRecord(
        **common,
        wording=wording,
        num_retracted_reqs=convert("#retracted_reqs", values["#retracted_reqs"], "int"),
        new_token_ratio_before=convert("#new_token_ratio", before, "float"),
        new_token_ratio_after=convert("#new_token_ratio", after, "float"),
        num_new_tokens_gained=None if gained is None else convert("#new_tokens_gained", gained, "int"),
        num_mamba_gained=None if mamba is None else convert("#mamba_num_gained", mamba, "int"),
    )


def is_retraction(message: str) -> bool:
    return "#retracted_reqs" in message and any(phrase in message.lower() for phrase in RETRACT_WORDINGS)


def settings(parsed: ParsedLog) -> dict:
    """The flags that shape scheduling, as resolved: the scheduler startup line wins over server_args."""
    args = parsed.server_args or {}
    found = {key: args[key] for key in SETTING_KEYS if key in args}
    startup = parsed.startup or {}
    renamed = {"max_total_num_tokens": "max_total_tokens"}
    for key in ("max_total_num_tokens", "chunked_prefill_size", "max_prefill_tokens", "max_running_requests"):
        if isinstance(startup.get(key), int):
            found[renamed.get(key, key)] = startup[key]
    return found


# ---- the line loop -------------------------------------------------------------------------------


@dataclass
class Builder:
    """Mutable state of one parse; frozen into a ParsedLog at the end."""

    prefills: list = field(default_factory=list)
    decodes: list = field(default_factory=list)
    retractions: list = field(default_factory=list)
    events: list = field(default_factory=list)
    num_events: int = 0
    server_args: dict | None = None
    startup: dict | None = None
    num_blank: int = 0
    num_unrecognised: int = 0
    unrecognised: list = field(default_factory=list)
    num_malformed: int = 0
    malformed: list = field(default_factory=list)
    num_clipped: int = 0
    clipped: list = field(default_factory=list)
    frames: list = field(default_factory=list)
    old_decode: bool = False
    last_prefix: tuple = (None, None)  # ((prefix text, is a scheduler line), Prefix) of the line before
    num_untimestamped: int = 0
    num_timestamped: int = 0
    ranks: set = field(default_factory=set)
    hints: list = field(default_factory=list)
    formats: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    first_epoch: float | None = None
    first_timestamp: str | None = None
    last_at: float = 0.0
    has_fraction: bool = False
    num_extra_server_args: int = 0
    last_second: tuple | None = None
    last_epoch: float = 0.0
    day_offset: float = 0.0  # time-only stamps: a day is added each time the clock goes back past midnight
    last_raw: float | None = None

    def hint(self, text: str) -> None:
        if text not in self.hints:
            self.hints.append(text)

    def form(self, text: str) -> None:
        if text not in self.formats:
            self.formats.append(text)

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def unrecognised_line(self, line_no: int, line: str) -> None:
        self.num_unrecognised += 1
        if len(self.unrecognised) < MAX_EXAMPLES:
            self.unrecognised.append((line_no, line[:MAX_QUOTE]))

    def malformed_line(self, line_no: int, reason: str) -> None:
        self.num_malformed += 1
        if len(self.malformed) < MAX_EXAMPLES:
            self.malformed.append((line_no, reason))


def read_prefix(builder: Builder | None, prefix: str) -> Prefix:
    """The innermost stamp (SGLang's own; an outer container / journald / kubectl stamp stands before it)
    and the rank tags. A stamp with no date takes the date of an outer one, if any."""
    stamps = list(STAMP.finditer(prefix)) if ":" in prefix else []
    last = stamps[-1] if stamps else None
    date = next((m["date"] for m in reversed(stamps) if m["date"]), None)
    tags: dict[str, str] = {}
    for match in TAG.finditer(prefix):
        name, number = (match[1], match[2]) if match[1] else ("GPU", match[3])
        tags.pop(name, None)
        tags[name] = f"{name}{int(number)}"
    if builder is not None:
        note_prefix(builder, prefix, last, date, tags)
    if last is None:
        return Prefix(date, None, None, " ".join(tags.values()))
    return Prefix(date, last["time"], last["frac"], " ".join(tags.values()))


def note_prefix(builder: Builder, prefix: str, last: re.Match | None, date: str | None, tags: dict) -> None:
    """Name the line format once, for the reader (`ParsedLog.formats`)."""
    if last is None:
        builder.form("tags with no time, e.g. `[TP0] Decode batch`" if tags else "no prefix: bare messages")
    elif date is None:
        builder.form("time-only stamps `[HH:MM:SS TP0]` (0.2.x's format, or a custom one)")
    else:
        builder.form("date-time stamps `[YYYY-MM-DD HH:MM:SS TP0]`")
    if last is not None and last.start() > 0 and prefix[: last.start()].strip(" [|"):
        builder.form("an outer prefix (container, journald, kubectl) before SGLang's own")
    if ".py:" in prefix:
        builder.form("logging with file and line, e.g. `INFO 1234 [DP0 TP0 scheduler_metrics_mixin.py:305]`")
    if "GPU" in tags:
        builder.form("`[gpu_id=N]` before the message (0.1.x)")


def clock(builder: Builder, prefix: Prefix, *, counted: bool = True) -> float:
    """`at` of a line: seconds since the first stamped line; a line with no stamp keeps the last one.

    Time-only stamps (older releases) are read on a day of their own; when the clock goes back by more
    than 12 hours, midnight was crossed and a day is added.
    """
    if prefix.time is None:
        builder.num_untimestamped += counted
        return builder.last_at
    builder.num_timestamped += counted
    second = (prefix.date, prefix.time)
    if second != builder.last_second:  # one date parse per distinct second
        raw = epoch_of(prefix.date or "1970-01-01", prefix.time)
        if prefix.date is None and builder.last_raw is not None and raw < builder.last_raw - 43_200:
            builder.day_offset += 86_400
            builder.warn("time-only stamps: the clock went back past midnight, read as the next day")
        builder.last_raw = raw
        builder.last_second = second
        builder.last_epoch = raw + (builder.day_offset if prefix.date is None else 0)
    epoch = builder.last_epoch + (float("0." + prefix.frac) if prefix.frac else 0.0)
    if builder.first_epoch is None:
        builder.first_epoch = epoch
        builder.first_timestamp = f"{prefix.date or '1970-01-01'} {prefix.time}"
    builder.has_fraction |= bool(prefix.frac)
    builder.last_at = round(epoch - builder.first_epoch, 6)
    return builder.last_at


def read_line(builder: Builder, line_no: int, line: str) -> None:
    if "\x1b" in line:
        line = ANSI.sub("", line)
        builder.form("ANSI colour codes (stripped)")
    found = find_message(line)
    if found is None:
        start = message_start(line)
        if event_kind(line[start:], bare=start == 0) is not None:
            found = ("event", start)
    what, start = found if found else ("", message_start(line))
    scheduler_line = what in ("batch", "fill", "old_decode", "retraction", "event")
    key = (line[:start], bool(what))
    if key != builder.last_prefix[0]:  # a prefix repeats for every line of its second: read it once
        builder.last_prefix = (key, read_prefix(builder if what else None, key[0]))
    prefix = builder.last_prefix[1]
    message = line[start:]
    try:
        at = clock(builder, prefix, counted=scheduler_line)
    except ValueError:
        builder.malformed_line(line_no, f"timestamp '{prefix.date} {prefix.time}' is not a real date")
        return
    if not what:
        builder.unrecognised_line(line_no, line)
        frame = FRAME.search(message) if "File \"" in message else None
        if frame and len(builder.frames) < MAX_FRAMES and frame[1] not in builder.frames:
            builder.frames.append(frame[1])
        return
    common = {"line_no": line_no, "at": at, "rank": prefix.rank, "text": line[:MAX_QUOTE]}
    if what in ("batch", "fill", "old_decode"):
        if what == "batch":
            batch = BATCH_HEADER.match(message)
            if batch is None:
                raise Malformed(f"'{message[:40]}' is not a 'Prefill batch.' / 'Decode batch.' header")
            kind = batch["kind"]
            record, clipped = parse_batch(kind, batch["body"], common, iteration=batch["iter"],
                                          mixed=batch["mixed"])
            note_batch_hints(builder, batch["sep"], record)
        else:
            kind = "Prefill" if what == "fill" else "Decode"
            body = message.removeprefix("new fill batch.").replace(". #", ", #").replace(". ", ", ")
            record, clipped = parse_batch(kind, body, common)
            builder.old_decode |= what == "old_decode"
            builder.hint("0.1.x lines: `new fill batch. #seq: …` and a decode line with no header")
        (builder.prefills if kind == "Prefill" else builder.decodes).append(record)
        builder.ranks.add(prefix.rank)
        if clipped:
            builder.num_clipped += 1
            if len(builder.clipped) < MAX_EXAMPLES:
                builder.clipped.append((line_no, line[:MAX_QUOTE]))
    elif what == "retraction":
        builder.retractions.append(parse_retraction(message, common))
        builder.ranks.add(prefix.rank)
        note_retraction_hint(builder, builder.retractions[-1])
    elif what == "event":
        builder.num_events += 1
        if len(builder.events) < MAX_EVENTS:
            builder.events.append(EventRecord(**common, kind=event_kind(message, bare=start == 0)))
    elif what == "server_args":
        read_server_args(builder, line_no, message[len("server_args=") :].strip())
    elif builder.startup is None:
        builder.startup = parse_startup(message)


def read_server_args(builder: Builder, line_no: int, rest: str) -> None:
    if builder.server_args is not None:
        builder.num_extra_server_args += 1
        return
    if len(rest) > MAX_SERVER_ARGS:
        raise Malformed(f"server_args line has {len(rest):,} characters; the limit is {MAX_SERVER_ARGS:,}")
    args, complete = parse_server_args(rest)
    if not complete:
        builder.warn(f"line {line_no}: server_args looks cut off; read the {len(args)} fields before the cut")
    builder.server_args = args
    builder.hint(
        "startup args as ServerArgs(...) repr (older releases)"
        if rest.startswith("ServerArgs(")
        else "startup args as a server_args={...} dict (0.5.20 and later)"
    )


def note_batch_hints(builder: Builder, sep: str, record: PrefillRecord | DecodeRecord) -> None:
    if sep == ".":
        builder.hint("'Prefill batch.' / 'Decode batch.' with a period (releases up to about 0.5.3)")
    else:
        builder.hint("'Prefill batch,' / 'Decode batch,' with a comma (later 0.5.x)")
    if getattr(record, "num_pending_tokens", None) is not None:
        builder.hint("#pending-token field (later 0.5.x)")
    if record.swa_token_usage is not None:
        builder.hint("hybrid sliding-window KV pool (full / swa token usage)")
    if record.mamba_usage is not None:
        builder.hint("mamba state pool (mamba usage)")
    if getattr(record, "accept_len", None) is not None:
        builder.hint("speculative decoding (accept len)")
    if getattr(record, "num_bootstrap_reqs", None) is not None:
        builder.hint("PD disaggregation, prefill role (#bootstrap-req)")
    if record.num_prealloc_reqs is not None:
        builder.hint("PD disaggregation, decode role (#prealloc-req)")


def note_retraction_hint(builder: Builder, record: RetractionRecord) -> None:
    if record.wording == "decode_oom":
        builder.hint("retraction worded 'Decode out of memory happened' (releases before mid-2025)")
    else:
        builder.hint("retraction worded 'KV cache pool is full. Retract requests.'")


def check_size(text: str, max_bytes: int) -> None:
    size = len(text) if len(text) * 4 <= max_bytes else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InputError(
            "log", f"is {size:,} bytes; the limit is {max_bytes:,}. Paste the part around the stall."
        )
    nul = text.find("\x00", 0, 65536)
    if nul >= 0:
        line_no = text.count("\n", 0, nul) + 1
        raise InputError(
            f"log line {line_no}", "contains NUL bytes: this looks like a binary file, not a text log"
        )


def parse_log(text: str, *, max_bytes: int = 20_000_000, max_lines: int = 500_000) -> ParsedLog:
    """Parse an SGLang server log. Raises InputError only for input that cannot be a text log."""
    if not isinstance(text, str):
        raise InputError("log", f"expected text, got {type(text).__name__}")
    check_size(text, max_bytes)
    lines = text.split("\n", max_lines)  # never more than max_lines + 1 pieces, however many lines
    rest = lines.pop() if len(lines) > max_lines else ""
    if lines and lines[-1] == "" and not rest:
        lines.pop()
    num_not_read = rest.count("\n") + (not rest.endswith("\n")) if rest else 0
    builder = Builder()
    for line_no, line in enumerate(lines, start=1):
        line = line.rstrip("\r")
        if not line.strip():
            builder.num_blank += 1
            continue
        try:
            if len(line) > MAX_LINE:
                raise Malformed(f"the line has {len(line):,} characters; the limit is {MAX_LINE:,}")
            read_line(builder, line_no, line)
        except Malformed as problem:
            last = line_no == len(lines) and not rest and not text.endswith("\n")
            builder.malformed_line(line_no, f"{problem}{' (the last line looks cut off)' if last else ''}")
    if builder.num_extra_server_args:
        builder.warn(
            f"{builder.num_extra_server_args} more server_args line(s) (restarts?); the first one is used"
        )
    if builder.num_clipped:
        first = builder.clipped[0][0]
        builder.warn(f"{builder.num_clipped:,} scheduler line(s) end mid-field (a clipped paste; first: line "
                     f"{first}); each was read up to the cut")
    if num_not_read:
        builder.warn(f"only the first {max_lines:,} lines were read; {num_not_read:,} more were not")
    return freeze(builder, len(lines), num_not_read)


def freeze(builder: Builder, num_lines: int, num_not_read: int) -> ParsedLog:
    return ParsedLog(
        prefills=builder.prefills,
        decodes=builder.decodes,
        retractions=builder.retractions,
        server_args=builder.server_args,
        startup=builder.startup,
        num_server_args_lines=(builder.server_args is not None) + builder.num_extra_server_args,
        num_lines=num_lines,
        num_blank=builder.num_blank,
        num_unrecognised=builder.num_unrecognised,
        unrecognised_examples=builder.unrecognised,
        num_malformed=builder.num_malformed,
        malformed_examples=builder.malformed,
        num_untimestamped=builder.num_untimestamped,
        num_lines_not_read=num_not_read,
        ranks=frozenset(builder.ranks),
        version_hints=builder.hints,
        warnings=builder.warnings,
        first_timestamp=builder.first_timestamp,
        time_resolution_s=0.001 if builder.has_fraction else 1.0,
        events=builder.events,
        num_events=builder.num_events,
        num_clipped=builder.num_clipped,
        clipped_examples=builder.clipped,
        num_timestamped=builder.num_timestamped,
        formats=builder.formats,
        frames=builder.frames,
        default_decode_log_interval=OLD_DECODE_LOG_INTERVAL if builder.old_decode else 40,
    )


def parse_log_file(path: str | Path, *, max_bytes: int = 20_000_000, max_lines: int = 500_000) -> ParsedLog:
    """Read a log file (size checked before reading; bytes that are not UTF-8 are replaced and reported)."""
    text, bad_line = decode(read_capped(path, max_bytes))
    parsed = parse_log(text, max_bytes=max_bytes, max_lines=max_lines)
    if bad_line is not None:
        parsed.warnings.insert(0, f"line {bad_line}: bytes that are not UTF-8 were replaced by �")
    return parsed


def default_rank(parsed: ParsedLog) -> str:
    """The rank the timeline follows by default: all-zero tags (TP0, DP0 TP0, or no tag) with most lines."""
    counts: dict[str, int] = {}
    for record in [*parsed.prefills, *parsed.decodes, *parsed.retractions]:
        counts[record.rank] = counts.get(record.rank, 0) + 1
    if not counts:
        return ""
    pool = [ranks[0] for ranks in followed_ranks(parsed).values()]
    zero = [rank for rank in pool if all(ZERO_TAG.fullmatch(tag) for tag in rank.split())]
    return max(zero or pool, key=lambda rank: (counts[rank], rank == ""))


def scheduler_of(rank: str) -> str:
    """The scheduler a rank's lines come from: its DP and PP tags. TP, EP and CP ranks of one scheduler are
    shards of it (`is_stats_logging_rank` in SGLang 0.5.23 logs from attention-TP rank 0 only; older
    releases and `--enable-metrics-for-all-schedulers` print the same line from every shard)."""
    return " ".join(tag for tag in rank.split() if tag.rstrip("0123456789") in SCHEDULER_TAGS)


def followed_ranks(parsed: ParsedLog) -> dict[str, list[str]]:
    """One entry per scheduler: the rank read for it first (all-zero shard tags, else the most lines), then
    its other shards, whose lines repeat the same passes and are not read."""
    counts: dict[str, int] = {}
    for record in [*parsed.prefills, *parsed.decodes, *parsed.retractions]:
        counts[record.rank] = counts.get(record.rank, 0) + 1
    groups: dict[str, list[str]] = {}
    for rank in counts:
        groups.setdefault(scheduler_of(rank), []).append(rank)

    def order(rank: str) -> tuple:
        shards = [t for t in rank.split() if t.rstrip("0123456789") not in SCHEDULER_TAGS]
        return (not all(ZERO_TAG.fullmatch(t) for t in shards), -counts[rank], rank)

    return {key: sorted(ranks, key=order) for key, ranks in sorted(groups.items())}
