"""The floor a first view is measured against: a bare Streamlit page with a title and one Altair chart (400
bars), nothing of the app. `bench/bench_app.py` serves it beside the app and reports each page's first view
as a multiple of this one, measured in the same browser run (so the machine's speed cancels out)."""

import altair as alt
import pandas as pd
import streamlit as st

st.title("Floor page")
frame = pd.DataFrame({"x": range(400), "y": [(i * 37) % 100 for i in range(400)]})
st.altair_chart(alt.Chart(frame).mark_bar().encode(x="x:Q", y="y:Q"), width="stretch")
