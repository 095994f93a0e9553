"""The decision under the cursor: what the iteration did, why, the SGLang function it mirrors, and the
model's own code for that rule ("show the rule")."""

from __future__ import annotations

import streamlit as st

from app.story import rules
from app.ui.fmt import fmt_seconds


def decision_ui(row) -> None:
    """The decision under the cursor (a row of the iterations frame)."""
    with st.container(border=True):
        left, right = st.columns([1, 2.2])
        with left:
            st.markdown(_what_ran(row))
        with right:
            st.markdown(f"**Why:** {row['reason'] or '—'}")
            st.markdown(f"**SGLang rule:** `{row['mirrors'] or '—'}`")
            rule_ui(row["mirrors"] or "")


def _what_ran(row) -> str:
    return (f"**Iteration {int(row['index'])}** · {row['lane']}  \n"
            f"t = {row['start_at']:.3f} s · {row['kind']} · {fmt_seconds(row['duration_s'])}  \n"
            f"{int(row['num_prefill_tokens']):,} prompt tokens, {int(row['num_decode_rows'])} decode rows  \n"
            f"waiting {int(row['num_waiting'])} · running {int(row['num_running'])}  \n"
            f"KV {int(row['kv_used']):,} / {int(row['kv_capacity']):,} slots"
            + (f" · reserved {int(row['kv_reserved']):,}" if row["kv_reserved"] else ""))


def rule_ui(mirrors: str) -> None:
    """One tab per SGLang function in the chain that the model implements, innermost first."""
    names = [n for n in rules.chain(mirrors) if rules.source(n) is not None]
    with st.expander("Show the rule (the model's own code)"):
        if not names:
            st.caption("No model code is linked to this decision.")
            return
        tabs = st.tabs([n.split(".")[-1] for n in reversed(names)])
        for tab, name in zip(tabs, reversed(names), strict=True):
            qualname, code = rules.source(name)
            tab.caption(f"SGLang `{name}` → model `{qualname}`")
            tab.code(code, language="python")
