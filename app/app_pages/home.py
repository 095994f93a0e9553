"""Home: what the app teaches, and a card per story."""

import streamlit as st

from app.stories import STORIES

st.title(":material/hourglass_top: Who Waits")
st.markdown(
    "Inside an LLM serving engine, every iteration the scheduler decides which requests get the GPU — and so "
    "which ones wait. Who Waits runs a step-by-step model of SGLang's scheduler and draws what happened: prefill "
    "chunks, decode steps, mixed passes, KV cache and every request's token stream. Flip one switch — mixed "
    "chunk, chunk size, KV pool — and watch who waits, and why, with the SGLang rule behind each decision."
)

cards = [*STORIES.values()]
cols = st.columns(len(cards) + 1)
for col, story in zip(cols, cards, strict=False):
    with col.container(border=True, height=260):
        st.markdown(f"### {story.icon} {story.title}")
        st.markdown(story.teaser)
        st.page_link(f"app_pages/{story.key}.py", label="Open the story →")
with cols[-1].container(border=True, height=260):
    st.markdown("### :material/compare_arrows: Compare and sweep")
    st.markdown("Any two configurations of any story on the same seed, side by side — and chunk size swept from "
                "512 to 16,384: *anyone who quotes you a universal chunk size is guessing.*")
    st.page_link("app_pages/compare.py", label="Open compare →")

st.caption(
    "Numbers come from a model, not a benchmark: a roofline cost per forward pass on the chosen GPU and model, and "
    "SGLang 0.5.20–0.5.23's scheduling rules. Each page says what it simplifies. Add `?present=1` to any link for "
    "presenter mode."
)
