"""The test a person takes to their own SGLang: a view's requests, the launch lines, the client lines.

`bench_export(scenario, settings)` gives the files of one export, by name:
- requests.jsonl: every request of the run (`deployment.requests_of`), one line each: rid, group, arrival_s,
  prompt_len, output_len (the reply's tokens still to come), num_generated_before;
- run_test.py: `engine_model/bench_runner.py`, which sends them at their arrival times and writes
  bench_serving's output format;
- dataset_openai.jsonl: the same requests for `python -m sglang.bench_serving --dataset-name openai`
  (synthetic text, max_tokens per request; bench_serving cannot replay arrival times from it);
- launch.sh: the server launch lines per setting, from the resolved deployment (`deployed.deployment_of`);
- client.sh: the client lines per setting; README.md: what to compare.
Flag names: SGLang 0.5.23's sglang/srt/arg_groups/fields/{parallel,schedule,disagg,model,exec_}.py.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import zipfile
from pathlib import Path

from engine_model.config import Scenario
from engine_model.core import Request
from engine_model.deployed import Deployment, Role, deployment_of
from engine_model.deployment import requests_of
from engine_model.hardware import MODELS

SERVER_PORT, PREFILL_PORT, DECODE_PORT, ROUTER_PORT, BOOTSTRAP_PORT = 30000, 30000, 30001, 8000, 8998
# The approximation of dataset_openai.jsonl's text: one token per " the" in Llama-3's and Qwen's BPE
# tokenizers (their pre-tokenizer splits at spaces), plus the chat template's few tokens.
FILLER_WORD = " the"


def model_path(scenario: Scenario) -> str:
    """The Hugging Face id a preset cites ('meta-llama/Llama-3.1-8B'); a custom model's own name."""
    model = MODELS.get(scenario.model.name)
    found = re.search(r"huggingface\.co/([^/\s]+/[^/\s]+)/blob", model.source) if model else None
    return found.group(1) if found else scenario.model.name


def request_rows(requests: list[Request]) -> list[dict]:
    """One row per request, in workload order (the order a bench_serving output's lists follow)."""
    return [{"rid": r.rid, "group": r.group, "arrival_s": round(r.arrival_at, 6), "prompt_len": r.prompt_len,
             "output_len": r.output_len - r.num_generated_before,
             "num_generated_before": r.num_generated_before} for r in requests]


def openai_rows(rows: list[dict]) -> list[dict]:
    """bench_serving's `openai` dataset: messages and max_tokens per line, read in file order."""
    def text(num_tokens: int) -> str:
        return FILLER_WORD.strip() + FILLER_WORD * (num_tokens - 1)

    return [{"messages": [{"role": "user", "content": text(row["prompt_len"])}],
             "max_tokens": row["output_len"] + row["num_generated_before"]} for row in rows]


def _engine_flags(scenario: Scenario, role: Role) -> list[str]:
    """Flags that pin what the model resolved or the scenario set: the chunk always, the rest when not
    SGLang's default."""
    eng = scenario.engine
    chunk = role.chunk_per_rank
    if chunk and role.name == "engine":  # DP attention on one engine: SGLang divides the flag by the ranks
        chunk *= role.dp_size
    flags = ["--model-path", model_path(scenario), "--tp-size", str(role.tp_size),
             "--chunked-prefill-size", str(chunk if chunk else -1)]
    if role.dp_size > 1:
        flags += ["--dp-size", str(role.dp_size), "--enable-dp-attention"]
    if role.page_size != 1:
        flags += ["--page-size", str(role.page_size)]
    if scenario.model.kv_dtype != "auto":  # auto: SGLang resolves it as engine_model/backend.py does
        flags += ["--kv-cache-dtype", {"fp8": "fp8_e4m3", "bf16": "bfloat16"}[scenario.model.kv_dtype]]
    if eng.attention_backend is not None:
        flags += ["--attention-backend", eng.attention_backend]
    if role.weights.flag.startswith("--"):
        flags += role.weights.flag.split()
    flags += ["--enable-mixed-chunk"] if eng.enable_mixed_chunk else []
    flags += ["--disable-overlap-schedule"] if eng.disable_overlap_schedule else []
    optional = [("--schedule-policy", eng.schedule_policy, "fcfs"),
                ("--max-prefill-tokens", eng.max_prefill_tokens, 16384),
                ("--schedule-conservativeness", eng.schedule_conservativeness, 1.0),
                ("--prefill-decode-interval", eng.prefill_decode_interval, 0),
                ("--max-running-requests", eng.max_running_requests, None),
                ("--max-total-tokens", eng.max_total_tokens, None),
                ("--mem-fraction-static", eng.mem_fraction_static, None),
                ("--context-length", eng.context_length, None),
                ("--prefill-max-requests", eng.prefill_max_requests, None),
                ("--cuda-graph-max-bs-decode", eng.cuda_graph_max_bs_decode or None, None),
                ("--speculative-algorithm", eng.speculative_algorithm, None),
                ("--speculative-num-steps", eng.speculative_num_steps, None),
                ("--speculative-eagle-topk", eng.speculative_eagle_topk, None),
                ("--speculative-num-draft-tokens", eng.speculative_num_draft_tokens, None)]
    return flags + [part for flag, value, default in optional if value != default
                    for part in (flag, str(value))]


def launch_lines(scenario: Scenario) -> list[str]:
    """The shell lines that start the scenario's servers: one engine (or `--dp-size` engines behind
    SGLang's own DP controller), or PD's prefill server, decode server and router."""
    dep = deployment_of(scenario)
    start = ["python", "-m", "sglang.launch_server"]
    if not dep.is_pd:
        role = dep.role("engine")
        flags = _engine_flags(scenario, role)
        if role.num_workers > 1:
            flags += ["--dp-size", str(role.num_workers)]
        return [shlex.join([*start, *flags, "--host", "127.0.0.1", "--port", str(SERVER_PORT)])]
    return _pd_lines(scenario, dep, start)


def _pd_lines(scenario: Scenario, dep: Deployment, start: list[str]) -> list[str]:
    pd = scenario.pd
    backend = "mooncake" if pd.transfer_backend.startswith("mooncake") else pd.transfer_backend
    lines = []
    for name, port in (("prefill", PREFILL_PORT), ("decode", DECODE_PORT)):
        role = dep.role(name)
        flags = [*_engine_flags(scenario, role), "--disaggregation-mode", name,
                 "--disaggregation-transfer-backend", backend,
                 "--disaggregation-decode-allocation-policy", pd.policy(name)]
        if name == "prefill":
            flags += ["--disaggregation-bootstrap-port", str(BOOTSTRAP_PORT)]
        elif pd.num_reserved_decode_tokens != 512:
            flags += ["--num-reserved-decode-tokens", str(pd.num_reserved_decode_tokens)]
        if getattr(pd, name).load_balance_method != "auto":
            flags += ["--load-balance-method", getattr(pd, name).load_balance_method]
        lines.append(shlex.join([*start, *flags, "--host", "127.0.0.1", "--port", str(port)]))
    lines.append(shlex.join(["python", "-m", "sglang_router.launch_router", "--pd-disaggregation",
                             "--prefill", f"http://127.0.0.1:{PREFILL_PORT}", str(BOOTSTRAP_PORT),
                             "--decode", f"http://127.0.0.1:{DECODE_PORT}",
                             "--host", "127.0.0.1", "--port", str(ROUTER_PORT)]))
    return lines


def default_settings(scenario: Scenario) -> dict[str, Scenario]:
    """The settings one export covers: a PD scenario under each decode allocation policy, else itself."""
    if scenario.pd is None:
        return {"this": scenario}
    return {policy: scenario.model_copy(update={"pd": scenario.pd.model_copy(
        update={"decode_allocation_policy": policy,
                "prefill": scenario.pd.prefill.model_copy(update={"decode_allocation_policy": None}),
                "decode": scenario.pd.decode.model_copy(update={"decode_allocation_policy": None})})})
        for policy in ("early", "prefill_complete")}


def client_lines(scenario: Scenario, setting: str, num_requests: int, span_s: float) -> list[str]:
    """The runner (exact lengths and arrivals) and bench_serving (lengths, a Poisson rate) for one setting."""
    port = ROUTER_PORT if scenario.pd is not None else SERVER_PORT
    url = f"http://127.0.0.1:{port}"
    rate = f"{num_requests / span_s:.3f}" if span_s > 0 else "inf"
    return [shlex.join(["python", "run_test.py", "--base-url", url, "--requests", "requests.jsonl",
                        "--model", model_path(scenario), "--output-file", f"results_{setting}.jsonl",
                        "--tag", setting]),
            shlex.join(["python", "-m", "sglang.bench_serving", "--backend", "sglang-oai-chat",
                        "--base-url", url, "--model", model_path(scenario),
                        "--dataset-name", "openai", "--dataset-path", "dataset_openai.jsonl",
                        "--num-prompts", str(num_requests), "--request-rate", rate,
                        "--output-file", f"bench_serving_{setting}.jsonl", "--output-details"])]


def bench_export(scenario: Scenario, settings: dict[str, Scenario] | None = None) -> dict[str, str]:
    """Every file of the export, by name. Settings share one workload (the requests are the first's)."""
    settings = settings or default_settings(scenario)
    rows = request_rows(requests_of(scenario))
    span_s = max((row["arrival_s"] for row in rows), default=0.0)
    launch = ["#!/bin/sh", "# Start one setting's servers, run its client lines (client.sh), stop them."]
    client = ["#!/bin/sh", "# Run from this folder, once per setting, each against a fresh server."]
    for name, setting in settings.items():
        launch += ["", f"# setting {name}: {deployment_of(setting).words}", *launch_lines(setting)]
        client += ["", f"# setting {name}", *client_lines(setting, name, len(rows), span_s)]
    return {"requests.jsonl": "".join(json.dumps(row) + "\n" for row in rows),
            "dataset_openai.jsonl": "".join(json.dumps(row) + "\n" for row in openai_rows(rows)),
            "launch.sh": "\n".join(launch) + "\n", "client.sh": "\n".join(client) + "\n",
            "run_test.py": (Path(__file__).parent / "bench_runner.py").read_text(encoding="utf-8"),
            "README.md": readme(scenario, settings, rows)}


def readme(scenario: Scenario, settings: dict[str, Scenario], rows: list[dict]) -> str:
    groups = sorted({row["group"] for row in rows})
    mid = sum(1 for row in rows if row["num_generated_before"])
    lines = [f"# {scenario.title or scenario.name}: the test on your own SGLang (0.5.22 or later)", "",
             f"{len(rows)} requests ({', '.join(groups)}), {deployment_of(scenario).words}.", "",
             "1. Start a setting's servers (launch.sh), wait for `/health`, run its two client lines "
             "(client.sh), stop the servers; repeat per setting: " + ", ".join(settings) + ".",
             "2. Upload each `results_<setting>.jsonl` to Who Waits' Your server page with this scenario, or "
             "read it with `engine_model.logs.bench_results`: TTFT and inter-token latency, "
             "p50 / p95 / p99 / max, per prompt-length bucket and per group, measured beside the model.", "",
             "## Which client, and why", "",
             "`run_test.py` is the test: bench_serving 0.5.23 has no dataset kind that takes per-request "
             "arrival times with explicit lengths (`--use-trace-timestamps` is only for `mooncake`, whose "
             "prompts are built from hash ids; `custom` shuffles rows; `--request-rate` draws Poisson "
             "arrivals). The runner sends each request at its own arrival time to `/v1/completions`, the "
             "prompt as token ids (exactly `prompt_len` tokens for any tokenizer of 2,000+ tokens), "
             "`max_tokens` and `ignore_eos` (exact reply lengths), and measures TTFT and every gap as "
             "bench_serving's OpenAI backends do; its output line has bench_serving's keys "
             "(`input_lens`, `output_lens`, `ttfts`, `itls`, `errors`, in seconds) and `who_waits` "
             "(rid, group per request).",
             "`bench_serving` with `dataset_openai.jsonl` runs the same lengths under bench_serving's own "
             "client: the prompt is synthetic text, one token per \"" + FILLER_WORD + "\" in Llama-3's and "
             "Qwen's tokenizers (an approximation: no tokenizer was at hand when it was written) plus the "
             "chat template's tokens, and arrivals are Poisson at the view's mean rate, not its own times.",
             ""]
    if mid:
        lines += [f"{mid} requests were mid-reply when the model's run began: the runner sends them first "
                  "and starts the clock once each has streamed its `num_generated_before` tokens; their TTFT "
                  "is not compared, their gaps from then on are.", ""]
    lines += ["## What to compare", "",
              "- TTFT per prompt-length bucket: who waited for the first token, and for how long.",
              "- p99 and max inter-token latency per group: who stalled mid-reply.",
              "- Between settings: which number got better and which got worse.",
              "- `input_lens` against requests.jsonl's `prompt_len` (the server's own count); the log's "
              "`max_total_num_tokens` against the model's KV pool "
              + ", ".join(f"{role.name} {role.kv_per_rank:,} tokens per rank"
                          for role in deployment_of(scenario).roles) + "."]
    if scenario.pd is not None:
        lines += [f"- The model's KV link is `{scenario.pd.transfer_backend}` (SGLang's flag value: mooncake "
                  "for both Mooncake presets); its router policy is "
                  f"`{scenario.pd.router}`: set your router's to match."]
    return "\n".join(lines) + "\n"


def write_export(files: dict[str, str], folder: str | Path) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def zip_export(files: dict[str, str], top: str = "who-waits-test") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(f"{top}/{name}", text)
    return buffer.getvalue()
