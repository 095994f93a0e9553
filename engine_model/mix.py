"""A request mix, as a sales engineer describes a buyer's traffic: named groups, each a share of the requests
with a prompt-length and a reply-length range, and one arrival pattern for all of them. It becomes an
ordinary scenario workload (`mix_workload`), so every page, export and search that takes a Scenario follows
it. Also: the presets people recognise, the mix in words, the rate a deployment sustains (said before the
run), and a compact text for a link (`encode` / `decode`).

A length range reads three ways: "fixed" (the low end; the high end is ignored), "uniform" (every length
from low to high equally likely) or "lognormal" (most lengths near the geometric middle, low and high its 5th
and 95th percentiles; draws outside them are redrawn, as engine_model.workload does).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import random
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from engine_model.config import MAX_TOKENS, Frozen, Scenario
from engine_model.cost import PassShape, attn_pairs, cost_of
from engine_model.errors import InputError
from engine_model.resolve import resolve

MAX_MIX_REQUESTS = 5000  # a mix on a page runs in seconds; a bigger one belongs in a trace file
MAX_GROUPS = 8
MAX_LINK_CHARS = 1500  # a custom mix's text in a link; past it the page says the link is too long
Z95 = 1.6448536269514722  # the standard normal's 95th percentile: lognormal low / high are its 5th / 95th
SHAPES = ("fixed", "uniform", "lognormal")
ARRIVALS = ("poisson", "burst", "closed")
ARRIVAL_WORDS = {"poisson": "Poisson arrivals at a rate", "burst": "all at once (a burst)",
                 "closed": "closed loop: a fixed number of clients, each sends its next on a finish"}
MID_REPLY_TOKENS = 120  # a mid-reply group's tokens already written when the run starts (as forty replies)


class MixGroup(Frozen):
    """One kind of request in the mix."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,40}$")
    share: float = Field(gt=0, le=1)  # of the mix's requests (shares are scaled to sum to 1)
    shape: Literal["fixed", "uniform", "lognormal"] = "uniform"
    prompt_low: int = Field(ge=1, le=MAX_TOKENS)
    prompt_high: int = Field(ge=1, le=MAX_TOKENS)
    output_low: int = Field(ge=2, le=MAX_TOKENS)
    output_high: int = Field(ge=2, le=MAX_TOKENS)
    mid_reply: bool = False  # already streaming when the run starts (arrives at 0 with tokens written)
    logprobs: float = Field(0.0, ge=0, le=1)  # the share of its requests that ask for logprobs

    @model_validator(mode="after")
    def _ranges(self) -> MixGroup:
        for what in ("prompt", "output"):
            low, high = getattr(self, f"{what}_low"), getattr(self, f"{what}_high")
            if self.shape != "fixed" and high < low:
                raise ValueError(f"{what}_high ({high:,}) must be at least {what}_low ({low:,})")
        return self

    @property
    def mean_prompt(self) -> float:
        return _mean(self.shape, self.prompt_low, self.prompt_high)


class RequestMix(Frozen):
    """The whole mix: its groups, how many requests, and how they arrive."""

    groups: list[MixGroup] = Field(min_length=1, max_length=MAX_GROUPS)
    requests: int = Field(200, ge=1, le=MAX_MIX_REQUESTS)
    arrival: Literal["poisson", "burst", "closed"] = "poisson"
    rate: float = Field(2.0, gt=0, le=10_000)  # requests per second, all groups together (poisson)
    concurrency: int = Field(16, ge=1, le=10_000)  # clients (closed)

    @model_validator(mode="after")
    def _names(self) -> RequestMix:
        names = [g.name for g in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"group names must differ: {', '.join(names)}")
        return self

    def counts(self) -> list[int]:
        """Each group's request count: its share of `requests`, rounded so they add up (largest remainder),
        at least one each."""
        total = sum(g.share for g in self.groups)
        exact = [g.share / total * self.requests for g in self.groups]
        counts = [max(1, math.floor(x)) for x in exact]
        order = sorted(range(len(exact)), key=lambda i: counts[i] - exact[i])
        for i in order[: max(0, self.requests - sum(counts))]:
            counts[i] += 1
        return counts


@dataclass(frozen=True)
class Preset:
    key: str
    label: str
    about: str  # one line: what it is and that its numbers are assumptions
    mix: RequestMix


def _group(name, share, shape, prompt, output, **more) -> MixGroup:
    return MixGroup(name=name, share=share, shape=shape, prompt_low=prompt[0], prompt_high=prompt[1],
                    output_low=output[0], output_high=output[1], **more)


ASSUMED = "Numbers are assumptions, not measurements: edit them to the buyer's."
MIX_PRESETS: dict[str, Preset] = {p.key: p for p in (
    Preset("support", "Support assistant",
           "97 % chats of 1–4k tokens, 3 % pasted documents of 60–120k; 3 requests/s. " + ASSUMED,
           RequestMix(groups=[_group("chats", 0.97, "uniform", (1000, 4000), (100, 600)),
                              _group("documents", 0.03, "uniform", (60000, 120000), (300, 1000))],
                      requests=300, arrival="poisson", rate=3.0)),
    Preset("rag", "RAG",
           "Every prompt 4–8k tokens of retrieved context, answers of 200–500; 4 requests/s. " + ASSUMED,
           RequestMix(groups=[_group("rag", 1.0, "uniform", (4000, 8000), (200, 500))],
                      requests=240, arrival="poisson", rate=4.0)),
    Preset("summarise", "Batch summarisation",
           "Long documents of 8–32k tokens, summaries of 300–800, 16 clients in a closed loop. " + ASSUMED,
           RequestMix(groups=[_group("documents", 1.0, "lognormal", (8000, 32000), (300, 800))],
                      requests=96, arrival="closed", concurrency=16)),
    Preset("coding", "Coding assistant",
           "80 % completions (1.5–6k tokens of code in, 20–200 out), 20 % chat edits (8–30k in, "
           "300–1.5k out); 2 requests/s. " + ASSUMED,
           RequestMix(groups=[_group("completions", 0.8, "lognormal", (1500, 6000), (20, 200)),
                              _group("edits", 0.2, "lognormal", (8000, 30000), (300, 1500))],
                      requests=240, arrival="poisson", rate=2.0)),
)}


def refuse(err: ValidationError, where: str = "mix") -> InputError:
    """A pydantic error as the project's one error: the field and what is allowed."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    return InputError(f"{where}.{loc}" if loc else where, first["msg"].removeprefix("Value error, "))


def checked(data: dict) -> RequestMix:
    try:
        return RequestMix.model_validate(data)
    except ValidationError as err:
        raise refuse(err) from None


# -- into a scenario -------------------------------------------------------------------------------
def _length(shape: str, low: int, high: int) -> int | dict:
    if shape == "fixed" or low == high:
        return low
    if shape == "uniform":
        return {"dist": "uniform", "low": low, "high": high}
    return {"dist": "lognormal", "median": round(math.sqrt(low * high)),
            "sigma": max(math.log(high / low) / (2 * Z95), 1e-3), "low": low, "high": high}


CLIENT = "clients"  # the closed loop's one client pool


def mix_workload(mix: RequestMix) -> dict:
    """The mix as a scenario's `workload` table: one group per mix group, counts by share. Poisson: each
    group its share of the rate (independent Poisson streams add up to one at the whole rate); a burst:
    every request at 0; closed: one client pool of `concurrency`, the groups shuffled by the seed. A
    mid-reply group arrives at 0 with MID_REPLY_TOKENS already written, whatever the pattern."""
    total = sum(g.share for g in mix.groups)
    groups = []
    for g, count in zip(mix.groups, mix.counts(), strict=True):
        output = _length(g.shape, g.output_low, g.output_high)
        out_low = g.output_low if g.shape == "fixed" else min(g.output_low, g.output_high)
        data = {"name": g.name, "count": count, "prompt_len": _length(g.shape, g.prompt_low, g.prompt_high),
                "output_len": output, "num_return_logprob": round(g.logprobs * count)}
        if g.mid_reply:
            data["already_generated"] = max(1, min(MID_REPLY_TOKENS, out_low - 1))
            data["arrival"] = {"kind": "at", "start_at": 0.0}
        elif mix.arrival == "poisson":
            data["arrival"] = {"kind": "poisson", "rate_per_s": mix.rate * g.share / total}
        elif mix.arrival == "burst":
            data["arrival"] = {"kind": "at", "start_at": 0.0}
        else:
            data["arrival"] = {"kind": "closed", "client": CLIENT}
        groups.append(data)
    work: dict = {"groups": groups}
    if mix.arrival == "closed" and any(not g.mid_reply for g in mix.groups):
        work["clients"] = [{"name": CLIENT, "concurrency": mix.concurrency}]
    return work


def apply_mix(data: dict, mix: RequestMix) -> None:
    """Replace a scenario dict's workload by the mix's (the story's own groups, requests and trace go)."""
    data["workload"] = mix_workload(mix)


def on_mix(scenario: Scenario, text: str | None, where: str = "--mix") -> Scenario:
    """The scenario with its workload replaced by a mix given as link text (a preset's key, or `c.…` as the
    app's link carries it); unchanged for None or "". The CLI's `--mix` and the advisor's page take this."""
    if not text:
        return scenario
    try:
        mix = decode(text)
    except ValueError as err:
        raise InputError(where, str(err)) from None
    data = scenario.model_dump(mode="json")
    apply_mix(data, mix)
    return Scenario.model_validate(data)


# -- in words --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GroupShare:
    name: str
    count: int
    request_share: float
    prompt_share: float  # of all prompt tokens, in the sampled requests
    mean_prompt: float
    mean_output: float


def sampled(mix: RequestMix, seed: int) -> list[GroupShare]:
    """Each group's share of the requests and of the prompt tokens, counted over the requests the run draws
    for this seed (the same draws: engine_model.workload with the scenario's seed)."""
    from engine_model.config import WorkloadConfig
    from engine_model.workload import build

    work = build(WorkloadConfig.model_validate(mix_workload(mix)), random.Random(seed),
                 max_requests=MAX_MIX_REQUESTS + MAX_GROUPS)  # each group one request at least
    reqs = work.open_loop + [r for pool in work.pools for r in pool.queue]
    total_prompt = sum(r.prompt_len for r in reqs)
    out = []
    for g in mix.groups:
        mine = [r for r in reqs if r.group == g.name]
        tokens = sum(r.prompt_len for r in mine)
        out.append(GroupShare(g.name, len(mine), len(mine) / len(reqs), tokens / total_prompt,
                              tokens / len(mine), sum(r.output_len for r in mine) / len(mine)))
    return out


def jsonl(mix: RequestMix, seed: int) -> str:
    """The mix's requests for this seed as a JSON Lines trace (arrival_at, prompt_len, output_len), for the
    trace view; a closed loop has no arrival times to write (they follow its finishes): refused."""
    if mix.arrival == "closed":
        raise InputError("mix.arrival", "a closed loop's arrivals follow its finishes, so it has no trace to "
                                        "write: pick Poisson or a burst")
    from engine_model.config import WorkloadConfig
    from engine_model.workload import build

    work = build(WorkloadConfig.model_validate(mix_workload(mix)), random.Random(seed),
                 max_requests=MAX_MIX_REQUESTS + MAX_GROUPS)
    return "".join(json.dumps({"arrival_at": round(r.arrival_at, 6), "prompt_len": r.prompt_len,
                               "output_len": r.output_len}) + "\n" for r in work.open_loop)


def pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 or x == 0 else f"{x:.1%}"


def mix_words(mix: RequestMix, seed: int = 0) -> str:
    """"3 % of requests carry 54 % of prompt tokens", for the group whose prompt share most exceeds its
    request share, from the requests drawn for this seed (said so), and how they arrive."""
    shares = sampled(mix, seed)
    n = sum(s.count for s in shares)
    heavy = max(shares, key=lambda s: s.prompt_share - s.request_share)
    if len(shares) == 1:
        head = (f"{n:,} requests of one kind ({heavy.name}): prompts average {heavy.mean_prompt:,.0f} "
                f"tokens, replies {heavy.mean_output:,.0f}.")
    else:
        head = (f"{pct(heavy.request_share)} of requests ({heavy.name}) carry {pct(heavy.prompt_share)} of "
                f"prompt tokens: {heavy.mean_prompt:,.0f} tokens on average against "
                + ", ".join(f"{s.mean_prompt:,.0f} ({s.name})" for s in shares if s is not heavy) + ".")
    return f"{head} {arrival_words(mix)} Counted over the {n:,} requests drawn for seed {seed}."


def arrival_words(mix: RequestMix) -> str:
    if mix.arrival == "poisson":
        return f"They arrive at random, {mix.rate:g} a second on average."
    if mix.arrival == "burst":
        return "They all arrive at once."
    return f"{mix.concurrency} clients keep one request each in flight."


# -- the rate a deployment sustains ----------------------------------------------------------------
@dataclass(frozen=True)
class Sustain:
    rate_per_s: float  # requests per second the deployment keeps up with, all engines
    batch: int  # the decode batch assumed
    prefill_s: float  # mean GPU seconds of prefill per request
    decode_s: float  # mean GPU seconds of decode per request, its share of batched steps

    def words(self, mix: RequestMix) -> str:
        """The sentence said before the run."""
        how = (f"an estimate from the cost model: each request's prefill ({self.prefill_s * 1e3:,.0f} ms on "
               f"average) plus its reply's share of decode steps at a batch of {self.batch} "
               f"({self.decode_s * 1e3:,.0f} ms)")
        if mix.arrival == "poisson":
            if mix.rate > self.rate_per_s:
                return (f"At {mix.rate:g} requests/s this deployment cannot keep up; it sustains "
                        f"~{self.rate_per_s:.2g} ({how}). The queue grows for as long as the arrivals last.")
            return (f"At {mix.rate:g} requests/s this deployment keeps up: it sustains "
                    f"~{self.rate_per_s:.2g} ({how}), so the load is "
                    f"{mix.rate / self.rate_per_s:.0%} of that.")
        if mix.arrival == "burst":
            return (f"All {mix.requests:,} arrive at once; at ~{self.rate_per_s:.2g} requests/s ({how}) the "
                    f"last is served about {mix.requests / self.rate_per_s:,.0f} s later.")
        return (f"{mix.concurrency} clients send as fast as replies finish; the deployment serves at most "
                f"~{self.rate_per_s:.2g} requests/s ({how}).")


def sustain(scenario: Scenario, mix: RequestMix) -> Sustain:
    """How many requests a second this deployment keeps up with on this mix, before any run: per request,
    its prefill (in chunks of the resolved chunk size, each chunk attending to the ones before) plus its
    reply's tokens at 1/B of a decode step, B the batch the KV pool and max_running_requests allow (at most
    256); times the data-parallel engines. A PD scenario: its engine.dp_size as one engine (rough)."""
    res = resolve(scenario)
    cost = cost_of(scenario)
    total = sum(g.share for g in mix.groups)
    chunk = res.chunked_prefill_size or MAX_TOKENS
    held, prefill, outputs = 0.0, 0.0, 0.0
    for g in mix.groups:
        w = g.share / total
        prompt = _mean(g.shape, g.prompt_low, g.prompt_high)
        output = _mean(g.shape, g.output_low, g.output_high)
        prefill += w * _prefill_seconds(cost, round(prompt), chunk)
        outputs += w * output
        held += w * output * (prompt + output / 2)  # its KV, for as many decode steps as its reply is long
    mean_ctx = held / outputs  # the KV of a running request, weighted by how long each kind stays running
    batch = max(1, min(res.max_running_requests, int(res.max_total_tokens // max(mean_ctx, 1)), 256))
    ctx = round(mean_ctx)
    step = cost.seconds(PassShape(batch, batch, batch, batch * ctx, batch * attn_pairs(1, ctx)))
    decode = outputs * step / batch
    return Sustain(scenario.engine.dp_size / (prefill + decode), batch, prefill, decode)


def _mean(shape: str, low: int, high: int) -> float:
    if shape == "fixed" or low == high:
        return float(low)
    if shape == "uniform":
        return (low + high) / 2
    # a lognormal cut at its 5th and 95th percentiles: the mean of the middle 90 %
    mu, sigma = math.log(math.sqrt(low * high)), math.log(high / low) / (2 * Z95)
    phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    return math.exp(mu + sigma**2 / 2) * (phi(Z95 - sigma) - phi(-Z95 - sigma)) / 0.9


def _prefill_seconds(cost, prompt: int, chunk: int) -> float:
    seconds, done = 0.0, 0
    while done < prompt:
        n = min(chunk, prompt - done)
        seconds += cost.seconds(PassShape(1, 0, n, done, attn_pairs(n, done)))
        done += n
    return seconds


# -- in a link -------------------------------------------------------------------------------------
FIELDS = ("name", "share", "shape", "prompt_low", "prompt_high", "output_low", "output_high", "mid_reply",
          "logprobs")


def encode(mix: RequestMix) -> str:
    """The mix as link text: a preset's key when it is one, else "c." + base64url of compact JSON."""
    for key, preset in MIX_PRESETS.items():
        if preset.mix == mix:
            return key
    body = {"n": mix.requests, "a": mix.arrival, "r": mix.rate, "c": mix.concurrency,
            "g": [[getattr(g, f) for f in FIELDS] for g in mix.groups]}
    text = json.dumps(body, separators=(",", ":"))
    return "c." + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode(text: str) -> RequestMix:
    """Link text back to a mix; ValueError saying what is allowed (a preset key or a custom mix's text)."""
    text = text.strip()
    if text in MIX_PRESETS:
        return MIX_PRESETS[text].mix
    allowed = f"expected a preset ({', '.join(MIX_PRESETS)}) or a custom mix's text (c.…)"
    if not text.startswith("c.") or len(text) > MAX_LINK_CHARS:
        raise ValueError(allowed if len(text) <= MAX_LINK_CHARS else
                         f"a custom mix's text is at most {MAX_LINK_CHARS:,} characters")
    try:
        raw = base64.urlsafe_b64decode(text[2:] + "=" * (-len(text[2:]) % 4))
        body = json.loads(raw)
        groups = [dict(zip(FIELDS, row, strict=True)) for row in body["g"]]
        data = {"groups": groups, "requests": body["n"], "arrival": body["a"], "rate": body["r"],
                "concurrency": body["c"]}
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ValueError(allowed) from None
    try:
        return RequestMix.model_validate(data)
    except ValidationError as err:
        raise ValueError(str(refuse(err))) from None


def label(text: str) -> str:
    """A mix's link text in a few words for a settings line: the preset's name, or the custom mix's groups."""
    if not text:
        return "the story's own"
    if text in MIX_PRESETS:
        return MIX_PRESETS[text].label.lower()
    try:
        mix = decode(text)
    except ValueError:
        return "a mix that cannot be read"
    return f"custom: {', '.join(g.name for g in mix.groups)}, {mix.requests:,} requests"
