"""The forty replies' page with speculative decoding and DP attention (engine_model/speculative.py,
engine_model/dp_attention.py): the page says what SGLang changed at start-up, and DP attention draws a lane
per rank."""

from __future__ import annotations

from test_app_room import open_page

PAGE = "app_pages/forty_replies.py"


def captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_ngram_with_mixed_chunk_on_says_sglang_turned_it_off():
    at = open_page(PAGE, {"mixed": "1", "spec": "NGRAM"})
    said = [i.value for i in at.info if "changed your settings at start-up" in i.value]
    assert said and "SGLang turned it off because speculative_algorithm=NGRAM" in said[0]
    assert "mixed chunk **off** (you set mixed chunk on" in captions(at)


def test_eagle_keeps_mixed_chunk_and_the_resolved_settings_name_its_shape():
    at = open_page(PAGE, {"mixed": "1", "spec": "EAGLE"})
    text = captions(at)
    assert "mixed chunk **on**" in text and "speculative decoding **EAGLE: 5 steps, topk 4, 8 draft" in text


def test_dp_attention_names_its_ranks_and_raises_tp_to_them():
    at = open_page(PAGE, {"dp": "2"})
    text = captions(at)
    assert "2 × H100 SXM 80GB, TP 2, attention DP 2" in text and "DP attention, 2 ranks" in text
    assert not at.error


def test_the_deployment_line_says_the_tp_dp_attention_raised_it_to():
    from app.ui.deployment import deployment_words

    values = {"gpu": "h100-sxm", "model": "llama-3.1-8b", "tp": 1}
    assert deployment_words({**values, "dp": 2}).startswith("2 × H100 SXM 80GB, TP 2, attention DP 2 ·")
    assert deployment_words({**values, "tp": 8, "dp": 4}).startswith("8 × H100 SXM 80GB, TP 8, attention DP")
    assert deployment_words({**values, "dp": "off"}).startswith("1 × H100 SXM 80GB, TP 1 ·")
