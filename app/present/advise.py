"""What should I set?, for people: each candidate's links into the app (its story page and Compare, from the
story URL parameters the pages read), the Pareto chart, and its image. No Streamlit: the page and
`who-waits advise` both use these.
"""

from __future__ import annotations

from urllib.parse import urlencode

import altair as alt
import pandas as pd

from app.pd import names as pd_names
from app.present.export import export_spec, render
from engine_model import STORIES, WAITS, Advice, Budget, Candidate, advice_headline

COMPARE_STORY = "story"  # app.state.STORY: Compare's story parameter (app.state imports Streamlit)
TP_OPTIONS = (1, 2, 4, 8)  # the story pages' TP select (engine_model.stories.TP_OPTIONS)
KIND_PD, KIND_ENGINE = "PD (prefill : decode workers)", "engines × TP"


def story_values(budget: Budget, candidate: Candidate) -> tuple[dict, list[str]]:
    """The story controls' URL values for this candidate, and what no control of the page can carry."""
    values = {
        "gpu": budget.gpu,
        "model": budget.model,
        "mixed": "1" if candidate.mixed else "0",
        "chunk": str(candidate.chunk),
        "policy": candidate.policy,
    }
    missing = []
    layout = candidate.layout
    tp = layout.gpus if layout.is_pd else layout.tp
    if tp in TP_OPTIONS:
        values["tp"] = str(tp)
    else:
        missing.append(f"TP {tp}")
    if layout.is_pd:
        values.update(
            {
                pd_names.PD_ON: "1",
                pd_names.PD_PREFILL_WORKERS: str(layout.prefill),
                pd_names.PD_DECODE_WORKERS: str(layout.decode),
                pd_names.PD_TP: str(layout.tp),
            }
        )
    elif layout.engines > 1:
        missing.append(f"{layout.engines} engines (engine.dp_size={layout.engines})")
    if candidate.conservativeness != 1.0:
        missing.append(f"conservativeness {candidate.conservativeness:g}")
    if candidate.max_running is not None:
        missing.append(f"max running requests {candidate.max_running}")
    return values, missing


def links(scenario_name: str, budget: Budget, candidate: Candidate) -> dict[str, str]:
    """{"story": its story page, "compare": Compare with SGLang's defaults as A and it as B, "missing": what
    neither can set} where the scenario is a story's; {} for any other mix."""
    story = STORIES.get(scenario_name)
    if story is None:
        return {}
    values, missing = story_values(budget, candidate)
    keys = {c.key: c for c in story.controls}
    defaults = {k: keys[k].to_url(keys[k].default) for k in values if k in keys}
    shown = {k: v for k, v in values.items() if k not in keys or v != defaults[k]}
    out = {"story": f"/{story.key}?{urlencode(shown)}"}
    if not candidate.layout.is_pd:
        flags = {c.key for c in story.controls if c.is_flag}
        compare = {COMPARE_STORY: story.key}
        compare.update(
            {
                (f"b_{k}" if k in flags else k): v
                for k, v in values.items()
                if k in keys and (k in flags or v != defaults[k])
            }
        )
        out["compare"] = f"/compare?{urlencode(compare)}"
    if missing:
        out["missing"] = "not on the page: " + ", ".join(missing)
    return out


def cli_links(scenario, budget: Budget, candidate: Candidate, base: str = "http://localhost:8501") -> dict:
    """`who-waits advise`'s links: absolute, on the app's default address."""
    found = links(scenario.name, budget, candidate)
    return {k: (base + v if k != "missing" else v) for k, v in found.items()}


# -- the Pareto chart ---------------------------------------------------------------------------------
def axis_title(group: str | None, wait: str) -> str:
    """'p95 first token of the most-waiting group (s)', 'questions: longest pause (s)'."""
    noun = WAITS[wait][2]
    return f"{noun} of the most-waiting group (s)" if group is None else f"{group}: {noun} (s)"


def frame(advice: Advice, group: str | None = None, wait: str = "ttft_p95") -> pd.DataFrame:
    """One row per candidate that ran to the end: output per GPU, the wait on the x axis (a group's, or the
    most-waiting group's), its kind, on the front or not, today's and the recommended marked."""
    front = {o.key for o in advice.front(group, wait)}
    best = advice.best.key if advice.best else None
    rows = []
    for o in (advice.today, *advice.outcomes):
        value = o.worst(wait) if group is None else o.wait(group, wait)
        if not o.runs or o.unfinished or o.cut_off or value is None:
            continue
        role = "recommended" if o.key == best else "today" if o.key == advice.today.key else ""
        rows.append(
            {
                "output_per_gpu": o.output_per_gpu,
                "wait_s": value,
                "kind": KIND_PD if o.candidate.layout.is_pd else KIND_ENGINE,
                "front": o.key in front,
                "role": role,
                "setting": o.candidate.words,
                "meets": advice.meets(o),
            }
        )
    return pd.DataFrame(rows).drop_duplicates(subset=["setting"])


def pareto_chart(advice: Advice, group: str | None = None, wait: str = "ttft_p95") -> alt.Chart:
    """Output per GPU against one wait (default: the most-waiting group's p95 first token): every candidate,
    coloured by layout kind, the front as a line, today and the recommendation marked and labelled."""
    data = frame(advice, group, wait)
    x = alt.X("wait_s:Q", title=axis_title(group, wait), scale=alt.Scale(zero=False))
    y = alt.Y("output_per_gpu:Q", title="output tokens/s per GPU", scale=alt.Scale(zero=False))
    tip = [
        alt.Tooltip("setting:N"),
        alt.Tooltip("output_per_gpu:Q", format=",.1f"),
        alt.Tooltip("wait_s:Q", format=",.2f", title=axis_title(group, wait)),
        alt.Tooltip("meets:N"),
    ]
    points = (
        alt.Chart(data)
        .mark_circle(size=60, opacity=0.75)
        .encode(x=x, y=y, color=alt.Color("kind:N", title="layout"), tooltip=tip)
    )
    line = (
        alt.Chart(data[data["front"]])
        .mark_line(color="#555", strokeDash=[4, 3])
        .encode(x=x, y=y, order="wait_s:Q")
    )
    marked = data[data["role"] != ""]
    rings = (
        alt.Chart(marked)
        .mark_point(size=300, strokeWidth=2.5, filled=False, color="black")
        .encode(x=x, y=y, tooltip=tip)
    )
    labels = (
        alt.Chart(marked)
        .mark_text(align="left", dx=12, dy=-10, fontWeight="bold")
        .encode(x=x, y=y, text="role:N")
    )
    return (points + line + rings + labels).properties(width="container", height=360)


def chart_png(advice: Advice, group: str | None = None, wait: str = "ttft_p95") -> bytes:
    spec = pareto_chart(advice, group, wait).to_dict()
    title = f"What should I set? {advice.scenario} on {advice.budget.words}"
    return render(export_spec(spec, title, (advice_headline(advice),)), "png")
