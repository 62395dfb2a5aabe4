"""The SQL every store engine shares: each ``Store`` method, written once, against a tiny dialect.

An engine (``sqlite.py``, ``postgres.py``) subclasses ``SqlStore`` and supplies the connection and
what differs between databases: how a transaction begins (``BEGIN IMMEDIATE`` on SQLite, a
transaction with row locks on PostgreSQL), the placeholder style (statements here use ``?``), how
times and ``request_state`` are stored, its DDL and migrations, and how driver errors become one
line. Everything else — the records ↔ rows mapping, id prefixes, rounds, leases and their version
checks, import and prune — lives here, so both engines behave alike and pass one test suite.

Writes that depend on the session row (a round, answers, an update) first read that row with the
engine's row lock (``FOR UPDATE`` on PostgreSQL; SQLite's write transaction is already exclusive),
so concurrent writers to one session serialise and a lease's version is checked in the same
transaction as the write it guards.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from mcpcli.errors import SessionError, StoreError, UsageError
from mcpcli.state.store.base import (
    MAX_CANDIDATES,
    MIN_PREFIX,
    STATUSES,
    TRACE_MAX_LINES,
    TRACE_TRUNCATED,
    AlreadyAnswered,
    Lease,
    LeaseLost,
    NotWaiting,
    RoundRecord,
    SessionRecord,
    Status,
    lease_columns,
    utcnow,
)
from mcpcli.state.store.leases import RELEASED, SESSION_COLUMNS, SqlLeases
from mcpcli.state.store.rows import Tx, dumps, loads, not_found

SCHEMA_VERSION = 9
"""1: sessions and rounds. 2: the lease columns and ``version``. 3: the ``trace`` table and ``identity``.
4: ``connection`` (how the flow was connected, so a resume reconnects the same way). 5: ``lease_owner`` (each
flow its own lease owner: two flows of one process no longer pass for one driver). 6: ``task`` (the server-side task
a tool call became: id, status, poll position, acknowledged answers). 7: ``lease_locked`` (the holder also holds the
session's lock in the database: gone the moment its connection is). 8: the team inbox — ``owner``, ``routing`` and
``answered_by`` on sessions, ``answered_by`` and ``answered_at`` on rounds. 9: ``trace_context`` (the flow's
OpenTelemetry trace, continued by every resume)."""

_DELETE_CHUNK = 500  # stays under SQLite's limit on bound parameters
_TRACE_CHUNK = 200  # rows per INSERT of trace lines: three parameters each, under SQLite's limit

SESSION_FIELDS = tuple(SessionRecord.model_fields)  # the columns are named after the fields
_SESSION_COLUMNS = SESSION_COLUMNS
_RELEASED = RELEASED
_ROUND_COLUMNS = (
    "session_id, round_index, attempt, requests, request_state, answers, received, answered, answered_by, answered_at"
)
_TIME_FIELDS = frozenset({"created", "updated", "lease_acquired", "lease_expires"})
_JSON_FIELDS = ("arguments", "result", "connection", "task", "routing", "trace_context")
_LEASE_CLEARED = {
    "lease_host": None,
    "lease_pid": None,
    "lease_acquired": None,
    "lease_expires": None,
    "lease_owner": None,
    "lease_locked": False,
}


def list_query(
    *, status: str | None = None, server: str | None = None, limit: int | None = None
) -> tuple[str, builtins.list[Any]]:
    """The SQL (``?`` placeholders) and parameters ``Store.list`` runs — the tests EXPLAIN exactly this.

    Every filter has an index ending in ``(updated, id)``, so the newest-first order comes from
    walking an index backwards, never from sorting the table.
    """
    if status is not None and status not in STATUSES:
        raise UsageError(f"Unknown session status '{status}'.", hint=f"Use one of: {', '.join(STATUSES)}")
    if limit is not None and limit < 0:
        raise UsageError(f"A listing limit cannot be negative ({limit}).")
    filters = {column: value for column, value in (("status", status), ("server", server)) if value is not None}
    sql = f"SELECT {_SESSION_COLUMNS} FROM sessions"
    if filters:
        sql += " WHERE " + " AND ".join(f"{column} = ?" for column in filters)
    sql += " ORDER BY updated DESC, id DESC" + ("" if limit is None else " LIMIT ?")
    params: list[Any] = [*filters.values(), *([] if limit is None else [limit])]
    return sql, params


class SqlStore(SqlLeases):
    """The ``Store`` in SQL; an engine subclass supplies the connection and the dialect hooks below.

    Calls are serialised by a lock, so one store may be shared between threads.
    """

    for_update = ""
    """Appended to a SELECT of the session row that a write depends on: the engine's row lock, if it needs one."""
    schema: Sequence[str] = ()
    """The DDL of a new store at ``SCHEMA_VERSION``."""
    migrations: Mapping[int, Sequence[str]] = {}
    """The DDL that takes a store from version ``n - 1`` to ``n``, by ``n``."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.clock: Callable[[], datetime] = utcnow
        """Where every stored time comes from (the tests set a fixed one to expire leases without sleeping)."""

    # -- the dialect -----------------------------------------------------------

    def _transaction(self, *, write: bool) -> AbstractContextManager[Tx]:
        """One transaction, committed at the end of the block or rolled back on any exception.

        A write transaction must serialise against other writers of the same rows; the engine maps its
        driver's errors to ``StoreError`` and lets ``McpcliError`` through.
        """
        raise NotImplementedError

    def _time(self, value: datetime) -> Any:
        """A time as a query parameter."""
        raise NotImplementedError

    def _state_in(self, request_state: str | None) -> Any:
        """A ``request_state`` as a query parameter."""
        return request_state

    def _state_out(self, stored: Any) -> str | None:
        """A ``request_state`` as read back."""
        return None if stored is None else str(stored)

    def _schema_version(self, tx: Tx) -> int | None:
        """The version in ``schema_version``, or ``None`` when there is no such table yet."""
        raise NotImplementedError

    def _has_other_tables(self, tx: Tx) -> bool:
        """Whether where the store's tables would go already holds tables (then it is not ours to take)."""
        raise NotImplementedError

    def _lock_schema(self, tx: Tx) -> None:
        """Serialise schema creation and migration between processes (beyond what the transaction does)."""

    def _not_a_store(self) -> StoreError:
        raise NotImplementedError

    def _describe(self) -> str:
        """The store as messages name it: a path, or the URL without its password."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- schema ----------------------------------------------------------------

    def _init_schema(self) -> None:
        """Create the tables in an empty store, migrate an older one, refuse a newer one or a stranger's."""
        with self._transaction(write=False) as tx:  # no write lock when the schema is up to date
            version = self._schema_version(tx)
        if version is None or version < SCHEMA_VERSION:
            with self._transaction(write=True) as tx:
                self._lock_schema(tx)
                version = self._schema_version(tx)  # another process may have won the race
                if version is None:
                    if self._has_other_tables(tx):
                        raise self._not_a_store()
                    for statement in self.schema:
                        tx.run(statement)
                    tx.run("INSERT INTO schema_version (version) VALUES (?)", [SCHEMA_VERSION])
                    version = SCHEMA_VERSION
                elif version < SCHEMA_VERSION:
                    for step in range(version + 1, SCHEMA_VERSION + 1):
                        for statement in self.migrations[step]:
                            tx.run(statement)
                    tx.run("UPDATE schema_version SET version = ?", [SCHEMA_VERSION])
                    version = SCHEMA_VERSION
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"The session store {self._describe()} was written by a newer mcpcli (schema {version}).",
                hint="Upgrade mcpcli: pipx upgrade mcpcli",
            )

    # -- records and rows ------------------------------------------------------

    def _session_params(self, session: SessionRecord) -> builtins.list[Any]:
        dumped = session.model_dump()
        row = dumped | {name: None if dumped[name] is None else dumps(dumped[name]) for name in _JSON_FIELDS}
        return [
            self._time(row[field]) if field in _TIME_FIELDS and row[field] is not None else row[field]
            for field in SESSION_FIELDS
        ]

    @staticmethod
    def _session_from_row(row: dict[str, Any]) -> SessionRecord:
        # Times come back as ISO text (SQLite) or datetimes (PostgreSQL); the model takes both.
        return SessionRecord.model_validate(row | {name: loads(row[name]) for name in _JSON_FIELDS})

    def _round_from_row(self, row: dict[str, Any]) -> RoundRecord:
        fields = dict(row)
        fields["index"] = fields.pop("round_index")  # INDEX is an SQL keyword
        fields |= {
            "requests": loads(row["requests"]),
            "answers": loads(row["answers"]),
            "request_state": self._state_out(row["request_state"]),
        }
        if isinstance(fields["answered_at"], str):  # SQLite: ISO text, as every stored time
            fields["answered_at"] = fields["answered_at"] or None
        return RoundRecord.model_validate(fields)

    def _insert_session(self, tx: Tx, session: SessionRecord) -> None:
        if session.lease_owner is not None:  # created holding the lease: holding the lock too, where there is one
            taken = self._take_lock(tx, session.id, session.lease_owner)
            session = session.model_copy(update={"lease_locked": taken.locked})
        marks = ", ".join("?" * len(SESSION_FIELDS))
        inserted = tx.run(
            f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES ({marks}) ON CONFLICT (id) DO NOTHING",
            self._session_params(session),
        )
        if not inserted:
            raise StoreError(f"A session with id {session.id} already exists.")

    def _insert_round(self, tx: Tx, record: RoundRecord) -> None:
        """Insert one round as it is, in the caller's transaction (a new round, or an imported one)."""
        tx.run(
            f"INSERT INTO rounds ({_ROUND_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.session_id,
                record.index,
                record.attempt,
                dumps(record.requests),
                self._state_in(record.request_state),
                None if record.answers is None else dumps(record.answers),
                self._time(record.received),
                None if record.answered is None else self._time(record.answered),
                record.answered_by,
                None if record.answered_at is None else self._time(record.answered_at),
            ),
        )

    def _hold(self, tx: Tx, session_id: str, lease: Lease | None) -> None:
        """Lock the session row for this transaction; refuse a missing session or a lost lease."""
        if lease is not None and lease.session_id != session_id:
            raise ValueError(f"the lease is on session {lease.session_id}, not {session_id}")
        row = tx.one(f"SELECT version FROM sessions WHERE id = ?{self.for_update}", [session_id])
        if row is None:
            raise not_found(session_id)
        if lease is not None and row["version"] != lease.version:
            raise LeaseLost(session_id)

    def _require(self, tx: Tx, session_id: str) -> None:
        if tx.one("SELECT 1 AS found FROM sessions WHERE id = ?", [session_id]) is None:
            raise not_found(session_id)

    # -- the Store interface ---------------------------------------------------

    def check_writable(self) -> None:
        # A write statement that changes no row: the engine still checks that it may write (SQLite: the file and
        # its directory; PostgreSQL: the UPDATE privilege), and commits nothing.
        with self._transaction(write=True) as tx:
            tx.run("UPDATE schema_version SET version = version WHERE version < 0")

    def create(self, session: SessionRecord) -> None:
        with self._transaction(write=True) as tx:
            self._insert_session(tx, session)

    def get(self, id_or_prefix: str) -> SessionRecord:
        """The session whose id is ``id_or_prefix`` or starts with it (case-insensitive, at least ``MIN_PREFIX``
        characters): an exact id wins over longer ones. Too short is a ``UsageError``, none ``not_found``, several a
        ``SessionError`` naming some."""
        given = id_or_prefix.strip()
        key = given.lower()
        if len(key) < MIN_PREFIX:
            raise UsageError(
                f"Session id '{given}' is too short to pick one session.",
                hint=f"Give at least {MIN_PREFIX} characters of the id (see: mcpcli sessions list)",
            )
        with self._transaction(write=False) as tx:
            # Ids are lowercase hex, so every id starting with `key` sorts in [key, key + "g") (byte order:
            # the PostgreSQL column is COLLATE "C"): a range scan on the primary key, no LIKE wildcards to escape.
            rows = tx.all(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
                (key, key + "g", MAX_CANDIDATES + 1),
            )
        rows = [row for row in rows if row["id"].startswith(key)]
        exact = [row for row in rows if row["id"] == key]
        if exact:
            return self._session_from_row(exact[0])
        if not rows:
            raise not_found(given)
        if len(rows) > 1:
            names = ", ".join(row["id"] for row in rows[:MAX_CANDIDATES])
            more = ", …" if len(rows) > MAX_CANDIDATES else ""
            raise SessionError(
                f"Session id '{given}' is ambiguous: it matches {names}{more}.",
                hint="Give more characters of the id.",
            )
        return self._session_from_row(rows[0])

    def list(
        self, *, status: str | None = None, server: str | None = None, limit: int | None = None
    ) -> builtins.list[SessionRecord]:
        sql, params = list_query(status=status, server=server, limit=limit)
        with self._transaction(write=False) as tx:
            rows = tx.all(sql, params)
        return [self._session_from_row(row) for row in rows]

    def add_round(
        self,
        session_id: str,
        *,
        attempt: int,
        requests: dict[str, Any],
        request_state: str | None,
        answers: dict[str, Any] | None = None,
        new_session: SessionRecord | None = None,
        lease: Lease | None = None,
        trace: Sequence[str] = (),
    ) -> RoundRecord:
        """One transaction: the new session (when this is its first round, with the lease), the round numbered after the
        last one, the session moved to it (waiting, or running when ``answers`` came with it), the trace lines. Refuses
        a lost lease (``LeaseLost``)."""
        now = self.clock()
        with self._transaction(write=True) as tx:
            if new_session is not None:
                if lease is not None:
                    if lease.session_id != new_session.id:
                        raise ValueError(f"the lease is on session {lease.session_id}, not {new_session.id}")
                    new_session = new_session.model_copy(update=lease_columns(lease))
                self._insert_session(tx, new_session)
            self._hold(tx, session_id, lease)
            last = tx.one("SELECT MAX(round_index) AS highest FROM rounds WHERE session_id = ?", [session_id])
            record = RoundRecord(
                session_id=session_id,
                index=(last["highest"] if last and last["highest"] is not None else 0) + 1,
                attempt=attempt,
                requests=requests,
                request_state=request_state,
                received=now,
                answers=answers,
                answered=None if answers is None else now,
            )
            self._insert_round(tx, record)
            tx.run(
                "UPDATE sessions SET round = ?, status = ?, updated = ?, answered_by = NULL WHERE id = ?",
                (record.index, "waiting" if answers is None else "running", self._time(now), session_id),
            )
            self._append_trace(tx, session_id, trace)
            self._changed(tx, session_id)
        return record

    def record_answers(
        self,
        session_id: str,
        index: int,
        answers: dict[str, Any],
        *,
        lease: Lease | None = None,
        trace: Sequence[str] = (),
        partial: bool = False,
    ) -> None:
        """Store a round's answers and the session's status with them, in one transaction under the lease: ``partial``
        keeps the round open (waiting) for the rest. Durable once it returns — the retry may be sent. ``SessionError``
        when the round does not exist."""
        now = self._time(self.clock())
        with self._transaction(write=True) as tx:
            self._hold(tx, session_id, lease)
            changed = tx.run(
                "UPDATE rounds SET answers = ?, answered = ? WHERE session_id = ? AND round_index = ?",
                (dumps(answers), None if partial else now, session_id, index),
            )
            if not changed:
                raise SessionError(f"Session {session_id} has no round {index}.")
            status = "waiting" if partial else "running"
            tx.run("UPDATE sessions SET status = ?, updated = ? WHERE id = ?", (status, now, session_id))
            self._append_trace(tx, session_id, trace)
            self._changed(tx, session_id)
        # Committed: durable on disk (SQLite: synchronous=FULL) or on the server (PostgreSQL) by now.

    def answer_round(
        self,
        session_id: str,
        index: int,
        answers: dict[str, Any],
        *,
        by: str,
        complete: bool,
        trace: Sequence[str] = (),
    ) -> RoundRecord:
        """Answer a waiting round as ``by`` (not its driver), atomically: of two answerers one wins, whole; the other
        gets ``AlreadyAnswered``. ``NotWaiting`` when the session moved past this round or it is complete. The answers
        are merged over what the round kept; ``complete`` marks it answered."""
        now = self.clock()
        with self._transaction(write=True) as tx:
            row = tx.one(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?{self.for_update}", [session_id])
            if row is None:
                raise not_found(session_id)
            session = self._session_from_row(row)
            found = tx.one(
                f"SELECT {_ROUND_COLUMNS} FROM rounds WHERE session_id = ? AND round_index = ?", [session_id, index]
            )
            if found is None:
                raise SessionError(f"Session {session_id} has no round {index}.")
            record = self._round_from_row(found)
            if record.answered_by is not None:
                raise AlreadyAnswered(session_id, index, record.answered_by, record.answered_at)
            if session.status != "waiting" or session.round != index or record.complete:
                raise NotWaiting(session, index)
            merged = {**(record.answers or {}), **answers}
            # The session row is locked (or the SQLite write transaction exclusive) since the read above: a second
            # answerer waits here, then reads answered_by set and loses, whole.
            tx.run(
                "UPDATE rounds SET answers = ?, answered = ?, answered_by = ?, answered_at = ?"
                " WHERE session_id = ? AND round_index = ?",
                (dumps(merged), self._time(now) if complete else None, by, self._time(now), session_id, index),
            )
            tx.run("UPDATE sessions SET answered_by = ?, updated = ? WHERE id = ?", (by, self._time(now), session_id))
            self._append_trace(tx, session_id, trace)
            self._changed(tx, session_id)
        return record.model_copy(
            update={"answers": merged, "answered": now if complete else None, "answered_by": by, "answered_at": now}
        )

    def reopen_round(self, session_id: str, index: int, *, lease: Lease | None = None) -> None:
        with self._transaction(write=True) as tx:
            self._hold(tx, session_id, lease)
            tx.run(
                "UPDATE rounds SET answers = NULL, answered = NULL, answered_by = NULL, answered_at = NULL"
                " WHERE session_id = ? AND round_index = ?",
                (session_id, index),
            )
            tx.run(
                "UPDATE sessions SET answered_by = NULL, status = 'waiting', updated = ? WHERE id = ?",
                (self._time(self.clock()), session_id),
            )
            self._changed(tx, session_id)

    def _changed(self, tx: Tx, session_id: str) -> None:
        """Tell whoever watches the store that a session changed (PostgreSQL: ``NOTIFY``, delivered at commit) — a
        hint for ``inbox --watch`` and a driver that waits for an answer; the store stays the truth."""

    def rounds(self, session_id: str) -> builtins.list[RoundRecord]:
        with self._transaction(write=False) as tx:
            rows = tx.all(
                f"SELECT {_ROUND_COLUMNS} FROM rounds WHERE session_id = ? ORDER BY round_index", [session_id]
            )
            if not rows:
                self._require(tx, session_id)
        return [self._round_from_row(row) for row in rows]

    def last_round(self, session_id: str) -> RoundRecord | None:
        with self._transaction(write=False) as tx:
            row = tx.one(
                f"SELECT {_ROUND_COLUMNS} FROM rounds WHERE session_id = ? ORDER BY round_index DESC LIMIT 1",
                [session_id],
            )
            if row is None:
                self._require(tx, session_id)
        return None if row is None else self._round_from_row(row)

    def update(
        self,
        session_id: str,
        *,
        status: Status | None = None,
        protocol_version: str | None = None,
        result: dict[str, Any] | None = None,
        exit_code: int | None = None,
        error: str | None = None,
        identity: str | None = None,
        connection: dict[str, Any] | None = None,
        task: dict[str, Any] | None = None,
        trace_context: dict[str, str] | None = None,
        lease: Lease | None = None,
        release: bool = False,
        trace: Sequence[str] = (),
    ) -> SessionRecord:
        """Change the given fields (``None`` leaves one as it is) in one transaction under the lease, with the trace
        lines; ``release`` gives the lease back in the same write, and a finished status clears who answered. Returns
        the session as stored after the change."""
        if status is not None and status not in STATUSES:
            raise ValueError(f"unknown session status {status!r}")
        changes: dict[str, Any] = {
            "status": status,
            "protocol_version": protocol_version,
            "result": None if result is None else dumps(result),
            "exit_code": exit_code,
            "error": error,
            "identity": identity,
            "connection": None if connection is None else dumps(connection),
            "task": None if task is None else dumps(task),
            "trace_context": None if trace_context is None else dumps(trace_context),
        }
        columns = [column for column, value in changes.items() if value is not None]
        assignments = ", ".join(f"{column} = ?" for column in ["updated", *columns])
        if release:  # the flow's last write gives the lease back in the same transaction
            assignments += ", " + _RELEASED
        if status in ("done", "failed", "expired"):  # finished: nothing waits to be sent any more
            assignments += ", answered_by = NULL"
        params = [self._time(self.clock()), *(changes[column] for column in columns), session_id]
        with self._transaction(write=True) as tx:
            self._hold(tx, session_id, lease)
            # The column names come from the fixed dict above, never from the caller.
            tx.run(f"UPDATE sessions SET {assignments} WHERE id = ?", params)
            self._append_trace(tx, session_id, trace)
            if status is not None:
                self._changed(tx, session_id)
            row = tx.one(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", [session_id])
        assert row is not None  # held above, in this transaction
        if release and lease is not None:
            self._drop_lock(session_id, lease.owner)
        return self._session_from_row(row)

    def trace_lines(self, session_id: str) -> builtins.list[str]:
        with self._transaction(write=False) as tx:
            rows = tx.all("SELECT line FROM trace WHERE session_id = ? ORDER BY seq", [session_id])
            if not rows:
                self._require(tx, session_id)
        return [row["line"] for row in rows]

    def _append_trace(self, tx: Tx, session_id: str, lines: Sequence[str]) -> None:
        """Append trace lines in the caller's transaction, up to ``TRACE_MAX_LINES`` and then one marker."""
        if not lines:
            return
        row = tx.one("SELECT MAX(seq) AS last FROM trace WHERE session_id = ?", [session_id])
        last = row["last"] if row and row["last"] is not None else 0
        if last > TRACE_MAX_LINES:  # the marker is in already
            return
        room = TRACE_MAX_LINES - last
        kept = builtins.list(lines[:room]) + ([TRACE_TRUNCATED] if len(lines) > room else [])
        rows = [(session_id, last + n, line) for n, line in enumerate(kept, start=1)]
        for start in range(0, len(rows), _TRACE_CHUNK):
            chunk = rows[start : start + _TRACE_CHUNK]
            marks = ", ".join(["(?, ?, ?)"] * len(chunk))
            tx.run(f"INSERT INTO trace (session_id, seq, line) VALUES {marks}", [v for r in chunk for v in r])

    def delete(self, ids: Sequence[str]) -> int:
        unique = builtins.list(dict.fromkeys(ids))
        deleted = 0
        with self._transaction(write=True) as tx:
            for start in range(0, len(unique), _DELETE_CHUNK):
                chunk = unique[start : start + _DELETE_CHUNK]
                marks = ", ".join("?" * len(chunk))
                # Rounds and trace lines go with their session: ON DELETE CASCADE.
                deleted += tx.run(f"DELETE FROM sessions WHERE id IN ({marks})", chunk)
        return deleted

    # -- moving and pruning ----------------------------------------------------

    def import_session(self, session: SessionRecord, rounds: Sequence[RoundRecord]) -> None:
        strays = sorted({r.session_id for r in rounds} - {session.id})
        if strays:
            raise ValueError(f"rounds of other sessions ({', '.join(strays)}) cannot be imported with {session.id}")
        with self._transaction(write=True) as tx:
            self._insert_session(tx, session.model_copy(update=_LEASE_CLEARED))
            for record in rounds:
                self._insert_round(tx, record)

    def prune(self, *, older_than: datetime, statuses: Sequence[Status]) -> int:
        """Delete the sessions of ``statuses`` not updated since ``older_than`` whose lease is free or expired (a driven
        session is never pruned); the number deleted. An unknown status is a ``UsageError``."""
        if older_than.tzinfo is None:
            raise ValueError("prune needs an aware datetime")
        unknown = [status for status in statuses if status not in STATUSES]
        if unknown:
            raise UsageError(f"Unknown session status '{unknown[0]}'.", hint=f"Use one of: {', '.join(STATUSES)}")
        wanted = builtins.list(dict.fromkeys(statuses))
        if not wanted:
            return 0
        marks = ", ".join("?" * len(wanted))
        with self._transaction(write=True) as tx:
            return tx.run(
                f"DELETE FROM sessions WHERE status IN ({marks}) AND updated < ?"
                " AND (lease_expires IS NULL OR lease_expires < ?)",
                [*wanted, self._time(older_than), self._time(self.clock())],
            )
