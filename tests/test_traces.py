"""Specification of the trace loaders: real public traces, broken variants, options, and the request mix."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_model.errors import InputError
from engine_model.traces import Mix, TraceRequest, load_trace, request_mix

from conftest import HEAD_ROWS, trace_copies, trace_head

# file -> (format, rows in SOURCE.md). No real row is skipped: all have a prompt >= 1 token, an output >= 1
# token and a valid timestamp. The vendored heads hold the first HEAD_ROWS rows of each.
REAL = {
    "AzureLLMInferenceTrace_code.csv": ("azure", 8819),
    "AzureLLMInferenceTrace_conv.csv": ("azure", 19366),
    "conversation_trace.jsonl": ("mooncake", 12031),
    "synthetic_trace.jsonl": ("mooncake", 3993),
}
COPIES = [copy for name in sorted(REAL) for copy in trace_copies(name)]


@pytest.mark.parametrize("copy", COPIES, ids=lambda copy: copy.id)
def test_real_traces_load_every_row(copy):
    trace = load_trace(copy.path)
    fmt, num_rows = REAL[copy.name]
    num_rows = num_rows if copy.is_full else HEAD_ROWS
    assert (trace.fmt, trace.num_rows, trace.num_skipped, len(trace.requests)) == (fmt, num_rows, 0, num_rows)
    arrivals = [r.arrival_at for r in trace.requests]
    assert arrivals[0] == 0.0 and arrivals == sorted(arrivals)
    assert all(r.prompt_len >= 1 and r.output_len >= 0 for r in trace.requests)
    if copy.is_full:  # the vendored head is the whole file's first lines
        assert copy.path.read_bytes().startswith(trace_head(copy.name).path.read_bytes())


def test_azure_timestamps_keep_sub_second_precision():
    trace = load_trace(trace_head("AzureLLMInferenceTrace_conv.csv").path, max_requests=2)
    # 18:15:46.6805900 then 18:15:50.9951690
    assert trace.requests == [TraceRequest(0.0, 374, 44), TraceRequest(4.314579, 396, 109)]


# (requests, prompts >= 8,192 tokens, their share, their share of prompt tokens), counted with a plain
# json loop over the file, not with request_mix; the full trace's are the figures in docs/logs-and-traces.md.
MOONCAKE_MIX = {False: ((1000, 510, 0.51, 0.878), "51 % of requests carry 88 %"),
                True: ((12031, 5412, 0.45, 0.847), "45 % of requests carry 85 %")}


@pytest.mark.parametrize("copy", trace_copies("conversation_trace.jsonl"), ids=lambda copy: copy.id)
def test_mooncake_real_trace_mix(copy):
    mix = request_mix(load_trace(copy.path))
    figures, headline = MOONCAKE_MIX[copy.is_full]
    got = (mix.num_requests, mix.num_long, round(mix.long_share, 3), round(mix.long_token_share, 3))
    assert got == figures
    assert mix.headline() == f"{headline} of the prompt tokens (prompts of 8,192 tokens or more)"


@pytest.mark.parametrize("copy", trace_copies("synthetic_trace.jsonl"), ids=lambda copy: copy.id)
def test_real_rows_reused_as_a_window_and_a_speedup(copy):
    full = load_trace(copy.path)
    window = load_trace(copy.path, window=(60.0, 120.0), speedup=2.0)
    kept = [r for r in full.requests if 60.0 <= r.arrival_at < 120.0]
    assert len(kept) > 100  # the head spans 273 s, so the window lies inside it
    first = kept[0].arrival_at
    assert window.requests == [
        TraceRequest(round((r.arrival_at - first) / 2.0, 6), r.prompt_len, r.output_len, r.hash_ids)
        for r in kept
    ]
    assert all(r.hash_ids for r in window.requests)  # Mooncake's blocks travel with their rows


BURSTGPT = (
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,ChatGPT,1087,0,1087,Conversation log\n"
    "118,GPT-4,417,268,685,API log\n"
    "130,ChatGPT,2000,0,2000,API log\n"
)


def test_burstgpt_failures_are_counted_not_loaded():
    trace = load_trace(BURSTGPT)
    assert (trace.fmt, trace.requests) == (
        "burstgpt",
        [TraceRequest(0.0, 472, 18), TraceRequest(113.0, 417, 268)],
    )
    assert (trace.num_rows, trace.num_skipped, trace.skipped_by_kind) == (4, 2, {"failed_request": 2})
    assert trace.skipped_examples == [
        (3, "line 3: Response tokens is 0: BurstGPT marks a failed request this way"),
        (5, "line 5: Response tokens is 0: BurstGPT marks a failed request this way"),
    ]


def test_plain_jsonl_takes_arrival_at_or_arrival_s():
    text = ('{"arrival_at": 2.5, "prompt_len": 100, "output_len": 10}\n'
            '{"arrival_s": 1.0, "prompt_len": 9, "output_len": 1}\n')
    trace = load_trace(text)
    assert (trace.fmt, trace.requests) == ("jsonl", [TraceRequest(0.0, 9, 1), TraceRequest(1.5, 100, 10)])


def test_sampling_is_seeded_and_max_requests_keeps_the_first():
    text = "\n".join(json.dumps({"arrival_at": i, "prompt_len": 10 + i, "output_len": 1}) for i in range(100))
    once, again = load_trace(text, sample=0.3, seed=7), load_trace(text, sample=0.3, seed=7)
    assert once.requests == again.requests and 15 < len(once.requests) < 45
    assert once.requests != load_trace(text, sample=0.3, seed=8).requests
    assert [r.prompt_len for r in load_trace(text, max_requests=3).requests] == [10, 11, 12]


def test_options_are_checked():
    text = '{"arrival_at": 0, "prompt_len": 1, "output_len": 1}'
    for option, match in [
        ({"speedup": 0}, "speedup"),
        ({"sample": 1.5}, "sample"),
        ({"window": (5, 1)}, "window"),
        ({"max_requests": 0}, "max_requests"),
        ({"fmt": "csv"}, "fmt"),
    ]:
        with pytest.raises(InputError, match=match):
            load_trace(text, **option)


AZURE_HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def test_broken_rows_are_skipped_and_counted_by_kind():
    text = AZURE_HEAD + "\n".join(
        [
            "2023-11-16 18:15:46.6805900,374,44",
            "2023-11-16 18:15:47.0000000,lots,44",
            "2023-11-16 18:15:48.0000000,-5,44",
            "2023-11-16 18:15:49.0000000,0,44",
            "2023-11-16 18:15:50.0000000,99999999999,44",
            "yesterday,10,10",
            "2023-11-16 18:15:51.0000000,10",
            "2023-11-16 18:15:52.0000000,100,4",
            "2023-11-16 18:15:53.00",
        ]
    )
    trace = load_trace(text)
    assert trace.requests == [TraceRequest(0.0, 374, 44), TraceRequest(5.31941, 100, 4)]
    assert trace.skipped_by_kind == {
        "not_a_number": 1,
        "negative": 1,
        "zero_length": 1,
        "too_large": 1,
        "bad_timestamp": 1,
        "wrong_columns": 1,
        "truncated_last_line": 1,
    }
    assert [line_no for line_no, _ in trace.skipped_examples] == [3, 4, 5, 6, 7]
    assert trace.skipped_examples[0] == (3, "line 3: ContextTokens is 'lots', not a number")


def test_json_rows_with_bad_json_or_missing_fields_are_counted():
    text = "\n".join(
        [
            '{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [0]}',
            '{"timestamp": 10, "input_length": 10}',
            "[1, 2]",
            '{"timestamp": 20, "input_length": true, "output_length": 2}',
            '{"timestamp": 30, "input_length": 10, "output_len',
        ]
    )
    trace = load_trace(text)
    assert trace.requests == [TraceRequest(0.0, 10, 2, (0,))]
    assert trace.skipped_by_kind == {
        "missing_field": 1,
        "bad_json": 1,
        "not_a_number": 1,
        "truncated_last_line": 1,
    }


def test_hash_ids_are_kept_per_row_and_bad_ones_skip_the_row():
    text = "\n".join(
        [
            '{"timestamp": 0, "input_length": 1000, "output_length": 2, "hash_ids": [7, 8]}',
            '{"timestamp": 1, "input_length": 10, "output_length": 2}',
            '{"timestamp": 2, "input_length": 10, "output_length": 2, "hash_ids": [-1]}',
            '{"timestamp": 3, "input_length": 10, "output_length": 2, "hash_ids": "7"}',
            '{"timestamp": 4, "input_length": 600, "output_length": 2, "hash_ids": [7]}',
        ]
    )
    trace = load_trace(text)
    assert [r.hash_ids for r in trace.requests] == [(7, 8), (), (7,)]
    assert trace.skipped_by_kind == {"bad_hash_ids": 2}


def test_wrong_columns_name_what_was_expected_and_found():
    with pytest.raises(
        InputError, match=r"found columns \['ContextTokens', 'TIME'\]; expected azure: TIMESTAMP"
    ):
        load_trace("TIME,ContextTokens\n1,2\n")
    with pytest.raises(InputError, match="expected columns TIMESTAMP, ContextTokens, GeneratedTokens"):
        load_trace("a,b\n1,2\n", fmt="azure")


def test_unusable_files_give_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="is empty: nothing usable was found"):
        load_trace("\n\n")
    with pytest.raises(InputError, match="NUL bytes: this looks binary"):
        load_trace(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(
        InputError, match=r"nothing usable was found: 1 rows, 1 skipped \(line 2: ContextTokens"
    ):
        load_trace(AZURE_HEAD + "2023-11-16 18:15:46.1,0,1\n")
    with pytest.raises(InputError, match="none fell in the window"):
        load_trace(AZURE_HEAD + "2023-11-16 18:15:46.1,10,1\n", window=(5.0, 9.0))
    with pytest.raises(InputError, match="not a readable file"):
        load_trace(tmp_path / "missing.csv")


def test_a_str_is_always_text_never_a_path():
    path = str(trace_head("synthetic_trace.jsonl").path)
    with pytest.raises(InputError, match="line 1 \\(header\\)"):
        load_trace(path)
    assert load_trace(Path(path)).fmt == "mooncake"


def test_file_that_is_not_utf8_loads_with_a_warning(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(AZURE_HEAD.encode() + b"2023-11-16 18:15:46.1,10,1\n2023-11-16 18:15:47.1,1\xff0,1\n")
    trace = load_trace(path)
    assert (len(trace.requests), trace.skipped_by_kind, trace.warnings) == (
        1,
        {"not_a_number": 1},
        ["line 3: bytes that are not UTF-8 were replaced"],
    )


def test_request_mix_reads_as_the_page_headline():
    requests = [TraceRequest(float(i), 100, 10) for i in range(49)] + [TraceRequest(49.0, 10_000, 500)]
    text = "\n".join(
        json.dumps({"arrival_at": r.arrival_at, "prompt_len": r.prompt_len, "output_len": r.output_len})
        for r in requests
    )
    mix = request_mix(load_trace(text))
    assert mix == Mix(
        num_requests=50,
        long_threshold=8192,
        num_long=1,
        long_share=0.02,
        long_token_share=10_000 / 14_900,
        num_prompt_tokens=14_900,
        prompt_len_percentiles={50: 100.0, 90: 100.0, 95: 100.0, 99: 5149.0, 100: 10_000.0},
        output_len_percentiles={50: 10.0, 90: 10.0, 95: 10.0, 99: 259.9, 100: 500.0},
        duration_s=49.0,
        mean_arrival_rate=1.0,
    )
    assert (
        mix.headline() == "2 % of requests carry 67 % of the prompt tokens (prompts of 8,192 tokens or more)"
    )


# ---- fuzzing ---------------------------------------------------------------------------------------

HEADERS = [
    "TIMESTAMP,ContextTokens,GeneratedTokens",
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
    '{"timestamp": 0, "input_length": 5, "output_length": 1}',
    '{"arrival_at": 0, "prompt_len": 5, "output_len": 1}',
]
CELLS = [
    "2023-11-16 18:15:46.6805900",
    "12",
    "-3",
    "0",
    "1e309",
    "nan",
    "x",
    '"',
    "",
    "99999999999",
    "1.5",
    "{",
    "}",
    "1" + "0" * 400,
    "1e3",
]


def fuzz_check(text: str) -> None:
    try:
        trace = load_trace(text)
    except InputError:
        return
    assert trace.requests and trace.requests[0].arrival_at == 0.0
    assert trace.num_rows >= len(trace.requests) and trace.num_skipped == sum(trace.skipped_by_kind.values())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_load_trace_never_fails_on_arbitrary_text(text):
    fuzz_check(text)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(HEADERS),
    st.lists(st.lists(st.sampled_from(CELLS), min_size=0, max_size=6).map(",".join), max_size=8),
)
def test_load_trace_never_fails_on_trace_like_text(header, rows):
    fuzz_check("\n".join([header, *rows]))
    json_rows = [f'{{"timestamp": {r or 0}, "input_length": {r or 1}, "output_length": 1}}' for r in rows]
    fuzz_check("\n".join([header, *json_rows]))


# ---- streaming: stopping early never changes the result ---------------------------------------------


def reference_shape(rows, window, sample, max_requests, seed, speedup=2.0):
    """The documented order of the options, on rows read in full (docs/logs-and-traces.md section 7)."""
    import random

    rows = sorted(rows, key=lambda row: row[0])
    kept = [(t - rows[0][0], p, o) for t, p, o in rows]
    if window is not None:
        kept = [row for row in kept if window[0] <= row[0] < window[1]]
    kept = [(t - kept[0][0], p, o) for t, p, o in kept] if kept else []
    if sample < 1:
        rng = random.Random(seed)
        kept = [row for row in kept if rng.random() < sample]
    kept = [((t - kept[0][0]) / speedup, p, o) for t, p, o in kept] if kept else []
    return [TraceRequest(round(t, 6), p, o) for t, p, o in kept[:max_requests]]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=40),
    st.booleans(),
    st.sampled_from([None, (0.0, 10.0), (3.0, 25.0)]),
    st.sampled_from([1.0, 0.5]),
    st.sampled_from([None, 1, 5]),
)
def test_stopping_early_gives_what_reading_everything_gives(times, in_order, window, sample, max_requests):
    """In time order, the result is that of reading every row. Out of order, it is that of the rows read:
    a row out of order after the stop is never seen (the documented limit of streaming)."""
    times = sorted(times) if in_order else times
    rows = [(float(t), 10 + i, 1) for i, t in enumerate(times)]
    text = "".join(json.dumps({"arrival_at": t, "prompt_len": p, "output_len": o}) + "\n" for t, p, o in rows)
    try:
        trace = load_trace(text, window=window, sample=sample, max_requests=max_requests, seed=3, speedup=2.0)
    except InputError:  # nothing usable: in time order, reading everything finds nothing either
        assert not in_order or reference_shape(rows, window, sample, max_requests, seed=3) == []
        return
    read = rows if in_order else rows[: trace.num_rows]
    assert trace.requests == reference_shape(read, window, sample, max_requests, seed=3)
    assert (trace.num_rows == len(rows)
            or trace.stopped.startswith(f"reading stopped after line {trace.num_rows}:"))
    assert len(trace.requests) + trace.num_not_kept == len(rows)  # every row is kept or counted


def test_every_row_not_kept_is_counted_with_why():
    rows = "".join(json.dumps({"arrival_at": t, "prompt_len": 5, "output_len": 1}) + "\n" for t in range(100))
    trace = load_trace(rows + '{"arrival_at": 1}\n', max_requests=10)  # in time order: reading stops
    assert (len(trace.requests), trace.dropped, trace.num_unread) == (10, {}, 91)
    assert trace.stopped.startswith("reading stopped after line 10: max_requests (10)")
    assert trace.stopped_by == "max_requests"
    assert load_trace(rows, window=(0.0, 30.0)).stopped_by == "window"
    shuffled = rows.splitlines(keepends=True)[::-1]  # out of order: read to the end
    trace = load_trace("".join(shuffled), window=(20.0, 80.0), max_requests=25)
    assert (len(trace.requests), trace.dropped, trace.num_unread) == (
        25, {"outside_window": 40, "past_max_requests": 35}, 0)
    trace = load_trace("".join(shuffled), sample=0.5, max_requests=30, seed=1)
    assert trace.dropped["not_sampled"] + trace.dropped["past_max_requests"] == 70
    assert trace.dropped["not_sampled"] > 10 and trace.num_not_kept == 70


def test_an_unordered_file_is_read_to_the_end(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"arrival_at": t, "prompt_len": 5, "output_len": 1}) + "\n"
                            for t in [5, 1, 9, 0]))
    trace = load_trace(path, max_requests=2)
    assert (trace.requests, trace.num_rows, trace.stopped) == (
        [TraceRequest(0.0, 5, 1), TraceRequest(1.0, 5, 1)], 4, None)
