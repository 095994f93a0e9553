"""Compare: any two configurations of any story on the same seed, and a sweep drawn as a trade-off curve."""

import streamlit as st

from app.compare import pair
from app.compare.sweep import sweep_ui
from app.ui.resolved import resolved_pair_ui
from app.ui.simplifications import simplifications_ui

st.title(":material/compare_arrows: Compare and sweep")
st.markdown("Two configurations of one story, same workload, same seed. A starts at SGLang's defaults; "
            "B starts with mixed chunk on. Change either.")
story = pair.story_ui()
a, b, shared = pair.configurations_ui(story)
story = pair.on_mix(story, shared)  # the cards and words follow the shared request mix, if any
run_a, run_b, key = pair.run_pair(story, a, b, shared)
resolved_pair_ui(run_a, run_b)
pair.headline_pair_ui(story, run_a, run_b, b, shared)
pair.delta_ui(run_a, run_b)
pair.side_by_side_ui(story, run_a, run_b, a, b, shared, key)
sweep_ui(story, b, shared, run_b)
simplifications_ui()
pair.url_ui(story, a, b, shared)
