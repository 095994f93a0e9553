#!/usr/bin/env python3
"""The project's reference tool (`shared/tools/sglang_reference`, unchanged) with priority scheduling and the
queue limit: more server args, a per-request `priority`, and `priority_events.jsonl` (preemptions, aborts).

    python3 bench/sglang_reference/run_priority.py --workload W.json --out DIR [--venv VENV] [--tool DIR]

It imports the tool's `run_reference` and adds to it, instead of copying it: the accepted server args
grow by `ADDED_SERVER_ARGS`, a request may carry `priority` (an int, passed to `Engine.async_generate`), and
`stubs/` (ahead of the tool's on PYTHONPATH) loads the tool's hooks and then ours (`stubs/priority_hooks.py`).
A run where the queue limit aborts requests ends "incomplete" in the tool's summary (those requests get no
token); that is expected, and this script then exits 0 when every request either finished or was aborted.
"""
import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("WHO_WAITS_SHARED", HERE.parents[1].parent / "shared"))
ADDED_SERVER_ARGS = {"enable_priority_scheduling", "schedule_low_priority_values_first",
                     "priority_scheduling_preemption_threshold", "disable_priority_preemption",
                     "max_queued_requests"}


def tool_dir() -> Path:
    args = sys.argv
    if "--tool" in args:
        return Path(args[args.index("--tool") + 1]).resolve()
    return SHARED / "tools" / "sglang_reference"


def reexec(venv: str, tool: Path) -> None:
    python = Path(venv) / "bin" / "python"
    if not python.exists():
        sys.exit(f"run_priority: no venv at {venv}")
    path = [str(HERE / "stubs"), str(tool / "stubs"), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, REFSIM_ACTIVE="1", SGLANG_USE_CPU_ENGINE="1", CUDA_VISIBLE_DEVICES="",
               PYTHONWARNINGS="ignore", PYTHONHASHSEED="0", PYTHONPATH=os.pathsep.join(filter(None, path)))
    os.execve(str(python), [str(python), str(Path(__file__).resolve()), *sys.argv[1:]], env)


def simulate_with_priority(rr):
    """The tool's `simulate`, with each request's `priority` passed to sglang."""

    def simulate(w, out, timeout_s, log_level):
        os.environ["REFSIM_OUT"] = str(out)
        os.environ["REFSIM_PREDICTOR"] = json.dumps(w["predictor"])
        t0 = time.time()
        from sglang.srt.entrypoints.engine import Engine
        engine = Engine(model_path=str(rr.HERE / "model"), log_level=log_level,
                        **rr.FIXED_SERVER_ARGS, **w["server_args"])
        t_init = time.time() - t0
        reqs, ids = w["requests"], rr.prompt_token_ids(w["requests"])

        async def one(i, r):
            max_new = r.get("max_new_tokens", r["output_len"])
            refsim = {"arrival_s": float(r["arrival_s"]), "order": i, "total": len(reqs),
                      "eos_at": r["output_len"] if max_new > r["output_len"] else None}
            sp = {"max_new_tokens": max_new, "ignore_eos": bool(r.get("ignore_eos", False)),
                  "temperature": 0.0, "custom_params": {"refsim": refsim}}
            try:
                return await engine.async_generate(input_ids=ids[i], sampling_params=sp, rid=r["rid"],
                                                   return_logprob=bool(r.get("return_logprob", False)),
                                                   priority=r.get("priority"))
            except Exception as err:  # noqa: BLE001  an abort (503) reaches the client as an exception
                reason = {"type": "abort", "message": str(err)}
                return {"meta_info": {"id": r["rid"], "finish_reason": reason}}

        async def all_requests():
            return await asyncio.wait_for(asyncio.gather(*(one(i, r) for i, r in enumerate(reqs))), timeout_s)

        t1 = time.time()
        error = None
        try:
            results = engine.loop.run_until_complete(all_requests())
        except Exception as e:  # noqa: BLE001 (still write what ran)
            error, results = f"{type(e).__name__}: {e}", []
        t_run = time.time() - t1
        info = engine.get_server_info()
        engine.shutdown()
        return results, info, error, {"engine_init_s": round(t_init, 2), "requests_s": round(t_run, 2)}

    return simulate


def main() -> None:
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--venv", default=os.environ.get("SGLANG_REF_VENV",
                                                     str(Path.home() / ".cache" / "sglang-ref-venv")))
    ap.add_argument("--out")
    known, _ = ap.parse_known_args()
    tool = tool_dir()
    if "--tool" in sys.argv:
        i = sys.argv.index("--tool")
        del sys.argv[i:i + 2]
    if os.environ.get("REFSIM_ACTIVE") != "1":
        sys.argv += ["--tool", str(tool)]
        reexec(known.venv, tool)
    sys.path.insert(0, str(tool))
    import run_reference as rr

    rr.ALLOWED_SERVER_ARGS |= ADDED_SERVER_ARGS
    rr.REQUEST_KEYS |= {"priority"}
    rr.OUTPUT_FILES += ("priority_events.jsonl",)
    rr.simulate = simulate_with_priority(rr)
    try:
        rr.main()
    except SystemExit as stop:
        out = Path(known.out).resolve()
        aborted = {json.loads(line)["rid"] for line in open(out / "priority_events.jsonl")
                   if json.loads(line)["type"] == "abort"}
        summary = json.loads((out / "summary.json").read_text())
        short = [rid for rid, r in summary["requests"].items() if r["finish"] != "length" and
                 r["finish"] != "stop" and rid not in aborted]
        if stop.code and (summary.get("error") or short):
            raise
        print(f"run_priority: {len(aborted)} request(s) aborted by the scheduler, as recorded")


if __name__ == "__main__":
    main()
