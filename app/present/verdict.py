"""PD against today's engine(s) on the same GPUs, in words: one line per allocation policy, the two waits per
prompt-length bucket (engine_model.pd.verdict). Built once here; the page's PD sections, the PD figure and the
slides print these lines. Pure functions: no Streamlit."""

from __future__ import annotations

from dataclasses import dataclass

from app.charts.words import bucket_words
from app.present.fmt import fmt_seconds
from app.present.numbers import fmt_rate
from engine_model import Verdict

SIDE_WORDS = {"first_token": {"better": "sooner", "worse": "later", "same": "about the same"},
              "pause": {"better": "shorter", "worse": "longer", "same": "about the same"}}


@dataclass(frozen=True)
class Against:
    """What the verdict compares: the GPUs, today's deployment and PD's, in words, and whose numbers."""

    gpus: str  # "8 × H100 SXM 80GB"
    today: str  # "one engine × TP 8"
    pd: str  # "1 prefill × TP 4 + 1 decode × TP 4"
    population: str  # "every request"
    note: str = ""  # when today's GPUs differ from PD's: how the comparison is made equal, or that it is not
    name: str = "today"  # what the side without PD is called: "today", or "without PD" (a preset's case)


def head(against: Against) -> str:
    """The line above the verdicts."""
    said = (f"**On {against.gpus}: PD ({against.pd}) against {against.name} ({against.today})**, per prompt "
            f"length, over {against.population}.")
    return f"{said} {against.note}".rstrip()


def summary_words(verdict: Verdict) -> str:
    """'first token later for every prompt length; pauses shorter for every prompt length'."""
    parts = []
    for wait, noun in (("first_token", "first token"), ("pause", "longest pause")):
        sides = {b.label: getattr(b, wait) for b in verdict.buckets}
        known = {label: s for label, s in sides.items() if s != "unknown"}
        if not known:
            parts.append(f"{noun}: not measured")
            continue
        kinds = set(known.values())
        if len(kinds) == 1:
            every = "every prompt length" if len(known) > 1 else f"prompts {bucket_words(next(iter(known)))}"
            parts.append(f"{noun} {SIDE_WORDS[wait][kinds.pop()]} for {every}")
            continue
        by_side = {}
        for label, s in known.items():
            by_side.setdefault(s, []).append(bucket_words(label))
        parts.append(f"{noun} " + ", ".join(f"{SIDE_WORDS[wait][s]} {' and '.join(labels)}"
                                             for s, labels in by_side.items()))
    return "; ".join(parts)


def bucket_line(bucket, name: str = "today") -> str:
    """'prompts under 8,192 tokens (240): p95 first token 154 s vs 81.8 s today, longest pause 34 ms vs
    92.7 s'."""
    t, p = bucket.today, bucket.pd
    n = (p or t).num_requests
    first = f"p95 first token {fmt_seconds(p and p.ttft_p95)} vs {fmt_seconds(t and t.ttft_p95)} {name}"
    pause = f"longest pause {fmt_seconds(p and p.longest_gap)} vs {fmt_seconds(t and t.longest_gap)}"
    return f"prompts {bucket_words(bucket.label)} tokens ({n:,}): {first}, {pause}"


def line(verdict: Verdict, name: str = "today") -> str:
    """One policy's verdict: the summary, then each bucket, then output throughput; or why it cannot start.
    `name`: what the side without PD is called."""
    policy = f"PD, {verdict.policy}" + (f" with the fix ({verdict.fixed})" if verdict.fixed else "")
    if not verdict.runs:
        return f"**{policy}: cannot start on this layout.** {first_sentence(verdict.refused)}."
    today, pd = verdict.throughput
    buckets = " · ".join(bucket_line(b, name) for b in verdict.buckets)
    return (f"**{policy}: {summary_words(verdict)}.** {buckets} · output {fmt_rate(pd)} vs {fmt_rate(today)} "
            f"tokens/s {name}.")


def first_sentence(text: str) -> str:
    """A refusal's first sentence (its reason), without the fix and notes that follow."""
    return text.split(". ")[0].rstrip(".")


def lines(against: Against, verdicts: list[Verdict]) -> list[str]:
    """The head, then one line per policy."""
    return [head(against), *(line(v, against.name) for v in verdicts)]
