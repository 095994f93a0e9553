"""The room's store (app/room/store.py), the same tests on both backends: SQLite (a file two processes
share) and a real Debian redis-server that the fixture starts on a free port and stops. Without
/usr/bin/redis-server the Redis cases skip, and fail under CI=true (tests/redis_server.py)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from redis_server import redis_url  # noqa: F401 - the fixture

from app.room import store as room_store

VIEW = {"page": "forty_replies", "params": {"step": "4"}}


@pytest.fixture(params=["sqlite", "redis"])
def make_store(request, tmp_path):
    """A factory: each call opens the store anew (as another replica would), on the same file or server."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'rooms.sqlite3'}"
    else:
        url = request.getfixturevalue("redis_url")

    def make(ttl_s: float = room_store.TTL_S):
        opened = room_store.open_store(url)
        opened.ttl_s = int(ttl_s) if request.param == "redis" else ttl_s
        return opened
    return make


def test_a_room_made_on_one_replica_is_read_on_another(make_store):
    code, token = make_store().create(VIEW)
    other = make_store()
    room = other.get(code)
    assert room is not None and room.view == VIEW and room.version == 1
    assert other.get(room_store.new_code()) is None


def test_only_the_presenter_token_moves_the_room_and_each_change_is_a_new_version(make_store):
    presenter, follower = make_store(), make_store()
    code, token = presenter.create(VIEW)
    moved = {"page": "forty_replies", "params": {"step": "5", "mixed": "1"}}
    assert presenter.publish(code, token, moved).version == 2
    assert presenter.publish(code, token, moved).version == 2  # the same view: no new version
    assert follower.get(code).view == moved
    assert follower.publish(code, "not-the-token", VIEW) is None
    assert follower.publish(room_store.new_code(), token, VIEW) is None
    assert follower.get(code).view == moved and follower.get(code).version == 2


def test_a_room_expires(make_store):
    short = make_store(ttl_s=1)
    code, token = short.create(VIEW)
    assert short.get(code) is not None
    time.sleep(1.3)
    assert short.get(code) is None
    assert short.publish(code, token, VIEW) is None


def test_codes_are_random_long_and_read_back_as_typed():
    codes = {room_store.new_code() for _ in range(2000)}
    assert len(codes) == 2000
    assert all(len(c) == room_store.CODE_LEN and set(c) <= set(room_store.ALPHABET) for c in codes)
    assert len(room_store.ALPHABET) ** room_store.CODE_LEN >= 2 ** 50
    code = next(iter(codes))
    assert room_store.clean_code(room_store.shown_code(code).lower()) == code
    assert room_store.clean_code(" " + code[:5] + " " + code[5:]) == code
    assert room_store.clean_code("O" * room_store.CODE_LEN) is None  # a look-alike is not in the alphabet
    assert room_store.clean_code(code[:-1]) is None


def test_a_bad_store_url_is_refused_with_what_is_allowed():
    with pytest.raises(ValueError, match="expected redis://HOST:PORT/DB or sqlite:///PATH"):
        room_store.open_store("postgres://x")


def test_two_processes_publishing_to_one_sqlite_file_lose_no_version(tmp_path):
    """Two replicas on one machine: two processes bump one room in turn, WAL mode, no lost update."""
    path = tmp_path / "rooms.sqlite3"
    code, token = room_store.SqliteStore(path).create({"n": 0})
    script = ("import sys; from app.room.store import SqliteStore; s = SqliteStore(sys.argv[1]); "
              "[s.publish(sys.argv[2], sys.argv[3], {'by': sys.argv[4], 'n': i}) for i in range(50)]")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), code, token, who]) for who in "ab"]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert room_store.SqliteStore(path).get(code).version == 1 + 100
