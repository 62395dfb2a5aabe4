"""The SQL both store engines share underneath: a transaction's statements (``Tx``, rows as dicts, ``?``
placeholders), and what taking a session's lock in the database got (``Taken``)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


def not_found(id_or_prefix: str) -> SessionError:
    return SessionError(f"No session matches '{id_or_prefix}'.", hint="List them with: mcpcli sessions list")
