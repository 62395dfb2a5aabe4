"""Target → a connected ``mcp.Client`` (streamable HTTP, stdio, or the built-in demo in-process).

Also the one place mcpcli reaches inside the SDK: ``_FlowLegs`` wraps the
session's dispatcher so that every leg of a flow goes out under a fresh,
globally unique JSON-RPC id (a retry sent by another process must never reuse
an earlier leg's id), and so that a complete result without ``resultType`` —
the spec's default — is accepted (mcp 2.3.0's models reject it).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import mcp_types as t
from mcp import Client
from mcp.client.session import ClientRequestContext, LoggingFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpcli import __version__
from mcpcli.auth import Credentials
from mcpcli.config import Paths, Target, private_dir
from mcpcli.errors import McpcliError, ServerError, UsageError
from mcpcli.server_logs import opt_in_to_logs
from mcpcli.trace import Tracer, traced

Protocol = Literal["auto", "legacy", "2026-07-28"]
BackChannel = Callable[[t.InputRequest], Awaitable[t.InputResponse | t.ErrorData]]

FLOW_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
STDERR_TAIL_LINES = 8


class _FlowLegs:
    """Dispatcher wrapper: fresh string ids for flow legs, and ``resultType`` defaulted to ``complete``."""

    def __init__(self, inner: Any, client: Client) -> None:
        self._inner = inner
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        if method in FLOW_METHODS:
            # A string that does not parse as an integer never collides with the dispatcher's own counter,
            # nor with any id an earlier process used for another leg of the same flow.
            opts = {**(opts or {}), "request_id": f"mcpcli-{secrets.token_hex(8)}"}
        raw: dict[str, Any] = await self._inner.send_raw_request(method, params, opts, **kw)
        if method in FLOW_METHODS and "resultType" not in raw and self._modern():
            raw = {**raw, "resultType": "complete"}
        return raw

    def _modern(self) -> bool:
        return self._client.session.protocol_version in MODERN_PROTOCOL_VERSIONS


def _install_flow_legs(client: Client) -> None:
    session = client.session
    session._dispatcher = _FlowLegs(session._dispatcher, client)  # type: ignore[assignment]  # see module docstring


class _ServerLog:
    """A stdio server's stderr, appended to a private log file; its tail explains a failed start."""

    def __init__(self, paths: Paths, target: Target) -> None:
        self.path = paths.log_dir / "servers.log"
        try:
            private_dir(paths.log_dir)
            self.file = open(self.path, "a", encoding="utf-8", errors="replace", opener=_private_opener)  # noqa: SIM115
        except OSError:  # a read-only home: the server's stderr goes nowhere (mcpcli already warned about logs)
            self.path = Path(os.devnull)
            self.file = self.path.open("w", encoding="utf-8")
        self.file.write(f"--- {datetime.now(UTC).isoformat()} {target.label}\n")
        self.file.flush()
        self.start = self.file.tell()

    def tail(self) -> str:
        self.file.flush()
        if str(self.path) == os.devnull:
            return ""
        with self.path.open(encoding="utf-8", errors="replace") as f:
            f.seek(self.start)
            lines = [line.rstrip() for line in f.read().splitlines() if line.strip()]
        return "\n".join(lines[-STDERR_TAIL_LINES:])


def _private_opener(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


@asynccontextmanager
async def connect(
    target: Target,
    paths: Paths,
    *,
    protocol: Protocol = "auto",
    elicitation: BackChannel | None = None,
    roots: BackChannel | None = None,
    sampling: BackChannel | None = None,
    sampling_tools: bool = False,
    credentials: Credentials | None = None,
    tracer: Tracer | None = None,
    log_level: str | None = None,
    on_log: LoggingFnT | None = None,
) -> AsyncIterator[Client]:
    """Connect to ``target`` and yield the entered ``Client``; failures become one-line ``ServerError``s.

    The back-channel callbacks serve pre-2026 servers; on 2026-07-28 nothing flows server → client.
    ``credentials`` decide how an HTTP server is signed in to (default: OAuth, never interactive).
    ``tracer`` taps every message (none: no tap at all); ``log_level`` opts in to the server's log messages,
    which go to ``on_log``.
    """
    if protocol not in ("auto", "legacy", "2026-07-28"):
        raise UsageError(f"Unknown protocol {protocol!r}.", hint="Use --protocol auto, legacy or 2026-07-28.")
    async with AsyncExitStack() as stack:
        creds = credentials or Credentials()
        if tracer is not None and creds.on_secret is None:
            creds.on_secret = tracer.register_secret  # every token sent (static, OAuth, refreshed) stays out of it
        server, log = _server_for(target, paths, stack, creds)
        if tracer is not None:
            tracer.register_headers(target.headers)
            server = traced(server, tracer)
        client = Client(
            server,
            mode=protocol,
            client_info=t.Implementation(name="mcpcli", version=__version__),
            elicitation_callback=_callback(elicitation) if elicitation else None,
            list_roots_callback=_roots_callback(roots) if roots else None,
            sampling_callback=_callback(sampling) if sampling else None,
            # Offered only when the user's provider has a model that can use tools (a ``tools`` tag).
            sampling_capabilities=t.SamplingCapability(tools=t.SamplingToolsCapability()) if sampling_tools else None,
            cache=None,
            logging_callback=on_log,
            log_level=log_level,  # type: ignore[arg-type]  # checked: one of LoggingLevel's values
        )
        try:
            # No cancel scope around this: the client's task group must outlive it (anyio scopes nest strictly).
            await stack.enter_async_context(client)
        except Exception as exc:  # boundary: transports raise many shapes (ExceptionGroup, httpx2 errors)
            raise _connect_failure(target, log, creds, exc) from None
        _install_flow_legs(client)
        if log_level is not None:
            await opt_in_to_logs(client, log_level)
        yield client


def _server_for(
    target: Target, paths: Paths, stack: AsyncExitStack, credentials: Credentials
) -> tuple[Any, _ServerLog | None]:
    if target.kind == "demo":
        from mcpcli.demo import build_server, load_or_create_key

        return build_server(load_or_create_key(paths.demo_key_file)), None
    if target.kind == "http":
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert target.url is not None
        headers, auth = credentials.prepare(target, paths)
        # The SDK's own defaults: a server may hold a response stream open for minutes.
        http = httpx2.AsyncClient(
            headers=headers,
            auth=auth,
            timeout=httpx2.Timeout(30.0, read=300.0),
            event_hooks={"response": [credentials.watch]},
        )
        stack.push_async_callback(http.aclose)
        return streamable_http_client(target.url, http_client=http), None
    assert target.command is not None
    log = _ServerLog(paths, target)
    stack.callback(log.file.close)
    params = StdioServerParameters(
        command=target.command, args=list(target.args), env=dict(target.env) or None, cwd=target.cwd
    )
    return stdio_client(params, errlog=log.file), log


def _start_failure(target: Target, log: _ServerLog | None, why: str) -> ServerError:
    where = f"server {target.label!r}"
    hint = "Check the target with: mcpcli info -s TARGET"
    if log is not None:
        if tail := log.tail():
            why = f"{why}\n{tail}"
        hint = f"The server's output is in {log.path}"
    return ServerError(f"Cannot connect to {where}: {why}", title="Connection failed", hint=hint)


def _connect_failure(target: Target, log: _ServerLog | None, creds: Credentials, exc: Exception) -> McpcliError:
    """One line for a failed start: a sign-in that could not happen, a refused token, or what the transport said."""
    if target.kind == "http":
        from mcpcli.auth.login import sign_in_error

        if (failure := sign_in_error(target.label, exc) or creds.refusal(target.label)) is not None:
            return failure
    if isinstance(exc, OSError):
        return _start_failure(target, log, exc.strerror or str(exc))
    return _start_failure(target, log, _describe(exc))


def _describe(exc: BaseException) -> str:
    """The innermost meaningful message of a (possibly grouped) transport failure."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.message
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0]


def transport_failure(exc: BaseException) -> str | None:
    """One line for a transport that failed under a running flow (it surfaces from the connection's task group),
    or ``None`` when ``exc`` is not a transport failure."""
    import anyio
    import httpx2

    if isinstance(exc, httpx2.RemoteProtocolError | anyio.EndOfStream | anyio.BrokenResourceError | ConnectionError):
        return f"The server closed the connection before answering ({_describe(exc).rstrip('.')})."
    if isinstance(exc, anyio.ClosedResourceError):
        return "The server closed the connection before answering."
    if isinstance(exc, httpx2.TimeoutException):
        return f"The server stopped answering ({_describe(exc).rstrip('.')})."
    if isinstance(exc, httpx2.TransportError | OSError):
        return f"The connection to the server failed: {_describe(exc).rstrip('.')}."
    return None


def _callback(handler: BackChannel) -> Any:
    async def callback(ctx: ClientRequestContext, params: Any) -> Any:
        if isinstance(params, t.CreateMessageRequestParams):
            return await handler(t.CreateMessageRequest(params=params))
        return await handler(t.ElicitRequest(params=params))

    return callback


def _roots_callback(handler: BackChannel) -> Any:
    async def callback(ctx: ClientRequestContext) -> Any:
        return await handler(t.ListRootsRequest())

    return callback
