"""`python -m engine_model advise` (and `who-waits advise`, which adds app links): the search from the
command line. Prints the recommendation, its trade against today, the Pareto front, and how to open each
candidate (`run --set ...`, and an app link where the caller gives one)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from engine_model.errors import InputError

SPACE_AXES = {
    "mixed": "mixed",
    "chunk": "chunk",
    "policy": "policy",
    "conservativeness": "conservativeness",
    "max_running": "max_running",
    "speculative": "speculative",
    "first": "first",
}


def add_advise(sub, set_help: str, mix_help: str) -> None:
    p = sub.add_parser(
        "advise",
        help="what should I set? search SGLang's flags and GPU layouts for a "
        "request mix under targets for both waits",
        epilog="example: python -m engine_model advise ten_oclock_rush --gpus 8 --gpu h100-sxm "
        "--model llama-3.1-70b --target questions.ttft_p95=2s "
        "--target questions.longest_pause=4s",
    )
    p.add_argument("scenario", help="a scenario TOML file, or a built-in name: its workload is the mix")
    p.add_argument("--set", action="append", default=[], metavar="dotted.key=value", help=set_help)
    p.add_argument("--mix", metavar="MIX", help=mix_help)
    p.add_argument("--gpus", type=int, default=8, help="GPUs in the budget (default 8)")
    p.add_argument("--gpu", default="h100-sxm", help="the GPU preset (default h100-sxm)")
    p.add_argument("--model", default=None, help="the model preset (default: the scenario's)")
    p.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="GROUP.WAIT=SECONDS",
        help="a target per group: WAIT is ttft_p95, longest_pause or itl_p99 "
        "(questions.ttft_p95=2s, contracts.itl_p99=200ms); repeat for more",
    )
    p.add_argument(
        "--space",
        action="append",
        default=[],
        metavar="AXIS=v1,v2",
        help="the values searched on one axis (mixed=false,true chunk=auto,2048,4096 "
        "policy=fcfs,shortest-prefill-first conservativeness=1,1.5 max_running=auto,64; off by default: "
        "speculative=off,EAGLE,NGRAM first=none,GROUP, a group of the mix outranking the rest); "
        "--no-pd leaves PD layouts out",
    )
    p.add_argument("--no-pd", action="store_true", help="search single-engine layouts only")
    p.add_argument("--dp-attention", action="store_true",
                   help="also one engine of all the GPUs with DP attention over 2, 4, … ranks")
    p.add_argument(
        "--method",
        choices=["auto", "grid", "optuna"],
        default="auto",
        help="auto: the whole grid up to 300 candidates, else Optuna's NSGA-II",
    )
    p.add_argument("--trials", type=int, default=200, help="candidates Optuna runs (default 200)")
    p.add_argument("--seed", type=int, default=0, help="the search's seed (Optuna's sampler)")
    p.add_argument(
        "--workers", type=int, default=None, help="parallel runs (default: the cores this may use)"
    )
    p.add_argument(
        "--backend",
        choices=["processes", "dask"],
        default="processes",
        help="local processes (default), or Dask distributed (pip install 'who-waits[cluster]')",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDR",
        help="a running Dask scheduler (tcp://host:8786); default: a LocalCluster of --workers processes",
    )
    p.add_argument("--max-candidates", type=int, default=2000, help="refuse a search past this many runs")
    p.add_argument("--cache", metavar="DIR", help="keep every outcome in DIR, reused by the next search")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--csv", metavar="FILE", help="write every candidate as a CSV row")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_advise)


def space_of(budget, texts: list[str], no_pd: bool, groups: tuple[str, ...] = (), dp_attention: bool = False):
    from engine_model.advise.space import default_space

    space = default_space(budget, pd=not no_pd, dp_attention=dp_attention)
    values = {}
    for text in texts:
        axis, sep, listed = text.partition("=")
        if not sep or axis not in SPACE_AXES or not listed.strip():
            raise InputError(
                f"--space {text[:60]}", f"expected AXIS=v1,v2 with AXIS one of {', '.join(SPACE_AXES)}"
            )
        values[axis] = tuple(parse_axis(axis, v.strip(), text, groups) for v in listed.split(","))
    return space.narrowed(**values)


def parse_axis(axis: str, text: str, where: str, groups: tuple[str, ...] = ()):
    from engine_model.advise.space import first_value

    if axis == "first":  # a group of the mix outranks the others
        if text.lower() == "none":
            return None
        if text not in groups or " " in text:
            raise InputError(f"--space {where[:60]}", f"{text!r}: expected none or a group of the mix "
                                                      f"({', '.join(groups)})")
        return first_value(groups.index(text), text)
    try:
        if axis == "speculative":
            from engine_model.advise.space import SPECULATIVE

            if text.lower() in ("off", "none"):
                return None
            if text.upper() not in SPECULATIVE:
                raise ValueError
            return text.upper()

        if axis == "mixed":
            return {"true": True, "false": False, "on": True, "off": False}[text.lower()]
        if axis == "chunk":
            return "auto" if text == "auto" else int(text)
        if axis == "policy":
            from engine_model.advise.space import WANTED_POLICIES

            if text not in WANTED_POLICIES:
                raise ValueError
            return text
        if axis == "conservativeness":
            return float(text)
        return None if text == "auto" else int(text)
    except (KeyError, ValueError):
        raise InputError(f"--space {where[:60]}", f"{text!r} is not a value of {axis}") from None


def bar(done: int, total: int) -> None:
    """A progress bar on stderr: redrawn in place on a terminal, a line per tenth elsewhere (a log, CI)."""
    width, total = 30, max(total, 1)
    line = f"[{'#' * int(width * done / total):<{width}}] {done}/{total} candidates"
    if sys.stderr.isatty():
        print(f"\r{line}", end="\n" if done >= total else "", file=sys.stderr, flush=True)
    elif done == total or 10 * done // total != 10 * (done - 1) // total:
        print(line, file=sys.stderr, flush=True)


def document(advice, table: list[dict], links: dict) -> dict:
    from engine_model.advise.targets import WAITS
    from engine_model.advise.words import counts_line, headline, trade_lines

    def key_of(o):
        return None if o is None else o.key

    return {
        "scenario": advice.scenario,
        "budget": vars(advice.budget),
        "targets": [t.text for t in advice.targets],
        "method": advice.method,
        "seed": advice.seed,
        "headline": headline(advice),
        "trade": trade_lines(advice),
        "counts": counts_line(advice),
        "today": advice.today.to_dict(),
        "recommended": key_of(advice.best),
        "closest": key_of(advice.closest),
        "front": [o.key for o in advice.front(None, "ttft_p95")],
        # output per GPU against each wait: the most-waiting group's ("worst.WAIT") and each group's
        "fronts": {
            f"{group or 'worst'}.{wait}": [o.key for o in advice.front(group, wait)]
            for group in (None, *advice.groups)
            for wait in WAITS
        },
        "candidates": table,
        "links": links,
    }


def cmd_advise(args, link=None) -> int:
    from engine_model.advise.search import advise
    from engine_model.advise.space import Budget
    from engine_model.advise.table import rows, to_csv
    from engine_model.advise.targets import parse_target
    from engine_model.advise.words import counts_line, headline, trade_lines
    from engine_model.mix import on_mix
    from engine_model.scenario_io import load_scenario

    scenario = on_mix(load_scenario(args.scenario, args.set), args.mix)
    budget = Budget(args.gpus, args.gpu, args.model or scenario.model.name)
    budget.check()
    groups = tuple(g.name for g in scenario.workload.groups)
    targets = [parse_target(t, groups) for t in args.target]
    space = space_of(budget, args.space, args.no_pd, groups, args.dp_attention)
    if args.csv and not Path(args.csv).resolve().parent.is_dir():
        raise InputError("--csv", f"{Path(args.csv).parent} is not a folder")
    if args.workers is not None and not 1 <= args.workers <= 256:
        raise InputError("--workers", f"{args.workers}: expected 1 to 256")
    advice = advise(
        scenario,
        budget,
        targets,
        space,
        seed=args.seed,
        backend=args.backend,
        workers=args.workers,
        scheduler=args.scheduler,
        max_candidates=args.max_candidates,
        trials=args.trials,
        method=args.method,
        progress=None if args.quiet or args.json else bar,
        cache_dir=args.cache,
    )
    table = rows(advice)
    scenario_arg = args.scenario
    opened = {}
    for o in (advice.today, *advice.outcomes):
        command = [
            "python -m engine_model run",
            scenario_arg,
            *[f"--set {s}" for s in args.set],
            *([f"--mix {args.mix}"] if args.mix else []),
            *[f"--set '{s}'" for s in o.candidate.sets(budget)],
        ]
        opened[o.key] = {"run": " ".join(command), **(link(scenario, budget, o.candidate) if link else {})}
    if args.csv:
        Path(args.csv).write_text(to_csv(table), encoding="utf-8")
    if args.json:
        print(json.dumps(document(advice, table, opened), indent=1, default=str))
        return 0
    print(headline(advice))
    for line in trade_lines(advice):
        print(f"  {line}")
    print(counts_line(advice))
    print("Pareto front, output per GPU against the most-waiting group's p95 first token:")
    for o in advice.front(None, "ttft_p95"):
        mark = " (recommended)" if advice.best and o.key == advice.best.key else ""
        print(f"  {o.output_per_gpu:8.1f} tok/s/GPU  {o.worst('ttft_p95'):8.2f} s  {o.candidate.words}{mark}")
    pick = advice.best or advice.closest
    if pick is not None:
        print("Open it:")
        for how, where in opened[pick.key].items():
            print(f"  {how}: {where}")
    if args.csv:
        print(f"wrote {args.csv} ({len(table)} rows: every candidate, the command to open each)")
    return 0
