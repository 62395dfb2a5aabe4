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
    from mcpcli.settings.config import InboxRoute, Settings
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
    """The status as listings show it: the stored one, ``interrupted`` (see ``is_interrupted``), or ``answered`` (a
    waiting round answered with ``mcpcli answer``, for its owner's run to send)."""
    if is_interrupted(record, gone):
        return "interrupted"
    return "answered" if record.status == "waiting" and record.answered_by else record.status


def inbox_status(record: SessionRecord, gone: Collection[str] = ()) -> str:
    """The status the team inbox shows: ``answered`` while a waiting flow's round holds somebody's answers for its
    owner's run to send (``answered_by``), else ``shown_status``."""
    if record.status == "waiting" and record.answered_by:
        return "answered"
    return shown_status(record, gone)


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


# --- the team inbox: who owns a flow, whom it asks, who may answer ----------------------------------------------------

USER_ENV = "MCPCLI_USER"
"""Who you are for this shell (wins over ``[user] name``)."""


def whoami(settings: Settings, environ: Mapping[str, str] | None = None) -> str:
    """Your name to the team inbox: ``MCPCLI_USER``, else ``[user] name``, else ``user@host``."""
    import os

    env = os.environ if environ is None else environ
    if given := env.get(USER_ENV, "").strip():
        return given
    if settings.user.name:
        return settings.user.name
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError, AttributeError, ImportError):  # no name for this uid (a container's), no USERNAME
        user = f"uid{os.getuid()}" if hasattr(os, "getuid") else "user"
    return f"{user}@{socket.gethostname()}"


def same_person(a: str, b: str) -> bool:
    """Whether two names are one person: equal, or equal before the ``@`` when one of them names no host."""
    if a == b:
        return True
    return ("@" not in a or "@" not in b) and a.split("@", 1)[0] == b.split("@", 1)[0]


def is_me(name: str, me: str, groups: Mapping[str, Sequence[str]]) -> bool:
    """Whether ``name`` (a person or a group of ``[inbox.groups]``) includes me."""
    return same_person(name, me) or any(same_person(member, me) for member in groups.get(name, ()))


def routing_for(
    server: str, name: str, *, ask: Sequence[str], no_self_answer: bool, routes: Sequence[InboxRoute]
) -> dict[str, Any] | None:
    """Whom a flow asks and on what terms: the run's ``--ask`` and ``--no-self-answer``, and every ``[[inbox.routes]]``
    entry that matches its server and call; ``None`` when nothing says (its owner answers, or anyone)."""
    asked, forbid, confirm = list(ask), no_self_answer, False
    for route in routes:
        if route.matches(server, name):
            asked += route.ask
            forbid = forbid or route.no_self_answer
            confirm = confirm or route.confirm
    if not asked and not forbid and not confirm:
        return None
    return {"ask": list(dict.fromkeys(asked)), "no_self_answer": forbid, "confirm": confirm}


def asked(record: SessionRecord) -> list[str]:
    """The people and groups a flow asks (empty: its owner)."""
    return [str(n) for n in (record.routing or {}).get("ask", []) if isinstance(n, str)]


def waits_for(record: SessionRecord, me: str, groups: Mapping[str, Sequence[str]]) -> bool:
    """Whether a waiting flow is mine to answer: it asks me or a group of mine, or it asks nobody and it is mine."""
    names = asked(record)
    if not names:
        return record.owner is None or same_person(record.owner, me)
    if (record.routing or {}).get("no_self_answer") and record.owner and same_person(record.owner, me):
        return False
    return any(is_me(name, me, groups) for name in names)


def refusal(record: SessionRecord, me: str, groups: Mapping[str, Sequence[str]]) -> str | None:
    """Why ``me`` may not answer this flow (one line), or ``None``: its owner when the route forbids self-answers;
    someone it does not ask, when it asks someone."""
    routing = record.routing or {}
    mine = record.owner is not None and same_person(record.owner, me)
    if mine and routing.get("no_self_answer"):
        others = ", ".join(asked(record)) or "someone else"
        return f"You started this flow, and it must be answered by someone else ({others})."
    names = asked(record)
    if names and not mine and not any(is_me(name, me, groups) for name in names):
        return f"This flow asks {', '.join(names)}; you are {me}."
    return None


def person_keys(requests: Mapping[str, Any]) -> list[str]:
    """The requests of a round a person answers (forms and URL consents); sampling and roots are the owner's
    driver's to answer, with its own LLM and roots."""
    return [key for key, wire in requests.items() if describe_request(wire)["kind"] in ("form", "url")]


def asks_of(pending: Mapping[str, Any]) -> list[dict[str, str]]:
    """What a flow asks, as the inbox and its announcements name it: each request's key, kind and title
    (titles sanitized; never a value)."""
    from mcpcli.display import sanitize

    return [
        {
            "key": str(key),
            "kind": (info := describe_request(wire))["kind"],
            "title": sanitize(info["message"]),
        }
        for key, wire in pending.items()
    ]


def public_server(server: str) -> str:
    """A session's server as an announcement may name it: a URL without credentials, query or fragment; a command
    line by its first word. Nothing that grants access leaves the machine."""
    from urllib.parse import urlsplit, urlunsplit

    if server.startswith(("http://", "https://")):
        parts = urlsplit(server)
        host = parts.hostname or ""
        netloc = host if parts.port is None else f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    words = server.split()
    return words[0].rsplit("/", 1)[-1] if words else server


def announcement(
    event: str,
    record: SessionRecord,
    pending: Mapping[str, Any] | None = None,
    *,
    waiting_since: datetime | None = None,
    command: str | None = None,
) -> dict[str, Any]:
    """An announcement of a flow (``event``: ``waiting``, ``answered``, ``done``, ``failed``): ids, titles and the
    command that acts on it — never an answer, a secret, ``requestState``, a header or a token. ``command`` is worded
    by the caller (the core words no command)."""
    from mcpcli.display import sanitize

    def short(text: str, limit: int = 200) -> str:
        line = " ".join(sanitize(text).split())
        return line if len(line) <= limit else line[: limit - 1] + "…"

    asks = [{**ask, "key": short(ask["key"], 100), "title": short(ask["title"])} for ask in asks_of(pending or {})]
    names = asked(record)
    server = short(public_server(record.server), 100)
    call = f"{record.method} {short(record.name, 100)}"
    who = ", ".join(names) if names else (record.owner or "its owner")
    first = asks[0]["title"] if asks else ""
    lines = {
        "waiting": f"{record.id} waits for {who}: {call} on {server}" + (f" asks: {first}" if first else ""),
        "answered": f"{record.id} was answered by {record.answered_by or 'someone'}: {call} on {server}",
        "done": f"{record.id} finished: {call} on {server}",
        "failed": f"{record.id} failed: {call} on {server}",
    }
    text = lines.get(event, f"{record.id} {event}: {call} on {server}")
    return {
        "event": event,
        "session_id": record.id,
        "server": server,
        "call": call,
        "owner": record.owner,
        "ask": names,
        "asks": asks,
        "answered_by": record.answered_by,
        "waiting_since": None if waiting_since is None else waiting_since.astimezone(UTC).isoformat(),
        "time": datetime.now(UTC).isoformat(),
        "command": command,
        "text": text + (f" — {command}" if command else ""),
    }
