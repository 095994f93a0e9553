"""The request-mix builder every page that runs a workload shares (the stories, Compare, the PD section that
splits the story's workload): start from the story's own workload or a preset, edit the groups in a table
(name, share of requests, length shape, prompt and reply ranges, mid-reply, logprobs) and the arrivals
(Poisson rate, a burst, a closed loop of clients); the mix is said in words and drawn as a chart, and the
rate the deployment sustains is said before the run (engine_model.mix).

The mix lives in one widget state, the story's `mix` control (its URL parameter, app.state.MIX): a preset's
key or a custom mix's compact text, so the link, the exports, the standalone page and the slides follow it
as they follow any control. Every edit writes that text and reruns; the table's and fields' keys carry a
hash of it, so they start afresh from the mix they show.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable

import pandas as pd
import streamlit as st

from app import state
from app.charts.mix import mix_chart
from engine_model import (
    MAX_MIX_REQUESTS,
    MIX,
    MIX_ARRIVALS,
    MIX_FIELDS,
    MIX_PRESETS,
    MIX_SHAPES,
    InputError,
    RequestMix,
    Scenario,
    Story,
    checked_mix,
    decode_mix,
    encode_mix,
    mix_label,
    mix_words,
    sampled,
    sustain_of,
)

OWN, CUSTOM = "", "custom"
COLUMNS = {  # the table's columns: label, help
    "name": ("group", "A name for the group (letters, digits, . _ -): the charts and cards use it."),
    "share": ("% of requests", "This group's share of the requests; shares are scaled to add up to 100 %."),
    "shape": ("lengths", "fixed: the low end; uniform: every length low–high equally likely; lognormal: "
                         "most near the middle, low and high its 5th and 95th percentiles."),
    "prompt_low": ("prompt from", "Shortest prompt, tokens."),
    "prompt_high": ("prompt to", "Longest prompt, tokens."),
    "output_low": ("reply from", "Shortest reply, tokens."),
    "output_high": ("reply to", "Longest reply, tokens."),
    "mid_reply": ("mid-reply", "Already streaming when the run starts (120 tokens written), as the forty "
                               "replies are; else a new request."),
    "logprobs": ("% logprobs", "The share of its requests that ask for log probabilities (they turn mixed "
                               "chunk off for the passes they are in)."),
}
ScenarioOf = Callable[[str], Scenario]  # a mix's text -> the page's scenario on it


def mix_key(page: str) -> str:
    return state.keys(page).widget(MIX)


def mix_text(page: str) -> str:
    return st.session_state.get(mix_key(page), "")


def mix_story(story: Story, page: str | None = None) -> Story:
    """The story on the page's mix (Story.with_mix): seeds the page's widgets from the link first, so a
    link's mix is read before the page draws its cards. `page`: the widget prefix (Compare's own)."""
    page = page or story.key
    state.seed_widgets(page, story.controls, state.EXTRA_PARAMS.get(story.key, ()))
    try:
        return story.with_mix(mix_text(page))
    except ValueError:
        return story


def _tag(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def _set(page: str, text: str) -> None:
    st.session_state[mix_key(page)] = text
    st.rerun()


def _pick_label(key: str, own: str = "The story's own workload") -> str:
    if key == OWN:
        return own
    if key == CUSTOM:
        return "Custom (edited)"
    return MIX_PRESETS[key].label


def groups_frame(mix: RequestMix) -> pd.DataFrame:
    rows = [g.model_dump() for g in mix.groups]
    for row in rows:
        row["share"] = round(row["share"] / sum(g.share for g in mix.groups) * 100, 4)
        row["logprobs"] = round(row["logprobs"] * 100, 4)
    return pd.DataFrame(rows, columns=list(MIX_FIELDS))


def _cell(value):
    """A table cell as plain Python: NaN and NA (an empty cell of a new row) as None, numpy as float/int."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def mix_data(frame: pd.DataFrame, arrival: str, requests, rate, concurrency) -> dict:
    """The builder's table and fields as RequestMix data (percentages as shares)."""
    groups = []
    for _, row in frame.iterrows():
        group = {f: _cell(row.get(f)) for f in MIX_FIELDS}
        if all(v is None for k, v in group.items() if k not in ("shape", "mid_reply")):
            continue  # an empty new row
        for pct in ("share", "logprobs"):
            if isinstance(group[pct], int | float):
                group[pct] = group[pct] / 100
        group["shape"] = group["shape"] or "uniform"
        group["mid_reply"] = bool(group["mid_reply"])
        group["logprobs"] = group["logprobs"] or 0.0
        groups.append(group)
    return {"groups": groups, "requests": _cell(requests), "arrival": arrival, "rate": _cell(rate),
            "concurrency": _cell(concurrency)}


def mix_builder_ui(page: str, own: str = "The story's own workload") -> None:
    """The builder: the preset select, the groups' table and the arrivals, then the mix as a chart (its words
    and the rate the deployment sustains: `mix_summary_ui`, under the settings)."""
    text, keys = mix_text(page), state.keys(page)
    tag = _tag(text)
    current = text if text in MIX_PRESETS or not text else CUSTOM
    options = [OWN, *MIX_PRESETS] + ([CUSTOM] if current == CUSTOM else [])
    pick = st.selectbox("Start from", options, index=options.index(current),
                        format_func=lambda k: _pick_label(k, own), key=keys.mix_widget("pick", tag),
                        help="A preset people recognise, as data you can edit; or the story's own workload.")
    if pick != current:
        _set(page, pick if pick != CUSTOM else text)
    if not text:
        st.caption("Pick a preset for your traffic: the cards, the charts, the link and every export follow "
                   "it.")
        return
    mix = decode_mix(text)
    if text in MIX_PRESETS:
        st.caption(MIX_PRESETS[text].about)
    config = {f: st.column_config.Column(label, help=help_, width="small")
              for f, (label, help_) in COLUMNS.items()}
    config["shape"] = st.column_config.SelectboxColumn(COLUMNS["shape"][0], options=MIX_SHAPES, required=True,
                                                       help=COLUMNS["shape"][1], width="small")
    config["mid_reply"] = st.column_config.CheckboxColumn(COLUMNS["mid_reply"][0],
                                                          help=COLUMNS["mid_reply"][1], width="small")
    for f in ("share", "logprobs"):
        config[f] = st.column_config.NumberColumn(COLUMNS[f][0], min_value=0, max_value=100, format="%g %%",
                                                  help=COLUMNS[f][1], width="small")
    for f in ("prompt_low", "prompt_high", "output_low", "output_high"):
        config[f] = st.column_config.NumberColumn(COLUMNS[f][0], min_value=1, step=1, format="%d",
                                                  help=COLUMNS[f][1], width="small")
    frame = st.data_editor(groups_frame(mix), num_rows="dynamic", hide_index=True, column_config=config,
                           key=keys.mix_widget("groups", tag), width="stretch")
    row = st.container(horizontal=True, gap="medium", vertical_alignment="bottom")
    arrival = row.selectbox("Arrivals", tuple(MIX_ARRIVALS), index=tuple(MIX_ARRIVALS).index(mix.arrival),
                            key=keys.mix_widget("arrival", tag), format_func=lambda a: MIX_ARRIVALS[a],
                            width=330)
    requests = row.number_input("Requests", 1, MAX_MIX_REQUESTS, value=mix.requests, step=10,
                                key=keys.mix_widget("requests", tag), width=150)
    rate, concurrency = mix.rate, mix.concurrency  # kept, unseen, while the other pattern is on
    if arrival == "poisson":
        rate = row.number_input("Requests per second", 0.01, 10_000.0, value=float(mix.rate), step=0.5,
                                format="%g", key=keys.mix_widget("rate", tag), width=180)
    if arrival == "closed":
        concurrency = row.number_input("Clients", 1, 10_000, value=mix.concurrency, step=1, width=130,
                                       key=keys.mix_widget("concurrency", tag),
                                       help="Closed loop: requests in flight at once (bench_serving's "
                                            "--max-concurrency).")
    try:
        edited = checked_mix(mix_data(frame, arrival, requests, rate, concurrency))
    except InputError as err:
        st.error(f"**This mix cannot run.** `{err.where}`: {err.problem}", icon=":material/block:")
        return
    new = encode_mix(edited)
    if new != text:
        _set(page, new)
    st.altair_chart(mix_chart(sampled(edited, seed_of(page))), width="stretch")
    st.caption("Each group's share of the requests beside its share of the prompt tokens (the prefill "
               "work), counted over the requests this seed draws.")


def seed_of(page: str) -> int:
    return int(st.session_state.get(state.keys(page).widget("seed"), 0) or 0)


def mix_summary_ui(page: str, scenario_of: ScenarioOf | None) -> None:
    """The mix in words and the rate the deployment sustains, said before the run (a warning when the
    arrivals outrun it); nothing on the story's own workload."""
    text = mix_text(page)
    if not text:
        return
    try:
        mix = decode_mix(text)
    except ValueError:
        return
    words = f"**Request mix: {mix_label(text)}.** {mix_words(mix, seed_of(page))}"
    try:
        found = sustain_of(scenario_of(text), mix) if scenario_of is not None else None
    except InputError:
        found = None
    if found is None:
        st.caption(words)
    elif mix.arrival == "poisson" and mix.rate > found.rate_per_s:
        st.warning(f"{words} {found.words(mix)}", icon=":material/traffic:")
    else:
        st.caption(f"{words} {found.words(mix)}")
    st.page_link("app_pages/advise.py", icon=":material/recommend:", query_params={MIX: text},
                 label="What should I set? — search the flags and GPU layouts for this mix")


def mix_fold_title(page: str) -> str:
    return f"Request mix: {mix_label(mix_text(page))}"
