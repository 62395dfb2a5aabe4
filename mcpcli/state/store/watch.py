"""Watching a store for changes: the team inbox's live view and a driver that waits for an answer.

A change is a hint, never the news itself: the watcher says *that* (and, where it can, *which*) sessions changed,
and the caller reads them again from the store, which stays the truth. A missed hint costs a little latency, never
a wrong answer.

- PostgreSQL: every write that changes where a session stands runs ``pg_notify(CHANNEL, id)`` in its transaction,
  delivered at commit to every connection that ran ``LISTEN`` — on any machine, at once, with no polling loop. The
  watcher holds one such connection; when it drops, it reconnects with backoff and says "anything may have changed"
  (``None``), so the caller catches up from the store.
- SQLite: one machine, one file. ``PRAGMA data_version`` changes when another connection commits: read on the
  watcher's own connection every ``SQLITE_POLL`` seconds, it costs a few microseconds and no disk read.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import Any, Protocol

CHANNEL = "mcpcli_sessions"
"""The PostgreSQL notification channel; the payload is the session id."""

SQLITE_POLL = 0.05
"""Seconds between two looks at a SQLite store's ``data_version``."""

_COALESCE = 0.02
"""After a first notification, how long more are gathered into the same change (a burst is one re-read)."""

_BACKOFF = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)


class StoreWatch(Protocol):
    """What changed in a store since the last ``wait``."""

    def wait(self, timeout: float) -> set[str] | None:
        """Block up to ``timeout`` seconds for a change: the ids of the sessions that changed, ``None`` when it
        cannot say which (read everything again), an empty set when nothing changed in time."""
        ...

    def close(self) -> None: ...


class SqliteWatch:
    """A SQLite store's commits by other connections, seen through ``PRAGMA data_version``."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
        self._seen = self._version()

    def _version(self) -> int:
        row = self._conn.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def wait(self, timeout: float) -> set[str] | None:
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            try:
                now = self._version()
            except sqlite3.Error:
                now = self._seen + 1  # a busy or broken read: say "maybe", the caller reads the store again
            if now != self._seen:
                self._seen = now
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return set()
            time.sleep(min(SQLITE_POLL, left))

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()


class PostgresWatch:
    """``LISTEN`` on a connection of its own; reconnects with backoff, and then says "anything may have changed"."""

    def __init__(self, dsn: str, extra: dict[str, Any]) -> None:
        self._dsn, self._extra = dsn, extra
        self._conn: Any = None
        self._failures = 0
        self._connect()

    def _connect(self) -> bool:
        import psycopg

        try:
            self._conn = psycopg.connect(self._dsn, autocommit=True, **self._extra)
            self._conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error:
            self._conn = None
            self._failures += 1
            return False
        self._failures = 0
        return True

    def wait(self, timeout: float) -> set[str] | None:
        """The sessions notified within ``timeout`` seconds (a burst folded into one set); empty when nothing came. None
        means "anything may have changed" (the listening connection was lost, or just came back): read the store again.
        Reconnects with backoff."""
        import psycopg

        deadline = time.monotonic() + max(0.0, timeout)
        if self._conn is None or self._conn.closed:
            pause = _BACKOFF[min(self._failures, len(_BACKOFF) - 1)]
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            return None if self._connect() else set()
        ids: set[str] = set()
        try:
            for note in self._conn.notifies(timeout=max(0.0, deadline - time.monotonic()), stop_after=1):
                ids.add(note.payload)
            if ids:  # a burst (a batch's rounds, a flood of flows) is one change
                for note in self._conn.notifies(timeout=_COALESCE):
                    ids.add(note.payload)
        except psycopg.Error:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None
            self._failures += 1
            return None
        return ids

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None
