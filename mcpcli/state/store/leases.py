"""Leases in SQL, for both store engines: the claim (one compare-and-set on the session's version, backed where
the engine has one by a lock the database ends with its holder's connection), the heartbeat and the release.

``SqlStore`` is built on this; the engine supplies the lock (``_take_lock``/``_drop_lock``: PostgreSQL's advisory
locks; SQLite has none) and the transaction.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
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
        """Take the session's lease for ``owner`` (default: a new one for this host and pid) for ``ttl`` seconds, in
        one compare-and-set: of concurrent claims exactly one wins. The lease is free when unheld, expired, this
        owner's already, or its holder is proven gone (its database lock could be taken); ``steal`` takes it anyway.

        Raises ``SessionBusy`` (held: whether the holder is known alive), ``SessionChanged`` when ``seen`` is no
        longer the stored session (version, status, round), ``not_found`` for no such session, and ``StoreError``
        when the lease kept changing hands over ``_CLAIM_TRIES`` tries. A lock taken for a claim not won is given back.
        """
        length = check_ttl(ttl)
        if seen is not None and seen.id != session_id:
            raise ValueError(f"the session read is {seen.id}, not {session_id}")
        want = _Claim(session_id, host, pid, owner or new_lease_owner(host, pid), steal, seen)
        for _ in range(_CLAIM_TRIES):
            now = self.clock()
            expires = now + length
            version, holder, taken = self._try_claim(want, now, expires)
            if version is not None:
                return Lease(
                    session_id=session_id,
                    version=version,
                    host=host,
                    pid=pid,
                    owner=want.owner,
                    acquired=now,
                    expires=expires,
                )
            if holder is None:
                raise not_found(session_id)
            refused = _refusal(want, self._session_from_row(holder), taken, now)
            if refused is not None:
                raise refused
            # Released or expired between the UPDATE and the SELECT (PostgreSQL reads the latest commit): again.
        raise StoreError(f"Could not claim session {session_id}: its lease kept changing hands.", hint="Try again.")

    def _try_claim(
        self, want: _Claim, now: datetime, expires: datetime
    ) -> tuple[int | None, dict[str, Any] | None, Taken]:
        """One try, in one write transaction: the lock (where the engine has one), then the conditional UPDATE.
        Returns the new version when won; else the row as it stands (None: no such session) to say why not. The
        lock taken for this try is dropped unless the claim was won and committed (refused, or failed)."""
        won: builtins.list[dict[str, Any]] = []
        holder: dict[str, Any] | None = None
        taken, committed = Taken(), False
        try:
            with self._transaction(write=True) as tx:
                # The lock first (where the engine has one): got while a lock-holding lease is on the row, it
                # proves that holder gone — its connection ended — so its lease is free without waiting it out.
                taken = self._take_lock(tx, want.session_id, want.owner)
                # One conditional UPDATE: concurrent claims serialise on the row, and only one finds it free.
                won = tx.all(*self._claim_update(want, now, expires, taken))
                if not won:
                    holder = tx.one(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", [want.session_id])
            committed = True
        finally:
            if taken.new and not (committed and won):  # refused, or failed: the lock goes back with it
                self._drop_lock(want.session_id, want.owner)
        return (won[0]["version"] if won else None), holder, taken

    def _claim_update(
        self, want: _Claim, now: datetime, expires: datetime, taken: Taken
    ) -> tuple[str, builtins.list[Any]]:
        """The claim's UPDATE and its parameters: it sets the lease and bumps the version only where the lease is
        free (unless ``steal``) and the session is still the one ``seen``; it returns the new version."""
        conditions = ""
        params: builtins.list[Any] = [want.host, want.pid, want.owner, self._time(now), self._time(expires)]
        params += [taken.locked, want.session_id]
        if not want.steal:  # free, expired, this owner's already (never merely this host and pid's), or gone
            conditions += " AND (lease_expires IS NULL OR lease_expires < ? OR lease_owner = ?"
            conditions += " OR (lease_locked AND ?))"
            params += [self._time(now), want.owner, taken.proves_gone]
        if want.seen is not None:  # still the session the caller decided from
            conditions += " AND version = ? AND status = ? AND round = ?"
            params += [want.seen.version, want.seen.status, want.seen.round]
        sql = (
            "UPDATE sessions SET version = version + 1, lease_host = ?, lease_pid = ?, lease_owner = ?,"
            f" lease_acquired = ?, lease_expires = ?, lease_locked = ? WHERE id = ?{conditions}"
            " RETURNING version"
        )
        return sql, params

    def heartbeat(self, lease: Lease, ttl: float) -> Lease:
        """Extend the lease to ``ttl`` seconds from now, and take its database lock if it lacks one and the holder
        before let go. Raises ``LeaseLost`` when the session's version or owner moved on (someone claimed it),
        ``not_found`` when it is gone."""
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


@dataclass(frozen=True)
class _Claim:
    """What one ``claim`` asks for, the same on every try."""

    session_id: str
    host: str
    """The claimant's host name."""
    pid: int
    """The claimant's process id."""
    owner: str
    """The lease owner the claim is for (one flow): the lease is already its own when it holds it."""
    steal: bool
    """Take the lease even from a live holder."""
    seen: SessionRecord | None
    """The session as the caller read it: the claim fails (``SessionChanged``) when it is no longer so."""


def _refusal(want: _Claim, held: SessionRecord, taken: Taken, now: datetime) -> SessionChanged | SessionBusy | None:
    """Why a claim that found the session was not won: it changed since ``seen``, or its lease is held and unexpired
    (busy). None when neither: the lease was let go between the UPDATE and the read, and the claim tries again."""
    seen = want.seen
    if seen is not None and (held.version, held.status, held.round) != (seen.version, seen.status, seen.round):
        return SessionChanged(held)
    if (
        not want.steal
        and held.lease_host is not None
        and held.lease_pid is not None
        and held.lease_acquired is not None
        and held.lease_expires is not None
        and held.lease_expires >= now
    ):
        return SessionBusy(
            want.session_id,
            host=held.lease_host,
            pid=held.lease_pid,
            since=held.lease_acquired,
            expires=held.lease_expires,
            # Its lock is held by someone else (or by another flow of this process): it is alive.
            holder="alive" if held.lease_locked and not taken.proves_gone else "unknown",
            now=now,
        )
    return None
