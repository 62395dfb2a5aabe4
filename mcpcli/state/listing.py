"""The session list read straight from the default SQLite store, without the store's models.

``mcpcli sessions list`` is the command people run most between flows, and the store's records are pydantic
models: building them (and importing pydantic) is most of what a listing costs. Here the same rows become the
same JSON documents ``sessions list --json`` prints (``commands.sessions.session_json``: same keys, same order,
same time format) from the plain columns — standard library and ``inbox`` only.

This is a fast path, not a second store: ``read`` serves only the plain case — the default file, private and
already set up, at the schema this mcpcli writes — and returns ``None`` for anything else (no file yet, a mode to
refuse, another schema, a PostgreSQL store, any SQLite error), so the caller opens the real ``Store``, which
creates, migrates, refuses or explains exactly as before. tests/test_sessions_list.py checks that both give the
same documents.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mcpcli.platform import open_to_others, private_file_mode
from mcpcli.state.inbox import describe_request, driver_gone, holder_of

SCHEMA_VERSION = 9
"""The store schema this reads (``store.sql.SCHEMA_VERSION``; a test checks they agree): any other → ``None``."""

STATUSES = ("waiting", "running", "done", "failed", "expired")
"""``store.base.STATUSES`` (checked by the same test); an unknown ``--status`` is the real store's to refuse."""

_COLUMNS = (
    "id, server, method, name, protocol_version, status, round, created, updated, exit_code, "
    "lease_host, lease_pid, lease_acquired, lease_expires, task, owner, answered_by"
)
_SIDE_FILES = ("-wal", "-shm")
_BUSY_TIMEOUT = 5.0


@dataclass
class Listing:
    """What ``sessions list`` shows: the sessions as their ``--json`` documents, and what each waiting one waits
    for (request key → ``inbox.describe_request``), newest first."""

    docs: list[dict[str, Any]]
    pending: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)


def read(
    path: str | os.PathLike[str],
    *,
    status: str | None = None,
    server: str | None = None,
    limit: int | None = None,
    waiting: bool = False,
) -> Listing | None:
    """The sessions in the SQLite store at ``path`` as ``Store.list`` (or, ``waiting``, ``inbox.inbox``) would
    give them, newest first; ``None`` when this cannot serve and the real store must (see the module docstring).

    ``waiting`` adds each document's ``pending`` and ``lease``, as ``sessions list --waiting --json`` prints."""
    if (status is not None and status not in STATUSES) or (limit is not None and limit < 0):
        return None
    if waiting and status not in (None, "waiting"):
        return None
    path = Path(path)
    if (
        not path.exists() and not path.is_symlink()
    ):  # no flow has been saved yet (nor a store refused: its directory is private)
        return Listing([]) if not path.parent.exists() or _private_dir(path.parent) else None
    if not _private(path):
        return None
    try:
        conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.row_factory = sqlite3.Row
        version = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        if version is None or version[0] != SCHEMA_VERSION:
            return None
        if waiting:
            rows = [*_rows(conn, "waiting", server, limit), *_rows(conn, "running", server, None)]
        else:
            rows = _rows(conn, status, server, limit)
        docs = [doc for doc in map(_document, rows) if doc is not None]
        if len(docs) < len(rows):
            return None  # a value this reader does not know how to show: the real store will
        if waiting:
            docs = [d for d in docs if d["status"] == "waiting" or d["interrupted"]]
            docs.sort(key=lambda d: (d["_updated"], d["id"]), reverse=True)
            docs = docs if limit is None else docs[:limit]
        pending = {d["id"]: _pending(conn, d["id"]) for d in docs if waiting or d["status"] == "waiting"}
    except (sqlite3.Error, ValueError, TypeError, KeyError):
        return None
    finally:
        conn.close()
    for doc in docs:
        lease = doc.pop("_lease")
        doc.pop("_updated")
        if waiting:
            doc["pending"] = pending.get(doc["id"], {})
            doc["lease"] = holder_of(*lease)
    return Listing(docs, pending)


def _private(path: Path) -> bool:
    """The store file, its directory and side files exist and nobody else may read or write them — as the real
    store requires (it refuses, or creates what is missing, 0600): anything else is its to handle. The side files
    are made here as the store makes them, 0600 before SQLite would (it deletes them on the last close)."""
    try:
        if _shared(path.parent.stat()) or _shared(info := path.stat()):
            return False
        if not stat.S_ISREG(info.st_mode) or not os.access(path, os.R_OK | os.W_OK):
            return False
        for suffix in _SIDE_FILES:
            side = path.with_name(path.name + suffix)
            try:
                fd = os.open(side, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                if _shared(side.stat()):
                    return False
                continue
            try:
                private_file_mode(fd)
            finally:
                os.close(fd)
    except OSError:
        return False
    return True


def _private_dir(directory: Path) -> bool:
    try:
        info = directory.stat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and not _shared(info)


def _shared(info: os.stat_result) -> bool:
    return open_to_others(info.st_mode, 0o066)


def _rows(conn: sqlite3.Connection, status: str | None, server: str | None, limit: int | None) -> list[sqlite3.Row]:
    """``store.sql.list_query``'s statement: each filter has an index ending in ``(updated, id)``."""
    filters = {column: value for column, value in (("status", status), ("server", server)) if value is not None}
    sql = f"SELECT {_COLUMNS} FROM sessions"
    if filters:
        sql += " WHERE " + " AND ".join(f"{column} = ?" for column in filters)
    sql += " ORDER BY updated DESC, id DESC" + ("" if limit is None else " LIMIT ?")
    return conn.execute(sql, [*filters.values(), *([] if limit is None else [limit])]).fetchall()


def _document(row: sqlite3.Row) -> dict[str, Any] | None:
    """One row as ``session_json`` makes it from the record (keys in the model's field order), plus the lease and
    the raw update time for the caller; ``None`` for a value the model would have read differently."""
    created, updated = _json_time(row["created"]), _json_time(row["updated"])
    acquired, expires = _time(row["lease_acquired"]), _time(row["lease_expires"])
    if created is None or updated is None or (row["lease_acquired"] and acquired is None):
        return None
    if row["lease_expires"] and expires is None:
        return None
    task = json.loads(row["task"]) if row["task"] is not None else None
    if task is not None and not isinstance(task, Mapping):
        return None
    return {
        "id": row["id"],
        "server": row["server"],
        "method": row["method"],
        "name": row["name"],
        "protocol_version": row["protocol_version"],
        "status": row["status"],
        "round": row["round"],
        "created": created,
        "updated": updated,
        "exit_code": row["exit_code"],
        "interrupted": driver_gone(row["status"], row["lease_host"], row["lease_pid"], expires, acquired),
        "task": None if task is None else {k: task.get(k) for k in ("id", "status", "message")},
        "owner": row["owner"],
        "answered_by": row["answered_by"],
        "_lease": (row["lease_host"], row["lease_pid"], acquired, expires),
        "_updated": row["updated"],
    }


_STORED_LENGTH = len("2026-01-02T03:04:05.123456+00:00")


def _time(text: str | None) -> datetime | None:
    """A stored time (``store.sql.iso_time``: fixed width, UTC); ``None`` for anything else."""
    if text is None or len(text) != _STORED_LENGTH or not text.endswith("+00:00"):
        return None
    return datetime.fromisoformat(text)


def _json_time(text: str) -> str | None:
    """A stored time as pydantic writes it in JSON: ``Z`` for UTC, microseconds only when there are some."""
    if _time(text) is None:
        return None
    seconds, micro = text[:19], text[20:26]
    return f"{seconds}Z" if micro == "000000" else f"{seconds}.{micro}Z"


def _pending(conn: sqlite3.Connection, session_id: str) -> dict[str, dict[str, Any]]:
    """``inbox.pending_requests`` of the session's last round."""
    row = conn.execute(
        "SELECT requests, answers, answered FROM rounds WHERE session_id = ? ORDER BY round_index DESC LIMIT 1",
        [session_id],
    ).fetchone()
    if row is None or row["answered"] is not None:
        return {}
    requests, answered = json.loads(row["requests"]), json.loads(row["answers"] or "{}")  # answered: in part
    if not isinstance(requests, Mapping) or not isinstance(answered, Mapping):
        raise ValueError("a round's requests or answers are not an object")
    return {str(key): describe_request(wire) for key, wire in requests.items() if key not in answered}
