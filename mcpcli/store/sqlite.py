"""The embedded session store: one SQLite file under the state dir.

It owns the file's safety (a 0600 file in a 0700 directory, refused when other
users can read or write it), its durability (WAL, ``synchronous=FULL``, one
``BEGIN IMMEDIATE`` transaction per write) and the mapping of records to rows.
The SQL itself stays portable — TEXT for JSON and ISO-8601 UTC times, plain
indexes, ``CHECK`` constraints — so the PostgreSQL engine can keep the same
schema and pass the same tests.
"""

from __future__ import annotations

import builtins
import json
import os
import shlex
import sqlite3
import stat
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcpcli.errors import SessionError, StoreError, UsageError
from mcpcli.store.base import MAX_CANDIDATES, MIN_PREFIX, STATUSES, RoundRecord, SessionRecord, Status, utcnow

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 5000
_DELETE_CHUNK = 500  # stays under SQLite's limit on bound parameters

_SCHEMA = (
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
    # Listings are ordered by (updated, id); each filter has an index in that order.
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
)

_SESSION_FIELDS = tuple(SessionRecord.model_fields)  # the columns are named after the fields
_SESSION_COLUMNS = ", ".join(_SESSION_FIELDS)
_ROUND_COLUMNS = "session_id, round_index, attempt, requests, request_state, answers, received, answered"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _time(value: datetime) -> str:
    # Fixed width (always microseconds, always +00:00), so text order is time order.
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _session_from_row(row: sqlite3.Row) -> SessionRecord:
    fields = dict(zip(row.keys(), row, strict=True))  # the ISO times are parsed by the model
    return SessionRecord.model_validate(
        fields | {"arguments": _loads(row["arguments"]), "result": _loads(row["result"])}
    )


def _round_from_row(row: sqlite3.Row) -> RoundRecord:
    fields = dict(zip(row.keys(), row, strict=True))
    fields["index"] = fields.pop("round_index")  # INDEX is an SQL keyword
    return RoundRecord.model_validate(fields | {"requests": _loads(row["requests"]), "answers": _loads(row["answers"])})


def list_query(
    *, status: str | None = None, server: str | None = None, limit: int | None = None
) -> tuple[str, builtins.list[Any]]:
    """The SQL and parameters ``SqliteStore.list`` runs (the tests EXPLAIN exactly this)."""
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


@contextmanager
def _private_umask() -> Iterator[None]:
    # Whatever gets created in here (directories, the WAL and SHM side files) is
    # private to the user. The umask is process-wide: stores are opened at startup,
    # before any thread that creates files is running.
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def _refuse_if_shared(path: Path, what: str, mode: str) -> None:
    bits = stat.S_IMODE(path.stat().st_mode)
    if bits & 0o066:
        raise StoreError(
            f"The session store {what} {path} can be read or written by other users (mode {bits:04o}).",
            hint=f"chmod {mode} {shlex.quote(str(path))}",
        )


def _prepare_file(path: Path) -> None:
    """Make sure ``path`` exists as a 0600 file in a 0700 directory, or refuse."""
    try:
        if os.name == "nt":  # POSIX modes do not apply; the user profile is private.
            path.parent.mkdir(parents=True, exist_ok=True)
            return
        with _private_umask():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _refuse_if_shared(path.parent, "directory", "700")
        try:
            # Created here rather than by sqlite, so it is never briefly world-readable.
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            if path.is_dir():
                raise StoreError(f"The session store {path} is a directory, not a file.") from None
            _refuse_if_shared(path, "file", "600")
    except OSError as exc:
        raise StoreError(
            f"Cannot create the session store {path}: {exc.strerror or exc}.",
            hint="Point --store (or MCPCLI_STORE) at a writable place, e.g. sqlite:/path/to/sessions.db",
        ) from None


def _store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """One line (and a hint) for a failure of SQLite itself."""
    code = getattr(exc, "sqlite_errorname", "")
    detail = " ".join(str(exc).split())
    if code in ("SQLITE_NOTADB", "SQLITE_CORRUPT") or "not a database" in detail:
        quoted = shlex.quote(str(path))
        return StoreError(
            f"The session store {path} is not an SQLite database, or it is damaged ({detail}).",
            hint=f"Move it aside and mcpcli starts a new one: mv {quoted} {quoted}.broken",
        )
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(
            f"The session store {path} stayed locked by another mcpcli for {BUSY_TIMEOUT_MS // 1000} s.",
            hint="Try again when the other mcpcli has finished.",
        )
    return StoreError(f"The session store {path} failed: {detail}.")


def _not_found(id_or_prefix: str) -> SessionError:
    return SessionError(f"No session matches '{id_or_prefix}'.", hint="List them with: mcpcli sessions list")


class SqliteStore:
    """The ``Store`` on one SQLite file; safe to share between threads (calls are serialised)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        """The database file."""
        self._lock = threading.RLock()
        _prepare_file(path)
        try:
            with _private_umask():
                self._conn = sqlite3.connect(
                    path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
                )
        except sqlite3.Error as exc:
            raise _store_error(path, exc) from None
        self._conn.row_factory = sqlite3.Row
        try:
            with _private_umask(), self._guard():
                self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                self._conn.execute("PRAGMA journal_mode = WAL").fetchall()
                self._conn.execute("PRAGMA synchronous = FULL")
                self._conn.execute("PRAGMA foreign_keys = ON")
                self._init_schema()
        except BaseException:
            self._conn.close()
            raise

    # -- plumbing -----------------------------------------------------------

    @contextmanager
    def _guard(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise _store_error(self.path, exc) from None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; it takes the write lock up front, so it never deadlocks halfway."""
        with self._guard() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            finally:
                if conn.in_transaction:  # the body or the COMMIT failed
                    conn.execute("ROLLBACK")

    def _schema_version(self) -> int | None:
        found = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        ).fetchone()
        if found is None:
            return None
        version = self._conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
        return None if version is None else int(version)

    def _init_schema(self) -> None:
        version = self._schema_version()  # no write lock when the schema is already there
        if version is None:
            with self._write() as conn:
                version = self._schema_version()  # another process may have won the race
                if version is None:
                    if conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
                        raise StoreError(
                            f"{self.path} is an SQLite database, but not an mcpcli session store.",
                            hint="Point --store (or MCPCLI_STORE) at another file, e.g. sqlite:/path/to/sessions.db",
                        )
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
                    version = SCHEMA_VERSION
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"The session store {self.path} was written by a newer mcpcli (schema {version}).",
                hint="Upgrade mcpcli: pipx upgrade mcpcli",
            )

    @staticmethod
    def _require(conn: sqlite3.Connection, session_id: str) -> None:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise _not_found(session_id)

    # -- the Store interface ------------------------------------------------

    def create(self, session: SessionRecord) -> None:
        with self._write() as conn:
            self._insert_session(conn, session)

    @staticmethod
    def _insert_session(conn: sqlite3.Connection, session: SessionRecord) -> None:
        row = session.model_dump() | {
            "arguments": _dumps(session.arguments),
            "result": None if session.result is None else _dumps(session.result),
            "created": _time(session.created),
            "updated": _time(session.updated),
        }
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session.id,)).fetchone() is not None:
            raise StoreError(f"A session with id {session.id} already exists.")
        marks = ", ".join("?" * len(_SESSION_FIELDS))
        conn.execute(f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES ({marks})", [row[f] for f in _SESSION_FIELDS])

    def get(self, id_or_prefix: str) -> SessionRecord:
        given = id_or_prefix.strip()
        key = given.lower()
        if len(key) < MIN_PREFIX:
            raise UsageError(
                f"Session id '{given}' is too short to pick one session.",
                hint=f"Give at least {MIN_PREFIX} characters of the id (see: mcpcli sessions list)",
            )
        with self._guard() as conn:
            # Ids are lowercase hex, so every id starting with `key` sorts in [key, key + "g"):
            # a range scan on the primary key, with no LIKE wildcards to escape.
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
                (key, key + "g", MAX_CANDIDATES + 1),
            ).fetchall()
        rows = [row for row in rows if row["id"].startswith(key)]
        exact = [row for row in rows if row["id"] == key]
        if exact:
            return _session_from_row(exact[0])
        if not rows:
            raise _not_found(given)
        if len(rows) > 1:
            names = ", ".join(row["id"] for row in rows[:MAX_CANDIDATES])
            more = ", …" if len(rows) > MAX_CANDIDATES else ""
            raise SessionError(
                f"Session id '{given}' is ambiguous: it matches {names}{more}.",
                hint="Give more characters of the id.",
            )
        return _session_from_row(rows[0])

    def list(
        self, *, status: str | None = None, server: str | None = None, limit: int | None = None
    ) -> builtins.list[SessionRecord]:
        sql, params = list_query(status=status, server=server, limit=limit)
        with self._guard() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [_session_from_row(row) for row in rows]

    def add_round(
        self,
        session_id: str,
        *,
        attempt: int,
        requests: dict[str, Any],
        request_state: str | None,
        answers: dict[str, Any] | None = None,
        new_session: SessionRecord | None = None,
    ) -> RoundRecord:
        now = utcnow()
        with self._write() as conn:
            if new_session is not None:
                self._insert_session(conn, new_session)
            self._require(conn, session_id)
            (index,) = conn.execute(
                "SELECT COALESCE(MAX(round_index), 0) + 1 FROM rounds WHERE session_id = ?", (session_id,)
            ).fetchone()
            record = RoundRecord(
                session_id=session_id,
                index=index,
                attempt=attempt,
                requests=requests,
                request_state=request_state,
                received=now,
                answers=answers,
                answered=None if answers is None else now,
            )
            stamp = _time(now)
            conn.execute(
                f"INSERT INTO rounds ({_ROUND_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    index,
                    attempt,
                    _dumps(requests),
                    request_state,
                    None if answers is None else _dumps(answers),
                    stamp,
                    None if answers is None else stamp,
                ),
            )
            conn.execute(
                "UPDATE sessions SET round = ?, status = ?, updated = ? WHERE id = ?",
                (index, "waiting" if answers is None else "running", stamp, session_id),
            )
        return record

    def record_answers(self, session_id: str, index: int, answers: dict[str, Any]) -> None:
        now = _time(utcnow())
        with self._write() as conn:
            changed = conn.execute(
                "UPDATE rounds SET answers = ?, answered = ? WHERE session_id = ? AND round_index = ?",
                (_dumps(answers), now, session_id, index),
            ).rowcount
            if not changed:
                self._require(conn, session_id)
                raise SessionError(f"Session {session_id} has no round {index}.")
            conn.execute("UPDATE sessions SET status = 'running', updated = ? WHERE id = ?", (now, session_id))
        # COMMIT with synchronous=FULL has reached the disk by now.

    def rounds(self, session_id: str) -> builtins.list[RoundRecord]:
        with self._guard() as conn:
            rows = conn.execute(
                f"SELECT {_ROUND_COLUMNS} FROM rounds WHERE session_id = ? ORDER BY round_index", (session_id,)
            ).fetchall()
            if not rows:
                self._require(conn, session_id)
        return [_round_from_row(row) for row in rows]

    def last_round(self, session_id: str) -> RoundRecord | None:
        with self._guard() as conn:
            row = conn.execute(
                f"SELECT {_ROUND_COLUMNS} FROM rounds WHERE session_id = ? ORDER BY round_index DESC LIMIT 1",
                (session_id,),
            ).fetchone()
            if row is None:
                self._require(conn, session_id)
        return None if row is None else _round_from_row(row)

    def update(
        self,
        session_id: str,
        *,
        status: Status | None = None,
        protocol_version: str | None = None,
        result: dict[str, Any] | None = None,
        exit_code: int | None = None,
        error: str | None = None,
    ) -> SessionRecord:
        if status is not None and status not in STATUSES:
            raise ValueError(f"unknown session status {status!r}")
        changes: dict[str, Any] = {
            "status": status,
            "protocol_version": protocol_version,
            "result": None if result is None else _dumps(result),
            "exit_code": exit_code,
            "error": error,
        }
        columns = [column for column, value in changes.items() if value is not None]
        assignments = ", ".join(f"{column} = ?" for column in ["updated", *columns])
        params = [_time(utcnow()), *(changes[column] for column in columns), session_id]
        with self._write() as conn:
            # The column names come from the fixed dict above, never from the caller.
            if not conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", params).rowcount:
                raise _not_found(session_id)
            row = conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return _session_from_row(row)

    def delete(self, ids: Sequence[str]) -> int:
        unique = list(dict.fromkeys(ids))
        deleted = 0
        with self._write() as conn:
            for start in range(0, len(unique), _DELETE_CHUNK):
                chunk = unique[start : start + _DELETE_CHUNK]
                marks = ", ".join("?" * len(chunk))
                # Rounds go with their session: ON DELETE CASCADE (foreign_keys is on).
                deleted += conn.execute(f"DELETE FROM sessions WHERE id IN ({marks})", chunk).rowcount
        return deleted

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
