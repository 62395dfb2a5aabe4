"""The session store: every engine passes the tests taking ``engine``; the rest are SQLite's own."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mcpcli.errors import ExitCode, McpcliError, SessionError, StoreError, UsageError
from mcpcli.store import SessionRecord, SqliteStore, Store, new_session_id, open_store
from mcpcli.store.sqlite import list_query

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

WEIRD_STATES = [
    None,
    "",
    "eyJhbGciOiJub25lIn0.eyJzIjoxfQ.",
    '  leading and trailing spaces, "quotes", \\backslashes\\ and\nnew\r\nlines\t ',
    "unicode: ünïcødé — 日本語 — emoji 🧪👩‍🔬 — combining e\u0301 vs é — rtl \u202eabc\u202c — zero\u200bwidth",
    "x" * 100_000,
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


@pytest.fixture(params=["sqlite"])
def engine(request: pytest.FixtureRequest) -> str:
    """Each store engine; PostgreSQL joins this list when it lands."""
    return str(request.param)


@pytest.fixture
def open_again(engine: str, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens the test's store; each call is a new connection, as another mcpcli process would have."""
    url = {"sqlite": f"sqlite:{tmp_path / 'state' / 'sessions.db'}"}[engine]
    opened: list[Store] = []

    def _open() -> Store:
        opened.append(open_store(url, tmp_path / "unused.db"))
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
            plan = " | ".join(row[3] for row in store._conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
            assert "USING INDEX sessions_" in plan, plan
            assert "TEMP B-TREE" not in plan, plan  # the index gives the order too: no sort of 10,000 rows
        key_plan = store._conn.execute("EXPLAIN QUERY PLAN SELECT * FROM sessions WHERE id >= ? AND id < ?", ("a", "b"))
        assert "USING INDEX" in " ".join(row[3] for row in key_plan)  # prefix lookups are a range on the key


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
            name: store._conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys")
        }
        assert pragma == {"journal_mode": "wal", "synchronous": 2, "busy_timeout": 5000, "foreign_keys": 1}
        assert [tuple(row) for row in store._conn.execute("SELECT version FROM schema_version")] == [(1,)]


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


def test_a_store_from_a_newer_mcpcli_is_refused(sqlite_path: Path) -> None:
    SqliteStore(sqlite_path).close()
    with closing(sqlite3.connect(sqlite_path)) as conn, conn:
        conn.execute("UPDATE schema_version SET version = 2")
    with pytest.raises(StoreError, match="newer mcpcli"):
        SqliteStore(sqlite_path)


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
        ("postgresql://db.example/mcpcli", StoreError, "The PostgreSQL store is not available yet."),
        ("mysql://me:secret@x/y", UsageError, "Unsupported store URL 'mysql://…@x/y'."),
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
        from mcpcli.store import SqliteStore
        store = SqliteStore(Path({str(sqlite_path)!r}))
        store.record_answers({session.id!r}, 1, {{"q": {{"action": "accept"}}}})
        os._exit(0)  # no close, no cleanup: as if killed right after
    """)
    assert done.returncode == 0, done.stderr
    with SqliteStore(sqlite_path) as store:
        assert store.rounds(session.id)[0].answers == {"q": {"action": "accept"}}


@pytest.mark.slow
def test_importing_the_store_imports_neither_mcp_nor_textual() -> None:
    done = _run("""
        import sys
        import mcpcli.store
        heavy = sorted({name.split(".")[0] for name in sys.modules} & {"mcp", "mcp_types", "textual", "rich", "httpx"})
        print(heavy)
    """)
    assert done.stdout.strip() == "[]", done.stderr
