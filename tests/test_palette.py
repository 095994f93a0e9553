"""One colour per meaning (app/charts/scales.py PALETTE, docs/app.md "Colours"): across every chart the app,
the standalone page and the slides draw, a colour of the palette only ever stands for its own meaning, and a
meaning's label is only ever drawn in its colour. The stall shades stand only for "no token"."""

from __future__ import annotations

import colorsys

import pytest
from story_runs import channels, scenario_run

from app.charts import views
from app.charts.pass_cost import TERM_COLOURS
from app.charts.scales import GAP_SHADES, PALETTE, SERIES_COLOURS
from app.compare.charts import pair_views
from app.pd.presets import pd_scenario
from engine_model import STORIES

BY_COLOUR = {c.upper(): meaning for meaning, (c, _) in PALETTE.items()}
BY_LABEL = {label: meaning for meaning, (_, labels) in PALETTE.items() for label in labels}
STALL_SHADES = {c.upper() for c in GAP_SHADES}


def drawn(spec: dict) -> list[tuple[str, str]]:
    """(label, colour) of every colour scale entry and every fixed mark colour (label: the mark's type)."""
    pairs = []
    for enc in channels(spec, "color"):
        scale = enc.get("scale", {})
        if isinstance(scale.get("domain"), list) and isinstance(scale.get("range"), list):
            pairs += list(zip(scale["domain"], scale["range"], strict=False))

    def marks(node):
        if isinstance(node, dict):
            mark = node.get("mark")
            if isinstance(mark, dict) and isinstance(mark.get("color"), str):
                pairs.append((f"mark:{mark['type']}", mark["color"]))
            for key, value in node.items():
                if key not in ("datasets", "data"):
                    marks(value)
        elif isinstance(node, list):
            for value in node:
                marks(value)
    marks(spec)
    return pairs


def every_chart() -> dict[str, dict]:
    out = {}
    for key, story in STORIES.items():
        run = scenario_run(story.scenario(story.defaults))
        for view in views.story_views(run) + list(views.itl_views(run).values()):
            out[f"{key}/{view.chart_id}"] = view.build().to_dict(validate=False)
        mixed = scenario_run(story.scenario({**story.defaults, "mixed": True}))
        for view in pair_views(run, mixed, ("SGLang defaults", "mixed chunk on")):
            out[f"{key}/compare-{view.chart_id}"] = view.build().to_dict(validate=False)
    rush = STORIES["ten_oclock_rush"].defaults
    run = scenario_run(pd_scenario("rush", rush, "early", 0, 1, 1))
    for view in views.pd_views(run, "early", run.end_at):
        out[f"pd/{view.chart_id}"] = view.build().to_dict(validate=False)
    return out


@pytest.fixture(scope="session")
def charts() -> dict[str, dict]:
    return every_chart()


def test_each_palette_colour_means_one_thing_on_every_chart(charts):
    wrong = []
    for name, spec in charts.items():
        for label, colour in drawn(spec):
            meaning = BY_COLOUR.get(str(colour).upper())
            if meaning is not None and not str(label).startswith("mark:") and BY_LABEL.get(label) != meaning:
                wrong.append((name, label, colour, meaning))
            if label in BY_LABEL and str(colour).upper() != PALETTE[BY_LABEL[label]][0].upper():
                wrong.append((name, label, colour, "should be " + PALETTE[BY_LABEL[label]][0]))
    assert wrong == []


def pinkish(colour: str) -> bool:
    """A pink, magenta or purple: hue 280-345 degrees, not grey."""
    if not (isinstance(colour, str) and colour.startswith("#") and len(colour) == 7):
        return False
    r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    hue, _, saturation = colorsys.rgb_to_hls(r, g, b)
    return saturation > 0.2 and 280 <= hue * 360 <= 345


def test_pinks_and_purples_mean_only_no_token(charts):
    """Pinks and purples appear only on stalls: the lanes' shades (labelled by length) and the wait for the
    next token (a line)."""
    found = [(name, label, colour) for name, spec in charts.items() for label, colour in drawn(spec)
             if pinkish(colour) and not (label.endswith((" s", "or more")) or label == "mark:line")]
    assert found == []
    assert all(pinkish(c) for c in GAP_SHADES)


def test_the_palettes_do_not_share_a_colour():
    meanings = {c.upper() for c, _ in PALETTE.values()}
    series = {c.upper() for c in SERIES_COLOURS}
    terms = {c.upper() for c in TERM_COLOURS.values()}
    assert len(meanings) == len(PALETTE)
    assert not meanings & series and not meanings & terms and not STALL_SHADES & (meanings | series | terms)


def _rgb(colour: str) -> tuple[float, float, float]:
    return tuple(int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))


def test_a_streaming_bar_is_never_a_retraction(charts):
    """A steady run of tokens is one bar: at projector scale it must not read as the retracted swatch (a
    near-black bar next to dark grey did). Its colour is far from every grey of the lanes' states."""
    greys = [PALETTE[m][0] for m in ("retracted", "waiting", "unused")]
    for name, spec in charts.items():
        if not name.endswith("/tokens"):
            continue
        bars = [c for label, c in drawn(spec) if label == "mark:bar"]
        assert bars, name
        for bar in bars:
            hue, light, saturation = colorsys.rgb_to_hls(*_rgb(bar))
            assert saturation > 0.5, (name, bar)  # a colour, not a grey
            for grey in greys:
                assert sum(abs(a - b) for a, b in zip(_rgb(bar), _rgb(grey), strict=True)) > 0.6, (name, bar)


def test_lane_states_are_drawn_opaque_in_their_legend_colour(charts):
    """A queue wait or a retraction is drawn over the stall it causes: see-through, the dark grey showed
    mauve where the legend says dark grey."""
    def bars_with_state(node, out):
        if isinstance(node, dict):
            colour = node.get("encoding", {}).get("color", {})
            if isinstance(colour, dict) and colour.get("field") == "state":
                out.append(node)
            for key, value in node.items():
                if key not in ("datasets", "data"):
                    bars_with_state(value, out)
        elif isinstance(node, list):
            for value in node:
                bars_with_state(value, out)
        return out
    seen = 0
    for name, spec in charts.items():
        if not name.endswith("/tokens"):
            continue
        for layer in bars_with_state(spec, []):
            mark = layer.get("mark")
            opacity = mark.get("opacity", 1) if isinstance(mark, dict) else 1
            assert opacity == 1, (name, mark)
            seen += 1
    assert seen
