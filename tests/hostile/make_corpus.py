"""A hostile corpus: inputs a user (or an attacker) can hand the engine, written small and on demand.

Every case is a log, a trace, a /metrics scrape, a /server_info, a scenario file, a list of `--set`
overrides or a path, built from a few bytes of recipe here, so nothing large is committed.
`python tests/hostile/make_corpus.py DIR` writes the files into DIR to try them by hand;
tests/test_hostile.py builds them in a temporary folder.

Each case says what a clean answer must contain (`says`: words of the one-line error, or of the partial
result), so the test checks the answer is the right one, not only that nothing crashed.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import random
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

STAMP = "[2026-01-01 12:00:{:02d}]"
PREFILL = ("{} Prefill batch, #new-seq: {}, #new-token: {}, #cached-token: 0, token usage: 0.10, "
           "#running-req: {}, #queue-req: 0")
DECODE = ("{} Decode batch, #running-req: {}, #token: 5000, token usage: 0.10, "
          "gen throughput (token/s): 900.00")


def prefill(second: int, new_seq="1", new_token="8192", running="40") -> str:
    return PREFILL.format(STAMP.format(second), new_seq, new_token, running)


def decode(second: int, running="40") -> str:
    return DECODE.format(STAMP.format(second), running)


GOOD_LOG = "\n".join([decode(0), prefill(1), prefill(2), prefill(3), decode(4)]) + "\n"
GOOD_TRACE = "".join(json.dumps({"arrival_at": i * 0.5, "prompt_len": 100 + i, "output_len": 4}) + "\n"
                     for i in range(6))
TINY_TOML = """name = "tiny"
[engine]
max_total_tokens = 20000
[[workload.groups]]
name = "a"
count = 3
prompt_len = 200
output_len = 4
"""


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # log, trace, metrics, server_info, scenario (TOML), sets (--set on TINY_TOML), path
    data: bytes | str | list[str] | None  # file bytes; the --set list; a path for "path" (str)
    says: str  # a regex that the clean answer (error line or partial result) matches


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def zipped(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("server.log", data)
    return buffer.getvalue()


def binary() -> bytes:
    return bytes(random.Random(0).randrange(256) for _ in range(4096)) + b"\x00\x01"


def backwards_log() -> str:
    return "\n".join([prefill(30, new_token="100"), prefill(10, new_token="100"), decode(5)]) + "\n"


def server_args(body: str) -> str:
    return f"{STAMP.format(0)} server_args=ServerArgs({body})\n"


LOGS = [
    Case("log-empty", "log", b"", "no usable SGLang scheduler line"),
    Case("log-binary", "log", binary(), "NUL bytes"),
    Case("log-utf16", "log", GOOD_LOG.encode("utf-16"), "UTF-16"),
    Case("log-latin1", "log", GOOD_LOG.encode() + "caf\xe9\n".encode("latin-1"), "not UTF-8"),
    Case("log-gzip", "log", gz(GOOD_LOG.encode()), "gzip"),
    Case("log-zip", "log", zipped(GOOD_LOG.encode()), "zip"),
    Case("log-bz2", "log", bz2.compress(GOOD_LOG.encode()), "bzip2"),
    Case("log-crlf", "log", GOOD_LOG.replace("\n", "\r\n").encode(), "chunked-prefill stall"),
    Case("log-giant-line", "log", (GOOD_LOG + prefill(5) + ", x: " + "9" * 1_200_000).encode(), "1,000,000"),
    Case("log-truncated", "log", GOOD_LOG[: GOOD_LOG.rindex("#running-req")].encode(), "cut off"),
    Case("log-is-a-trace", "log", GOOD_TRACE.encode(), "no usable SGLang scheduler line"),
    Case("log-400-digits", "log", (prefill(1, new_token="9" * 400) + "\n").encode(), "#new-token"),
    Case("log-31-digits", "log", (prefill(1, new_token="9" * 31) + "\n").encode(), "1,000,000,000"),
    Case("log-negative", "log", (prefill(1, new_token="-5") + "\n").encode(), ">= 0"),
    Case("log-nan", "log", (GOOD_LOG + decode(5).replace("0.10", "nan")).encode(), "finite"),
    Case("log-inf-retraction", "log", (f"{STAMP.format(1)} KV cache pool is full. Retract requests. "
                                       "#retracted_reqs: 1e999, #new_token_ratio: inf -> 0.5\n").encode(),
         "expected int"),
    Case("log-time-backwards", "log", backwards_log().encode(), "verdict"),
    Case("log-ten-million-seqs", "log", (prefill(1, new_seq="10000000", new_token="100") + "\n").encode(),
         "verdict"),
    Case("log-bad-server-args", "log", (server_args("page_size=0, chunked_prefill_size='banana'")
                                        + GOOD_LOG).encode(), "page_size=0"),
    Case("log-huge-server-args", "log",
         (server_args("chunked_prefill_size=" + "9" * 400 + ", page_size=1e999")
          + GOOD_LOG).encode(), "verdict"),
    Case("log-impossible-date", "log", GOOD_LOG.replace("2026-01-01", "2026-13-40").encode(),
         "not a real date"),
]


def trace_rows(rows: list[str]) -> bytes:
    return ("\n".join(rows) + "\n").encode()


def jsonl(arrival, prompt=100, output=4) -> str:
    return f'{{"arrival_at": {arrival}, "prompt_len": {prompt}, "output_len": {output}}}'


TRACES = [
    Case("trace-empty", "trace", b"", "is empty"),
    Case("trace-binary", "trace", binary(), "NUL bytes"),
    Case("trace-utf16", "trace", GOOD_TRACE.encode("utf-16"), "UTF-16"),
    Case("trace-latin1", "trace",
         GOOD_TRACE.encode() + b'{"arrival_at": 9, "prompt_len": 1\xe9, "output_len": 1}\n',
         "not UTF-8"),
    Case("trace-gzip", "trace", gz(GOOD_TRACE.encode()), "gzip"),
    Case("trace-zip", "trace", zipped(GOOD_TRACE.encode()), "zip"),
    Case("trace-bz2", "trace", bz2.compress(GOOD_TRACE.encode()), "bzip2"),
    Case("trace-crlf", "trace", GOOD_TRACE.replace("\n", "\r\n").encode(), "6 requests"),
    Case("trace-giant-line", "trace",
         GOOD_TRACE.encode() + b'{"arrival_at": 9, "x": "' + b"x" * 1_200_000 + b'"}\n',
         "line_too_long"),
    Case("trace-truncated", "trace", GOOD_TRACE.encode()[:-20], "truncated_last_line"),
    Case("trace-is-a-log", "trace", GOOD_LOG.encode(), "header"),
    Case("trace-is-toml", "trace", TINY_TOML.encode(), "header"),
    Case("trace-json-array", "trace", b"[" + GOOD_TRACE.replace("\n", ",").encode() + b"]", "header"),
    Case("trace-deep-nesting", "trace", GOOD_TRACE.encode() + b"[" * 100_000 + b"\n", "bad_json"),
    Case("trace-huge-numbers", "trace", trace_rows([jsonl(0), jsonl(1, "1" + "0" * 400), jsonl(2, 5, "1e400"),
                                                    jsonl(3, 10**31)]), "too_large"),
    Case("trace-negative-nan", "trace", trace_rows([jsonl(0), jsonl(-1), jsonl(2, -5), jsonl("NaN"),
                                                    jsonl(4, "Infinity")]), "negative"),
    Case("trace-time-backwards", "trace", trace_rows([jsonl(50), jsonl(10), jsonl(30)]), "3 requests"),
    Case("trace-far-apart", "trace", trace_rows([jsonl(0), jsonl(9.9e9)]), "2 requests"),
    Case("trace-azure-bad-cells", "trace", b"TIMESTAMP,ContextTokens,GeneratedTokens\n"
         b"2023-11-16 18:15:46.1,10,1\nyesterday,10,1\n2023-11-16 18:15:47.1,1e999,1\n", "bad_timestamp"),
]


ITL = "sglang:inter_token_latency_seconds"
ITL_LABELS = 'engine_type="unified",model_name="m"'


def itl(*buckets: tuple[str, str]) -> str:
    return "".join(f'{ITL}_bucket{{{ITL_LABELS},le="{le}"}} {n}\n' for le, n in buckets)


def scrape(at: str, count: int = 10) -> str:
    """One scrape after its marker: an ITL histogram and two gauges, as SGLang exports them."""
    return (f"# scraped_at {at}\n# TYPE {ITL} histogram\n"
            + itl(("0.01", str(count - 1)), ("1.0", str(count - 1)), ("+Inf", str(count)))
            + f"{ITL}_count{{{ITL_LABELS}}} {count}\n{ITL}_sum{{{ITL_LABELS}}} {count * 0.02}\n"
            + 'sglang:num_running_reqs{tp_rank="0"} 4\nsglang:token_usage{tp_rank="0"} 0.3\n')


GOOD_SCRAPES = scrape("2026-01-01T12:00:00Z", 10) + scrape("2026-01-01T12:00:05Z", 30)


def many_samples(num: int) -> bytes:
    return "".join(f'sglang:token_usage{{tp_rank="0",x="{i}"}} 0.5\n' for i in range(num)).encode()


METRICS = [
    Case("metrics-empty", "metrics", b"", "no SGLang metric sample"),
    Case("metrics-binary", "metrics", binary(), "NUL bytes"),
    Case("metrics-gzip", "metrics", gz(GOOD_SCRAPES.encode()), "gzip"),
    Case("metrics-utf16", "metrics", GOOD_SCRAPES.encode("utf-16"), "UTF-16"),
    Case("metrics-latin1", "metrics", GOOD_SCRAPES.encode() + "# caf\xe9\n".encode("latin-1"), "not UTF-8"),
    Case("metrics-crlf", "metrics", GOOD_SCRAPES.replace("\n", "\r\n").encode(), "itl_s: p50"),
    Case("metrics-is-a-log", "metrics", GOOD_LOG.encode(), "is a server log"),
    Case("metrics-is-json", "metrics", b'{"model_path": "m", "version": "0.5.23"}\n', "is JSON"),
    Case("metrics-html", "metrics", b"<html><body>404 Not Found</body></html>\n", "not Prometheus text"),
    Case("metrics-vllm", "metrics", b"vllm:num_requests_running 3\nvllm:gpu_cache_usage_perc 0.5\n",
         "none of SGLang's"),
    Case("metrics-no-inf", "metrics", (itl(("0.01", "3"), ("1.0", "5")) + GOOD_SCRAPES).encode(),
         r"no \+Inf bucket"),
    Case("metrics-decreasing", "metrics", (itl(("0.01", "5"), ("1.0", "3"), ("+Inf", "6"))
                                           + GOOD_SCRAPES).encode(), "decrease"),
    Case("metrics-nan-inf", "metrics", (GOOD_SCRAPES + 'sglang:num_queue_reqs{tp_rank="0"} NaN\n'
                                        + itl(("0.01", "+Inf"), ("+Inf", "+Inf"))).encode(),
         "NaN or infinite"),
    Case("metrics-counter-reset", "metrics", (scrape("2026-01-01T12:00:00Z", 50)
                                              + scrape("2026-01-01T12:00:05Z", 4)).encode(), "a restart"),
    Case("metrics-bad-marker", "metrics", ("# scraped_at yesterday\n" + GOOD_SCRAPES).encode(),
         "holds no time"),
    Case("metrics-broken-lines", "metrics", (GOOD_SCRAPES + 'sglang:num_running_reqs{tp_rank="0" 4\n'
                                             "sglang:token_usage 0.5 0.6 0.7 0.8\n").encode(), "malformed"),
    Case("metrics-giant-line", "metrics", (GOOD_SCRAPES + 'sglang:token_usage{x="' + "9" * 1_200_000
                                           + '"} 1\n').encode(), "1,000,000"),
    Case("metrics-many-samples", "metrics", many_samples(25_000), "only the first 20,000 samples"),
    Case("metrics-huge", "metrics", b"# " + b"x" * 21_000_000 + b"\n", "the limit is 20,000,000"),
]
INFOS = [
    Case("info-empty", "server_info", b"", "is not JSON"),
    Case("info-binary", "server_info", binary(), "NUL bytes"),
    Case("info-deep", "server_info", b"[" * 100_000, "nested too deep"),
    Case("info-array", "server_info", b"[1, 2, 3]", "is a JSON list"),
    Case("info-not-sglang", "server_info", b'{"hello": "world"}', "holds none of SGLang's settings"),
    Case("info-huge-numbers", "server_info", b'{"chunked_prefill_size": 1e400, "stream_interval": '
         + b"9" * 400 + b', "version": "0.5.23"}', "holds none of SGLang's settings|not a setting"),
    Case("info-is-a-scrape", "server_info", GOOD_SCRAPES.encode(), "is not JSON"),
]


def toml(text: str) -> bytes:
    return text.encode()


SCENARIOS = [
    Case("toml-empty", "scenario", b"", "no requests"),
    Case("toml-binary", "scenario", binary(), "NUL bytes"),
    Case("toml-utf16", "scenario", TINY_TOML.encode("utf-16"), "UTF-16"),
    Case("toml-latin1", "scenario", TINY_TOML.replace("tiny", "caf\xe9").encode("latin-1"), "not UTF-8"),
    Case("toml-gzip", "scenario", gz(TINY_TOML.encode()), "gzip"),
    Case("toml-truncated", "scenario", TINY_TOML.encode()[:-12], "TOML"),
    Case("toml-crlf", "scenario", TINY_TOML.replace("\n", "\r\n").encode(), "3/3 finished"),
    Case("toml-is-a-log", "scenario", GOOD_LOG.encode(), "not valid TOML"),
    Case("toml-deep-nesting", "scenario", b"seed = " + b"[" * 50_000 + b"]" * 50_000 + b"\n", "nested"),
    Case("toml-ten-million", "scenario", toml("[limits]\nmax_requests = 1000000\n" + "".join(
        f'[[workload.groups]]\nname = "g{i}"\ncount = 100000\nprompt_len = 10\noutput_len = 1\n'
        for i in range(100))), "10,000,000 requests"),
    Case("toml-huge-count", "scenario", toml(TINY_TOML.replace("count = 3", "count = " + "9" * 400)),
         "workload.groups.0.count"),
    Case("toml-inf-arrival", "scenario", toml(TINY_TOML + 'arrival = { kind = "at", start_at = inf }\n'),
         "start_at"),
    Case("toml-nan-limit", "scenario", toml(TINY_TOML + "[limits]\nmax_sim_seconds = nan\n"),
         "max_sim_seconds"),
    Case("toml-negative", "scenario", toml(TINY_TOML.replace("output_len = 4", "output_len = -4")),
         "output_len"),
]

SETS = [
    Case("set-deep-nesting", "sets", ["seed=" + "[" * 5000], "seed"),
    Case("set-inf-limit", "sets",
         ["limits.max_sim_seconds=inf", 'workload.groups.0.arrival={kind="at", start_at=inf}'],
         "finite number"),
    Case("set-pd-inf", "sets", ["pd.link_overrides.bandwidth_gbps=inf"], "pd.link_overrides.bandwidth_gbps"),
    Case("set-arrival-without-kind", "sets", ["workload.groups.0.arrival.start_at=5"],
         "needs a kind, one of at"),
    Case("set-tiny-speedup", "sets", ["workload.trace.path=TRACE", "workload.trace.speedup=1e-300"],
         "speedup"),
    Case("set-far-arrivals", "sets", ["workload.trace.path=FAR"], r"within 1e\+07 s"),
    Case("set-poisson-forever", "sets", ['workload.groups.0.arrival={kind="poisson", rate_per_s=1e-9}'],
         "rate_per_s"),
    Case("set-proc-mem", "sets", ["workload.trace.path=/proc/self/mem"], "cannot be read"),
    Case("set-directory", "sets", ["workload.trace.path=/tmp"], "not a readable file"),
    Case("set-device", "sets", ["workload.trace.path=/dev/zero"], "not a readable file"),
    Case("set-huge-index", "sets", ["workload.groups.99999999999999999999.count=1"], "not an index"),
    Case("set-long-key", "sets", [".".join(["a"] * 100_000) + "=1"], "dotted parts"),
    Case("set-ten-million", "sets", ["workload.groups.0.count=100000", "limits.max_requests=10"],
         "limits.max_requests"),
    # the CLI refuses the deployment (engine_model.feasibility.check); simulate() itself rejects each request
    Case("set-prompt-over-pool", "sets", ["engine.max_total_tokens=100", "workload.groups.0.prompt_len=5000"],
         "the longest prompt, a-00's 5,000 tokens, needs more"),
    Case("set-seed-huge", "sets", ["seed=" + "9" * 400], "seed"),
]

NOT_A_FILE = "not a readable file|no such scenario file"  # a regex: logs and traces | scenarios
PATHS = [
    Case("path-directory", "path", "/tmp", NOT_A_FILE),
    Case("path-dev-zero", "path", "/dev/zero", NOT_A_FILE),
    Case("path-dev-null", "path", "/dev/null", NOT_A_FILE),
    Case("path-proc-mem", "path", "/proc/self/mem", "cannot be read"),
    Case("path-missing", "path", "/nonexistent/who-waits", NOT_A_FILE),
    Case("path-long-name", "path", "/tmp/" + "x" * 5000, r"x\.\.\."),
]

CASES = [*LOGS, *TRACES, *METRICS, *INFOS, *SCENARIOS, *SETS, *PATHS]
SUFFIX = {"log": ".log", "trace": ".jsonl", "scenario": ".toml", "metrics": ".prom", "server_info": ".json"}


def write(folder: Path) -> dict[str, Path]:
    """Write every file case into folder; returns the path of each case by name (paths as given)."""
    folder.mkdir(parents=True, exist_ok=True)
    found = {}
    for case in CASES:
        if case.kind in SUFFIX:
            found[case.name] = folder / f"{case.name}{SUFFIX[case.kind]}"
            found[case.name].write_bytes(case.data)
        elif case.kind == "path":
            found[case.name] = Path(case.data)
    (folder / "tiny.toml").write_text(TINY_TOML)
    (folder / "good.jsonl").write_text(GOOD_TRACE)
    (folder / "far.jsonl").write_bytes(trace_rows([jsonl(0), jsonl(9.9e9)]))
    return found


def big_trace(path: Path, num_rows: int) -> Path:
    """A Mooncake-style trace in time order, about 90 bytes a row: the stand-in for a 200 MB production
    file."""
    rng = random.Random(0)
    with path.open("w") as out:
        for i in range(num_rows):
            out.write(json.dumps({"timestamp": i * 250, "input_length": rng.randint(10, 30_000),
                                  "output_length": rng.randint(1, 800), "hash_ids": [i, i + 1]}) + "\n")
    return path


if __name__ == "__main__":
    written = write(Path(sys.argv[1] if len(sys.argv) > 1 else "hostile-corpus"))
    print(f"{len(written)} cases")
