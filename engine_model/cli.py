"""Command line: `python -m engine_model run|advise|diagnose|trace|scenarios|reference|compare-reference`.

Bad input exits with status 2 and one line naming the key or line and what is allowed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engine_model.errors import InputError
from engine_model.files import name_of

MAX_REASONS = 5


def cmd_run(args) -> int:
    from engine_model.feasibility import check
    from engine_model.mix import on_mix
    from engine_model.report import summary
    from engine_model.scenario_io import load_scenario
    from engine_model.simulation import simulate

    scenario = on_mix(load_scenario(args.scenario, args.set), args.mix)
    check(scenario)  # a deployment that cannot run exits 2 with the fix, as the app refuses it
    result = simulate(scenario)
    doc = summary(result).to_json()
    if args.json:
        json.dump(doc, sys.stdout, indent=1, default=str)
        print()
    else:
        print_text(doc, result)
    return 0


def print_text(doc: dict, result) -> None:
    m = doc["metrics"]
    print(f"{doc['scenario']}: {doc['iterations']['total']} iterations, simulated {doc['end_at']:.3f} s")
    print(f"  {deployment_line(doc['config'])}")
    if doc["cut_off"]:
        print(f"  cut off: {doc['cut_off']}")
    mid_reply = {r.group for r in result.requests if r.is_mid_reply}
    for name, g in m["groups"].items():
        ttft, gap = g["ttft_s"], g["max_itl_s"]
        mark = "*" if ttft["p50"] is None and name in mid_reply else ""
        print(f"  {name:>12}: {g['num_finished']}/{g['num_requests']} finished; "
              f"TTFT p50 {fmt(ttft['p50'])}{mark} p99 {fmt(ttft['p99'])}{mark}; "
              f"longest gap p50 {fmt(gap['p50'])} max {fmt(gap['max'])}")
    if any(g["ttft_s"]["p50"] is None for name, g in m["groups"].items() if name in mid_reply):
        print("  * no TTFT: these replies were already streaming when the run began (already_generated > 0),")
        print("    so their first token came before it; their longest gap is the figure to read")
    if result.preemptions:
        counts = doc["iterations"]
        print(f"  preempted: {counts['num_preempted_requests']} times by higher-priority requests "
              f"({m['overall']['num_preempted']} requests; their KV freed, prefilled again)")
    print_unfinished(result, doc["cut_off"])


def deployment_line(config: dict) -> str:
    """'8 × H100 SXM 80GB, TP 8 · Llama-3.1-70B, bf16 weights, bf16 KV · KV pool ...'"""
    from engine_model.deployment import gpus_words, pool_words

    res, model = config["resolved"], config["model"]
    said = f"{res['model_name']}, {model['weight_dtype']} weights, {res['kv_dtype']} KV"
    if config.get("pd"):  # PD workers: the roles' own GPUs (docs/pd.md)
        return f"{said}, on prefill and decode workers (each role's GPUs: --json, pd.roles)"
    return f"{gpus_words(config)} · {said} · {pool_words(config)} · {res['attention_words']}"


def print_unfinished(result, cut_off: str | None) -> None:
    """Every request that did not finish, counted with its reason: rejected (why) or still running at the
    end."""
    reasons: dict[str, list[str]] = {}
    for req in result.requests:
        if req.reject_reason:
            reasons.setdefault(f"rejected: {req.reject_reason}", []).append(req.rid)
        elif req.finished_at is None:
            why = f"cut off ({cut_off})" if cut_off else "not finished when the run ended"
            reasons.setdefault(why, []).append(req.rid)
    for reason, rids in sorted(reasons.items(), key=lambda item: -len(item[1]))[:MAX_REASONS]:
        print(f"  {len(rids)} not finished, {reason} (first: {rids[0]})")
    if len(reasons) > MAX_REASONS:
        print(f"  ... and {len(reasons) - MAX_REASONS} more reasons; --json lists every rejected request")


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
    from engine_model.scenario_io import load_scenario, scenario_names

    for name in scenario_names():
        scenario = load_scenario(name)
        print(f"{name:<22} {scenario.title}")
        print(f"{'':<22} {scenario.about}")
    return 0


def cmd_diagnose(args) -> int:
    from engine_model.cli_inputs import print_server, server_document

    return emit(server_document(args.log, args.metrics, args.server_info), args.json, print_server)


def cmd_trace(args) -> int:
    from engine_model.cli_inputs import print_trace, trace_document

    return emit(trace_document(args.file, args.fmt, args.max_requests), args.json, print_trace)


def emit(doc: dict, as_json: bool, print_doc) -> int:
    if as_json:
        print(json.dumps(doc, indent=1, allow_nan=False))
    else:
        print_doc(doc)
    return 0


MIX_HELP = ("a request mix instead of the scenario's workload: a preset (support, rag, summarise, coding) "
            "or a mix's link text from the app (mix=c.…); it replaces the workload after --set")
SET_HELP = ("override one scenario key; repeat it for more. Values are TOML: "
            "--set engine.enable_mixed_chunk=true --set engine.chunked_prefill_size=4096 "
            "--set workload.groups.0.count=20 --set hardware.gpu=h200")


# -- figure: drawn by the presentation layer, not the engine -----------------------------------------
def cmd_figure(args) -> int:
    raise InputError("figure", "the engine draws nothing: run `who-waits figure ...` or "
                               "`python -m app.present figure ...` (same options)")


def add_figure(sub) -> None:
    fig = sub.add_parser("figure", help="moved: `who-waits figure` (the presentation layer draws figures)",
                         add_help=False)
    fig.add_argument("rest", nargs=argparse.REMAINDER)
    fig.set_defaults(func=cmd_figure)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m engine_model",
                                description="Who Waits: a model of SGLang's scheduler")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="simulate a scenario",
                         epilog="example: python -m engine_model run forty_replies "
                                "--set engine.enable_mixed_chunk=true")
    run.add_argument("scenario", help="a scenario TOML file, or a built-in name (see `scenarios`)")
    run.add_argument("--set", action="append", default=[], metavar="dotted.key=value", help=SET_HELP)
    run.add_argument("--mix", metavar="MIX", help=MIX_HELP)
    run.add_argument("--json", action="store_true", help="print one JSON document")
    run.set_defaults(func=cmd_run)
    diag = sub.add_parser("diagnose", help="read an SGLang server log: its timeline and which stall it "
                                           "shows; its /metrics scrapes and /server_info beside it",
                          epilog="example: python -m engine_model diagnose server.log --metrics scrapes.prom "
                                 "--server-info server_info.json --json")
    diag.add_argument("log", nargs="?", help="a server log file (the scheduler's stdout)")
    diag.add_argument("--metrics", action="append", default=[], metavar="SCRAPE",
                      help="SGLang's /metrics (Prometheus text, --enable-metrics); repeat for more files. "
                           "A file may hold several scrapes, each after a '# scraped_at <ISO time>' line")
    diag.add_argument("--server-info", metavar="FILE", help="the JSON of the server's /server_info")
    diag.add_argument("--json", action="store_true", help="print one JSON document")
    diag.set_defaults(func=cmd_diagnose)
    trace = sub.add_parser("trace", help="a request trace's mix: lengths by bucket, arrivals (no simulation)")
    trace.add_argument("file", help="an Azure, BurstGPT or Mooncake trace, or JSON Lines")
    trace.add_argument("--fmt", choices=["azure", "mooncake", "burstgpt", "jsonl"], help="default: detected")
    trace.add_argument("--max-requests", type=positive, help="read only the first N requests")
    trace.add_argument("--json", action="store_true", help="print one JSON document")
    trace.set_defaults(func=cmd_trace)
    ref = sub.add_parser("reference", help="run a reference-tool workload.json with its linear predictor")
    ref.add_argument("workload")
    ref.add_argument("--out", required=True)
    ref.set_defaults(func=cmd_reference)
    cmp_ = sub.add_parser("compare-reference", help="compare our trace with a reference trace")
    cmp_.add_argument("ref_dir")
    cmp_.add_argument("our_dir")
    cmp_.set_defaults(func=cmd_compare)
    sub.add_parser("scenarios",
                   help="list built-in scenarios with a line on each").set_defaults(func=cmd_scenarios)
    add_figure(sub)
    from engine_model.advise.cli import add_advise

    add_advise(sub, SET_HELP, MIX_HELP)
    return p


def positive(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1_000_000:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a whole number from 1 to 1,000,000")
    return int(text)


def refuse(where: str, problem: str, as_json: bool) -> int:
    """Exit 2 with one line on stderr; with --json, also one JSON object on stdout, as a result is one."""
    if as_json:
        print(json.dumps({"error": {"where": where, "problem": problem, "message": f"{where}: {problem}"}},
                         indent=1))
    print(f"error: {where}: {problem}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None, link=None) -> int:
    """`link(scenario, budget, candidate)`: {name: app link} for `advise` (who-waits gives the app's)."""
    args = parser().parse_args(argv)
    as_json = bool(getattr(args, "json", False))
    try:
        return args.func(args, link) if args.command == "advise" else args.func(args)
    except InputError as err:
        return refuse(err.where, err.problem, as_json)
    except OSError as err:  # a path the commands without their own reader (reference) could not read
        where = name_of(err.filename) if err.filename else "an input file"
        return refuse(where, f"cannot be read ({err.strerror or type(err).__name__})", as_json)


if __name__ == "__main__":
    sys.exit(main())
