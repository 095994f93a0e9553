"""A row of cards (app/ui/cards.py): what each card says, read back as a browser would read its HTML."""

from markup import read

from app.present.fmt import fmt_seconds
from app.present.numbers import card
from app.ui.cards import Card, row_html


def test_a_card_reads_back_as_written_with_its_arrow_and_tone():
    value, delta = card(12.6, 1.8, fmt_seconds)
    shown = read(row_html([Card("Longest pause", value, delta, "lower", "the longest gap"),
                           Card("Output, tokens/s", "705 → 690", "-15 (-2.1%)", "higher"),
                           Card("Run length", "18.8 s")]))
    assert [(c.label, c.value, c.arrow, c.delta, c.tone, c.help) for c in shown] == [
        ("Longest pause", value, "↓", delta, "good", "the longest gap"),
        ("Output, tokens/s", "705 → 690", "↓", "-15 (-2.1%)", "bad", ""),
        ("Run length", "18.8 s", "", "", "", "")]
    assert delta.startswith("-") and "\u00a0" in value  # a number and its unit stay one word


def test_a_rise_is_good_only_where_higher_is_better():
    rise = [read(row_html([Card("x", "1 → 2", "+1", better)]))[0] for better in ("lower", "higher")]
    assert [(c.arrow, c.tone) for c in rise] == [("↑", "bad"), ("↑", "good")]


def test_no_text_is_read_as_html_markdown_latex_or_an_icon_code():
    label = '<b>p99</b> :material/block: $5 * 2_ "quoted"'
    markup = row_html([Card(label, "$1", help=label)])
    assert "<b>" not in markup and "$" not in markup and ":material" not in markup
    shown = read(markup)[0]
    assert (shown.label, shown.value, shown.help) == (label, "$1", label)


def test_a_percentile_up_because_a_stall_was_split_reads_as_a_fix():
    """Mixed chunk on the forty replies: one 12 s freeze becomes many ~1 s gaps, so the p99 gap rises while
    the longest pause falls. The p99 card says why beside its change and is not red; the longest pause's
    card is green; a p99 that rose with the longest pause is still red."""
    from story_runs import run

    from app.story.headline import headline_cards
    from engine_model import STORIES

    story = STORIES["forty_replies"]
    base, mixed = run("forty_replies"), run("forty_replies", (("mixed", True),))
    shown = {c.label: c for c in read(row_html(headline_cards(story, base, mixed)))}
    p99 = shown["Streams' p99 gap between tokens"]
    longest = next(c for label, c in shown.items() if label.startswith("Longest pause"))
    assert p99.arrow == "↑" and p99.tone == "split", p99
    assert "stall split into short gaps" in p99.why
    assert longest.value.split(" → ")[1].replace("\u00a0", " ") in p99.why
    assert longest.tone == "good"
    p95 = shown["Streams' p95 gap between tokens"]  # up 0.3 %: noise, not the split
    assert not p95.why
    back = {c.label: c for c in read(row_html(headline_cards(story, mixed, base)))}  # the stall returns
    p99_back = back["Streams' p99 gap between tokens"]
    assert p99_back.tone == "good" and not p99_back.why
    worse = read(row_html([Card("p99", "1 s → 2 s", "+1 s", "lower")]))[0]
    assert (worse.tone, worse.why) == ("bad", "")
