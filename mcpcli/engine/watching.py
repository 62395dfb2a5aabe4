"""Watching a server: what it changes, as one ordered stream of events, whichever era it speaks.

2026-07-28 (SEP-2575): one ``subscriptions/listen`` request (the SDK's ``Client.listen``) whose response *is* the
stream; its first frame says which of the asked kinds the server honours; a stream that drops is not resumable.
Before it: ``resources/subscribe`` per URI and the ``notifications/resources/updated`` / ``…/list_changed``
notifications, on stdio or the HTTP GET stream; what is honoured is what the server's capabilities declare and
which subscriptions it accepted. ``watch`` chooses by the negotiated era; the consumer sees the same ``Change``s.

Every event passes one bounded, coalescing ``Backlog``: events are level triggers ("this changed, look again"),
so a flood of them is folded into the one already waiting for the same thing, and a change already shown within
``WINDOW`` waits out the window (folding more into it) — memory and output stay bounded whatever a server sends,
and what was folded or dropped is counted. A connection that ends or breaks is opened and listened to again
with ``Backoff`` (1 s doubling to 30 s, jittered); the consumer is told (``Change.reason``) so that it can read
again what it may have missed. No CLI wording here beyond plain sentences: the command renders.
"""

from __future__ import annotations

import contextlib
import random
import warnings
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpcli.display import short_id
from mcpcli.errors import McpcliError, ServerError, UsageError, lone

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import MessageHandlerFnT

Kind = Literal["resource_updated", "tools_list_changed", "prompts_list_changed", "resources_list_changed"]
LIST_KINDS: dict[str, Kind] = {
    "tools": "tools_list_changed",
    "prompts": "prompts_list_changed",
    "resources": "resources_list_changed",
}
"""A list the user may watch → the event that says it changed."""
_WIRE_KINDS: dict[str, Kind] = {
    "notifications/tools/list_changed": "tools_list_changed",
    "notifications/prompts/list_changed": "prompts_list_changed",
    "notifications/resources/list_changed": "resources_list_changed",
    "notifications/resources/updated": "resource_updated",
}

BACKLOG_LIMIT = 1024
"""Distinct changes (kind + URI) that may wait to be shown; past it a new one is dropped and counted."""
WINDOW = 0.2
"""Seconds within which the same change is shown at most once (more of it meanwhile is folded into one)."""
FIRST_DELAY = 1.0
MAX_DELAY = 30.0
"""Reconnect backoff: the first wait, doubling up to this."""
STEADY = 30.0
"""Seconds a connection must have lasted for the backoff to start again from ``FIRST_DELAY``."""
_WARNED_LIMIT = 64


@dataclass(frozen=True)
class Want:
    """What the user asked to watch: resource URIs and which lists."""

    uris: tuple[str, ...] = ()
    tools: bool = False
    prompts: bool = False
    resources: bool = False

    def or_every_list(self) -> Want:
        """Nothing named: every list (a user who types ``mcpcli watch`` wants to see what changes)."""
        if self.uris or self.tools or self.prompts or self.resources:
            return self
        return Want(tools=True, prompts=True, resources=True)

    def lists(self) -> list[str]:
        return [name for name in LIST_KINDS if getattr(self, name)]


def watched(uris: tuple[str, ...], uri: str) -> str | None:
    """Which of ``uris`` an update for ``uri`` is a change of: the URI itself, or the closest one of which it is a part
    (the spec lets a server name a sub-resource of a subscribed URI); None for a URI not watched. The update counts
    as a change of the watched URI and is shown as it: nothing the server names beyond what was asked is printed (a
    server may name 5,000 parts, or one of 10 KB), and a flood of parts folds like a flood of the URI itself."""
    if uri in uris:
        return uri
    parents = [want for want in uris if uri.startswith((want + "/", want + "#", want + "?"))]
    return max(parents, key=len) if parents else None


@dataclass(frozen=True)
class Honoured:
    """What the server agreed to deliver (a subset of a ``Want``)."""

    uris: tuple[str, ...] = ()
    tools: bool = False
    prompts: bool = False
    resources: bool = False
    why: dict[str, str] = field(default_factory=dict)
    """For what was not honoured, when the server said why (a refused ``resources/subscribe``)."""

    def nothing(self) -> bool:
        return not (self.uris or self.tools or self.prompts or self.resources)

    def missing(self, want: Want) -> list[str]:
        """What was asked and is not honoured, each as ``tools list`` / a URI (with the server's reason)."""
        out = [f"{name} list" for name in want.lists() if not getattr(self, name)]
        out += [uri + (f" ({self.why[uri]})" if uri in self.why else "") for uri in want.uris if uri not in self.uris]
        return out


@dataclass
class Change:
    """One thing the server changed, as the consumer sees it."""

    kind: Kind
    uri: str | None = None
    at: datetime = field(default_factory=lambda: datetime.now(UTC))
    folded: int = 0
    """How many more events of the same change were folded into this one (a flood, or while it waited)."""
    reason: str | None = None
    """None: the server said so. ``"reconnected"``: listened to again, so read again (an event may be lost)."""

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.kind, self.uri)


@dataclass
class Stats:
    """What one watch received and did with it."""

    received: int = 0
    """Events the server sent that were asked for."""
    shown: int = 0
    folded: int = 0
    dropped: int = 0
    ignored: int = 0
    """Events for something that was not asked for (a server must not send them)."""
    reconnects: int = 0


class Backlog:
    """The bounded queue between the server's events and the consumer; see the module docstring."""

    def __init__(self, stats: Stats, limit: int = BACKLOG_LIMIT, window: float = WINDOW) -> None:
        self._stats = stats
        self._limit = limit
        self._window = window
        self._pending: dict[tuple[str, str | None], Change] = {}
        self._shown_at: dict[tuple[str, str | None], float] = {}
        self._wake = anyio.Event()
        self.closed = False
        """No more changes are taken; ``get`` hands out what waits, then None."""

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    def put(self, change: Change) -> None:
        """Queue ``change``, folding it into a waiting one for the same thing; never blocks, never grows past the
        limit (a change that does not fit is counted as dropped). Once closed, nothing more is taken."""
        if self.closed:
            return
        waiting = self._pending.get(change.key)
        if waiting is not None:
            waiting.folded += 1 + change.folded
            self._stats.folded += 1 + change.folded
            if change.reason is not None:
                waiting.reason = change.reason
            return
        if len(self._pending) >= self._limit:
            self._stats.dropped += 1
            return
        self._pending[change.key] = change
        self._wake.set()

    async def get(self) -> Change | None:
        """The oldest waiting change whose window has passed (waiting for one); None once closed and drained."""
        while True:
            wake = self._wake
            now = anyio.current_time()
            soonest: float | None = None
            for key, change in self._pending.items():
                ready = self._shown_at.get(key, -self._window) + self._window
                if ready <= now:
                    del self._pending[key]
                    self._shown_at[key] = now
                    if len(self._shown_at) > 2 * self._limit:  # forget what is out of its window: bounded
                        self._shown_at = {k: v for k, v in self._shown_at.items() if v + self._window > now}
                    return change
                soonest = ready if soonest is None else min(soonest, ready)
            if soonest is None and self.closed:
                return None
            with anyio.move_on_after(None if soonest is None else soonest - now):
                await wake.wait()
            if self._wake is wake and wake.is_set():
                self._wake = anyio.Event()


class Backoff:
    """Seconds to wait before listening again: 1 s doubling to 30 s, each jittered ±25 % (many clients of one
    restarted server do not all come back at once)."""

    def __init__(self, first: float = FIRST_DELAY, cap: float = MAX_DELAY, rng: Callable[[], float] = random.random):
        self._first = first
        self._cap = cap
        self._rng = rng
        self._next = first

    def next(self) -> float:
        base = self._next
        self._next = min(self._cap, base * 2)
        return min(self._cap, base * (0.75 + 0.5 * self._rng()))

    def reset(self) -> None:
        self._next = self._first


class NothingHonoured(ServerError):
    """The server agreed to deliver none of what was asked: watching it is pointless (exit 4)."""


class StreamEnded(Exception):
    """A connection's events stopped: the server closed the stream, or it broke (the message says which)."""


Connector = Callable[["MessageHandlerFnT"], AbstractAsyncContextManager["Client"]]
"""Opens one connection whose notifications go to the given handler (``connection.connect`` with it)."""
OnChange = Callable[["Client | None", Change], Awaitable[None]]
"""Shows one change; the client is the live connection (None between two: nothing can be read then)."""
OnReady = Callable[["Client", Honoured, bool], Awaitable[None]]
"""Told what a (re)opened stream honours, with whether it is a reconnection (the consumer may read again)."""


class Watch:
    """One ``mcpcli watch``: connections, one after another, feeding one backlog that one consumer drains."""

    def __init__(
        self,
        want: Want,
        connector: Connector,
        *,
        on_change: OnChange,
        on_ready: OnReady,
        note: Callable[[str], None],
        reconnect: bool = True,
        count: int | None = None,
        liveness: float = 5.0,
        backoff: Backoff | None = None,
    ) -> None:
        """``want`` falls back to every list when it names nothing. ``connector`` opens one connection whose
        notifications go to the watch; ``reconnect`` false ends the watch at the first interruption; ``liveness`` is how
        often a pre-2026 connection is pinged."""
        self.want = want.or_every_list()
        self.stats = Stats()
        self.backlog = Backlog(self.stats)
        self.client: Client | None = None
        self._connector = connector
        self._on_change = on_change
        self._on_ready = on_ready
        self._note = note
        self._reconnect = reconnect
        self._count = count
        self._liveness = liveness
        self._backoff = backoff or Backoff()
        self._subscription_id: Any = None
        self._modern = False
        self._honoured = Honoured()
        self._warned: set[str] = set()
        self._was_ready = False
        """Whether a stream was ever open: until then a failure ends the watch (exit 4), after it, it listens again."""

    async def run(self) -> None:
        """Watch until ``count`` changes were received and shown (or forever: the caller bounds it by time or a
        signal). Changes are counted as they arrive, not as lines: a line that coalesced 50 counts 50, so a flood
        folded into a few lines still ends a ``--count`` (after the N-th, nothing more is taken, and what waits is
        shown)."""
        async with anyio.create_task_group() as tg:

            async def consume() -> None:
                await self._consume()
                tg.cancel_scope.cancel()

            tg.start_soon(consume)
            await self._connections()
            tg.cancel_scope.cancel()

    async def _consume(self) -> None:
        while (change := await self.backlog.get()) is not None:
            await self._on_change(self.client, change)
            if change.reason is None:
                self.stats.shown += 1

    async def _connections(self) -> None:
        """Connect, serve, and when the connection ends listen again after a backoff (reset after a steady connection),
        until cancelled. Returns only by raising: a ``ServerError`` under ``--no-reconnect``, or what ``_ended`` judges
        no reconnection can mend."""
        while True:
            started = anyio.current_time()
            try:
                async with self._connector(self._intake) as client:
                    await self._serve(client, again=self._was_ready)
                why = "the server closed the stream"
            except Exception as exc:  # boundary: what ended this connection decides whether to listen again
                why = self._ended(exc)
            finally:
                self.client = None
            if not self._reconnect:
                raise ServerError(f"The watch ended: {why}.", hint="Without --no-reconnect it listens again.")
            if anyio.current_time() - started >= STEADY:
                self._backoff.reset()
            delay = self._backoff.next()
            self.stats.reconnects += 1
            self._note(f"The watch was interrupted: {why}; listening again in {delay:.1f} s.")
            await anyio.sleep(delay)

    def _ended(self, exc: Exception) -> str:
        """Why a connection ended, when listening again may help; else the error to end the watch with: anything
        before the first stream was open (a wrong target stays wrong), a usage error, a server that honours
        nothing, a fault of mcpcli's own."""
        inner = lone(exc)
        if isinstance(inner, StreamEnded):
            return str(inner)
        if isinstance(inner, UsageError | NothingHonoured):
            raise inner from None
        from mcpcli.net.connection import transport_failure

        if not (isinstance(inner, McpcliError | MCPError | TimeoutError) or transport_failure(inner) is not None):
            raise exc
        if not self._was_ready:
            if isinstance(inner, McpcliError):
                raise inner from None
            raise ServerError(f"The watch could not start: {_describe(inner)}.") from None
        return _describe(inner)

    async def _serve(self, client: Client, *, again: bool) -> None:
        self._modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
        if self._modern:
            await self._listen(client, again)
        else:
            await self._subscribe(client, again)

    async def _ready(self, client: Client, honoured: Honoured, again: bool) -> None:
        if honoured.nothing():
            asked = ", ".join([*(f"{name} list" for name in self.want.lists()), *self.want.uris])
            why = "; ".join(f"{uri}: {reason}" for uri, reason in honoured.why.items())
            raise NothingHonoured(
                f"The server honours none of what was asked ({asked}){f': {why}' if why else ''}.",
                hint="See what it offers: mcpcli info (resources.subscribe, listChanged).",
            )
        self._honoured = honoured
        self.client = client
        self._was_ready = True
        await self._on_ready(client, honoured, again)

    # --- 2026-07-28: subscriptions/listen --------------------------------------------------------------------------

    async def _listen(self, client: Client, again: bool) -> None:
        """2026-07-28: one ``subscriptions/listen`` stream, acknowledged (what it honours told to ``_ready``), then held
        open while its events arrive through ``_intake``. Always ends by raising ``StreamEnded`` with why (broken,
        unacknowledged, ended by the server)."""
        from mcp.client.subscriptions import ResourceUpdated, SubscriptionLost

        want = self.want
        try:
            async with client.listen(
                tools_list_changed=want.tools,
                prompts_list_changed=want.prompts,
                resources_list_changed=want.resources,
                resource_subscriptions=list(want.uris),
            ) as sub:
                ack = sub.honored
                honoured = Honoured(
                    uris=tuple(u for u in want.uris if u in (ack.resource_subscriptions or [])),
                    tools=want.tools and ack.tools_list_changed is True,
                    prompts=want.prompts and ack.prompts_list_changed is True,
                    resources=want.resources and ack.resources_list_changed is True,
                )
                self._subscription_id = sub.subscription_id
                await self._ready(client, honoured, again)
                async for event in sub:  # the events themselves come through ``_intake`` (counted there)
                    if isinstance(event, ResourceUpdated):
                        continue
        except SubscriptionLost as exc:
            cause = exc.__cause__
            raise StreamEnded(
                f"the stream broke ({cause.message})" if isinstance(cause, MCPError) else "the stream broke"
            ) from None
        except TimeoutError:
            raise StreamEnded("the server did not acknowledge the listen request in time") from None
        finally:
            self._subscription_id = None
        raise StreamEnded("the server ended the stream")

    # --- before 2026-07-28: resources/subscribe and the notifications ----------------------------------------------

    async def _subscribe(self, client: Client, again: bool) -> None:
        """Before 2026-07-28: what the capabilities promise for the lists, then ``resources/subscribe`` per URI
        (refusals kept as why), then a ping every ``liveness`` seconds to notice a dead connection (``StreamEnded``).
        The URIs taken are unsubscribed however it ends, shielded and within 2 s."""
        from mcp.shared.exceptions import MCPDeprecationWarning

        caps = client.server_capabilities
        want = self.want
        # The lists first: a list change that comes while the URIs are being subscribed to is one asked for.
        self._honoured = Honoured(
            tools=want.tools and bool(caps.tools and caps.tools.list_changed),
            prompts=want.prompts and bool(caps.prompts and caps.prompts.list_changed),
            resources=want.resources and bool(caps.resources and caps.resources.list_changed),
        )
        taken: list[str] = []
        why: dict[str, str] = {}
        if want.uris and not (caps.resources and caps.resources.subscribe):
            why = dict.fromkeys(want.uris, "the server does not offer resource subscriptions")
        else:
            for uri in want.uris:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", MCPDeprecationWarning)
                        await client.session.subscribe_resource(uri)
                    taken.append(uri)
                    self._honoured = replace(self._honoured, uris=tuple(taken))
                except MCPError as exc:
                    why[uri] = exc.message
        await self._ready(client, replace(self._honoured, why=why), again)
        try:
            while True:  # a pre-2026 connection has no stream of its own to end: ask it whether it is alive
                await anyio.sleep(self._liveness)
                try:
                    with anyio.fail_after(max(self._liveness, 10.0)), warnings.catch_warnings():
                        warnings.simplefilter("ignore", MCPDeprecationWarning)  # pre-2026 only: where it is not
                        await client.send_ping()
                except TimeoutError:
                    raise StreamEnded("the server stopped answering") from None
                except MCPError as exc:
                    raise StreamEnded(f"the connection ended ({exc.message.rstrip('.')})") from None
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2), contextlib.suppress(Exception):
                for uri in taken:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", MCPDeprecationWarning)
                        await client.session.unsubscribe_resource(uri)

    # --- the events ------------------------------------------------------------------------------------------------

    async def _intake(self, message: Any) -> None:
        """Every server notification of every connection (the client's message handler): the events both eras
        send, counted, checked against what was asked, and queued. Never awaits: wire order is kept."""
        if isinstance(message, Exception):
            return
        method = getattr(message, "method", None)
        kind = _WIRE_KINDS.get(method or "")
        if kind is None or self.backlog.closed:
            return
        params = getattr(message, "params", None)
        if self._modern:
            meta = getattr(params, "meta", None) if params is not None else None
            sub_id = _subscription_of(meta)
            if sub_id is None or sub_id != self._subscription_id:
                return  # not of this watch's stream (the SDK tees every frame)
        uri = getattr(params, "uri", None) if kind == "resource_updated" else None
        if uri is not None:
            uri, named = watched(self._honoured.uris, str(uri)), str(uri)
            if uri is None:
                self._ignore(f"an update for {short_id(named)}, which was not asked for")
                return
        elif not self._listed(kind):
            if self._modern:
                self._ignore(f"a {kind.removesuffix('_changed').replace('_', ' ')} change, which was not asked for")
            return  # before 2026 a server sends every list change it has: not a fault
        self.stats.received += 1
        self.backlog.put(Change(kind, uri))
        if self._count is not None and self.stats.received >= self._count:
            self.backlog.close()

    def _listed(self, kind: Kind) -> bool:
        name = next(n for n, k in LIST_KINDS.items() if k == kind)
        return bool(getattr(self.want, name) and getattr(self._honoured, name))

    def _ignore(self, what: str) -> None:
        self.stats.ignored += 1
        if not self._warned:
            self._note(f"Ignored {what} (a server must not send it); more like it are ignored silently.")
        if len(self._warned) < _WARNED_LIMIT:
            self._warned.add(what)


def _subscription_of(meta: Any) -> Any:
    from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

    if isinstance(meta, Mapping):
        return meta.get(SUBSCRIPTION_ID_META_KEY)
    extra = getattr(meta, "model_extra", None) or {}
    found = extra.get(SUBSCRIPTION_ID_META_KEY)
    if found is None and meta is not None:
        found = getattr(meta, SUBSCRIPTION_ID_META_KEY, None)
    return found


def _describe(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return exc.message.rstrip(".")
    if isinstance(exc, McpcliError):
        return exc.message.rstrip(".")
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0].rstrip(".")
