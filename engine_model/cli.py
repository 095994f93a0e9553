"""Command line: `python -m engine_model run|reference|compare-reference|scenarios|figure`.

Bad input exits with status 2 and one line naming the key or line and what is allowed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engine_model.errors import InputError


def cmd_run(args) -> int:
    from engine_model.report import summary
    from engine_model.scenario_io import load_scenario
    from engine_model.simulation import simulate

    result = simulate(load_scenario(args.scenario, args.set))
    doc = summary(result).to_json()
    if args.json:
        json.dump(doc, sys.stdout, indent=1, default=str)
        print()
    else:
        print_text(doc)
    return 0


def print_text(doc: dict) -> None:
    m = doc["metrics"]
    print(f"{doc['scenario']}: {doc['iterations']['total']} iterations, simulated {doc['end_at']:.3f} s")
    if doc["cut_off"]:
        print(f"  cut off: {doc['cut_off']}")
    for name, g in m["groups"].items():
        ttft, gap = g["ttft_s"], g["max_itl_s"]
        print(f"  {name:>12}: {g['num_finished']}/{g['num_requests']} finished; "
              f"TTFT p50 {fmt(ttft['p50'])} p99 {fmt(ttft['p99'])}; longest gap p50 {fmt(gap['p50'])} max {fmt(gap['max'])}")


def fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}s"


def cmd_reference(args) -> int:
    from engine_model.reference import scenario_from_workload, write_trace
    from engine_model.simulation import simulate

    result = simulate(scenario_from_workload(Path(args.workload)))
    write_trace(result, Path(args.out))
    print(f"wrote {args.out}/iteration.jsonl and request.jsonl ({len(result.iterations)} iterations)")
    return 0


def cmd_compare(args) -> int:
    from engine_model.reference import compare

    report = compare(Path(args.ref_dir), Path(args.our_dir))
    print(json.dumps(report, indent=1))
    return 0 if report["ok"] else 1


def cmd_scenarios(args) -> int:
    from engine_model.scenario_io import scenario_names

    print("\n".join(scenario_names()))
    return 0


# -- figure: a story outside the app, as one standalone page or its tour as slides (engine_model/figure) --
def cmd_figure(args) -> int:
    from engine_model.figure import figure_html, story_of, write_slides

    story_of(args.story)  # an unknown story or folder exits 2 before any work
    if args.out and not Path(args.out).resolve().parent.is_dir():
        raise InputError("--out", f"{Path(args.out).parent} is not a folder")
    try:
        if args.slides:
            paths = write_slides(args.story, Path(args.slides))
            print(f"wrote {len(paths)} slides (1920x1080 PNG, one per tour step) to {args.slides}")
        if args.out or not args.slides:
            out = Path(args.out or f"{args.story}.html")
            text = figure_html(args.story)
            out.write_text(text, encoding="utf-8")
            print(f"wrote {out} ({len(text.encode()):,} bytes; opens from disk, no server or network needed)")
    except OSError as err:
        raise InputError("--slides" if args.slides and not args.out else "--out",
                         f"cannot write there: {err.strerror or err}") from None
    return 0


def add_figure(sub) -> None:
    fig = sub.add_parser("figure", help="a story as one standalone interactive HTML page, or its tour as "
                                        "slides")
    fig.add_argument("story", help="a story: forty_replies, other_stall, ten_oclock_rush, real_traffic")
    fig.add_argument("--out", metavar="FILE.html", help="the page to write (default: STORY.html)")
    fig.add_argument("--slides", metavar="DIR", help="write one 16:9 PNG per tour step into DIR")
    fig.set_defaults(func=cmd_figure)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m engine_model", description="Who Waits: a model of SGLang's scheduler")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="simulate a scenario")
    run.add_argument("scenario", help="a scenario TOML file, or a built-in name")
    run.add_argument("--set", action="append", default=[], metavar="dotted.key=value")
    run.add_argument("--json", action="store_true", help="print one JSON document")
    run.set_defaults(func=cmd_run)
    ref = sub.add_parser("reference", help="run a reference-tool workload.json with its linear predictor")
    ref.add_argument("workload")
    ref.add_argument("--out", required=True)
    ref.set_defaults(func=cmd_reference)
    cmp_ = sub.add_parser("compare-reference", help="compare our trace with a reference trace")
    cmp_.add_argument("ref_dir")
    cmp_.add_argument("our_dir")
    cmp_.set_defaults(func=cmd_compare)
    sub.add_parser("scenarios", help="list built-in scenarios").set_defaults(func=cmd_scenarios)
    add_figure(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
