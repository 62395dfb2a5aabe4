"""A busy worker on PostgreSQL needs no connection per flow: its lock keeper holds every command's session locks on
one connection, a command's own connection is closed while it waits, a killed command's locks go at once, and a
killed keeper's go at once too — the commands still running take theirs back on their own connections."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, wait_until

from mcpcli.state.store import SessionBusy, open_store
from mcpcli.state.store.postgres import PostgresStore, session_lock_key

pytestmark = [pytest.mark.slow, pytest.mark.cold_only]

FLOWS = 12


class Fleet:
    """One worker on a PostgreSQL store, and the test's view of the database."""

    def __init__(self, url: str, home: Path, worker_dir: Path) -> None:
        self.url = url
        self.env = {**os.environ, "MCPCLI_HOME": str(home), "MCPCLI_STORE": url, "MCPCLI_WORKER_DIR": str(worker_dir)}
        self.env.pop("CI", None)
        self.database = url.rsplit("/", 1)[1]
        self.worker_dir = worker_dir

    def spawn(self, *args: str, warm: bool = True) -> subprocess.Popen[str]:
        env = {**self.env, "MCPCLI_WORKER": "1" if warm else "0"}
        return subprocess.Popen(
            [PY, "-m", "mcpcli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
            env=env,
        )

    def run(self, *args: str, warm: bool = True) -> tuple[int, str, str]:
        proc = self.spawn(*args, warm=warm)
        out, err = proc.communicate(timeout=120)
        return proc.returncode, out, err

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def connections(self, besides: int = 0) -> int:
        """mcpcli's connections to the store's database, the test's own (and the backend ``besides``) aside."""
        rows = self.query(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = 'mcpcli'"
            " AND pid <> pg_backend_pid() AND pid <> %s",
            self.database,
            besides,
        )
        return int(rows[0][0])

    def lock_holders(self, session_ids: list[str]) -> list[int]:
        """The backend pid holding each session's lock (0: nobody)."""
        rows = self.query(
            "SELECT classid::bigint, objid::bigint, pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2"
            " AND granted"
        )
        held = {(high, low): pid for high, low, pid in rows}
        return [held.get((high, low & 0xFFFFFFFF), 0) for high, low in map(session_lock_key, session_ids)]


@pytest.fixture
def fleet(pg_url: str, home: Path) -> Iterator[Fleet]:
    worker_dir = Path(tempfile.mkdtemp(prefix="mcpcli-wl-"))
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    fleet = Fleet(pg_url, home, worker_dir)
    code, _, err = fleet.run("worker", "start")
    assert code == 0, err
    yield fleet
    fleet.run("worker", "stop")
    shutil.rmtree(worker_dir, ignore_errors=True)


def _in_flight(fleet: Fleet, http_server: Any, tmp_path: Path) -> tuple[list[str], list[subprocess.Popen[str]]]:
    """``FLOWS`` resumes through the worker at once, each with its answered round at a server that takes 300 s."""
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record), "--slow-once", "300")
    sessions = []
    for n in range(FLOWS):
        code, out, err = fleet.run(
            "call", "two_rounds", "-a", f"item=f{n}", "-s", server.url, "--no-input", "--json", warm=False
        )
        assert code == 3, err
        sessions.append(json.loads(out)["session_id"])
    fronts = [fleet.spawn("resume", session_id, "--answer", "sure=true") for session_id in sessions]

    def asked() -> int:
        lines = record.read_text().splitlines() if record.exists() else []
        return sum(json.loads(line)["state"] == "asked" for line in lines)

    assert wait_until(lambda: asked() == FLOWS, 120), asked()
    return sessions, fronts


def test_many_flows_through_the_worker_hold_their_locks_on_one_connection_and_a_killed_one_is_taken_over_at_once(
    fleet: Fleet, http_server: Any, tmp_path: Path
) -> None:
    sessions, fronts = _in_flight(fleet, http_server, tmp_path)
    with closing(open_store(fleet.url, tmp_path / "unused.db")) as store:
        assert isinstance(store, PostgresStore)
        assert all(store.get(s).lease_locked for s in sessions)
        # Waiting on the server, the commands keep no connection open: the keeper's one holds every lock.
        mine = store._conn.info.backend_pid
        assert wait_until(lambda: fleet.connections(mine) <= 1, 20), fleet.connections(mine)
        holders = fleet.lock_holders(sessions)
        assert len(set(holders)) == 1 and holders[0] != 0, holders
        print(f"{FLOWS} flows in flight through the worker: {fleet.connections(mine)} connection(s) to the store")

        # A command killed with kill -9: its lock goes at once, and another host takes the session over without --steal.
        victim = store.get(sessions[0])
        assert victim.lease_pid is not None
        os.kill(victim.lease_pid, signal.SIGKILL)
        killed = time.monotonic()

        def taken() -> bool:
            try:
                store.claim(sessions[0], host="elsewhere", pid=1, ttl=30)
            except SessionBusy:
                return False
            return True

        assert wait_until(taken, 10)
        print(f"taken over from another host {time.monotonic() - killed:.2f} s after the kill")
        assert fleet.lock_holders(sessions[1:2]) == holders[1:2]  # the others' locks are untouched
    for front in fronts:
        front.kill()
        front.communicate(timeout=30)


def test_a_killed_lock_keeper_frees_its_locks_and_the_live_commands_take_theirs_back_at_once(
    fleet: Fleet, http_server: Any, tmp_path: Path
) -> None:
    sessions, fronts = _in_flight(fleet, http_server, tmp_path)
    assert wait_until(lambda: 0 not in fleet.lock_holders(sessions), 30)
    (keeper,) = set(fleet.lock_holders(sessions))
    said = "".join(log.read_text() for log in fleet.worker_dir.glob("*.log"))
    (pid,) = re.findall(r" locks (\d+): serving", said)
    os.kill(int(pid), signal.SIGKILL)
    # The database ends the keeper's connection, and its locks; each command, alive, takes its own again at once.
    assert wait_until(lambda: keeper not in fleet.lock_holders(sessions) and 0 not in fleet.lock_holders(sessions), 10)
    with closing(open_store(fleet.url, tmp_path / "unused.db")) as store:
        for session_id in sessions:
            with pytest.raises(SessionBusy) as busy:
                store.claim(session_id, host="elsewhere", pid=1, ttl=30)
            assert busy.value.holder == "alive"
    for front in fronts:  # the commands end (hung up): every lock goes with them
        front.kill()
        front.communicate(timeout=30)
    assert wait_until(lambda: set(fleet.lock_holders(sessions)) == {0}, 30)


def test_a_killed_worker_leaves_its_live_commands_their_locks_and_the_keeper_goes_with_the_last(
    fleet: Fleet, http_server: Any, tmp_path: Path
) -> None:
    sessions, fronts = _in_flight(fleet, http_server, tmp_path)
    assert wait_until(lambda: 0 not in fleet.lock_holders(sessions), 30)
    said = "".join(log.read_text() for log in fleet.worker_dir.glob("*.log"))
    (worker,) = set(re.findall(r" worker (\d+): serving /", said))
    (keeper,) = re.findall(r" locks (\d+): serving", said)
    os.kill(int(worker), signal.SIGKILL)
    # The commands it ran are alive and still driving: their locks stay held, and another host finds them busy.
    time.sleep(1.0)
    assert 0 not in fleet.lock_holders(sessions)
    with closing(open_store(fleet.url, tmp_path / "unused.db")) as store:
        with pytest.raises(SessionBusy) as busy:
            store.claim(sessions[0], host="elsewhere", pid=1, ttl=30)
        assert busy.value.holder == "alive"
    for front in fronts:  # the commands end: every lock goes, and the keeper with the last of them
        front.kill()
        front.communicate(timeout=30)
    assert wait_until(lambda: set(fleet.lock_holders(sessions)) == {0}, 30)
    assert wait_until(lambda: not Path(f"/proc/{keeper}").exists() or _zombie(int(keeper)), 30)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_command_that_cannot_reach_the_keeper_holds_its_locks_on_its_own_connection(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcpcli.state.store import SessionRecord

    monkeypatch.setenv("MCPCLI_WORKER_SOCKET", str(tmp_path / "no-worker.sock"))  # a worker's child, its worker gone
    with (
        closing(open_store(pg_url, tmp_path / "unused.db")) as store,
        closing(open_store(pg_url, tmp_path / "x")) as other,
    ):
        assert isinstance(store, PostgresStore)
        session = SessionRecord(
            server="demo", method="tools/call", name="t", arguments={}, protocol_version=None, status="waiting"
        )
        store.create(session)
        lease = store.claim(session.id, host="here", pid=os.getpid(), ttl=30)
        fleet = Fleet(pg_url, tmp_path, tmp_path)
        assert fleet.lock_holders([session.id]) == [store._conn.info.backend_pid]
        time.sleep(1.5)  # past the idle close: a connection holding a lock is kept
        assert not store._conn.closed
        with pytest.raises(SessionBusy) as busy:
            other.claim(session.id, host="elsewhere", pid=1, ttl=30)
        assert busy.value.holder == "alive"
        # Given back, nothing lives on the connection any more: closed when idle, and opened again when needed.
        store.release(lease)
        assert fleet.lock_holders([session.id]) == [0]
        assert wait_until(lambda: store._conn.closed, 10)
        assert store.get(session.id).lease_owner is None
