"""PD disaggregation controls for the ten o'clock page (filled in below)."""

import streamlit as st


def deferred_allocation_ui() -> None:
    st.caption("PD disaggregation: coming with the engine's PD model.")
