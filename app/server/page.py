"""The frame of the "Your server" page: its header, the log-or-trace switch, uploads, messages for input
that cannot be read, the headline cards of a run and the link to the view."""

from __future__ import annotations

import hashlib

import streamlit as st

from app import state
from app.charts.frames import RunFrames
from app.present.fmt import fmt_count, fmt_seconds
from app.present.numbers import Price
from app.server.controls import CONTROLS, PAGE, VIEW
from app.server.input import decode_upload
from app.story.headline import price_cards
from app.ui.cards import cards_ui
from app.ui.controls import control_ui
from engine_model import InputError


def page_header_ui() -> dict:
    """Title, what the page answers, notes about the link; puts the settings into the address bar."""
    state.seed_widgets(PAGE, CONTROLS)
    st.title(":material/dns: Your server")
    st.markdown("**Is my stall the chunked-prefill one or the KV one?** Paste a log from your SGLang server "
                "to see what it resolved, its timeline and which stall it shows — then run it through the "
                "model. Or load a request trace and see who waits under each switch.")
    for note in state.notes(PAGE):
        st.warning(note, icon=":material/link:")
    values = state.values(PAGE, CONTROLS)
    state.write_url(CONTROLS, values, state.present_param())
    return values


def view_ui() -> str:
    return control_ui(PAGE, VIEW, radio=True)


def error_ui(err: InputError, what: str) -> None:
    st.error(f"**This {what} cannot be read.** `{err.where}`: {err.problem}", icon=":material/block:")


def cache_key(*parts) -> str:
    """A short key for the charts of one view (their specs are cached under it)."""
    return hashlib.sha1("\x1f".join(map(str, parts)).encode()).hexdigest()[:16]


def upload_ui(label: str, key: str, limit_mb: int, empty_note: str) -> tuple[str, str] | None:
    """(file name, text) of an uploaded file within `limit_mb`, or None with the reason on the page."""
    upload = st.file_uploader(label, key=state.keys(PAGE).widget(key), max_upload_size=limit_mb)
    if upload is None:
        st.info(empty_note)
        return None
    try:
        text, notes = decode_upload(upload.getvalue(), upload.name, limit_mb)
    except InputError as err:
        error_ui(err, "file")
        return None
    for note in notes:
        st.warning(note)
    return upload.name, text


def _prices(run: RunFrames, after: RunFrames) -> list[Price]:
    a, b = run.summary.metrics.overall, after.summary.metrics.overall
    return [Price("p95 first token (TTFT)", a.ttft_s.p95, b.ttft_s.p95, fmt_seconds, "lower"),
            Price("p99 gap between tokens", a.itl_s.p99, b.itl_s.p99, fmt_seconds, "lower"),
            Price("Longest pause, any reply", a.max_itl_s.max, b.max_itl_s.max, fmt_seconds, "lower"),
            Price("Requests retracted", a.num_retracted, b.num_retracted, fmt_count, "lower")]


def headline_ui(run: RunFrames, after: RunFrames | None = None) -> None:
    """Four cards for a run of the model on this page; with `after`, each reads 'run → after' as the
    stories' cards do."""
    prices = _prices(run, after or run)
    cards_ui(price_cards(prices, after is None))


def share_ui(values: dict) -> None:
    st.caption(":material/link: Link to this view: copy the address bar — the sample and every option are "
               "in it (`" + state.url_for(PAGE, CONTROLS, values)
               + "`). A pasted or uploaded file is not in the link.")
