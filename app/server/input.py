"""What a user brings to the "Your server" page: bundled samples, pasted or uploaded text, and its limits.

Pure functions: no Streamlit. Anything unusable raises `InputError(where, problem)` with the line it is
about, so the page can say what is wrong and where instead of showing a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine_model import InputError

SAMPLES_DIR = Path(__file__).resolve().parents[1] / "samples"
LOG_LIMIT_MB = 5  # a log is pasted or uploaded; 5 MB is ~25,000 scheduler lines, enough around a stall
TRACE_LIMIT_MB = 20
METRICS_LIMIT_MB = 20  # about 150 scrapes of a real server
INFO_LIMIT_MB = 1  # a /server_info is a few tens of KB
METRICS_EXAMPLE = ("chat_long_prompt.prom", "server_info.json")  # the example log's scrapes and /server_info
SNIFF_CHARS = 65_536
MAX_UNDECODABLE = 0.01  # more than 1 % replaced characters in the first 64 KiB (and more than 16): not text
MIN_UNDECODABLE = 16


@dataclass(frozen=True)
class Sample:
    key: str  # URL value
    label: str
    file: str
    says: str  # what the page should show for it, in a sentence
    source: str  # where it comes from and its licence, in words (the page names no file paths)
    origin: str = "A real SGLang log:"  # what the page calls it, before its source


LOG_SAMPLES = {s.key: s for s in (
    Sample("retraction", "Docs CI, Qwen2.5-0.5B: KV pool capped (retraction)",
           "01_docsci_2025-04-30_qwen05b_batch_retract_decode_oom.log",
           "SGLang's docs CI ran a batch job against a 20,480-token KV pool; the cache filled four times.",
           "server-log lines from an executed notebook of SGLang's documentation, built by SGLang's CI on "
           "2025-04-30 (Apache-2.0)"),
    Sample("example", "Made by the model: chat and a 100,000-token paste, with its /metrics",
           "chat_long_prompt.log",
           "Not a recording: one run of the model, written in SGLang 0.5.23's log format, with the /metrics "
           "scrapes and /server_info SGLang would have given for it (pick them under *Your metrics beside "
           "the log*).",
           "this project, from a run of its model, in SGLang's formats, metric names and buckets "
           "(Apache-2.0)", origin="Written by"),
    Sample("chunk", "Issue 11970, v0.5.3: a queue of 114 prefilled 8,192 tokens a pass",
           "07_issue11970_prefill_chunk8192_v0.5.3.log",
           "Nine Prefill lines in three seconds, each 8,192 new tokens of about eight new requests from a "
           "queue of 114, while up to 64 replies wait.",
           "lines posted in SGLang's GitHub issue #11970 (Apache-2.0)"),
)}
TRACE_SAMPLES = {s.key: s for s in (
    Sample("azure", "Azure 2023 conversation trace, first 1,500 requests",
           "AzureLLMInferenceTrace_conv_head1500.csv", "Chat traffic: almost every prompt is short.",
           "the first 1,500 requests of Microsoft's Azure LLM inference trace 2023, conversation (CC-BY 4.0; "
           "Patel et al., Splitwise, ISCA 2024)"),
    Sample("mooncake", "Mooncake conversation trace, first 300 requests",
           "mooncake_conversation_trace_head300.jsonl", "Long-context chat: a few prompts carry most tokens.",
           "the first 300 requests of the Mooncake FAST'25 conversation trace (Apache-2.0)"),
)}


def sample_text(sample: Sample) -> str:
    return (SAMPLES_DIR / sample.file).read_text(encoding="utf-8")


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def decode_upload(data: bytes, what: str, limit_mb: int) -> tuple[str, list[str]]:
    """Uploaded bytes -> text and notes. Refuses files over the limit, compressed and binary files."""
    if len(data) > limit_mb * 1_000_000:
        raise InputError(what, f"is {len(data):,} bytes; the limit here is {limit_mb} MB. "
                               "Cut the part around the stall (or the time window you care about).")
    if (data[:2] == b"\x1f\x8b" or data[:4] == b"PK\x03\x04" or data[:3] == b"BZh"
            or data[:6] == b"\xfd7zXZ\x00"):
        raise InputError(f"{what}, line 1",
                         "is a compressed file (gzip, zip, bzip2 or xz). Unpack it and upload the text.")
    text = data.decode("utf-8", "replace")
    head = text[:SNIFF_CHARS]
    nul = head.find("\x00")
    if nul >= 0:
        raise InputError(f"{what}, line {line_of(text, nul)}",
                         "contains NUL bytes: this is a binary file, not text. Upload the plain-text file.")
    bad = head.count("\ufffd")
    if bad > max(MIN_UNDECODABLE, MAX_UNDECODABLE * len(head)):
        raise InputError(f"{what}, line {line_of(text, head.index(chr(0xFFFD)))}",
                         f"{bad:,} of the first {len(head):,} characters are not UTF-8 text: this looks like "
                         "a binary file. Upload the plain-text file.")
    notes = ([f"line {line_of(text, text.index(chr(0xFFFD)))}: bytes that are not UTF-8 were replaced by �"]
             if bad else [])
    return text, notes


def check_pasted(text: str, what: str, limit_mb: int) -> str:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit_mb * 1_000_000:
        raise InputError(what, f"is {size:,} bytes; the limit here is {limit_mb} MB. "
                               "Paste the part around the stall.")
    nul = text.find("\x00", 0, SNIFF_CHARS)
    if nul >= 0:
        raise InputError(f"{what}, line {line_of(text, nul)}",
                         "contains NUL characters: this is not a text log.")
    return text


def first_line(text: str, limit: int = 160) -> str:
    line = next((line for line in text.splitlines() if line.strip()), "")
    return line[:limit] + ("…" if len(line) > limit else "")
