"""What a run resolved to, in one caption, and a warning when it stopped early. Every page that runs the
model shows these above its numbers."""

from __future__ import annotations

import streamlit as st

from app.charts.frames import RunFrames
from app.present.settings import edited_words
from engine_model import gpus_words, pool_words


def resolved_ui(run: RunFrames, side: str = "") -> None:
    """What moves the figures: how many GPUs of which kind at which TP, the model and its precision, the KV
    pool per GPU and in all, version, flags — as resolved. `side`: which of two runs ("A", "B")."""
    config = run.summary.config
    res = config["resolved"]
    chunk = res["chunked_prefill_size"]
    chunk_text = "off" if chunk is None else f"{chunk:,}"
    st.caption(
        (f"{side} runs: " if side else "")
        + f"**{gpus_words(config)}**{edited_words(config)} · **{res['model_name']}** "
        f"({config['model']['weight_dtype']} weights, {config['model']['kv_dtype']} KV) · SGLang "
        f"{res['version']} emulated · chunk size **{chunk_text}** ({res['chunked_prefill_size_source']}) · "
        f"mixed chunk **{'on' if res['is_mixed_chunk'] else 'off'}** · {pool_words(config)} "
        f"({res['max_total_tokens_source']}) · max running {res['max_running_requests']:,} · "
        f"no data-parallel attention (one engine) · pass cost: {run.summary.cost_model}"
    )


def cut_off_ui(run: RunFrames) -> None:
    """A run that hit a limit says so: its numbers cover only what ran."""
    if run.summary.cut_off:
        st.warning(f"The run stopped early: {run.summary.cut_off}. The numbers cover what ran.")
