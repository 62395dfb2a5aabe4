"""A flow's session on disk: saved with its first round, driven by one process at a time, secrets sealed.

``Flow`` runs the protocol; ``Keeper`` makes it durable. It owns

- the session record, written together with the first round;
- the lease: a new session is created holding it, ``resume`` claims it
  (``--steal`` takes it from a holder that is gone), a heartbeat thread keeps
  it while a person answers or a request is in flight — no transaction is
  ever held across either — and every write checks it, so a driver that lost
  the lease cannot commit, nor report success;
- sealing secret answers before they are stored, and opening them for a retry;
- the flow's trace: the lines its tracer kept since the last write go into the store with the next write,
  in the same transaction (no extra commit per message);
- the test-only fault points (``after_send|before_commit|after_commit[:N]``, set from ``MCPCLI_FAULT`` by the
  runtime) that kill the process where a crash would hurt most.

Nothing here reads the environment or changes process-wide state: the lease length and the fault points come
from the constructor (``runtime.ProcessSettings`` reads them once), so one process may run many keepers.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from mcpcli.store import Lease, RoundRecord, SessionRecord, Store

log = logging.getLogger(__name__)

FaultPoint = Literal["after_send", "before_commit", "after_commit"]
LEASE_TTL = 30.0
"""Seconds a lease lasts without a heartbeat; the heartbeat renews it every third of that."""
_ADOPT_TRIES = 8


class Finished(Exception):
    """The session was finished by another driver after this process read it: nothing is sent, the stored result
    stands (``session.result``, ``session.exit_code``)."""

    def __init__(self, session: SessionRecord) -> None:
        super().__init__(f"session {session.id} finished meanwhile")
        self.session = session


class TraceBuffer(Protocol):
    """What the keeper needs of a tracer (``trace.Tracer``): the lines kept since the last write."""

    def drain(self) -> list[str]: ...


@dataclass
class Keeper:
    """The durable side of one flow."""

    open_store: Callable[[], Store]
    """Opens the store when first needed: a call that never needs input never touches it."""
    store_key: Callable[[], bytes | None] = lambda: None
    """The key that seals secret answers (loaded only when a secret is stored or read back)."""
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
    last_index: int = 0
    """The index of the session's newest round (0 before the first): the flow numbers its round events by it."""
    session: SessionRecord | None = None
    saved: bool = False
    lease: Lease | None = None
    _store: Store | None = None
    _key: bytes | None = None
    _key_loaded: bool = False
    _passes: dict[str, int] = field(default_factory=dict)
    _beat: _Heartbeat | None = None

    def __post_init__(self) -> None:
        if not self.owner:
            from mcpcli.store import new_lease_owner

            self.owner = new_lease_owner(self.host, self.pid)

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = self.open_store()
        return self._store

    # --- the session and its lease ----------------------------------------------------------------------------------

    def adopt(
        self, session: SessionRecord, *, steal: bool = False, note: Callable[[str], None] | None = None
    ) -> SessionRecord:
        """Drive a stored session: claim its lease, conditional on the session still being as it was read.

        ``SessionBusy`` when another live driver holds it; ``Finished`` when another driver finished it after it
        was read (its stored result is the answer). A holder on this host whose process is gone (killed,
        crashed) is taken over without ``--steal``. Returns the session as claimed: what to send is decided from
        it, never from an older read, so a process that read the session before another one claimed and finished
        it sends nothing.
        """
        from mcpcli.store import SessionBusy, SessionChanged

        seen, take = session, steal
        for _ in range(_ADOPT_TRIES):
            if seen is not session and seen.status == "done" and seen.result is not None:
                raise Finished(seen)
            try:
                self.lease = self.store.claim(
                    seen.id, host=self.host, pid=self.pid, owner=self.owner, ttl=self.lease_ttl, steal=take, seen=seen
                )
            except SessionChanged as changed:
                seen = changed.session
                continue
            except SessionBusy as busy:
                # A holder in this very process is alive (another flow of it): busy, like any other driver.
                if take or busy.host != self.host or busy.pid == self.pid or _alive(busy.pid):
                    raise
                if note is not None:
                    note(f"The previous driver of this session (pid {busy.pid}) is gone; taking over.")
                take = True
                continue
            break
        else:
            from mcpcli.errors import StoreError

            raise StoreError(f"Session {session.id} kept changing while this process claimed it.", hint="Try again.")
        from mcpcli.store.base import lease_columns

        self.session = seen.model_copy(update=lease_columns(self.lease))
        self.saved = True
        self.last_index = seen.round
        self._start_heartbeat()
        return self.session

    def begin(self, session: SessionRecord) -> None:
        """A new session, not saved yet: it is written with its first round, holding the lease."""
        self.session, self.saved = session, False

    def check(self) -> None:
        """Stop before sending when another driver took the session over (the heartbeat noticed)."""
        if self._beat is not None and self._beat.lost is not None:
            raise self._beat.lost

    def close(self) -> None:
        """Stop the heartbeat and give the lease back (if the last write has not already)."""
        self._stop_heartbeat()
        if self.lease is not None and self._store is not None:
            try:
                self._store.release(self.lease)
            except Exception:  # boundary: a release that fails leaves a lease that simply expires
                log.warning("could not release the lease of %s", self.lease.session_id, exc_info=True)
            self.lease = None

    def _stop_heartbeat(self) -> None:
        if self._beat is not None:
            self._beat.stop()
            self._beat = None

    def _start_heartbeat(self) -> None:
        if self.lease is not None and self._beat is None:
            self._beat = _Heartbeat(self, self.lease_ttl / 3)
            self._beat.start()

    # --- rounds -----------------------------------------------------------------------------------------------------

    def record_round(
        self, requests: dict[str, Any], state: str | None, attempt: int, answers: dict[str, Any] | None = None
    ) -> RoundRecord:
        """One durable write: the round as received (and its answers, when known); a new session with it."""
        from mcpcli.store import Lease, utcnow

        assert self.session is not None
        if answers is not None:
            self.fault("before_commit")
        lease = self.lease
        new_session = None
        if not self.saved:
            now = utcnow()
            lease = Lease(
                session_id=self.session.id,
                version=1,
                host=self.host,
                pid=self.pid,
                owner=self.owner,
                acquired=now,
                expires=now + timedelta(seconds=self.lease_ttl),
            )
            new_session = self.session
        record = self.store.add_round(
            self.session.id,
            attempt=attempt,
            requests=requests,
            request_state=state,
            answers=None if answers is None else self._seal(requests, answers),
            new_session=new_session,
            lease=lease,
            trace=self._trace(),
        )
        self.last_index = record.index
        if not self.saved:
            self.saved, self.lease = True, lease
            self._start_heartbeat()
        if answers is not None:
            self.fault("after_commit")
        return record

    def record_answers(self, record: RoundRecord, answers: dict[str, Any]) -> None:
        """Save the answers to a saved round; durable before the retry is sent."""
        self.fault("before_commit")
        sealed = self._seal(record.requests, answers)
        self.store.record_answers(record.session_id, record.index, sealed, lease=self.lease, trace=self._trace())
        self.fault("after_commit")

    def rounds(self) -> list[tuple[RoundRecord, set[str]]]:
        """Every round with its answers opened; with each, the request keys whose secret could not be recovered."""
        assert self.session is not None
        return [self._opened(r) for r in self.store.rounds(self.session.id)]

    def last_round(self) -> tuple[RoundRecord, set[str]] | None:
        assert self.session is not None
        record = self.store.last_round(self.session.id)
        return None if record is None else self._opened(record)

    def update(self, *, last: bool = False, **changes: Any) -> None:
        """Change the session under the lease; ``last`` also gives the lease back in the same write."""
        # Only under the lease: once it is given back (the last write) or lost, nothing is written unconditionally.
        if self.session is not None and self.saved and self.lease is not None:
            self.session = self.store.update(
                self.session.id, lease=self.lease, release=last, trace=self._trace(), **changes
            )
            if last:
                self._stop_heartbeat()
                self.lease = None

    def _trace(self) -> list[str]:
        return [] if self.tracer is None else self.tracer.drain()

    # --- secrets ----------------------------------------------------------------------------------------------------

    def _key_now(self) -> bytes | None:
        if not self._key_loaded:
            self._key, self._key_loaded = self.store_key(), True
        return self._key

    def _seal(self, requests: Mapping[str, Any], answers: dict[str, Any]) -> dict[str, Any]:
        from mcpcli.vault import seal_answers, secret_fields

        secret = secret_fields(requests)
        if not secret:
            return answers
        assert self.session is not None
        return seal_answers(answers, secret, self.session.id, self._key_now())

    def _opened(self, record: RoundRecord) -> tuple[RoundRecord, set[str]]:
        from mcpcli.vault import is_marker, open_answers

        if not record.answers or not _has_marker(record.answers, is_marker):
            return record, set()
        opened, lost = open_answers(record.answers, record.session_id, self._key_now())
        return record.model_copy(update={"answers": opened}), lost

    # --- faults -----------------------------------------------------------------------------------------------------

    def fault(self, point: FaultPoint) -> None:
        """Test-only: die here, abruptly, when ``faults`` names this point (and pass)."""
        if not self.faults:
            return
        name, _, nth = self.faults.partition(":")
        if name != point:
            return
        self._passes[point] = seen = self._passes.get(point, 0) + 1
        if seen >= int(nth or 1):
            os.kill(os.getpid(), signal.SIGKILL)


def _alive(pid: int | None) -> bool:
    """Whether a process of that id exists on this host (a reused pid counts as alive: never steal wrongly)."""
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _has_marker(answers: Mapping[str, Any], is_marker: Callable[[Any], bool]) -> bool:
    return any(
        isinstance(a, Mapping) and isinstance(a.get("content"), Mapping) and any(map(is_marker, a["content"].values()))
        for a in answers.values()
    )


class _Heartbeat(threading.Thread):
    """Renews the lease while the flow waits on a person or the network; notes when it was lost."""

    def __init__(self, keeper: Keeper, interval: float) -> None:
        super().__init__(name="mcpcli-lease-heartbeat", daemon=True)
        self.keeper = keeper
        self.interval = interval
        self.lost: Exception | None = None
        self._stopped = threading.Event()

    def run(self) -> None:
        from mcpcli.store import LeaseLost

        while not self._stopped.wait(self.interval):
            lease = self.keeper.lease
            if lease is None:
                return
            try:
                self.keeper.lease = self.keeper.store.heartbeat(lease, self.keeper.lease_ttl)
            except LeaseLost as exc:
                self.lost = exc
                return
            except Exception:  # boundary: a missed beat is retried; the lease outlives two of them
                log.warning("lease heartbeat failed", exc_info=True)

    def stop(self) -> None:
        self._stopped.set()
        self.join(timeout=5)
