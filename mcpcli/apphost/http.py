"""The app host's HTTP/1.1 on 127.0.0.1: one bounded request per connection, checked before anything is served.

Small on purpose: the app host's servers (``apphost.host``) answer a handful of fixed paths to one local
browser, so this reads one request (request line and headers within ``HEAD_MAX``, a ``Content-Length`` body within
``BODY_MAX``, all within ``READ_TIMEOUT``), refuses what a browser would never send, and answers with
``Connection: close``. Every answer carries ``Cache-Control: no-store``, ``X-Content-Type-Options: nosniff`` and
``Referrer-Policy: no-referrer``, and never a CORS header. The ``Host`` header must be exactly
``127.0.0.1:<port>``: a page of another site that rebinds its name to 127.0.0.1 sends its own name and is refused.
No secret is ever logged: refusals are logged at debug with the path's first segment only.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import anyio
import anyio.abc

logger = logging.getLogger(__name__)

HEAD_MAX = 16 * 1024
"""Bytes of request line and headers a request may have (431 past it)."""
BODY_MAX = 4 * 1024 * 1024
"""Bytes of body a request may have (413 past it)."""
READ_TIMEOUT = 10.0
"""Seconds a client has to send one whole request."""
CONNECTIONS_MAX = 64
"""Connections open at once, over all of one host's servers (past it a new one is answered 503)."""

REASONS = {
    200: "OK",
    204: "No Content",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
    503: "Service Unavailable",
}

SAFE_HEADERS = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Connection", "close"),
)


class HttpRefusal(Exception):
    """A request answered with ``status`` and nothing else (the reason is logged at debug, never shown)."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


@dataclass
class Request:
    """One request: method, path (no query), lower-cased headers, body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""


@dataclass
class Response:
    """An answer: status, content type, body, and extra headers (a CSP, a frame policy)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)


Stream = anyio.abc.ByteStream
Handler = Callable[[Request, Stream], Awaitable[Response | None]]
"""Answers a request; returns None when it wrote (and streamed) its answer itself."""


def head(status: int, content_type: str, headers: Iterable[tuple[str, str]], length: int | None) -> bytes:
    """The status line and headers of an answer (``length`` None: the body runs until the connection closes)."""
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", f"Content-Type: {content_type}"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines += [f"{name}: {value}" for name, value in (*SAFE_HEADERS, *headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def read_request(stream: Stream, port: int, origins: frozenset[str]) -> Request:
    """One request from ``stream``, or HttpRefusal: too big, malformed, or with a foreign ``Host`` or ``Origin``.

    ``origins`` are the ``Origin`` values this server accepts when a request has one (its own origin; a navigation
    or a classic script has none).
    """
    buffer = bytearray()
    while (end := buffer.find(b"\r\n\r\n")) < 0:
        if len(buffer) > HEAD_MAX:
            raise HttpRefusal(431, "headers too large")
        try:
            chunk = await stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            raise HttpRefusal(400, "connection closed mid-request") from None
        buffer += chunk
    if end > HEAD_MAX:
        raise HttpRefusal(431, "headers too large")
    lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[1].startswith("/"):
        raise HttpRefusal(400, "not an HTTP/1.x request line")
    method, target = parts[0], parts[1]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        name = name.strip().lower()
        if not colon or not name or name != name.strip() or " " in name:
            raise HttpRefusal(400, "malformed header")
        if name in headers and name in ("host", "origin", "content-length", "transfer-encoding"):
            raise HttpRefusal(400, f"repeated {name}")
        headers[name] = value.strip()
    if headers.get("host") != f"127.0.0.1:{port}":
        raise HttpRefusal(403, "foreign Host")
    if "origin" in headers and headers["origin"] not in origins:
        raise HttpRefusal(403, "foreign Origin")
    if "transfer-encoding" in headers:
        raise HttpRefusal(501, "chunked bodies are not taken")
    raw_length = headers.get("content-length", "0")
    if not raw_length.isdigit():
        raise HttpRefusal(400, "bad Content-Length")
    length = int(raw_length)
    if length > BODY_MAX:
        raise HttpRefusal(413, "body too large")
    body = bytearray(buffer[end + 4 :])
    while len(body) < length:
        try:
            body += await stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            raise HttpRefusal(400, "connection closed mid-body") from None
    if len(body) > length:
        raise HttpRefusal(400, "more than Content-Length")
    return Request(method, target.split("?", 1)[0], headers, bytes(body))


async def serve(
    listener: anyio.abc.SocketListener,
    handler: Handler,
    origins: frozenset[str],
    limiter: anyio.CapacityLimiter,
) -> None:
    """Serves ``listener`` until cancelled (then closes it): each connection one request, read in bounds, then
    ``handler``'s answer."""
    port = int(listener.extra(anyio.abc.SocketAttribute.local_address)[1])

    async def one(stream: Stream) -> None:
        async with stream:
            try:
                limiter.acquire_nowait()
            except anyio.WouldBlock:
                await _answer(stream, Response(503, b"busy"))
                return
            try:
                await _one(stream)
            except Exception:  # one request's failure is not the host's: the view or page sees a dropped connection
                logger.debug("app host :%d: request failed", port, exc_info=True)
            finally:
                limiter.release()

    async def _one(stream: Stream) -> None:
        """One connection's one request: read within ``READ_TIMEOUT`` and the bounds, then the handler's answer.
        A refusal, at either step, is its status alone, logged at debug with the path's first segment only."""
        try:
            with anyio.fail_after(READ_TIMEOUT):
                request = await read_request(stream, port, origins)
        except TimeoutError:
            logger.debug("app host :%d: request not sent within %.0f s", port, READ_TIMEOUT)
            await _answer(stream, Response(408, b"timeout"))
            return
        except HttpRefusal as refusal:
            logger.debug("app host :%d: refused (%d): %s", port, refusal.status, refusal)
            await _answer(stream, Response(refusal.status, REASONS.get(refusal.status, "").encode()))
            return
        try:
            answer = await handler(request, stream)
        except HttpRefusal as refusal:
            logger.debug(
                "app host :%d: refused %s /%s (%d): %s", port, request.method, _first(request), refusal.status, refusal
            )
            answer = Response(refusal.status, REASONS.get(refusal.status, "").encode())
        if answer is not None:
            await _answer(stream, answer)

    try:
        await listener.serve(one)
    except anyio.ClosedResourceError:
        pass  # closed under it: the host is stopping
    finally:
        with anyio.CancelScope(shield=True):
            await listener.aclose()


def _first(request: Request) -> str:
    """The first segment of a path: what a refusal may log (the rest can be a key)."""
    return request.path.lstrip("/").split("/", 1)[0][:32]


async def _answer(stream: Stream, response: Response) -> None:
    """Writes ``response`` whole; a client that went away meanwhile is no error."""
    data = head(response.status, response.content_type, response.headers, len(response.body)) + response.body
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(data)
