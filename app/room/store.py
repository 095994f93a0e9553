"""The room's shared store: one small interface, two backends (docs/design.md, "The room's store").

A room is a code, a hash of its presenter's token, and the presenter's view (the page and its URL
parameters) with a version that goes up on every change. Every replica reads and writes the same store, so a
follower on one replica sees what the presenter on another did:

- `SqliteStore` (the default): one file that every replica on one machine opens, in WAL mode (readers do not
  block the writer). `WHO_WAITS_ROOM_URL=sqlite:///PATH` picks the file; unset, it lies in the temp folder.
- `RedisStore`: `WHO_WAITS_ROOM_URL=redis://HOST:PORT/DB`, for replicas on several machines (deploy/).

Rooms expire TTL_S after their last change. Codes are CODE_LEN characters drawn by `secrets` from a
32-letter alphabet without look-alikes (50 bits): guessing one live room among a thousand at a thousand
lookups a second takes about 36 years on average, so codes are long enough that lookups need no rate limit.
Only the presenter's token (kept in the presenter's session, never in a URL) moves a room.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

TTL_S = 6 * 3600  # a class and its breaks
ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # 32 letters: no 0/O, 1/I
CODE_LEN = 10  # 50 bits
ENV = "WHO_WAITS_ROOM_URL"


@dataclass(frozen=True)
class Room:
    code: str
    version: int  # goes up with every change of the view
    view: dict  # {"page": url path ("" for home), "params": {URL parameter: value}}


class RoomStore(Protocol):
    def create(self, view: dict) -> tuple[str, str]:
        """A new room showing `view`: (code, presenter token)."""

    def get(self, code: str) -> Room | None:
        """The room, or None when there is none (never was, or expired)."""

    def publish(self, code: str, token: str, view: dict) -> Room | None:
        """Move the room to `view` (a new version when it differs). None when the token is not the
        presenter's or the room is gone."""


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LEN))


def clean_code(text: str) -> str | None:
    """A code as typed ("abcde-fghjk", spaces, lower case) in canonical form, or None when it is not one."""
    code = "".join(ch for ch in text.upper() if ch not in " -")
    return code if len(code) == CODE_LEN and all(ch in ALPHABET for ch in code) else None


def shown_code(code: str) -> str:
    """ABCDE-FGHJK: two halves, easier to read out."""
    return f"{code[:CODE_LEN // 2]}-{code[CODE_LEN // 2:]}"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SqliteStore:
    """Rooms in one SQLite file (WAL mode), shared by every process that opens it."""

    def __init__(self, path: str | Path, ttl_s: float = TTL_S):
        self.path, self.ttl_s = str(path), ttl_s
        self._local = threading.local()  # a connection per thread (Streamlit runs sessions on threads)
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS rooms (code TEXT PRIMARY KEY, token TEXT NOT NULL, "
                       "version INTEGER NOT NULL, view TEXT NOT NULL, expires REAL NOT NULL)")

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def create(self, view: dict) -> tuple[str, str]:
        code, token, now = new_code(), secrets.token_urlsafe(24), time.time()
        db = self._db()
        db.execute("DELETE FROM rooms WHERE expires < ?", (now,))
        db.execute("INSERT INTO rooms VALUES (?, ?, 1, ?, ?)",
                   (code, _hash(token), json.dumps(view, sort_keys=True), now + self.ttl_s))
        return code, token

    def get(self, code: str) -> Room | None:
        row = self._db().execute("SELECT version, view FROM rooms WHERE code = ? AND expires >= ?",
                                 (code, time.time())).fetchone()
        return None if row is None else Room(code, row[0], json.loads(row[1]))

    def publish(self, code: str, token: str, view: dict) -> Room | None:
        text, now = json.dumps(view, sort_keys=True), time.time()
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT version, view FROM rooms WHERE code = ? AND token = ? AND expires >= ?",
                             (code, _hash(token), now)).fetchone()
            if row is None:
                return None
            version = row[0] + (row[1] != text)
            db.execute("UPDATE rooms SET version = ?, view = ?, expires = ? WHERE code = ?",
                       (version, text, now + self.ttl_s, code))
        finally:
            db.execute("COMMIT")
        return Room(code, version, view)


# A compare-and-set in one step on the Redis server: check the token, bump the version when the view
# differs, refresh the expiry.
PUBLISH_LUA = """
local token = redis.call('HGET', KEYS[1], 'token')
if not token or token ~= ARGV[1] then return -1 end
local version = tonumber(redis.call('HGET', KEYS[1], 'version'))
if redis.call('HGET', KEYS[1], 'view') ~= ARGV[2] then
  version = version + 1
  redis.call('HSET', KEYS[1], 'version', version, 'view', ARGV[2])
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return version
"""


class RedisStore:
    """Rooms as Redis hashes `who-waits:room:CODE` that expire on their own."""

    PREFIX = "who-waits:room:"

    def __init__(self, url: str, ttl_s: float = TTL_S):
        import redis  # only where configured

        self.ttl_s = int(ttl_s)
        self.client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=2.0)
        self._publish = self.client.register_script(PUBLISH_LUA)

    def create(self, view: dict) -> tuple[str, str]:
        code, token = new_code(), secrets.token_urlsafe(24)
        key = self.PREFIX + code
        with self.client.pipeline() as pipe:
            pipe.hset(key, mapping={"token": _hash(token), "version": 1,
                                    "view": json.dumps(view, sort_keys=True)})
            pipe.expire(key, self.ttl_s)
            pipe.execute()
        return code, token

    def get(self, code: str) -> Room | None:
        found = self.client.hmget(self.PREFIX + code, "version", "view")
        return None if found[0] is None else Room(code, int(found[0]), json.loads(found[1]))

    def publish(self, code: str, token: str, view: dict) -> Room | None:
        version = self._publish(keys=[self.PREFIX + code],
                                args=[_hash(token), json.dumps(view, sort_keys=True), self.ttl_s])
        return None if int(version) < 0 else Room(code, int(version), view)


def open_store(url: str | None = None) -> RoomStore:
    """The store `url` names (default: $WHO_WAITS_ROOM_URL, else a SQLite file in the temp folder)."""
    url = url if url is not None else os.environ.get(ENV, "")
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(url)
    if url.startswith("sqlite:///"):
        return SqliteStore(url.removeprefix("sqlite:///") or ":memory:")
    if url:
        raise ValueError(f"{ENV}={url!r}: expected redis://HOST:PORT/DB or sqlite:///PATH")
    return SqliteStore(Path(tempfile.gettempdir()) / "who-waits-rooms.sqlite3")
