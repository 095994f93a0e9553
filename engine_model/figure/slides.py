"""The guided tour as slides: one 1920x1080 PNG per step, the step's chart with its narration as a caption and
the settings in small type, for a deck.

A slide is an SVG page of our own (title, headline numbers, caption, settings) with the chart's SVG from
vl-convert nested in it, then rasterised by vl-convert; vl-convert is imported only inside `render`.
"""

from __future__ import annotations

import io
import re
import textwrap
import zipfile
from html import escape
from pathlib import Path

from engine_model.figure.rows import (
    fmt_value,
    headline_label,
    headline_value,
    kv_rows,
    pass_rows,
    queue_rows,
    stall_threshold,
    stream_rows,
)
from engine_model.figure.specs import (
    KIND_CODES,
    PART_COLOURS,
    inline,
    passes_view,
    series_view,
    streams_view,
    t,
)
from engine_model.report import summary
from engine_model.scenario_io import read_toml, validate
from engine_model.simulation import Result, simulate
from engine_model.stories import STORIES, Story, TourStep

SIZE = (1920, 1080)
CHART_BOX = (40, 175, 1840, 680)  # x, y, width, height of the chart on the slide
PD_SCENARIO = "ten_oclock_rush_pd"  # a "pd" step shows the same workload split into prefill and decode
LARGE = {"axis": {"labelFontSize": 15, "titleFontSize": 16},
         "legend": {"labelFontSize": 15, "titleFontSize": 15},
         "title": {"fontSize": 20}, "view": {"stroke": None}}


def step_values(story: Story, step: TourStep) -> dict:
    """The controls as the app sets them for a step: its settings, every other control at its default."""
    return {**story.defaults, **step.settings}


def step_run(story: Story, step: TourStep) -> Result:
    if step.focus == "pd":
        return simulate(validate(read_toml(PD_SCENARIO)))
    return simulate(story.scenario(step_values(story, step)))


def chart_of(step: TourStep, result: Result) -> dict:
    """The chart the step points at: the pass timeline, KV slots, queue depth, else the token streams."""
    if step.focus == "passes":
        rows = [(KIND_CODES[k], t(b), t(e)) for k, b, e in pass_rows(result)]
        data = inline(["k", "b", "e"], rows, b="number", e="number")
        spec = passes_view(data, "Pass timeline: what the GPU ran")
        spec["height"] = 90
    elif step.focus in ("kv", "queue"):
        is_kv = step.focus == "kv"
        rows = [(s, t(at), v) for s, at, v in (kv_rows(result) if is_kv else queue_rows(result))]
        spec = series_view(inline(["series", "at", "v"], rows, at="number", v="number"),
                           "KV cache slots" if is_kv else "Queue depth",
                           "KV slots (tokens)" if is_kv else "requests",
                           {"used": "#0072B2", "pool": "#555555"} if is_kv else
                           {"waiting": PART_COLOURS[2], "running": "#0072B2"},
                           [r.at for r in result.retractions] if is_kv else [])
    else:
        rows = [(o, p, t(b), t(e)) for o, p, b, e in stream_rows(result, stall_threshold(result))]
        spec = streams_view(inline(["o", "p", "b", "e"], rows, o="number", b="number", e="number"),
                            [r.rid for r in result.requests], "Token streams: who got a token, and when")
    return {**spec, "width": 1500, "config": LARGE}


def headline_text(story: Story, step: TourStep, result: Result) -> str:
    """The story's first two headline numbers: SGLang's defaults -> this step, on the same seed."""
    now = summary(result).metrics
    before = summary(simulate(story.scenario(story.baseline_values(step_values(story, step))))).metrics
    parts = []
    for h in story.headlines[:2]:
        was = fmt_value(headline_value(before, h), h.unit)
        now_text = fmt_value(headline_value(now, h), h.unit)
        parts.append(f"{headline_label(now, h)}: " + (f"{now_text} (SGLang defaults)" if was == now_text
                                                      else f"{was} → {now_text}"))
    return "   ·   ".join(parts)


def settings_text(story: Story, step: TourStep) -> str:
    if step.focus == "pd":
        title = read_toml(PD_SCENARIO).get("title", PD_SCENARIO)
        return (f"Settings: “{title}”: the same requests and seed on one prefill and one decode worker, "
                "SGLang defaults otherwise. Numbers: one engine on SGLang's defaults → split.")
    values = step_values(story, step)
    shown = [f"{c.label}: {_shown(c, values[c.key])}" for c in story.controls]
    return ("Settings: " + " · ".join(shown)
            + ". Numbers: SGLang's defaults → this step, same requests and seed.")


def _shown(control, value) -> str:
    return ("on" if value else "off") if control.widget == "toggle" else control.fmt(value)


def slide_svg(title: str, headline: str, chart_svg: str, caption: str, settings: str) -> str:
    """A 1920x1080 page: title, headline numbers, the chart scaled into its box, caption, settings."""
    x, y, w, h = CHART_BOX
    box = f' x="{x}" y="{y}" width="{w}" height="{h}"'
    chart = re.sub(r'\swidth="[\d.]+" height="[\d.]+"', box, chart_svg, count=1)
    lines = textwrap.wrap(caption, 100)[:4]
    text = [f'<text x="60" y="{905 + 40 * i}" font-size="30">{escape(line)}</text>'
            for i, line in enumerate(lines)]
    small = "".join(f'<text x="60" y="{1038 + 24 * i}" font-size="18" fill="#666666">{escape(line)}</text>'
                    for i, line in enumerate(textwrap.wrap(settings, 175)[:2]))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{SIZE[0]}" height="{SIZE[1]}" '
            f'viewBox="0 0 {SIZE[0]} {SIZE[1]}" font-family="sans-serif" fill="#222222">'
            f'<rect width="{SIZE[0]}" height="{SIZE[1]}" fill="white"/>'
            f'<text x="60" y="95" font-size="54" font-weight="bold">{escape(title)}</text>'
            f'<text x="60" y="150" font-size="28" fill="#444444">{escape(headline)}</text>'
            f'{chart}{"".join(text)}'
            f'{small}</svg>')


def render(svg_or_spec) -> bytes:
    import vl_convert

    if isinstance(svg_or_spec, dict):
        return vl_convert.vegalite_to_svg(svg_or_spec)
    return vl_convert.svg_to_png(svg_or_spec)


def slide_images(key: str) -> list[tuple[str, bytes]]:
    """(file name, PNG bytes) per tour step, in order."""
    story = STORIES[key]
    out = []
    for i, step in enumerate(story.tour, 1):
        result = step_run(story, step)
        head = headline_text(story, step, result)
        svg = slide_svg(f"{i}. {step.title}", head, render(chart_of(step, result)), step.say,
                        settings_text(story, step))
        out.append((f"{key}-{i:02d}.png", render(svg)))
    return out


def slides_zip(key: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in slide_images(key):
            zf.writestr(name, data)
    return buf.getvalue()


def write_slides(key: str, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in slide_images(key):
        (folder / name).write_bytes(data)
        paths.append(folder / name)
    return paths
