"""The decision under the cursor: what the iteration did, why, the SGLang function it mirrors, and the
model's own code for that rule ("show the rule"), and what the pass cost (app/story/pass_cost.py)."""

from __future__ import annotations

import textwrap

import streamlit as st

from app.present.fmt import fmt_seconds
from app.story.pass_cost import pass_cost_ui
from app.ui.fold import folded
from engine_model import Scenario, rules_of


def decision_ui(row, scenario: Scenario | None = None) -> None:
    """The decision under the cursor (a row of the iterations frame), and what its pass cost."""
    with st.container(border=True):
        left, right = st.columns([1, 2.2])
        with left:
            st.markdown(_what_ran(row))
        with right:
            st.markdown(f"**Why:** {row['reason'] or '—'}")
            st.markdown(f"**SGLang rule:** `{row['mirrors'] or '—'}`")
        rule_ui(row["mirrors"] or "")  # the container's whole width: lines of code up to 110 characters
        pass_cost_ui(scenario, row)


def _what_ran(row) -> str:
    return (f"**Iteration {int(row['index'])}** · {row['lane']}  \n"
            f"t = {row['start_at']:.3f} s · {row['kind']} · {fmt_seconds(row['duration_s'])}  \n"
            f"{int(row['num_prefill_tokens']):,} prompt tokens, {int(row['num_decode_rows'])} decode rows  \n"
            f"waiting {int(row['num_waiting'])} · running {int(row['num_running'])}  \n"
            f"KV {int(row['kv_used']):,} / {int(row['kv_capacity']):,} slots"
            + (f" · reserved {int(row['kv_reserved']):,}" if row["kv_reserved"] else ""))


def rule_ui(mirrors: str) -> None:
    """One tab per SGLang function in the chain that the model implements, innermost first."""
    found = rules_of(mirrors)
    with folded("Show the rule (the model's own code)", "rule.open") as is_open:
        if not is_open:
            return
        if not found:
            st.caption("No model code is linked to this decision.")
            return
        tabs = st.tabs([r.sglang_name.split(".")[-1] for r in reversed(found)])
        for tab, rule in zip(tabs, reversed(found), strict=True):
            tab.caption(f"SGLang's `{rule.sglang_name}`: the same rule, as this model writes it.")
            # from its own margin (a method); from 1440 px every line fits, narrower the longest wrap
            tab.code(textwrap.dedent(rule.code), language="python", wrap_lines=True)
