"""What a run resolved to, in one caption, and a warning when it stopped early. Every page that runs the
model shows these above its numbers."""

from __future__ import annotations

import streamlit as st

from app import state
from app.charts.frames import RunFrames
from app.present.settings import edited_words
from app.ui.fold import folded
from engine_model import gpus_words, pool_words


def resolved_parts(run: RunFrames) -> list[str]:
    """What moves the figures, one part each: how many GPUs of which kind at which TP, the model and its
    precision, the version, flags, the KV pool per GPU and in all, the pass cost — as resolved."""
    config = run.summary.config
    res = config["resolved"]
    chunk = res["chunked_prefill_size"]
    chunk_text = "off" if chunk is None else f"{chunk:,}"
    return [f"**{gpus_words(config)}**{edited_words(config)}",
            f"**{res['model_name']}** ({config['model']['weight_dtype']} weights, "
            f"{res['kv_dtype']} KV)",
            res["attention_words"],
            f"SGLang {res['version']} emulated",
            f"chunk size **{chunk_text}** ({res['chunked_prefill_size_source']})",
            f"mixed chunk **{'on' if res['is_mixed_chunk'] else 'off'}**"
            + (f" ({res['startup_note']})" if res.get("startup_note") else ""),
            *([f"speculative decoding **{words}**"] if (words := res.get("speculative_words")) else []),
            f"{pool_words(config)} ({res['max_total_tokens_source']})",
            f"max running {res['max_running_requests']:,}" + (" per DP rank" if dp_ranks(config) > 1 else ""),
            dp_words(config, res), f"pass cost: {run.summary.cost_model}"]


def dp_ranks(config: dict) -> int:
    engine = config["engine"]
    return engine.get("dp_size", 1) if engine.get("enable_dp_attention") else 1


def dp_words(config: dict, res: dict) -> str:
    """'no data-parallel attention (one engine)', or DP attention's ranks and what each runs with."""
    ranks = dp_ranks(config)
    if ranks == 1:
        return "no data-parallel attention (one engine)"
    return (f"**DP attention, {ranks} ranks** in lockstep, one lane each (conservativeness × 0.3: the ratio "
            f"starts at {res['ratio_init']:.2f}; round-robin dispatch)")


def resolved_ui(run: RunFrames) -> None:
    st.caption(" · ".join(resolved_parts(run)))


def resolved_pair_ui(a: RunFrames, b: RunFrames) -> None:
    """Two runs in one caption: what they share once, then what differs, A's beside B's — so the difference
    is read, not hunted for in two near-identical lines. In presenter mode the paragraph waits in a closed
    fold (the room reads the cards, not a grey paragraph), as a story page keeps it behind "What runs"."""
    if state.is_presenting():
        with folded("What A and B run: the resolved settings", PRESENT_FOLD,
                    icon=":material/memory:") as is_open:
            if is_open:
                _resolved_pair(a, b)
        return
    _resolved_pair(a, b)


PRESENT_FOLD = "compare.resolved.open"


def _resolved_pair(a: RunFrames, b: RunFrames) -> None:
    pairs = list(zip(resolved_parts(a), resolved_parts(b), strict=True))  # part by part, in one order
    shared = [pa for pa, pb in pairs if pa == pb]
    only_a, only_b = [pa for pa, pb in pairs if pa != pb], [pb for pa, pb in pairs if pa != pb]
    differ = (f" — **A:** {' · '.join(only_a)}; **B:** {' · '.join(only_b)}" if only_a or only_b
              else " — A and B resolve alike")
    st.caption("A and B run: " + " · ".join(shared) + differ)


def cut_off_ui(run: RunFrames) -> None:
    """A run that hit a limit says so: its numbers cover only what ran."""
    if run.summary.cut_off:
        st.warning(f"The run stopped early: {run.summary.cut_off}. The numbers cover what ran.")
