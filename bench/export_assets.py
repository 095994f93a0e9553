"""The forty replies' exported images, made by the app's own export path: before (SGLang defaults), after
(mixed chunk on) and A against B in one image, as Compare exports it. Writes
assets/forty_replies_export_*.png.

Run: .venv/bin/python bench/export_assets.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.charts import timelines  # noqa: E402
from app.charts.frames import build  # noqa: E402
from app.charts.views import TOKENS_TITLE  # noqa: E402
from app.compare.charts import pair_views  # noqa: E402
from app.compare.pair import pair_note, side_words  # noqa: E402
from app.present.export import export_spec, render, stacked_spec  # noqa: E402
from app.present.settings import story_note  # noqa: E402
from engine_model import STORIES, simulate  # noqa: E402


def tokens_json(run, cursor_at: float) -> str:
    """The story page's token-streams chart, cursor included (the export must leave it out)."""
    chart = timelines.token_streams(run.tokens, run.stalls, run.chunks, run.waits, run.request_order,
                                    cursor_at, run.end_at, run.stall_threshold_s, run.chunk_pass_s)
    return json.dumps(chart.to_dict(validate=False))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(REPO / "assets"))
    out = Path(parser.parse_args().out)
    story = STORIES["forty_replies"]
    before_values, after_values = story.defaults, {**story.defaults, "mixed": True}
    before = build(simulate(story.scenario(before_values)))
    after = build(simulate(story.scenario(after_values)))
    for name, values, run in (("before", before_values, before), ("after", after_values, after)):
        note = story_note(story, values, run, before)
        spec = export_spec(json.loads(tokens_json(run, 2.0)), TOKENS_TITLE, note)
        (out / f"forty_replies_export_{name}.png").write_bytes(render(spec, "png"))
    flags = {c.key for c in story.controls if c.is_flag}
    a, b = ({k: v for k, v in vals.items() if k in flags} for vals in (before_values, after_values))
    shared = {k: v for k, v in story.defaults.items() if k not in flags}
    note = pair_note(story, before, after, a, b, shared)
    views = pair_views(before, after, side_words(story, a, b))
    spec = stacked_spec([(view.build().to_dict(validate=False), view.title) for view in views],
                        f"{story.title}: A against B", note)
    (out / "forty_replies_export_a_and_b.png").write_bytes(render(spec, "png"))
    print(f"wrote {out}/forty_replies_export_{{before,after,a_and_b}}.png")


if __name__ == "__main__":
    main()
