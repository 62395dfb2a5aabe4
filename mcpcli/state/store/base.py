"""What a session store keeps, and the interface every store engine implements.

The records here are the whole contract between the flow and a store: the
SQLite engine (default) and the PostgreSQL engine (shared) store exactly these
fields and pass the same test suite. Nothing here imports an engine, ``mcp`` or
``textual``.
"""

from __future__ import annotations

import builtins
import math
import re
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable
from urllib.parse import parse_qs, urlsplit

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from mcpcli.errors import NextStep, SessionError

if TYPE_CHECKING:
    from mcpcli.state.store.watch import StoreWatch

Status = Literal["waiting", "running", "done", "failed", "expired"]
"""Where a session stands: waiting for answers, running, or finished one way or another."""

Method = Literal["tools/call", "prompts/get", "resources/read"]
"""The MCP request a session drives."""

STATUSES: tuple[str, ...] = get_args(Status)
METHODS: tuple[str, ...] = get_args(Method)

MIN_PREFIX = 4
"""The shortest id prefix ``Store.get`` accepts; shorter ones would match too much."""

MAX_CANDIDATES = 5
"""How many candidates an ambiguous-prefix error names."""

TRACE_MAX_LINES = 2000
"""How many trace lines a session keeps; past that, one truncation marker and nothing more."""

TRACE_TRUNCATED = '{"event":"truncated","note":"the trace was cut here: a session keeps at most 2000 lines"}'
"""The line stored after the last kept one when a session's trace outgrows ``TRACE_MAX_LINES``."""


_TASK_FIELDS: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "status": (str,),
    "generation": (str,),
    "message": (str, type(None)),
    "created_at": (str, type(None)),
    "ttl_ms": (int, type(None)),
    "poll_ms": (int, type(None)),
    "last_updated_at": (str, type(None)),
    "polls": (int,),
    "pushed": (int,),
    "delivered": (list,),
    "timeline": (list,),
}


_KIND_WORDS = {str: "text", int: "a whole number", list: "a list"}


def task_problem(task: Any) -> str | None:
    """What is wrong with a session's ``task`` JSON (``tasks.TaskState``), or None: it comes back from a store
    another machine writes, or from a bundle, so it is checked before anything reads it."""
    if not isinstance(task, dict):
        return "not an object"
    for name in ("id", "status"):
        if name not in task:
            return f"no {name}"
    for name, kinds in _TASK_FIELDS.items():
        value = task.get(name)
        if name in task and (not isinstance(value, kinds) or isinstance(value, bool)):
            return f"{name} is not {_KIND_WORDS[kinds[0]]}"
    if not all(isinstance(key, str) for key in task.get("delivered", ())):
        return "delivered is not a list of request keys"
    if not all(isinstance(change, dict) for change in task.get("timeline", ())):
        return "timeline is not a list of objects"
    return None


def new_session_id() -> str:
    """A fresh session id: 12 lowercase hex characters (48 random bits)."""
    return secrets.token_hex(6)


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC — the only kind of time a store keeps."""
    return datetime.now(UTC)


def _to_utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


class SessionRecord(BaseModel):
    """One flow that met an input request: what was asked of which server, and how it ended."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=new_session_id, pattern=r"^[0-9a-f]{12}$")
    """12 lowercase hex characters from ``new_session_id()``; users may type any unique prefix of 4 or more."""
    server: str
    """The server target as the user gave it: URL, config name, ``demo``, or command line."""
    method: Method
    """The MCP request being driven."""
    name: str
    """The tool name, prompt name, or resource URI."""
    arguments: dict[str, Any]
    """The arguments exactly as first sent; every retry and restart sends these again."""
    protocol_version: str | None
    """The protocol version negotiated with the server, once known."""
    status: Status
    """Where the session stands; ``waiting`` sessions are the ones ``resume`` is for."""
    round: int = 0
    """The number of input-required rounds recorded so far (the index of the last one)."""
    created: AwareDatetime = Field(default_factory=utcnow)
    """When the session was first saved, in UTC."""
    updated: AwareDatetime = Field(default_factory=utcnow)
    """When anything about the session last changed, in UTC; listings are ordered by it, newest first."""
    result: dict[str, Any] | None = None
    """The final MCP result as JSON, once the flow finished; ``resume`` prints it again."""
    exit_code: int | None = Field(default=None, ge=0, le=255)
    """What the flow exited with when it finished; ``resume`` of a finished session exits with it."""
    error: str | None = None
    """The last error message, for ``failed`` and ``expired`` sessions."""
    version: int = 0
    """Bumped by every ``claim``: a driver's writes succeed only while it still equals its lease's version."""
    lease_host: str | None = None
    """The host name of the process that holds the lease (drives the session now), if any."""
    lease_pid: int | None = None
    """The process id of the lease holder, on ``lease_host``."""
    lease_acquired: AwareDatetime | None = None
    """When the holder claimed the session, in UTC ("driven … since")."""
    lease_expires: AwareDatetime | None = None
    """When the lease runs out unless heart-beaten, in UTC; after that anyone may claim the session."""
    identity: str | None = None
    """Who the flow ran as: a non-secret description of the credentials used (auth kind, issuer/client, token
    fingerprint); a resume under another identity is told so."""
    connection: dict[str, Any] | None = None
    """How the flow was connected (``connection_settings``): the protocol asked for, the target's kind and
    settings, the names (never the values) of its headers and environment. ``resume`` reconnects the same way
    unless told otherwise; ``None`` for sessions stored before schema 4."""
    lease_owner: str | None = None
    """Which driver holds the lease: its host, pid and a random token of its own (``new_lease_owner``), so two
    flows of one process are two drivers. The store's checks compare it; people are shown host and pid."""

    task: dict[str, Any] | None = None
    """The server-side task the call became (``mcpcli.net.tasks.TaskState``, JSON): its id, generation, last status
    and message, poll interval and position, the request keys whose answers the server acknowledged, and its
    timeline. ``None`` for a flow that is no task (and for sessions stored before schema 6)."""
    lease_locked: bool = False
    """Whether the holder also holds the session's lock in the database (PostgreSQL: a session-level advisory lock
    on its connection, which the server drops the moment that connection does): then the store can tell a live
    holder from a gone one at once, from any host, without waiting for the lease to run out."""
    owner: str | None = None
    """Who started the flow (``[user] name``, default ``user@host``): the team inbox's "who asked", and the one whose
    driver sends the answers. ``None`` for sessions stored before schema 8."""
    routing: dict[str, Any] | None = None
    """Whom the flow asks and on what terms (``--ask``, ``[[inbox.routes]]``): ``{"ask": [names], "no_self_answer":
    bool, "confirm": bool}``; ``None``: anyone may answer, the owner included."""
    answered_by: str | None = None
    """Who answered the waiting round with ``mcpcli answer`` (not the owner's driver): while the session is still
    ``waiting`` it is shown as ``answered``, and its owner's driver sends those answers. Cleared by the next round."""
    trace_context: dict[str, str] | None = None
    """The flow's OpenTelemetry trace (``mcpcli.telemetry``), as W3C ``traceparent`` values: ``root``, the span of the
    run that started it, and ``parked``, the span of the last run that left it waiting. A resume continues ``root``'s
    trace, linked to ``parked``, on any host. Ids only, nothing secret; ``None`` when no run of it was traced."""

    _utc = field_validator("created", "updated", "lease_acquired", "lease_expires")(_to_utc)

    @model_validator(mode="after")
    def _updated_defaults_to_created(self) -> SessionRecord:
        # Two default factories would give two slightly different instants.
        if "updated" not in self.model_fields_set:
            self.updated = self.created
        return self


class RoundRecord(BaseModel):
    """One input-required round of a session: what the server asked, and what was answered."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    """The session this round belongs to."""
    index: int
    """1-based, and increasing across restarts of the flow, so rounds never collide."""
    attempt: int
    """1 for the first run of the flow, +1 each time the flow restarted after a stale ``request_state``."""
    requests: dict[str, Any]
    """The input requests as received (JSON, key → request); ``{}`` for a state-only round."""
    request_state: str | None
    """The opaque state as received; never parsed, sent back byte for byte."""
    answers: dict[str, Any] | None = None
    """The input responses as sent (JSON, key → response); ``None`` until answered. While ``answered`` is
    ``None``, the answers given so far to a round that still waits for the rest (``partial``)."""
    received: AwareDatetime
    """When the requests arrived, in UTC."""
    answered: AwareDatetime | None = None
    """When the answers to every request were committed (always before the retry is sent), in UTC."""
    answered_by: str | None = None
    """Who gave the answers with ``mcpcli answer``, apart from the flow's driver; ``None``: the owner's own run."""
    answered_at: AwareDatetime | None = None
    """When ``answered_by`` wrote them, in UTC."""

    _utc = field_validator("received", "answered", "answered_at")(_to_utc)

    @property
    def complete(self) -> bool:
        """Whether every request of the round is answered (and the answers may be sent)."""
        return self.answers is not None and self.answered is not None

    @property
    def partial(self) -> dict[str, Any]:
        """The answers kept for a round that still waits for some (none once it is complete)."""
        return {} if self.complete else dict(self.answers or {})

    def still_open(self) -> dict[str, Any]:
        """The requests that wait for an answer: none once the round is complete."""
        return {} if self.complete else {k: v for k, v in self.requests.items() if k not in (self.answers or {})}


class Lease(BaseModel):
    """The right to drive one session: proof for the store that no other process took the session over since."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: str
    """The session this lease is on."""
    version: int
    """The session's version when claimed; a write under this lease succeeds only while they are still equal."""
    host: str
    """The host name of the holder."""
    pid: int
    """The process id of the holder."""
    owner: str
    """The holder itself: one flow (``new_lease_owner``), not its process — what ``claim`` calls "already mine"."""
    acquired: AwareDatetime
    """When it was claimed, in UTC."""
    expires: AwareDatetime
    """When it runs out unless heart-beaten, in UTC."""

    _utc = field_validator("acquired", "expires")(_to_utc)


def new_lease_owner(host: str, pid: int) -> str:
    """A lease owner for one flow: its host and pid (for people reading the store) and 64 random bits (so a
    second flow of the same process is a second driver, never "the same one again")."""
    return f"{host}:{pid}:{secrets.token_hex(8)}"


def lease_columns(lease: Lease) -> dict[str, Any]:
    """The session fields a lease sets, by name (the columns are named after them)."""
    return {
        "version": lease.version,
        "lease_host": lease.host,
        "lease_pid": lease.pid,
        "lease_acquired": lease.acquired,
        "lease_expires": lease.expires,
        "lease_owner": lease.owner,
    }


Liveness = Literal["alive", "unknown"]
"""What the store can tell of a lease holder: ``alive`` (it holds the session's lock in the database, or it is a
running process on this host), or ``unknown`` (on another host, with only its lease to go by)."""


class SessionBusy(SessionError):
    """Another driver holds a live lease on the session; ``resume --wait`` waits for it, ``--steal`` takes it over."""

    default_title = "Session busy"

    def __init__(
        self,
        session_id: str,
        *,
        host: str,
        pid: int,
        since: datetime,
        expires: datetime | None = None,
        holder: Liveness = "unknown",
        now: datetime | None = None,
    ) -> None:
        """``holder`` says whether the store can tell the holder is alive; ``now`` is the store's clock at the refusal,
        from which the message counts when the lease runs out. Its next step is ``--steal``."""
        self.session_id: str = session_id
        self.host = host
        """The holder's host name."""
        self.pid = pid
        """The holder's process id."""
        self.since = since.astimezone(UTC)
        """When the holder claimed the session, in UTC."""
        self.expires = None if expires is None else expires.astimezone(UTC)
        """When the lease runs out unless the holder renews it, in UTC."""
        self.holder: Liveness = holder
        """Whether the store can tell that the holder is alive."""
        self.now = (now or utcnow()).astimezone(UTC)
        """When the store refused (its clock): "free in N s" counts from here."""
        super().__init__(self._says(), next_step=NextStep("steal", session_id))

    def with_holder(self, holder: Liveness) -> SessionBusy:
        """The same refusal, knowing more about the holder (the keeper checks a pid on this host)."""
        return SessionBusy(
            self.session_id,
            host=self.host,
            pid=self.pid,
            since=self.since,
            expires=self.expires,
            holder=holder,
            now=self.now,
        )

    def _says(self) -> str:
        said = (
            f"Session {self.session_id} is being driven by pid {self.pid} on {self.host}"
            f" since {self.since:%Y-%m-%d %H:%M:%S} UTC."
        )
        if self.holder == "alive":
            return f"{said} That driver is alive; the session is free as soon as it stops (at once if it dies)."
        left = None if self.expires is None else max(0, math.ceil((self.expires - self.now).total_seconds()))
        when = "when its lease runs out" if left is None else f"in {left} s"
        return f"{said} Free {when}, or at once if that process is gone (this store cannot tell from here)."


class SessionChanged(SessionError):
    """The session changed between this process reading it and claiming it (another driver was faster).

    Nothing was written; ``session`` is the session as it is now, to decide again from.
    """

    default_title = "Session changed"

    def __init__(self, session: SessionRecord) -> None:
        self.session = session
        super().__init__(f"Session {session.id} changed while this process was claiming it.")


class LeaseLost(SessionError):
    """The session was claimed by another driver after this one; its write was not made."""

    default_title = "Session taken over"

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(
            f"Another driver took over session {session_id}; this process stopped.",
            next_step=NextStep("look", session_id),
        )


class AlreadyAnswered(SessionError):
    """Somebody answered the round first: one answer wins a round, and the loser is told whose."""

    default_title = "Already answered"

    def __init__(self, session_id: str, index: int, by: str, at: datetime | None) -> None:
        when = "" if at is None else f" at {at.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S')} UTC"
        super().__init__(f"Round {index} of session {session_id} was already answered by {by}{when}.", hint=None)
        self.by, self.at = by, at


class NotWaiting(SessionError):
    """The round to answer is no longer the session's open one: it was sent, or the flow moved on or finished."""

    default_title = "Not waiting"

    def __init__(self, session: SessionRecord, index: int) -> None:
        super().__init__(
            f"Session {session.id} no longer waits on round {index}: it is {session.status}, at round {session.round}.",
            hint=None,
        )
        self.session = session


def url_has_password(url: str) -> bool:
    """Whether a store URL carries a password (in its user part or as a ``password=`` parameter)."""
    try:
        parts = urlsplit(url)
        return bool(parts.password) or bool(parse_qs(parts.query).get("password"))
    except ValueError:
        return ":" in url.partition("//")[2].partition("/")[0].rpartition("@")[0] or "password=" in url.lower()


def redact_url(url: str) -> str:
    """The URL as messages may show it: any password replaced by ``…``, everything else kept."""
    url = re.sub(r"(//[^/?#@:]*):[^/?#]*@", r"\1:…@", url)
    return re.sub(r"(?i)([?&]password=)[^&#]*", r"\1…", url)


@runtime_checkable
class Store(Protocol):
    """A session store. Methods are synchronous and fast; async callers run them in a thread.

    Every write is one transaction, committed before the method returns.
    Unknown sessions raise ``SessionError``; an unusable store raises ``StoreError``.
    """

    def create(self, session: SessionRecord) -> None:
        """Save a new session."""
        ...

    def check_writable(self) -> None:
        """``StoreError`` (naming the store and the fix) now when a write would fail later; writes nothing.

        A flow checks this before its first request, so a broken store never surfaces after the server acted.
        """
        ...

    def get(self, id_or_prefix: str) -> SessionRecord:
        """The session with this exact id or unique prefix (at least 4 characters)."""
        ...

    def list(
        self, *, status: str | None = None, server: str | None = None, limit: int | None = None
    ) -> builtins.list[SessionRecord]:
        """Sessions, most recently updated first, without their rounds."""
        ...

    def add_round(
        self,
        session_id: str,
        *,
        attempt: int,
        requests: dict[str, Any],
        request_state: str | None,
        answers: dict[str, Any] | None = None,
        new_session: SessionRecord | None = None,
        lease: Lease | None = None,
        trace: Sequence[str] = (),
    ) -> RoundRecord:
        """Append a round (index = last + 1), bump the session's round count, and mark it ``waiting``.

        With ``answers`` the round is saved already answered (status ``running``); with ``new_session`` that
        session is created first (holding ``lease``, when one is given). Either way it is one transaction —
        one durable write per round. With ``lease``, nothing is written and ``LeaseLost`` is raised once
        another driver has claimed the session. ``trace`` lines are appended in the same transaction.
        """
        ...

    def record_answers(
        self,
        session_id: str,
        index: int,
        answers: dict[str, Any],
        *,
        lease: Lease | None = None,
        trace: Sequence[str] = (),
        partial: bool = False,
    ) -> None:
        """Save the answers to a round and mark the session ``running``; durable when this returns.

        ``partial``: the answers given so far to a round that still waits for others (a sampling request nobody
        could answer beside a form that was): kept, the round left unanswered and the session ``waiting``.

        With ``lease``: ``LeaseLost`` (and nothing written) once another driver has claimed the session.
        ``trace`` lines are appended in the same transaction.
        """
        ...

    def answer_round(
        self,
        session_id: str,
        index: int,
        answers: dict[str, Any],
        *,
        by: str,
        complete: bool,
        trace: Sequence[str] = (),
    ) -> RoundRecord:
        """Answers given apart from driving (``mcpcli answer``): written to the waiting round in one conditional
        write, with who gave them and when — no lease, nothing sent. ``complete``: every request is answered (else
        what is left, a sampling request, is the owner's driver's to answer).

        The round must be the session's last and the session ``waiting``, else ``NotWaiting``; somebody answered it
        first (with ``answer``), ``AlreadyAnswered`` names them. Answers kept from a partial round are merged under.
        """
        ...

    def reopen_round(self, session_id: str, index: int, *, lease: Lease | None = None) -> None:
        """Forget the answers somebody else gave a round (its owner would not send them): it waits again."""
        ...

    def rounds(self, session_id: str) -> builtins.list[RoundRecord]:
        """All rounds of a session, by index."""
        ...

    def last_round(self, session_id: str) -> RoundRecord | None:
        """The round with the highest index, or ``None`` before the first one."""
        ...

    def update(
        self,
        session_id: str,
        *,
        status: Status | None = None,
        protocol_version: str | None = None,
        result: dict[str, Any] | None = None,
        exit_code: int | None = None,
        error: str | None = None,
        identity: str | None = None,
        connection: dict[str, Any] | None = None,
        task: dict[str, Any] | None = None,
        trace_context: dict[str, str] | None = None,
        lease: Lease | None = None,
        release: bool = False,
        trace: Sequence[str] = (),
    ) -> SessionRecord:
        """Change the given fields (``None`` leaves a field as it is), bump ``updated``, return the session.

        With ``lease``: ``LeaseLost`` (and nothing written) once another driver has claimed the session.
        With ``release``: also give the lease back, in the same transaction (a flow's last write).
        ``trace`` lines are appended in the same transaction.
        """
        ...

    def trace_lines(self, session_id: str) -> builtins.list[str]:
        """The trace lines a session recorded (redacted NDJSON, oldest first; at most ``TRACE_MAX_LINES`` and
        the truncation marker)."""
        ...

    def delete(self, ids: Sequence[str]) -> int:
        """Delete sessions (exact ids) with their rounds and traces; return how many existed."""
        ...

    def claim(
        self,
        session_id: str,
        *,
        host: str,
        pid: int,
        ttl: float,
        owner: str | None = None,
        steal: bool = False,
        seen: SessionRecord | None = None,
    ) -> Lease:
        """Take the lease on a session (exact id) for ``ttl`` seconds, and bump its version.

        One conditional write: it succeeds when nobody holds a live lease, when the lease has expired, when
        ``owner`` holds it already, or with ``steal``. Otherwise ``SessionBusy`` names the holder (host, pid).
        Without ``owner`` the claim is a new driver's (``new_lease_owner(host, pid)``): "already mine" is never
        guessed from the host and pid, which two flows of one process share.
        With ``seen`` (the session as the caller read it) it also succeeds only while the session's status,
        round and version are still what was read; otherwise ``SessionChanged`` carries the session as it is
        now, and nothing is written. A caller that decides what to send from what it read passes it.
        """
        ...

    def heartbeat(self, lease: Lease, ttl: float) -> Lease:
        """Extend a held lease (same version, same owner) to ``ttl`` seconds from now; ``LeaseLost`` once another
        driver has claimed it, or it was given back."""
        ...

    def release(self, lease: Lease) -> None:
        """Give the lease up; nothing happens when it was already lost."""
        ...

    def gone_holders(self, sessions: Sequence[SessionRecord]) -> builtins.set[str]:
        """The ids of ``sessions`` whose lease holder the store can tell is gone though the lease has not run out (on
        PostgreSQL: the session lock it held went with its connection). Empty for a store that cannot tell."""
        ...

    def import_session(self, session: SessionRecord, rounds: Sequence[RoundRecord]) -> None:
        """Add a session with its rounds in one transaction, unleased (its version kept), without a trace;
        ``StoreError`` if the id exists already."""
        ...

    def prune(self, *, older_than: datetime, statuses: Sequence[Status]) -> int:
        """Delete the sessions (with their rounds and traces) in one of ``statuses`` not updated since ``older_than``.

        Sessions whose lease is live are kept: somebody is driving them right now. Returns how many went.
        """
        ...

    def watch(self) -> StoreWatch:
        """A watcher of this store's sessions (``store.watch``): the team inbox's live view, a driver waiting for an
        answer. Its own connection; close it."""
        ...

    def close(self) -> None:
        """Release the connection; closing twice is harmless."""
        ...
