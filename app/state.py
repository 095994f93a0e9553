"""Every session-state key and URL parameter name the app uses, and how settings move between them.

Names live here and nowhere else: a page asks `keys(page).tour_step`, never builds "<page>.tour_step".

Settings live in three places, read in this order: the URL, this session's saved values, the defaults.

- On a page's first run in a session (or when its widgets were cleaned up after visiting another page)
  each control's widget state is seeded from `st.query_params`, else from the value saved the last
  time the page ran, else from the control's default. Bad URL values become notes, never tracebacks.
- After the widgets are drawn, `write_url` puts every non-default setting back into the query string,
  so a copied link reopens the same view (defaults are implied; the cursor time is `t`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import streamlit as st

from app.pd.names import PD_BASE as PD_BASE  # the PD section's URL names, re-exported: defined where the
from app.pd.names import PD_CAP as PD_CAP  # presentation layer reads them without Streamlit
from app.pd.names import PD_DECODE_WORKERS as PD_DECODE_WORKERS
from app.pd.names import PD_ON as PD_ON
from app.pd.names import PD_PARAMS as PD_PARAMS
from app.pd.names import PD_PREFILL_WORKERS as PD_PREFILL_WORKERS
from app.pd.names import PD_PRESET as PD_PRESET
from app.pd.names import PD_TP as PD_TP

if TYPE_CHECKING:  # app.ui.controls draws widgets under these keys, so it imports this module
    from engine_model import Control

# -- URL parameters that are not a story's controls (a control's own parameter is its `Control.key`) --------
CURSOR_T = "t"  # the step-through cursor, in seconds
STEP = "step"  # the guided tour's active step, from 1
PRESENT = "present"  # presenter mode: ?present=1
ROOM = "room"  # a follower's room code: ?room=ABCDE-FGHJK (app/room/ui.py)
STORY = "story"  # Compare: which story
SWEEP = "sweep"  # Compare: what the sweep varies
# the request mix is a story control (engine_model.MIX, "mix"): a preset's key or a custom mix's text "c.…"
# (base64url of compact JSON, at most engine_model.mix.MAX_LINK_CHARS); an uploaded trace is never in a link
EXTRA_PARAMS = {"ten_oclock_rush": PD_PARAMS}  # page -> URL parameters its sections read beside the controls
PAGE_PARAMS = (CURSOR_T, STEP, PRESENT, ROOM)  # every page may carry these
STREAMLIT_PARAMS = ("embed", "embed_options")  # Streamlit's own; never touched
KEPT_PARAMS = (*STREAMLIT_PARAMS, ROOM)  # `write_url` leaves these: the room is the follower's, not the view


def side_param(side: str, key: str) -> str:
    """Compare's parameter for one side's control: a_mixed, b_chunk."""
    return f"{side}_{key}"


# -- session-state keys --------------------------------------------------------------------------------
PRESENTING = "present"  # presenter mode is on
PRESENT_TOGGLE = "present_toggle"  # the sidebar switch that turns it on
LEAVE_PRESENT = "leave_present"  # the button that turns it off
PRESENT_BAR = "present_bar"  # presenter mode's bar: every page and the way back (a container's key)
HEADLINE = "headline"  # the headline cards' block (a container's key)
TOUR_ROW = "tour_row"  # the tour's step buttons: one flex row whose buttons share its width (app.ui.css)
LOOK_HERE = "look_here"  # the tour's pointer (a container's key: the page scrolls to it)
SCROLLED_TO = "scrolled_to"  # the pointer the page last scrolled to
TOUR_WORDS = "tour_words"  # the active step's narration, filled: the pointer repeats it beside its chart
SAVED = "saved"  # {page: {control key: value}}: a page's settings kept across pages
ROOM_CODE = "room.code"  # the room this session presents or follows
ROOM_TOKEN = "room.token"  # the presenter's token: only this session moves the room (never in a URL)
ROOM_FOLLOWING = "room.following"  # a follower follows (False: broken away to explore)
ROOM_APPLIED = "room.applied"  # the room's version this follower shows
ROOM_PUBLISHED = "room.published"  # the view this presenter last wrote, and when
ROOM_PAGE = "room.page"  # the page this session is on (its URL path), for publishing from a fragment
ROOM_JOIN = "room.join"  # the "join a room" code box
ROOM_FORM = "room.join_form"  # the form around it
ROOM_COOKIE = "who_waits_room"  # the presenter's browser keeps CODE.TOKEN: a reload keeps the room
ROOM_COOKIE_SET = "room.cookie_set"  # this session has written that cookie
ROOM_FAILED = "room.failed_at"  # when opening a room last failed (the store unreachable): retried later
ROOM_BAR = "room_bar"  # a follower's bar (a container's key)
ROOM_LEAVE, ROOM_REJOIN = "room.leave", "room.rejoin"  # its buttons: break away, follow again
PD_PAGE, COMPARE_PAGE, SERVER_PAGE = "pd", "compare", "your_server"  # key prefixes of the non-story sections
ADVISE_PAGE = "advise"  # What should I set? (app/advise/ui.py)


@dataclass(frozen=True)
class Keys:
    """The session-state keys of one page (a story's key, "compare", "pd" or "your_server"):
    '<page>.<name>'."""

    page: str

    def widget(self, name: str) -> str:
        """A control's widget (name = its URL parameter), or any other named widget on the page."""
        return f"{self.page}.{name}"

    def mix_widget(self, part: str, tag: str) -> str:
        """A widget of the request-mix builder (app.ui.mix) for the mix whose text hashes to `tag`: a new mix
        gets fresh widgets that start from it."""
        return self.widget(f"mix.{part}.{tag}")

    @property
    def mix_open(self) -> str:  # the request-mix builder's fold
        return self.widget("mix.open")

    def tour_button(self, i: int) -> str:
        return self.widget(f"tour.{i}")

    def move_button(self, how: str) -> str:
        return self.widget(f"move.{how}")

    def chart_widget(self, chart_id: str, what: str) -> str:
        """A chart's export buttons ("png", "svg") and its click selection ("pick.<view>")."""
        return self.widget(f"{chart_id}.{what}")

    @property
    def notes(self) -> str:  # notes about the link that opened the page
        return self.widget("notes")

    @property
    def scenario(self) -> str:  # the validated scenario the page shows
        return self.widget("scenario")

    @property
    def export_note(self) -> str:  # the settings and headline an exported chart carries under its title
        return self.widget("export_note")

    @property
    def tour_step(self) -> str:  # the active tour step (0-based)
        return self.widget("tour_step")

    @property
    def step_seeded(self) -> str:  # the link's tour step has been read
        return self.widget("step_seeded")

    @property
    def pending_cursor(self) -> str:  # a tour step's cursor spec, applied on the next draw
        return self.widget("pending_cursor")

    @property
    def focus(self) -> str:  # the chart the tour points at
        return self.widget("focus")

    @property
    def playing(self) -> str:
        return self.widget("playing")

    @property
    def play_button(self) -> str:
        return self.widget("play")

    @property
    def position(self) -> str:  # the cursor: a row of the iterations frame (the scrub slider)
        return self.widget("it")

    @property
    def cursor_t(self) -> str:  # the cursor's time, kept across runs
        return self.widget("cursor_t")

    @property
    def run_key(self) -> str:  # the run the cursor was placed on
        return self.widget("run_key")

    @property
    def picked_pos(self) -> str:  # a clicked pass, handed to the scrub slider on the rerun
        return self.widget("picked_pos")

    @property
    def resolved_chunk(self) -> str:  # Compare: B's resolved chunk size, marked on the sweep
        return self.widget("resolved_chunk")


def fold_box(fold: str) -> str:
    """The expander's own key of a fold whose open state is kept under `fold` (app/ui/fold.py)."""
    return f"{fold}:box"


def keys(page: str) -> Keys:
    return Keys(page)


# -- URL <-> widget state ------------------------------------------------------------------------------
def _saved(page: str) -> dict:
    return st.session_state.setdefault(SAVED, {}).setdefault(page, {})


def seed_widgets(page: str, controls: tuple[Control, ...], extra: tuple[str, ...] = ()) -> None:
    """Seed each control's widget state from the URL / saved / default; record notes for bad parameters."""
    params = st.query_params
    notes = []
    known = {c.key for c in controls} | set(PAGE_PARAMS) | set(STREAMLIT_PARAMS) | set(extra)
    page_keys = keys(page)
    fresh = any(page_keys.widget(c.key) not in st.session_state for c in controls)
    for control in controls:
        wkey = page_keys.widget(control.key)
        if wkey in st.session_state:
            continue
        value = _saved(page).get(control.key, control.default)
        if control.key in params:
            try:
                value = control.parse(params[control.key])
            except ValueError as err:
                notes.append(f"URL parameter `{control.key}={params[control.key]}`: {err}; "
                             f"using {control.fmt(control.default)}.")
        st.session_state[wkey] = value
    if fresh:
        notes += _duplicate_notes()
        unknown = sorted(set(params.keys()) - known)
        if unknown:
            notes.append(f"Ignored unknown URL parameter(s): {', '.join(f'`{u}`' for u in unknown)}.")
        st.session_state[page_keys.notes] = notes


def _duplicate_notes() -> list[str]:
    """A parameter given more than once: the last one counts (`write_url` then keeps only it)."""
    params = st.query_params
    return [f"URL parameter `{key}` is given {len(params.get_all(key))} times; using the last, "
            f"`{key}={params[key]}`." for key in params.keys() if len(params.get_all(key)) > 1]


def seed_param(state_key: str, param: str, default, parse: Callable[[str], object]) -> str | None:
    """Seed one widget that is not a Control from URL parameter `param` (once per session).
    `parse` raises ValueError with what is allowed; returns a note when the URL value is bad."""
    if state_key in st.session_state:
        return None
    value, note = default, None
    if param in st.query_params:
        try:
            value = parse(st.query_params[param])
        except ValueError as err:
            note = f"URL parameter `{param}={st.query_params[param]}`: {err}; using {default}."
    st.session_state[state_key] = value
    return note


def notes(page: str) -> list[str]:
    return st.session_state.get(keys(page).notes, [])


def values(page: str, controls: tuple[Control, ...]) -> dict:
    out = {c.key: st.session_state.get(keys(page).widget(c.key), c.default) for c in controls}
    _saved(page).update(out)
    return out


def write_url(controls: tuple[Control, ...], current: dict, extra: dict | None = None,
              step: dict | None = None) -> None:
    """Non-default settings (and `extra`, e.g. the cursor) into the query string; everything else out.
    `step`: the active tour step's values (app.story.tour.step_values); a setting that differs from the
    step's is written too, even at its default (`step=4&mixed=0`), so the link never reads as the step's."""
    wanted = _non_defaults(controls, current, extra, step)
    params = st.query_params
    for key in list(params.keys()):
        if key not in wanted and key not in KEPT_PARAMS:
            del params[key]
    for key, value in wanted.items():
        if params.get_all(key) != [value]:  # a duplicate is rewritten as one
            params[key] = value


def url_for(page: str, controls: tuple[Control, ...], current: dict, extra: dict | None = None) -> str:
    """A relative link that reopens this view."""
    query = _non_defaults(controls, current, extra)
    return f"/{page}" + (f"?{urlencode(query)}" if query else "")


def _non_defaults(controls: tuple[Control, ...], current: dict, extra: dict | None,
                  step: dict | None = None) -> dict[str, str]:
    step = step or {}
    wanted = {c.key: c.to_url(current[c.key]) for c in controls
              if current[c.key] != c.default or current[c.key] != step.get(c.key, c.default)}
    wanted.update({k: str(v) for k, v in (extra or {}).items() if v is not None})
    return wanted


def set_cursor_param(t: float) -> None:
    st.query_params[CURSOR_T] = f"{t:.3f}"


def cursor_param(end_at: float) -> tuple[float | None, str | None]:
    """The URL's cursor time `t` (None when absent or bad) and a note when it is bad or past the run's end."""
    text = st.query_params.get(CURSOR_T)
    if text is None:
        return None, None
    try:
        t = float(text)
    except ValueError:
        t = math.nan
    if not 0 <= t <= end_at:  # NaN fails both
        return None, (f"URL parameter `{CURSOR_T}={text}`: expected seconds from 0 to the run's end "
                      f"({end_at:.3f}); using the story's default cursor.")
    return t, None


def has_cursor_param() -> bool:
    return CURSOR_T in st.query_params


def step_param(num_steps: int) -> tuple[int | None, str | None]:
    """The URL's tour step `step` (1-based in the URL, 0-based here) and a note when it is not a step."""
    text = st.query_params.get(STEP)
    if text is None:
        return None, None
    if text.isdigit() and 1 <= int(text) <= num_steps:
        return int(text) - 1, None
    return None, (f"URL parameter `{STEP}={text}`: expected a tour step from 1 to {num_steps}; "
                  "no step is active.")


# -- presenter mode ------------------------------------------------------------------------------------
def is_presenting() -> bool:
    if PRESENTING not in st.session_state:
        st.session_state[PRESENTING] = st.query_params.get(PRESENT) in ("1", "true")
    return st.session_state[PRESENTING]


def present_param() -> dict:
    """{"present": "1"} in presenter mode, so a copied link opens in it too."""
    return {PRESENT: "1" if st.session_state.get(PRESENTING) else None}
