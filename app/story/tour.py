"""The guided tour: numbered steps that set the controls, move the cursor and point at one chart. A step's
narration quotes the runs on screen (app.present.numbers.narrate), so it is drawn once they are computed."""

from __future__ import annotations

import streamlit as st

from app import compute, state
from app.charts.frames import RunFrames
from app.pd import params as pd_params
from app.pd.narration import step_words
from app.present.numbers import narrate
from app.ui.chart import look_here
from app.ui.fold import open_fold
from engine_model import Story

# The folds of a story page that a step's focus may sit in (app.story.timeline, app.story.sections), and the
# PD section's toggle (it opens hidden): the step opens them, so what it points at is built and in view.
STEPS, WAIT, MEMORY = "steps.open", "wait.open", "memory.open"
GAPS, STALLS, PD_CHARTS = "gaps.open", "stalls.open", "pd.charts.open"
OPENS = {"passes": (STEPS,), "wait": (WAIT,), "kv": (MEMORY,), "queue": (MEMORY,), "itl": (GAPS,),
         "why": (STALLS,), "pd": (pd_params.widget_key(state.PD_ON), PD_CHARTS)}


# Keyboard and presentation clicker (they send PageDown / PageUp, some the arrows): the next or previous tour
# step, Home the first. Streamlit has no key events, so a script in the page (st.html runs it in the app's
# own document, not an iframe) listens on the document and clicks the tour's buttons: the same click a
# person makes, so the step applies the same way. Not while focus is in a field, a list, a slider or a
# chart (their own keys); a focused button is left first, so Space does not also press it. Installed once.
KEYS_JS = """<script>
(() => {
  if (window.wwTourKeys) return;
  window.wwTourKeys = true;
  const MOVES = {ArrowRight: 1, PageDown: 1, " ": 1, ArrowLeft: -1, PageUp: -1, Home: 0};
  const OWN_KEYS = 'input, textarea, select, [contenteditable=""], [contenteditable="true"], '
    + '[role="slider"], [role="listbox"], [role="combobox"], [role="textbox"], [role="spinbutton"], '
    + '.vega-embed';
  document.addEventListener("keydown", (event) => {
    if (!(event.key in MOVES) || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const focus = document.activeElement;
    if (focus && focus !== document.body && focus.closest(OWN_KEYS)) return;
    const steps = [...document.querySelectorAll(".st-key-{row} button")];
    if (!steps.length) return;
    const active = steps.findIndex((b) => (b.getAttribute("kind") || "").startsWith("primary"));
    const move = MOVES[event.key];
    const next = move === 0 ? 0 : active < 0 ? (move > 0 ? 0 : -1) : active + move;
    if (next < 0 || next >= steps.length || next === active) return;  // past the ends: the key's own use
    event.preventDefault();  // no page scroll: the step scrolls to what it points at
    if (focus && focus.blur) focus.blur();
    steps[next].click();
  });
})();
</script>"""


def tour_ui(story: Story):
    """Numbered step buttons; a click sets the controls and the cursor. Returns the place for the active
    step's narration (`narration_ui` fills it once the runs are known)."""
    keys = state.keys(story.key)
    with st.container(border=True):
        # one flex row, not a column per button: each block is a React subtree a first view draws
        row = st.container(horizontal=True, vertical_alignment="center", gap="small", key=state.TOUR_ROW)
        row.markdown("**Guided tour**  \nclick a step", width=100)
        for i, step in enumerate(story.tour):
            row.button(f"{i + 1}. {step.title}", key=keys.tour_button(i), on_click=apply_step,
                       args=(story, i), width="stretch", wrap=True,
                       type="primary" if st.session_state.get(keys.tour_step) == i else "secondary")
        st.html(KEYS_JS.replace("{row}", state.TOUR_ROW), unsafe_allow_javascript=True)
        return st.empty()


def narration_ui(story: Story, slot, current: RunFrames, base: RunFrames, values: dict | None = None
                 ) -> int | None:
    """The active step's narration, its figures taken from the current run and its baseline (a PD step's
    also from the PD section's runs, app.pd.narration). Returns the active step (0-based) or None."""
    active = st.session_state.get(state.keys(story.key).tour_step)
    st.session_state[state.TOUR_WORDS] = None
    if active is not None:
        step = story.tour[active]
        words = narrate(step.say, story, base, current, step.cursor)
        if step.focus == "pd" and values is not None:
            section = {param: st.session_state.get(pd_params.widget_key(param), default)
                       for param, default in pd_params.DEFAULTS.items()}
            words += " " + step_words(section.get(state.PD_PRESET, "rush"), values, compute.run_scenario,
                                      section)
        st.session_state[state.TOUR_WORDS] = words
        slot.info(f"**Step {active + 1} of {len(story.tour)} — {step.title}.** {words}",
                  icon=":material/record_voice_over:")
    return active


def active_step(story: Story):
    """The tour step on screen, or None."""
    active = st.session_state.get(state.keys(story.key).tour_step)
    return None if active is None else story.tour[active]


def step_values(story: Story, i: int) -> dict:
    """What step `i` sets the controls to: its own settings, and every flag and every control of the main
    row back to its default (the settings the step's narration describes)."""
    step = story.tour[i]
    return {c.key: step.settings.get(c.key, c.default) for c in story.controls
            if c.is_flag or c.key in step.settings or c.where == "main"}


def apply_step(story: Story, i: int, link: bool = False) -> None:
    """Make step `i` the active one: its settings, its section (PD), its folds open, its cursor and pointer.
    `link`: the page opened on a link's `step=N` (app.story.top), whose own parameters win over the step's."""
    step, keys = story.tour[i], state.keys(story.key)
    given = set(st.query_params.keys()) if link else set()
    for key, value in step_values(story, i).items():
        if key not in given:
            st.session_state[keys.widget(key)] = value
    if any(s.section for s in story.tour):  # the page's section (PD) back to its defaults, then this step's
        shown = {state.PD_ON: True} if step.focus == "pd" else {}  # a PD step shows the section
        section = {**pd_params.DEFAULTS, **shown, **step.section}
        for param, value in section.items():
            if param not in given:
                st.session_state[pd_params.widget_key(param)] = value
    for key in OPENS.get(step.focus, ()):  # what the step points at is built and in view
        open_fold(key)
    _, folded = switch_and_rest(story)
    shown = {c.key: st.session_state.get(keys.widget(c.key), c.default) for c in folded}
    if any(shown[c.key] != c.default for c in folded):  # the setting it changed (or the link did)
        open_fold(settings_fold(story.key))
    st.session_state[keys.tour_step] = i
    if not (link and state.has_cursor_param()):
        st.session_state[keys.pending_cursor] = step.cursor
    st.session_state[keys.focus] = step.focus
    st.session_state[keys.playing] = False
    st.session_state.pop(state.SCROLLED_TO, None)  # the page scrolls to the step's pointer, even the same one


def switch_and_rest(story: Story) -> tuple:
    """The story's switch (the first control of its settings row: mixed chunk) and the rest of that row,
    which sit in a fold (`settings_fold`; app.story.top.settings_ui)."""
    main = [c for c in story.controls if c.where == "main"]
    return main[0], main[1:]


def settings_fold(page: str) -> str:
    """The session key of the fold that holds a story's settings after its switch (app.story.top)."""
    return state.keys(page).widget("settings")


def pointer(story: Story, chart_id: str) -> str | None:
    """The active step's title when it is about this chart (or section), else None."""
    keys = state.keys(story.key)
    active = st.session_state.get(keys.tour_step)
    if st.session_state.get(keys.focus) == chart_id and active is not None:
        return story.tour[active].title
    return None


def focus_marker(story: Story, chart_id: str, words: bool = True) -> None:
    """The tour's pointer above a section that is not a single chart (the PD section, the headline cards,
    the two stalls apart)."""
    title = pointer(story, chart_id)
    if title is not None:
        look_here(title, words)
