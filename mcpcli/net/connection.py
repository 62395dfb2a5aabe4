"""Target → a connected ``mcp.Client`` (streamable HTTP, stdio, or the built-in demo in-process).

Also the place mcpcli reaches inside the SDK: ``_FlowLegs`` wraps the
session's dispatcher so that every leg of a flow goes out under a fresh,
globally unique JSON-RPC id (a retry sent by another process must never reuse
an earlier leg's id), so that a complete result without ``resultType`` —
the spec's default — is accepted (mcp 2.3.0's models reject it), as is a
listing without cache hints, so that a server that still calls back on
2026-07-28 is noticed, and so that a task's ``subscriptions/listen`` goes out
under the id ``taskfeed`` chose (which reads that stream's frames off the SDK's
dispatcher underneath: ``sdk_dispatcher``).
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as t
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.session import ClientRequestContext, LoggingFnT, MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpcli import __version__, settle_collector, telemetry
from mcpcli.auth import Credentials
from mcpcli.errors import McpcliError, ServerError, UsageError
from mcpcli.net import warmcache
from mcpcli.net.bounds import Bounds, Tripwire
from mcpcli.net.failures import connect_failure, describe, start_failure
from mcpcli.net.handshakes import HandshakeClient, remember, remembered
from mcpcli.net.serverenv import server_environment
from mcpcli.net.serverlog import ServerLog
from mcpcli.net.tap import traced
from mcpcli.net.tasks import CREATED_TASK_META, LISTEN_ID, TasksExtension
from mcpcli.settings.config import Paths
from mcpcli.settings.targets import Target
from mcpcli.state.trace import Tracer

if TYPE_CHECKING:
    from mcpcli.net.transports import Guard

Protocol = Literal["auto", "legacy", "2026-07-28"]
BackChannel = Callable[[t.InputRequest], Awaitable[t.InputResponse | t.ErrorData]]

FLOW_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})


class _FlowLegs:
    """Dispatcher wrapper: fresh string ids for flow legs, spec defaults the SDK's models insist on, and a
    server that still calls back noticed (see ``_refused_back_channel``)."""

    def __init__(self, inner: Any, client: Client, on_refused: Callable[[], None] | None) -> None:
        self._inner = inner
        self._client = client
        self._on_refused = on_refused

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        if method in FLOW_METHODS:
            # A string that does not parse as an integer never collides with the dispatcher's own counter,
            # nor with any id an earlier process used for another leg of the same flow.
            opts = {**(opts or {}), "request_id": f"mcpcli-{secrets.token_hex(8)}"}
        elif method == "subscriptions/listen" and (listen_id := LISTEN_ID.get()) is not None:
            opts = {**(opts or {}), "request_id": listen_id}  # a task's stream: taskfeed knows its frames by it
        try:
            raw: dict[str, Any] = await self._inner.send_raw_request(method, params, opts, **kw)
        except MCPError as exc:
            warmcache.stale_error(self._client, exc.code)
            if self._on_refused is not None and self._refused_back_channel(method, params, exc):
                self._on_refused()
            if method in FLOW_METHODS and exc.code == t.URL_ELICITATION_REQUIRED:
                _URLS[id(self._client)] = _url_elicitations(exc)
            raise
        if method == "tools/call" and raw.get("isError") is True:
            warmcache.forget(self._client)  # "Unknown tool", a changed schema...: the next call lists afresh
        if method == "tools/call" and params and "task" in params and isinstance(raw.get("task"), dict):
            # 2025-11-25 CreateTaskResult: the SDK would check it against CallToolResult and refuse it. Carried
            # through as a placeholder result whose _meta holds the task (tasks.call_as_task unwraps it).
            return {"content": [], "_meta": {CREATED_TASK_META: raw["task"]}}
        if not self._modern():
            return raw
        if method in FLOW_METHODS and "resultType" not in raw:
            raw = {**raw, "resultType": "complete"}
        elif method in LIST_METHODS and not {"ttlMs", "cacheScope"} <= raw.keys():
            # Cache hints a server left out mean what the SDK's own models default them to: stale at once,
            # private. Without them the wire check refuses the whole listing (and every call that lists first).
            raw = {"ttlMs": 0, "cacheScope": "private", **raw}
        return raw

    def _modern(self) -> bool:
        return self._client.session.protocol_version in MODERN_PROTOCOL_VERSIONS

    def _refused_back_channel(self, method: str, params: Mapping[str, Any] | None, exc: MCPError) -> bool:
        """A first leg refused with "invalid request" on 2026-07-28.

        That is how the SDK's servers answer a tool that asks over the back-channel, which 2026-07-28 removed
        (``NoBackChannelError`` → -32600): the request itself was well-formed (the SDK built it), the server
        could not call back. Told by the error code, never by the message's wording. (Their discover result
        names 2026-07-28 alone, though they answer ``initialize`` too, so it cannot tell.)
        """
        if method not in FLOW_METHODS or exc.code != t.INVALID_REQUEST or not self._modern():
            return False
        return not (params and ("requestState" in params or "inputResponses" in params))


LIST_METHODS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})


def _install_flow_legs(client: Client, on_refused: Callable[[], None] | None) -> None:
    session = client.session
    session._dispatcher = _FlowLegs(session._dispatcher, client, on_refused)  # type: ignore[assignment]  # see module docstring


def sdk_dispatcher(client: Client) -> Any:
    """The SDK's own dispatcher of a connected client, under ``_FlowLegs`` and ``handshakes._Handshake`` (``taskfeed``
    reads its receive order)."""
    from mcpcli.net.handshakes import _Handshake

    dispatcher = client.session._dispatcher
    while isinstance(dispatcher, _FlowLegs | _Handshake):
        dispatcher = dispatcher._inner
    return dispatcher


@asynccontextmanager
async def connect(
    target: Target,
    paths: Paths,
    *,
    protocol: str | None = None,
    elicitation: BackChannel | None = None,
    roots: BackChannel | None = None,
    sampling: BackChannel | None = None,
    sampling_tools: bool = False,
    credentials: Credentials | None = None,
    tracer: Tracer | None = None,
    log_level: str | None = None,
    on_log: LoggingFnT | None = None,
    bounds: Bounds | None = None,
    handshake_offers: frozenset[str] | None = None,
    on_notification: MessageHandlerFnT | None = None,
    watcher: bool = False,
    extensions: Mapping[str, dict[str, Any]] | None = None,
) -> AsyncIterator[Client]:
    """Connect to ``target`` and yield the entered ``Client``; failures become one-line ``ServerError``s.

    ``protocol`` is ``--protocol`` (None: not given — the target's own ``protocol`` setting, else ``auto``, which
    starts with the handshake a server spoke last time: ``mcpcli.net.handshakes``).

    On 2026-07-28 every connection declares the same client capabilities — elicitation (form and URL), roots and
    sampling (with tool use when ``sampling_tools``: the user's provider has a ``tools`` model) — whatever the
    command: a server may decide what it lists by them, so ``tools`` must see what ``call`` can run; on the
    handshake, only ``handshake_offers`` (the commands decide them alike for every command). The back-channel
    callbacks serve pre-2026 servers; a command that answers nothing (discovery) refuses what is asked.
    On 2026-07-28 nothing flows server → client. ``credentials`` decide how an HTTP server is signed in to
    (default: OAuth, never interactive). ``tracer`` taps every message (none: no tap at all); ``log_level``
    opts in to the server's log messages, which go to ``on_log``. ``bounds`` (default: ``[limits]``'s defaults
    and their environment variables) bound the handshake, every read and every message. ``handshake_offers``:
    of ``sampling``, ``elicitation`` and ``roots``, those the pre-2026 handshake declares — what this run can
    answer (None: all three); the 2026-07-28 era declares them all, a later ``resume`` may answer there.
    ``on_notification`` gets every notification the server sends (``watch``: its events); none: they are dropped,
    as the SDK drops them. ``watcher``: this connection is a watch's (a kept-alive server is shared with it, not
    lent: ``worker.kept``). ``extensions``: more extensions to declare, by identifier with their settings
    (``call --app`` declares MCP Apps): on 2026-07-28 in every request's ``_meta``, on the handshake in its
    capabilities.
    """
    given = protocol if protocol is not None else target.protocol or "auto"
    if given not in ("auto", "legacy", "2026-07-28"):
        raise UsageError(f"Unknown protocol {given!r}.", hint="Use --protocol auto, legacy or 2026-07-28.")
    bounds = bounds or Bounds.from_settings()
    creds = credentials or Credentials()
    if tracer is not None and creds.on_secret is None:
        creds.on_secret = tracer.register_secret  # every token sent (static, OAuth, refreshed) stays out of it
    learn = given == "auto" and target.kind != "demo"
    mode = (remembered(paths, target) if learn else None) or given
    failed: list[McpcliError] = []
    callbacks = {
        "elicitation_callback": _callback(elicitation or _refuse, failed),
        "list_roots_callback": _roots_callback(roots or _refuse, failed),
        "sampling_callback": _callback(sampling or _refuse, failed),
        # Offered only when the user's provider has a model that can use tools (a ``tools`` tag).
        "sampling_capabilities": t.SamplingCapability(tools=t.SamplingToolsCapability()) if sampling_tools else None,
    }
    first_failure: str | None = None  # why the first attempt failed, once there is a second (one restart at most)
    kept_generation: list[str] = []  # a kept-alive server's generation, as the worker tells it (net.attach)
    declaring: dict[str, Any] = {"offers": sorted(handshake_offers) if handshake_offers is not None else None}
    declaring |= {"sampling_tools": sampling_tools, "extensions": dict(extensions or {}), "log_level": log_level}
    if tracer is not None:
        tracer.fact("connect", target=recorded_target(target), protocol=given)
    telemetry.connected(target.kind, target.url, None)  # the handshake's spans
    async with AsyncExitStack() as stack:
        while True:
            trip = Tripwire(bounds)
            attempt = AsyncExitStack()
            held_roots: list[bool] = []
            server, log, guard = _server_for(
                target,
                paths,
                attempt,
                creds,
                trip,
                functools.partial(held_roots.append, True),
                fresh=first_failure is not None,
                watcher=watcher,
                generation=kept_generation.append,
            )
            cached = (
                warmcache.slot_for(target, paths, given, creds.identity(), declaring) if first_failure is None else None
            )
            prior = cached.fresh("discover", any_generation=True) if cached is not None and mode != "legacy" else None
            if tracer is not None:
                tracer.register_headers(target.headers)
                server = traced(server, tracer)
            client = HandshakeClient(
                server,
                mode=warmcache.MODERN if prior is not None else mode,
                prior_discover=warmcache.discover_result(prior),
                client_info=t.Implementation(name="mcpcli", version=__version__),
                cache=None,
                # Every request declares the tasks extension (2026-07-28 only): a tool call may become a task.
                extensions=[TasksExtension(), *(advertise(k, v) for k, v in (extensions or {}).items())],
                logging_callback=on_log,
                message_handler=warmcache.dropping_on_list_changes(on_notification, cached),
                log_level=log_level,  # type: ignore[arg-type]  # checked: one of LoggingLevel's values
                **callbacks,
            )
            client.handshake_offers = handshake_offers
            try:
                # No cancel scope around this: the client's task group must outlive it (anyio scopes nest strictly).
                # The guard bounds it instead, by ending the stream the handshake waits on.
                await attempt.enter_async_context(client)
            except Exception as exc:  # boundary: transports raise many shapes (ExceptionGroup, httpx2 errors)
                await attempt.aclose()  # the server is stopped: its log is complete
                answered = given == "auto" and trip.error is None and isinstance(_inner(exc), MCPError)
                if answered and first_failure is None and mode == "legacy":
                    # The handshake that worked last time was refused: the server changed. Ask it afresh.
                    remember(paths, target, legacy=False)
                    mode, first_failure = "auto", f"the initialize handshake ({describe(exc)})"
                    continue
                if answered and first_failure is None and mode == "auto" and target.kind == "stdio":
                    # A strict server (rmcp: the Rust SDK) ends the process, or spoils the connection, when its first
                    # message is not ``initialize``: start it once more, speaking the handshake from the start.
                    first_failure = f"the 2026-07-28 probe, server/discover ({describe(exc)})"
                    mode = "legacy"
                    continue
                if first_failure is not None and trip.error is None:
                    both = f"it failed on {first_failure}, then on {_second(mode)} ({describe(exc)})"
                    raise start_failure(target, log, both) from None
                failure = trip.error or connect_failure(target, log, creds, exc, trip.http_status)
                if given == "legacy" and log is None and target.kind == "stdio" and isinstance(_inner(exc), MCPError):
                    # A kept-alive server (no log of ours: the worker's) speaks one protocol to every command.
                    failure.hint = (
                        f"The kept-alive server {target.label} may already speak 2026-07-28 to an earlier command, "
                        "and keeps to it: restart it (mcpcli worker restart) or run this without --keep-alive."
                    )
                raise failure from None
            break
        await stack.enter_async_context(attempt)
        if first_failure is not None and mode == "legacy":
            _say(
                f"{target.label} did not survive {first_failure}; started it again with the initialize handshake "
                "(remembered: next time it gets the handshake at once)."
            )
        if guard is not None:
            guard.connected()
        if cached is not None:
            await warmcache.warmed(client, cached, prior, kept_generation)
            warmcache.attach(client, cached)
        if tracer is not None:
            info = client.server_info
            tracer.fact(
                "connected",
                protocol=client.protocol_version,
                server_info=info.model_dump(mode="json", by_alias=True, exclude_none=True) if info else None,
                capabilities=client.server_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True),
                instructions=client.instructions,
            )
        if learn:
            remember(paths, target, legacy=client.protocol_version not in MODERN_PROTOCOL_VERSIONS)
        telemetry.connected(target.kind, target.url, client.protocol_version)
        refused: list[bool] = []

        def on_refused() -> None:
            remember(paths, target, legacy=True)  # the next connection (the retry) starts with the handshake
            refused.append(True)

        _install_flow_legs(client, on_refused if learn else None)
        _REFUSED[id(client)] = refused
        stack.callback(_REFUSED.pop, id(client), None)
        stack.callback(_URLS.pop, id(client), None)
        _FAILED[id(client)] = failed
        stack.callback(_FAILED.pop, id(client), None)
        if held_roots and roots is not None and client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # A kept-alive server holds the roots of the command it asked before: this command's differ (another
            # directory, other --root). Told so, it asks again; the flow waits for that before its call.
            await client.session.send_notification(t.RootsListChangedNotification())
            _ROOTS_ASKED_AGAIN.add(id(client))
            stack.callback(_ROOTS_ASKED_AGAIN.discard, id(client))
        settle_collector()  # a cold command's start is over (mcpcli.hold_collector)
        try:
            if log_level is not None:
                await opt_in_to_logs(client, log_level)
            yield client
        except (Exception, BaseExceptionGroup) as exc:
            warmcache.forget(client)  # a result checked by a remembered output schema, say: the next one asks
            # A bound that tripped ended the connection; the SDK's error for that ("connection closed", "failed
            # to parse") is not what happened.
            if trip.error is not None and not isinstance(_inner(exc), UsageError):
                raise trip.error from None
            raise


def recorded_target(target: Target) -> dict[str, Any]:
    """What a recording keeps of the server: enough to reach it again, nothing secret (no header values, no
    environment: their names only)."""
    from urllib.parse import urlsplit, urlunsplit

    def bare(url: str) -> str:  # a password in the URL stays out
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{parts.username}:[redacted]@{host}"))

    label = bare(target.label) if target.kind == "http" else target.label
    kept: dict[str, Any] = {"label": label, "kind": target.kind, "source": target.source}
    if target.url:
        kept["url"] = bare(target.url)
    if target.command:
        kept["command"] = [target.command, *target.args]
        if target.cwd:
            kept["cwd"] = target.cwd
        if target.env:
            kept["env_names"] = sorted(target.env)
    if target.headers:
        kept["header_names"] = sorted(target.headers)
    return kept


_ROOTS_ASKED_AGAIN: set[int] = set()
"""Connected clients that told their (kept-alive) server the roots changed: it is about to ask for them."""


def roots_asked_again(client: Client) -> bool:
    """Whether the server will ask this connection for its roots before it can serve a call (see ``connect``)."""
    return id(client) in _ROOTS_ASKED_AGAIN


_FAILED: dict[int, list[McpcliError]] = {}
"""Per connected client: what a back-channel answer failed with (a bad preset answer...), told after the call."""


def unlisted(client: Client, tool: str) -> None:
    """Call ``tool`` without a listing: the one mcpcli asked for could not be read.

    The SDK checks a result's structured content against the tool's listed output schema, and lists the tools
    again to find it, so a listing it cannot read would fail the call after the server ran it. With the schema
    recorded as unknown (as for a tool listed without one) nothing is checked.
    """
    client.session._tool_output_schemas[tool] = None  # see above (a private map of the SDK's session)


_URLS: dict[int, list[t.ElicitRequestURLParams]] = {}
"""Per connected client: the pages a -32042 "URL elicitation required" error of a flow leg named."""


def required_urls(client: Client) -> list[t.ElicitRequestURLParams]:
    """The URL elicitations the last -32042 error carried (the flow reports only the error's message)."""
    return _URLS.get(id(client), [])


def _url_elicitations(exc: MCPError) -> list[t.ElicitRequestURLParams]:
    from mcp.shared.exceptions import UrlElicitationRequiredError
    from pydantic import ValidationError

    try:
        return UrlElicitationRequiredError.from_error(exc.error).elicitations
    except (ValidationError, ValueError, TypeError, AttributeError):
        return []  # a malformed list: the error's message is all there is to show


_REFUSED: dict[int, list[bool]] = {}
"""Per connected client: whether the server refused a first leg because it wanted to call back (``auto`` only)."""


def wants_back_channel(client: Client) -> bool:
    """Whether this ``auto`` connection met a server that asks over the pre-2026 back-channel (``_FlowLegs``).

    When it did, the handshake is remembered for the target, so a new connection speaks it.
    """
    return bool(_REFUSED.get(id(client)))


def back_channel_failure(client: Client) -> McpcliError | None:
    """The first error a back-channel answer raised on this connection (the server only heard a refusal).

    A pre-2026 server asks mid-call; when mcpcli cannot answer (an invalid ``--answer``), the server gets an
    error reply and usually ends the call with ``isError``. What the user must see is why mcpcli refused —
    with its own exit code (2 for a bad answer) — not the server's result.
    """
    failed = _FAILED.get(id(client))
    return failed[0] if failed else None


def _second(mode: str) -> str:
    """The second attempt of ``connect``, named for the one line that says both failed."""
    return "the initialize handshake" if mode == "legacy" else "the 2026-07-28 probe, server/discover"


def _inner(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def _refuse(request: t.InputRequest) -> t.InputResponse | t.ErrorData:
    """What a connection that answers nothing says to a question (discovery, listings)."""
    return t.ErrorData(
        code=t.INVALID_REQUEST, message="mcpcli answers questions only while it runs call, prompt, read or resume."
    )


def _server_for(
    target: Target,
    paths: Paths,
    stack: AsyncExitStack,
    credentials: Credentials,
    trip: Tripwire,
    asks_roots: Callable[[], None],
    *,
    fresh: bool = False,
    watcher: bool = False,
    generation: Callable[[str], None] | None = None,
) -> tuple[Any, ServerLog | None, Guard | None]:
    """The transport for ``target``; ``fresh``: a kept-alive server's process is started anew (the first attempt
    spoiled it)."""
    from mcpcli.net.transports import Guard

    if target.kind == "demo":
        from mcpcli.demo import DamagedKey, build_server, load_or_create_key

        try:
            key = load_or_create_key(paths.demo_key_file)
        except (DamagedKey, OSError) as exc:
            raise ServerError(
                f"The built-in demo server cannot start: {exc}", hint=f"Delete {paths.demo_key_file} to make a new key."
            ) from None
        return build_server(key), None, None
    bounds = trip.bounds
    if target.kind == "http":
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        from mcpcli.net.transports import http_transport

        assert target.url is not None
        headers, auth = credentials.prepare(target, paths)
        http = httpx2.AsyncClient(
            headers=headers,
            auth=auth,
            # Bytes may keep coming while no message does (SSE keep-alives): http_transport bounds that.
            timeout=httpx2.Timeout(bounds.idle_timeout, connect=bounds.connect_timeout),
            transport=http_transport(trip, target.url),
            event_hooks={"response": [credentials.watch]},
        )
        stack.push_async_callback(http.aclose)
        guard = Guard(
            streamable_http_client(target.url, http_client=http, max_sse_event_size=bounds.max_message_bytes), trip
        )
        return guard, None, guard
    from mcpcli.net.transports import stdio

    assert target.command is not None
    if target.keep_alive:
        from mcpcli.net.attach import attached, worker_socket

        if (where := worker_socket()) is not None:
            kept = attached(
                where,
                target,
                max_message_bytes=bounds.max_message_bytes,
                note=_say,
                asks_roots=asks_roots,
                fresh=fresh,
                watcher=watcher,
                generation=generation,
            )
            guard = Guard(kept, trip)
            return guard, None, guard
        from mcpcli.platform import WORKERLESS

        off = "it is off here" if WORKERLESS is None else WORKERLESS
        _say(f"Not keeping {target.label} alive: that needs the background worker ({off}); starting it.")
    log = ServerLog(paths, target)
    stack.callback(log.file.close)
    params = StdioServerParameters(
        command=target.command, args=list(target.args), env=server_environment(target), cwd=target.cwd
    )
    guard = Guard(stdio(params, log.file, trip), trip)
    return guard, log, guard


def _say(text: str) -> None:
    """A line for the person at the terminal about the connection itself (stderr, as every note)."""
    import sys

    sys.stderr.write(text + "\n")


def transport_failure(exc: BaseException) -> str | None:
    """One line for a transport that failed under a running flow (it surfaces from the connection's task group),
    or ``None`` when ``exc`` is not a transport failure."""
    import anyio
    import httpx2

    if isinstance(exc, httpx2.RemoteProtocolError | anyio.EndOfStream | anyio.BrokenResourceError | ConnectionError):
        return f"The server closed the connection before answering ({describe(exc).rstrip('.')})."
    if isinstance(exc, anyio.ClosedResourceError):
        return "The server closed the connection before answering."
    if isinstance(exc, httpx2.TimeoutException):
        return f"The server stopped answering ({describe(exc).rstrip('.')})."
    if isinstance(exc, httpx2.TransportError | OSError):
        return f"The connection to the server failed: {describe(exc).rstrip('.')}."
    return None


def _callback(handler: BackChannel, failed: list[McpcliError]) -> Any:
    async def callback(ctx: ClientRequestContext, params: Any) -> Any:
        request: t.InputRequest = (
            t.CreateMessageRequest(params=params)
            if isinstance(params, t.CreateMessageRequestParams)
            else t.ElicitRequest(params=params)
        )
        return await _answer(handler, request, failed)

    return callback


def _roots_callback(handler: BackChannel, failed: list[McpcliError]) -> Any:
    async def callback(ctx: ClientRequestContext) -> Any:
        return await _answer(handler, t.ListRootsRequest(), failed)

    return callback


async def _answer(
    handler: BackChannel, request: t.InputRequest, failed: list[McpcliError]
) -> t.InputResponse | t.ErrorData:
    try:
        return await handler(request)
    except McpcliError as exc:  # e.g. an invalid --answer: the server hears a refusal, the user hears why
        failed.append(exc)
        return t.ErrorData(code=t.INVALID_PARAMS, message="The client could not answer this request.")


async def opt_in_to_logs(client: Any, level: str) -> None:
    """Ask a handshake-era server for its logs (``logging/setLevel``), when it offers logging at all.

    On 2026-07-28 the opt-in is per request (``Client(log_level=…)`` stamps it in ``_meta``): nothing to send.
    """
    from mcp.shared.exceptions import MCPDeprecationWarning

    if client.protocol_version in MODERN_PROTOCOL_VERSIONS or client.server_capabilities.logging is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        with contextlib.suppress(MCPError):  # a server that refuses keeps logging as it did; the flow goes on
            await client.session.set_logging_level(level)
