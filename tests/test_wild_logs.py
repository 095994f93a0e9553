"""Real SGLang server logs from public issue and PR threads (tests/data/wild_logs): the diagnosis on each
excerpt against the cause its thread states.

The corpus, its labels and their provenance are in tests/data/wild_logs/corpus.toml and SOURCE.md. The labels
come from what each thread says, never from what this project's tool says; a thread that supports more than
one cause lists every cause it supports.
"""

import hashlib
import re
import tomllib

import pytest

from engine_model.logs import diagnose, parse_log

from conftest import DATA

WILD = DATA / "wild_logs"
CAUSES = {
    "chunked_prefill_stall",
    "prefill_queue_ramp",
    "kv_retraction",
    "queueing_running_cap",
    "queueing_token_pool",
    "crash_oom",
    "runaway_output",
    "healthy",
    "outside_model",
}
# Threads kept apart to evaluate the work (issue 39): never in this corpus.
HELD_OUT = {
    "sgl-project/sglang": {1270, 2746, 4305, 6081, 6778, 11854, 14050, 14972, 17392, 22331, 23177, 25960},
    "mit-han-lab/fastrl": {4},
    "marin-community/marin": {1838},
}
REQUIRED_ACCURACY = 0.85
MIN_EXCERPTS = 40
# An excerpt whose thread's cause happens after the quoted lines (a crash or hang the paste stops short of) is
# kept for its format but not scored; it says why, and such excerpts stay a small minority of the corpus.
MAX_UNSCORED_SHARE = 0.10
# A line SGLang's scheduler prints about its batches, in any release: the 0.1.x "new fill batch", the
# Prefill / Decode batch lines, and both wordings of a retraction.
SCHEDULER_LINE = re.compile(
    r"new fill batch|Prefill batch|Decode batch|Decode out of memory happened|KV cache pool is full"
)
URL = re.compile(r"^https://github\.com/([^/]+/[^/]+)/(?:issues|pull)/(\d+)$")
LISTED = re.compile(r"^- (\S+) ([0-9a-f]{64})$", re.MULTILINE)


def entries() -> list[dict]:
    return tomllib.loads((WILD / "corpus.toml").read_text())["log"]


def causes_of(entry: dict) -> set[str]:
    cause = entry["cause"]
    return {cause} if isinstance(cause, str) else set(cause)


def scored(entry: dict) -> bool:
    return entry.get("scored", True)


def text_of(entry: dict) -> str:
    return (WILD / entry["file"]).read_bytes().decode("utf-8")


def verdict_of(text: str) -> str:
    return diagnose(parse_log(text)).verdict


ENTRIES = entries()
IDS = [e["file"] for e in ENTRIES]


# -- the corpus itself -------------------------------------------------------------------------------
def test_the_corpus_is_large_enough():
    assert len(ENTRIES) >= MIN_EXCERPTS, f"{len(ENTRIES)} excerpts; issue 39 asks for at least {MIN_EXCERPTS}"


def test_every_log_file_has_one_entry_and_every_entry_a_file():
    on_disk = sorted(p.name for p in WILD.glob("*.log"))
    listed = [e["file"] for e in ENTRIES]
    assert sorted(listed) == on_disk
    assert len(set(listed)) == len(listed)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_every_entry_names_its_thread_a_known_cause_and_a_quote(entry):
    match = URL.match(entry["url"])
    assert match, entry["url"]
    repo, number = match[1], int(match[2])
    assert number not in HELD_OUT.get(repo, set()), f"{entry['url']} is held out for evaluation"
    assert entry["file"].endswith(f"_{repo.split('/')[1]}_{number}.log")
    assert causes_of(entry) <= CAUSES and causes_of(entry)
    assert entry["quote"].strip() and entry["release"].strip()
    assert isinstance(entry["features"], list)
    assert scored(entry) or entry["why_unscored"].strip()


def test_unscored_excerpts_stay_a_small_minority():
    unscored = [e["file"] for e in ENTRIES if not scored(e)]
    assert len(unscored) <= MAX_UNSCORED_SHARE * len(ENTRIES), unscored


def test_every_file_is_the_one_source_md_lists():
    """The excerpts stay verbatim: SOURCE.md pins each file's SHA-256, so no line is edited to suit a tool."""
    pinned = dict(LISTED.findall((WILD / "SOURCE.md").read_text()))
    assert sorted(pinned) == sorted(IDS)
    wrong = [f for f, sha in pinned.items() if hashlib.sha256((WILD / f).read_bytes()).hexdigest() != sha]
    assert wrong == []


def test_the_licence_is_kept_beside_the_logs():
    assert (WILD / "LICENSE.SGLang-Apache-2.0.txt").read_text().startswith(
        (DATA / "sglang_logs" / "LICENSE.SGLang-Apache-2.0.txt").read_text()[:200]
    )


# -- the diagnosis on each excerpt -------------------------------------------------------------------
@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_each_excerpt_is_read_without_crashing_and_not_refused_when_it_has_scheduler_lines(entry):
    text = text_of(entry)
    parsed = parse_log(text)  # raises only for input that cannot be a text log; these all are text logs
    found = diagnose(parsed)
    assert isinstance(found.verdict, str) and found.verdict
    if SCHEDULER_LINE.search(text):
        records = len(parsed.prefills) + len(parsed.decodes) + len(parsed.retractions)
        assert records > 0, f"{entry['file']} has scheduler lines, yet none was read (it would be refused)"


def test_the_verdicts_match_the_threads_causes():
    rows = [(e["file"], verdict_of(text_of(e)), sorted(causes_of(e))) for e in ENTRIES if scored(e)]
    wrong = [(f, got, want) for f, got, want in rows if got not in want]
    accuracy = 1 - len(wrong) / len(rows)
    listing = "\n".join(f"  {f}: verdict {got!r}, thread says {' or '.join(want)}" for f, got, want in wrong)
    assert accuracy >= REQUIRED_ACCURACY, (
        f"accuracy {accuracy:.1%} ({len(rows) - len(wrong)}/{len(rows)}) is under {REQUIRED_ACCURACY:.0%}; "
        f"mismatches:\n{listing}"
    )
