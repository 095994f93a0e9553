"""How a log line is recognised: where its message starts, what stands before it (stamp, rank tags), and
whether it says the server crashed, ran out of memory, hung or hit a bug.

The formats are every release's, read in the PyPI wheels (docs/logs-and-traces.md §1). Every pattern here
is bounded (a prefix of MAX_PREFIX characters, EVENT_SEARCH for the wordings), so no line costs more than a
few hundred characters' work.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime

MAX_PREFIX = 400  # characters before a message: SGLang's prefix inside a container / journald / kubectl one
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
STAMP = re.compile(
    r"(?<![\d:])(?:(?P<date>\d{4}[-/]\d{2}[-/]\d{2})[ T])?(?P<time>\d{2}:\d{2}:\d{2})"
    r"(?:[.,](?P<frac>\d{1,9}))?(?![\d:])"
)
TAG = re.compile(r"\b(DP|PP|ATTN_CP|MOE_DP|ATTN_DP|ATTN_TP|TP|EP|CP)(\d{1,5})\b|\bgpu_id=(\d{1,5})\b")
SCHEDULER_TAGS = frozenset({"DP", "PP", "ATTN_DP"})  # each has its own scheduler; TP, EP, CP tags are shards
BATCH_HEADER = re.compile(
    r"(?P<kind>Prefill|Decode) batch"
    r"(?: ?\[(?P<iter>[^\]]{0,20})\]|\(mixed #running-req: (?P<mixed>\d{1,9})\))?"
    r"(?P<sep>[.,]) ?(?P<body>.*)$"
)
RETRACT_WORDINGS = {"decode out of memory happened": "decode_oom", "kv cache pool is full": "kv_pool_full"}
MAX_EVENTS = 50  # crash, out-of-memory and hang lines kept for quoting; the rest are counted
EVENT_SEARCH = 500  # characters of a line searched for a crash, out-of-memory or hang wording
# (kind, wording) in the order they are tried, on the line in lower case; the wordings are SGLang's own
# (scheduler.py `Scheduler hit an exception`, schedule_batch.py / allocation.py `Prefill out of memory. Try
# to lower your batch size.`, invariant_checker.py `memory leak detected!`, watchdog.py `watchdog timeout`,
# `Scheduler debug info:`) and PyTorch's / NCCL's, which land in the same stdout.
EVENTS = (
    ("oom", re.compile(r"out of memory|outofmemoryerror|\boom\b|not enough memory")),
    ("bug", re.compile(r"leak detected|should never happen")),
    ("hang", re.compile(r"watchdog (?:timeout|caught)|scheduler debug info:|"
                        r"(?:collective|operation|nccl)\b.{0,80}time(?:d )?out|"
                        r"timed out|health check failed|not responding|hang detected|is stuck")),
    ("crash", re.compile(r"hit an exception|traceback \(most recent call last\)|received sigquit|core dumped|"
                         r"segmentation fault|illegal memory access|cuda error|device-side assert|"
                         r"unexpectedly failed")),
)
EXCEPTION_LINE = re.compile(r"[\w.]{0,120}(?:Error|Exception)(?::|$)")  # a traceback's last line


@dataclass(frozen=True)
class Prefix:
    """What stands before a message: SGLang's `[date time DPn TPn]`, and any outer prefix around it."""

    date: str | None
    time: str | None
    frac: str | None
    rank: str


def epoch_of(date: str, time: str) -> float:
    """Seconds since 1970 of a stamp (read as UTC: only differences matter)."""
    return datetime.fromisoformat(f"{date.replace('/', '-')}T{time}").replace(tzinfo=UTC).timestamp()


def find_message(line: str) -> tuple[str, int] | None:
    """(what the line is, where its message starts) for a line the parser reads, else None."""
    head = line[: MAX_PREFIX + 20]
    for word in ("Prefill batch", "Decode batch"):
        at = head.find(word)
        if at >= 0:
            return "batch", at
    at = head.find("new fill batch")
    if at >= 0:
        return "fill", at
    at = head.find("#running-req: ")  # 0.1.x's decode line had no header
    if at >= 0 and "#token: " in line and "batch" not in head[:at]:
        return "old_decode", at
    if "#retracted_reqs" in line:
        lower = head.lower()
        at = min((i for i in (lower.find(p) for p in RETRACT_WORDINGS) if i >= 0), default=-1)
        if at >= 0 and "#retracted_reqs" in line[at:]:
            return "retraction", at
    for kind, word in (("server_args", "server_args="), ("startup", "max_total_num_tokens=")):
        at = head.find(word)
        if at >= 0:
            return kind, at
    return None


FRAME = re.compile(r'File "[^"]{0,300}", line \d+, in (\w{1,80})')  # a traceback's frame line
MAX_FRAMES = 200
KILLED = re.compile(r"exit ?code[ =]?-?(?:9|15)\b")  # SIGKILL / SIGTERM: someone stopped the server


def event_kind(message: str, bare: bool = True) -> str | None:
    """"oom", "bug", "hang" or "crash" for a line that says so, else None. An exception's last line
    (`RuntimeError: …`) counts only `bare`, with no logging prefix: a traceback's lines are printed so, while
    a logged `ValueError: …` is a request turned away."""
    text = message[:EVENT_SEARCH].lower()
    if "unexpectedly failed" in text and KILLED.search(text):
        return None  # a child killed by signal 9 or 15 as the server is stopped (the docs' notebooks end so)
    found = next((kind for kind, wording in EVENTS if wording.search(text)), None)
    return found or ("crash" if bare and EXCEPTION_LINE.match(message[:EVENT_SEARCH].lstrip()) else None)


def message_start(line: str) -> int:
    """Where the message of an unrecognised line starts: after SGLang's bracketed prefix, if there is one."""
    close = line.find("] ", 0, MAX_PREFIX)
    while close >= 0:
        nxt = line.find("] ", close + 2, MAX_PREFIX)
        if nxt < 0 or "[" not in line[close + 2 : nxt]:
            break
        close = nxt
    return close + 2 if close >= 0 else 0
