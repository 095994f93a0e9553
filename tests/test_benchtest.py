"""The export of a view's test (engine_model/benchtest.py) and its runner against a local stub server."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import zipfile
from io import BytesIO

from bench_stub import stub_server

from engine_model import deployment_of, load_scenario
from engine_model.benchtest import bench_export, launch_lines, write_export, zip_export
from engine_model.deployment import requests_of
from engine_model.logs.bench_results import read_bench_results


def _flags(line: str) -> dict[str, str | None]:
    parts, flags = shlex.split(line), {}
    for i, part in enumerate(parts):
        if part.startswith("--"):
            following = parts[i + 1] if i + 1 < len(parts) else None
            flags[part] = None if following is None or following.startswith("--") else following
    return flags


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_forty_replies_export_pins_the_resolved_engine_and_lists_every_request():
    scenario = load_scenario("forty_replies")
    files = bench_export(scenario, {"off": scenario,
                                    "on": load_scenario("forty_replies", ["engine.enable_mixed_chunk=true"])})
    assert sorted(files) == ["README.md", "client.sh", "dataset_openai.jsonl", "launch.sh", "requests.jsonl",
                             "run_test.py"]
    role = deployment_of(scenario).role("engine")
    servers = [line for line in files["launch.sh"].splitlines() if line.startswith("python")]
    assert [_flags(line) for line in servers] == [
        {"--model-path": "meta-llama/Llama-3.1-8B", "--tp-size": "1", "--chunked-prefill-size":
         str(role.chunk_per_rank), "--host": "127.0.0.1", "--port": "30000"},
        {"--model-path": "meta-llama/Llama-3.1-8B", "--tp-size": "1", "--chunked-prefill-size":
         str(role.chunk_per_rank), "--enable-mixed-chunk": None, "--host": "127.0.0.1", "--port": "30000"}]
    requests = requests_of(scenario)
    keys = ("rid", "group", "arrival_s", "prompt_len", "output_len", "num_generated_before")
    assert [tuple(row[k] for k in keys) for row in _rows(files["requests.jsonl"])] == [
        (r.rid, r.group, r.arrival_at, r.prompt_len, r.output_len - r.num_generated_before,
         r.num_generated_before) for r in requests]
    openai = _rows(files["dataset_openai.jsonl"])
    assert [row["max_tokens"] for row in openai] == [r.output_len for r in requests]
    clients = [line for line in files["client.sh"].splitlines() if line.startswith("python")]
    assert [(_flags(line).get("--output-file"), _flags(line).get("--dataset-name")) for line in clients] == [
        ("results_off.jsonl", None), ("bench_serving_off.jsonl", "openai"),
        ("results_on.jsonl", None), ("bench_serving_on.jsonl", "openai")]
    assert all("--output-details" in _flags(line) for line in clients if "bench_serving" in line)
    assert files["run_test.py"].startswith('"""Who Waits\' test runner')


def test_ten_oclock_pd_export_launches_prefill_decode_and_router_under_each_policy():
    scenario = load_scenario("ten_oclock_rush_pd")
    files = bench_export(scenario)
    servers = [_flags(line) for line in files["launch.sh"].splitlines() if line.startswith("python")]
    assert [(f.get("--disaggregation-mode"), f.get("--disaggregation-decode-allocation-policy"),
             f.get("--disaggregation-transfer-backend"), f.get("--port")) for f in servers] == [
        ("prefill", "early", "mooncake", "30000"), ("decode", "early", "mooncake", "30001"),
        (None, None, None, "8000"),
        ("prefill", "prefill_complete", "mooncake", "30000"),
        ("decode", "prefill_complete", "mooncake", "30001"),
        (None, None, None, "8000")]
    assert "--pd-disaggregation" in servers[2] and servers[2]["--decode"] == "http://127.0.0.1:30001"
    dep = deployment_of(scenario)
    assert [(f["--tp-size"], f["--chunked-prefill-size"]) for f in servers[:2]] == [
        (str(dep.role(n).tp_size), str(dep.role(n).chunk_per_rank)) for n in ("prefill", "decode")]
    rows = _rows(files["requests.jsonl"])
    assert len(rows) == 246 and {r["group"] for r in rows} == {"questions", "contracts"}
    assert [r["prompt_len"] for r in rows if r["group"] == "contracts"] == [120000] * 6
    assert all(_flags(line)["--base-url"] == "http://127.0.0.1:8000"
               for line in files["client.sh"].splitlines() if line.startswith("python"))


def test_a_two_engine_scenario_asks_for_sglangs_dp_size():
    line = launch_lines(load_scenario("forty_replies", ["engine.dp_size=2"]))[0]
    assert _flags(line)["--dp-size"] == "2"


def test_the_zip_holds_the_same_files():
    files = bench_export(load_scenario("forty_replies", ["workload.groups.0.count=2"]))
    with zipfile.ZipFile(BytesIO(zip_export(files))) as archive:
        assert {name: archive.read(name).decode() for name in archive.namelist()} == {
            f"who-waits-test/{name}": text for name, text in files.items()}


def test_the_export_runs_as_written_against_a_stub_server(tmp_path):
    scenario = load_scenario("ten_oclock_rush_pd", ["workload.groups.0.count=3", "workload.groups.1.count=1",
                                                    "workload.groups.1.prompt_len=20000"])
    write_export(bench_export(scenario), tmp_path)
    line = next(line for line in (tmp_path / "client.sh").read_text().splitlines()
                if line.startswith("python run_test.py"))
    args = shlex.split(line)[1:]
    with stub_server(max_requests=8) as (url, seen):
        args[args.index("--base-url") + 1] = url
        done = subprocess.run([sys.executable, *args, "--time-scale", "0.05", "--timeout-s", "30"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    requests = requests_of(scenario)
    sent = sorted((len(b["prompt"]), b["max_tokens"], b["ignore_eos"], b["stream"]) for b in seen)
    assert sent == sorted((r.prompt_len, r.output_len, True, True) for r in requests)
    [run] = read_bench_results(tmp_path / "results_early.jsonl")
    assert run.tag == "early" and run.num_failed == 0
    assert [(m.rid, m.group, m.input_len, m.output_len, len(m.itls_s)) for m in run.requests] == [
        (r.rid, r.group, r.prompt_len, r.output_len, r.output_len - 1) for r in requests]
    assert all(m.ttft_s is not None and 0 < m.ttft_s < 10 for m in run.requests)
