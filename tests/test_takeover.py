"""A dead driver is noticed at once: on PostgreSQL a lease is backed by a session-level advisory lock on the holder's
connection (the database ends it with the connection), all of one process's flows on that one connection; the claim
stays a compare-and-set on the session's version. The fleet tests (``test_fleet.py``) kill real processes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from mcpcli.state.store import SessionBusy, SessionRecord, open_store
from mcpcli.state.store.postgres import PostgresStore, session_lock_key


def _session() -> SessionRecord:
    return SessionRecord(
        server="demo", method="tools/call", name="t", arguments={}, protocol_version=None, status="waiting"
    )


@pytest.fixture
def pg(pg_url: str, tmp_path: Path) -> Iterator[Any]:
    opened: list[Any] = []

    def connect() -> PostgresStore:
        store = open_store(pg_url, tmp_path / "unused.db")
        assert isinstance(store, PostgresStore)
        opened.append(store)
        return store

    yield connect
    for store in opened:
        store.close()


def _locks(url: str, session_id: str) -> int:
    """How many session locks the database shows granted for the session (any connection)."""
    import psycopg

    high, low = session_lock_key(session_id)
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted"
            " AND classid::bigint = %s AND objid::bigint = %s",
            (high, low & 0xFFFFFFFF),
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_holder_whose_connection_ended_is_taken_over_at_once_from_another_host(pg: Any, pg_url: str) -> None:
    holder, other = pg(), pg()
    session = _session()
    holder.create(session)
    lease = holder.claim(session.id, host="host-a", pid=11, ttl=30)
    assert holder.get(session.id).lease_locked and _locks(pg_url, session.id) == 1
    with pytest.raises(SessionBusy) as busy:  # alive: its connection holds the lock
        other.claim(session.id, host="host-b", pid=22, ttl=30)
    assert busy.value.holder == "alive" and "That driver is alive" in busy.value.message
    assert other.gone_holders([other.get(session.id)]) == set()
    holder.close()  # what a kill -9 does to its socket: the server ends the connection and its locks
    assert _wait_for(lambda: _locks(pg_url, session.id) == 0)
    assert other.gone_holders([other.get(session.id)]) == {session.id}  # interrupted, before anyone resumes it
    taken = other.claim(session.id, host="host-b", pid=22, ttl=30)  # no --steal, no waiting out the lease
    assert taken.version == lease.version + 1
    assert other.get(session.id).lease_host == "host-b" and _locks(pg_url, session.id) == 1
    other.release(taken)
    assert _locks(pg_url, session.id) == 0 and not other.get(session.id).lease_locked


def test_all_flows_of_one_process_share_its_one_connection_and_each_gives_its_lock_back(pg: Any, pg_url: str) -> None:
    store = pg()
    sessions = [_session() for _ in range(40)]
    for session in sessions:
        store.create(session)
    leases = [store.claim(s.id, host="h", pid=1, ttl=30) for s in sessions]  # batch --jobs 40: one connection
    assert all(_locks(pg_url, s.id) == 1 for s in sessions[:3])
    # A second flow of the same process (the lock is re-entrant on one connection) proves nothing: still busy.
    with pytest.raises(SessionBusy) as busy:
        store.claim(sessions[0].id, host="h", pid=1, ttl=30)
    assert busy.value.holder == "alive"
    assert _locks(pg_url, sessions[0].id) == 1  # the refused claim gave its hold back
    stolen = store.claim(sessions[0].id, host="h", pid=1, ttl=30, steal=True)  # --steal, same process
    store.release(leases[0])  # the first flow's late release: not its lease any more, but its lock goes back
    assert _locks(pg_url, sessions[0].id) == 1  # the stealer's is still held
    store.update(sessions[0].id, status="done", lease=stolen, release=True)
    for lease in leases[1:]:
        store.release(lease)
    assert all(_locks(pg_url, s.id) == 0 for s in sessions[:3])
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        mine = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mcpcli'").fetchone()
    assert mine == (1,)


def test_a_new_session_is_created_holding_its_lock(pg: Any, pg_url: str) -> None:
    from mcpcli.state.store import Lease, new_lease_owner, utcnow
    from mcpcli.state.store.base import lease_columns

    store, other = pg(), pg()
    session, now = _session(), utcnow()
    lease = Lease(
        session_id=session.id, version=1, host="h", pid=1, owner=new_lease_owner("h", 1), acquired=now, expires=now
    )
    store.add_round(session.id, attempt=1, requests={}, request_state=None, new_session=session, lease=lease)
    assert store.get(session.id).lease_locked and _locks(pg_url, session.id) == 1
    task = _session().model_copy(update=lease_columns(lease.model_copy(update={"session_id": "-"})))
    store.create(task)  # a task's session, created holding the lease before anything else is sent
    assert store.get(task.id).lease_locked and _locks(pg_url, task.id) == 1
    store.close()
    assert _wait_for(lambda: _locks(pg_url, session.id) == 0)
    assert other.gone_holders([other.get(session.id), other.get(task.id)]) == set()  # expired already: not "gone"


def test_the_connection_keeps_tcp_alive_both_ways(pg: Any) -> None:
    store = pg()
    with closing(store._conn.cursor()) as cur:
        cur.execute("SHOW tcp_keepalives_idle")
        assert cur.fetchone() is not None
    params = store._conn.info.get_parameters()
    assert params.get("keepalives") == "1" and params.get("keepalives_idle") == "5"


def _wait_for(condition: Any, timeout: float = 10.0) -> bool:
    from conftest import wait_until

    return wait_until(condition, timeout, step=0.02)  # takeover times are measured: looked at every 20 ms


# --- interrupted as promised: a driver gone from another host, a zombie, a reused pid --------------------------------


def test_a_driver_gone_from_another_host_shows_as_interrupted_at_once(
    pg: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import run_inprocess

    holder = pg()
    session = _session()
    holder.create(session)
    lease = holder.claim(session.id, host="elsewhere", pid=4242, ttl=30)
    holder.update(session.id, status="running", lease=lease)
    monkeypatch.setenv("MCPCLI_STORE", pg_url)
    assert run_inprocess("sessions", "list", "--json").json()[0]["interrupted"] is False  # alive: its lock is held
    holder.close()  # the driver's host dropped its connection (a kill -9, a crash)
    assert _wait_for(lambda: _locks(pg_url, session.id) == 0)
    listed = run_inprocess("sessions", "list", "--json").json()
    assert [(s["id"], s["status"], s["interrupted"]) for s in listed] == [(session.id, "running", True)]
    inbox = run_inprocess("sessions", "list", "--waiting", "--json").json()
    assert [s["id"] for s in inbox] == [session.id]
    shown = run_inprocess("sessions", "show", session.id, "--json").json()["session"]
    assert shown["interrupted"] is True and shown["lease"]["active"] is False
    assert f"Session {session.id} · interrupted" in run_inprocess("sessions", "show", session.id).out


def test_a_killed_process_not_yet_reaped_or_a_reused_pid_is_not_a_live_driver() -> None:
    import os
    import signal
    import subprocess
    import sys
    from datetime import UTC, datetime, timedelta

    from mcpcli.state.keeper import alive

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert alive(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        assert _wait_for(lambda: not alive(child.pid))  # a zombie until reaped: gone all the same
    finally:
        child.wait()
    assert alive(os.getpid(), since=datetime.now(UTC))
    assert not alive(os.getpid(), since=datetime.now(UTC) - timedelta(days=400))  # this pid's lease predates us


# --- busy that helps: resume --wait ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.cold_only
def test_resume_wait_waits_for_a_live_driver_bounded_and_ctrl_c_clean(
    process: Any, http_server: Any, tmp_path: Path
) -> None:
    import signal
    import subprocess
    import time

    from conftest import PY
    from test_durability import spawn, wait_for_legs
    from test_flows import only_session, store

    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record), "--slow", "20")
    assert process("call", "two_rounds", "-a", "item=x", "-s", server.url).code == 3
    session = only_session()
    holder = spawn("resume", session.id, "--answer", "sure=true")
    wait_for_legs(record, 2)  # its answered retry is at the (slow) server
    busy = process("resume", session.id)
    assert busy.code == 6
    assert f"pid {holder.pid}" in busy.err and "That driver is alive" in busy.err and "--wait" in busy.err
    began = time.monotonic()
    ran_out = process("resume", session.id, "--wait=1")
    assert ran_out.code == 6 and time.monotonic() - began >= 1.0, ran_out.err
    assert "Waiting up to 1 s" in ran_out.err
    said = tmp_path / "waiter.err"
    with said.open("w") as errors:  # a bare --wait: the default (60 s)
        waiter = subprocess.Popen(
            [PY, "-m", "mcpcli", "resume", session.id, "--wait"], stderr=errors, stdout=subprocess.PIPE, text=True
        )
    assert _wait_for(lambda: "Waiting up to 60 s" in said.read_text(), 30), said.read_text()
    waiter.send_signal(signal.SIGINT)
    waiter.communicate(timeout=30)
    err = said.read_text()
    assert waiter.returncode == 130, err
    assert f"Interrupted before anything was sent; session {session.id} is as it was" in err
    assert store().get(session.id).lease_pid == holder.pid  # the holder's lease, untouched
    patient = spawn("resume", session.id, "--wait=60")
    assert holder.wait(timeout=60) == 0
    out, err = patient.communicate(timeout=60)
    assert patient.returncode == 0 and out == "recorded x\n", err  # the holder finished it: its result, again
    assert "finished by another run meanwhile" in err or "already finished" in err
    assert len([leg for leg in (record.read_text().splitlines()) if '"asked"' in leg]) == 1  # sent once


def test_a_lease_taken_without_the_lock_gets_it_at_its_next_heartbeat(pg: Any, pg_url: str) -> None:
    first, second = pg(), pg()
    session = _session()
    first.create(session)
    old = first.claim(session.id, host="a", pid=1, ttl=30)
    stolen = second.claim(session.id, host="b", pid=2, ttl=30, steal=True)  # the old holder still has the lock
    assert not second.get(session.id).lease_locked
    second.heartbeat(stolen, 30)
    assert not second.get(session.id).lease_locked  # still the old holder's
    first.release(old)  # it stops (its late release changes no row, but gives its lock back)
    second.heartbeat(stolen, 30)
    assert second.get(session.id).lease_locked and _locks(pg_url, session.id) == 1
    second.close()  # and now its death is seen at once
    assert _wait_for(lambda: _locks(pg_url, session.id) == 0)
    assert first.claim(session.id, host="a", pid=3, ttl=30).version == stolen.version + 1
