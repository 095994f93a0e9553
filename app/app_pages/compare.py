"""Compare: any two configurations of any story on the same seed, and a sweep drawn as a trade-off curve."""

import streamlit as st

from app import compare_ui as ui
from app import state
from app.widgets import simplifications_ui

st.title(":material/compare_arrows: Compare and sweep")
st.markdown("Two configurations of one story, same workload, same seed. A starts at SGLang's defaults; "
            "B starts with mixed chunk on. Change either.")
story = ui.story_ui()
a, b, shared = ui.configurations_ui(story)
run_a, run_b, scenario_b = ui.run_pair(story, a, b, shared)
ui.headline_pair_ui(story, run_a, run_b)
with st.expander("Every group, p50 / p95 / p99 / max, A vs B", expanded=True):
    st.dataframe(ui.delta_table(run_a, run_b), hide_index=True, width="stretch")
ui.side_by_side_ui(story, run_a, run_b)
ui.sweep_ui(story, b, shared, run_b)
simplifications_ui()
values = {**{f"a_{k}": v for k, v in a.items()}, **{f"b_{k}": v for k, v in b.items()}, **shared}
state.write_url(ui.all_controls(story), values, {"story": story.key if story.key != "forty_replies" else None,
                                                 "sweep": st.session_state.get("compare.sweep") if st.session_state.get("compare.sweep") != "chunk size" else None,
                                                 "present": "1" if st.session_state.get("present") else None})
