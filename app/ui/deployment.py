"""The deployment a page runs on: GPU, tensor parallel, model, weight and KV precision, seed (where="more"),
and every figure of the GPU and shape of the model (where="figure"), each editable, each in the URL.
Story pages, Compare and Your server draw it the same way; every combination passes
engine_model.feasibility.check before it runs, and the page says why when it cannot."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app import state
from app.ui.controls import control_ui
from engine_model import GPUS, MODELS, Control, attention_of, tp_help

DEPLOYMENT_WHERE = ("more", "figure")  # the controls drawn here (engine_model.stories.Control.where)
EDIT = "figures.edit"  # the toggle that shows the figures (a widget name under the page's keys)
RESET = "figures.reset"
CONTROL_WIDTH = 230  # px: a label and its value whole; rows wrap


def deployment_title(controls, values: dict) -> str:
    """The deployment expander's title: what runs, the seed, and how many figures were edited."""
    edited = sum(values.get(c.key) is not None for c in controls if c.where == "figure")
    return (f"Deployment: {deployment_words(values)} · seed {values['seed']}"
            + (f" · {edited} figure{'s' if edited > 1 else ''} edited" if edited else ""))


def deployment_words(values: dict) -> str:
    """'8 × H100 SXM 80GB, TP 8 · Llama-3.1-70B, bf16 weights, bf16 KV' from a page's control values."""
    tp, dp = values.get("tp", 1), values.get("dp", "off")
    gpu, model = GPUS[values["gpu"]], MODELS[values["model"]]
    kv = attention_of(gpu, model, kv_dtype=values.get("kvdtype", "auto")).kv_dtype  # auto as SGLang has it
    ranks = ""
    if dp != "off":  # DP attention raises TP to its ranks (engine_model.stories.dp_apply)
        tp, ranks = max(tp, dp), f", attention DP {dp}"
    return (f"{tp} × {gpu.name}, TP {tp}{ranks} · {model.name}, {values.get('wdtype', 'bf16')} weights, "
            f"{kv} KV")


def deployment_ui(page: str, controls: tuple[Control, ...] | list[Control], values: dict) -> None:
    """The deployment row, then the GPU's figures and the model's shapes behind a toggle (open while any is
    edited, so an edit never hides)."""
    _row(page, model_help([c for c in controls if c.where == "more"], values["model"]))
    figures_ui(page, [c for c in controls if c.where == "figure"], values, values["gpu"], values["model"])


def model_help(controls: list[Control], model: str) -> list[Control]:
    """The controls whose help depends on the model chosen (tensor parallel: what a GPU holds of the KV)."""
    return [replace(c, help=tp_help(MODELS[model])) if c.key == "tp" else c for c in controls]


def figures_ui(page: str, figures: list[Control], values: dict, gpu: str, model: str) -> None:
    """The figure controls of the GPU and model presets `gpu` and `model`, behind a toggle; each empty field
    shows the preset's figure."""
    if not figures:
        return
    edited = [c for c in figures if values.get(c.key) is not None]
    label = "Edit the GPU's figures and the model's shapes" + (f" ({len(edited)} edited)" if edited else "")
    key = state.keys(page).widget(EDIT)
    if edited:  # an edit never hides: the fields stay open until they are back to the presets'
        st.session_state[key] = True
    shown = st.toggle(label, key=key, disabled=bool(edited),
                      help="An empty field is the preset's figure (greyed); \"Back to the presets' figures\" "
                           "empties them all. Pick Custom GPU or Custom model to start from a plain one.")
    if shown:
        _figures_ui(page, figures, GPUS[gpu], MODELS[model], edited)


def _figures_ui(page: str, figures: list[Control], gpu, model, edited: list[Control]) -> None:
    for kind, preset, title in (("gpu", gpu, f"**{gpu.name}** — {gpu.source}"),
                                ("model", model, f"**{model.name}** — {model.source}")):
        st.caption(title)
        _row(page, [c for c in figures if c.key.startswith(f"{kind}.")],
             lambda c, p=preset: f"{getattr(p, c.key.split('.', 1)[1]):g} (preset)")
    st.button("Back to the presets' figures", key=state.keys(page).widget(RESET), on_click=_reset,
              args=(page, figures), disabled=not edited)


def _row(page: str, controls: list[Control], placeholder=None) -> None:
    with st.container(horizontal=True, gap="medium", vertical_alignment="bottom"):
        for control in controls:
            with st.container(width=CONTROL_WIDTH):
                control_ui(page, control, placeholder=placeholder(control) if placeholder else None)


def _reset(page: str, controls: list[Control]) -> None:
    for control in controls:
        st.session_state[state.keys(page).widget(control.key)] = None
