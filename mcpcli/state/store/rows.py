"""The rows under the SQL: a transaction's statements with rows as dicts (``Tx``, over either driver's cursor),
what taking a session's lock in the database got (``Taken``), JSON and time as the columns hold them, and the two
small checks every store operation shares. Used by
``sql.SqlStore`` and the engines (``sqlite.py``, ``postgres.py``)."""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from mcpcli.errors import SessionError


class Cursor(Protocol):
    """What both drivers' cursors offer (rows are dicts: each engine sets a dict row factory)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> builtins.list[Any]: ...


class Tx:
    """One transaction's statements, with rows as dicts; written with ``?`` placeholders for every engine."""

    def __init__(self, execute: Callable[[str, Sequence[Any]], Cursor]) -> None:
        self._execute = execute

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute; return the number of rows changed."""
        return self._execute(sql, params).rowcount

    def one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        row: dict[str, Any] | None = self._execute(sql, params).fetchone()
        return row

    def all(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[dict[str, Any]]:
        return self._execute(sql, params).fetchall()


@dataclass(frozen=True)
class Taken:
    """What ``_take_lock`` got: the lock (``locked``), whether this call took it anew (``new``: give it up again if
    the claim fails), and whether getting it proves that a lock-holding lease's holder is gone (``proves_gone``:
    nobody else held it, in this process or any other)."""

    locked: bool = False
    new: bool = False
    proves_gone: bool = False


def dumps(value: Any) -> str:
    """JSON as stored: compact, non-ASCII kept, key order kept (so arguments go back exactly as first sent)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def loads(text: str | None) -> Any:
    """A JSON column back (NULL stays None)."""
    return None if text is None else json.loads(text)


def iso_time(value: datetime) -> str:
    """Fixed width (always microseconds, always +00:00), so text order is time order."""
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def not_found(id_or_prefix: str) -> SessionError:
    """No session has that id or prefix."""
    return SessionError(f"No session matches '{id_or_prefix}'.", hint="List them with: mcpcli sessions list")


def check_ttl(ttl: float) -> timedelta:
    """A lease's time to live, which must be positive."""
    if not ttl > 0:
        raise ValueError(f"a lease needs a positive ttl, not {ttl!r}")
    return timedelta(seconds=ttl)
