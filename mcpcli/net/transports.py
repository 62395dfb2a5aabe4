"""mcpcli's transports, given to the SDK ``Client`` through its ``Transport`` hook: bounded, and quick to let go.

- ``stdio``: the SDK's stdio transport, rebuilt around two things it cannot be told: one message (one line)
  may be at most ``max_message_bytes`` long — a longer one is not read, the child is stopped and the
  connection ends — and shutting down gives the child a short grace after its stdin closes
  (``STDIN_GRACE``), then terminates its process group, instead of the SDK's fixed two seconds (a Node
  server keeps running on its timers after stdin closes, so every call waited them out).
- ``guarded``: any transport, with ``connect_timeout`` on the handshake: until ``Guard.connected`` is called,
  a read that waits past the deadline ends the stream, which the SDK's dispatcher turns into "connection
  closed" for the handshake request (a stdio server that never answers ``initialize``, or prints junk and
  sleeps, cannot hang the command).
- ``http_transport``: the httpx2 transport for streamable HTTP, whose POST responses are read under
  ``idle_timeout`` (SSE comments — keep-alives — do not count as activity; a message does; a ``subscriptions/listen``
  stream, quiet while nothing changes, has no such bound nor a read timeout) and
  ``max_message_bytes`` (a JSON body in all, each SSE event on its own); under the bounds, the connections are
  the worker's HTTP relay's when a command runs in the worker (``mcpcli.net.relayed``) and the server is not on this
  machine (``relay_for``), else its own — through the environment's proxy, if any (``mcpcli.net.proxies``).

Each bound that trips is recorded on the connection's ``Tripwire``; ``connection.connect`` says it.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import os
import re
import signal
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

from mcpcli.errors import UNREADABLE_RESPONSE
from mcpcli.net import proxies
from mcpcli.net.bounds import Tripwire
from mcpcli.platform import kill_signal, signal_group

logger = logging.getLogger(__name__)

STDIN_GRACE = 0.25
"""Seconds a stdio server may take to exit by itself once its stdin is closed, before it is terminated."""
TERM_GRACE = 1.0
"""Seconds between SIGTERM to the server's process group and SIGKILL."""
READ_CHUNK = 64 * 1024


# --- stdio -----------------------------------------------------------------------------------------------------------


@asynccontextmanager
async def stdio(params: StdioServerParameters, errlog: TextIO, trip: Tripwire) -> AsyncIterator[Any]:
    """Start the server and exchange newline-delimited JSON-RPC with it (the SDK's stdio transport, bounded)."""
    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() if params.env is None else params.env,  # the whole of it: net.serverenv
        stderr=errlog,
        cwd=params.cwd,
        start_new_session=True,  # its own process group: terminating it reaches the children it started
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    limit = trip.bounds.max_message_bytes

    async def reader() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        async with read_writer:
            try:
                while True:
                    try:
                        chunk = await process.stdout.receive(READ_CHUNK)
                    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                        return
                    start = len(buffer)
                    buffer += chunk
                    while (end := buffer.find(b"\n", start)) != -1:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        start = 0
                        if line.strip():
                            await read_writer.send(parse_line(line))
                    if len(buffer) > limit:
                        # Not one byte more is kept: the message is dropped and the connection ends with it.
                        trip.message_too_large()
                        return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the session is gone

    async def writer() -> None:
        assert process.stdin is not None
        await write_lines(write_reader, process.stdin.send, read_writer)

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                write_stream.close()
                read_stream.close()
                await stop(process)
            tg.cancel_scope.cancel()


async def write_lines(messages: Any, send: Callable[[bytes], Awaitable[None]], read_writer: Any) -> None:
    """The session's outgoing messages as newline-delimited JSON-RPC; when the other end is gone, the read side
    ends too, so the session sees the end instead of waiting."""
    try:
        async with messages:
            async for message in messages:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await send(data.encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        await read_writer.aclose()


def parse_line(line: bytes) -> SessionMessage | Exception:
    """One newline-delimited JSON-RPC line as the SDK's session reads it (a kept server's lines too: ``attach``)."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # junk on stdout: the session hears of it, the handshake guard bounds the wait
        if (request_id := _response_id(line)) is not None:
            # A response that cannot be read (nested past what can be read, or not of a response's shape) still
            # ends its request, as the SDK's HTTP transport ends one: with an error for its id. Dropped, the
            # request would wait for ever.
            logger.debug("an unreadable response from the server to %r", request_id)
            error = types.ErrorData(code=types.PARSE_ERROR, message=UNREADABLE_RESPONSE)
            return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
        logger.debug("not a JSON-RPC message from the server: %.200r", line)
        return exc


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]]|-?\d+|true|false|null')
_COLON = re.compile(rb"\s*:")


def _response_id(line: bytes) -> str | int | None:
    """The ``id`` of a JSON-RPC response whose ``result`` or ``error`` could not be read, found by scanning the
    top-level object's keys (no nesting is parsed, so no depth is too deep); None when the line is not one."""
    depth = 0
    key: bytes | None = None
    keys: set[bytes] = set()
    request_id: str | int | None = None
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token in (b"{", b"["):
            depth, key = depth + 1, None
        elif token in (b"}", b"]"):
            depth -= 1
        elif depth != 1:
            continue
        elif key is not None:  # a top-level key's scalar value
            if key == b'"id"':
                try:
                    value = json.loads(token)
                except ValueError:
                    return None
                request_id = value if isinstance(value, str | int) else None
            key = None
        elif token.startswith(b'"') and _COLON.match(line, match.end()):
            key = token
            keys.add(token)
    if request_id is None or not keys & {b'"result"', b'"error"'} or b'"method"' in keys:
        return None
    return request_id


async def stop(process: anyio.abc.Process) -> None:
    """Close stdin, give the server ``STDIN_GRACE`` to exit, then SIGTERM its group, then SIGKILL."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    if not await _exited(process, STDIN_GRACE):
        _signal_group(process, signal.SIGTERM)
        if not await _exited(process, TERM_GRACE):
            _signal_group(process, kill_signal())
            await _exited(process, TERM_GRACE)
    if process.returncode is not None:
        # Whatever it started and left behind in its group goes too (a shell wrapper's child, npx's node).
        _signal_group(process, signal.SIGTERM)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    if callable(close := getattr(transport, "close", None)):
        with suppress(PermissionError):
            close()  # asyncio keeps the subprocess transport open while a survivor holds a pipe


async def _exited(process: anyio.abc.Process, seconds: float) -> bool:
    deadline = anyio.current_time() + seconds
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(0.01)
    return True


def _signal_group(process: anyio.abc.Process, sig: int) -> None:
    signal_group(process.pid, sig)  # where there are no process groups (Windows): the process itself, hard


# --- the handshake guard -------------------------------------------------------------------------------------------


class Guard:
    """Wraps a transport: reads wait at most until the handshake deadline, until ``connected()`` is called."""

    def __init__(self, inner: Any, trip: Tripwire) -> None:
        self._inner = inner
        self._trip = trip
        self._deadline: float | None = None

    def connected(self) -> None:
        """The handshake is over: from now on a read waits as long as the request takes."""
        self._deadline = None

    async def __aenter__(self) -> tuple[Any, Any]:
        self._deadline = anyio.current_time() + self._trip.bounds.connect_timeout
        read, write = await self._inner.__aenter__()
        return _GuardedRead(read, self), write

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


class _GuardedRead:
    def __init__(self, inner: Any, guard: Guard) -> None:
        self._inner = inner
        self._guard = guard

    def __aiter__(self) -> _GuardedRead:
        return self

    async def __anext__(self) -> Any:
        deadline = self._guard._deadline
        if deadline is None:
            return await self._inner.__anext__()
        with anyio.move_on_at(deadline):
            return await self._inner.__anext__()
        self._guard._trip.handshake()
        raise StopAsyncIteration  # the dispatcher's end of stream: the pending handshake request fails

    async def receive(self) -> Any:
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _GuardedRead:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


# --- streamable HTTP -------------------------------------------------------------------------------------------------


class LimitExceeded(httpx2.StreamError):
    """Raised from a response body that broke a bound; the SDK fails that one request with it."""


def http_transport(trip: Tripwire, url: str) -> httpx2.AsyncBaseTransport:
    """The transport for streamable HTTP to ``url``, with every POST response's body read under the bounds:
    through the worker's HTTP relay, whose connections outlive the command (``mcpcli.net.relayed``), when
    ``relay_for`` says so; otherwise — and whenever the relay cannot take a request — direct."""
    if relay := relay_for(url):
        from mcpcli.net.relayed import RelayTransport

        settings = connection_settings()
        proxies.check(settings)  # a proxy setting that cannot be used is said now, not in the relay's log
        return _BoundedTransport(RelayTransport(relay, settings, direct_transport), trip)
    return _BoundedTransport(direct_transport(), trip)


def relay_for(url: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The worker's relay socket for requests to ``url``, or None: go direct.

    Only in a worker's command (``RELAY_ENV`` set). A server on this machine is reached direct unless
    ``MCPCLI_HTTP_RELAY=all``: the relay saves TCP and TLS handshakes — round trips to a remote server — at the cost
    of one more hop for every request (about a millisecond), and a handshake over loopback costs less than that.
    """
    relay = environ.get(RELAY_ENV)
    if not relay:
        return None
    if environ.get(RELAY_ALL_ENV, "").strip().lower() == "all":
        return relay
    return None if on_this_machine(url) else relay


def on_this_machine(url: str) -> bool:
    """Whether ``url``'s host is this machine: ``localhost`` (and ``*.localhost``) or a loopback address."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


RELAY_ENV = "MCPCLI_RELAY_SOCKET"
"""Set by the worker in each command's environment: where its HTTP relay listens (never set in-process)."""

RELAY_ALL_ENV = "MCPCLI_HTTP_RELAY"
"""The user's switch: ``0``/``off`` — no relay (the worker leaves ``RELAY_ENV`` unset); ``all`` — servers on this
machine through it too; anything else — remote servers through it."""


def connection_settings(environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """What a direct transport's connections depend on in the environment: the CA bundle or directory that
    verifies servers, and the proxies (``mcpcli.net.proxies``). The relay keeps one pool per distinct value (its own
    environment is not the caller's)."""
    env = os.environ if environ is None else environ
    # Absolute: a relative path names a file in the caller's directory, and the relay runs in another.
    settings = {
        name: str(Path(value).absolute()) if (value := env.get(variable)) else None for name, variable in _CA_VARIABLES
    }
    return settings | proxies.from_environment(env)


_CA_VARIABLES = (("cert_file", "SSL_CERT_FILE"), ("cert_dir", "SSL_CERT_DIR"))


def direct_transport(
    settings: Mapping[str, str | None] | None = None, limits: httpx2.Limits | None = None
) -> httpx2.AsyncBaseTransport:
    """httpx2's own transport, verifying servers and going through proxies as ``settings`` (default: this
    process's environment) say."""
    given = connection_settings() if settings is None else settings

    def made(proxy: httpx2.Proxy | None = None, verify: ssl.SSLContext | None = None) -> httpx2.AsyncHTTPTransport:
        verify = verify or _tls_context(given.get("cert_file"), given.get("cert_dir"))
        if limits is None:
            return httpx2.AsyncHTTPTransport(verify=verify, proxy=proxy)
        return httpx2.AsyncHTTPTransport(verify=verify, proxy=proxy, limits=limits)

    if proxies.check(given):
        return proxies.route(given, made(), made)
    return _ByScheme(made)


class _ByScheme(httpx2.AsyncBaseTransport):
    """The direct transport without a proxy: ``https`` requests on one verifying servers with the CA bundle, made
    at the first of them, plain ``http`` ones on another whose TLS context trusts nothing. Reading the CA bundle
    costs tens of milliseconds (a cold ``call`` to a server on ``http://`` paid it for nothing); a TLS connection
    on the plain one would fail verification, never go unverified."""

    def __init__(self, made: Callable[..., httpx2.AsyncHTTPTransport]) -> None:
        self._made = made
        self._plain: httpx2.AsyncHTTPTransport | None = None
        self._tls: httpx2.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.scheme == "http":
            self._plain = self._plain or self._made(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
            return await self._plain.handle_async_request(request)
        self._tls = self._tls or self._made()
        return await self._tls.handle_async_request(request)

    @property
    def parts(self) -> list[httpx2.AsyncHTTPTransport]:
        """The transports made so far (the worker's relay counts their connections, as ``proxies``' routing's)."""
        return [inner for inner in (self._plain, self._tls) if inner is not None]

    async def aclose(self) -> None:
        for inner in self.parts:
            await inner.aclose()


def tls_context() -> ssl.SSLContext:
    """httpx2's default TLS context, made once per process and CA setting: building one reads the whole CA bundle
    (tens of milliseconds), and a warm worker would otherwise pay that on every command."""
    settings = connection_settings()
    return _tls_context(settings["cert_file"], settings["cert_dir"])


@functools.cache
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """What httpx2 builds from ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, from the values given rather than this
    process's environment (the relay builds contexts for its callers' environments)."""
    if cert_file:
        return ssl.create_default_context(cafile=cert_file)
    if cert_dir:
        return ssl.create_default_context(capath=cert_dir)
    return httpx2.create_ssl_context(trust_env=False)


class _BoundedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, trip: Tripwire) -> None:
        self._inner = inner
        self._trip = trip

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        # A listen stream is quiet while nothing changes (a watch; a task's status): it is its own end, so no read
        # timeout on it (nor the idle bound below); the connect timeout and the message bound stay.
        listen = request.headers.get("mcp-method") == "subscriptions/listen"
        if listen:
            timeouts = dict(request.extensions.get("timeout") or {})
            request.extensions = {**request.extensions, "timeout": {**timeouts, "read": None}}
        response = await self._inner.handle_async_request(request)
        if response.status_code >= 400:
            self._trip.http_status = f"{response.status_code} {httpx2.codes.get_reason_phrase(response.status_code)}"
        if request.method != "POST":  # the GET stream may rightly stay quiet for hours; it reconnects by itself
            return response
        kind = response.headers.get("content-type", "").lower()
        declared = response.headers.get("content-length", "")
        stream = _BoundedStream(
            response.stream,  # type: ignore[arg-type]  # an async transport's responses carry an async stream
            self._trip,
            sse=kind.startswith("text/event-stream"),
            declared=int(declared) if declared.isdigit() else None,
            idle=not listen,
        )
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=stream,
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedStream(httpx2.AsyncByteStream):
    """A response body: idle at most ``idle_timeout`` between messages (unless ``idle`` is false: a listen stream), no
    message over ``max_message_bytes``."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, trip: Tripwire, *, sse: bool, declared: int | None, idle: bool = True
    ) -> None:
        self._inner = inner
        self._trip = trip
        self._sse = sse
        self._declared = declared
        self._idle = trip.bounds.idle_timeout if idle else float("inf")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        bounds = self._trip.bounds
        limit = bounds.max_message_bytes
        if not self._sse and self._declared is not None and self._declared > limit:
            self._trip.message_too_large(self._declared)
            raise LimitExceeded("message too large")
        chunks = aiter(self._inner)
        deadline = anyio.current_time() + self._idle
        total = 0  # JSON: the whole body; SSE: the event being read
        head = bytearray()  # SSE: the start of the line being read, to tell a comment from a field
        while True:
            chunk = None
            with anyio.move_on_at(deadline):
                try:
                    chunk = await anext(chunks)
                except StopAsyncIteration:
                    return
            if chunk is None:
                self._trip.idle()
                raise LimitExceeded("idle")
            if not self._sse:
                total += len(chunk)
                if total > limit:
                    self._trip.message_too_large()
                    raise LimitExceeded("message too large")
                deadline = anyio.current_time() + self._idle
                yield chunk
                continue
            for piece in chunk.splitlines(keepends=True):  # only the last piece may be a line still unfinished
                total += len(piece)
                if total > limit:
                    self._trip.message_too_large()
                    raise LimitExceeded("message too large")
                if len(head) < 8:
                    head += piece[: 8 - len(head)]
                if not piece.endswith((b"\n", b"\r")):
                    continue
                text = bytes(head).strip()
                head.clear()
                if not text:
                    total = 0  # an event ends at a blank line
                elif not text.startswith(b":"):
                    deadline = anyio.current_time() + self._idle  # a field of an event: the server is busy
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
