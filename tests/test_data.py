"""The vendored data: each file is the one its SOURCE.md names, beside a licence, and it stays small."""

import gzip
import hashlib
import re
from pathlib import Path

import pytest

from conftest import DATA

VENDORED = ["sglang_logs", "sglang_metrics", "sglang_reference", "traces"]
LISTED = re.compile(r"^- (\S+) ([0-9a-f]{64})$", re.MULTILINE)
NOT_DATA = re.compile(r"^(SOURCE\.md|README\.md|LICENSE\..*)$")


def listed(folder: Path) -> dict[str, str]:
    """file -> SHA-256, from the `- file sha256` lines of the folder's SOURCE.md."""
    return dict(LISTED.findall((folder / "SOURCE.md").read_text()))


def content(path: Path) -> bytes:
    """The file's bytes, or, where only `name.gz` is stored, its uncompressed bytes."""
    gz = path.with_name(path.name + ".gz")
    return path.read_bytes() if path.exists() else gzip.decompress(gz.read_bytes())


@pytest.mark.parametrize("name", VENDORED)
def test_every_vendored_file_matches_the_hash_its_source_gives(name):
    folder = DATA / name
    wrong = [f for f, sha in listed(folder).items() if hashlib.sha256(content(folder / f)).hexdigest() != sha]
    assert wrong == []


@pytest.mark.parametrize("name", VENDORED)
def test_every_vendored_file_is_listed_and_has_a_licence_beside_it(name):
    folder = DATA / name
    stored = {str(p.relative_to(folder)).removesuffix(".gz") for p in folder.rglob("*") if p.is_file()}
    assert sorted(f for f in stored if not NOT_DATA.match(f)) == sorted(listed(folder))
    assert any(f.startswith("LICENSE.") for f in stored)


def test_the_vendored_data_stays_under_15_mb():
    assert sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file()) < 15_000_000
