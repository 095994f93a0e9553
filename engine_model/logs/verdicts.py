"""The verdicts beside the stalls: the server crashed or ran out of memory, a reply ran away, the cause is
outside what a scheduler model can see, or the log looks healthy.

Each finding quotes the lines it rests on and says what would contradict it. Tuning advice is given only
where a scheduling cause is in the log, and never advice that feeds the failure shown. The rules and their
thresholds are written out in docs/logs-and-traces.md §5.
"""

from dataclasses import dataclass

from engine_model.logs.parse import DecodeRecord, EventRecord, ParsedLog, PrefillRecord, RetractionRecord

MAX_EVIDENCE = 4
RUNAWAY_TOKENS = 65_536  # KV tokens one request holds beyond the longest prompt the log shows: no reply's
RUNAWAY_MAX_REQS = 16  # "few requests": a runaway reply holds the pool with a handful of requests
EMPTY_KV = 0.05  # token usage at or below this is a near-empty pool
HEALTHY_QUEUE = 4  # requests queued that still look like a healthy server's admission in progress
GRAPH_OFF_MAX_REQS = 8  # any cuda_graph_max_bs SGLang picks covers a batch this small
SLOW_DECODE = 8.0  # tokens/s per request, batch of RUNAWAY_MAX_REQS or fewer: far below any GPU's decode
SLOW_PREFILL = 1_000.0  # prompt tokens/s of a prefill pass alone on an idle server: far below any GPU's
SLOW_PREFILL_S = 30.0  # and only when that pass took this long (stamps are to the second)
# Cited wherever a verdict leans on Decode lines that are not there: SGLang prints a Decode line only when
# its decode-pass counter reaches a multiple of decode_log_interval (default 40):
# `if self.forward_ct_decode % self.decode_log_interval != 0: return` in
# srt/managers/scheduler_components/metrics_reporter.py (0.5.23; scheduler.py's log_decode_stats before).
DECODE_CAVEAT = ("SGLang prints a Decode line only every decode_log_interval decode passes (default 40; its "
                 "scheduler's metrics reporter logs when `forward_ct_decode % decode_log_interval == 0`), so "
                 "no Decode line between Prefill lines is a hint that decode waited, not proof")


@dataclass(frozen=True)
class Fix:
    flag: str
    effect: str


@dataclass(frozen=True)
class Finding:
    kind: str  # one of diagnose.KIND_ORDER, or "healthy"
    severity: str  # "observed": it happened; "latent": the pattern is there but nobody waited on it
    title: str
    explanation: str
    evidence: list[tuple[int, str]]  # (line number, line text)
    fixes: list[Fix]
    contradicts: str = ""  # what, seen in the log or beside it, would say this finding is wrong


Record = PrefillRecord | DecodeRecord | RetractionRecord


def quote(records: list) -> list[tuple[int, str]]:
    if len(records) > MAX_EVIDENCE:
        records = [*records[: MAX_EVIDENCE - 1], records[-1]]
    return [(r.line_no, r.text) for r in records]


# ---- crash or out of memory ------------------------------------------------------------------------


def crash_finding(parsed: ParsedLog) -> Finding | None:
    """The server crashed or ran out of memory: the lines that say so, quoted, and the function it died in."""
    events = [e for e in parsed.events if e.kind in ("crash", "oom")]
    if not events:
        return None
    ooms = [e for e in events if e.kind == "oom"]
    last = telling(events)
    in_retraction = any("retract" in name for name in parsed.frames)
    where = (f" The traceback passes through {', '.join(f for f in parsed.frames if 'retract' in f)}: the "
             "crash is in the retraction path, so nothing that makes retraction more likely (lower "
             "--schedule-conservativeness, more running requests) is offered." if in_retraction else "")
    frames = [f for f in parsed.frames if not f.startswith("_")][-3:]
    frame_text = f" The last frames named: {', '.join(frames)}." if frames and not in_retraction else ""
    more = f" ({parsed.num_events:,} such lines in all)" if parsed.num_events > len(events) else ""
    if ooms:
        title = "The server ran out of memory"
        said = telling(ooms)
        explanation = (f"Line {said.line_no} says so: “{message_of(said)}”{more}.{where}{frame_text} "
                       "Whatever the scheduler lines before it show, this is what stopped the replies.")
        fixes = oom_fixes(ooms, in_retraction)
    else:
        title = "The server crashed"
        explanation = (f"Line {last.line_no}: “{message_of(last)}”{more}.{where}{frame_text} A crash is a "
                       "bug or a broken setup, not a scheduling choice: no flag here is advice for it.")
        fixes = [report_upstream()]
    return Finding("crash_oom", "observed", title, explanation, quote(events), fixes,
                   "A line after it showing the same server serving again (Prefill / Decode lines with no "
                   "restart) would say it survived; a restart's server_args line says it was restarted.")


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def telling(events: list[EventRecord]) -> EventRecord:
    """The line that says most: an exception's own line (`RuntimeError: CUDA error: …`), else the first."""
    return next((e for e in events if "Error:" in e.text or "Exception:" in e.text), events[0])


def message_of(event: EventRecord) -> str:
    text = event.text.strip()
    return text if len(text) <= 200 else text[:200] + "…"


def oom_fixes(ooms: list[EventRecord], in_retraction: bool) -> list[Fix]:
    """For SGLang's own 'Prefill/Decode out of memory' (the KV allocator found no room) or PyTorch's CUDA
    out of memory (activations or graphs beside a KV pool that took too much)."""
    words = " ".join(e.text for e in ooms).lower()
    fixes = []
    if "cuda out of memory" in words or "outofmemoryerror" in words or "tried to allocate" in words:
        fixes += [Fix("--mem-fraction-static (lower)", "a smaller KV pool leaves room for activations and "
                                                         "CUDA graphs, which is what ran out"),
                  Fix("--chunked-prefill-size (smaller)", "smaller prefill passes, less activation memory"),
                  Fix("--cuda-graph-max-bs (lower)", "fewer, smaller captured graphs")]
    if "try to lower your batch size" in words or "alloc" in words or "not enough memory" in words:
        fixes += [Fix("--max-running-requests (lower)", "fewer requests growing in the KV pool at once")]
        if not in_retraction:
            fixes.append(Fix("--schedule-conservativeness (higher)",
                             "admission reserves more room for replies still to grow"))
    return [*fixes, report_upstream()] if fixes else [report_upstream()]


def report_upstream() -> Fix:
    return Fix("report upstream (github.com/sgl-project/sglang/issues)",
               "with the traceback's last lines, the SGLang version, the server_args line and the launch "
               "command")


# ---- outside the model -----------------------------------------------------------------------------


def outside_findings(parsed: ParsedLog, records: list[Record], cap: int | None,
                     interval: int) -> list[Finding]:
    checks = (hang_finding(parsed), bug_finding(parsed), pile_up_finding(records, cap),
              slow_work_finding(records, interval) if parsed.has_times else None)
    return [f for f in checks if f is not None]


def event_finding(parsed: ParsedLog, kind: str, title: str, why: str, fixes: list[Fix],
                  contradicts: str) -> Finding | None:
    """An event line outside the scheduling rules (a bug, a hang), quoted: its first line, why, what to do."""
    events = [e for e in parsed.events if e.kind == kind]
    if not events:
        return None
    return Finding("outside_model", "observed", title,
                   f"Line {events[0].line_no}: “{message_of(events[0])}”. {why}", quote(events), fixes,
                   contradicts)


def bug_finding(parsed: ParsedLog) -> Finding | None:
    """SGLang's own checks reporting a broken invariant (`memory leak detected!`, invariant_checker.py;
    `This should never happen`): a bug, whatever the scheduling lines show."""
    return event_finding(
        parsed, "bug", "SGLang reports an internal error",
        "SGLang's own check found its state broken (a pool that leaked, a case its authors thought "
        "impossible): a bug to report, not a setting to tune.", [report_upstream()],
        "None in the log; the thread or a newer release saying the warning is harmless would.")


def slow_work_finding(records: list[Record], interval: int) -> Finding | None:
    """The GPU work itself is slow: decode passes of a few requests far below any GPU's pace, or a prefill
    pass alone on an idle server that took far longer than its tokens need. The scheduler's choices cannot
    make either slow; a kernel, a backend, offloading or the hardware can."""
    slow = slow_decodes(records)
    prefill = slow_prefill(records, interval)
    if not slow and prefill is None:
        return None
    parts, evidence = [], []
    if slow:
        rates = sorted(r.gen_throughput / r.num_running_reqs for r in slow)
        parts.append(f"{len(slow)} Decode lines with {slow[0].num_running_reqs} running requests and no "
                     f"other line between show about {rates[len(rates) // 2]:.1f} tokens/s per request "
                     f"(below {SLOW_DECODE:g}; a GPU decodes a small batch many times faster)")
        evidence += slow
    if prefill is not None:
        line, after, took = prefill
        parts.append(f"the prefill of {line.num_new_tokens:,} tokens on line {line.line_no}, alone on an "
                     f"idle server, took about {took:.0f} s (line {after.line_no} is the next, with at most "
                     f"one Decode interval of passes since): {line.num_new_tokens / took:,.0f} tokens/s, "
                     f"below {SLOW_PREFILL:,.0f}")
        evidence += [line, after]
    return Finding(
        "outside_model", "observed", "The GPU work itself is slow",
        upper_first("; ".join(parts)) + ". Nothing queued to explain it: the time goes inside the passes, "
        "where this model has no say (a kernel or attention backend, CPU offload, storage I/O, the "
        "hardware).",
        quote(evidence), [report_upstream(),
                          Fix("a profile of one pass (SGLANG_TORCH_PROFILER_DIR, /start_profile)",
                              "which kernel takes the time")],
        "A queue, a retraction or prefill passes between those lines would explain the time within the "
        "scheduler; gen throughput that counts idle time (the first Decode line after a pause) would "
        "understate the pace.")


def slow_decodes(records: list[Record]) -> list[DecodeRecord]:
    """Decode lines right after another Decode line with the same few running requests (so the throughput
    counts no idle time and no prefill), below SLOW_DECODE per request; only when most such lines are."""
    pairs = [b for a, b in zip(records, records[1:], strict=False)
             if isinstance(a, DecodeRecord) and isinstance(b, DecodeRecord) and b.gen_throughput is not None
             and a.num_running_reqs == b.num_running_reqs and 0 < b.num_running_reqs <= RUNAWAY_MAX_REQS
             and not b.num_queue_reqs]
    slow = [r for r in pairs if r.gen_throughput / r.num_running_reqs < SLOW_DECODE]
    return slow if len(slow) >= 2 and len(slow) * 2 > len(pairs) else []


def slow_prefill(records: list[Record], interval: int) -> tuple[PrefillRecord, DecodeRecord, float] | None:
    """A Prefill line on an idle server (nothing running or queued) followed directly by a Decode line of
    just those requests that holds at most one decode interval of tokens beyond the prompt: the time
    between the two is the prefill pass (plus at most `interval` decode passes)."""
    for a, b in zip(records, records[1:], strict=False):
        if not (isinstance(a, PrefillRecord) and isinstance(b, DecodeRecord)) or a.num_running_reqs \
                or a.num_queue_reqs or b.num_running_reqs != a.num_new_reqs or b.num_tokens is None:
            continue
        generated = b.num_tokens - a.num_new_tokens - a.num_cached_tokens
        took = b.at - a.at
        if 0 <= generated <= interval * b.num_running_reqs and took >= SLOW_PREFILL_S \
                and a.num_new_tokens / took < SLOW_PREFILL:
            return a, b, took
    return None


def hang_finding(parsed: ParsedLog) -> Finding | None:
    return event_finding(
        parsed, "hang", "The server reports a hang or a timeout",
        "A watchdog or a collective timing out means a pass never finished (a stuck kernel, a rank that "
        "died, a network fault): outside the scheduling rules this model follows, so no scheduling flag is "
        "advised.",
        [report_upstream(),
         Fix("py-spy dump --pid <scheduler pid>", "where each scheduler process is stuck")],
        "Scheduler lines continuing after it at the same pace would say the server recovered.")


def pile_up_finding(records: list[Record], cap: int | None) -> Finding | None:
    """Requests queued while the KV pool is nearly empty and the running batch is below its cap, on Decode
    lines: decode passes ran, and `get_next_batch_to_run` would have admitted any waiting request that fit,
    so something outside those rules held them."""
    lines = [r for r in records if isinstance(r, DecodeRecord) and (r.num_queue_reqs or 0) > 0
             and r.token_usage is not None and r.token_usage <= EMPTY_KV
             and not (cap and r.num_running_reqs >= cap)]
    if len(lines) < 2:
        return None
    worst = max(lines, key=lambda r: r.num_queue_reqs)
    return Finding(
        "outside_model", "observed", "Requests pile up while the KV pool is nearly empty",
        f"On {len(lines)} Decode lines requests were queued (up to {worst.num_queue_reqs:,}, line "
        f"{worst.line_no}) with token usage at or below {EMPTY_KV} and the running batch below any cap. "
        "SGLang admits a waiting request whenever it fits the pool and the cap, before the next decode "
        "pass, so a queue at an empty pool is held by something outside those rules: a bug, a stuck "
        "transfer (PD), a grammar or LoRA load, a tokenizer or a detokenizer that fell behind. Tuning "
        "admission will not move it.",
        quote(lines), [report_upstream(),
                       Fix("/server_info and py-spy dump", "what the queued requests wait on")],
        "A --max-running-requests cap at the running count, or a PD decode worker waiting on KV transfers "
        "(#transfer-req), would explain the queue within the rules.")


def graph_off_finding(parsed: ParsedLog, records: list[Record], found: dict) -> Finding | None:
    """CUDA graphs off for small decode batches: each decode pass launches every kernel, slow for reasons
    the scheduler does not model."""
    off = [r for r in records if isinstance(r, DecodeRecord) and r.graph is False
           and 0 < r.num_running_reqs <= GRAPH_OFF_MAX_REQS]
    disabled = (parsed.server_args or {}).get("disable_cuda_graph") is True
    if not disabled and len(off) < 2:
        return None
    said = "server_args has disable_cuda_graph=True" if disabled else (
        f"{len(off)} Decode lines with at most {GRAPH_OFF_MAX_REQS} running requests say cuda graph: False")
    return Finding(
        "outside_model", "observed", "CUDA graphs are off for decode",
        f"{said}. Every decode pass then launches its kernels one by one, which slows each token whatever "
        "the scheduler does; the cause (a flag, a capture that failed at startup, a batch above "
        "--cuda-graph-max-bs) is outside this model.",
        quote(off), [Fix("drop --disable-cuda-graph / check the startup's capture lines",
                         "decode passes replay captured graphs")],
        "Decode lines with cuda graph: True for the same batch sizes.")


# ---- runaway output --------------------------------------------------------------------------------


def longest_prompt(records: list[Record]) -> int:
    """The longest single prompt the Prefill lines show: lines of one request with their chunks added up,
    plus what a line left pending with nothing queued (the rest of its own prompt, lines the excerpt may
    not hold)."""
    longest, running = 0, 0
    for r in records:
        if isinstance(r, PrefillRecord) and r.num_new_reqs == 1:
            running += r.num_new_tokens + r.num_cached_tokens
            pending = r.num_pending_tokens if r.num_pending_tokens and not r.num_queue_reqs else 0
            longest = max(longest, running + pending)
        else:
            running = 0
    return longest


def runaway_finding(records: list[Record]) -> Finding | None:
    """A few requests holding far more KV than any prompt the log shows: replies that do not stop.

    On a Decode line `#token` / `#running-req` is what each running request holds; beyond the longest
    prompt seen by RUNAWAY_TOKENS, it is reply. Climbing over Decode lines with the same few requests
    confirms it; with no Prefill line, only that shows it (twice), else the finding stays latent.
    """
    prompt = longest_prompt(records)
    decodes = [r for r in records if isinstance(r, DecodeRecord) and r.num_tokens is not None
               and 0 < r.num_running_reqs <= RUNAWAY_MAX_REQS]
    big = [r for r in decodes if r.num_tokens / r.num_running_reqs - prompt >= RUNAWAY_TOKENS]
    if not big:
        return None
    worst = max(big, key=lambda r: r.num_tokens / r.num_running_reqs)
    per_req = worst.num_tokens / worst.num_running_reqs
    climbing = [b for a, b in zip(records, records[1:], strict=False)  # nothing between: the same requests
                if b in big and isinstance(a, DecodeRecord) and a.num_tokens is not None
                and b.num_running_reqs == a.num_running_reqs and b.num_tokens > a.num_tokens]
    climb_text = (f" #token climbs on {len(climbing)} Decode lines while #running-req stays the same."
                  if climbing else " The log shows no second Decode line to see it climb.")
    seen = any(isinstance(r, PrefillRecord) for r in records)
    shown = seen or len(climbing) >= 2  # the prompts are known, or the same requests are seen growing
    prompt_text = (f"the longest prompt the Prefill lines show is {prompt:,} tokens" if prompt
                   else "no Prefill line shows its prompt, so these may be long prompts"
                   + ("" if shown else ", not replies (latent until a Prefill line shows the prompts, or "
                                       "#token climbs on two Decode lines in a row)"))
    return Finding(
        "runaway_output", "observed" if shown else "latent",
        "A few requests hold far more tokens than any reply should",
        f"Line {worst.line_no}: {worst.num_running_reqs} running request(s) hold {worst.num_tokens:,} KV "
        f"tokens, about {per_req:,.0f} each; {prompt_text}.{climb_text} Replies that long usually never "
        "stopped: no max_tokens on the request, or a stop token the chat template does not emit. They hold "
        "the pool, and whatever waits behind them waits on them, not on a scheduling flag.",
        quote(big), [Fix("max_tokens / max_new_tokens on every request", "a reply cannot outgrow it"),
                     Fix("--context-length (if it was raised)", "the longest a request may grow"),
                     Fix("check the stop tokens (chat template, EOS)", "replies that end where they should")],
        "Prompts that long (a Prefill line with that many #new-token for one request) would make this "
        "prompt, not reply.")


# ---- looks healthy ---------------------------------------------------------------------------------


def small_queue(record: PrefillRecord | DecodeRecord) -> bool:
    """A queue no larger than a quarter of the running batch (or HEALTHY_QUEUE): requests waiting a pass
    or two for admission, as in any busy server."""
    return (record.num_queue_reqs or 0) <= max(HEALTHY_QUEUE, (record.num_running_reqs or 0) / 4)


def is_pd_prefill(parsed: ParsedLog, records: list[Record]) -> bool:
    """A PD prefill worker: it never decodes (its Prefill lines carry the bootstrap / inflight queues)."""
    if (parsed.server_args or {}).get("disaggregation_mode") == "prefill":
        return True
    return any(isinstance(r, PrefillRecord) and (r.num_bootstrap_reqs is not None
                                                 or r.num_inflight_reqs is not None) for r in records)


def healthy_finding(records: list[Record], parsed: ParsedLog | None = None) -> Finding | None:
    """Decode lines that show replies progressing (on a PD prefill worker, which never decodes: Prefill
    lines), and no line with more than a small queue: positive evidence of health (a log with no such line
    shows none)."""
    if any(isinstance(r, RetractionRecord) for r in records):
        return None
    batches = [r for r in records if not isinstance(r, RetractionRecord)]
    if not all(small_queue(r) for r in batches):
        return None
    if parsed is not None and is_pd_prefill(parsed, records) and not any(
            isinstance(r, DecodeRecord) for r in records) and batches:
        return Finding(
            "healthy", "observed", "The log looks healthy (a PD prefill worker)",
            f"{len(batches)} Prefill line(s) of a PD prefill worker, which hands each request to a decode "
            "worker and never decodes itself; none shows more than a small queue, and no retraction, crash "
            "or hang line. The replies' own pace is in the decode workers' logs.",
            quote(batches), [],
            "A queue that grows from line to line, or #bootstrap-req / #inflight-req piling up (the decode "
            "side not taking the requests).")
    decodes = [r for r in records if isinstance(r, DecodeRecord)]
    serving = [r for r in decodes if r.num_running_reqs > 0]
    if not serving:
        return None
    queued = [r for r in decodes if r.num_queue_reqs]
    usage = max((r.token_usage for r in decodes if r.token_usage is not None), default=None)
    usage_text = f", token usage at most {usage:.2f}" if usage is not None else ""
    return Finding(
        "healthy", "observed", "The log looks healthy",
        f"{len(serving)} Decode lines show replies progressing ({min(r.num_running_reqs for r in serving)}–"
        f"{max(r.num_running_reqs for r in serving)} running{usage_text}); {len(queued)} of "
        f"{len(decodes)} show anyone queued; no retraction, crash or hang line. If replies still felt slow, "
        "the pause is outside this excerpt, or between Decode lines (each stands for decode_log_interval "
        "passes), or on the client.",
        quote(serving), [],
        "A queue that grows from line to line, a retraction, or a crash line later in the log"
        + ("; more Decode lines would make it surer (this excerpt has one)." if len(serving) == 1 else "."))
