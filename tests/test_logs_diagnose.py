"""Specification of the stall diagnosis: which stall a log shows, the evidence, and the flag that changes
it."""

import pytest

from engine_model.logs import diagnose, parse_log, parse_log_file, scenario_hints

from conftest import LOGS


def prefill(
    second: int, new_tokens: int, running: int, queue: int = 0, pending: int = 0, usage: float = 0.1
) -> str:
    return (
        f"[2026-01-01 12:00:{second:02d}] Prefill batch, #new-seq: 1, #new-token: {new_tokens}, "
        f"#cached-token: 0, token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queue}, "
        f"#pending-token: {pending}, cuda graph: False, input throughput (token/s): 1000.00"
    )


def decode(second: int, running: int, usage: float = 0.1, queue: int = 0) -> str:
    return (
        f"[2026-01-01 12:00:{second:02d}] Decode batch, #running-req: {running}, #token: 5000, "
        f"token usage: {usage:.2f}, cuda graph: True, gen throughput (token/s): 900.00, #queue-req: {queue}"
    )


def args(**flags) -> str:
    body = ", ".join(f"{key}={value!r}" for key, value in flags.items())
    return f"[2026-01-01 11:59:59] server_args=ServerArgs({body})"


def forty_replies_and_a_long_prompt(mixed: bool | None) -> str:
    """Forty replies stream; a 32k-token prompt arrives and is prefilled in four 8k chunks."""
    head = [args(chunked_prefill_size=8192, enable_mixed_chunk=mixed)] if mixed is not None else []
    return "\n".join(
        head
        + [
            decode(0, 40),
            prefill(1, 8192, 40, pending=24576),
            prefill(2, 8192, 40, pending=16384),
            prefill(3, 8192, 40, pending=8192),
            prefill(4, 8192, 40, pending=0),
            decode(5, 41),
        ]
    )


def test_long_prompt_chunked_back_to_back_stalls_the_forty():
    diagnosis = diagnose(parse_log(forty_replies_and_a_long_prompt(mixed=False)))
    assert diagnosis.verdict == "chunked_prefill_stall"
    [finding] = diagnosis.findings
    assert finding.severity == "observed"
    assert [line_no for line_no, _ in finding.evidence] == [3, 4, 5, 6]
    assert [fix.flag for fix in finding.fixes] == [
        "--enable-mixed-chunk",
        "--chunked-prefill-size (smaller)",
        "--prefill-decode-interval N",
    ]
    assert "4 prefill passes of up to 8,192 tokens ran back to back" in finding.explanation
    assert "up to 40 requests were mid-reply. Mixed chunk is off" in finding.explanation


def test_with_mixed_chunk_on_the_stall_is_one_chunk_and_it_says_so():
    [finding] = diagnose(parse_log(forty_replies_and_a_long_prompt(mixed=True))).findings
    assert "Mixed chunk is on" in finding.explanation
    assert "the longest gap is about one chunk pass" in finding.explanation


def test_without_server_args_the_default_is_named():
    [finding] = diagnose(parse_log(forty_replies_and_a_long_prompt(mixed=None))).findings
    assert "Mixed chunk is not in the log (default: off)" in finding.explanation


def test_chunks_with_nobody_running_are_latent_not_a_verdict():
    text = "\n".join([prefill(1, 8192, 0, pending=8000), prefill(2, 8000, 0)])
    diagnosis = diagnose(parse_log(text))
    assert (diagnosis.verdict, [(f.kind, f.severity) for f in diagnosis.findings]) == (
        "unknown",
        [("chunked_prefill_stall", "latent")],
    )


def test_retraction_is_the_other_stall_with_other_fixes():
    text = "\n".join(
        [
            args(max_total_tokens=20480, max_running_requests=200, enable_mixed_chunk=False),
            decode(1, 150, usage=0.97, queue=30),
            "[2026-01-01 12:00:02] KV cache pool is full. Retract requests. #retracted_reqs: 12, "
            "#new_tokens_gained: 900, #new_token_ratio: 0.4000 -> 1.0000",
            prefill(3, 300, 138, queue=42, usage=0.90),
        ]
    )
    diagnosis = diagnose(parse_log(text))
    assert (diagnosis.verdict, [f.kind for f in diagnosis.findings]) == ("kv_retraction", ["kv_retraction"])
    [finding] = diagnosis.findings
    assert [line_no for line_no, _ in finding.evidence] == [3, 2]
    assert [fix.flag for fix in finding.fixes] == [
        "--max-total-tokens (raise or drop)",
        "--mem-fraction-static (higher) or more GPU memory",
        "--max-running-requests (lower)",
        "--schedule-conservativeness (higher)",
    ]
    assert "1 retraction(s) sent 12 running requests back to the queue" in finding.explanation


def test_queue_behind_the_running_cap():
    text = "\n".join(
        [args(max_running_requests=64), decode(1, 64, queue=10), decode(2, 64, queue=3), decode(3, 50)]
    )
    diagnosis = diagnose(parse_log(text))
    assert diagnosis.verdict == "queueing_running_cap"
    assert [line_no for line_no, _ in diagnosis.findings[0].evidence] == [2, 3]
    assert [fix.flag for fix in diagnosis.findings[0].fixes] == ["--max-running-requests (higher)"]


def test_queue_behind_a_full_token_pool_without_retraction():
    text = "\n".join(
        [args(max_running_requests=256), decode(1, 90, usage=0.93, queue=12), decode(2, 90, usage=0.5)]
    )
    diagnosis = diagnose(parse_log(text))
    assert (diagnosis.verdict, [f.kind for f in diagnosis.findings]) == (
        "queueing_token_pool",
        ["queueing_token_pool"],
    )


def test_several_findings_are_ranked_retraction_first():
    text = (
        forty_replies_and_a_long_prompt(mixed=False)
        + "\n"
        + "\n".join(
            [
                decode(10, 64, usage=0.99, queue=5),
                "[2026-01-01 12:00:11] Decode out of memory happened. #retracted_reqs: 3, "
                "#new_token_ratio: 0.3 -> 0.9",
            ]
        )
    )
    diagnosis = diagnose(parse_log(text))
    assert [f.kind for f in diagnosis.findings] == ["kv_retraction", "chunked_prefill_stall"]


def test_a_quiet_log_with_replies_progressing_looks_healthy_and_says_what_would_contradict_it():
    diagnosis = diagnose(parse_log("\n".join([prefill(0, 100, 0), decode(1, 1), decode(2, 1)])))
    [finding] = diagnosis.findings
    assert (diagnosis.verdict, finding.kind, finding.fixes) == ("healthy", "healthy", [])
    assert [line_no for line_no, _ in finding.evidence] == [2, 3]
    assert "A queue that grows" in finding.contradicts
    assert diagnosis.notes == [
        "no server_args line: mixed chunk and other flags are assumed at their defaults"
    ]


def test_too_little_to_call_healthy_is_unknown_not_healthy():
    diagnosis = diagnose(parse_log("\n".join([prefill(0, 100, 0), prefill(1, 100, 0)])))
    assert (diagnosis.verdict, diagnosis.findings) == ("unknown", [])
    assert any("too little to call the server healthy" in note for note in diagnosis.notes)


# file -> (verdict, [(kind, severity)])
REAL_VERDICTS = {
    # the docs' CI runs without CUDA graphs: said, but latent beside the retraction
    "01_docsci_2025-04-30_qwen05b_batch_retract_decode_oom.log": (
        "kv_retraction",
        [("kv_retraction", "observed"), ("outside_model", "latent")],
    ),
    "02_docsci_2025-06-20_qwen05b_batch_retract_kvpool_full.log": (
        "kv_retraction",
        [("kv_retraction", "observed"), ("outside_model", "latent")],
    ),
    "03_docsci_2025-02-25_llama31_8b_batch_retract.log": (
        "kv_retraction",
        [("kv_retraction", "observed"), ("outside_model", "latent")],
    ),
    "05_pr13023_l40s_prefill_burst_chunk4096.log": (
        "prefill_queue_ramp",
        [("prefill_queue_ramp", "observed")],
    ),
    "07_issue11970_prefill_chunk8192_v0.5.3.log": (
        "prefill_queue_ramp",
        [("prefill_queue_ramp", "observed")],
    ),
    "10_issue36081_v0.5.18_long_prompt_chunked_prefill_then_decode.log": (
        "healthy",
        [("healthy", "observed"), ("chunked_prefill_stall", "latent")],
    ),
    "12_docsci_server_args_examples_2024-11_to_2026-04.log": ("unknown", []),
}


@pytest.mark.parametrize("name", sorted(REAL_VERDICTS))
def test_verdicts_on_real_logs(name):
    diagnosis = diagnose(parse_log_file(LOGS / name))
    assert (diagnosis.verdict, [(f.kind, f.severity) for f in diagnosis.findings]) == REAL_VERDICTS[name]


def test_real_long_prompt_log_says_how_many_more_chunks_were_pending():
    parsed = parse_log_file(
        LOGS / "10_issue36081_v0.5.18_long_prompt_chunked_prefill_then_decode.log"
    )
    [_, finding] = diagnose(parsed).findings
    assert "the first left 157,704 prompt tokens pending, about 20 more passes" in finding.explanation
    assert "no request was mid-reply" in finding.explanation


def queue_ramp(mixed: bool | None = None) -> str:
    """Sixty requests of 1,000 tokens queue at once: each 8k pass admits eight, one carried to the next."""
    head = [args(chunked_prefill_size=8192, enable_mixed_chunk=mixed)] if mixed is not None else []
    lines = [
        f"[2026-01-01 12:00:{i:02d}] Prefill batch, #new-seq: {9 if i else 8}, #new-token: 8192, "
        f"#cached-token: 0, token usage: 0.10, #running-req: {8 * i}, #queue-req: {52 - 8 * i}, "
        "#pending-token: 0, cuda graph: False, input throughput (token/s): 1000.00"
        for i in range(6)
    ]
    return "\n".join([*head, *lines, decode(7, 48)])


def test_a_queue_drained_in_full_chunks_is_a_queue_ramp_not_a_long_prompt():
    diagnosis = diagnose(parse_log(queue_ramp()))
    assert (diagnosis.verdict, [f.kind for f in diagnosis.findings]) == ("prefill_queue_ramp",
                                                                        ["prefill_queue_ramp"])
    [finding] = diagnosis.findings
    assert "6 prefill passes of up to 8,192 tokens ran back to back" in finding.explanation
    assert ("They were not one long prompt: the passes admitted 48 new requests of about 1,020 prompt tokens "
            "each (#new-seq 8-9 a pass, one of them carried over from the pass before), from a queue of 52")\
        in finding.explanation
    assert "A smaller --chunked-prefill-size does not help here" in finding.explanation
    assert [fix.flag for fix in finding.fixes] == [
        "--enable-mixed-chunk", "--prefill-decode-interval N", "--max-running-requests (lower)"]


def test_a_log_with_a_long_prompt_and_a_queue_ramp_has_both_findings():
    ramp = queue_ramp().replace("12:00:", "12:01:")
    diagnosis = diagnose(parse_log(forty_replies_and_a_long_prompt(mixed=False) + "\n" + ramp))
    assert [f.kind for f in diagnosis.findings] == ["chunked_prefill_stall", "prefill_queue_ramp"]
    assert diagnosis.verdict == "chunked_prefill_stall"


def test_the_issue_11970_log_is_a_queue_of_114_not_a_long_prompt():
    """Its lines admit eight ~1,000-token prompts a pass from a queue of 114: the rule that read every full
    chunk as a long prompt called it the long-prompt stall (issue 19, item 8)."""
    [finding] = diagnose(parse_log_file(LOGS / "07_issue11970_prefill_chunk8192_v0.5.3.log")).findings
    assert finding.kind == "prefill_queue_ramp" and finding.severity == "observed"
    assert "the passes admitted 70 new requests" in finding.explanation
    assert "from a queue of 114 at the first line" in finding.explanation
    assert "while up to 64 requests were mid-reply" in finding.explanation


def test_real_burst_log_quotes_the_stalled_passes():
    [finding] = diagnose(
        parse_log_file(LOGS / "05_pr13023_l40s_prefill_burst_chunk4096.log")
    ).findings
    assert [line_no for line_no, _ in finding.evidence] == [6, 7, 8, 11]
    assert "6 prefill passes of up to 4,096 tokens" in finding.explanation


# ---- scenario hints ---------------------------------------------------------------------------------


def test_scenario_hints_from_a_real_server_args_log():
    hints = scenario_hints(
        parse_log_file(LOGS / "01_docsci_2025-04-30_qwen05b_batch_retract_decode_oom.log")
    )
    observed = hints.pop("observed_requests")
    assert hints == {
        "chunked_prefill_size": 8192,
        "enable_mixed_chunk": False,
        "max_running_requests": 200,
        "max_total_tokens": 20480,
        "max_prefill_tokens": 16384,
        "schedule_policy": "fcfs",
        "page_size": 1,
        "mem_fraction_static": 0.8,
        "schedule_conservativeness": 1.0,
        "disable_overlap_schedule": False,  # an engine setting since the cost model prices the overlap
        "enable_dp_attention": False,  # DP attention on one engine is modelled (engine_model/dp_attention.py)
    }
    assert observed[:4] == [(14.0, 6), (19.0, 37), (19.0, 49), (20.0, 8)]  # #new-token, cached left out


def test_observed_requests_join_the_chunks_of_one_long_prompt():
    parsed = parse_log_file(
        LOGS / "10_issue36081_v0.5.18_long_prompt_chunked_prefill_then_decode.log"
    )
    assert scenario_hints(parsed) == {"observed_requests": [(17.0, 256), (27.0, 165896), (100.0, 256)]}


def test_observed_requests_split_shared_passes_evenly():
    text = "\n".join(
        [
            "[2026-01-01 12:00:00] Prefill batch, #new-seq: 3, #new-token: 8192, #cached-token: 0, "
            "#queue-req: 5",
            "[2026-01-01 12:00:01] Prefill batch, #new-seq: 2, #new-token: 1000, #cached-token: 0, "
            "#queue-req: 0",
        ]
    )
    parsed = parse_log(args(chunked_prefill_size=8192) + "\n" + text)
    # the 4th request was one of the 5 queued at the first line: it arrived by then
    assert scenario_hints(parsed)["observed_requests"] == [(1.0, 500), (1.0, 2731), (1.0, 2731), (1.0, 3231)]
