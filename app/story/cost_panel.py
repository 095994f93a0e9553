"""The "cost model" panel of a story page: the figures that price every pass (docs/cost-model.md), each
editable, each in the URL like any other setting. Changing one reruns the story, so every chart and
headline moves. An empty field stands for the GPU preset's figure (or the documented default), shown
greyed in it. Everything here describes the machine, like the GPU: the headline's "before" runs on it
too, so before -> after still compares the story's settings on one cost model."""

from __future__ import annotations

import streamlit as st

from app import state
from app.ui.controls import control_ui
from app.ui.fold import folded
from engine_model import Control, InputError, Story

GPU_KEYS = ("gemm_mfu", "gemm_mbu", "ew_mbu", "attn_mfu", "attn_mbu")


def cost_panel_ui(story: Story, row=None) -> None:
    """An expander with the story's cost controls (where="cost"): GPU efficiency, CPU time, two flags. In
    presenter mode (`row`: the settings line) a popover on that line instead, so the first screen stays
    the cards and the token streams."""
    controls = [c for c in story.controls if c.where == "cost"]
    if not controls:
        return
    values = state.values(story.key, story.controls)
    edited = sum(values[c.key] != c.default for c in controls)
    title = "Cost model: what a forward pass costs" + (f" — {edited} setting(s) edited" if edited else "")
    if row is not None:
        with row.popover("Cost model" + (f" ({edited} edited)" if edited else ""), icon=":material/speed:"):
            _panel(story, controls, values, edited)
        return
    with folded(title, state.keys(story.key).widget("cost.panel"), icon=":material/speed:") as is_open:
        if is_open:
            _panel(story, controls, values, edited)


def _panel(story: Story, controls: list[Control], values: dict, edited: int) -> None:
    defaults = _defaults(story, values)
    st.caption("Every pass is priced from its kernels up on this GPU's figures, plus the CPU's work "
               "beside them (docs/cost-model.md). Edit a figure and every chart and headline reruns with "
               "it. An empty field is the GPU preset's figure (greyed). \"Before\" runs on these figures "
               "too, so the cards still compare the settings above on one machine.")
    st.markdown("**GPU efficiency** — share of the GPU's peak each kind of kernel reaches")
    _row(story, [c for c in controls if c.key in GPU_KEYS], defaults)
    st.markdown("**CPU and launches** — time outside the kernels, and what hides it")
    _row(story, [c for c in controls if c.key not in GPU_KEYS], defaults)
    st.button("Back to the preset's figures", key=state.keys(story.key).widget("cost.reset"),
              on_click=_reset, args=(story.key, controls), disabled=not edited)


def _row(story: Story, controls: list[Control], defaults: dict) -> None:
    for col, control in zip(st.columns(len(controls)), controls, strict=True):
        with col:
            hint = defaults.get(control.key)
            source = "preset" if control.key in GPU_KEYS else "default"
            control_ui(story.key, control, placeholder=None if hint is None else f"{hint:g} ({source})")


def _defaults(story: Story, values: dict) -> dict:
    """The figures an empty field stands for; {} when the settings cannot run (the page says why)."""
    try:
        return story.cost_defaults(values)
    except InputError:
        return {}


def _reset(page: str, controls: list[Control]) -> None:
    for control in controls:
        st.session_state[state.keys(page).widget(control.key)] = control.default
