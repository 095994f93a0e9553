"""The vendored data: each file is the one its SOURCE.md names, beside a licence, and it stays small."""

import gzip
import hashlib
import json
import os
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


def test_the_written_server_files_are_what_their_script_writes_from_the_model_now(tmp_path):
    """tests/data/sglang_metrics (and its copy among the app's samples) is make_data.py's output for the
    model as it is: the pool SGLang would derive today (not the old fixed 0.88 fraction), the run's CUDA
    graphs on each Prefill and Decode line, the scrapes of the same run."""
    import subprocess
    import sys

    from engine_model import resolve, validate
    folder = DATA / "sglang_metrics"
    root = Path(__file__).resolve().parents[1]
    # its own process: the script turns prometheus_client's _created series off for good
    subprocess.run([sys.executable, str(folder / "make_data.py"), str(tmp_path)], check=True, cwd=root,
                   env={**os.environ, "PYTHONPATH": str(root)}, timeout=300)
    scenario = json.loads(subprocess.run(
        [sys.executable, "-c", "import json, sys; sys.path[:0] = [sys.argv[1]]; import make_data; "
         "print(json.dumps(make_data.SCENARIO))", str(folder)],
        check=True, cwd=root, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(root)}).stdout)
    for name in ("chat_long_prompt.log", "chat_long_prompt.prom", "server_info.json"):
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes(), name
    pool = resolve(validate(scenario)).max_total_tokens
    log = (folder / "chat_long_prompt.log").read_text()
    assert f"max_total_num_tokens={pool}," in log and f'"max_total_num_tokens": {pool},' in (
        folder / "server_info.json").read_text()
