"""The verdicts beside the stalls (crash or OOM, runaway output, outside the model, healthy) and the rules
against invented evidence (no seconds without stamps, a chunk size only where the lines show it)."""

from engine_model.logs import build_timeline, diagnose, parse_log
from engine_model.logs.diagnose import KIND_ORDER, VERDICTS
from engine_model.logs.timeline import chunk_size_of


def at(second: int) -> str:
    return f"[2025-03-11 09:{second // 60:02d}:{second % 60:02d} TP0]"


def prefill(second: int, new_seq: int, tokens: int, running: int, queue: int = 0, usage: float = 0.10) -> str:
    return (f"{at(second)} Prefill batch. #new-seq: {new_seq}, #new-token: {tokens}, #cached-token: 0, "
            f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queue}")


def decode(second: int, running: int, tokens: int, queue: int = 0, usage: float = 0.10,
           throughput: float = 900.0) -> str:
    return (f"{at(second)} Decode batch. #running-req: {running}, #token: {tokens}, "
            f"token usage: {usage:.2f}, gen throughput (token/s): {throughput:.2f}, #queue-req: {queue}")


def test_the_shared_vocabulary():
    assert set(KIND_ORDER) == {"chunked_prefill_stall", "prefill_queue_ramp", "kv_retraction",
                               "queueing_running_cap", "queueing_token_pool", "crash_oom", "runaway_output",
                               "outside_model"}
    assert VERDICTS == (*KIND_ORDER, "healthy", "unknown")


def test_decode_out_of_memory_and_a_scheduler_traceback_are_a_crash_quoted():
    text = "\n".join([
        decode(0, 40, 90000, usage=0.95),
        "[2025-03-11 09:00:05 TP0] Decode out of memory. Try to lower your batch size.",
        "[2025-03-11 09:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2312, in run_scheduler_process',
        '  File "/sgl/python/sglang/srt/managers/schedule_batch.py", line 1119, in alloc_token_slots',
        "RuntimeError: Decode out of memory. Try to lower your batch size.",
    ])
    parsed = parse_log(text)
    assert parsed.num_unrecognised == 2  # the two frame lines; the crash lines are read
    found = diagnose(parsed)
    assert found.verdict == "crash_oom"
    crash = found.findings[0]
    assert crash.title == "The server ran out of memory"
    assert "Line 6 says so: “RuntimeError: Decode out of memory." in crash.explanation
    assert [line for line, _ in crash.evidence] == [2, 3, 6]
    assert crash.contradicts


def test_a_crash_in_the_retraction_path_never_gets_advice_that_feeds_retraction():
    text = "\n".join([
        prefill(0, 4, 8000, 30, queue=20, usage=0.90),
        decode(1, 34, 120000, queue=20, usage=0.92),
        "[2025-03-11 09:00:02 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, "
        "#new_tokens_gained: 4096, #new_token_ratio: 0.4000 -> 0.7000",
        "[2025-03-11 09:00:02 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/managers/schedule_batch.py", line 1650, in retract_decode',
        "AssertionError",
    ])
    found = diagnose(parse_log(text))
    assert found.verdict == "crash_oom"
    assert "crash is in the retraction path" in found.findings[0].explanation
    flags = [fix.flag for finding in found.findings for fix in finding.fixes]
    assert not any("conservativeness (lower)" in flag for flag in flags)
    assert not any("max-running-requests (higher)" in flag for flag in flags)


def test_two_requests_holding_307k_tokens_are_a_runaway_output():
    decodes = [decode(10 * i + 10, 2, 306000 + 800 * i, usage=0.45, throughput=80) for i in range(3)]
    text = "\n".join([prefill(0, 2, 3000, 0), *decodes])
    found = diagnose(parse_log(text))
    assert found.verdict == "runaway_output"
    finding = found.findings[0]
    assert "2 running request(s) hold 307,600 KV tokens, about 153,800 each" in finding.explanation
    assert "#token climbs on 2 Decode lines while #running-req stays the same" in finding.explanation
    assert not any("conservativeness" in fix.flag for fix in finding.fixes)


def test_without_a_prefill_line_big_holdings_stay_latent_unless_seen_climbing():
    still = "\n".join(decode(10 * i, 2, 306000, usage=0.45) for i in range(3))
    found = diagnose(parse_log(still))
    assert [(f.kind, f.severity) for f in found.findings if f.kind == "runaway_output"] == [
        ("runaway_output", "latent")]
    assert found.verdict == "unknown"  # never "healthy" beside a possible runaway
    climbing = "\n".join(decode(10 * i, 2, 306000 + 80 * i, usage=0.45) for i in range(3))
    assert diagnose(parse_log(climbing)).verdict == "runaway_output"


def test_max_tokens_one_requests_with_no_decode_phase_are_not_called_mid_reply_starvation():
    """Many Prefill lines of a queue drained pass after pass, and not one Decode line in the whole log."""
    text = "\n".join(prefill(i, 8, 16000, 122, queue=400 - 8 * i) for i in range(30))
    found = diagnose(parse_log(text))
    assert found.verdict != "prefill_queue_ramp"
    [ramp] = [f for f in found.findings if f.kind == "prefill_queue_ramp"]
    assert ramp.severity == "latent" and "no decode phase (max_tokens=1" in ramp.explanation


def test_a_queue_piling_up_at_an_empty_pool_is_outside_the_model():
    text = "\n".join([decode(0, 2, 900, queue=40, usage=0.01), decode(5, 2, 980, queue=80, usage=0.01),
                      decode(10, 2, 1060, queue=122, usage=0.01)])
    found = diagnose(parse_log(text))
    assert found.verdict == "outside_model"
    finding = found.findings[0]
    assert "report upstream" in finding.fixes[0].flag
    assert not any("conservativeness" in fix.flag for fix in finding.fixes)


def test_a_watchdog_timeout_is_a_hang_outside_the_model():
    text = "\n".join([decode(0, 8, 9000), "[2025-03-11 09:05:00 TP0] Scheduler watchdog timeout "
                      "(self.watchdog_timeout=300, self.soft=False)"])
    found = diagnose(parse_log(text))
    assert (found.verdict, found.findings[0].title) == ("outside_model",
                                                        "The server reports a hang or a timeout")


def test_a_log_with_replies_progressing_and_no_queue_looks_healthy_with_its_lines():
    text = "\n".join([prefill(0, 2, 400, 10), decode(1, 12, 5000), decode(2, 12, 5480)])
    found = diagnose(parse_log(text))
    assert found.verdict == "healthy" and found.findings[0].evidence[0][0] == 2


def test_a_queue_drained_pass_after_pass_needs_no_chunk_size():
    text = "\n".join([decode(0, 7, 30000), prefill(1, 3, 15000, 7, queue=40),
                      prefill(2, 3, 15000, 10, queue=56)])
    found = diagnose(parse_log(text))
    assert found.verdict == "prefill_queue_ramp"
    assert "decode_log_interval" in found.findings[0].explanation  # the caveat, cited


def test_a_cap_the_log_does_not_state_is_inferred_from_its_plateau():
    text = "\n".join([prefill(0, 2, 258, 30, queue=66, usage=0.01),
                      decode(1, 32, 7352, queue=68, usage=0.01),
                      prefill(2, 3, 378, 29, queue=63, usage=0.01),
                      prefill(3, 5, 632, 27, queue=56, usage=0.01)])
    found = diagnose(parse_log(text))
    assert found.verdict == "queueing_running_cap"
    assert "the cap is inferred" in found.findings[0].explanation


def test_no_timestamps_means_passes_in_order_and_no_seconds():
    text = "\n".join(line.split("] ", 1)[1] for line in [
        prefill(0, 1, 8192, 40), prefill(1, 1, 8192, 40), prefill(2, 1, 8000, 40), decode(3, 41, 90000)])
    parsed = parse_log(text)
    timeline = build_timeline(parsed)
    assert not timeline.timed and [p.at for p in timeline.prefills] == [0.0, 1.0, 2.0]
    assert any("no timestamps" in note for note in timeline.notes)
    found = diagnose(parsed)
    assert found.verdict == "chunked_prefill_stall"
    assert " s from first to last" not in found.findings[0].explanation
    assert "the log has no timestamps, so how long they took is not known" in found.findings[0].explanation


def test_equal_token_counts_of_whole_prompts_do_not_show_a_chunk_size():
    """Six 2,560-token prompts, twice: 15,360 each time, yet nothing was cut."""
    lines = [prefill(0, 6, 15360, 0), decode(1, 6, 15400), prefill(2, 6, 15360, 6), decode(3, 12, 30800)]
    parsed = parse_log("\n".join(lines))
    assert chunk_size_of(parsed, parsed.prefills) == (None, "unknown")
    assert any("paste the server_args line" in note for note in build_timeline(parsed).notes)
    # a cut shows: one prompt, chunk after chunk with nothing between
    cut = parse_log("\n".join([prefill(0, 1, 8192, 0), prefill(1, 1, 8192, 0), prefill(2, 1, 100, 0)]))
    assert chunk_size_of(cut, cut.prefills) == (8192, "inferred")
    # server_args and /server_info win over any inference
    assert chunk_size_of(cut, cut.prefills, {"chunked_prefill_size": 4096}) == (4096, "server_info")


def test_big_prefill_passes_back_to_back_while_replies_decode_need_no_chunk_size_or_queue():
    """Prefill batches of ~33k tokens back to back while 45-58 requests decode, token counts varying."""
    text = "\n".join([decode(0, 45, 200000), prefill(1, 3, 33120, 45), prefill(2, 4, 32870, 48),
                      prefill(3, 3, 33540, 52), prefill(4, 5, 31990, 55), decode(9, 58, 340000)])
    parsed = parse_log(text)
    assert chunk_size_of(parsed, parsed.prefills) == (None, "unknown")
    found = diagnose(parsed)
    assert found.verdict == "prefill_queue_ramp"
    assert "4 Prefill lines in a row (lines 2-5, about 3 s from first to last) of 31,990-33,540" in (
        found.findings[0].explanation)


def test_a_pd_prefill_worker_never_decodes_and_can_still_look_healthy():
    text = "\n".join(
        f"[2025-05-26 11:34:2{i} DP10 TP10] Prefill batch. #new-seq: 3, #new-token: 3072, #cached-token: 0, "
        f"token usage: 0.00, #running-req: 0, #unbootstrapped-req: 0, #queue-req: {i % 2}, "
        "#transferring-req: 0" for i in range(3))
    parsed = parse_log(text)
    assert [p.num_bootstrap_reqs for p in parsed.prefills] == [0, 0, 0]
    found = diagnose(parsed)
    assert found.verdict == "healthy"
    assert found.findings[0].title == "The log looks healthy (a PD prefill worker)"
    # the same lines piling up a queue are not healthy
    piled = text.replace("#queue-req: 1", "#queue-req: 90")
    assert diagnose(parse_log(piled)).verdict == "unknown"


def test_a_logged_request_error_is_not_a_crash_but_a_bare_exception_line_is():
    turned_away = "[2025-03-11 09:00:05] ValueError: The input (41000 tokens) is longer than the context"
    parsed = parse_log("\n".join([decode(0, 2, 900), turned_away]))
    assert parsed.num_events == 0 and parsed.num_unrecognised == 1
    parsed = parse_log("\n".join([decode(0, 2, 900), "torch.OutOfMemoryError: CUDA out of memory.",
                                  "AssertionError"]))
    assert [e.kind for e in parsed.events] == ["oom", "crash"]
