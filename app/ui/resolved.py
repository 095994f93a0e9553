"""What a run resolved to, in one caption, and a warning when it stopped early. Every page that runs the
model shows these above its numbers."""

from __future__ import annotations

import streamlit as st

from app.charts.frames import RunFrames


def resolved_ui(run: RunFrames) -> None:
    """What moves the figures: model, GPU, precision, parallelism, version, flags — as resolved."""
    config = run.summary.config
    res = config["resolved"]
    chunk = res["chunked_prefill_size"]
    chunk_text = "off" if chunk is None else f"{chunk:,}"
    st.caption(
        f"**{config['model']['name']}** ({config['model']['weight_dtype']} weights, "
        f"{config['model']['kv_dtype']} KV) on "
        f"**{config['hardware']['gpu']}** × TP{res['tp_size']} · SGLang {res['version']} emulated · "
        f"chunk size **{chunk_text}** ({res['chunked_prefill_size_source']}) · mixed chunk "
        f"**{'on' if res['is_mixed_chunk'] else 'off'}** · KV pool {res['max_total_tokens']:,} tokens "
        f"({res['max_total_tokens_source']}) · max running {res['max_running_requests']:,} · "
        f"pass cost: {run.summary.cost_model}"
    )


def cut_off_ui(run: RunFrames) -> None:
    """A run that hit a limit says so: its numbers cover only what ran."""
    if run.summary.cut_off:
        st.warning(f"The run stopped early: {run.summary.cut_off}. The numbers cover what ran.")
