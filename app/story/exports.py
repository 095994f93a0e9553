"""The foot of a story page: the run as CSV and TOML, the story as a standalone page or its tour as slides.
Also the note every exported chart of the page carries. (The link that reopens the view: app.story.link.)"""

from __future__ import annotations

import streamlit as st

from app import state
from app.charts.frames import RunFrames
from app.story.headline import headline_fmt, headline_label, headline_value
from app.ui.exports import csv_bytes, scenario_toml, set_export_note, standalone_page, tour_slides
from app.ui.fmt import shown_value
from app.ui.fold import folded
from engine_model import Control, Story


def export_ui(story: Story, run: RunFrames) -> None:
    scenario = st.session_state.get(state.keys(story.key).scenario)
    with folded("Export this run: CSV and scenario TOML", "exports.open") as is_open:
        if is_open:
            run_files_ui(story, run, scenario)
    outside_ui(story)


def run_files_ui(story: Story, run: RunFrames, scenario) -> None:
    """The run's own files: its requests and passes as CSV, and the scenario that makes it again."""
    cols = st.columns(4)
    cols[0].download_button("Per-request metrics (CSV)", lambda: csv_bytes(run.requests),
                            file_name=f"{story.key}-requests.csv", mime="text/csv", on_click="ignore")
    cols[1].download_button("Per-iteration trace (CSV)", lambda: csv_bytes(run.iterations),
                            file_name=f"{story.key}-iterations.csv", mime="text/csv", on_click="ignore")
    if scenario is not None:
        cols[2].download_button("Scenario (TOML)", lambda: scenario_toml(scenario),
                                file_name=f"{story.key}.toml", mime="application/toml", on_click="ignore")
    cols[3].download_button("Retractions (CSV)", lambda: csv_bytes(run.retractions),
                            file_name=f"{story.key}-retractions.csv", mime="text/csv", on_click="ignore")
    st.caption("Run it yourself: `python -m engine_model run "
               + f"{story.key}.toml` (the same model, no app).")


def outside_ui(story: Story) -> None:
    """The story beyond the app: one HTML file for a blog or an ebook, and the tour as slides for a deck."""
    cols = st.columns(2)
    cols[0].download_button(
        "Export → standalone page (HTML)", lambda: standalone_page(story.key), file_name=f"{story.key}.html",
        mime="text/html", on_click="ignore", icon=":material/public:", width="stretch",
        help="One self-contained file, no server or network: the key charts for a set of precomputed "
             "settings, switched by buttons in the page, headline numbers beside them. Embed it with an "
             "<iframe> or put it in an EPUB 3 book. The same as `python -m engine_model figure "
             + story.key + "`.")
    cols[1].download_button(
        "Export → tour as slides (ZIP of PNG)", lambda: tour_slides(story.key),
        file_name=f"{story.key}-tour.zip",
        mime="application/zip", on_click="ignore", icon=":material/slideshow:", width="stretch",
        help="One 1920×1080 image per tour step: the step's chart, its narration as a caption and the "
             "settings in small type. The same as `python -m engine_model figure " + story.key
             + " --slides DIR`.")


def remember_note(story: Story, values: dict, current: RunFrames, base: RunFrames) -> None:
    """What every chart exported from this page carries under its title: the settings and the headline."""
    set_export_note(story.key, story_note(story, values, current, base))


def story_note(story: Story, values: dict, current: RunFrames, base: RunFrames) -> tuple[str, str, str]:
    """Three lines: the SGLang flags, the workload and hardware, and the story's headline number against
    SGLang's defaults on the same requests."""
    resolved_chunk = current.summary.config["resolved"]["chunked_prefill_size"]
    flags = settings_words([c for c in story.controls if c.is_flag], values, resolved_chunk)
    rest = settings_words([c for c in story.controls if not c.is_flag], values, resolved_chunk)
    head = story.headlines[0]
    fmt = headline_fmt(head)
    now, before = headline_value(current, head), headline_value(base, head)
    number = f"{headline_label(head, current)}: {fmt(now)}" + (
        " (SGLang's defaults)" if fmt(now) == fmt(before)
        else f" (SGLang's defaults, same requests: {fmt(before)})")
    return f"SGLang flags: {flags}", f"Workload: {rest}", number


def settings_words(controls: list[Control], values: dict, resolved_chunk=None) -> str:
    """'Mixed chunk: on · Chunk size: 8,192 (auto, from GPU memory)': the controls' values in words. A cost
    figure appears only when edited (left empty it is the preset's, which the GPU and model already say)."""
    return " · ".join(f"{c.label}: {shown_value(c, values[c.key], resolved_chunk)}" for c in controls
                      if c.where != "cost" or values[c.key] != c.default)
