"""The advisor's results on disk (optional): one JSON Lines file per folder, an outcome per line under its
cache key (the scenario JSON, the budget and the candidate), so a second search of the same mix reruns
nothing it has already run. A line that cannot be read is skipped, never trusted."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from engine_model.advise.evaluate import Outcome, candidate_of

FILE = "advise-cache.jsonl"
FIELDS = ("gpus", "refused", "output_tok_s", "waits", "unfinished", "cut_off", "wall_s", "cpu_s", "peak_mib")


class DiskCache:
    def __init__(self, folder):
        self.path = Path(folder) / FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.found: dict[str, dict] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self.found[row["id"]] = row
                except (ValueError, KeyError, TypeError):
                    continue

    @staticmethod
    def _id(cache_key: str) -> str:
        return hashlib.sha256(cache_key.encode()).hexdigest()

    def get(self, cache_key: str, key: str) -> Outcome | None:
        row = self.found.get(self._id(cache_key))
        if row is None or row.get("key") != key:
            return None
        try:
            return Outcome(key, candidate_of(key), **{f: row[f] for f in FIELDS})
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, cache_key: str, outcome: Outcome) -> None:
        row = {"id": self._id(cache_key), "key": outcome.key, **{f: getattr(outcome, f) for f in FIELDS}}
        self.found[row["id"]] = row
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")
