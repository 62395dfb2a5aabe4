"""Target → a connected ``mcp.Client`` (streamable HTTP, stdio, or the built-in demo in-process): ``connect`` takes
one ``ConnectOptions``, and what it learns of the server while connected lives on the client (``Learned``). Every
leg of a flow on it goes out under ``net.legs``' dispatcher wrapper.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
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
from mcpcli.errors import McpcliError, ServerError, UsageError, lone
from mcpcli.net import legs, warmcache
from mcpcli.net.bounds import Bounds, Tripwire
from mcpcli.net.failures import connect_failure, describe, start_failure
from mcpcli.net.handshakes import HandshakeClient, Learned, remember, remembered
from mcpcli.net.serverenv import server_environment
from mcpcli.net.serverlog import ServerLog
from mcpcli.net.tap import traced
from mcpcli.net.tasks import TasksExtension
from mcpcli.settings.config import Paths
from mcpcli.settings.targets import Target
from mcpcli.state.trace import Tracer

if TYPE_CHECKING:
    from mcpcli.net.transports import Guard

Protocol = Literal["auto", "legacy", "2026-07-28"]
BackChannel = Callable[[t.InputRequest], Awaitable[t.InputResponse | t.ErrorData]]


@dataclass(frozen=True)
class ConnectOptions:
    """Everything one connection is made from: which server, how it is reached and signed in to, what the client
    declares and answers, what is tapped and bounded. Built by the command (``commands.connecting``), read by
    ``connect``; a variant is a ``dataclasses.replace`` of it."""

    target: Target
    """The server: an HTTP URL, a stdio command line, or the built-in demo (in-process)."""
    paths: Paths
    """Where the caches (handshakes, warm answers), the server logs and the demo's key live."""
    protocol: str | None = None
    """``--protocol`` (None: not given — the target's own ``protocol`` setting, else ``auto``, which starts with the
    handshake a server spoke last time: ``mcpcli.net.handshakes``)."""
    elicitation: BackChannel | None = None
    """Answers a pre-2026 server's form or URL question, asked mid-call over the back-channel (None: refused)."""
    roots: BackChannel | None = None
    """Answers a pre-2026 server's ``roots/list`` (None: refused)."""
    sampling: BackChannel | None = None
    """Answers a pre-2026 server's ``sampling/createMessage`` (None: refused). On 2026-07-28 nothing flows server →
    client: these three serve the handshake era only; a command that answers nothing (discovery) refuses."""
    sampling_tools: bool = False
    """Sampling is declared with tool use: the user's provider has a ``tools`` model."""
    credentials: Credentials | None = None
    """How an HTTP server is signed in to (None: OAuth, never interactive)."""
    tracer: Tracer | None = None
    """Taps every message (None: no tap at all); every token sent is registered with it as a secret."""
    log_level: str | None = None
    """Opts in to the server's log messages at this level (None: no opt-in)."""
    on_log: LoggingFnT | None = None
    """Where the server's log messages go (the SDK's ``logging_callback``)."""
    bounds: Bounds | None = None
    """Bound the handshake, every read and every message (None: ``[limits]``'s defaults and their environment
    variables)."""
    handshake_offers: frozenset[str] | None = None
    """Of ``sampling``, ``elicitation`` and ``roots``, those the pre-2026 handshake declares — what this run can
    answer (None: all three). The 2026-07-28 era declares them all (a later ``resume`` may answer there), whatever the
    command: a server may decide what it lists by them, so ``tools`` must see what ``call`` can run."""
    on_notification: MessageHandlerFnT | None = None
    """Gets every notification the server sends (``watch``: its events); None: they are dropped, as the SDK drops
    them."""
    watcher: bool = False
    """This connection is a watch's: a kept-alive server is shared with it, not lent (``worker.kept``)."""
    extensions: Mapping[str, dict[str, Any]] | None = None
    """More extensions to declare, by identifier with their settings (``call --app`` declares MCP Apps): on
    2026-07-28 in every request's ``_meta``, on the handshake in its capabilities."""


@dataclass
class _Plan:
    """What ``connect``'s attempts share: the protocol asked for, the handshake to try next, why the first attempt
    failed (there is one restart at most), and what every attempt is made with."""

    given: str
    """The protocol asked for: ``auto``, ``legacy`` or ``2026-07-28``."""
    mode: str
    """The handshake the next attempt speaks (``auto`` starts with the one remembered for the target)."""
    learn: bool
    """``auto`` on a real server: what it speaks is remembered for next time."""
    credentials: Credentials
    bounds: Bounds
    learned: Learned
    """What the connection learns (every attempt's client holds this one)."""
    declaring: dict[str, Any]
    """What the requests declare, a part of the warm cache's key."""
    first_failure: str | None = None
    """Why the first attempt failed, once there is a second."""
    kept_generation: list[str] = field(default_factory=list)
    """A kept-alive server's generation, as the worker tells it (``net.attach``)."""

    @classmethod
    def of(cls, options: ConnectOptions) -> _Plan:
        """The plan for ``options``; a protocol that is none of the three is a usage error (nothing is started)."""
        target = options.target
        given = options.protocol if options.protocol is not None else target.protocol or "auto"
        if given not in ("auto", "legacy", "2026-07-28"):
            raise UsageError(f"Unknown protocol {given!r}.", hint="Use --protocol auto, legacy or 2026-07-28.")
        creds = options.credentials or Credentials()
        if options.tracer is not None and creds.on_secret is None:
            creds.on_secret = options.tracer.register_secret  # every token sent (static, OAuth, refreshed) stays out
        learn = given == "auto" and target.kind != "demo"
        offers = options.handshake_offers
        declaring: dict[str, Any] = {"offers": sorted(offers) if offers is not None else None}
        declaring |= {"sampling_tools": options.sampling_tools, "extensions": dict(options.extensions or {})}
        declaring["log_level"] = options.log_level
        mode = (remembered(options.paths, target) if learn else None) or given
        bounds = options.bounds or Bounds.from_settings()
        return cls(given, mode, learn, creds, bounds, Learned(), declaring)


@dataclass
class _Attempt:
    """One try at connecting: its transport and client, entered on its own exit stack (closed when it fails)."""

    client: HandshakeClient
    stack: AsyncExitStack
    trip: Tripwire
    """Says which bound tripped, if one did."""
    log: ServerLog | None
    """The stdio server's log (None: HTTP, the demo, a kept-alive server)."""
    guard: Guard | None
    cached: warmcache.Slot | None
    """The connection's place in the warm cache (None on a second attempt: what it held failed)."""
    prior: Any
    """The remembered discover result the handshake adopted, if any."""
    held_roots: list[bool]
    """Non-empty when a kept-alive server already asked an earlier command for its roots."""


@asynccontextmanager
async def connect(options: ConnectOptions) -> AsyncIterator[Client]:
    """Connect as ``options`` say and yield the entered client; every failure is one ``ServerError`` line.

    On 2026-07-28 every connection declares the same client capabilities (see ``ConnectOptions.handshake_offers``);
    the handshake era's question is answered by the back-channel callbacks. A server that failed the handshake
    asked first is tried once more with the other (``_retry``); what worked is remembered for the target. A
    failure inside the ``async with`` forgets what the warm cache adopted, and a bound that tripped is the error.
    """
    plan = _Plan.of(options)
    target, tracer = options.target, options.tracer
    if tracer is not None:
        tracer.fact("connect", target=recorded_target(target), protocol=plan.given)
    telemetry.connected(target.kind, target.url, None)  # the handshake's spans
    async with AsyncExitStack() as stack:
        attempt = await _first_that_connects(options, plan)
        await stack.enter_async_context(attempt.stack)
        client = attempt.client
        await _settle(options, plan, attempt)
        settle_collector()  # a cold command's start is over (mcpcli.hold_collector)
        try:
            if options.log_level is not None:
                await opt_in_to_logs(client, options.log_level)
            yield client
        except (Exception, BaseExceptionGroup) as exc:
            warmcache.forget(client)  # a result checked by a remembered output schema, say: the next one asks
            # A bound that tripped ended the connection; the SDK's error for that ("connection closed", "failed
            # to parse") is not what happened.
            if attempt.trip.error is not None and not isinstance(lone(exc), UsageError):
                raise attempt.trip.error from None
            raise


async def _first_that_connects(options: ConnectOptions, plan: _Plan) -> _Attempt:
    """The attempt whose handshake succeeded — the first, or the one ``_retry`` allowed after it; a failure that
    allows none is raised as one ``ServerError`` line, the server stopped."""
    while True:
        attempt = _attempt(options, plan)
        try:
            # No cancel scope around this: the client's task group must outlive it (anyio scopes nest strictly).
            # The guard bounds it instead, by ending the stream the handshake waits on.
            await attempt.stack.enter_async_context(attempt.client)
        except Exception as exc:  # boundary: transports raise many shapes (ExceptionGroup, httpx2 errors)
            await attempt.stack.aclose()  # the server is stopped: its log is complete
            _retry(options, plan, attempt, exc)
            continue
        return attempt


def _attempt(options: ConnectOptions, plan: _Plan) -> _Attempt:
    """A new attempt's transport and client, not entered yet: the warm cache is consulted on the first attempt only,
    and a remembered discover result lets the client skip the probe (unless the handshake is asked for)."""
    target = options.target
    trip = Tripwire(plan.bounds)
    stack = AsyncExitStack()
    held_roots: list[bool] = []
    server, log, guard = _server_for(
        target,
        options.paths,
        stack,
        plan.credentials,
        trip,
        functools.partial(held_roots.append, True),
        fresh=plan.first_failure is not None,
        watcher=options.watcher,
        generation=plan.kept_generation.append,
    )
    cached = None
    if plan.first_failure is None:
        cached = warmcache.slot_for(target, options.paths, plan.given, plan.credentials.identity(), plan.declaring)
    prior = cached.fresh("discover", any_generation=True) if cached is not None and plan.mode != "legacy" else None
    if options.tracer is not None:
        options.tracer.register_headers(target.headers)
        server = traced(server, options.tracer)
    client = _client(options, plan, server, cached, prior)
    return _Attempt(client, stack, trip, log, guard, cached, prior, held_roots)


def _client(
    options: ConnectOptions, plan: _Plan, server: Any, cached: warmcache.Slot | None, prior: Any
) -> HandshakeClient:
    """The SDK client for one attempt: what it declares, the back-channel answers (refusals where none is given),
    and the handshake to speak — 2026-07-28 at once when a remembered discover result is adopted."""
    failures = plan.learned.failures
    client = HandshakeClient(
        server,
        mode=warmcache.MODERN if prior is not None else plan.mode,
        prior_discover=warmcache.discover_result(prior),
        client_info=t.Implementation(name="mcpcli", version=__version__),
        cache=None,
        # Every request declares the tasks extension (2026-07-28 only): a tool call may become a task.
        extensions=[TasksExtension(), *(advertise(k, v) for k, v in (options.extensions or {}).items())],
        logging_callback=options.on_log,
        message_handler=warmcache.dropping_on_list_changes(options.on_notification, cached),
        log_level=options.log_level,  # type: ignore[arg-type]  # checked: one of LoggingLevel's values
        elicitation_callback=_callback(options.elicitation or _refuse, failures),
        list_roots_callback=_roots_callback(options.roots or _refuse, failures),
        sampling_callback=_callback(options.sampling or _refuse, failures),
        # Offered only when the user's provider has a model that can use tools (a ``tools`` tag).
        sampling_capabilities=t.SamplingCapability(tools=t.SamplingToolsCapability())
        if options.sampling_tools
        else None,
    )
    client.handshake_offers = options.handshake_offers
    client.learned = plan.learned
    return client


def _retry(options: ConnectOptions, plan: _Plan, attempt: _Attempt, exc: Exception) -> None:
    """Decide what a failed handshake means: return when one more attempt may succeed (``plan`` says how), else
    raise the one line that says why it failed.

    Only ``auto`` retries, only once, and only when the server answered (an ``MCPError``, no bound tripped): a
    remembered handshake the server now refuses is asked afresh; a strict stdio server spoiled by the probe is
    started again speaking the handshake from the start.
    """
    target, given, mode = options.target, plan.given, plan.mode
    answered = given == "auto" and attempt.trip.error is None and isinstance(lone(exc), MCPError)
    if answered and plan.first_failure is None and mode == "legacy":
        # The handshake that worked last time was refused: the server changed. Ask it afresh.
        remember(options.paths, target, legacy=False)
        plan.mode, plan.first_failure = "auto", f"the initialize handshake ({describe(exc)})"
        return
    if answered and plan.first_failure is None and mode == "auto" and target.kind == "stdio":
        # A strict server (rmcp: the Rust SDK) ends the process, or spoils the connection, when its first
        # message is not ``initialize``: start it once more, speaking the handshake from the start.
        plan.mode, plan.first_failure = "legacy", f"the 2026-07-28 probe, server/discover ({describe(exc)})"
        return
    if plan.first_failure is not None and attempt.trip.error is None:
        both = f"it failed on {plan.first_failure}, then on {_second(mode)} ({describe(exc)})"
        raise start_failure(target, attempt.log, both) from None
    failure = attempt.trip.error or connect_failure(
        target, attempt.log, plan.credentials, exc, attempt.trip.http_status
    )
    if given == "legacy" and attempt.log is None and target.kind == "stdio" and isinstance(lone(exc), MCPError):
        # A kept-alive server (no log of ours: the worker's) speaks one protocol to every command.
        failure.hint = (
            f"The kept-alive server {target.label} may already speak 2026-07-28 to an earlier command, "
            "and keeps to it: restart it (mcpcli worker restart) or run this without --keep-alive."
        )
    raise failure from None


async def _settle(options: ConnectOptions, plan: _Plan, attempt: _Attempt) -> None:
    """What follows a handshake that worked, before the client is handed out: the warm cache updated, the tracer and
    telemetry told, the handshake remembered (``auto``), the flow legs' wrapper installed, and a kept-alive server
    that holds another command's roots told they changed (it will ask this command's before a call)."""
    target, client, paths = options.target, attempt.client, options.paths
    if plan.first_failure is not None and plan.mode == "legacy":
        _say(
            f"{target.label} did not survive {plan.first_failure}; started it again with the initialize handshake "
            "(remembered: next time it gets the handshake at once)."
        )
    if attempt.guard is not None:
        attempt.guard.connected()
    if attempt.cached is not None:
        await warmcache.warmed(client, attempt.cached, attempt.prior, plan.kept_generation)
        warmcache.attach(client, attempt.cached)
    if options.tracer is not None:
        _trace_connected(options.tracer, client)
    if plan.learn:
        remember(paths, target, legacy=client.protocol_version not in MODERN_PROTOCOL_VERSIONS)
    telemetry.connected(target.kind, target.url, client.protocol_version)

    def on_refused() -> None:
        remember(paths, target, legacy=True)  # the next connection (the retry) starts with the handshake
        client.learned.wants_back_channel = True

    legs.install(client, on_refused if plan.learn else None)
    if attempt.held_roots and options.roots is not None and client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        # A kept-alive server holds the roots of the command it asked before: this command's differ (another
        # directory, other --root). Told so, it asks again; the flow waits for that before its call.
        await client.session.send_notification(t.RootsListChangedNotification())
        client.learned.roots_asked_again = True


def _trace_connected(tracer: Tracer, client: Client) -> None:
    info = client.server_info
    tracer.fact(
        "connected",
        protocol=client.protocol_version,
        server_info=info.model_dump(mode="json", by_alias=True, exclude_none=True) if info else None,
        capabilities=client.server_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True),
        instructions=client.instructions,
    )


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


def learned(client: Client) -> Learned:
    """What ``client``'s connection learned of its server (a client ``connect`` did not make learned nothing)."""
    found = getattr(client, "learned", None)
    return found if isinstance(found, Learned) else Learned()


def roots_asked_again(client: Client) -> bool:
    """Whether the server will ask this connection for its roots before it can serve a call (see ``_settle``)."""
    return learned(client).roots_asked_again


def unlisted(client: Client, tool: str) -> None:
    """Call ``tool`` without a listing: the one mcpcli asked for could not be read.

    The SDK checks a result's structured content against the tool's listed output schema, and lists the tools
    again to find it, so a listing it cannot read would fail the call after the server ran it. With the schema
    recorded as unknown (as for a tool listed without one) nothing is checked.
    """
    client.session._tool_output_schemas[tool] = None  # see above (a private map of the SDK's session)


def required_urls(client: Client) -> list[t.ElicitRequestURLParams]:
    """The URL elicitations the last -32042 error carried (the flow reports only the error's message)."""
    return learned(client).required_urls


def wants_back_channel(client: Client) -> bool:
    """Whether this ``auto`` connection met a server that asks over the pre-2026 back-channel (``legs.FlowLegs``).

    When it did, the handshake is remembered for the target, so a new connection speaks it.
    """
    return learned(client).wants_back_channel


def back_channel_failure(client: Client) -> McpcliError | None:
    """The first error a back-channel answer raised on this connection (the server only heard a refusal).

    A pre-2026 server asks mid-call; when mcpcli cannot answer (an invalid ``--answer``), the server gets an
    error reply and usually ends the call with ``isError``. What the user must see is why mcpcli refused —
    with its own exit code (2 for a bad answer) — not the server's result.
    """
    failures = learned(client).failures
    return failures[0] if failures else None


def _second(mode: str) -> str:
    """The second attempt of ``connect``, named for the one line that says both failed."""
    return "the initialize handshake" if mode == "legacy" else "the 2026-07-28 probe, server/discover"


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
