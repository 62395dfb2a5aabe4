"""The embedded session store: one SQLite file under the state dir.

It owns the file's safety (a 0600 file in a 0700 directory, refused when other
users can read or write it; its ``-wal`` and ``-shm`` side files made 0600 by
mcpcli before SQLite opens them — explicit modes, never the process-wide umask,
which other threads' files would share), its durability (WAL, ``synchronous=FULL``, one
``BEGIN IMMEDIATE`` transaction per write, so concurrent writers queue on the
busy timeout instead of deadlocking halfway) and its DDL and migrations. The
statements themselves are shared with PostgreSQL in ``sql.py``; times are
stored as fixed-width ISO-8601 UTC text, so text order is time order.
"""

from __future__ import annotations

import os
import shlex
import sqlite3
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpcli.errors import StoreError
from mcpcli.platform import MODES, private_file_mode
from mcpcli.state.store.base import RoundRecord
from mcpcli.state.store.rows import Tx, iso_time
from mcpcli.state.store.sql import SCHEMA_VERSION, SqlStore

if TYPE_CHECKING:
    from mcpcli.state.store.watch import SqliteWatch

__all__ = ["BUSY_TIMEOUT_MS", "SCHEMA_VERSION", "SqliteStore"]

BUSY_TIMEOUT_MS = 5000
_OPEN_TRIES = 10
_BUSY_WORDS = "stayed locked by another mcpcli"
SIDE_FILES = ("-wal", "-shm")
"""What SQLite keeps beside the database in WAL mode; created 0600 here, before SQLite would."""

ROUNDS_WRITTEN: set[Path] = set()
"""The store files this process wrote a flow's rounds to. A worker's child names them to the lock keeper as it ends
(``worker.child.keep_logs_open``), which keeps their write-ahead logs open for the next command (``hold_open``)."""

_STATUS_CHECK = "CHECK (status IN ('waiting', 'running', 'done', 'failed', 'expired'))"
_METHOD_CHECK = "CHECK (method IN ('tools/call', 'prompts/get', 'resources/read'))"

_TRACE_TABLE = """CREATE TABLE trace (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        line TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )"""

_SCHEMA = (
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    f"""CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        server TEXT NOT NULL,
        method TEXT NOT NULL {_METHOD_CHECK},
        name TEXT NOT NULL,
        arguments TEXT NOT NULL,
        protocol_version TEXT,
        status TEXT NOT NULL {_STATUS_CHECK},
        round INTEGER NOT NULL DEFAULT 0,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        result TEXT,
        exit_code INTEGER,
        error TEXT,
        version INTEGER NOT NULL DEFAULT 0,
        lease_host TEXT,
        lease_pid INTEGER,
        lease_acquired TEXT,
        lease_expires TEXT,
        identity TEXT,
        connection TEXT,
        lease_owner TEXT,
        task TEXT,
        lease_locked INTEGER NOT NULL DEFAULT 0,
        owner TEXT,
        routing TEXT,
        answered_by TEXT,
        trace_context TEXT
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
        answered_by TEXT,
        answered_at TEXT,
        PRIMARY KEY (session_id, round_index)
    )""",
    _TRACE_TABLE,
)

_MIGRATIONS = {
    # 2: leases. Added columns go last, so a migrated file has exactly the columns of a new one.
    2: (
        "ALTER TABLE sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE sessions ADD COLUMN lease_host TEXT",
        "ALTER TABLE sessions ADD COLUMN lease_pid INTEGER",
        "ALTER TABLE sessions ADD COLUMN lease_acquired TEXT",
        "ALTER TABLE sessions ADD COLUMN lease_expires TEXT",
    ),
    # 3: each session's redacted trace, and who the flow ran as.
    3: ("ALTER TABLE sessions ADD COLUMN identity TEXT", _TRACE_TABLE),
    # 4: how the flow was connected (resume reconnects the same way).
    4: ("ALTER TABLE sessions ADD COLUMN connection TEXT",),
    # 5: each flow its own lease owner (host and pid stay, for people and the "holder is gone" rule).
    5: ("ALTER TABLE sessions ADD COLUMN lease_owner TEXT",),
    # 6: the server-side task a tool call became (tasks: id, status, poll position, acknowledged answers).
    6: ("ALTER TABLE sessions ADD COLUMN task TEXT",),
    # 7: whether the holder also holds the session's lock in the database (never, in SQLite: it has no such locks).
    7: ("ALTER TABLE sessions ADD COLUMN lease_locked INTEGER NOT NULL DEFAULT 0",),
    # 8: the team inbox: who owns a flow, whom it asks, who answered its round apart from driving it, and when.
    8: (
        "ALTER TABLE sessions ADD COLUMN owner TEXT",
        "ALTER TABLE sessions ADD COLUMN routing TEXT",
        "ALTER TABLE sessions ADD COLUMN answered_by TEXT",
        "ALTER TABLE rounds ADD COLUMN answered_by TEXT",
        "ALTER TABLE rounds ADD COLUMN answered_at TEXT",
    ),
    # 9: the flow's trace context (OpenTelemetry): a resume, on any host, continues the same trace.
    9: ("ALTER TABLE sessions ADD COLUMN trace_context TEXT",),
}


def _dict_row(cursor: sqlite3.Cursor, row: Sequence[Any]) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


def _private_dirs(directory: Path) -> None:
    """Create ``directory`` and its missing parents, each 0700 (``mkdir -p`` would make the parents by the umask)."""
    missing = [p for p in (directory, *directory.parents) if not p.exists()]
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another process: its modes are checked below like any
            continue
        path.chmod(0o700)  # the mode given to mkdir is cut by the umask; chmod is not


def _create_private(path: Path) -> bool:
    """Create ``path`` as an empty 0600 file; ``False`` (and nothing touched) when it exists already.

    The mode is set on the new descriptor, so the file is never, even for a moment, readable by others — and it
    is 0600 exactly, whatever the umask cut from the mode given to ``open``.
    """
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    try:
        private_file_mode(fd)
    finally:
        os.close(fd)
    return True


def _prepare_side_files(path: Path) -> None:
    """The WAL and shared-memory files, 0600, before SQLite opens them: their mode then depends neither on the
    umask nor on SQLite copying the database file's mode.

    Best effort: an existing side file (a WAL holding committed rounds after a crash) is never truncated, and in
    a place this user cannot write the store opens read-only without them.
    """
    for suffix in SIDE_FILES:
        side = path.with_name(path.name + suffix)
        try:
            if _create_private(side):
                continue
        except OSError:  # a directory this user cannot write: SQLite opens the store read-only, without them
            continue
        _refuse_if_shared(side, "file", "600")


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
        if not MODES:  # POSIX modes do not apply (Windows); the user profile is private.
            path.parent.mkdir(parents=True, exist_ok=True)
            return
        _private_dirs(path.parent)
        _refuse_if_shared(path.parent, "directory", "700")
        # Created here rather than by sqlite, so it is never briefly world-readable.
        if not _create_private(path):
            if path.is_dir():
                raise StoreError(f"The session store {path} is a directory, not a file.") from None
            _refuse_if_shared(path, "file", "600")
        _prepare_side_files(path)
    except OSError as exc:
        raise StoreError(
            f"Cannot create the session store {path}: {exc.strerror or exc}.",
            hint="Point --store (or MCPCLI_STORE) at a writable place, e.g. sqlite:/path/to/sessions.db",
        ) from None


def _unwritable(exc: StoreError) -> bool:
    return "cannot be written" in exc.message or "cannot be opened" in exc.message


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
    if code.startswith("SQLITE_READONLY") or "readonly database" in detail:
        return StoreError(
            f"The session store {path} cannot be written ({detail}).",
            hint=f"Make it and its directory writable: chmod u+w {shlex.quote(str(path))}"
            f" {shlex.quote(str(path.parent))} (or point --store elsewhere)",
        )
    if code.startswith("SQLITE_CANTOPEN") or "unable to open" in detail:
        return StoreError(
            f"The session store {path} cannot be opened ({detail}).",
            hint=f"mcpcli must read and write it and its directory: ls -ld {shlex.quote(str(path))}"
            f" {shlex.quote(str(path.parent))}",
        )
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(
            f"The session store {path} stayed locked by another mcpcli for {BUSY_TIMEOUT_MS // 1000} s.",
            hint="Try again when the other mcpcli has finished.",
        )
    if code.startswith(("SQLITE_FULL", "SQLITE_IOERR")) or "disk is full" in detail:
        return StoreError(
            f"The session store {path} failed: {detail}.",
            hint=f"Free some space where it lives (df -h {shlex.quote(str(path.parent))}), then run the command"
            " again: what was stored before is intact.",
        )
    return StoreError(f"The session store {path} failed: {detail}.")


class SqliteStore(SqlStore):
    """The ``Store`` on one SQLite file; safe to share between threads (calls are serialised)."""

    schema = _SCHEMA
    migrations = _MIGRATIONS

    def __init__(self, path: Path) -> None:
        """Open the store file (made private first); where this user cannot write, open it read-only instead, keeping
        why in ``read_only`` so that reading commands still work and every write raises it."""
        super().__init__()
        self.path = path
        """The database file."""
        self.read_only: StoreError | None = None
        """Why the store was opened read-only (a file or directory this user cannot write); ``None`` normally.
        Reading commands still work; ``check_writable`` and every write raise this."""
        _prepare_file(path)
        try:
            self._conn = self._open()
        except StoreError as exc:
            if not _unwritable(exc):
                raise
            # A read-only place: reading (sessions list/show) still works from an immutable snapshot.
            self._conn = self._open(read_only=True)
            self.read_only = exc

    def _open(self, *, read_only: bool = False) -> sqlite3.Connection:
        """Connect and prepare the file (WAL, the schema), retrying a few times when a concurrent first open answers
        busy. ``read_only``: an immutable snapshot. The connection is closed on any failure; a ``StoreError`` says what
        failed."""
        target: str | Path = f"{self.path.resolve().as_uri()}?mode=ro&immutable=1" if read_only else self.path
        try:
            conn = sqlite3.connect(
                target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False, uri=read_only
            )
        except sqlite3.Error as exc:
            raise _store_error(self.path, exc) from None
        conn.row_factory = _dict_row
        self._conn = conn
        try:
            for attempt in range(_OPEN_TRIES):
                try:
                    self._prepare(conn, read_only=read_only)
                    break
                except StoreError as exc:
                    # Opening a new file races other first opens (switching to WAL, creating the schema); SQLite
                    # answers some of those races with an immediate SQLITE_BUSY rather than waiting: try again.
                    if _BUSY_WORDS not in exc.message or attempt == _OPEN_TRIES - 1:
                        raise
                    time.sleep(0.02 * (attempt + 1))
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection, *, read_only: bool) -> None:
        with self._guard():
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if not read_only:
                conn.execute("PRAGMA journal_mode = WAL").fetchall()
                conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._init_schema()
            if not read_only:
                self._probe()

    def _probe(self) -> None:
        # Cheap (no row changes, nothing committed) and catches a read-only file whose WAL side files are writable.
        self.check_writable()

    def check_writable(self) -> None:
        if self.read_only is not None:
            raise self.read_only
        super().check_writable()

    # -- the dialect -----------------------------------------------------------

    @contextmanager
    def _guard(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise _store_error(self.path, exc) from None

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Tx]:
        with self._guard() as conn:
            if not write:  # autocommit: each read is its own snapshot, and takes no lock a writer waits for
                yield Tx(conn.execute)
                return
            # The write lock is taken up front, so a write never deadlocks halfway through.
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield Tx(conn.execute)
                conn.execute("COMMIT")
            finally:
                if conn.in_transaction:  # the body or the COMMIT failed
                    conn.execute("ROLLBACK")

    def add_round(self, session_id: str, **round: Any) -> RoundRecord:
        record = super().add_round(session_id, **round)
        ROUNDS_WRITTEN.add(self.path)  # a multi-round flow: the next one's commits are worth a log kept open
        return record

    def _time(self, value: datetime) -> str:
        return iso_time(value)

    def _schema_version(self, tx: Tx) -> int | None:
        if tx.one("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'") is None:
            return None
        row = tx.one("SELECT MAX(version) AS version FROM schema_version")
        return None if row is None or row["version"] is None else int(row["version"])

    def _has_other_tables(self, tx: Tx) -> bool:
        return tx.one("SELECT 1 AS found FROM sqlite_master") is not None

    def _not_a_store(self) -> StoreError:
        return StoreError(
            f"{self.path} is an SQLite database, but not an mcpcli session store.",
            hint="Point --store (or MCPCLI_STORE) at another file, e.g. sqlite:/path/to/sessions.db",
        )

    def _describe(self) -> str:
        return str(self.path)

    def watch(self) -> SqliteWatch:
        """Commits to this file by other connections (``store.watch``)."""
        from mcpcli.state.store.watch import SqliteWatch

        return SqliteWatch(self.path)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteStore:
        return self


# --- the write-ahead log kept between commands (a worker's lock keeper) ---------------------------------------------


def hold_open(path: Path) -> sqlite3.Connection:
    """A connection that keeps ``path``'s write-ahead log open between commands.

    When the last connection to a store closes, SQLite copies the log into the file and deletes it; the next
    command's first commits then grow a new log, and each ``synchronous=FULL`` commit that grows a file waits for
    the file system's metadata too (on ext4 about 0.5 ms a commit, against about 0.3 ms writing over a log already
    on disk). This connection is never the last one while it is held: opened only on an existing private store
    (never created here), it reads the schema once, so that SQLite opens the log, and then holds no lock and no
    snapshot — writers and checkpoints go on as if it were not there.
    """
    _refuse_if_shared(path.parent, "directory", "700")
    if not path.is_file():
        raise StoreError(f"The session store {path} is not a file.")
    _refuse_if_shared(path, "file", "600")
    _prepare_side_files(path)
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=1.0, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise _store_error(path, exc) from None
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
    except sqlite3.Error as exc:
        conn.close()
        raise _store_error(path, exc) from None
    return conn


def settle(conn: sqlite3.Connection) -> None:
    """Copy the log's committed pages into the store file (a passive checkpoint: it waits for no reader or writer),
    so that at rest the file alone holds every session, as it does when the log is closed (a copy of the file is
    whole), and the next command writes the log from its start again, over pages already on disk."""
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
