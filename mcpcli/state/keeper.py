"""A flow's session on disk: saved with its first round, driven by one flow at a time, secrets sealed.

``Flow`` runs the protocol; ``Keeper`` makes it durable. It owns

- the session record, written together with the first round;
- the lease: a new session is created holding it, ``resume`` claims it
  (``--steal`` takes it from a holder that is gone), a heartbeat task keeps
  it while a person answers or a request is in flight — no transaction is
  ever held across either — and every write checks it, so a driver that lost
  the lease cannot commit, nor report success. Each keeper is its own lease
  owner (host, pid and a random token): two flows of one process are two drivers;
- sealing secret answers before they are stored, and opening them for a retry;
- the flow's trace: the lines its tracer kept since the last write go into the store with the next write,
  in the same transaction (no extra commit per message);
- the test-only fault points (``after_send|before_commit|after_commit[:N]``, set from ``MCPCLI_FAULT`` by the
  runtime) that kill the process where a crash would hurt most.

Built for many flows in one process (a warm worker): every store call runs in a worker thread
(``offload``), so a slow disk or a remote database stalls only the flow that waits for it; the heartbeat
is a task in the keeper's own task group (``running()``), not a thread; nothing here reads the environment or
changes process-wide state — the lease length and the fault points come from the constructor
(``runtime.ProcessSettings`` reads them once).
"""

from __future__ import annotations

import logging
import math
import os
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import anyio
from anyio.abc import TaskGroup

from mcpcli.platform import kill_signal, process_state, signals
from mcpcli.state import offload

if TYPE_CHECKING:
    from mcpcli.state.store import Lease, RoundRecord, SessionRecord, Store

log = logging.getLogger(__name__)

T = TypeVar("T")
FaultPoint = Literal["after_send", "before_commit", "after_commit", "before_claim", "after_claim", "after_result"]
LEASE_TTL = 30.0
"""Seconds a lease lasts without a heartbeat; the heartbeat renews it every third of that."""
_ADOPT_TRIES = 8
WAIT_DEFAULT = 60.0
"""Seconds a bare ``resume --wait`` waits for another driver to give the session up."""
WAIT_POLL = 0.2
"""Seconds between claims while waiting: a gone holder's session is taken within this of its lock going."""


class Finished(Exception):
    """The session was finished by another driver after this process read it: nothing is sent, the stored result
    stands (``session.result``, ``session.exit_code``)."""

    def __init__(self, session: SessionRecord) -> None:
        super().__init__(f"session {session.id} finished meanwhile")
        self.session = session


class TraceBuffer(Protocol):
    """What the keeper needs of a tracer (``trace.Tracer``): the lines kept since the last write."""

    def drain(self, *, everything: bool = True) -> list[str]: ...


@dataclass
class Keeper:
    """The durable side of one flow.

    Use it inside ``async with keeper.running():`` — from before the session is adopted (or the first round is
    saved) until after the connection closed: the lease's heartbeat runs there, and the lease is given back on
    the way out, however the run ends.
    """

    open_store: Callable[[], Store]
    """Opens the store when first needed (in a worker thread): a call that never needs input never touches it."""
    store_key: Callable[[], bytes | None] = lambda: None
    """The key that seals secret answers (loaded only when a secret is stored or read back, in a worker thread)."""
    lease_ttl: float = LEASE_TTL
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    owner: str = ""
    """This flow as a lease owner (``new_lease_owner``: host, pid and a random token), made at construction:
    a second flow of the same process is another driver, refused while this one holds the session."""
    faults: str | None = None
    """Test-only: ``POINT`` or ``POINT:N`` kills this process at the Nth time it passes POINT."""
    tracer: TraceBuffer | None = None
    """The flow's trace lines, written with each durable write (``sessions show --trace``)."""
    inline: bool = False
    """Store calls on the event loop's own thread, for a process that runs this one flow and no UI (the CLI): no
    other flow waits on the loop, so a thread buys nothing, and its hop costs each round ~0.1-0.3 ms. Off (the
    engine's way): every store call in a thread (``offload``), so a slow store stalls only the flow that waits."""
    last_index: int = 0
    """The index of the session's newest round (0 before the first): the flow numbers its round events by it."""
    session: SessionRecord | None = None
    adopting: str | None = None
    """The id of the stored session this flow set out to drive (``adopt``), from before its claim: a stop before
    the claim is told truly ("left as it was"), never "nothing was saved"."""
    saved: bool = False
    lease: Lease | None = None
    _store: Store | None = None
    _key: bytes | None = None
    _key_loaded: bool = False
    _passes: dict[str, int] = field(default_factory=dict)
    _tasks: TaskGroup | None = None
    """The task group of ``running()``: where the heartbeat runs."""
    _beat: anyio.CancelScope | None = None
    """The running heartbeat's scope (cancelled when the lease is given back)."""
    _lost: Exception | None = None
    """``LeaseLost``, once the heartbeat found the session taken over: ``check`` raises it before the next send."""
    _writing: anyio.Lock = field(default_factory=lambda: anyio.Lock(fast_acquire=True))
    """One write of this flow at a time: a back-channel question answered mid-call writes beside the loop."""

    def __post_init__(self) -> None:
        if not self.owner:
            from mcpcli.state.store import new_lease_owner

            self.owner = new_lease_owner(self.host, self.pid)

    @property
    def store(self) -> Store:
        """The store, opened on first use — in the thread of the call that needs it (``_read``): opening may block."""
        if self._store is None:
            self._store = self.open_store()
        return self._store

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Keeper]:
        """The scope a flow's lease lives in: its heartbeat runs here, and the lease is given back on the way out.

        What the body raises comes out as it was raised — not wrapped in the task group's exception group — since
        the heartbeat never fails (a missed beat is logged; a lost lease is noted for ``check``).
        """
        assert self._tasks is None, "a keeper runs once at a time"
        failure: BaseException | None = None
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield self
            except BaseException as exc:  # re-raised below, after the heartbeat stopped and the lease went back
                failure = exc
            finally:
                await self.close()
                self._tasks = None
                tasks.cancel_scope.cancel()
        if failure is not None:
            raise failure

    async def _read(self, work: Callable[[Store], T]) -> T:
        """A store call in a thread (``offload``): the event loop (and every other flow on it) goes on meanwhile —
        or, ``inline``, right here."""
        if self.inline:
            return work(self.store)
        return await offload.run_sync(lambda: work(self.store))

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """This flow's turn to write, shielded from cancellation: a write the flow has reached lands even while a
        Ctrl-C or a closing task group takes the run down — as a blocking write always did — so a result that
        arrived is recorded, never sent again by a later resume."""
        with anyio.CancelScope(shield=True):
            async with self._writing:
                yield

    # --- the session and its lease ----------------------------------------------------------------------------------

    async def adopt(
        self,
        session: SessionRecord,
        *,
        steal: bool = False,
        wait: float = 0.0,
        note: Callable[[str], None] | None = None,
    ) -> SessionRecord:
        """Drive a stored session: claim its lease, conditional on the session still being as it was read.

        ``SessionBusy`` when another live driver holds it — another process, or another flow of this one;
        ``Finished`` when another driver finished it after it was read (its stored result is the answer). A holder
        on this host whose process is gone (killed, crashed) is taken over without ``--steal``. Returns the
        session as claimed: what to send is decided from it, never from an older read, so a process that read the
        session before another one claimed and finished it sends nothing.
        """
        from mcpcli.state.store import SessionBusy, SessionChanged

        self._need_tasks()
        self.adopting = session.id
        self.fault("before_claim")
        await anyio.lowlevel.checkpoint()  # a stop that came meanwhile lands here, before anything is claimed

        def claim(seen: SessionRecord, take: bool) -> Callable[[Store], Lease]:
            return lambda store: store.claim(
                seen.id, host=self.host, pid=self.pid, owner=self.owner, ttl=self.lease_ttl, steal=take, seen=seen
            )

        seen, take = session, steal
        until = anyio.current_time() + wait
        changes, said = 0, False
        while changes < _ADOPT_TRIES:
            if seen is not session and seen.status == "done" and seen.result is not None:
                raise Finished(seen)
            try:
                async with self._turn():
                    lease = self.lease = await self._read(claim(seen, take))
            except SessionChanged as changed:
                seen, changes = changed.session, changes + 1
                continue
            except SessionBusy as busy:
                gone = (
                    not take
                    and busy.host == self.host
                    and busy.pid != self.pid
                    and not alive(busy.pid, since=busy.since)
                )
                if gone:  # on this host, its process is gone (killed, crashed): no need to wait out its lease
                    if note is not None:
                        note(f"The previous driver of this session (pid {busy.pid}) is gone; taking over.")
                    take = True
                    continue
                if busy.host == self.host and busy.holder != "alive":  # a live process here, or this very one
                    busy = busy.with_holder("alive")
                left = until - anyio.current_time()
                if left <= 0:
                    raise busy from None
                if note is not None and not said:
                    note(f"{busy.message} Waiting up to {math.ceil(left)} s for it.")
                    said = True
                await anyio.sleep(min(WAIT_POLL, left))  # nothing is claimed meanwhile: a Ctrl-C here leaves nothing
                seen, changes = await self._read(lambda store: store.get(session.id)), 0
                continue
            break
        else:
            from mcpcli.errors import StoreError

            raise StoreError(f"Session {session.id} kept changing while this process claimed it.", hint="Try again.")
        from mcpcli.state.store.base import lease_columns

        self.session = seen.model_copy(update=lease_columns(lease))
        self.saved = True
        self.last_index = seen.round
        self._start_heartbeat()
        self.fault("after_claim")
        return self.session

    def begin(self, session: SessionRecord) -> None:
        """A new session, not saved yet: it is written with its first round, holding the lease."""
        self.session, self.saved = session, False

    def check(self) -> None:
        """Stop before sending when another driver took the session over (the heartbeat noticed)."""
        if self._lost is not None:
            raise self._lost

    async def close(self) -> None:
        """Stop the heartbeat and give the lease back (if the last write has not already); shielded, so it also
        runs while the flow is being cancelled. ``running()`` calls it on the way out; calling it again is
        harmless."""
        self._stop_heartbeat()
        lease, self.lease = self.lease, None
        if lease is not None and self._store is not None:
            with anyio.CancelScope(shield=True):
                try:
                    await self._read(lambda s: s.release(lease))
                except Exception:  # boundary: a release that fails leaves a lease that simply expires
                    log.warning("could not release the lease of %s", lease.session_id, exc_info=True)

    def give_back(self) -> None:
        """Synchronously, for whoever handles a stop once the event loop is gone: a lease still held — the async
        cleanup was cut short — goes back now, with a saved session put back to waiting in the same write (under
        the lease: never another driver's). Harmless when ``close`` already gave it back, as it normally has."""
        self._stop_heartbeat()
        lease, self.lease = self.lease, None
        if lease is None or self._store is None:
            return
        try:
            if self.saved:
                self._store.update(lease.session_id, status="waiting", lease=lease, release=True)
            else:
                self._store.release(lease)
        except Exception:  # boundary: lost meanwhile, or the store failed: the lease simply expires
            log.warning("could not give back the lease of %s", lease.session_id, exc_info=True)

    def _need_tasks(self) -> None:
        # Checked before a lease is taken, so a misuse never leaves a claimed lease without its heartbeat.
        if self._tasks is None:
            raise RuntimeError("take a lease inside `async with keeper.running()`: its heartbeat runs there")

    def _stop_heartbeat(self) -> None:
        if self._beat is not None:
            self._beat.cancel()
            self._beat = None

    def _start_heartbeat(self) -> None:
        if self.lease is not None and self._beat is None and self._tasks is not None:
            self._beat = anyio.CancelScope()
            self._tasks.start_soon(self._heartbeat, self._beat, name=f"lease heartbeat {self.lease.session_id}")

    async def _heartbeat(self, scope: anyio.CancelScope) -> None:
        """Renew the lease every third of its length while the flow waits on a person or the network; note when it
        was lost. Never raises: a missed beat is retried (the lease outlives two of them)."""
        from mcpcli.state.store import LeaseLost

        def renew(lease: Lease) -> Callable[[Store], Lease]:
            return lambda store: store.heartbeat(lease, self.lease_ttl)

        with scope:
            while True:
                await anyio.sleep(self.lease_ttl / 3)
                lease = self.lease
                if lease is None:
                    return
                try:
                    renewed = await self._read(renew(lease))
                except LeaseLost as exc:
                    self._lost = exc
                    return
                except Exception:  # boundary: the store failed once; the next beat tries again
                    log.warning("lease heartbeat failed", exc_info=True)
                    continue
                if self.lease is lease:  # not given back (nor replaced) while the beat was in flight
                    self.lease = renewed

    # --- rounds -----------------------------------------------------------------------------------------------------

    async def record_round(
        self, requests: dict[str, Any], state: str | None, attempt: int, answers: dict[str, Any] | None = None
    ) -> RoundRecord:
        """One durable write: the round as received (and its answers, when known); a new session with it."""
        async with self._turn():
            session = self.session
            assert session is not None
            if answers is not None:
                self.fault("before_commit")
            lease = self.lease
            new_session = None
            if not self.saved:
                self._need_tasks()
                lease = self._first_lease(session.id)
                new_session = session
            # Answered at once (presets, replay): the retry follows this write, and lines still being made (the
            # server's question) go with the next write. A round that waits on a person takes every line.
            trace = self._trace(everything=answers is None)

            def write(store: Store) -> RoundRecord:
                return store.add_round(
                    session.id,
                    attempt=attempt,
                    requests=requests,
                    request_state=state,
                    answers=None if answers is None else self._seal(requests, answers),
                    new_session=new_session,
                    lease=lease,
                    trace=trace,
                )

            record = await self._read(write)
            self.last_index = record.index
            if not self.saved:
                self.saved, self.lease = True, lease
                self._start_heartbeat()
            if answers is not None:
                self.fault("after_commit")
            return record

    def _first_lease(self, session_id: str) -> Lease:
        """The lease a new session is created holding (version 1)."""
        from mcpcli.state.store import Lease, utcnow

        now = utcnow()
        return Lease(
            session_id=session_id,
            version=1,
            host=self.host,
            pid=self.pid,
            owner=self.owner,
            acquired=now,
            expires=now + timedelta(seconds=self.lease_ttl),
        )

    async def save_task(self, task: dict[str, Any], *, status: str | None = None) -> None:
        """The server-side task the call became (``mcpcli.net.tasks.TaskState``), durable before anything else is sent:
        a call that met no input request yet gets its session now, created holding the lease."""
        if self.saved:
            await self.update(task=task, status=status)
            return
        from mcpcli.state.store.base import lease_columns

        async with self._turn():
            session = self.session
            assert session is not None
            self._need_tasks()
            lease = self._first_lease(session.id)
            created = session.model_copy(update=lease_columns(lease) | {"task": task, "status": status or "running"})
            await self._read(lambda store: store.create(created))
            self.session, self.saved, self.lease = created, True, lease
            self._start_heartbeat()

    async def record_answers(self, record: RoundRecord, answers: dict[str, Any], *, partial: bool = False) -> None:
        """Save the answers to a saved round; durable before the retry is sent. ``partial``: what was answered of a
        round that waits for the rest (``Store.record_answers``)."""
        async with self._turn():
            if not partial:
                self.fault("before_commit")
            lease, trace = self.lease, self._trace()
            await self._read(
                lambda store: store.record_answers(
                    record.session_id,
                    record.index,
                    self._seal(record.requests, answers),
                    lease=lease,
                    trace=trace,
                    partial=partial,
                )
            )
            if not partial:
                self.fault("after_commit")

    async def rounds(self) -> list[tuple[RoundRecord, set[str]]]:
        """Every round with its answers opened; with each, the request keys whose secret could not be recovered."""
        assert self.session is not None
        session_id = self.session.id
        return await self._read(lambda store: [self._opened(r) for r in store.rounds(session_id)])

    async def last_round(self) -> tuple[RoundRecord, set[str]] | None:
        """The session's newest round with its sealed answers opened, and the keys whose secret this machine cannot open
        (``lost``: to be asked again); None before the first round."""
        assert self.session is not None
        session_id = self.session.id

        def read(store: Store) -> tuple[RoundRecord, set[str]] | None:
            record = store.last_round(session_id)
            return None if record is None else self._opened(record)

        return await self._read(read)

    async def update(self, *, last: bool = False, **changes: Any) -> None:
        """Change the session under the lease; ``last`` also gives the lease back in the same write."""
        async with self._turn():
            # Only under the lease: once it is given back (the last write) or lost, nothing is written unconditionally.
            session, lease = self.session, self.lease
            if session is None or not self.saved or lease is None:
                return
            trace = self._trace()
            self.session = await self._read(
                lambda store: store.update(session.id, lease=lease, release=last, trace=trace, **changes)
            )
            if last:
                self._stop_heartbeat()
                self.lease = None
                self.fault("after_result")

    async def reopen_round(self, record: RoundRecord) -> None:
        """Forget the answers somebody else gave ``record`` (its owner refused them), under the lease."""
        async with self._turn():
            lease = self.lease
            await self._read(lambda store: store.reopen_round(record.session_id, record.index, lease=lease))

    def _trace(self, *, everything: bool = True) -> list[str]:
        return [] if self.tracer is None else self.tracer.drain(everything=everything)

    # --- secrets (called in the worker thread of the write or read that needs them) -----------------------------------

    def _key_now(self) -> bytes | None:
        if not self._key_loaded:
            self._key, self._key_loaded = self.store_key(), True
        return self._key

    def _seal(self, requests: Mapping[str, Any], answers: dict[str, Any]) -> dict[str, Any]:
        from mcpcli.state.vault import sealed_for

        assert self.session is not None
        return sealed_for(requests, answers, self.session.id, self._key_now)

    def _opened(self, record: RoundRecord) -> tuple[RoundRecord, set[str]]:
        """The round with its sealed answers opened by this machine's store key, and the keys whose secret could not be
        (sealed elsewhere, or the key is gone)."""
        from mcpcli.state.vault import is_marker, open_answers

        if not record.answers or not _has_marker(record.answers, is_marker):
            return record, set()
        opened, lost = open_answers(record.answers, record.session_id, self._key_now())
        return record.model_copy(update={"answers": opened}), lost

    # --- faults -----------------------------------------------------------------------------------------------------

    def fault(self, point: FaultPoint) -> None:
        """Test-only: die here, abruptly, when ``faults`` names this point (and pass) — or, ``stop@POINT``, stop
        here (SIGSTOP) for a test to send a signal at exactly this moment and let the process go on (SIGCONT)."""
        if not self.faults:
            return
        stop = self.faults.startswith("stop@")
        name, _, nth = self.faults.removeprefix("stop@").partition(":")
        if name != point:
            return
        self._passes[point] = seen = self._passes.get(point, 0) + 1
        if seen >= int(nth or 1):
            os.kill(os.getpid(), signals("SIGSTOP")[0] if stop else kill_signal())


def alive(pid: int | None, *, since: datetime | None = None) -> bool:
    """Whether a process of that id runs on this host (when unsure — no permission to look — it counts as alive:
    never take over wrongly). A zombie (killed, not yet reaped by its parent) is gone; with ``since`` (when it
    claimed the lease), so is a process started after that: the pid was reused."""
    if pid is None:
        return False
    found = process_state(pid)
    if found is None:
        return True
    state, at = found
    if state != "running":
        return False
    return since is None or at is None or at <= since.timestamp() + 1.0


def _has_marker(answers: Mapping[str, Any], is_marker: Callable[[Any], bool]) -> bool:
    return any(
        isinstance(a, Mapping) and isinstance(a.get("content"), Mapping) and any(map(is_marker, a["content"].values()))
        for a in answers.values()
    )
