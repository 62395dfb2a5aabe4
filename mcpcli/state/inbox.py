"""Where a stored session stands: interrupted or not, the status listings show, the inbox, what it waits for and
who holds its lease.

Plain data from the store, no output and no SDK: the command bodies (``commands.sessions``, ``commands.bundle``)
and the TUI's sessions screen read a session the same way. Importing it imports no store model either (pydantic):
``listing`` reads the session list straight from SQLite with the same rules, from the plain values.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpcli.state.store import RoundRecord, SessionRecord

LEASE_FIELDS = frozenset(
    {"version", "lease_host", "lease_pid", "lease_acquired", "lease_expires", "lease_owner", "lease_locked"}
)
"""Who drives a session, and the claim counter: this store's bookkeeping, never exported, shown as "held by".
(The session's ``lease_*`` fields and ``version``; tests/test_sessions_list.py checks the two agree.)"""


def gone_drivers(store: Any, records: Sequence[SessionRecord]) -> frozenset[str]:
    """The ids of the ``running`` sessions among ``records`` whose driver the store can tell is gone before its lease
    runs out — on PostgreSQL, the session lock its connection held was released (the process or its host died) —
    in one query; ``is_interrupted`` and ``shown_status`` take it."""
    running = [r for r in records if r.status == "running" and r.lease_locked]
    return frozenset(store.gone_holders(running)) if running else frozenset()


def is_interrupted(record: SessionRecord, gone: Collection[str] = ()) -> bool:
    """A ``running`` session whose driver is gone — killed, crashed, or its lease ran out — is *interrupted*:
    nobody is driving it, and ``resume`` continues it (sending its last answered round again). Listings show
    it as ``interrupted`` and the inbox (``sessions list --waiting``, the TUI) includes it. A driver is gone when
    its lease ran out, when its process is gone from this host, or (``gone``, from ``gone_drivers``) when the
    store saw its lock released."""
    if record.id in gone and record.status == "running":
        return True
    return driver_gone(record.status, record.lease_host, record.lease_pid, record.lease_expires, record.lease_acquired)


def driver_gone(
    status: str, host: str | None, pid: int | None, expires: datetime | None, acquired: datetime | None = None
) -> bool:
    """``is_interrupted`` from a session's plain values (``listing`` has no record)."""
    if status != "running":
        return False
    if host is None or expires is None or expires < datetime.now(UTC):
        return True
    import socket

    from mcpcli.state.keeper import alive  # only for a live lease of this host: keeper costs a listing ~50 ms

    return host == socket.gethostname() and not alive(pid, since=acquired)


def shown_status(record: SessionRecord, gone: Collection[str] = ()) -> str:
    """The status as listings show it: the stored one, or ``interrupted`` (see ``is_interrupted``)."""
    return "interrupted" if is_interrupted(record, gone) else record.status


def inbox(store: Any, *, server: str | None = None, limit: int | None = None) -> list[SessionRecord]:
    """The sessions somebody should pick up, newest first: waiting ones and interrupted ones."""
    waiting = store.list(status="waiting", server=server, limit=limit)
    running = store.list(status="running", server=server)
    gone = gone_drivers(store, running)
    stalled = [r for r in running if is_interrupted(r, gone)]
    merged = sorted([*waiting, *stalled], key=lambda r: (r.updated, r.id), reverse=True)
    return merged if limit is None else merged[:limit]


# --- what a session waits for ----------------------------------------------------------------------------------------


def describe_request(wire: Any) -> dict[str, Any]:
    """What one stored input request asks for, in a few words (for the inbox and the timeline)."""
    method = wire.get("method") if isinstance(wire, Mapping) else None
    params = wire.get("params") if isinstance(wire, Mapping) else None
    params = params if isinstance(params, Mapping) else {}
    if method == "elicitation/create":
        message = str(params.get("message", ""))
        if params.get("mode", "form") == "url":
            return {"kind": "url", "message": message, "url": str(params.get("url", ""))}
        schema = params.get("requestedSchema")
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        fields = [str(name) for name in properties] if isinstance(properties, Mapping) else []
        return {"kind": "form", "message": message, "fields": fields}
    if method == "sampling/createMessage":
        return {"kind": "sampling", "message": "LLM completion (sampling)"}
    if method == "roots/list":
        return {"kind": "roots", "message": "roots (the client's workspace folders)"}
    return {"kind": "other", "message": str(method)}


def pending_requests(last: RoundRecord | None) -> dict[str, dict[str, Any]]:
    """The requests of the last round still unanswered (all of them, or those a round answered in part left open):
    what the session waits for."""
    return {} if last is None else {key: describe_request(wire) for key, wire in last.still_open().items()}


def lease_holder(record: SessionRecord) -> dict[str, Any] | None:
    """Who drives the session, if anyone: ``{"holder", "since", "expires", "active"}`` (expired: gone)."""
    return holder_of(record.lease_host, record.lease_pid, record.lease_acquired, record.lease_expires)


def holder_of(
    host: str | None, pid: int | None, acquired: datetime | None, expires: datetime | None
) -> dict[str, Any] | None:
    """``lease_holder`` from a session's plain values (``listing`` has no record)."""
    if host is None or expires is None:
        return None
    return {
        "holder": f"pid {pid} on {host}",
        "since": None if acquired is None else acquired.isoformat(),
        "expires": expires.isoformat(),
        "active": expires > datetime.now(UTC),
    }
