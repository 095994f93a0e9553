"""What the model leaves out is said where a reader finds it: docs/design.md's "Simplifications", which the
app shows at the foot of every page (app/ui/simplifications.py reads it)."""

import re

import pytest

from app.ui.simplifications import in_words, simplifications_text

SAID = [  # (what the model does not do as SGLang does, the words that must say it)
    ("PD decode's host backup of retracted KV is unlimited", "Retraction host KV pool exhausted"),
    ("mem_fraction_static is one server's derivation on every PD role", "sizes a decode role's activations"),
    ("the cache off, ignore_eos's own admission path", "admission path without the cache"),
    ("a landed pass's inserts and releases not in batch order", "where SGLang takes them in batch order"),
    ("attention on Hopper and Blackwell is fitted on published kernels, and ranged", "fitted on published"),
    ("an EOS finish in flight is never retracted", "SGLang could still pick one that stopped on EOS"),
]


@pytest.mark.parametrize(("what", "words"), SAID, ids=[w for w, _ in SAID])
def test_each_simplification_is_listed_where_the_app_shows_it(what, words):
    assert words in in_words(simplifications_text())


def test_the_app_says_them_in_plain_words():
    """No class or attribute of the model, no section number of the project's notes, no file path, no
    parenthesis left empty or broken by what was taken out."""
    shown = in_words(simplifications_text())
    patterns = (r"`[A-Z][A-Za-z]+\.\w+`", r"§\d", r"\(\s", r"\(\)", r"\s,", r"\b[\w-]+/[\w./-]+\.(py|md)\b")
    for pattern in patterns:
        assert not re.search(pattern, shown), (pattern, re.search(pattern, shown))
    assert "pop_and_process" in shown  # SGLang's own names stay: a maintainer looks them up
    assert in_words("timed (bench/gpu_forward_timing.py is ready for one)") == (
        "timed (a script in the project is ready for one)")
