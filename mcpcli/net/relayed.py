"""A command's side of the worker's HTTP relay: an httpx2 transport that sends each request through the relay, whose
connection pools outlive the command — and the frames both sides speak.

Inside the worker a command runs in a forked child that lives for one command, so a TCP + TLS connection it opened
would die with it (1-3 round trips to a remote server, every command). The relay (``mcpcli.worker.relay``) is a
process of the worker's that keeps httpx2 connection pools; ``RelayTransport`` takes the place of the direct
``httpx2.AsyncHTTPTransport`` under the bounds (``transports._BoundedTransport`` stays above it, in the command), and
the client above still follows redirects, signs requests in and decodes bodies: the relay only moves bytes.

One exchange is one fresh Unix connection; a frame is a type byte, a 4-byte length and that many bytes:

- relay → ``A`` ``{version}``: ready (or ``R``: refused, too busy). Until then the request may still go direct.
- command → ``Q`` ``{method, url, headers, timeout, settings}``, then ``B`` (the body). From here it is the relay's.
- relay → ``H`` ``{status, headers, …}``, ``D`` chunks, ``E`` (the end); or ``X`` ``{type, message}`` (an httpx2
  error, raised here as the same class) at any point; or ``R`` when it took nothing upstream (sent direct then).

Closing the connection (the response closed early, the command gone) makes the relay cancel the upstream request.
Nothing fails because of the relay: when it cannot be reached, does not say ``A`` in time or refuses, the request
goes direct. Only once the request is handed over does a relay that dies fail the request, as a broken connection
would (it may have reached the server: sending it again could run a tool twice).
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
import anyio.abc
import httpx2
from anyio.streams.buffered import BufferedByteReceiveStream

from mcpcli import __version__
from mcpcli.framing import FramingError, read_exactly
from mcpcli.platform import peer, uid, unix_socket

READY_TIMEOUT = 3.0
"""Seconds a command waits for the relay's ``A`` before sending the request direct (a stopped or hung relay costs
this once: the rest of the command goes direct)."""

SLACK = 5.0
"""Seconds a command waits for the relay beyond the request's own timeouts, which the relay enforces upstream."""

MAX_BODY = 16 * 2**20
"""The largest request body sent through the relay (which holds it, to send it again when a kept connection turns
out closed); a larger one goes direct."""

MAX_HEAD = 2**20
"""The largest JSON frame either side reads (a request's or response's headers)."""

MAX_CHUNK = 4 * 2**20
"""The largest ``D`` frame a command reads (the relay sends what one read from the server gave: 64 KiB)."""

FRAME = struct.Struct(">cI")

ERRORS: dict[str, type[httpx2.TransportError]] = {
    cls.__name__: cls
    for cls in (
        httpx2.TransportError,
        httpx2.TimeoutException,
        httpx2.ConnectTimeout,
        httpx2.ReadTimeout,
        httpx2.WriteTimeout,
        httpx2.PoolTimeout,
        httpx2.NetworkError,
        httpx2.ConnectError,
        httpx2.ReadError,
        httpx2.WriteError,
        httpx2.CloseError,
        httpx2.ProxyError,
        httpx2.UnsupportedProtocol,
        httpx2.ProtocolError,
        httpx2.LocalProtocolError,
        httpx2.RemoteProtocolError,
    )
}
"""The httpx2 errors an ``X`` frame may name (any other becomes ``TransportError``)."""

STREAM_ERRORS = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)
"""What a Unix connection raises when the other side has gone."""


class FrameError(Exception):
    """Something on a relay connection that is not a frame of the protocol (or one too long)."""


def frame(kind: bytes, payload: bytes | Mapping[str, Any] = b"") -> bytes:
    data = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
    return FRAME.pack(kind, len(data)) + data


async def read_frame(reader: BufferedByteReceiveStream, limit: int) -> tuple[bytes, bytes]:
    """One frame: its type and payload (``FrameError`` past ``limit``; the stream's errors at its end)."""
    kind, length = FRAME.unpack(await reader.receive_exactly(FRAME.size))
    if length > limit:
        raise FrameError(f"a frame of {length} bytes")
    return kind, (await reader.receive_exactly(length) if length else b"")


def loads(payload: bytes) -> dict[str, Any]:
    try:
        value = json.loads(payload)
    except ValueError:
        raise FrameError("not JSON") from None
    if not isinstance(value, dict):
        raise FrameError("not an object")
    return value


def error_of(exc: httpx2.HTTPError) -> dict[str, Any]:
    """An ``X`` frame's payload for ``exc``: the class to raise on the other side, its message, and the socket error
    beneath it (so that the command says "nothing is listening", not the relay's "All connection attempts failed")."""
    from mcpcli.net.causes import socket_cause

    name = type(exc).__name__
    said: dict[str, Any] = {"type": name if name in ERRORS else "TransportError", "message": str(exc)}
    if (cause := socket_cause(exc)) is not None:
        said["cause"] = cause
    return said


def _raised(payload: bytes, request: httpx2.Request) -> httpx2.TransportError:
    try:
        said = loads(payload)
    except FrameError:
        said = {}
    from mcpcli.net.causes import rebuilt_cause

    cls = ERRORS.get(str(said.get("type")), httpx2.TransportError)
    raised = cls(str(said.get("message") or "the request failed"), request=request)
    raised.__cause__ = rebuilt_cause(said.get("cause"))
    return raised


def _relay_gone(request: httpx2.Request) -> httpx2.RemoteProtocolError:
    return httpx2.RemoteProtocolError("the worker's HTTP relay stopped during the request", request=request)


class RelayTransport(httpx2.AsyncBaseTransport):
    """Requests through the relay at ``path``; direct (``direct()``, built on first need) whenever it cannot
    take one. ``settings`` are this command's connection settings (``transports.connection_settings``)."""

    def __init__(
        self, path: str, settings: Mapping[str, str | None], direct: Callable[[], httpx2.AsyncBaseTransport]
    ) -> None:
        self._path = path
        self._settings = dict(settings)
        self._make_direct = direct
        self._direct: httpx2.AsyncBaseTransport | None = None
        self._usable = True
        """False once the relay was not there: the rest of this command goes direct (no wait per request)."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await self._body(request) if self._usable else None
        if body is None:
            return await self._send_direct(request)
        ready = await self._ready()
        if ready is None:
            return await self._send_direct(request)
        stream, reader = ready
        try:
            return await self._exchange(stream, reader, request, body)
        except _Refused:
            await stream.aclose()
            return await self._send_direct(request)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise

    async def _body(self, request: httpx2.Request) -> bytes | None:
        """The whole request body (the SDK's are small JSON), or ``None`` when it is too large to relay."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY:
            return None
        body = await request.aread()  # a streamed body is kept in the request: a direct send can still use it
        return body if len(body) <= MAX_BODY else None

    async def _ready(self) -> tuple[anyio.abc.SocketStream, BufferedByteReceiveStream] | None:
        """A connection to the relay that said ``A``, or ``None`` (then the request goes direct)."""
        stream: anyio.abc.SocketStream | None = None
        with anyio.move_on_after(READY_TIMEOUT):
            try:
                stream = await anyio.connect_unix(self._path)
                if peer(stream.extra(anyio.abc.SocketAttribute.raw_socket))[1] != uid():
                    raise FrameError("the relay's socket is another user's")
                reader = BufferedByteReceiveStream(stream)
                kind, payload = await read_frame(reader, MAX_HEAD)
                if kind == b"A" and loads(payload).get("version") == __version__:
                    return stream, reader
                if kind == b"R":  # busy: this request goes direct, the next one asks again
                    await stream.aclose()
                    return None
            except (*STREAM_ERRORS, FrameError):
                pass
        self._usable = False  # missing, mute, or not ours to use
        if stream is not None:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
        return None

    async def _exchange(
        self,
        stream: anyio.abc.SocketStream,
        reader: BufferedByteReceiveStream,
        request: httpx2.Request,
        body: bytes,
    ) -> httpx2.Response:
        timeout = dict(request.extensions.get("timeout") or {})
        ask = {
            "version": __version__,
            "method": request.method,
            "url": str(request.url),
            "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in request.headers.raw],
            "timeout": {k: timeout.get(k) for k in ("connect", "read", "write", "pool")},
            "settings": self._settings,
        }
        try:
            await stream.send(frame(b"Q", ask) + frame(b"B", body))
        except STREAM_ERRORS:
            raise _Refused from None  # the relay went before it had the whole request: nothing was sent upstream
        waits = [timeout.get(k) for k in ("connect", "write", "read", "pool")]
        limit = None if None in waits else sum(float(w) for w in waits if w is not None) + SLACK
        try:
            with anyio.fail_after(limit):
                kind, payload = await read_frame(reader, MAX_HEAD)
        except TimeoutError:
            raise httpx2.ReadTimeout("the worker's HTTP relay did not answer in time", request=request) from None
        except (*STREAM_ERRORS, FrameError):
            raise _relay_gone(request) from None
        if kind == b"R":
            raise _Refused
        if kind == b"X":
            raise _raised(payload, request)
        if kind != b"H":
            raise _relay_gone(request)
        head = loads(payload)
        read = timeout.get("read")
        return httpx2.Response(
            status_code=int(head["status"]),
            headers=[(str(k).encode("latin-1"), str(v).encode("latin-1")) for k, v in head["headers"]],
            stream=_RelayedBody(stream, reader, request, None if read is None else float(read) + SLACK),
            extensions={
                "http_version": str(head.get("http_version", "HTTP/1.1")).encode("latin-1"),
                "reason_phrase": str(head.get("reason_phrase", "")).encode("latin-1"),
            },
            request=request,
        )

    async def _send_direct(self, request: httpx2.Request) -> httpx2.Response:
        if self._direct is None:
            self._direct = self._make_direct()
        return await self._direct.handle_async_request(request)

    async def aclose(self) -> None:
        if self._direct is not None:
            await self._direct.aclose()


class _Refused(Exception):
    """The relay took nothing upstream: the request goes direct."""


class _RelayedBody(httpx2.AsyncByteStream):
    """A response body arriving from the relay: ``D`` frames until ``E``; ``X`` is the upstream's error."""

    def __init__(
        self,
        stream: anyio.abc.SocketStream,
        reader: BufferedByteReceiveStream,
        request: httpx2.Request,
        read_timeout: float | None,
    ) -> None:
        self._stream = stream
        self._reader = reader
        self._request = request
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            try:
                with anyio.fail_after(self._read_timeout):
                    kind, payload = await read_frame(self._reader, MAX_CHUNK)
            except TimeoutError:
                raise httpx2.ReadTimeout(
                    "the worker's HTTP relay sent nothing in time", request=self._request
                ) from None
            except (*STREAM_ERRORS, FrameError):
                raise _relay_gone(self._request) from None
            if kind == b"D":
                yield payload
            elif kind == b"E":
                await self.aclose()  # the exchange is over: the relay has put the connection back in its pool
                return
            elif kind == b"X":
                raise _raised(payload, self._request)
            else:
                raise _relay_gone(self._request)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._stream.aclose()  # before the end: the relay cancels the upstream request


def relay_status(path: str, timeout: float = 2.0) -> dict[str, Any] | None:
    """The relay's counters (``S``), or ``None`` when it does not answer; blocking (for ``mcpcli worker status``)."""
    sock = unix_socket()
    sock.settimeout(timeout)
    with sock:
        try:
            sock.connect(path)
            kind, _ = _read_frame_blocking(sock)
            if kind != b"A":
                return None
            sock.sendall(frame(b"S"))
            kind, payload = _read_frame_blocking(sock)
            return loads(payload) if kind == b"S" else None
        except (OSError, FramingError, FrameError, struct.error):
            return None


def _read_frame_blocking(sock: socket.socket) -> tuple[bytes, bytes]:
    kind, length = FRAME.unpack(read_exactly(sock, FRAME.size))
    if length > MAX_HEAD:
        raise FrameError(f"a frame of {length} bytes")
    return kind, read_exactly(sock, length)
