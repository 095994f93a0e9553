"""Draw a story's control (engine_model.stories.Control) as its widget, under the page's widget key."""

from __future__ import annotations

import streamlit as st

from app import state
from engine_model import Control


def control_ui(page: str, control: Control, radio: bool = False, placeholder: str | None = None,
               width: int | None = None) -> object:
    """One control's widget under the page's key for it (a radio row when `radio`). Returns its value.
    `placeholder`: what an empty number field stands for (its default figure; else "default"); `width`: px
    (else the widget's own default)."""
    sized = {} if width is None else {"width": width}
    key = state.keys(page).widget(control.key)
    label = ("⚑ " if control.is_flag else "") + control.label
    if radio:
        return st.radio(label, control.options, key=key, format_func=control.fmt, horizontal=True,
                        help=control.help)
    if control.widget == "toggle":
        return st.toggle(label, key=key, help=control.help, **sized)
    if control.widget == "text":  # the request mix: its builder (app.ui.mix), the one "text" control
        from app.ui.mix import mix_builder_ui  # here: app.ui.mix imports app.state, as this module does

        return mix_builder_ui(page)
    if control.widget == "select":
        return st.selectbox(label, control.options, key=key, format_func=control.fmt, help=control.help,
                            **sized)
    low, high, step = control.options
    if control.widget == "number":  # empty (None) is allowed: the default figure
        return st.number_input(label, low, high, step=step, key=key, help=control.help,
                               placeholder=placeholder or control.fmt(None),
                               format=None if isinstance(step, int) else "%g", **sized)
    return st.slider(label, low, high, step=step, key=key, help=control.help, **sized)
