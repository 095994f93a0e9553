"""Who Waits' test runner: send a view's requests to an SGLang server at their own arrival times, record
what bench_serving records.

Standard library only, so it runs wherever Python 3.10+ does (the export copies this file as run_test.py).
Each request is one streaming POST to the server's OpenAI-compatible /v1/completions with its prompt given
as token ids (exactly prompt_len tokens, whatever the tokenizer), max_tokens = its output length and
ignore_eos, so its reply is exactly that long. TTFT and the inter-token latencies are measured as SGLang
0.5.23's bench_serving measures them for its OpenAI backends (sglang/benchmark/serving.py,
async_request_openai_completions): TTFT from just before the POST to the first chunk with text; one ITL
per later chunk with text, the gap since the previous one. The output is one JSON line appended to
--output-file with bench_serving's keys under --output-details (input_lens, output_lens, ttfts, itls,
generated_texts, errors, durations and percentiles in ms), plus `who_waits` (each request's rid, group and
tokens it had streamed before the run began).

Requests that were mid-reply when the model's run began (num_generated_before > 0) are sent first; the
run's clock starts once each of them has streamed that many tokens, and every other request is sent at its
arrival_s on that clock.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from urllib.parse import urlsplit

FIRST_TOKEN_ID = 1000  # prompts are ids 1000..1999 repeated: valid in any vocabulary of 2,000+ tokens
NUM_TOKEN_IDS = 1000


def read_requests(path: str, max_requests: int | None) -> list[dict]:
    keys = ("rid", "group", "arrival_s", "prompt_len", "output_len", "num_generated_before")
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            missing = [k for k in keys if k not in row]
            if missing:
                sys.exit(f"{path} line {line_no}: missing {', '.join(missing)}; "
                         f"each line needs {', '.join(keys)}")
            rows.append(row)
    return rows[:max_requests] if max_requests else rows


def prompt_ids(num_tokens: int, offset: int) -> list[int]:
    """num_tokens ids; `offset` varies the start so that requests share no prefix in the radix cache."""
    return [FIRST_TOKEN_ID + (offset * 7919 + i) % NUM_TOKEN_IDS for i in range(num_tokens)]


class Stream:
    """One request's measurement, in bench_serving's terms."""

    def __init__(self, row: dict):
        self.row = row
        self.ttft, self.itls, self.text, self.error = 0.0, [], "", ""
        self.output_len, self.prompt_len, self.latency = 0, row["prompt_len"], 0.0
        self.num_chunks = 0
        self.reached_before = threading.Event()  # the mid-reply head has streamed


def send(stream: Stream, url, model: str, index: int, timeout_s: float) -> None:
    row = stream.row
    body = json.dumps({"model": model, "prompt": prompt_ids(row["prompt_len"], index),
                       "max_tokens": row["output_len"], "ignore_eos": True, "temperature": 0.0,
                       "stream": True, "stream_options": {"include_usage": True}})
    conn_cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(url.hostname, url.port or (443 if url.scheme == "https" else 80), timeout=timeout_s)
    start = last = time.perf_counter()
    try:
        conn.request("POST", url.path.rstrip("/") + "/v1/completions", body,
                     {"Content-Type": "application/json"})
        response = conn.getresponse()
        if response.status != 200:
            detail = response.read(2000).decode("utf-8", "replace")
            stream.error = f"{response.status} {response.reason}: {detail}"
            return
        for raw in response:
            chunk = raw.strip()
            if not chunk:
                continue
            chunk = chunk.decode("utf-8").removeprefix("data: ")
            stream.latency = time.perf_counter() - start
            if chunk == "[DONE]":
                continue
            data = json.loads(chunk)
            usage = data.get("usage") or {}
            stream.prompt_len = usage.get("prompt_tokens") or stream.prompt_len
            stream.output_len = usage.get("completion_tokens", stream.output_len)
            choices = data.get("choices") or []
            text = choices[0].get("text", "") if choices else ""
            if not text:
                continue
            now = time.perf_counter()
            if stream.num_chunks == 0:
                stream.ttft = now - start
            else:
                stream.itls.append(now - last)
            last, stream.num_chunks, stream.text = now, stream.num_chunks + 1, stream.text + text
            if stream.num_chunks >= row["num_generated_before"]:
                stream.reached_before.set()
        stream.output_len = stream.output_len or stream.num_chunks
    except Exception as err:  # noqa: BLE001 - recorded per request, as bench_serving does
        stream.error = f"{type(err).__name__}: {err}"
    finally:
        stream.reached_before.set()
        conn.close()


def run(rows: list[dict], base_url: str, model: str, time_scale: float, timeout_s: float) -> dict:
    url = urlsplit(base_url)
    streams = [Stream(row) for row in rows]
    threads = [threading.Thread(target=send, args=(s, url, model, i, timeout_s), daemon=True)
               for i, s in enumerate(streams)]
    bench_start = time.perf_counter()
    heads = [i for i, s in enumerate(streams) if s.row["num_generated_before"] > 0]
    for i in heads:
        threads[i].start()
    for i in heads:
        streams[i].reached_before.wait(timeout_s)
    clock = time.perf_counter()
    for i in sorted(set(range(len(rows))) - set(heads), key=lambda i: rows[i]["arrival_s"]):
        time.sleep(max(0.0, clock + rows[i]["arrival_s"] * time_scale - time.perf_counter()))
        threads[i].start()
    for thread in threads:
        thread.join(timeout_s)
    return result_of(streams, time.perf_counter() - bench_start)


def _ms(values: list[float], fn) -> float:
    return fn(values) * 1000 if values else 0.0


def _pct(q: float):
    return lambda values: sorted(values)[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def result_of(streams: list[Stream], duration: float) -> dict:
    done = [s for s in streams if not s.error]
    ttfts = [s.ttft for s in done]
    itls = [gap for s in done for gap in s.itls]
    result = {"backend": "sglang-oai", "dataset_name": "who-waits", "request_rate": "trace",
              "max_concurrency": None, "duration": duration, "completed": len(done),
              "total_input_tokens": sum(s.prompt_len for s in done),
              "total_output_tokens": sum(s.output_len for s in done),
              "request_throughput": len(done) / duration if duration else 0.0,
              "output_throughput": sum(s.output_len for s in done) / duration if duration else 0.0}
    for name, values in (("ttft", ttfts), ("itl", itls)):
        result[f"mean_{name}_ms"] = _ms(values, statistics.fmean)
        result[f"median_{name}_ms"] = _ms(values, statistics.median)
        for q in (90, 95, 99):
            result[f"p{q}_{name}_ms"] = _ms(values, _pct(q))
    result |= {"input_lens": [s.prompt_len for s in streams],
               "output_lens": [0 if s.error else s.output_len for s in streams],
               "ttfts": [0.0 if s.error else s.ttft for s in streams],
               "itls": [[] if s.error else s.itls for s in streams],
               "generated_texts": [s.text for s in streams],
               "errors": [s.error for s in streams],
               "who_waits": {key: [s.row[field] for s in streams] for key, field in
                             (("rids", "rid"), ("groups", "group"),
                              ("num_generated_before", "num_generated_before"))}}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:30000", help="the server or the PD router")
    parser.add_argument("--requests", default="requests.jsonl", help="the export's requests file")
    parser.add_argument("--model", default="default", help="the served model name")
    parser.add_argument("--output-file", required=True, help="JSONL file; one line is appended per run")
    parser.add_argument("--tag", default=None, help="a name for this run (the setting)")
    parser.add_argument("--time-scale", type=float, default=1.0, help="multiply every arrival time by this")
    parser.add_argument("--max-requests", type=int, default=None, help="send only the first N requests")
    parser.add_argument("--timeout-s", type=float, default=3600.0, help="per request")
    args = parser.parse_args(argv)
    rows = read_requests(args.requests, args.max_requests)
    result = {"tag": args.tag} | run(rows, args.base_url, args.model, args.time_scale, args.timeout_s)
    with open(args.output_file, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(result) + "\n")
    failed = len(rows) - result["completed"]
    print(f"{result['completed']} of {len(rows)} requests completed ({failed} failed); "
          f"median TTFT {result['median_ttft_ms']:.1f} ms, p99 ITL {result['p99_itl_ms']:.1f} ms "
          f"-> {args.output_file}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
