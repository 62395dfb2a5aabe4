"""Many flows in one process: each flow its own lease owner, store calls off the event loop,
the lease heartbeat a task — against real parts: the in-process demo server (the SDK's MCPServer), a real SQLite
file and a real PostgreSQL (``pg_url``)."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
import pytest

from mcpcli.engine.answers import Presets
from mcpcli.engine.flow import Flow
from mcpcli.engine.steps import Call, NeedInput, Outcome, Question
from mcpcli.errors import ExitCode, lone
from mcpcli.net.connection import ConnectOptions, connect
from mcpcli.settings.config import Paths
from mcpcli.settings.targets import Target
from mcpcli.state.keeper import Finished, Keeper
from mcpcli.state.store import LeaseLost, SessionBusy, SessionRecord, SqliteStore, Store, open_store
from mcpcli.state.store.sql import SCHEMA_VERSION

DEMO = Target(label="demo", kind="demo")
REGION = "eu-west-1"
SLOW_WRITE = 0.5
"""Seconds each write of the slow store takes on top of its real work (as a round trip to a remote database).
Large enough that the store's latency, not the flows' own CPU (20 in-process servers on a loaded 2-core machine),
is what one flow's time measures."""


class Quiet:
    """A reporter nobody reads."""

    def note(self, text: str) -> None:
        pass

    def detail(self, text: str) -> None:
        pass

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        pass


class SlowStore:
    """The real SQLite store, every write ``delay`` seconds slower: the call does its real work in the real file,
    after a blocking sleep in the calling thread — what a store call costs that goes over a network. Not a mock."""

    WRITES = frozenset({"create", "add_round", "record_answers", "update", "claim", "heartbeat", "release"})

    def __init__(self, inner: Store, delay: float) -> None:
        self.inner = inner
        self.delay = delay
        self.writes = 0

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.inner, name)
        if name not in self.WRITES:
            return real

        def slow(*args: Any, **kwargs: Any) -> Any:
            self.writes += 1
            time.sleep(self.delay)  # blocks the thread it runs in: the event loop, if the flow called it there
            return real(*args, **kwargs)

        return slow


def keeper(store: Any, **settings: Any) -> Keeper:
    return Keeper(open_store=lambda: store, **settings)


def flow_with(k: Keeper, *sources: Any) -> Flow:
    return Flow(keeper=k, server="demo", sources=list(sources), reporter=Quiet())


async def provision(flow: Flow, name: str) -> Outcome:
    """One whole flow as a command runs it: the keeper's scope around the connection, the demo in-process."""
    async with flow.keeper.running():
        try:
            async with connect(ConnectOptions(DEMO, Paths.from_env())) as client:
                flow.client = client
                return await flow.start(Call("tools/call", "provision", {"name": name}))
        except BaseExceptionGroup as group:  # the client's task group wraps what the flow raised, as in commands
            raise lone(group) from None


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = str(request.getfixturevalue("pg_url")) if request.param == "postgres" else None
    opened = open_store(url, tmp_path / "state" / "sessions.db")
    yield opened
    opened.close()


async def waiting_session(store: Store) -> SessionRecord:
    """A flow that met its question with nobody to answer: saved, waiting (exit 3)."""
    with pytest.raises(NeedInput) as need:
        await provision(flow_with(keeper(store)), "orders")
    return store.get(need.value.session.id)


# --- (a) many flows at once ------------------------------------------------------------------------------------------


def test_twenty_flows_on_a_slow_store_finish_in_about_the_time_of_one(tmp_path: Path) -> None:
    slow = SlowStore(SqliteStore(tmp_path / "state" / "sessions.db"), SLOW_WRITE)
    presets = Presets.parse([f"region={REGION}"])
    many = 20

    async def run(names: list[str]) -> tuple[float, list[Outcome]]:
        outcomes: list[Outcome] = []

        async def one(name: str) -> None:
            outcomes.append(await provision(flow_with(keeper(slow), presets), name))

        start = time.perf_counter()
        async with anyio.create_task_group() as tasks:
            for name in names:
                tasks.start_soon(one, name)
        return time.perf_counter() - start, outcomes

    async def main() -> tuple[float, float, list[Outcome], int]:
        await run(["warm-up"])  # the store's schema, the demo's key and the imports: paid once, by neither figure
        writes = slow.writes
        alone, _ = await run(["alone"])
        per_flow = slow.writes - writes
        together, outcomes = await run([f"svc{n}" for n in range(many)])
        return alone, together, outcomes, per_flow

    with closing(slow.inner):
        alone, together, outcomes, per_flow = anyio.run(main)
        stored = [slow.inner.get(o.session.id) for o in outcomes if o.session is not None]
    print(
        f"\none flow: {alone:.3f} s ({per_flow} writes of +{SLOW_WRITE} s); {many} flows at once: {together:.3f} s"
        f" ({together / alone:.2f}x one; {many}x one, as blocking writes would serialise them: {many * alone:.1f} s)"
    )
    assert sorted(o.result["content"][0]["text"] for o in outcomes) == sorted(
        f"Provisioned 'svc{n}' in {REGION}." for n in range(many)
    )
    assert all(o.exit_code == ExitCode.OK and o.session is not None for o in outcomes)
    assert {s.status for s in stored} == {"done"} and all(s.lease_owner is None for s in stored)
    assert per_flow >= 2  # the round with its answers, then the result: each a slow write
    assert together < 3 * alone, (alone, together)


def test_a_flow_alone_in_its_process_writes_on_the_loops_thread_and_the_engines_flows_never_do(tmp_path: Path) -> None:
    import threading

    class Threads(SlowStore):
        """The real store; which thread made each write."""

        def __init__(self, inner: Store) -> None:
            super().__init__(inner, 0.0)
            self.threads: list[int] = []

        def __getattr__(self, name: str) -> Any:
            real = super().__getattr__(name)
            if name not in self.WRITES:
                return real

            def noted(*args: Any, **kwargs: Any) -> Any:
                self.threads.append(threading.get_ident())
                return real(*args, **kwargs)

            return noted

    presets = Presets.parse([f"region={REGION}"])
    with closing(SqliteStore(tmp_path / "state" / "sessions.db")) as real:
        for inline in (True, False):
            store = Threads(real)
            loop_thread = threading.get_ident()
            outcome = anyio.run(provision, flow_with(keeper(store, inline=inline), presets), f"svc-{inline}")
            assert outcome.exit_code == ExitCode.OK
            assert len(store.threads) >= 2  # the round with its answers, the result
            assert all((thread == loop_thread) == inline for thread in store.threads), (inline, store.threads)


# --- (b) one driver per session, also within one process -------------------------------------------------------------


def test_a_second_flow_of_this_process_is_refused_while_the_first_drives_the_session(store: Store) -> None:
    async def main() -> None:
        record = await waiting_session(store)
        first = flow_with(keeper(store), Presets.parse([f"region={REGION}"]))
        second = flow_with(keeper(store))
        assert first.keeper.owner != second.keeper.owner  # same host, same pid: two owners
        async with first.keeper.running():
            await first.adopt(record)
            async with second.keeper.running():
                with pytest.raises(SessionBusy) as busy:
                    await second.adopt(record)
            assert (busy.value.pid, busy.value.exit_code) == (os.getpid(), 6)
            assert store.get(record.id).lease_owner == first.keeper.owner  # the refusal took nothing
            async with connect(ConnectOptions(DEMO, Paths.from_env())) as client:
                first.client = client
                outcome = await first.resume()
            await first.keeper.close()  # as commands do once the connection is closed (running() would, too)
        assert outcome.result["content"][0]["text"] == f"Provisioned 'orders' in {REGION}."
        late = flow_with(keeper(store))
        async with late.keeper.running():
            with pytest.raises(Finished) as finished:  # from its old read: the stored result stands, nothing sent
                await late.adopt(record)
        assert finished.value.session.status == "done"

    anyio.run(main)


def test_a_lease_is_taken_only_inside_the_keepers_scope(store: Store) -> None:
    async def main() -> None:
        record = await waiting_session(store)
        with pytest.raises(RuntimeError, match=r"keeper\.running\(\)"):
            await flow_with(keeper(store)).adopt(record)
        assert store.get(record.id).lease_owner is None  # refused before anything was claimed

    anyio.run(main)


# --- (c) the heartbeat task ------------------------------------------------------------------------------------------


class Thinker:
    """A person at a terminal who takes ``think`` seconds; meanwhile ``meanwhile(question)`` runs (a rival)."""

    interactive = True

    def __init__(self, think: float, meanwhile: Callable[[Question], Any]) -> None:
        self.think = think
        self.meanwhile = meanwhile
        self.seen: list[Any] = []

    async def answer(self, question: Question) -> t.InputResponse | None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._rival, question)
            await anyio.sleep(self.think)
        return t.ElicitResult(action="accept", content={"region": REGION})

    async def _rival(self, question: Question) -> None:
        self.seen.append(await self.meanwhile(question))


def test_the_heartbeat_keeps_the_lease_through_a_long_think_and_notices_a_steal(store: Store) -> None:
    ttl = 0.6

    async def main() -> None:
        async def try_to_drive(question: Question) -> Any:
            await anyio.sleep(2 * ttl)  # past the first expiry: only the heartbeat can have kept the lease
            rival = flow_with(keeper(store, lease_ttl=ttl))
            async with rival.keeper.running():
                try:
                    await rival.adopt(store.get(question.session_id))
                except SessionBusy as busy:
                    return busy
            return None

        kept = Thinker(5 * ttl, try_to_drive)
        outcome = await provision(flow_with(keeper(store, lease_ttl=ttl), kept), "orders")
        assert isinstance(kept.seen[0], SessionBusy), kept.seen
        assert outcome.result["content"][0]["text"] == f"Provisioned 'orders' in {REGION}."

        holder = keeper(store, lease_ttl=ttl)

        async def steal(question: Question) -> Any:
            await anyio.sleep(ttl / 2)
            thief = flow_with(keeper(store, lease_ttl=60))
            async with thief.keeper.running():
                await thief.adopt(store.get(question.session_id), steal=True)
                with anyio.fail_after(10 * ttl):  # the holder's next beats find the lease gone
                    while True:
                        try:
                            holder.check()
                        except LeaseLost as lost:
                            return lost
                        await anyio.sleep(0.02)

        robbed = Thinker(3 * ttl, steal)
        with pytest.raises(LeaseLost):  # nor can the holder commit its answers once the person is done
            await provision(flow_with(holder, robbed), "stolen")
        assert isinstance(robbed.seen[0], LeaseLost)  # noticed by the heartbeat, while the person still thought
        assert holder.session is not None
        session_id = holder.session.id
        session = store.get(session_id)
        assert session.status == "waiting" and session.result is None
        assert [r.answers for r in store.rounds(session_id)] == [None]  # the holder's answers were never written
        assert session.lease_owner is None and session.version == 2  # the thief claimed (2), then gave it back

    anyio.run(main)


# --- (d) schema 4 -> 5 ------------------------------------------------------------------------------------------------

V4_SQLITE = (  # schema 4, as mcpcli created it before lease owners
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE sessions (id TEXT PRIMARY KEY, server TEXT NOT NULL, method TEXT NOT NULL, name TEXT NOT NULL,
        arguments TEXT NOT NULL, protocol_version TEXT, status TEXT NOT NULL, round INTEGER NOT NULL DEFAULT 0,
        created TEXT NOT NULL, updated TEXT NOT NULL, result TEXT, exit_code INTEGER, error TEXT,
        version INTEGER NOT NULL DEFAULT 0, lease_host TEXT, lease_pid INTEGER, lease_acquired TEXT,
        lease_expires TEXT, identity TEXT, connection TEXT)""",
    """CREATE TABLE rounds (session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        round_index INTEGER NOT NULL, attempt INTEGER NOT NULL, requests TEXT NOT NULL, request_state TEXT,
        answers TEXT, received TEXT NOT NULL, answered TEXT, PRIMARY KEY (session_id, round_index))""",
    """CREATE TABLE trace (session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE, seq INTEGER NOT NULL,
        line TEXT NOT NULL, PRIMARY KEY (session_id, seq))""",
    "INSERT INTO schema_version (version) VALUES (4)",
    # One waiting session nobody holds, one held (until 2999) by a driver of an older mcpcli.
    """INSERT INTO sessions VALUES ('0123456789ab', 'demo', 'tools/call', 'provision', '{"name":"orders"}',
        '2026-07-28', 'waiting', 1, '2026-01-01T12:00:00.000000+00:00', '2026-01-01T12:00:05.000000+00:00',
        NULL, NULL, NULL, 3, NULL, NULL, NULL, NULL, NULL, '{"protocol":"auto"}')""",
    """INSERT INTO sessions VALUES ('abcdef012345', 'demo', 'tools/call', 'provision', '{"name":"held"}',
        '2026-07-28', 'running', 1, '2026-01-01T12:00:00.000000+00:00', '2026-01-01T12:00:05.000000+00:00',
        NULL, NULL, NULL, 5, 'old-host', 4242, '2026-01-01T12:00:05.000000+00:00',
        '2999-01-01T00:00:00.000000+00:00', NULL, NULL)""",
    """INSERT INTO rounds VALUES ('0123456789ab', 1, 1, '{"q":{}}', 'state-1', NULL,
        '2026-01-01T12:00:05.000000+00:00', NULL)""",
)


def _v4_store(url: str | None, path: Path) -> None:
    statements = list(V4_SQLITE)
    if url is None:
        path.parent.mkdir(mode=0o700)
        with closing(sqlite3.connect(path)) as conn, conn:
            for statement in statements:
                conn.execute(statement)
        path.chmod(0o600)
        return
    import psycopg

    pg = [s.replace(" TEXT", " text").replace("CREATE TABLE ", "CREATE TABLE mcpcli.") for s in statements]
    pg = [s.replace("REFERENCES sessions", "REFERENCES mcpcli.sessions") for s in pg]
    pg = [s.replace("INSERT INTO ", "INSERT INTO mcpcli.") for s in pg]
    pg = [s.replace("created text", "created timestamptz").replace("updated text", "updated timestamptz") for s in pg]
    for column in ("lease_acquired", "lease_expires", "received", "answered"):
        pg = [s.replace(f"{column} text", f"{column} timestamptz") for s in pg]
    pg = [s.replace("request_state text", "request_state bytea") for s in pg]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA mcpcli")
        for statement in pg:
            conn.execute(statement.replace("'state-1'", "'state-1'::bytea"))


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_schema_4_store_is_migrated_to_the_current_schema_keeping_its_sessions_and_their_holders(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = str(request.getfixturevalue("pg_url")) if engine == "postgres" else None
    path = tmp_path / "state" / "sessions.db"
    _v4_store(url, path)
    with closing(open_store(url, path)) as migrated:
        conn = migrated._conn  # type: ignore[attr-defined]
        assert conn.execute("SELECT version FROM schema_version").fetchone()["version"] == SCHEMA_VERSION >= 5
        waiting, held = migrated.get("0123"), migrated.get("abcd")
        assert (waiting.name, waiting.version, waiting.connection, waiting.lease_owner) == (
            "provision",
            3,
            {"protocol": "auto"},
            None,
        )
        assert migrated.rounds(waiting.id)[0].request_state == "state-1"
        with pytest.raises(SessionBusy) as busy:  # an older mcpcli's live lease (no owner token) still counts
            migrated.claim(held.id, host="old-host", pid=4242, ttl=30)
        assert (busy.value.host, busy.value.pid) == ("old-host", 4242)
        lease = migrated.claim(waiting.id, host="h", pid=1, ttl=30)
        assert migrated.get(waiting.id).lease_owner == lease.owner and lease.version == 4
        # Schema 6: the task a call became; none for the sessions stored before, and writable under the lease.
        assert waiting.task is None
        task = {"id": "t-1", "status": "working", "delivered": []}
        assert migrated.update(waiting.id, task=task, lease=lease).task == task == migrated.get(waiting.id).task
    if url is None:
        with SqliteStore(tmp_path / "fresh" / "sessions.db") as fresh:
            fresh_path = fresh.path
        assert _columns(path) == _columns(fresh_path)  # as if created at the current schema


def _columns(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as conn:
        return [row[1] for row in conn.execute("PRAGMA table_info(sessions)")]


# --- files, whatever the umask ---------------------------------------------------------------------------------------


def test_a_store_made_under_an_open_umask_is_private_and_leaves_the_umask_alone(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state" / "sessions.db"
    umask = os.umask(0)
    try:
        with SqliteStore(path) as store:
            store.check_writable()
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "deep", path.parent)}
            modes |= {p.name: stat.S_IMODE(p.stat().st_mode) for p in path.parent.iterdir()}
        assert os.umask(0) == 0  # nobody changed it meanwhile
    finally:
        os.umask(umask)
    assert modes == {
        "deep": 0o700,
        "state": 0o700,
        "sessions.db": 0o600,
        "sessions.db-wal": 0o600,
        "sessions.db-shm": 0o600,
    }


# --- offload: the threads store calls run in ---------------------------------------------------------------------


def test_offloaded_calls_run_in_one_hot_thread_one_at_a_time_and_side_by_side_when_they_overlap() -> None:
    import threading

    from mcpcli.state import offload

    async def main() -> None:
        names = {await offload.run_sync(lambda: threading.get_ident()) for _ in range(50)}
        assert len(names) == 1  # one caller, one call at a time: the same (hot) thread every time

        inside = peak = 0
        lock = threading.Lock()
        release = threading.Event()

        def slow() -> None:
            nonlocal inside, peak
            with lock:
                inside += 1
                peak = max(peak, inside)
                if inside == 8:
                    release.set()
            release.wait(10)
            with lock:
                inside -= 1

        async with anyio.create_task_group() as tasks:
            for _ in range(8):
                tasks.start_soon(offload.run_sync, slow)
        assert peak == 8  # a blocked call never holds up another

        with pytest.raises(ZeroDivisionError):
            await offload.run_sync(lambda: 1 // 0)

    anyio.run(main)


def test_a_cancelled_caller_waits_for_its_offloaded_call_to_end() -> None:
    import threading

    from mcpcli.state import offload

    ended = threading.Event()

    def write() -> None:
        time.sleep(0.3)
        ended.set()

    async def main() -> None:
        with anyio.move_on_after(0.05):
            await offload.run_sync(write)
        assert ended.is_set()  # the call the caller reached landed before the caller went on

    anyio.run(main)


def test_offload_works_in_a_forked_child_of_a_process_that_used_it() -> None:
    from mcpcli.state import offload

    assert anyio.run(offload.run_sync, lambda: 1) == 1
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports by its exit status
        try:
            os._exit(0 if anyio.run(offload.run_sync, lambda: 2) == 2 else 1)
        finally:
            os._exit(1)
    deadline = time.monotonic() + 10
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    if done[0] == 0:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's offloaded call never ended (a thread of the parent's pool was used)")
    assert os.waitstatus_to_exitcode(done[1]) == 0
