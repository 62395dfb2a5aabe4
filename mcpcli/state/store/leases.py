"""Leases in SQL, for both store engines: the claim (one compare-and-set on the session's version, backed where
the engine has one by a lock the database ends with its holder's connection), the heartbeat and the release.

``SqlStore`` is built on this; the engine supplies the lock (``_take_lock``/``_drop_lock``: PostgreSQL's advisory
locks; SQLite has none) and the transaction.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from mcpcli.errors import StoreError
from mcpcli.state.store.base import Lease, LeaseLost, SessionBusy, SessionChanged, SessionRecord, new_lease_owner
from mcpcli.state.store.rows import Taken, Tx, check_ttl, not_found

_CLAIM_TRIES = 5

SESSION_COLUMNS = ", ".join(SessionRecord.model_fields)  # the columns are named after the fields

RELEASED = (
    "lease_host = NULL, lease_pid = NULL, lease_acquired = NULL, lease_expires = NULL, lease_owner = NULL,"
    " lease_locked = FALSE"
)
"""The assignments that give a lease back (the version stays: it only ever goes up)."""


class SqlLeases:
    """The lease half of ``SqlStore``: what it needs of the store is declared here, and ``SqlStore`` has it."""

    clock: Callable[[], datetime]

    def _transaction(self, *, write: bool) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def _time(self, value: datetime) -> Any:
        raise NotImplementedError

    def _require(self, tx: Tx, session_id: str) -> None:
        raise NotImplementedError

    @staticmethod
    def _session_from_row(row: dict[str, Any]) -> SessionRecord:
        raise NotImplementedError

    def _take_lock(self, tx: Tx, session_id: str, owner: str) -> Taken:
        """Take the session's lock in the database for ``owner``, in ``tx``, if the engine has such locks (one that
        the database gives up by itself when this process's connection ends). SQLite has none."""
        return Taken()

    def _drop_lock(self, session_id: str, owner: str) -> None:
        """Give up the lock ``owner`` took on the session (``_take_lock``); nothing when it holds none."""

    def gone_holders(self, sessions: Sequence[SessionRecord]) -> set[str]:
        """The ids of ``sessions`` whose lease holder the store can tell is gone though its lease has not run out:
        its lock in the database was given up (its connection ended). Empty for an engine without locks."""
        return set()

    def claim(
        self,
        session_id: str,
        *,
        host: str,
        pid: int,
        ttl: float,
        owner: str | None = None,
        steal: bool = False,
        seen: SessionRecord | None = None,
    ) -> Lease:
        length = check_ttl(ttl)
        if seen is not None and seen.id != session_id:
            raise ValueError(f"the session read is {seen.id}, not {session_id}")
        owner = owner or new_lease_owner(host, pid)
        for _ in range(_CLAIM_TRIES):
            now = self.clock()
            expires = now + length
            won: builtins.list[dict[str, Any]] = []
            holder: dict[str, Any] | None = None
            taken, committed = Taken(), False
            try:
                with self._transaction(write=True) as tx:
                    # The lock first (where the engine has one): got while a lock-holding lease is on the row, it
                    # proves that holder gone — its connection ended — so its lease is free without waiting it out.
                    taken = self._take_lock(tx, session_id, owner)
                    conditions = ""
                    params: builtins.list[Any] = [host, pid, owner, self._time(now), self._time(expires)]
                    params += [taken.locked, session_id]
                    if not steal:  # free, expired, this owner's already (never merely this host and pid's), or gone
                        conditions += " AND (lease_expires IS NULL OR lease_expires < ? OR lease_owner = ?"
                        conditions += " OR (lease_locked AND ?))"
                        params += [self._time(now), owner, taken.proves_gone]
                    if seen is not None:  # still the session the caller decided from
                        conditions += " AND version = ? AND status = ? AND round = ?"
                        params += [seen.version, seen.status, seen.round]
                    # One conditional UPDATE: concurrent claims serialise on the row, and only one finds it free.
                    won = tx.all(
                        "UPDATE sessions SET version = version + 1, lease_host = ?, lease_pid = ?, lease_owner = ?,"
                        f" lease_acquired = ?, lease_expires = ?, lease_locked = ? WHERE id = ?{conditions}"
                        " RETURNING version",
                        params,
                    )
                    if not won:
                        holder = tx.one(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", [session_id])
                committed = True
            finally:
                if taken.new and not (committed and won):  # refused, or failed: the lock goes back with it
                    self._drop_lock(session_id, owner)
            if won:
                return Lease(
                    session_id=session_id,
                    version=won[0]["version"],
                    host=host,
                    pid=pid,
                    owner=owner,
                    acquired=now,
                    expires=expires,
                )
            if holder is None:
                raise not_found(session_id)
            held = self._session_from_row(holder)
            if seen is not None and (held.version, held.status, held.round) != (seen.version, seen.status, seen.round):
                raise SessionChanged(held)
            if (
                not steal
                and held.lease_host is not None
                and held.lease_pid is not None
                and held.lease_acquired is not None
                and held.lease_expires is not None
                and held.lease_expires >= now
            ):
                raise SessionBusy(
                    session_id,
                    host=held.lease_host,
                    pid=held.lease_pid,
                    since=held.lease_acquired,
                    expires=held.lease_expires,
                    # Its lock is held by someone else (or by another flow of this process): it is alive.
                    holder="alive" if held.lease_locked and not taken.proves_gone else "unknown",
                    now=now,
                )
            # Released or expired between the UPDATE and the SELECT (PostgreSQL reads the latest commit): again.
        raise StoreError(f"Could not claim session {session_id}: its lease kept changing hands.", hint="Try again.")

    def heartbeat(self, lease: Lease, ttl: float) -> Lease:
        expires = self.clock() + check_ttl(ttl)
        taken, extended = Taken(), 0
        try:
            with self._transaction(write=True) as tx:
                # A lease taken without the lock (stolen, or claimed once expired, from a holder that still had it)
                # gets it once that holder let go: from then on, this driver's death is noticed at once too.
                taken = self._take_lock(tx, lease.session_id, lease.owner)
                extended = tx.run(
                    "UPDATE sessions SET lease_expires = ?, lease_locked = (lease_locked OR ?)"
                    " WHERE id = ? AND version = ? AND lease_owner = ?",
                    (self._time(expires), taken.locked, lease.session_id, lease.version, lease.owner),
                )
                if not extended:
                    self._require(tx, lease.session_id)
                    raise LeaseLost(lease.session_id)
        finally:
            if taken.new and not extended:
                self._drop_lock(lease.session_id, lease.owner)
        return lease.model_copy(update={"expires": expires})

    def release(self, lease: Lease) -> None:
        with self._transaction(write=True) as tx:
            tx.run(f"UPDATE sessions SET {RELEASED} WHERE id = ? AND version = ?", (lease.session_id, lease.version))
        self._drop_lock(lease.session_id, lease.owner)
