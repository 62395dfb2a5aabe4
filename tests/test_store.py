"""The session store: both engines (SQLite, PostgreSQL) pass the tests taking ``engine``; the rest are their own.

The PostgreSQL tests run against a real server started by ``tests/pg.py`` (skipped locally when
PostgreSQL is not installed, never in CI). Lease expiry is tested with a ``Clock`` set on the store,
not with sleeps.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mcpcli.errors import ConfigError, ExitCode, McpcliError, NextStep, SessionError, StoreError, UsageError
from mcpcli.state.store import (
    Lease,
    LeaseLost,
    RoundRecord,
    SessionBusy,
    SessionRecord,
    SqliteStore,
    Store,
    new_session_id,
    open_store,
)
from mcpcli.state.store.sql import SCHEMA_VERSION, list_query
from mcpcli.terminal.hints import worded

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE_COLUMNS = {"version", "lease_host", "lease_pid", "lease_acquired", "lease_expires", "lease_owner", "lease_locked"}

WEIRD_STATES = [
    None,
    "",
    "eyJhbGciOiJub25lIn0.eyJzIjoxfQ.",
    '  leading and trailing spaces, "quotes", \\backslashes\\ and\nnew\r\nlines\t ',
    "unicode: ünïcødé — 日本語 — emoji 🧪👩‍🔬 — combining e\u0301 vs é — rtl \u202eabc\u202c — zero\u200bwidth",
    "x" * 100_000,
    "a NUL \x00 inside",  # PostgreSQL text cannot hold one: its engine keeps request_state as bytea
]


def make_session(**overrides: Any) -> SessionRecord:
    fields: dict[str, Any] = {
        "server": "http://127.0.0.1:8000/mcp",
        "method": "tools/call",
        "name": "book_flight",
        "arguments": {"from": "LHR", "to": "NRT"},
        "protocol_version": "2026-07-28",
        "status": "running",
        "created": T0,
        "updated": T0,
    }
    return SessionRecord(**(fields | overrides))


class Clock:
    """A time that moves only when told, for ``store.clock``: leases expire without sleeping."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def clocked(store: Store, clock: Clock) -> Store:
    store.clock = clock  # type: ignore[attr-defined]  # both engines have it; the protocol does not promise it
    return store


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest) -> str:
    """Each store engine."""
    return str(request.param)


@pytest.fixture
def store_url(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The test's own store: an SQLite file under tmp_path, or a fresh PostgreSQL database."""
    if engine == "postgres":
        return str(request.getfixturevalue("pg_url"))  # only PostgreSQL tests start the server
    return f"sqlite:{tmp_path / 'state' / 'sessions.db'}"


@pytest.fixture
def open_again(store_url: str, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens the test's store; each call is a new connection, as another mcpcli process would have."""
    opened: list[Store] = []

    def _open() -> Store:
        opened.append(open_store(store_url, tmp_path / "unused.db"))
        return opened[-1]

    yield _open
    for store in opened:
        store.close()


@pytest.fixture
def store(open_again: Callable[[], Store]) -> Store:
    return open_again()


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "sessions.db"


# -- create and get ----------------------------------------------------------


def test_new_session_ids_are_12_lowercase_hex_characters() -> None:
    ids = {new_session_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) == 12 and set(i) <= set("0123456789abcdef") for i in ids)
    with pytest.raises(ValidationError):
        make_session(id="ABCDEF123456")
    fresh = SessionRecord(
        server="demo", method="prompts/get", name="p", arguments={}, protocol_version=None, status="done"
    )
    assert fresh.updated == fresh.created and len(fresh.id) == 12


def test_a_created_session_comes_back_unchanged_by_its_exact_id(store: Store) -> None:
    session = make_session(
        arguments={"nested": {"list": [1, 2.5, None, True], "ünï": "日本"}, "z": 1, "a": 2},
        result={"content": [{"type": "text", "text": "ok"}], "isError": False},
        exit_code=0,
    )
    store.create(session)
    found = store.get(session.id)
    assert found == session
    assert list(found.arguments) == ["nested", "z", "a"]  # key order kept, as first sent


def test_times_come_back_in_utc_whatever_zone_they_were_given_in(store: Store) -> None:
    tokyo = T0.astimezone(timezone(timedelta(hours=9)))
    store.create(make_session(id="0123456789ab", created=tokyo, updated=tokyo))
    found = store.get("0123456789ab")
    assert found.created == T0 and found.created.utcoffset() == timedelta(0)
    with pytest.raises(ValidationError):
        make_session(created=datetime(2026, 1, 1))  # naive


def test_creating_the_same_id_twice_is_refused(store: Store) -> None:
    session = make_session()
    store.create(session)
    with pytest.raises(StoreError, match="already exists"):
        store.create(session)


def test_a_unique_prefix_of_four_or_more_characters_finds_the_session(store: Store) -> None:
    store.create(make_session(id="abcdef012345"))
    store.create(make_session(id="abce00000000"))
    assert store.get("abcd").id == "abcdef012345"
    assert store.get("ABCDEF0").id == "abcdef012345"  # typed in capitals, or pasted with spaces
    assert store.get(" abcdef012345 ").id == "abcdef012345"


def test_an_ambiguous_prefix_names_at_most_five_candidates(store: Store) -> None:
    for n in range(7):
        store.create(make_session(id=f"abcd{n:08x}"))
    with pytest.raises(SessionError) as caught:
        store.get("abcd0000")
    message = caught.value.message
    assert "ambiguous" in message and "abcd00000004" in message and "abcd00000005" not in message
    assert message.endswith(", ….")
    assert caught.value.exit_code == ExitCode.SESSION


def test_a_prefix_shorter_than_four_characters_is_a_usage_error(store: Store) -> None:
    store.create(make_session(id="abcdef012345"))
    with pytest.raises(UsageError, match="too short"):
        store.get("abc")


def test_an_unknown_id_is_a_session_error_that_says_how_to_list(store: Store) -> None:
    store.create(make_session(id="abcdef012345"))
    for missing in ("abce", "zzzz", "abcdef0123456", "abcd%", "ab_d"):
        with pytest.raises(SessionError) as caught:
            store.get(missing)
        assert caught.value.message == f"No session matches '{missing}'."
        assert caught.value.hint == "List them with: mcpcli sessions list"
        assert caught.value.exit_code == 6


# -- list --------------------------------------------------------------------


def test_list_is_newest_updated_first_and_filters_by_status_and_server(store: Store) -> None:
    for n, (status, server) in enumerate([("done", "a"), ("waiting", "b"), ("waiting", "a"), ("failed", "b")]):
        when = T0 + timedelta(minutes=n)
        store.create(make_session(id=f"{n:012x}", status=status, server=server, created=T0, updated=when))
    assert [s.id for s in store.list()] == [f"{n:012x}" for n in (3, 2, 1, 0)]
    assert [s.id for s in store.list(status="waiting")] == [f"{n:012x}" for n in (2, 1)]
    assert [s.id for s in store.list(server="b")] == [f"{n:012x}" for n in (3, 1)]
    assert [s.id for s in store.list(status="waiting", server="a")] == [f"{2:012x}"]
    assert [s.id for s in store.list(limit=2)] == [f"{n:012x}" for n in (3, 2)]
    assert store.list(status="expired") == []


def test_list_refuses_an_unknown_status_or_a_negative_limit(store: Store) -> None:
    with pytest.raises(UsageError, match="Unknown session status 'pending'"):
        store.list(status="pending")
    with pytest.raises(UsageError):
        store.list(limit=-1)


# -- rounds ------------------------------------------------------------------


def test_rounds_get_increasing_indexes_across_attempts_and_mark_the_session_waiting(store: Store) -> None:
    session = make_session()
    store.create(session)
    assert store.last_round(session.id) is None
    first = store.add_round(session.id, attempt=1, requests={"seat": {"type": "elicit"}}, request_state="s1")
    second = store.add_round(session.id, attempt=1, requests={}, request_state="s2")  # state-only round
    third = store.add_round(session.id, attempt=2, requests={"seat": {"type": "elicit"}}, request_state=None)
    assert [(r.index, r.attempt) for r in (first, second, third)] == [(1, 1), (2, 1), (3, 2)]
    assert store.rounds(session.id) == [first, second, third]
    assert store.last_round(session.id) == third
    found = store.get(session.id)
    assert (found.round, found.status) == (3, "waiting")
    assert found.updated >= third.received > session.updated


def test_recorded_answers_are_kept_and_mark_the_session_running(store: Store) -> None:
    session = make_session()
    store.create(session)
    round_ = store.add_round(session.id, attempt=1, requests={"seat": {}}, request_state="s1")
    answers = {"seat": {"action": "accept", "content": {"seat": "12A", "note": "fenêtre ☀"}}}
    store.record_answers(session.id, round_.index, answers)
    stored = store.last_round(session.id)
    assert stored is not None and stored.answers == answers
    assert stored.answered is not None and stored.answered >= stored.received
    assert store.get(session.id).status == "running"


def test_a_new_session_its_first_round_and_its_answers_are_one_write(store: Store) -> None:
    session = make_session()
    answers = {"region": {"action": "accept", "content": {"region": "eu-west-1"}}}
    record = store.add_round(
        session.id, attempt=1, requests={"region": {}}, request_state="s1", answers=answers, new_session=session
    )
    assert (record.index, record.answers, record.answered) == (1, answers, record.received)
    assert store.get(session.id).status == "running"
    assert store.rounds(session.id)[0].answers == answers


def test_a_failed_combined_write_leaves_nothing_behind(store: Store) -> None:
    session = make_session()
    store.create(session)
    with pytest.raises(StoreError):  # the session exists already: the round must not be written either
        store.add_round(session.id, attempt=1, requests={}, request_state=None, new_session=session)
    assert store.rounds(session.id) == []


def test_answers_to_a_round_that_does_not_exist_are_refused(store: Store) -> None:
    session = make_session()
    store.create(session)
    with pytest.raises(SessionError, match="has no round 1"):
        store.record_answers(session.id, 1, {})


@pytest.mark.parametrize("request_state", WEIRD_STATES, ids=lambda s: "none" if s is None else f"len{len(s)}")
def test_request_state_round_trips_byte_for_byte(store: Store, request_state: str | None) -> None:
    session = make_session()
    store.create(session)
    store.add_round(session.id, attempt=1, requests={}, request_state=request_state)
    stored = store.last_round(session.id)
    assert stored is not None
    assert stored.request_state == request_state
    assert (stored.request_state or "").encode() == (request_state or "").encode()


def test_every_use_of_an_unknown_session_is_a_session_error(store: Store) -> None:
    for call in (
        lambda: store.add_round("ffffffffffff", attempt=1, requests={}, request_state=None),
        lambda: store.record_answers("ffffffffffff", 1, {}),
        lambda: store.update("ffffffffffff", status="done"),
        lambda: store.rounds("ffffffffffff"),
        lambda: store.last_round("ffffffffffff"),
    ):
        with pytest.raises(SessionError, match="No session matches 'ffffffffffff'"):
            call()


# -- update and delete -------------------------------------------------------


def test_update_changes_only_the_given_fields_and_bumps_updated(store: Store) -> None:
    session, newer = make_session(protocol_version=None), make_session(updated=T0 + timedelta(seconds=1))
    store.create(session)
    store.create(newer)
    result = {"content": [{"type": "text", "text": "booked ✈"}], "structuredContent": {"ref": "X1"}}
    updated = store.update(session.id, status="done", result=result, exit_code=0, protocol_version="2025-06-18")
    expected = {"status": "done", "result": result, "exit_code": 0, "protocol_version": "2025-06-18", "created": T0}
    assert updated.model_dump(include=set(expected)) == expected and updated.error is None
    assert updated.updated > newer.updated and store.get(session.id) == updated
    assert store.list()[0].id == session.id  # a change moves it to the top
    failed = store.update(session.id, status="failed", error="connection refused")
    assert (failed.status, failed.error, failed.result) == ("failed", "connection refused", result)


def test_delete_removes_sessions_with_their_rounds_and_counts_what_existed(store: Store) -> None:
    keep, gone, also_gone = make_session(), make_session(), make_session()
    for session in (keep, gone, also_gone):
        store.create(session)
        store.add_round(session.id, attempt=1, requests={"q": {}}, request_state="s")
    assert store.delete([gone.id, also_gone.id, gone.id, "ffffffffffff"]) == 2
    assert store.delete([]) == 0
    assert [s.id for s in store.list()] == [keep.id]
    assert len(store.rounds(keep.id)) == 1
    with pytest.raises(SessionError):
        store.rounds(gone.id)
    # The rounds are gone too, not just unreachable: a new session with the old id starts afresh.
    store.create(make_session(id=gone.id))
    assert store.rounds(gone.id) == []


def test_a_second_connection_sees_what_the_first_committed(open_again: Callable[[], Store]) -> None:
    writer, reader = open_again(), open_again()
    assert isinstance(writer, Store)
    session = make_session()
    writer.create(session)
    round_ = writer.add_round(session.id, attempt=1, requests={"q": {}}, request_state="s")
    writer.record_answers(session.id, round_.index, {"q": {"action": "accept"}})
    assert reader.get(session.id).status == "running"
    assert reader.rounds(session.id)[0].answers == {"q": {"action": "accept"}}
    reader.update(session.id, status="done", exit_code=0)
    assert writer.get(session.id).status == "done"


def raw_sql(store: Store, sql: str) -> list[dict[str, Any]]:
    """Run SQL (no parameters) on a store's own connection, committed: to set up what the API cannot."""
    conn = store._conn  # type: ignore[attr-defined]
    cursor = conn.execute(sql)
    rows = cursor.fetchall() if cursor.description else []
    if not isinstance(conn, sqlite3.Connection):
        conn.commit()
    return list(rows)


def test_a_store_from_a_newer_mcpcli_is_refused(open_again: Callable[[], Store]) -> None:
    store = open_again()
    raw_sql(store, f"UPDATE schema_version SET version = {SCHEMA_VERSION + 1}")
    store.close()
    with pytest.raises(StoreError) as caught:
        open_again()
    assert caught.value.message.endswith(f"was written by a newer mcpcli (schema {SCHEMA_VERSION + 1}).")
    assert caught.value.hint == "Upgrade mcpcli: pipx upgrade mcpcli"


def test_two_first_opens_at_once_create_the_schema_once(open_again: Callable[[], Store]) -> None:
    umask = os.umask(0o022)
    opened: list[Store] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def race() -> None:
        barrier.wait()
        try:
            opened.append(open_again())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=race) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(opened) == 4
    assert raw_sql(opened[0], "SELECT version FROM schema_version") == [{"version": SCHEMA_VERSION}]
    assert os.umask(umask) == 0o022  # the SQLite engine never touches the process-wide umask


# -- leases ------------------------------------------------------------------


def test_a_claimed_lease_is_heart_beaten_and_released(store: Store) -> None:
    clock = Clock()
    clocked(store, clock)
    session = make_session()
    store.create(session)
    lease = store.claim(session.id, host="host-a", pid=4242, ttl=30)
    assert lease.owner.startswith("host-a:4242:")  # a new driver's own token: claim made one
    assert lease == Lease(
        session_id=session.id,
        version=1,
        host="host-a",
        pid=4242,
        owner=lease.owner,
        acquired=T0,
        expires=T0 + timedelta(seconds=30),
    )
    held = store.get(session.id)
    assert (held.version, held.lease_host, held.lease_pid, held.lease_owner) == (1, "host-a", 4242, lease.owner)
    assert (held.lease_acquired, held.lease_expires) == (T0, T0 + timedelta(seconds=30))
    assert held.updated == session.updated  # claiming is not a change a listing should show

    clock.advance(20)
    beaten = store.heartbeat(lease, 30)
    assert beaten == lease.model_copy(update={"expires": T0 + timedelta(seconds=50)})
    assert store.get(session.id).lease_expires == beaten.expires

    store.release(beaten)
    released = store.get(session.id)
    assert (released.version, released.lease_host, released.lease_pid, released.lease_owner) == (1, None, None, None)
    assert (released.lease_acquired, released.lease_expires) == (None, None)
    assert store.claim(session.id, host="host-b", pid=7, ttl=30).version == 2


def test_a_held_session_is_refused_with_who_holds_it_and_since_when(open_again: Callable[[], Store]) -> None:
    clock = Clock()
    first, second = clocked(open_again(), clock), clocked(open_again(), clock)
    session = make_session()
    first.create(session)
    first.claim(session.id, host="host-a", pid=4242, ttl=30)
    clock.advance(29)
    with pytest.raises(SessionBusy) as caught:
        second.claim(session.id, host="host-b", pid=99, ttl=30)
    busy = caught.value
    assert isinstance(busy, SessionError) and busy.exit_code == ExitCode.SESSION == 6
    assert (busy.host, busy.pid, busy.since) == ("host-a", 4242, T0)
    said = f"Session {session.id} is being driven by pid 4242 on host-a since 2026-01-01 12:00:00 UTC."
    if isinstance(first, SqliteStore):  # only the lease to go by: when it frees, and that a gone holder frees it
        assert busy.holder == "unknown"
        assert (
            busy.message
            == f"{said} Free in 1 s, or at once if that process is gone (this store cannot tell from here)."
        )
    else:  # the holder's connection holds the session's lock: the store can tell it is alive
        assert busy.holder == "alive"
        assert (
            busy.message
            == f"{said} That driver is alive; the session is free as soon as it stops (at once if it dies)."
        )
    assert busy.hint is None and busy.next_step == NextStep("steal", session.id)  # worded by the front end:
    resume = f"mcpcli resume {session.id}"
    assert worded(busy).hint == f"Wait for it: {resume} --wait (or, if that process is gone: {resume} --steal)"
    with pytest.raises(SessionBusy):  # another process on the same host is another driver
        second.claim(session.id, host="host-a", pid=4243, ttl=30)
    assert second.get(session.id).version == 1  # a refused claim changes nothing


def test_a_heart_beaten_lease_stays_held_past_its_first_expiry(open_again: Callable[[], Store]) -> None:
    clock = Clock()
    first, second = clocked(open_again(), clock), clocked(open_again(), clock)
    session = make_session()
    first.create(session)
    lease = first.claim(session.id, host="host-a", pid=1, ttl=30)
    for _ in range(3):
        clock.advance(20)
        lease = first.heartbeat(lease, 30)
    with pytest.raises(SessionBusy):
        second.claim(session.id, host="host-b", pid=2, ttl=30)


def test_an_expired_lease_can_be_claimed_and_its_holder_then_loses_it(open_again: Callable[[], Store]) -> None:
    clock = Clock()
    first, second = clocked(open_again(), clock), clocked(open_again(), clock)
    session = make_session()
    first.create(session)
    stale = first.claim(session.id, host="host-a", pid=1, ttl=30)
    clock.advance(30.001)
    taken = second.claim(session.id, host="host-b", pid=2, ttl=30)
    assert taken.version == stale.version + 1
    with pytest.raises(LeaseLost) as caught:
        first.heartbeat(stale, 30)
    assert caught.value.message == f"Another driver took over session {session.id}; this process stopped."
    assert caught.value.exit_code == 6
    first.release(stale)  # a lost lease releases nothing
    assert second.get(session.id).lease_host == "host-b"


def test_the_holder_may_claim_again_and_that_bumps_the_version(store: Store) -> None:
    session = make_session()
    store.create(session)
    first = store.claim(session.id, host="host-a", pid=1, ttl=30)
    again = store.claim(session.id, host="host-a", pid=1, ttl=30, owner=first.owner)
    assert again.version == first.version + 1
    with pytest.raises(LeaseLost):  # only the newest lease of a session is good
        store.heartbeat(first, 30)


def test_another_owner_in_the_same_process_is_another_driver(store: Store) -> None:
    """Two flows of one process share host and pid, never the owner token: the second is refused, not let in."""
    session = make_session()
    store.create(session)
    first = store.claim(session.id, host="host-a", pid=1, ttl=30, owner="host-a:1:first")
    for owner in ("host-a:1:second", None):
        with pytest.raises(SessionBusy) as caught:
            store.claim(session.id, host="host-a", pid=1, ttl=30, owner=owner)
        assert (caught.value.host, caught.value.pid) == ("host-a", 1)
    forged = first.model_copy(update={"owner": "host-a:1:second"})
    with pytest.raises(LeaseLost):  # a heartbeat is the owner's own, even at the right version
        store.heartbeat(forged, 30)
    assert store.heartbeat(first, 30).owner == "host-a:1:first"


def test_steal_bumps_the_version_so_the_old_holder_writes_nothing(open_again: Callable[[], Store]) -> None:
    old, new = open_again(), open_again()
    session = make_session()
    old.create(session)
    lease = old.claim(session.id, host="host-a", pid=1, ttl=30)
    round_ = old.add_round(session.id, attempt=1, requests={"q": {}}, request_state="s1", lease=lease)
    before, rounds_before = old.get(session.id), old.rounds(session.id)

    stolen = new.claim(session.id, host="host-b", pid=2, ttl=30, steal=True)
    assert stolen.version == lease.version + 1
    for write in (
        lambda: old.add_round(session.id, attempt=1, requests={}, request_state="s2", lease=lease),
        lambda: old.record_answers(session.id, round_.index, {"q": {"action": "accept"}}, lease=lease),
        lambda: old.update(session.id, status="done", result={"content": []}, exit_code=0, lease=lease),
        lambda: old.heartbeat(lease, 30),
    ):
        with pytest.raises(LeaseLost):
            write()
    old.release(lease)
    after = new.get(session.id)
    assert after.model_dump(exclude=LEASE_COLUMNS) == before.model_dump(exclude=LEASE_COLUMNS)
    assert (after.version, after.lease_host) == (stolen.version, "host-b")
    assert new.rounds(session.id) == rounds_before  # no round added, no answer recorded

    new.record_answers(session.id, round_.index, {"q": {"action": "accept"}}, lease=stolen)
    done = new.update(session.id, status="done", exit_code=0, lease=stolen)
    assert (done.status, done.version) == ("done", stolen.version)


def test_steal_also_takes_a_free_session_and_refuses_an_unknown_one(store: Store) -> None:
    session = make_session()
    store.create(session)
    assert store.claim(session.id, host="h", pid=1, ttl=30, steal=True).version == 1
    for call in (
        lambda: store.claim("ffffffffffff", host="h", pid=1, ttl=30),
        lambda: store.claim("ffffffffffff", host="h", pid=1, ttl=30, steal=True),
    ):
        with pytest.raises(SessionError, match="No session matches 'ffffffffffff'"):
            call()


def test_leases_refuse_a_non_positive_ttl_and_a_lease_of_another_session(store: Store) -> None:
    session, other = make_session(), make_session()
    store.create(session)
    store.create(other)
    with pytest.raises(ValueError, match="positive ttl"):
        store.claim(session.id, host="h", pid=1, ttl=0)
    lease = store.claim(session.id, host="h", pid=1, ttl=30)
    with pytest.raises(ValueError, match="positive ttl"):
        store.heartbeat(lease, -1)
    with pytest.raises(ValueError, match="not " + other.id):
        store.update(other.id, status="done", lease=lease)


def test_a_new_session_saved_with_its_first_round_holds_the_given_lease(open_again: Callable[[], Store]) -> None:
    clock = Clock()
    store, rival = clocked(open_again(), clock), clocked(open_again(), clock)
    session = make_session()
    lease = Lease(
        session_id=session.id,
        version=1,
        host="host-a",
        pid=1,
        owner="host-a:1:x",
        acquired=T0,
        expires=T0 + timedelta(minutes=1),
    )
    store.add_round(session.id, attempt=1, requests={"q": {}}, request_state="s", new_session=session, lease=lease)
    held = store.get(session.id)
    assert (held.version, held.lease_host, held.lease_pid, held.lease_expires) == (1, "host-a", 1, lease.expires)
    with pytest.raises(SessionBusy):
        rival.claim(session.id, host="host-b", pid=2, ttl=30)
    store.record_answers(session.id, 1, {"q": {"action": "accept"}}, lease=lease)
    assert store.get(session.id).status == "running"
    with pytest.raises(ValueError):
        store.add_round(
            "ffffffffffff", attempt=1, requests={}, request_state=None, new_session=make_session(), lease=lease
        )


def _race_claims(racers: list[Store], session_id: str) -> tuple[list[Lease], list[SessionBusy]]:
    """Every store claims the session at the same moment, each from its own thread and connection."""
    barrier = threading.Barrier(len(racers))
    won: list[Lease] = []
    busy: list[SessionBusy] = []

    def race(store: Store, pid: int) -> None:
        barrier.wait()
        try:
            won.append(store.claim(session_id, host="racer", pid=pid, ttl=30))
        except SessionBusy as exc:
            busy.append(exc)

    threads = [threading.Thread(target=race, args=(store, pid)) for pid, store in enumerate(racers, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return won, busy


def test_claims_racing_from_separate_connections_have_exactly_one_winner(open_again: Callable[[], Store]) -> None:
    racers = [open_again() for _ in range(6)]
    for _ in range(3):
        session = make_session()
        racers[0].create(session)
        won, busy = _race_claims(racers, session.id)
        assert len(won) == 1 and len(busy) == len(racers) - 1
        assert {exc.pid for exc in busy} == {won[0].pid} and won[0].version == 1
        assert racers[-1].get(session.id).lease_pid == won[0].pid


@pytest.mark.slow
def test_claims_racing_from_separate_processes_have_exactly_one_winner(store_url: str, tmp_path: Path) -> None:
    with closing(open_store(store_url, tmp_path / "unused.db")) as store:  # type: ignore[type-var]
        session = make_session()
        store.create(session)
    go = tmp_path / "go"
    code = textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from mcpcli.state.store import SessionBusy, open_store
        store = open_store({store_url!r}, Path("unused.db"))
        print("ready", flush=True)
        while not Path({str(go)!r}).exists():
            time.sleep(0.001)
        try:
            store.claim({session.id!r}, host="racer", pid=os.getpid(), ttl=30)
            print("won")
        except SessionBusy:
            print("busy")
    """)
    procs = [
        subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parents[1], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()
    outcomes = sorted(proc.communicate(timeout=60)[0].strip() for proc in procs)
    assert outcomes == ["busy", "busy", "busy", "won"]


# -- import and prune ----------------------------------------------------------


def _exported(session_id: str = "0123456789ab") -> tuple[SessionRecord, list[RoundRecord]]:
    session = make_session(
        id=session_id,
        status="waiting",
        round=2,
        version=7,
        lease_host="machine-a",
        lease_pid=4242,
        lease_acquired=T0,
        lease_expires=T0 + timedelta(minutes=1),
        lease_owner="machine-a:4242:0123456789abcdef",
    )
    rounds = [
        RoundRecord(
            session_id=session_id,
            index=1,
            attempt=1,
            requests={"q": {"type": "elicit"}},
            request_state="s1",
            answers={"q": {"action": "accept"}},
            received=T0,
            answered=T0 + timedelta(seconds=5),
        ),
        RoundRecord(session_id=session_id, index=2, attempt=2, requests={"r": {}}, request_state=None, received=T0),
    ]
    return session, rounds


def test_an_imported_session_comes_back_with_its_rounds_unleased(store: Store) -> None:
    session, rounds = _exported()
    store.import_session(session, rounds)
    found = store.get(session.id)
    assert found == session.model_copy(update=dict.fromkeys(LEASE_COLUMNS - {"version", "lease_locked"}))
    assert found.version == 7 and store.rounds(session.id) == rounds
    assert store.claim(session.id, host="machine-b", pid=1, ttl=30).version == 8  # nobody holds it here


def test_importing_an_existing_id_or_a_broken_round_list_changes_nothing(store: Store) -> None:
    session, rounds = _exported()
    store.create(make_session(id=session.id, name="already here"))
    with pytest.raises(StoreError, match=f"A session with id {session.id} already exists."):
        store.import_session(session, rounds)
    assert store.get(session.id).name == "already here" and store.rounds(session.id) == []

    other, other_rounds = _exported("ba9876543210")
    with pytest.raises(StoreError):  # two rounds with one index: the second INSERT fails, the first is undone
        store.import_session(other, [other_rounds[0], other_rounds[0]])
    with pytest.raises(SessionError):
        store.get(other.id)
    with pytest.raises(ValueError, match="rounds of other sessions"):
        store.import_session(other, rounds)


def test_prune_removes_old_sessions_in_the_given_statuses_but_not_leased_ones(open_again: Callable[[], Store]) -> None:
    clock = Clock(T0 + timedelta(days=40))
    store = clocked(open_again(), clock)
    old = T0
    ids: dict[str, str] = {}
    for name, status, updated in [
        ("old_done", "done", old),
        ("old_failed", "failed", old),
        ("old_waiting", "waiting", old),
        ("new_done", "done", T0 + timedelta(days=35)),
        ("old_done_leased", "done", old),
    ]:
        session = make_session(status=status, created=old, updated=updated)
        round_ = RoundRecord(session_id=session.id, index=1, attempt=1, requests={}, request_state="s", received=old)
        store.import_session(session, [round_])  # with a round, and `updated` as given
        ids[name] = session.id
    store.claim(ids["old_done_leased"], host="h", pid=1, ttl=60)
    cutoff = T0 + timedelta(days=10)
    assert store.prune(older_than=cutoff, statuses=[]) == 0
    assert store.prune(older_than=cutoff, statuses=["done", "failed", "done"]) == 2
    assert sorted(s.id for s in store.list()) == sorted(ids[n] for n in ("old_waiting", "new_done", "old_done_leased"))
    with pytest.raises(SessionError):
        store.rounds(ids["old_done"])
    clock.advance(61)  # the lease ran out: its holder is gone
    assert store.prune(older_than=cutoff, statuses=["done"]) == 1
    assert store.prune(older_than=cutoff, statuses=["waiting"]) == 1
    assert [s.id for s in store.list()] == [ids["new_done"]]
    with pytest.raises(UsageError, match="Unknown session status 'old'"):
        store.prune(older_than=cutoff, statuses=["old"])  # type: ignore[list-item]


# -- SQLite only -------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_listing_ten_thousand_sessions_uses_indexes(sqlite_path: Path) -> None:
    with SqliteStore(sqlite_path) as store:
        store.create(make_session(id="000000000000"))
        conn = sqlite3.connect(sqlite_path)  # bulk insert: 10,000 separate durable commits would take seconds
        template = conn.execute("SELECT * FROM sessions").fetchone()
        columns = [d[0] for d in conn.execute("SELECT * FROM sessions").description]
        rows = []
        for n in range(1, 10_000):
            row = dict(zip(columns, template, strict=True))
            when = (T0 + timedelta(seconds=n)).isoformat(timespec="microseconds")
            row |= {"id": f"{n:012x}", "status": ("waiting", "done")[n % 2], "server": f"s{n % 7}", "updated": when}
            rows.append(tuple(row.values()))
        with conn:
            conn.executemany(f"INSERT INTO sessions VALUES ({', '.join('?' * len(columns))})", rows)
        conn.close()

        listed = store.list()
        assert len(listed) == 10_000 and listed[0].id == f"{9999:012x}" and listed[-1].id == "000000000000"
        assert len(store.list(status="waiting")) == 4_999  # the even n; the first one is running
        assert [s.id for s in store.list(server="s3", limit=2)] == [f"{n:012x}" for n in (9999, 9992)]

        for filters in ({}, {"status": "waiting"}, {"server": "s1"}, {"status": "done", "server": "s2", "limit": 50}):
            sql, params = list_query(**filters)  # exactly what list() runs
            plan = " | ".join(row["detail"] for row in store._conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
            assert "USING INDEX sessions_" in plan, plan
            assert "TEMP B-TREE" not in plan, plan  # the index gives the order too: no sort of 10,000 rows
        key_plan = store._conn.execute("EXPLAIN QUERY PLAN SELECT * FROM sessions WHERE id >= ? AND id < ?", ("a", "b"))
        assert "USING INDEX" in " ".join(row["detail"] for row in key_plan)  # prefix lookups are a range on the key


def test_a_new_store_is_a_0600_file_in_a_0700_directory_and_so_are_its_side_files(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state" / "sessions.db"
    umask = os.umask(0o022)
    os.umask(umask)
    with SqliteStore(path) as store:
        store.create(make_session())
        assert _mode(tmp_path / "deep") == 0o700 and _mode(path.parent) == 0o700
        for name in ("sessions.db", "sessions.db-wal", "sessions.db-shm"):
            assert _mode(path.parent / name) == 0o600, name
    assert os.umask(umask) == umask  # put back as it was


@pytest.mark.parametrize("mode", [0o644, 0o660, 0o606])
def test_an_existing_store_file_that_others_can_read_or_write_is_refused(sqlite_path: Path, mode: int) -> None:
    SqliteStore(sqlite_path).close()
    sqlite_path.chmod(mode)
    with pytest.raises(StoreError) as caught:
        SqliteStore(sqlite_path)
    assert f"(mode {mode:04o})" in caught.value.message
    assert caught.value.hint == f"chmod 600 {sqlite_path}"


def test_a_store_directory_that_others_can_read_is_refused(sqlite_path: Path) -> None:
    sqlite_path.parent.mkdir(mode=0o755)
    sqlite_path.parent.chmod(0o755)
    with pytest.raises(StoreError) as caught:
        SqliteStore(sqlite_path)
    assert caught.value.hint == f"chmod 700 {sqlite_path.parent}"
    assert not sqlite_path.exists()


def test_the_connection_is_wal_synchronous_full_with_a_busy_timeout_and_foreign_keys(sqlite_path: Path) -> None:
    with SqliteStore(sqlite_path) as store:
        pragma = {
            name: next(iter(store._conn.execute(f"PRAGMA {name}").fetchone().values()))
            for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys")
        }
        assert pragma == {"journal_mode": "wal", "synchronous": 2, "busy_timeout": 5000, "foreign_keys": 1}
        assert store._conn.execute("SELECT version FROM schema_version").fetchall() == [{"version": SCHEMA_VERSION}]


@pytest.mark.parametrize("content", [b"not a database at all\n" * 50, b"SQLite format 3\x00" + b"\xff" * 4080])
def test_a_file_that_is_not_a_store_is_a_one_line_store_error(sqlite_path: Path, content: bytes) -> None:
    sqlite_path.parent.mkdir(mode=0o700)
    sqlite_path.write_bytes(content)
    sqlite_path.chmod(0o600)
    with pytest.raises(StoreError) as caught:
        SqliteStore(sqlite_path)
    assert "\n" not in caught.value.message and str(sqlite_path) in caught.value.message
    assert caught.value.hint is not None and caught.value.hint.startswith("Move it aside")


def test_an_sqlite_database_of_something_else_is_not_taken_over(sqlite_path: Path) -> None:
    sqlite_path.parent.mkdir(mode=0o700)
    with closing(sqlite3.connect(sqlite_path)) as conn, conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    sqlite_path.chmod(0o600)
    with pytest.raises(StoreError, match="not an mcpcli session store"):
        SqliteStore(sqlite_path)


V1_SCHEMA = (  # schema 1, as mcpcli 0.1 created it
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        server TEXT NOT NULL,
        method TEXT NOT NULL CHECK (method IN ('tools/call', 'prompts/get', 'resources/read')),
        name TEXT NOT NULL,
        arguments TEXT NOT NULL,
        protocol_version TEXT,
        status TEXT NOT NULL CHECK (status IN ('waiting', 'running', 'done', 'failed', 'expired')),
        round INTEGER NOT NULL DEFAULT 0,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        result TEXT,
        exit_code INTEGER,
        error TEXT
    )""",
    "CREATE INDEX sessions_updated ON sessions (updated, id)",
    "CREATE INDEX sessions_status_updated ON sessions (status, updated, id)",
    "CREATE INDEX sessions_server_updated ON sessions (server, updated, id)",
    """CREATE TABLE rounds (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        round_index INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        requests TEXT NOT NULL,
        request_state TEXT,
        answers TEXT,
        received TEXT NOT NULL,
        answered TEXT,
        PRIMARY KEY (session_id, round_index)
    )""",
    "INSERT INTO schema_version (version) VALUES (1)",
    """INSERT INTO sessions VALUES ('0123456789ab', 'demo', 'tools/call', 'provision', '{"name":"orders"}',
        '2026-07-28', 'waiting', 1, '2026-01-01T12:00:00.000000+00:00', '2026-01-01T12:00:05.000000+00:00',
        NULL, NULL, NULL)""",
    """INSERT INTO rounds VALUES ('0123456789ab', 1, 1, '{"q":{}}', 'state-1', NULL,
        '2026-01-01T12:00:05.000000+00:00', NULL)""",
)


def _v1_file(path: Path, *extra: str) -> None:
    path.parent.mkdir(mode=0o700)
    with closing(sqlite3.connect(path)) as conn, conn:
        for statement in (*V1_SCHEMA, *extra):
            conn.execute(statement)
    path.chmod(0o600)


def _columns(path: Path, table: str) -> list[str]:
    with closing(sqlite3.connect(path)) as conn:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def test_a_schema_1_file_is_migrated_to_schema_2_keeping_its_sessions(sqlite_path: Path, tmp_path: Path) -> None:
    _v1_file(sqlite_path)
    with SqliteStore(sqlite_path) as store:
        assert store._conn.execute("SELECT version FROM schema_version").fetchall() == [{"version": SCHEMA_VERSION}]
        session = store.get("0123")
        assert (session.name, session.status, session.updated) == ("provision", "waiting", T0 + timedelta(seconds=5))
        assert (session.version, session.lease_host, session.lease_expires) == (0, None, None)
        assert store.rounds(session.id)[0].request_state == "state-1"
        assert store.claim(session.id, host="h", pid=1, ttl=30).version == 1
    with SqliteStore(tmp_path / "fresh" / "sessions.db") as fresh:
        fresh_path = fresh.path
    assert _columns(sqlite_path, "sessions") == _columns(fresh_path, "sessions")  # as if created at this schema


def test_a_failed_migration_leaves_the_schema_1_file_as_it_was(sqlite_path: Path) -> None:
    # A column that migration 2 adds, already there: its ALTER TABLE fails after the first one succeeded.
    _v1_file(sqlite_path, "ALTER TABLE sessions ADD COLUMN lease_pid INTEGER")
    before = _columns(sqlite_path, "sessions")
    with pytest.raises(StoreError, match="duplicate column name: lease_pid"):
        SqliteStore(sqlite_path)
    assert _columns(sqlite_path, "sessions") == before  # `version` and `lease_host` were rolled back too
    with closing(sqlite3.connect(sqlite_path)) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(1,)]


@pytest.mark.parametrize(
    ("url", "opened"),
    [
        (None, "default"),
        ("", "default"),
        ("sqlite:", "default"),
        ("sqlite:{tmp}/h/s.db", "h"),
        ("sqlite://{tmp}/h/s.db", "h"),
    ],
)
def test_open_store_takes_sqlite_urls_with_an_absolute_path_or_none(
    tmp_path: Path, url: str | None, opened: str
) -> None:
    store = open_store(None if url is None else url.format(tmp=tmp_path), tmp_path / "default" / "s.db")
    assert isinstance(store, SqliteStore) and store.path == tmp_path / opened / "s.db"
    store.close()


@pytest.mark.parametrize(
    ("url", "error", "says"),
    [
        ("mysql://me:secret@x/y", UsageError, "Unsupported store URL 'mysql://me:…@x/y'."),
        ("sqlite:relative.db", UsageError, "Unsupported store URL 'sqlite:relative.db'."),
        ("sqlite://host/s.db", UsageError, "Unsupported store URL 'sqlite://host/s.db'."),
    ],
)
def test_open_store_refuses_other_urls_with_a_hint(tmp_path: Path, url: str, error: type[Exception], says: str) -> None:
    with pytest.raises(error) as caught:
        open_store(url, tmp_path / "s.db")
    assert isinstance(caught.value, McpcliError) and caught.value.message == says and caught.value.hint


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=Path(__file__).parents[1],  # so the child imports this checkout's mcpcli
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.slow
def test_answers_are_durable_when_record_answers_returns_even_if_the_process_dies(sqlite_path: Path) -> None:
    with SqliteStore(sqlite_path) as store:
        session = make_session()
        store.create(session)
        store.add_round(session.id, attempt=1, requests={"q": {}}, request_state="s")
    done = _run(f"""
        import os
        from pathlib import Path
        from mcpcli.state.store import SqliteStore
        store = SqliteStore(Path({str(sqlite_path)!r}))
        store.record_answers({session.id!r}, 1, {{"q": {{"action": "accept"}}}})
        os._exit(0)  # no close, no cleanup: as if killed right after
    """)
    assert done.returncode == 0, done.stderr
    with SqliteStore(sqlite_path) as store:
        assert store.rounds(session.id)[0].answers == {"q": {"action": "accept"}}


@pytest.mark.slow
def test_importing_the_store_imports_neither_mcp_nor_textual_nor_psycopg() -> None:
    done = _run("""
        import sys
        import mcpcli.state.store
        heavy = {"mcp", "mcp_types", "textual", "rich", "httpx", "psycopg"}
        heavy = sorted({name.split(".")[0] for name in sys.modules} & heavy)
        print(heavy)
    """)
    assert done.stdout.strip() == "[]", done.stderr


# -- store URLs and passwords --------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://me:s3cret@db.example/mcpcli",
        "postgres://me:s3cret@db.example:5433/mcpcli?sslmode=require",
        "postgresql://me@db.example/mcpcli?sslmode=require&password=s3cret",
    ],
)
def test_a_config_file_store_url_with_a_password_is_refused(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        open_store(url, tmp_path / "s.db", source="config")
    assert caught.value.message == "The store URL in config.toml contains a password."
    assert caught.value.hint == "Put the password in ~/.pgpass or PGPASSWORD, and remove it from config.toml"
    assert caught.value.exit_code == ExitCode.USAGE
    assert "s3cret" not in f"{caught.value.message} {caught.value.hint}"


def test_a_config_file_store_url_without_a_password_is_fine(tmp_path: Path) -> None:
    with closing(open_store(f"sqlite:{tmp_path}/c/s.db", tmp_path / "s.db", source="config")) as store:  # type: ignore[type-var]
        assert isinstance(store, SqliteStore)


# -- PostgreSQL only -----------------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens there once the socket is closed


@pytest.mark.parametrize("source", ["flag", "env"])
def test_postgresql_connection_refused_is_one_line_without_the_password(
    pg_cluster: Any, tmp_path: Path, source: str
) -> None:
    port = _closed_port()
    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql://me:s3cret@127.0.0.1:{port}/mcpcli", tmp_path / "s.db", source=source)  # type: ignore[arg-type]
    error = caught.value
    assert error.message.startswith(
        f"Cannot reach PostgreSQL for the session store postgresql://me:…@127.0.0.1:{port}/"
    )
    assert "Connection refused" in error.message and "\n" not in error.message
    assert error.hint == "Check the host and port in the store URL (or PGHOST / PGPORT), and that the server is running"
    assert "s3cret" not in f"{error.message} {error.hint}"


def test_a_missing_postgresql_database_is_named_with_a_hint(pg_cluster: Any, tmp_path: Path) -> None:
    with pytest.raises(StoreError) as caught:
        open_store(pg_cluster.url("no_such_db"), tmp_path / "s.db")
    assert "names a database that does not exist" in caught.value.message and "\n" not in caught.value.message
    assert caught.value.hint is not None and caught.value.hint.startswith("Create it (createdb NAME)")


def test_the_postgresql_store_keeps_its_tables_in_their_own_schema(pg_url: str, tmp_path: Path) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:  # an application's own table of the same name
        conn.execute("CREATE TABLE public.sessions (sid text PRIMARY KEY, data text)")
    with closing(open_store(pg_url, tmp_path / "s.db")) as store:  # type: ignore[type-var]
        store.create(make_session())
        assert len(store.list()) == 1
    with psycopg.connect(pg_url, autocommit=True) as conn:
        tables = conn.execute("SELECT schemaname, tablename FROM pg_tables WHERE tablename = 'sessions'").fetchall()
        assert sorted(tables) == [("mcpcli", "sessions"), ("public", "sessions")]
        assert conn.execute("SELECT count(*) FROM public.sessions").fetchone() == (0,)


def test_a_postgresql_schema_holding_something_else_is_not_taken_over(pg_url: str, tmp_path: Path) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA mcpcli")
        conn.execute("CREATE TABLE mcpcli.notes (body text)")
    with pytest.raises(StoreError) as caught:
        open_store(pg_url, tmp_path / "s.db")
    assert "holds tables that are not an mcpcli session store" in caught.value.message


def test_listing_ten_thousand_sessions_on_postgresql_walks_an_index(pg_url: str, tmp_path: Path) -> None:
    with closing(open_store(pg_url, tmp_path / "s.db")) as store:  # type: ignore[type-var]
        store.create(make_session(id="000000000000"))
        raw_sql(
            store,
            """INSERT INTO sessions (id, server, method, name, arguments, protocol_version, status, created, updated)
            SELECT lpad(to_hex(n), 12, '0'), 's' || (n % 7), 'tools/call', 'book_flight', '{"from":"LHR"}',
                '2026-07-28', CASE WHEN n % 2 = 0 THEN 'waiting' ELSE 'done' END,
                timestamptz '2026-01-01 12:00+00', timestamptz '2026-01-01 12:00+00' + n * interval '1 second'
            FROM generate_series(1, 9999) AS n""",
        )
        raw_sql(store, "ANALYZE sessions")

        listed = store.list()
        assert len(listed) == 10_000 and listed[0].id == f"{9999:012x}" and listed[-1].id == "000000000000"
        assert len(store.list(status="waiting")) == 4_999
        assert [s.id for s in store.list(server="s3", limit=2)] == [f"{n:012x}" for n in (9999, 9992)]

        for filters in ({}, {"status": "waiting"}, {"server": "s1"}, {"status": "done", "server": "s2", "limit": 50}):
            sql, params = list_query(**filters)  # exactly what list() runs
            rows = store._conn.execute("EXPLAIN " + sql.replace("?", "%s"), params).fetchall()  # type: ignore[attr-defined]
            plan = " | ".join(row["QUERY PLAN"] for row in rows)
            store._conn.rollback()  # type: ignore[attr-defined]
            assert "Index Scan Backward using sessions_" in plan, plan
            assert "Sort" not in plan, plan  # the index gives the order: no sort of 10,000 rows


def test_the_last_update_can_give_the_lease_back_in_the_same_write(store: Store) -> None:
    session = make_session()
    store.create(session)
    lease = store.claim(session.id, host="h", pid=1, ttl=30)
    done = store.update(session.id, status="done", lease=lease, release=True)
    assert (done.status, done.lease_host, done.lease_pid, done.lease_expires) == ("done", None, None, None)
    assert done.version == lease.version
    assert store.claim(session.id, host="other", pid=2, ttl=30).version == lease.version + 1


def test_a_full_disk_says_to_free_space_and_that_what_was_stored_is_intact(tmp_path: Path) -> None:
    """SQLite's own "database or disk is full" (a page limit stands in for the disk), worded by the store."""
    import sqlite3

    from mcpcli.state.store.sqlite import _store_error

    db = sqlite3.connect(tmp_path / "full.db")
    db.execute("PRAGMA max_page_count = 2")
    with pytest.raises(sqlite3.Error) as full:
        db.execute("CREATE TABLE t (x)")
        db.executemany("INSERT INTO t VALUES (?)", [("x" * 4000,)] * 10)
    error = _store_error(tmp_path / "sessions.db", full.value)
    assert "database or disk is full" in error.message
    assert error.hint is not None and error.hint.startswith("Free some space") and "intact" in error.hint
