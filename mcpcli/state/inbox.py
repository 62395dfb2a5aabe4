"""Where a stored session stands: interrupted or not, the status listings show, the inbox, what it waits for and
who holds its lease.

Plain data from the store, no output and no SDK: the command bodies (``commands.sessions``, ``commands.bundle``)
and the TUI's sessions screen read a session the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpcli.state.store import RoundRecord, SessionRecord, utcnow

LEASE_FIELDS = frozenset({"version", *(name for name in SessionRecord.model_fields if name.startswith("lease_"))})
"""Who drives a session, and the claim counter: this store's bookkeeping, never exported, shown as "held by"."""


def is_interrupted(record: SessionRecord) -> bool:
    """A ``running`` session whose driver is gone — killed, crashed, or its lease ran out — is *interrupted*:
    nobody is driving it, and ``resume`` continues it (sending its last answered round again). Listings show
    it as ``interrupted`` and the inbox (``sessions list --waiting``, the TUI) includes it."""
    if record.status != "running":
        return False
    if record.lease_host is None or record.lease_expires is None or record.lease_expires < utcnow():
        return True
    import socket

    from mcpcli.state.keeper import _alive

    return record.lease_host == socket.gethostname() and not _alive(record.lease_pid)


def shown_status(record: SessionRecord) -> str:
    """The status as listings show it: the stored one, or ``interrupted`` (see ``is_interrupted``)."""
    return "interrupted" if is_interrupted(record) else record.status


def inbox(store: Any, *, server: str | None = None, limit: int | None = None) -> list[SessionRecord]:
    """The sessions somebody should pick up, newest first: waiting ones and interrupted ones."""
    waiting = store.list(status="waiting", server=server, limit=limit)
    stalled = [r for r in store.list(status="running", server=server) if is_interrupted(r)]
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
    """The requests of the last round, when it is still unanswered: what the session waits for."""
    if last is None or last.answers is not None:
        return {}
    return {key: describe_request(wire) for key, wire in last.requests.items()}


def lease_holder(record: SessionRecord) -> dict[str, Any] | None:
    """Who drives the session, if anyone: ``{"holder", "since", "expires", "active"}`` (expired: gone)."""
    host, pid, expires = record.lease_host, record.lease_pid, record.lease_expires
    if host is None or expires is None:
        return None
    return {
        "holder": f"pid {pid} on {host}",
        "since": None if record.lease_acquired is None else record.lease_acquired.isoformat(),
        "expires": expires.isoformat(),
        "active": expires > utcnow(),
    }
