"""What the model simplifies, as the app shows it (app/ui/simplifications.py): each item in one short plain
sentence first, then the design document's text without paths and without the punctuation a removed path
leaves behind ("(;,", "sparse MLA;)", an empty parenthesis)."""

from app.ui.simplifications import STRAY, in_words, leads, simplifications_text, tidy


def test_no_stray_punctuation_is_left_where_paths_were_removed():
    text = in_words(simplifications_text())
    assert [text[max(m.start() - 30, 0):m.end() + 30] for m in STRAY.finditer(text)] == []
    assert "docs/" not in text and ".py" not in text


def test_tidy_mends_what_a_removed_path_leaves():
    assert tidy('names it (;, "The upstream replica"); then') == 'names it ("The upstream replica"); then'
    assert tidy("(indexer, top-k, sparse MLA;):") == "(indexer, top-k, sparse MLA):"
    assert tidy("waiting for it; ). A request") == "waiting for it). A request"
    assert tidy("a parenthesis ( ) left empty , and more") == "a parenthesis left empty, and more"
    assert tidy("version 0.5.22 and 1 .5") == "version 0.5.22 and 1 .5"  # numbers stay as written


def test_each_simplification_has_one_short_plain_sentence():
    text = simplifications_text()
    said = leads(text)
    assert len(said) == text.count("\n- ") + text.startswith("- ") and len(said) >= 10
    for sentence in said:
        assert sentence.endswith(".") and not sentence.endswith("..") and len(sentence) <= 130, sentence
        assert not any(c in sentence for c in "`()*;"), sentence
        assert len(sentence.split()) >= 4, sentence  # a sentence, not a heading ("Version differences.")
