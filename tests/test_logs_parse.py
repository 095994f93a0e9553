"""Specification of the SGLang log parser and the timeline rebuilt from it."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_model.errors import InputError
from engine_model.logs import (
    build_timeline,
    default_rank,
    diagnose,
    parse_log,
    parse_log_file,
    scenario_hints,
)
from engine_model.logs import settings as resolved_settings
from engine_model.logs.diagnose import VERDICTS
from engine_model.logs.parse import DecodeRecord, PrefillRecord, RetractionRecord

from conftest import LOGS

OLD_PREFILL = (
    "[2025-04-30 23:19:41 TP0] Prefill batch. #new-seq: 98, #new-token: 2940, #cached-token: 431, "
    "token usage: 0.06, #running-req: 41, #queue-req: 490"
)
NEW_PREFILL = (
    "[2026-01-01 12:00:00] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 5, "
    "token usage: 0.40, "
    "#running-req: 40, #queue-req: 1, #pending-token: 91808, #replay-token: 7, cuda graph: False, "
    "input throughput (token/s): 12345.67, est. prefill TFLOPS/s (per GPU): 123.4, "
)


def test_old_prefill_line_becomes_one_record_with_every_field():
    parsed = parse_log(OLD_PREFILL)
    assert parsed.prefills == [
        PrefillRecord(
            line_no=1,
            at=0.0,
            rank="TP0",
            text=OLD_PREFILL,
            num_new_reqs=98,
            num_new_tokens=2940,
            num_cached_tokens=431,
            token_usage=0.06,
            num_running_reqs=41,
            num_queue_reqs=490,
        )
    ]
    assert (parsed.num_lines, parsed.num_unrecognised, parsed.num_malformed) == (1, 0, 0)


def test_new_prefill_line_keeps_unknown_fields_and_tolerates_a_trailing_comma():
    record = parse_log(NEW_PREFILL).prefills[0]
    assert (
        record.num_new_reqs,
        record.num_new_tokens,
        record.num_cached_tokens,
        record.token_usage,
        record.num_running_reqs,
        record.num_queue_reqs,
        record.num_pending_tokens,
        record.num_replay_tokens,
        record.graph,
        record.input_throughput,
    ) == (2, 8192, 5, 0.40, 40, 1, 91808, 7, False, 12345.67)
    assert record.extra == {"est. prefill TFLOPS/s (per GPU)": "123.4"}


def test_pd_prefill_hybrid_pools_and_iteration_numbers():
    text = (
        "[2026-01-01 12:00:00 DP0 TP0] Prefill batch [17], #new-seq: 1, #new-token: 64, #cached-token: 0, "
        "full token usage: 0.10, mamba usage: 0.20, #running-req: 0, #queue-req: 0, #pending-token: 0, "
        "#bootstrap-req: 3, #inflight-req: 2, #optimistic-req: 1, npu graph: True, "
        "input throughput (token/s): 1.00"
    )
    record = parse_log(text).prefills[0]
    assert (record.rank, record.iteration, record.token_usage, record.mamba_usage) == (
        "DP0 TP0",
        17,
        0.10,
        0.20,
    )
    assert (
        record.num_bootstrap_reqs,
        record.num_inflight_reqs,
        record.num_optimistic_reqs,
        record.graph,
    ) == (
        3,
        2,
        1,
        True,
    )


@pytest.mark.parametrize(
    "prefix, rank, at",
    [
        ("[2026-01-01 12:00:01]", "", 1.0),
        ("[2026-01-01 12:00:01 TP3]", "TP3", 1.0),
        ("[2026-01-01 12:00:01.250 DP1 TP2]", "DP1 TP2", 1.25),
        ("[2026-01-01 12:00:01 DP0 PP1 ATTN_CP0 MOE_DP2 TP5 EP5]", "DP0 PP1 ATTN_CP0 MOE_DP2 TP5 EP5", 1.0),
        ("pod-7 | [2026-01-01 12:00:01 TP0]", "TP0", 1.0),
    ],
)
def test_line_prefix_takes_any_combination_of_rank_tags(prefix, rank, at):
    text = "[2026-01-01 12:00:00] Uvicorn running\n" + prefix + " Decode batch, #running-req: 3, #token: 9"
    assert [(d.rank, d.at, d.num_running_reqs, d.num_tokens) for d in parse_log(text).decodes] == [
        (rank, at, 3, 9)
    ]


def test_decode_lines_old_speculative_and_pd_decode():
    text = "\n".join(
        [
            "[2025-04-30 23:19:09 TP0] Decode batch. #running-req: 1, #token: 70, token usage: 0.00, "
            "gen throughput (token/s): 6.35, #queue-req: 0",
            "[2026-08-23 09:06:22 TP0 EP0] Decode batch, #running-req: 1, #full token: 166400, "
            "full token usage: 0.02, #swa token: 768, swa token usage: 0.00, accept len: 4.42, "
            "accept rate: 0.69, cuda graph: True, gen throughput (token/s): 140.78, #queue-req: 0",
            "[2026-08-23 09:06:23] Decode batch, #running-req: 8, #token: 900, token usage: 0.50, "
            "pre-allocated usage: 0.25, #prealloc-req: 4, #transfer-req: 2, #retracted-req: 1, "
            "cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 5",
        ]
    )
    fields = [
        (d.num_running_reqs, d.num_tokens, d.token_usage, d.num_swa_tokens, d.accept_len, d.prealloc_usage)
        + (d.num_prealloc_reqs, d.num_transfer_reqs, d.num_retracted_reqs, d.gen_throughput, d.num_queue_reqs)
        for d in parse_log(text).decodes
    ]
    assert fields == [
        (1, 70, 0.0, None, None, None, None, None, None, 6.35, 0),
        (1, 166400, 0.02, 768, 4.42, None, None, None, None, 140.78, 0),
        (8, 900, 0.5, None, None, 0.25, 4, 2, 1, 1.0, 5),
    ]


def test_retraction_warnings_in_every_wording():
    text = "\n".join(
        [
            "[2025-04-30 23:19:42 TP0] Decode out of memory happened. #retracted_reqs: 23, "
            "#new_token_ratio: 0.6007 -> 0.9238",
            "[2025-04-30 23:19:43] KV cache pool is full. Retract requests. #retracted_reqs: 2, "
            "#new_tokens_gained: 512, #new_token_ratio: 0.5000 -> 1.0000",
            "[2025-04-30 23:19:44] KV cache pool is full. Retract requests. #retracted_reqs: 1, "
            "#new_tokens_gained: 64, #mamba_num_gained: 1, #new_token_ratio: 0.9000 -> 1.0000",
        ]
    )
    assert [
        (
            r.wording,
            r.num_retracted_reqs,
            r.num_new_tokens_gained,
            r.num_mamba_gained,
            r.new_token_ratio_after,
        )
        for r in parse_log(text).retractions
    ] == [
        ("decode_oom", 23, None, None, 0.9238),
        ("kv_pool_full", 2, 512, None, 1.0),
        ("kv_pool_full", 1, 64, 1, 1.0),
    ]


def test_server_args_repr_with_nested_values_is_read_without_eval():
    text = (
        "[2025-01-01 00:00:00] server_args=ServerArgs(model_path='org/m, with comma', "
        "chunked_prefill_size=4096, enable_mixed_chunk=True, "
        "lora_paths=[LoRARef(lora_id='a', pinned=False)], json_model_override_args='{}', "
        "mm_process_config={'a': [1, 2]}, max_running_requests=None, schedule_conservativeness=1.3, "
        "dp_size=2, weird=__import__('os').system('echo hi'))"
    )
    args = parse_log(text).server_args
    assert args["model_path"] == "org/m, with comma"
    assert (args["chunked_prefill_size"], args["enable_mixed_chunk"], args["max_running_requests"]) == (
        4096,
        True,
        None,
    )
    assert args["lora_paths"] == "[LoRARef(lora_id='a', pinned=False)]"
    assert args["mm_process_config"] == {"a": [1, 2]}
    assert args["weird"] == "__import__('os').system('echo hi')"
    assert len(args) == 10


def test_server_args_dict_form_and_a_cut_off_line():
    dict_form = (
        "[2026-01-01 00:00:00] server_args={'model_path': 'x', 'chunked_prefill_size': 8192, 'page_size': 1}"
    )
    assert parse_log(dict_form).server_args == {
        "model_path": "x",
        "chunked_prefill_size": 8192,
        "page_size": 1,
    }
    cut = parse_log(
        "[2026-01-01 00:00:00] server_args={'model_path': 'x', 'chunked_prefill_size': 8192, 'page_"
    )
    assert cut.server_args == {"model_path": "x", "chunked_prefill_size": 8192}
    assert cut.warnings == ["line 1: server_args looks cut off; read the 2 fields before the cut"]


def test_scheduler_startup_line_wins_over_server_args():
    text = (
        "[2025-01-01 00:00:00] server_args=ServerArgs(max_total_tokens=None, chunked_prefill_size=None)\n"
        "[2025-01-01 00:00:05 TP0] max_total_num_tokens=20480, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=200, context_len=32768, available_gpu_mem=59.01 GB"
    )
    parsed = parse_log(text)
    assert parsed.startup == {
        "max_total_num_tokens": 20480,
        "chunked_prefill_size": 8192,
        "max_prefill_tokens": 16384,
        "max_running_requests": 200,
        "context_len": 32768,
        "available_gpu_mem_gb": 59.01,
    }
    assert resolved_settings(parsed) == {
        "max_total_tokens": 20480,
        "chunked_prefill_size": 8192,
        "max_prefill_tokens": 16384,
        "max_running_requests": 200,
    }


def test_every_other_line_is_counted_never_dropped():
    text = "\n".join(
        [
            "[2025-11-11 04:28:01] INFO:     127.0.0.1 - POST /generate 200 OK",
            "Benchmark...",
            "",
            "[2025-11-11 04:28:01] Prefill batch, #new-seq: two, #new-token: 4096",
            "[2025-11-11 04:28:02] ",
            "[2025-11-11 04:28:02] Decode batch, #running-req: 3, #tok",
        ]
    )
    parsed = parse_log(text)
    assert (parsed.num_lines, parsed.num_blank, parsed.num_unrecognised, parsed.num_malformed) == (6, 1, 3, 1)
    assert (parsed.num_timestamped, parsed.num_untimestamped) == (2, 0)  # counted among scheduler lines
    assert parsed.unrecognised_examples == [
        (1, "[2025-11-11 04:28:01] INFO:     127.0.0.1 - POST /generate 200 OK"),
        (2, "Benchmark..."),
        (5, "[2025-11-11 04:28:02] "),
    ]
    assert parsed.malformed_examples == [(4, "field '#new-seq' has value 'two', expected int")]
    # the last line is cut mid-field (a clipped paste): read up to the cut, counted and quoted, not dropped
    assert [(d.line_no, d.num_running_reqs, d.num_tokens) for d in parsed.decodes] == [(6, 3, None)]
    assert (parsed.num_clipped, parsed.clipped_examples[0][0]) == (1, 6)
    assert any("end mid-field" in w for w in parsed.warnings)


def test_limits_and_binary_input_give_clear_errors():
    with pytest.raises(InputError, match="limit is 100"):
        parse_log("x" * 101, max_bytes=100)
    with pytest.raises(InputError, match="line 2: contains NUL bytes"):
        parse_log("ok\n\x00\x01\x02")
    parsed = parse_log(OLD_PREFILL + "\n" + OLD_PREFILL + "\n" + OLD_PREFILL, max_lines=2)
    assert (len(parsed.prefills), parsed.num_lines_not_read) == (2, 1)
    assert parsed.warnings == ["only the first 2 lines were read; 1 more were not"]


def test_log_file_that_is_not_utf8_is_read_with_a_warning(tmp_path):
    path = tmp_path / "server.log"
    path.write_bytes(OLD_PREFILL.encode() + b"\n[2025-04-30 23:19:42 TP0] caf\xe9\n")
    parsed = parse_log_file(path)
    assert (len(parsed.prefills), parsed.num_unrecognised) == (1, 1)
    assert parsed.warnings == ["line 2: bytes that are not UTF-8 were replaced by �"]
    with pytest.raises(InputError, match="not a readable file"):
        parse_log_file(tmp_path / "missing.log")


# file -> (prefills, decodes, retractions, unrecognised, malformed, ranks, has server_args, has startup)
REAL_COUNTS = {
    "01_docsci_2025-04-30_qwen05b_batch_retract_decode_oom.log": (59, 32, 4, 42, 0, {"TP0"}, True, True),
    "02_docsci_2025-06-20_qwen05b_batch_retract_kvpool_full.log": (54, 31, 4, 42, 0, {""}, True, True),
    "03_docsci_2025-02-25_llama31_8b_batch_retract.log": (19, 25, 1, 38, 0, {"TP0"}, True, True),
    "05_pr13023_l40s_prefill_burst_chunk4096.log": (9, 0, 0, 2, 0, {""}, False, False),
    "07_issue11970_prefill_chunk8192_v0.5.3.log": (9, 0, 0, 0, 0, {""}, False, False),
    "10_issue36081_v0.5.18_long_prompt_chunked_prefill_then_decode.log": (
        5,
        3,
        0,
        3,
        0,
        {"TP0 EP0"},
        False,
        False,
    ),
    "12_docsci_server_args_examples_2024-11_to_2026-04.log": (0, 0, 0, 0, 0, set(), True, False),
}


@pytest.mark.parametrize("name", sorted(REAL_COUNTS))
def test_real_logs_parse_completely(name):
    parsed = parse_log_file(LOGS / name)
    counts = (len(parsed.prefills), len(parsed.decodes), len(parsed.retractions), parsed.num_unrecognised)
    counts += (
        parsed.num_malformed,
        set(parsed.ranks),
        parsed.server_args is not None,
        parsed.startup is not None,
    )
    assert counts == REAL_COUNTS[name]
    recognised = len(parsed.prefills) + len(parsed.decodes) + len(parsed.retractions)
    others = (
        parsed.num_unrecognised
        + parsed.num_blank
        + parsed.num_server_args_lines
        + (parsed.startup is not None)
    )
    assert recognised + others == parsed.num_lines


def test_real_server_args_give_the_key_settings():
    parsed = parse_log_file(LOGS / "01_docsci_2025-04-30_qwen05b_batch_retract_decode_oom.log")
    assert resolved_settings(parsed) == {
        "model_path": "qwen/qwen2.5-0.5b-instruct",
        "dtype": "auto",
        "quantization": None,
        "context_length": None,
        "chunked_prefill_size": 8192,
        "enable_mixed_chunk": False,
        "max_running_requests": 200,
        "max_total_tokens": 20480,
        "max_prefill_tokens": 16384,
        "schedule_policy": "fcfs",
        "page_size": 1,
        "disaggregation_mode": "null",
        "tp_size": 1,
        "dp_size": 1,
        "enable_dp_attention": False,
        "disable_overlap_schedule": False,
        "stream_interval": 1,
        "speculative_algorithm": None,  # the tail understates a stall with it (logs-and-traces §8.3)
        "mem_fraction_static": 0.8,
        "kv_cache_dtype": "auto",
        "schedule_conservativeness": 1.0,
        "decode_log_interval": 40,
    }
    assert len(parsed.server_args) == 122


# ---- timeline --------------------------------------------------------------------------------------


def test_lines_in_the_same_second_are_spread_over_it_in_order():
    text = "\n".join(
        [
            "[2026-01-01 12:00:00] Prefill batch, #new-seq: 1, #new-token: 10, #running-req: 0, "
            "#queue-req: 0",
            "[2026-01-01 12:00:00] Prefill batch, #new-seq: 1, #new-token: 10, #running-req: 1, "
            "#queue-req: 0",
            "[2026-01-01 12:00:00] Prefill batch, #new-seq: 1, #new-token: 10, #running-req: 2, "
            "#queue-req: 0",
            "[2026-01-01 12:00:00] Prefill batch, #new-seq: 1, #new-token: 10, #running-req: 3, "
            "#queue-req: 0",
            "[2026-01-01 12:00:02] Decode batch, #running-req: 4, #token: 200, token usage: 0.01",
        ]
    )
    timeline = build_timeline(parse_log(text))
    assert [p.at for p in timeline.prefills] == [0.0, 0.25, 0.5, 0.75]
    assert [(s.at, s.kind, s.num_running_reqs) for s in timeline.samples] == [
        (0.0, "prefill", 0),
        (0.25, "prefill", 1),
        (0.5, "prefill", 2),
        (0.75, "prefill", 3),
        (2.0, "decode", 4),
    ]


def decode_line(second: int, running: int, tokens: int) -> str:
    return (f"[2026-01-01 12:00:{second:02d}] Decode batch, #running-req: {running}, #token: {tokens}, "
            "token usage: 0.1")


def test_decode_segments_use_the_log_interval_and_check_it_against_token_growth():
    lines = [decode_line(1, 10, 1000), decode_line(2, 10, 1250), decode_line(3, 10, 1500)]
    timeline = build_timeline(parse_log("\n".join(lines)))
    assert (timeline.decode_log_interval, timeline.decode_log_interval_source) == (25, "tokens")
    assert [(d.start_at, d.end_at, d.num_steps, d.steps_from_tokens) for d in timeline.decodes] == [
        (0.0, 0.0, 25, None),
        (0.0, 1.0, 25, 25.0),
        (1.0, 2.0, 25, 25.0),
    ]
    with_args = "[2026-01-01 12:00:00] server_args={'decode_log_interval': 40}\n" + "\n".join(lines)
    assert build_timeline(parse_log(with_args)).decode_log_interval_source == "server_args"
    finished = build_timeline(parse_log("\n".join([decode_line(1, 10, 1000), decode_line(2, 3, 100)])))
    assert (finished.decode_log_interval, finished.decode_log_interval_source) == (40, "default")


def test_multi_rank_logs_follow_rank_zero_by_default_and_any_rank_on_request():
    text = "\n".join(
        [
            "[2026-01-01 12:00:00 DP1 TP1] Decode batch, #running-req: 7, #token: 70",
            "[2026-01-01 12:00:00 DP0 TP0] Decode batch, #running-req: 5, #token: 50",
            "[2026-01-01 12:00:01 DP1 TP1] Decode batch, #running-req: 8, #token: 80",
        ]
    )
    parsed = parse_log(text)
    assert (parsed.ranks, default_rank(parsed)) == ({"DP0 TP0", "DP1 TP1"}, "DP0 TP0")
    assert [d.num_running_reqs for d in build_timeline(parsed).decodes] == [5]
    assert [d.num_running_reqs for d in build_timeline(parsed, rank="DP1 TP1").decodes] == [7, 8]


def test_real_long_prompt_log_rebuilds_chunks_and_decode_segments():
    parsed = parse_log_file(
        LOGS / "10_issue36081_v0.5.18_long_prompt_chunked_prefill_then_decode.log"
    )
    timeline = build_timeline(parsed)
    assert (timeline.rank, timeline.chunk_size, timeline.chunk_size_source) == ("TP0 EP0", 8192, "inferred")
    assert [(p.at, p.num_new_tokens, p.is_full_chunk) for p in timeline.prefills] == [
        (17.0, 256, False),
        (27.0, 8192, True),
        (28.0, 8192, True),
        (43.0, 2304, False),
        (100.0, 256, False),
    ]
    assert [(d.start_at, d.end_at, d.num_steps) for d in timeline.decodes] == [
        (0.0, 0.0, 40),
        (0.0, 44.0, 40),
        (44.0, 45.0, 40),
    ]


# ---- fuzzing ---------------------------------------------------------------------------------------

FRAGMENTS = [
    "[2025-04-30 23:19:42 TP0] ",
    "[2025-13-40 99:99:99] ",
    "[2026-01-01 00:00:00.5 DP1 EP2] ",
    "Prefill batch, ",
    "Prefill batch. ",
    "Decode batch [x], ",
    "#new-seq: ",
    "#new-token: ",
    "#running-req: ",
    "token usage: ",
    "cuda graph: ",
    "#retracted_reqs: ",
    "KV cache pool is full. ",
    "#new_token_ratio: 0.5 -> ",
    "server_args=ServerArgs(",
    "server_args={",
    "max_total_num_tokens=",
    "a=[",
    "'",
    ", ",
    ": ",
    "-1",
    "1e400",
    "nan",
    "True",
    "12",
    "\n",
    "\r\n",
    ")",
    "}",
]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_parse_log_never_fails_on_arbitrary_text(text):
    try:
        parsed = parse_log(text)
    except InputError:
        return
    assert parsed.num_lines >= len(parsed.prefills) + len(parsed.decodes) + len(parsed.retractions)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join))
def test_parse_timeline_and_diagnosis_never_fail_on_log_like_text(text):
    try:
        parsed = parse_log(text)
    except InputError:
        return
    build_timeline(parsed)
    assert diagnose(parsed).verdict in VERDICTS
    assert isinstance(scenario_hints(parsed)["observed_requests"], list)
    records = [*parsed.prefills, *parsed.decodes, *parsed.retractions]
    assert all(isinstance(r, PrefillRecord | DecodeRecord | RetractionRecord) for r in records)
