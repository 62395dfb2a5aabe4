"""``mcpcli sessions …``: stored flows as tables or JSON. Never imports the SDK (it must start fast)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcli.store import SessionRecord

if TYPE_CHECKING:
    from mcpcli.runtime import Runtime

LIST_FIELDS = ("id", "status", "server", "method", "name", "round", "created", "updated")


def session_json(record: SessionRecord) -> dict[str, Any]:
    data: dict[str, Any] = record.model_dump(mode="json", include=set(LIST_FIELDS) | {"protocol_version", "exit_code"})
    return data


def list_sessions(rt: Runtime, status: str | None, limit: int) -> int:
    records = rt.store.list(status=status, limit=limit)
    if rt.json:
        rt.out.json([session_json(r) for r in records])
        return 0
    rows = [
        (r.id, r.status, r.server, r.method, r.name, r.round, r.updated.strftime("%Y-%m-%d %H:%M:%S")) for r in records
    ]
    columns = ("id", "status", "server", "method", "name", "round", "updated (UTC)")
    rt.out.table("Sessions", columns, rows, "No sessions yet. Flows that need input are saved here.")
    return 0
