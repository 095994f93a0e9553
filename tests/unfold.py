"""Open every fold of a page in Streamlit's AppTest, as a person clicking each one would (app/ui/fold.py).

A fold's content is built only while it is open, so a test of what is inside opens it first; the folds that
appear inside an opened section (the PD section's charts) are opened on the next round. The PD section of
the ten o'clock page is shown too (it opens hidden)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from app import state
from app.pd import params

SUFFIX = state.fold_box("")
PD_SHOWN = params.widget_key(state.PD_ON)


def unfold(at: AppTest, rounds: int = 3) -> AppTest:
    """Open every closed fold (and show the PD section), rerun, and again for folds that appeared."""
    for _ in range(rounds):
        names = list(at.session_state.keys())
        closed = [n[:-len(SUFFIX)] for n in names if n.endswith(SUFFIX) and not at.session_state[n]]
        if PD_SHOWN in names and not at.session_state[PD_SHOWN]:
            closed.append(PD_SHOWN)
        if not closed:
            break
        for key in closed:
            at.session_state[key] = True
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
