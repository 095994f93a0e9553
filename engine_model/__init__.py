"""Who Waits engine model: an iteration-level model of SGLang's scheduler.

This file is the public face: the app, notebooks and users import from here and nowhere deeper.

    from engine_model import load_scenario, simulate, summary
    result = simulate(load_scenario("forty_replies", ["engine.enable_mixed_chunk=true"]))
    summary(result).metrics.groups["streams"].max_itl_s.max
"""

from engine_model.advise import (
    WAITS,
    Advice,
    Budget,
    Cancelled,
    Candidate,
    Layout,
    Outcome,
    Space,
    Target,
    advise,
    counts_line,
    default_space,
    parse_target,
    trade_lines,
    why_not,
)
from engine_model.advise import headline as advice_headline
from engine_model.advise.table import rows as advice_rows
from engine_model.advise.table import to_csv as advice_csv
from engine_model.advise.targets import seconds as seconds_text
from engine_model.backend import Attention, attention_of
from engine_model.band import Band, Ranged, band_of, ranged
from engine_model.benchtest import bench_export, zip_export
from engine_model.config import MAX_REQUESTS, Scenario
from engine_model.core import Iteration, PassKind, Request, RequestState, Retraction, Row
from engine_model.cost import PassShape
from engine_model.deployed import Deployment, deployment_of
from engine_model.deployment import Fix, Refused, gpus_words, pool_words, tp_sizes
from engine_model.errors import InputError
from engine_model.feasibility import check as check_deployment
from engine_model.feasibility import fixes as deployment_fixes
from engine_model.frontend import Block
from engine_model.frontend import longest as longest_block
from engine_model.hardware import GPUS, LINKS, MODELS
from engine_model.logs import Diagnosis, ParsedLog, Timeline, build_timeline, diagnose, parse_log
from engine_model.logs import settings as log_settings
from engine_model.logs.bench_results import compare as compare_measured
from engine_model.logs.bench_results import read_bench_results
from engine_model.logs.check import Aligned, ServerCheck, check_server
from engine_model.logs.deployment import LogDeployment, deployment_from_log, match_model
from engine_model.logs.diagnose import longest_chunk_run, longest_run
from engine_model.logs.live import Poll, base_url, poll
from engine_model.logs.observed import MAX_OBSERVED_REQUESTS, num_observed
from engine_model.logs.parse import followed_ranks
from engine_model.logs.replay import ASSUMED_OUTPUT_LEN, NOT_MATCHED, scenario_from_log
from engine_model.logs.scrape import Scrape, ScrapeSet, read_scrapes
from engine_model.logs.scrape_report import MetricsReport, Tail, report
from engine_model.logs.server_info import ServerInfo, read_server_info
from engine_model.metrics import GroupMetrics, Metrics, Stats, e2e, gaps, max_itl, queue, seen, tpot, ttft
from engine_model.mix import ARRIVAL_WORDS as MIX_ARRIVALS
from engine_model.mix import FIELDS as MIX_FIELDS
from engine_model.mix import (
    MAX_MIX_REQUESTS,
    MIX_PRESETS,
    GroupShare,
    MixGroup,
    RequestMix,
    Sustain,
    apply_mix,
    mix_words,
    mix_workload,
    on_mix,
    sampled,
)
from engine_model.mix import SHAPES as MIX_SHAPES
from engine_model.mix import checked as checked_mix
from engine_model.mix import decode as decode_mix
from engine_model.mix import encode as encode_mix
from engine_model.mix import jsonl as mix_jsonl
from engine_model.mix import label as mix_label
from engine_model.mix import sustain as sustain_of
from engine_model.pass_cost import CostTerm, PassCost, attention_note, cost_figures, pass_cost, pass_shape
from engine_model.pd.checklist import Check, checklist, settings_of, settings_of_log
from engine_model.pd.checklist import of_scenario as scenario_checklist
from engine_model.pd.trade import UPSTREAM_SOURCE, Trade, mean_policy_trade, policy_trade, trade_statement
from engine_model.pd.verdict import Verdict, verdict
from engine_model.pd.verdict import refused as refused_verdict
from engine_model.precision import WeightPath, weight_path
from engine_model.replicas import num_gpus
from engine_model.report import Summary, summary
from engine_model.resolve import kv_dtype_of, resolve
from engine_model.rules import Rule, rules_of
from engine_model.scenario_io import (
    apply_sets,
    load_scenario,
    parse_value,
    read_toml,
    scenario_names,
    validate,
)
from engine_model.simulation import Result, Run, simulate
from engine_model.stories import (
    MIX,
    STORIES,
    Control,
    Headline,
    Story,
    TourStep,
    chunk_control,
    common_controls,
    cost_controls,
    interval_control,
    mix_control,
    mixed_control,
    policy_control,
    tp_help,
)
from engine_model.traces import Mix, Trace, load_trace, mix_of, request_mix
from engine_model.versions import CHANGES
from engine_model.workload import workload_trace

__all__ = [
    "followed_ranks",
    "Band", "Block", "Ranged", "band_of", "longest_block", "ranged", "seen",
    # scenarios
    "InputError", "MAX_REQUESTS", "Scenario", "apply_sets", "check_deployment", "load_scenario",
    "parse_value", "read_toml", "resolve", "kv_dtype_of",
    "scenario_names", "validate",
    # a refused deployment and its fixes (each passes check_deployment); how SGLang runs a weight precision
    "Fix", "Refused", "WeightPath", "deployment_fixes", "weight_path",
    # SGLang's attention backend per GPU and model: the page size, prefill graphs and auto KV dtype it decides
    "Attention", "attention_of",
    # presets, and a deployment in words
    "GPUS", "LINKS", "MODELS", "gpus_words", "pool_words", "tp_sizes",
    # a scenario's deployment resolved once: each role's GPUs, TP, weights as SGLang runs them, KV pools
    "Deployment", "deployment_of",
    # the test on your own server: the view's workload to run there, its results read back beside the model
    "bench_export", "compare_measured", "read_bench_results", "zip_export",
    # a run and what it recorded
    "Iteration", "PassKind", "Request", "RequestState", "Result", "Retraction", "Row", "Run", "simulate",
    # its summary (the CLI's JSON is Summary.to_json())
    "GroupMetrics", "Metrics", "Stats", "Summary", "summary",
    # PD: early -> prefill_complete on the four figures upstream measured, the model's beside them
    "Trade", "UPSTREAM_SOURCE", "mean_policy_trade", "policy_trade", "trade_statement",
    # PD against today's engine(s) on the same GPUs: both waits per prompt-length bucket
    "Verdict", "refused_verdict", "verdict",
    # PD: before you enable prefill_complete (seed 000's four checks on one case), and GPUs per deployment
    "Check", "checklist", "num_gpus", "scenario_checklist", "settings_of", "settings_of_log",
    # the SGLang rules the model mirrors, and what changed between releases
    "CHANGES", "Rule", "rules_of",
    # what one pass cost, term by term (docs/cost-model.md)
    "CostTerm", "PassCost", "PassShape", "attention_note", "cost_figures", "pass_cost", "pass_shape",
    # metrics of one request (docs/metrics.md)
    "e2e", "gaps", "max_itl", "queue", "tpot", "ttft",
    # the stories as data: settings, headline numbers, guided tours
    "MIX", "STORIES", "Control", "Headline", "Story", "TourStep", "chunk_control", "common_controls",
    "cost_controls", "interval_control", "mix_control", "policy_control",
    "mixed_control", "tp_help",
    # server logs
    "ASSUMED_OUTPUT_LEN", "Diagnosis", "ParsedLog", "Timeline", "build_timeline", "diagnose", "log_settings",
    "longest_chunk_run", "longest_run", "parse_log", "scenario_from_log",
    # the deployment a log states, matched to presets, and what a replay could not match
    "LogDeployment", "NOT_MATCHED", "deployment_from_log", "match_model",
    # how many requests a log's Prefill lines introduce, and the most a replay reads
    "MAX_OBSERVED_REQUESTS", "num_observed",
    # a server's /metrics and /server_info beside its log, and polled live (docs/logs-and-traces.md §8)
    "Aligned", "MetricsReport", "Poll", "Scrape", "ScrapeSet", "ServerCheck", "ServerInfo", "Tail",
    "base_url", "check_server", "poll", "read_scrapes", "read_server_info", "report",
    # what should I set? the advisor's search, its recommendation and trade in words, its table
    "Advice", "Budget", "Cancelled", "Candidate", "Layout", "Outcome", "Space", "Target", "WAITS",
    "advice_csv", "advice_headline", "advice_rows", "advise", "counts_line", "default_space", "parse_target",
    "trade_lines", "why_not",
    # request traces
    "Mix", "Trace", "load_trace", "mix_of", "request_mix", "workload_trace",
    # a request mix built by hand or from a preset (engine_model/mix.py): a Scenario workload, in words, the
    # rate a deployment sustains on it, and its text in a link
    "MAX_MIX_REQUESTS", "MIX_ARRIVALS", "MIX_FIELDS", "MIX_PRESETS", "MIX_SHAPES", "GroupShare", "MixGroup",
    "RequestMix", "Sustain", "checked_mix", "decode_mix",
    "encode_mix", "apply_mix", "mix_workload",
    "on_mix", "seconds_text", "mix_jsonl", "mix_label", "mix_words", "sampled", "sustain_of",
]
