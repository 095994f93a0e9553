"""The foot of a story page: the run as CSV and TOML (on the ten o'clock page with PD shown, the PD
section's scenarios too), the story as a standalone page or its tour as slides, and on the ten o'clock page
the PD figure — each on the page's own deployment and PD layout. Also the note every exported chart of the
page carries. (The link that reopens the view: app.story.link.)"""

from __future__ import annotations

import json

import streamlit as st

from app import state
from app.charts.frames import RunFrames
from app.pd import params as pd_params
from app.present.caption import caption_of, caption_text, source_line
from app.present.export import csv_bytes, scenario_toml
from app.present.pd import LAYOUT, pd_toml, section_scenarios
from app.present.settings import deployment_line, story_note
from app.story.measured import export_test_ui, results_ui, settings_of
from app.ui.exports import set_export_note, standalone_page, standalone_pd_page, tour_pptx, tour_slides
from app.ui.fold import folded
from engine_model import InputError, Story

PD_STORY = "ten_oclock_rush"  # the page with a PD section (state.EXTRA_PARAMS)


def export_ui(story: Story, run: RunFrames, values: dict | None = None) -> None:
    scenario = st.session_state.get(state.keys(story.key).scenario)
    # folded like the rest of the foot: its download buttons are nine widgets a first view need not draw
    title = ("Export: this run as CSV and TOML, the story as a standalone page or slides, the test for your "
             "server and its results back")
    with folded(title, "exports.open", icon=":material/download:") as is_open:
        if is_open:
            outside_ui(story, values)
            run_files_ui(story, run, scenario, values)
            if scenario is not None:  # the test on your own server: the page's workload, and its results back
                settings = settings_of(story, scenario, values or story.defaults,
                                       pd_layout() if story.key == PD_STORY and pd_shown() else None)
                export_test_ui(st, story, settings)
                results_ui(story, settings)


def pd_layout() -> dict:
    """The PD section's layout as its widgets hold it (app.pd.params), in its URL names
    (app.present.pd.LAYOUT); the defaults where the section has not been drawn."""
    return {name: st.session_state.get(pd_params.widget_key(name), pd_params.DEFAULTS.get(name, default))
            for name, default in LAYOUT.items()}


def pd_shown() -> bool:
    return bool(st.session_state.get(pd_params.widget_key(state.PD_ON)))


def run_files_ui(story: Story, run: RunFrames, scenario, values: dict | None = None) -> None:
    """The run's own files: its requests and passes as CSV, and the scenario that makes it again (on the ten
    o'clock page with PD shown, also the PD section's scenario under each policy)."""
    cols = st.columns(4)
    cols[0].download_button("Per-request metrics (CSV)", lambda: csv_bytes(run.requests),
                            file_name=f"{story.key}-requests.csv", mime="text/csv", on_click="ignore")
    cols[1].download_button("Per-iteration trace (CSV)", lambda: csv_bytes(run.iterations),
                            file_name=f"{story.key}-iterations.csv", mime="text/csv", on_click="ignore")
    if scenario is not None:
        about = (f"{story.title}: {deployment_line(scenario)}.\nRun it: python -m engine_model run "
                 f"{story.key}.toml")
        cols[2].download_button("Scenario (TOML)", lambda: scenario_toml(scenario, about),
                                file_name=f"{story.key}.toml", mime="application/toml", on_click="ignore")
    cols[3].download_button("Retractions (CSV)", lambda: csv_bytes(run.retractions),
                            file_name=f"{story.key}-retractions.csv", mime="text/csv", on_click="ignore")
    if story.key == PD_STORY and pd_shown():
        pd_files_ui(values or story.defaults)
    st.caption("Run it yourself: `python -m engine_model run "
               + f"{story.key}.toml` (the same model, no app).")


def pd_files_ui(values: dict) -> None:
    """The PD section's scenario under each policy as TOML, as the section builds it; a policy that cannot
    run on this deployment says why instead."""
    found = section_scenarios(values, pd_layout())
    cols = st.columns(len(found))
    for col, (policy, scenario) in zip(cols, found.items(), strict=True):
        if isinstance(scenario, InputError):
            col.caption(f"PD under {policy} cannot run here (`{scenario.where}`), so no TOML.")
            continue
        col.download_button(f"PD scenario, {policy} (TOML)", lambda s=scenario: pd_toml(s),
                            file_name=f"{scenario.name}-{policy}.toml", mime="application/toml",
                            on_click="ignore")


def outside_ui(story: Story, values: dict | None = None) -> None:
    """The story beyond the app: one HTML file for a blog or an ebook (opening where the person is), the tour
    as slides for a deck (on the page's deployment), and on the ten o'clock rush the PD figure (on the page's
    deployment and PD layout)."""
    here = json.dumps(values or story.defaults, default=str, sort_keys=True)
    cols = st.columns(3 if story.key == PD_STORY else 2)
    cols[0].download_button(
        "Export → standalone page (HTML)", lambda: standalone_page(story.key, here),
        file_name=f"{story.key}.html", mime="text/html", on_click="ignore", icon=":material/public:",
        width="stretch",
        help="One self-contained file, no server or network: the page's charts for a set of precomputed "
             "settings, switched by buttons in the page, headline numbers beside them; it opens at the "
             "settings you have now. Embed it with an <iframe> or put it in an EPUB 3 book. The same as "
             f"`who-waits figure {story.key} --set …`.")
    cols[0].download_button(
        "Caption and credit line (TXT)", lambda: page_caption(story, values or story.defaults),
        file_name=f"{story.key}.txt", mime="text/plain", on_click="ignore", icon=":material/short_text:",
        width="stretch",
        help="The page's caption in plain text with its credit line (what ran: the model, its GPUs, the "
             "seed, SGLang's version; the licence), for the post's or the book's own caption. The same as "
             f"the .txt `who-waits figure {story.key} --out FILE.html` writes beside the page.")
    cols[1].download_button(
        "Export → tour as slides (ZIP)", lambda: tour_slides(story.key, here),
        file_name=f"{story.key}-tour.zip",
        mime="application/zip", on_click="ignore", icon=":material/slideshow:", width="stretch",
        help="One 1920×1080 slide per tour step (PNG and SVG): the step's chart, its narration as a "
             "caption and the settings in small type, with speaker notes (Markdown). Every step keeps this "
             "page's GPU, model, TP, precision and seed, as the tour does. The same as "
             f"`who-waits figure {story.key} --slides DIR --set …`.")
    cols[1].download_button(
        "Export → tour as PowerPoint (PPTX)", lambda: tour_pptx(story.key, here),
        file_name=f"{story.key}-tour.pptx",
        mime="application/vnd.openxmlformats-officedocument.presentationml.presentation", on_click="ignore",
        icon=":material/co_present:", width="stretch",
        help="The same tour as a PowerPoint file for PowerPoint, Keynote, Google Slides or LibreOffice: "
             "a 16:9 slide per step with its title, its still (the chart, numbers, narration and settings) "
             "and the speaker notes in the notes pane. The same as "
             f"`who-waits figure {story.key} --pptx FILE --set …`.")
    if story.key == PD_STORY:
        layout = json.dumps(pd_layout(), sort_keys=True)
        cols[2].download_button(
            "Export → PD figure (HTML)", lambda: standalone_pd_page(here, layout), file_name="pd.html",
            mime="text/html", on_click="ignore", icon=":material/call_split:", width="stretch",
            help="One engine vs PD, early vs prefill_complete, on this workload (this page's deployment, "
                 "split as the PD section says) and on the upstream test replica: per-worker lanes, decode "
                 "KV, the numbers and phase times, switched in the page. The same as `who-waits figure "
                 "ten_oclock_rush_pd --set …`.")


def page_caption(story: Story, values: dict) -> str:
    """The standalone page's caption and credit line (app.present.caption), as a .txt file."""
    return caption_text(caption_of(story.title, story.teaser, source_line(story.scenario(values))))


def remember_note(story: Story, values: dict, current: RunFrames, base: RunFrames) -> None:
    """What every chart exported from this page carries under its title: the settings and the headline."""
    set_export_note(story.key, story_note(story, values, current, base))
