"""What should I set? A search over SGLang's flags and GPU layouts for a request mix under targets for both
waits: the setting that meets them with the most output per GPU, and who pays for it."""

import streamlit as st

from app.advise import ui

st.title(":material/recommend: What should I set?")
st.markdown(
    "Pick a request mix, the GPUs you have and what each group of users may wait. The model runs "
    "every setting it tries on the same requests and seed, and names the one that meets your targets "
    "with the most output per GPU — and who waits more for it than today."
)
scenario = ui.mix_ui()
budget = ui.budget_ui()
targets = ui.targets_ui(scenario)
space = ui.space_ui(budget)
advice = ui.run_ui(scenario, budget, targets, space)
if advice is not None:
    ui.advice_ui(advice)
    ui.table_ui(advice)
    ui.exports_ui(advice, scenario)
