"""What a PD tour step adds to its narration, read from the runs it leads to (never stated ahead of them):
on the ten o'clock workload, each policy against today's engine on the same GPUs (the section's verdict); on
the upstream replica, which of upstream's four figures the model reproduces. The page's tour, the slides and
their notes print the same sentence. No Streamlit."""

from __future__ import annotations

from collections.abc import Callable

from app.pd import names as state
from app.pd import tables
from app.pd.params import DEFAULTS
from app.pd.presets import baseline, policy_runs, preset_data
from app.present.verdict import summary_words
from engine_model import longest_block as longest
from engine_model import policy_trade

Runs = Callable[[object], object]  # a scenario -> its RunFrames


def layout_values(section: dict | None) -> tuple:
    """(cap, prefill workers, decode workers, worker TP) from the section's settings by URL name."""
    section = {**DEFAULTS, **(section or {})}
    return (section[state.PD_CAP], section[state.PD_PREFILL_WORKERS], section[state.PD_DECODE_WORKERS],
            section[state.PD_TP])


def step_words(preset: str, values: dict, runs: Runs, section: dict | None = None) -> str:
    """The sentence a PD step adds: its deployment named, and what the runs show."""
    data = preset_data(preset, values)
    cap, num_prefill, num_decode, tp = layout_values(section) if preset == "rush" else (0, 1, 1, 0)
    shaped, done, refused = policy_runs(data, cap, num_prefill, num_decode, tp, runs)
    pd = shaped.get("early", shaped.get("prefill_complete"))
    if pd is None:
        return ""
    where = f"{tables.deployment(pd)}, {tables.model_words(pd)}"
    if preset != "rush":
        if len(done) < 2:
            return f"On upstream's deployment ({where}) a policy could not run: the section says why."
        trades = policy_trade(done["early"].summary, done["prefill_complete"].summary)
        said = [f"This step runs upstream's deployment ({where}), not the settings above."]
        same = [f"{t.figure.label.lower()} ({t.words[0]} here, {t.words[1]} upstream)" for t in trades
                if t.matches]
        other = [f"{t.figure.label.lower()} ({t.words[0]} here, {t.words[1]} upstream)" for t in trades
                 if not t.matches]
        if same:
            said.append(f"Reproduced within a factor 2 of upstream's change: {'; '.join(same)}.")
        if other:
            said.append(f"Not reproduced: {'; '.join(other)}.")
        return " ".join(said)
    today_scenario = baseline(data, "today", pd)
    today = runs(today_scenario)
    parts = []
    for policy in tables.POLICIES:
        if policy in done:
            verdict = tables.verdict_of(policy, today, done[policy])
            parts.append(f"PD under {policy}: {summary_words(verdict)}")
        elif policy in refused:
            parts.append(f"PD under {policy} cannot start on this layout ({refused[policy].where})")
    said = (f"Against your engine today on the same GPUs ({tables.gpus(pd)}; PD: {tables.layout(pd)}), "
            + "; ".join(parts) + ".")
    return said + front_end_words(done)


def front_end_words(done: dict) -> str:
    """' Decode never runs a prefill, but ... the decode server was tokenizing ...' where a PD run's longest
    hold-up is its decode server's event loop (engine_model/frontend.py) for 250 ms or more, else ''."""
    block = longest([b for run in done.values() for b in getattr(run, "front_end", ())])
    if block is None or block.seconds < 0.25:
        return ""
    return (" Decode never runs a prefill, but its server still tokenizes every prompt on the loop that "
            f"streams the replies: the longest hold-up, {block.words()}.")
