"""Every scheduler line format SGLang has printed, 0.1.x to 0.5.23, as pasted from real servers: each is read.

The wordings follow the releases' own source (docs/logs-and-traces.md §1 names the file of each).
"""

import pytest

from engine_model.logs import build_timeline, diagnose, parse_log
from engine_model.logs.parse import followed_ranks

DECODE_05 = ("Decode batch, #running-req: 12, #token: 9876, token usage: 0.12, cuda graph: True, "
             "gen throughput (token/s): 640.50, #queue-req: 0")
DECODE_04 = ("Decode batch. #running-req: 12, #token: 9876, token usage: 0.12, "
             "gen throughput (token/s): 640.50, #queue-req: 0, ")


def one_decode(text: str):
    parsed = parse_log(text)
    assert (len(parsed.decodes), parsed.num_malformed) == (1, 0), (parsed.unrecognised_examples,
                                                                   parsed.malformed_examples)
    return parsed, parsed.decodes[0]


@pytest.mark.parametrize(("line", "rank", "timed"), [
    # 0.3.x-0.5.x: date-time stamp with the rank tags (scheduler.py's prefix: DP, PP, ATTN_CP, MOE_DP, TP, EP)
    (f"[2025-03-11 09:12:01 TP0] {DECODE_04}", "TP0", True),
    (f"[2026-05-02 10:11:12 DP1 PP0 ATTN_CP0 MOE_DP0 TP4 EP4] {DECODE_05}",
     "DP1 PP0 ATTN_CP0 MOE_DP0 TP4 EP4", True),
    (f"[2026-05-02 10:11:12.345 TP0] {DECODE_05}", "TP0", True),  # SGLANG_LOG_MS
    # 0.2.x: time only (datefmt "%H:%M:%S")
    (f"[04:40:55 TP0] {DECODE_04}", "TP0", True),
    # tags with no time (a log config without asctime), and no prefix at all
    (f"[TP0] {DECODE_04}", "TP0", False),
    (DECODE_05, "", False),
    # a container's outer prefix around SGLang's own
    (f"[2025-03-11 09:12:01] [2025-03-11 09:12:01 TP0] {DECODE_04}", "TP0", True),
    (f"sglang-1  | [2025-03-11 09:12:01 TP0] {DECODE_04}", "TP0", True),  # docker compose
    # kubectl
    (f"2025-03-11T09:12:01.123456789Z stdout F [2025-03-11 09:12:01 TP0] {DECODE_04}", "TP0", True),
    (f"Mar 11 09:12:01 gpu-7 python3[48213]: [2025-03-11 09:12:01 TP0] {DECODE_04}", "TP0", True),  # journald
    # Python logging with level, pid, file and line (a custom SGLANG_LOGGING_CONFIG_PATH)
    (f"2026-05-02 10:11:12 INFO 1234 [DP0 TP0 EP0 scheduler_metrics_mixin.py:305] {DECODE_05}", "DP0 TP0 EP0",
     True),
    # other loggers' shells: loguru, a Ray actor, slashes in the date
    (f"2025-03-11 09:12:01.123 | INFO     | sglang.srt:log:88 - {DECODE_05}", "", True),
    (f"(SGLangEngine pid=48213) [2025-03-11 09:12:01 DP1 TP2] {DECODE_04}", "DP1 TP2", True),
    (f"[2025/03/11 09:12:01 TP0] {DECODE_04}", "TP0", True),
    # 0.1.x: `[gpu_id=0]` before the message, no stamp (format "%(message)s")
    (f"[gpu_id=0] {DECODE_04}", "GPU0", False),
])
def test_each_prefix_is_read_with_its_rank_and_time(line, rank, timed):
    parsed, record = one_decode(line + "\n")
    assert (record.rank, record.num_running_reqs, record.num_tokens, record.num_queue_reqs) == (
        rank, 12, 9876, 0)
    assert parsed.has_times is timed
    assert parsed.formats  # the format is named for the reader


def test_ansi_colours_and_crlf_line_ends_are_read():
    text = (f"\x1b[32m[2025-03-11 09:12:01 TP0]\x1b[0m {DECODE_04}\r\n"
            f"[2025-03-11 09:12:02 TP0] {DECODE_04}\r\n")
    parsed = parse_log(text)
    assert [d.num_running_reqs for d in parsed.decodes] == [12, 12] and parsed.num_malformed == 0
    assert "ANSI colour codes (stripped)" in parsed.formats


def test_a_paste_clipped_mid_field_is_read_up_to_the_cut_and_said():
    text = "\n".join([
        "[2025-03-11 09:12:01 TP0] Decode batch. #running-req: 41, #token: 90112, token usage: 0.88, gen thr",
        "[2025-03-11 09:12:02 TP0] Decode batch. #running-req: 41, #token: 90152, token usage: 0.88, #queue-",
        "[2025-03-11 09:12:03 TP0] Prefill batch. #new-seq: 1, #new-token: 8192, #cached-token: 0, "
        "token usage: 0.90, #running-req: 41, #queue-req: 3, ...",
    ])
    parsed = parse_log(text)
    assert ([d.num_tokens for d in parsed.decodes], parsed.prefills[0].num_queue_reqs) == ([90112, 90152], 3)
    assert (parsed.num_clipped, parsed.num_malformed) == (3, 0)
    assert any("3 scheduler line(s) end mid-field" in w for w in parsed.warnings)


def test_time_only_stamps_cross_midnight_forwards():
    text = f"[23:59:59 TP0] {DECODE_04}\n[00:00:01 TP0] {DECODE_04}\n"
    parsed = parse_log(text)
    assert [d.at for d in parsed.decodes] == [0.0, 2.0]
    assert any("past midnight" in w for w in parsed.warnings)


def test_release_0_1_lines_new_fill_batch_and_the_headerless_decode_line():
    """0.1.6 (router/model_rpc.py): `new fill batch. #seq: …` and a decode line every 20 passes, no header."""
    text = "\n".join([
        "new fill batch. #seq: 1. #cached_token: 330. #new_token: 2172. #remaining_req: 57. #running_req: 9. "
        "tree_cache_hit_rate: 69.16%",
        "#running-req: 10, #token: 40210, token usage: 0.31, #queue-req: 56",
        "#running-req: 10, #token: 40410, token usage: 0.31, #queue-req: 56",
    ])
    parsed = parse_log(text)
    [p] = parsed.prefills
    assert (p.num_new_reqs, p.num_new_tokens, p.num_cached_tokens, p.num_queue_reqs, p.num_running_reqs) == (
        1, 2172, 330, 57, 9)
    assert [d.num_tokens for d in parsed.decodes] == [40210, 40410]
    assert build_timeline(parsed).decode_log_interval == 20  # estimated from #token growth: 200 / 10


def test_release_0_2_mixed_prefill_header_and_decode_oom_wording():
    text = "\n".join([
        "[04:40:55 TP0] Prefill batch(mixed #running-req: 5). #new-seq: 1, #new-token: 812, "
        "#cached-token: 0, cache hit rate: 0.00%, #queue-req: 0",
        "[04:40:56 TP0] Decode out of memory happened. #retracted_reqs: 2, "
        "#new_token_ratio: 0.4000 -> 0.6000",
        "[04:40:57] decode out of memory happened, #retracted_reqs: 1, #new_token_ratio: 0.6000 -> 0.8000",
    ])
    parsed = parse_log(text)
    assert (parsed.prefills[0].num_running_reqs, parsed.prefills[0].extra["mixed"]) == (5, "True")
    assert [r.num_retracted_reqs for r in parsed.retractions] == [2, 1]


def test_fields_added_over_time_are_read():
    text = "\n".join([
        # speculative decoding, NPU graphs (Ascend)
        "[2026-07-21 15:00:13 TP0 EP0] Decode batch, #running-req: 24, #token: 233600, token usage: 0.66, "
        "accept len: 3.05, accept rate: 0.68, npu graph: True, gen throughput (token/s): 239.06, "
        "#queue-req: 2",
        # hierarchical sparse attention: device tokens, host tokens
        "[2026-07-21 15:00:14 TP0] Decode batch, #running-req: 3, #gpu token: 4096, gpu token usage: 0.10, "
        "#cpu-token: 90000, cuda graph: True, gen throughput (token/s): 99.00, #queue-req: 0",
        "[2026-07-21 15:00:15 TP0] Decode batch, #running-req: 3, #gpu-token: 4200, #cpu-token: 91000, "
        "cuda graph: True, gen throughput (token/s): 99.00, #queue-req: 0",
    ])
    parsed = parse_log(text)
    first, second, third = parsed.decodes
    assert (first.accept_len, first.accept_rate, first.graph) == (3.05, 0.68, True)
    assert (second.num_tokens, second.token_usage, second.extra["#cpu-token"]) == (4096, 0.10, "90000")
    assert third.num_tokens == 4200 and parsed.num_malformed == 0


def test_tp_shards_of_one_scheduler_are_one_rank():
    lines = [f"[2025-03-11 09:12:0{s} TP{tp}] {DECODE_04}" for s in range(3) for tp in range(5)]
    parsed = parse_log("\n".join(lines))
    assert followed_ranks(parsed) == {"": ["TP0", "TP1", "TP2", "TP3", "TP4"]}
    found = diagnose(parsed)
    assert found.rank == "TP0"
    assert not any("schedulers" in note for note in found.notes)
    assert any("4 more shard(s) of the same scheduler" in note for note in found.notes)
    assert len(build_timeline(parsed).decodes) == 3  # TP0's lines only, not five copies


def test_dp_ranks_are_separate_schedulers():
    lines = [f"[2025-03-11 09:12:01 DP{dp} TP{dp * 2}] {DECODE_04}" for dp in range(2)]
    found = diagnose(parse_log("\n".join(lines)))
    assert any("2 schedulers" in note for note in found.notes)


def test_unreadable_lines_are_counted_and_quoted_and_only_a_log_with_none_is_empty():
    text = "\n".join(["Loading safetensors checkpoint shards: 100%", f"[TP0] {DECODE_04}",
                      "[TP0] Decode batch. #running-req: many"])
    parsed = parse_log(text)
    assert (parsed.num_unrecognised, parsed.num_malformed, len(parsed.decodes)) == (1, 1, 1)
    assert parsed.unrecognised_examples == [(1, "Loading safetensors checkpoint shards: 100%")]
