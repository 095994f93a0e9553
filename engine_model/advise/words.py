"""The advice in words, built once: the CLI prints these lines and the page shows them. Every number is read
from the runs (an `Advice`); a wait within 5 % of today's is "about the same" (pd.verdict.SAME)."""

from __future__ import annotations

from engine_model.advise.evaluate import Outcome
from engine_model.advise.search import Advice, complete
from engine_model.advise.targets import WAITS, seconds
from engine_model.pd.verdict import side


def signed(diff: float) -> str:
    return ("+" if diff > 0 else "−" if diff < 0 else "±") + seconds(abs(diff))


def change(before: float | None, after: float | None) -> str:
    """'49.1 s → 1.1 s (−48.0 s)'."""
    if before is None or after is None:
        return f"{seconds(before)} → {seconds(after)}"
    return f"{seconds(before)} → {seconds(after)} ({signed(after - before)})"


def output_words(o: Outcome) -> str:
    return "—" if o.output_per_gpu is None else f"{o.output_per_gpu:,.1f} output tokens/s per GPU"


def why_not(o: Outcome) -> str:
    """Why a candidate is never proposed, in one clause (empty when it ran to the end)."""
    if o.refused:
        return f"SGLang would refuse it: {o.refused}"
    if o.cut_off:
        return f"the run stopped: {o.cut_off}"
    if o.unfinished:
        return f"{o.unfinished:,} request(s) did not finish"
    return ""


def headline(advice: Advice) -> str:
    """The recommendation in one sentence."""
    today = advice.today
    pick = advice.best or advice.closest
    on = f"on {advice.budget.words}"
    if pick is None:
        return (
            f"No candidate {on} ran every request to the end; {len(advice.refused):,} of "
            f"{len(advice.outcomes):,} were refused. Nothing to recommend."
        )
    if advice.best is None:
        missed = [
            t.words for t in advice.targets if (v := pick.wait(t.group, t.wait)) is None or v > t.limit_s
        ]
        return (
            f"No setting {on} meets every target ({len(advice.ran):,} ran). Closest: {pick.candidate.words} "
            f"— {output_words(pick)}; it misses {'; '.join(missed)}."
        )
    gain = ""
    if complete(today) and today.output_per_gpu:
        ratio = pick.output_per_gpu / today.output_per_gpu - 1
        gain = f" (today {today.output_per_gpu:,.1f}, {100 * ratio:+.0f} %)"
    met = "every target" if advice.targets else "no target given, so the most output"
    return f"Set {pick.candidate.words} {on}: it meets {met} with {output_words(pick)}{gain}."


def trade_lines(advice: Advice) -> list[str]:
    """Who waits more and who waits less than today, by how much, group by group."""
    pick = advice.best or advice.closest
    today = advice.today
    if pick is None:
        return []
    if not complete(today):
        return [f"Today's setting ({today.candidate.words}) cannot be compared: {why_not(today)}."]
    if pick.key == today.key:
        return ["It is today's setting: nobody waits more or less."]
    more, less, same = [], [], []
    for group in advice.groups:
        for wait, (_, _, noun) in WAITS.items():
            a, b = today.wait(group, wait), pick.wait(group, wait)
            way = side(a, b)
            said = (
                f"{group}' {noun} {change(a, b)}"
                if group.endswith("s")
                else f"{group}'s {noun} {change(a, b)}"
            )
            {"worse": more, "better": less, "same": same}.get(way, same).append(said)
    lines = [f"Against today ({today.candidate.words}):"]
    lines.append(
        "Who waits more: " + ("; ".join(more) if more else "nobody — no wait is longer than today's") + "."
    )
    if less:
        lines.append("Who waits less: " + "; ".join(less) + ".")
    if same:
        lines.append("About the same (within 5 %): " + "; ".join(same) + ".")
    return lines


def counts_line(advice: Advice) -> str:
    crashed = sum(1 for o in advice.outcomes if o.runs and not complete(o))
    return (
        f"{len(advice.outcomes):,} candidates ({advice.method}, of {advice.space_size:,} in the space, seed "
        f"{advice.seed}): {len(advice.ran) - crashed:,} ran to the end, {crashed:,} stopped or left requests "
        f"unfinished, {len(advice.refused):,} refused by SGLang's start-up checks (never proposed)."
    )
