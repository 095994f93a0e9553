"""Home: what the app teaches, and a card per story."""

import streamlit as st

from engine_model import STORIES

st.title(":material/hourglass_top: Who Waits")
st.markdown(
    "Inside an LLM serving engine, every iteration the scheduler decides which requests get the GPU — and so "
    "which ones wait. Who Waits runs a step-by-step model of SGLang's scheduler and draws what happened: "
    "prefill chunks, decode steps, mixed passes, KV cache and every request's token stream. Flip one "
    "switch — mixed chunk, chunk size, KV pool — and watch who waits, and why, with the SGLang rule behind "
    "each decision."
)

TOOLS = [
    (":material/compare_arrows: Compare and sweep", "Any two configurations of any story on the same seed, "
     "side by side — and chunk size swept from 512 to 16,384: *anyone who quotes you a universal chunk size "
     "is guessing.*",
     "app_pages/compare.py", "Open compare →"),
    (":material/dns: Your server", "Paste your SGLang server's log: see what it resolved, its timeline and "
     "which stall it shows — then run it through the model. Or load a request trace.",
     "app_pages/your_server.py", "Check your server →"),
]


def card(title: str, text: str, page: str, link: str) -> None:
    with st.container(border=True):
        st.markdown(f"### {title}")
        st.markdown(text)
        st.page_link(page, label=link)


for col, story in zip(st.columns(len(STORIES)), STORIES.values(), strict=True):
    with col:
        card(f"{story.icon} {story.title}", story.teaser, f"app_pages/{story.key}.py", "Open the story →")
for col, tool in zip(st.columns(len(TOOLS)), TOOLS, strict=True):
    with col:
        card(*tool)

st.caption(
    "Numbers come from a model, not a benchmark: a roofline cost per forward pass on the chosen GPU and "
    "model, and SGLang 0.5.20–0.5.23's scheduling rules. Each page says what it simplifies. Add `?present=1` "
    "to any link for presenter mode."
)
