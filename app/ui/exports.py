"""The download buttons' bytes, cached: a chart as an image, charts stacked in one image, a story as a
standalone page, its tour as slides, the PD figure, and the PD section's cards and table as one image. What
they hold is built by the presentation layer (app/present), on the page's own settings (its deployment, its PD
layout); this module only caches it per server and remembers the note a page's exported charts carry.

Pages pass these to `st.download_button` as callables, so nothing is rendered until a button is clicked.
"""

from __future__ import annotations

import json

import streamlit as st

from app import compute, state
from app.present import deck, pd_page, slides_zip, story_page, story_slides
from app.present.export import export_spec, render, stacked_spec
from app.present.pd import section_spec
from app.present.settings import pd_note


@st.cache_data(max_entries=64, show_spinner="Rendering the image…")
def chart_image(spec_json: str, fmt: str, title: str = "", lines: tuple[str, ...] = ()) -> bytes:
    return render(export_spec(json.loads(spec_json), title, lines), fmt)


@st.cache_data(max_entries=16, show_spinner="Rendering the image…")
def charts_image(specs: tuple[tuple[str, str], ...], title: str, lines: tuple[str, ...], fmt: str) -> bytes:
    """Charts (spec JSON, title) one under the other in one image."""
    return render(stacked_spec([(json.loads(spec), sub) for spec, sub in specs], title, lines), fmt)


def export_note(page: str) -> tuple[str, ...]:
    """The lines a page asked its exported charts to carry (settings, headline); none if it set none."""
    return tuple(st.session_state.get(state.keys(page).export_note, ()))


def set_export_note(page: str, lines: tuple[str, ...]) -> None:
    st.session_state[state.keys(page).export_note] = tuple(lines)


# -- a story outside the app -------------------------------------------------------------------------
@st.cache_data(max_entries=8, show_spinner="Simulating every setting the page carries (about 10–30 s)…")
def standalone_page(story_key: str, values_json: str) -> bytes:
    """The story as one page, opening where the person is (`values_json`: the page's control values)."""
    return story_page(story_key, start=json.loads(values_json), runs=compute.run_scenario).encode("utf-8")


@st.cache_data(max_entries=4, show_spinner="Simulating both workloads under every deployment (about 30 s)…")
def standalone_pd_page(values_json: str = "{}", layout_json: str = "{}") -> bytes:
    """The PD figure on the page's deployment (`values_json`: the ten o'clock page's control values) split as
    its PD section says (`layout_json`: the section's URL parameters, app.present.pd.LAYOUT), from the
    server's runs (the ten o'clock page and the warm-up hold most of them)."""
    return pd_page(runs=compute.run_scenario, values=json.loads(values_json),
                   layout=json.loads(layout_json)).encode("utf-8")


@st.cache_data(max_entries=4, show_spinner="Drawing one slide per tour step…")
def tour_slides(story_key: str, values_json: str = "{}") -> bytes:
    """The tour as a ZIP: each step's slide as PNG and SVG, and its speaker notes, on the page's deployment
    (`values_json`: the page's control values, kept as the app's tour keeps them)."""
    return slides_zip(story_slides(story_key, compute.run_scenario, json.loads(values_json)))


@st.cache_data(max_entries=4, show_spinner="Drawing one slide per tour step…")
def tour_pptx(story_key: str, values_json: str = "{}") -> bytes:
    """The tour as a PowerPoint file (app.present.deck): a 16:9 slide per step with its title, its still and
    its speaker notes, on the page's deployment (`values_json`, as for `tour_slides`)."""
    return deck.tour_pptx(story_slides(story_key, compute.run_scenario, json.loads(values_json)))


def pd_numbers_ui(page: str, arms: dict, runs: dict) -> None:
    """Under a PD section's table: its cards and table as one PNG or SVG (app.present.pd.section_spec). On
    the ten o'clock page's section (its own key prefix, state.PD_PAGE) also sets the lines its charts carry
    when exported (the PD deployment, what it is compared with, the trade: settings.pd_note), so call it
    before they are drawn; Your server's PD charts share that page's note, which this leaves alone.
    `arms`: label -> (scenario, run) as the table lists them; `runs`: policy -> run, those that ran."""
    if page == state.PD_PAGE:
        set_export_note(page, pd_note(arms, runs))
    keys = state.keys(page)
    with st.container(horizontal=True, gap="small"):
        for fmt, mime in (("png", "image/png"), ("svg", "image/svg+xml")):
            st.download_button(f"Cards and table ({fmt.upper()})",
                               lambda fmt=fmt: render(section_spec(arms, runs), fmt),
                               file_name=f"{page}-pd-numbers.{fmt}", mime=mime, on_click="ignore",
                               key=keys.widget(f"pd_numbers_{fmt}"), icon=":material/download:")
