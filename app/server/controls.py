"""The "Your server" page's controls: what to read (a log or a trace, which one, which part of it) and the
server flags a run uses. Every one is in the page's URL under its key."""

from __future__ import annotations

from app import state
from app.pd.params import WORKER_TPS
from app.pd.presets import BASELINES
from app.server.input import LOG_SAMPLES, TRACE_SAMPLES
from engine_model import (
    ASSUMED_OUTPUT_LEN,
    MAX_OBSERVED_REQUESTS,
    Control,
    chunk_control,
    common_controls,
    interval_control,
    mix_control,
    mixed_control,
    policy_control,
)
from engine_model import MAX_REQUESTS as HARD_CAP

PAGE = state.SERVER_PAGE
LIMITS = {"max_iterations": 400_000, "max_sim_seconds": 7_200.0}  # a click cannot run away


def _keeps(data: dict, value) -> None:
    """For controls that choose what to read, not how the server runs."""


VIEW = Control("view", "What do you have?", "select", "log", _keeps, ("log", "trace", "live"), is_flag=False,
               fmt=lambda v: {"log": "A server log", "trace": "A request trace",
                              "live": "A running server (live)"}[v])
LOG = Control("log", "Log", "select", "retraction", _keeps, (*LOG_SAMPLES, "paste", "upload"), is_flag=False,
              fmt=lambda v: (LOG_SAMPLES[v].label if v in LOG_SAMPLES
                             else {"paste": "Paste a log", "upload": "Upload a file"}[v]))
METRICS = Control("metrics", "Metrics", "select", "none", _keeps, ("none", "example", "paste", "upload"),
                  is_flag=False,
                  fmt=lambda v: {"none": "None", "example": "The example's own (made by the model)",
                                 "paste": "Paste scrapes", "upload": "Upload scrape files"}[v])
OUTPUT = Control("out", "Reply length (tokens)", "select", "auto", _keeps,
                 ("auto", 32, 64, 128, 256, 512, 1024, 2048, 4096), is_flag=False,
                 fmt=lambda v: "estimated from the Decode lines" if v == "auto" else f"{v:,}",
                 help="A log does not say how long replies were. 'Estimated': decode steps x running "
                      f"requests from the Decode lines, over the requests seen ({ASSUMED_OUTPUT_LEN} if "
                      "there are none); or pick one.")
MIXED = "mix"  # the trace choice that builds a request mix (app.ui.mix) instead of reading a file
TRACE = Control("trace", "Trace", "select", "azure", _keeps, (*TRACE_SAMPLES, MIXED, "upload"), is_flag=False,
                fmt=lambda v: (TRACE_SAMPLES[v].label if v in TRACE_SAMPLES
                               else {MIXED: "Build a request mix", "upload": "Upload a file"}[v]))
WINDOW_START = Control("wstart", "Window starts at (s after the first request)", "slider", 0, _keeps,
                       (0, 3600, 10), is_flag=False)
WINDOW_LEN = Control("wlen", "Window length", "select", "all", _keeps, ("all", 30, 60, 120, 300, 600, 1800),
                     is_flag=False, fmt=lambda v: "the whole trace" if v == "all" else f"{v:,} s")
SPEEDUP = Control("speedup", "Speed-up", "select", 1.0, _keeps, (0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
                  is_flag=False, fmt=lambda v: f"{v:g}×",
                  help="Arrivals come this many times faster (gaps divided by it).")
SAMPLE = Control("sample", "Keep a share of requests", "select", 1.0, _keeps, (1.0, 0.5, 0.25, 0.1),
                 is_flag=False, fmt=lambda v: f"{v:.0%}",
                 help="Each request is kept with this probability (seeded).")
CAPS = (100, 250, 500, 1000, 1500, 2000, 3000, 10_000, 30_000, 100_000, 300_000, HARD_CAP)
MAX_REQUESTS = Control("maxreq", "At most (requests)", "select", 1500, _keeps, CAPS, is_flag=False,
                       fmt=lambda v: f"{v:,}" + (" (the engine's cap)" if v == HARD_CAP else ""),
                       help="The first N requests after the window and sample; the page says how many "
                            "rows it kept and dropped. Up to the engine's cap on a run; a run of tens of "
                            "thousands of requests takes minutes.")
LONG = Control("long", "A long prompt has at least (tokens)", "select", 8192, _keeps,
               (1024, 2048, 4096, 8192, 16384, 32768), is_flag=False, fmt=lambda v: f"{v:,}",
               help="Splits the mix, and sets the prompt-length buckets of the metrics: below it, up to 4× "
                    "it, above.")
AS_LOGGED = "log"  # a replay switch left at the log's own setting


def _as_logged(fmt=str):
    return lambda v: "as in the log" if v == AS_LOGGED else fmt(v)


REPLAY_MIXED = Control("rmixed", "Mixed chunk", "select", AS_LOGGED, _keeps, (AS_LOGGED, "on", "off"),
                       fmt=_as_logged(),
                       help="--enable-mixed-chunk for the replay; 'as in the log' keeps the log's.")
REPLAY_CHUNK = Control("rchunk", "Chunk size", "select", AS_LOGGED, _keeps,
                       (AS_LOGGED, 512, 1024, 2048, 4096, 8192, 16384, "off"),
                       fmt=_as_logged(chunk_control().fmt),
                       help="--chunked-prefill-size for the replay; 'as in the log' keeps the log's.")
REPLAY_INTERVAL = Control("rinterval", "Decode rounds between prefills", "select", AS_LOGGED, _keeps,
                          (AS_LOGGED, 0, 1, 2, 4, 8, 16), fmt=_as_logged(),
                          help="--prefill-decode-interval for the replay; 'as in the log' keeps the log's.")
REPLAY_MAX = Control("rmax", "Replay at most (requests)", "select", 2000, _keeps,
                     (500, 1000, 2000, 5000, 10_000, 20_000, 50_000, MAX_OBSERVED_REQUESTS), is_flag=False,
                     fmt=lambda v: f"{v:,}" + (" (the engine's cap)" if v == MAX_OBSERVED_REQUESTS else ""),
                     help="The first N requests the log's Prefill lines introduce; the page says how many it "
                          "kept and dropped. Up to the most the engine reads from a log.")
REPLAY_SWITCHES = {"mixed": REPLAY_MIXED, "chunk": REPLAY_CHUNK, "interval": REPLAY_INTERVAL}
FLAGS = (mixed_control(), chunk_control(), interval_control(), policy_control())  # a trace's run
MIX = mix_control()  # the built mix's text, in the link (its `apply` is unused here: the mix becomes a trace)
DEPLOYMENT = common_controls()  # GPU, tensor parallel, model, precision, seed, and every figure behind them
GPU = next(c for c in DEPLOYMENT if c.key == "gpu")
FIGURES = tuple(c for c in DEPLOYMENT if c.where == "figure")


def _replay(like: str) -> Control:
    """The deployment control `like` for a replay: 'as in the log' first."""
    control = next(c for c in DEPLOYMENT if c.key == like)
    return Control(f"r{like}", control.label, "select", AS_LOGGED, _keeps, (AS_LOGGED, *control.options),
                   is_flag=False, fmt=_as_logged(control.fmt),
                   help=f"{control.label} for the replay; 'as in the log' reads the log's.")


# A replay runs the log's own deployment (engine_model/logs/deployment.py) unless the person picks another.
REPLAY_DEPLOYMENT = {"model": _replay("model"), "tp_size": _replay("tp"), "weight_dtype": _replay("wdtype"),
                     "kv_dtype": _replay("kvdtype")}
REPLAY_ROW = (GPU, *REPLAY_DEPLOYMENT.values(), OUTPUT, REPLAY_MAX)  # the replay's deployment row, in order
REPLAY_CONTROLS = (*REPLAY_ROW, *REPLAY_SWITCHES.values())  # a link that sets any of them opens the replay
WORKERS = tuple(range(1, 9))
PD_SPLIT = Control("pd", "Split prefill from decode (PD), both allocation policies", "toggle", False,
                   _keeps, is_flag=False,
                   help="Runs the trace on prefill and decode workers under early and prefill_complete, "
                        "beside the same requests on as many GPUs without PD: three more runs, seconds each "
                        "for a few thousand requests.")
PD_PREFILL = Control("pworkers", "Prefill workers", "select", 1, _keeps, WORKERS, is_flag=False)
PD_DECODE = Control("dworkers", "Decode workers", "select", 1, _keeps, WORKERS, is_flag=False)
PD_BASE = Control("base", "Without PD, on the same GPUs", "select", "today", _keeps, tuple(BASELINES),
                  is_flag=False, fmt=BASELINES.get)
PD_TP = Control("wtp", "Worker TP", "select", 0, _keeps, WORKER_TPS, is_flag=False,
                fmt=lambda v: f"TP {v}" if v else "split the page's GPUs",
                help="Each prefill and decode worker's tensor parallel size: PD uses (prefill + decode "
                     "workers) × this many GPUs. By default the workers split the page's GPUs (TP 8, 1 + 1 "
                     "workers: TP 4 each), so PD and today run on the same GPUs.")
PD_CONTROLS = (PD_SPLIT, PD_PREFILL, PD_DECODE, PD_BASE, PD_TP)
TRACE_OPTIONS = (WINDOW_START, WINDOW_LEN, SPEEDUP, SAMPLE, MAX_REQUESTS, LONG)
CONTROLS = (VIEW, LOG, METRICS, OUTPUT, TRACE, WINDOW_START, WINDOW_LEN, SPEEDUP, SAMPLE, MAX_REQUESTS, LONG,
            *FLAGS, *DEPLOYMENT, *REPLAY_SWITCHES.values(), *REPLAY_DEPLOYMENT.values(), REPLAY_MAX,
            *PD_CONTROLS, MIX)


def base_data(values: dict) -> dict:
    """A scenario dict with the page's deployment (GPU, TP, model, precision, figures) and seed, and run
    limits, before the workload is added."""
    data = {"name": PAGE, "hardware": {}, "model": {}, "engine": {}, "limits": dict(LIMITS)}
    for control in DEPLOYMENT:
        control.apply(data, values[control.key])
    return data


def picked(values: dict) -> dict:
    """The replay's deployment settings the person picked over the log's: {"model": ..., "tp_size": ...}."""
    return {key: values[c.key] for key, c in REPLAY_DEPLOYMENT.items() if values[c.key] != AS_LOGGED}
