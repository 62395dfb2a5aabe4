"""The app host: MCP App views in the user's own browser, each on an origin of its own, reached only by a one-time link.

``AppHost`` serves a static host page on ``127.0.0.1`` (a random port). ``page_url()`` mints a one-time token
(``secrets.token_urlsafe(32)``, 256 bits) carried in the URL's fragment, so it never reaches a server log or a
``Referer``; the page removes it from the address bar at once and trades it (``POST /attach``) for a session key that
every later request carries in ``X-Mcpcli-Session``. A token works once, within ``TOKEN_TTL`` seconds; one page at a
time. Every request to every server of the host must name ``127.0.0.1:<its port>`` as ``Host`` (DNS rebinding) and,
when it has an ``Origin``, that server's own (``apphost.http``).

Each view gets two more servers, so two more origins: its sandbox proxy's (the host page's iframe) and its own (the
proxy's iframe). The view can thus read neither the host page, nor its proxy, nor another view (``parent.document``
throws, storage is its own). The proxy's page, address and permissions are fixed by mcpcli's server, never by a
message; the view's HTML is served once, with the policy of ``apphost.csp`` as its HTTP
``Content-Security-Policy`` header, whose ``report-uri`` comes back here as ``{"mcpcli/csp-violation": {…}}`` items of
``View.receive()``.

Messages: view ⇄ postMessage ⇄ proxy ⇄ postMessage ⇄ host page ⇄ ``/events`` (NDJSON, mcpcli → page) and
``/messages`` (page → mcpcli). The host carries them and does not read them: the bridge above (``apphost.bridge``)
does.
"""

from __future__ import annotations

import hmac
import html
import json
import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from types import TracebackType
from typing import Any

import anyio
import anyio.abc

from mcpcli.apphost import http
from mcpcli.apphost.csp import allow_attribute, content_security_policy, delegated_allow
from mcpcli.apphost.http import HttpRefusal, Request, Response

__all__ = ["TOKEN_TTL", "AppHost", "View", "ViewClosed", "ViewSpec"]

logger = logging.getLogger(__name__)

TOKEN_TTL = 120.0
"""Seconds a page link works (until its first use)."""
SESSION_HEADER = "x-mcpcli-session"
SANDBOX_PREFIX = "ui/notifications/sandbox-"
EVENTS_BUFFER = 1024
"""Commands for the page that may wait while it is not reading (then ``View.send`` waits)."""
MESSAGES_BUFFER = 256
"""A view's messages that may wait for ``View.receive`` (then the page's next POST waits)."""
CSP_REPORTS_MAX = 100
"""CSP violation reports taken from one view (a view can cause any number)."""
STOP_NOTICE = 1.0
"""Seconds ``__aexit__`` gives the page to hear that mcpcli stopped."""

HOST_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "frame-src http://127.0.0.1:*; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The host page's own policy: its shipped script and style only; frames only from loopback (the views' proxies,
whose ports are not known when the page loads)."""

STATIC = {
    "host.js": "text/javascript; charset=utf-8",
    "host.css": "text/css; charset=utf-8",
    "sandbox.js": "text/javascript; charset=utf-8",
    "sandbox.css": "text/css; charset=utf-8",
}


class ViewClosed(Exception):
    """The view is gone: closed, its page closed, or the host stopped."""


@dataclass(frozen=True)
class ViewSpec:
    """What to show: the view's document and what its resource declared (``_meta.ui``)."""

    html: str
    csp: Mapping[str, Sequence[str]] = field(default_factory=dict)
    permissions: Mapping[str, Any] = field(default_factory=dict)
    prefers_border: bool | None = None
    title: str = ""
    """Shown above the view, as text."""
    server: str = ""
    """The server the view comes from, shown on its boundary ("sandboxed view from …"), as text."""


@cache
def _site(name: str) -> bytes:
    return (files("mcpcli.apphost") / "site" / name).read_bytes()


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise HttpRefusal(400, "not JSON") from None


def _clip(value: object, most: int = 300) -> str:
    """Browser-reported text, as a short line without control characters."""
    text = "" if value is None else str(value)
    return "".join(c for c in text if c.isprintable())[:most]


def _static(request: Request, names: Sequence[str]) -> Response | None:
    name = request.path.removeprefix("/static/")
    if request.method == "GET" and request.path.startswith("/static/") and name in names:
        return Response(body=_site(name), content_type=STATIC[name])
    return None


def _origin(listener: anyio.abc.SocketListener) -> tuple[int, str]:
    port = int(listener.extra(anyio.abc.SocketAttribute.local_address)[1])
    return port, f"http://127.0.0.1:{port}"


async def _listen() -> anyio.abc.SocketListener:
    bound = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    listener = bound.listeners[0]  # one address, so one listener
    assert isinstance(listener, anyio.abc.SocketListener)
    return listener


class View:
    """One view shown in the page: ``send`` to it, ``receive`` from it, ``close`` it."""

    def __init__(self, host: AppHost, spec: ViewSpec, proxy: anyio.abc.SocketListener, own: anyio.abc.SocketListener):
        """A view on two listeners of its own (its proxy's origin and its own), with three one-time keys: the proxy
        page's, the document's and the CSP reports' path. Its policy and ``allow`` are fixed here, from ``spec``
        alone: nothing the view or the page says later changes them."""
        self.id = secrets.token_hex(8)
        self.spec = spec
        self._host = host
        self._proxy_listener, self._view_listener = proxy, own
        _, self.proxy_origin = _origin(proxy)
        _, self.origin = _origin(own)
        """The view document's origin (its storage's); ``proxy_origin`` is its sandbox proxy's."""
        self._proxy_key, self._view_key, self._report_key = (secrets.token_urlsafe(32) for _ in range(3))
        self.csp = content_security_policy(spec.csp, report_uri=f"{self.origin}/csp/{self._report_key}")
        """The ``Content-Security-Policy`` header the view is served with."""
        self.allow = allow_attribute(spec.permissions)
        """The view iframe's ``allow`` attribute."""
        self._inbox, self._outbox = anyio.create_memory_object_stream[dict[str, Any]](MESSAGES_BUFFER)
        self._scope = anyio.CancelScope()
        self._reports = 0
        self._ended = False

    async def send(self, message: dict[str, Any]) -> None:
        """Posts a JSON-RPC message to the view (through the page and its proxy). ViewClosed when it is gone;
        ValueError for what is not a JSON-RPC 2.0 object within the size bound, or a ``sandbox-*`` method."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise ValueError("not a JSON-RPC 2.0 message")
        if str(message.get("method", "")).startswith(SANDBOX_PREFIX):
            raise ValueError("sandbox-* messages are the page's own")
        if len(json.dumps(message)) > http.BODY_MAX:
            raise ValueError("message too large")
        await self._command({"type": "send", "message": message})

    async def receive(self) -> dict[str, Any]:
        """The view's next message (a JSON-RPC 2.0 object), or a ``{"mcpcli/csp-violation": {"blocked", "directive",
        "sample"}}`` item for a CSP violation the browser reported; ViewClosed once the view is gone."""
        try:
            return await self._outbox.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise ViewClosed("the view is closed") from None

    async def set_display_mode(self, mode: str) -> None:
        """Shows the view ``"fullscreen"`` (filling the page) or ``"inline"`` (anything else)."""
        await self._command({"type": "display-mode", "mode": mode})

    async def close(self) -> None:
        """Removes the view's iframe from the page and stops its servers (``receive`` then raises ViewClosed)."""
        if self._ended:
            return
        with anyio.move_on_after(STOP_NOTICE, shield=True), suppress(ViewClosed):  # a gone page has no iframe
            await self._command({"type": "close"})
        self._end()

    def _end(self) -> None:
        self._ended = True
        self._scope.cancel()
        self._inbox.close()
        self._host._views.pop(self.id, None)

    async def _command(self, command: dict[str, Any]) -> None:
        if self._ended or self._host.closed.is_set():
            raise ViewClosed("the view is closed")
        await self._host._tell({**command, "view": self.id})

    async def _deliver(self, item: dict[str, Any]) -> None:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._inbox.send(item)

    async def _serve(self) -> None:
        limiter = self._host._limiter
        with self._scope:
            async with anyio.create_task_group() as group:
                group.start_soon(
                    http.serve, self._proxy_listener, self._proxy_page, frozenset({self.proxy_origin}), limiter
                )
                group.start_soon(http.serve, self._view_listener, self._view_page, frozenset({self.origin}), limiter)

    def _once(self, request: Request, prefix: str, attribute: str) -> bool:
        """Whether ``request`` is a GET of ``prefix + key`` with this view's one-time ``key`` (spent if so)."""
        key: str = getattr(self, attribute)
        if request.method != "GET" or not request.path.startswith(prefix) or not key:
            return False
        if not hmac.compare_digest(request.path[len(prefix) :].encode(), key.encode()):
            return False
        setattr(self, attribute, "")
        return True

    async def _proxy_page(self, request: Request, stream: http.Stream) -> Response:
        """The sandbox proxy's server: its shipped script and style, and its page once, by its one-time key, with
        the host's and the view's origins and the view's ``allow`` written in by mcpcli (escaped), never by a
        message; its policy lets it frame the view's origin only, and be framed by the host page only."""
        if static := _static(request, ("sandbox.js", "sandbox.css")):
            return static
        if not self._once(request, "/sandbox/", "_proxy_key"):
            raise HttpRefusal(404, "no such page")
        page = _site("sandbox.html").decode()
        for name, value in (
            ("__HOST_ORIGIN__", self._host.origin),
            ("__VIEW_ORIGIN__", self.origin),
            ("__VIEW_SRC__", f"{self.origin}/view/{self._view_key}"),
            ("__VIEW_ALLOW__", self.allow),
        ):
            page = page.replace(name, html.escape(value))
        policy = (
            f"default-src 'none'; script-src 'self'; style-src 'self'; frame-src {self.origin}; base-uri 'none'; "
            f"form-action 'none'; frame-ancestors {self._host.origin}"
        )
        return Response(
            body=page.encode(), content_type="text/html; charset=utf-8", headers=[("Content-Security-Policy", policy)]
        )

    async def _view_page(self, request: Request, stream: http.Stream) -> Response:
        """The view's own server: its document once, by its one-time key, under its policy; then only the
        browser's CSP reports, by their secret path and at most ``CSP_REPORTS_MAX``. Anything else is a 404."""
        if self._once(request, "/view/", "_view_key"):
            logger.debug(
                "view %s served with Content-Security-Policy: %s", self.id, self.csp.rsplit("; report-uri", 1)[0]
            )
            return Response(
                body=self.spec.html.encode("utf-8", "replace"),
                content_type="text/html; charset=utf-8",
                headers=[("Content-Security-Policy", self.csp)],
            )
        report_path = f"/csp/{self._report_key}"
        if request.method == "POST" and hmac.compare_digest(request.path.encode(), report_path.encode()):
            if self._reports < CSP_REPORTS_MAX:
                self._reports += 1
                await self._report(request.body)
            return Response(204)
        raise HttpRefusal(404, "no such page")

    async def _report(self, body: bytes) -> None:
        report = _json(body)
        report = report.get("csp-report") if isinstance(report, dict) else None
        if not isinstance(report, dict):
            raise HttpRefusal(400, "not a CSP report")
        violation = {
            "blocked": _clip(report.get("blocked-uri")),
            "directive": _clip(report.get("effective-directive") or report.get("violated-directive"), 60),
            "sample": _clip(report.get("script-sample"), 120),
        }
        await self._deliver({"mcpcli/csp-violation": violation})


class AppHost:
    """The host page's server and its views' servers, for one command's life (an async context manager)."""

    def __init__(self, *, token_ttl: float = TOKEN_TTL) -> None:
        self.token_ttl = token_ttl
        self._tokens: dict[str, float] = {}
        self._session: str | None = None
        self._streaming = False
        self._views: dict[str, View] = {}
        self._stack = AsyncExitStack()
        self.origin = ""
        """The host page's origin, ``http://127.0.0.1:PORT``."""

    async def __aenter__(self) -> AppHost:
        """Serve the host page on a fresh loopback port until ``__aexit__``; a start that fails half-way closes what
        it opened. Views' servers start with each ``open_view``."""
        self.attached = anyio.Event()
        """Set when a page traded a token for a session."""
        self.closed = anyio.Event()
        """Set when the attached page went away (its event stream dropped, or it said goodbye)."""
        self._said_stopped = anyio.Event()
        self._limiter = anyio.CapacityLimiter(http.CONNECTIONS_MAX)
        self._events_in, self._events_out = anyio.create_memory_object_stream[dict[str, Any]](EVENTS_BUFFER)
        listener = await _listen()
        self.port, self.origin = _origin(listener)
        await self._stack.__aenter__()
        try:
            self._group = await self._stack.enter_async_context(anyio.create_task_group())
            self._group.start_soon(http.serve, listener, self._page, frozenset({self.origin}), self._limiter)
            self._group.start_soon(self._end_views_when_closed)
        except BaseException:
            await listener.aclose()
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        if self._streaming and not self.closed.is_set():
            with anyio.move_on_after(STOP_NOTICE, shield=True):  # said even when Ctrl-C cancelled the command
                await self._events_in.send({"type": "stopped"})
                await self._said_stopped.wait()
        for view in list(self._views.values()):
            view._end()
        self._group.cancel_scope.cancel()
        return await self._stack.__aexit__(kind, error, trace)

    def page_url(self) -> str:
        """A fresh one-time link to the host page (valid ``token_ttl`` seconds, until used). Never log it."""
        now = time.monotonic()
        self._tokens = {token: until for token, until in self._tokens.items() if until > now}
        token = secrets.token_urlsafe(32)
        self._tokens[token] = now + self.token_ttl
        return f"{self.origin}/#{token}"

    async def open_view(self, spec: ViewSpec) -> View:
        """Shows ``spec`` in the page (now, or once a page attaches), on origins of its own."""
        proxy = await _listen()
        try:
            own = await _listen()
        except BaseException:
            await proxy.aclose()
            raise
        view = View(self, spec, proxy, own)
        self._views[view.id] = view
        self._group.start_soon(view._serve)
        await view._command(
            {
                "type": "open",
                "title": _clip(spec.title, 200),
                "server": _clip(spec.server, 200),
                "proxy": f"{view.proxy_origin}/sandbox/{view._proxy_key}",
                "proxyOrigin": view.proxy_origin,
                "outerAllow": delegated_allow(spec.permissions, view.origin),
                "prefersBorder": spec.prefers_border,
                "csp": dict(spec.csp),
                "permissions": dict(spec.permissions),
            }
        )
        return view

    async def _tell(self, command: dict[str, Any]) -> None:
        await self._events_in.send(command)

    async def _end_views_when_closed(self) -> None:
        await self.closed.wait()
        for view in list(self._views.values()):
            view._end()

    def _check_session(self, given: str | None) -> None:
        if self._session is None or given is None or not hmac.compare_digest(given.encode(), self._session.encode()):
            raise HttpRefusal(403, "no session")

    async def _page(self, request: Request, stream: http.Stream) -> Response | None:
        """The host page's server: the page and its shipped files to anyone who passed ``http``'s checks, the token
        trade to a holder of a link, and the event stream, the messages and the goodbye only with the session key.
        Every other path or method is refused."""
        route = (request.method, request.path)
        if route == ("GET", "/"):
            headers = [("Content-Security-Policy", HOST_CSP), ("X-Frame-Options", "DENY")]
            return Response(body=_site("host.html"), content_type="text/html; charset=utf-8", headers=headers)
        if static := _static(request, ("host.js", "host.css")):
            return static
        if route == ("POST", "/attach"):
            return self._attach(request)
        if route == ("GET", "/events"):
            self._check_session(request.headers.get(SESSION_HEADER))
            await self._stream_events(stream)
            return None
        if route == ("POST", "/messages"):
            self._check_session(request.headers.get(SESSION_HEADER))
            await self._take_messages(_json(request.body))
            return Response(204)
        if route == ("POST", "/detach"):
            self._check_session(request.body.decode("latin-1"))
            self.closed.set()
            return Response(204)
        known = request.path in ("/", "/attach", "/events", "/messages", "/detach")
        raise HttpRefusal(405 if known else 404, "wrong method" if known else "no such page")

    def _attach(self, request: Request) -> Response:
        """Trade a link's token for the one session: a token is spent by its first use, whatever follows (expired,
        or a page already attached), and compared in constant time."""
        body = _json(request.body)
        given = body.get("token") if isinstance(body, dict) else None
        if not isinstance(given, str):
            raise HttpRefusal(403, "no token")
        found = next((t for t in list(self._tokens) if hmac.compare_digest(t.encode(), given.encode())), None)
        if found is None:
            raise HttpRefusal(403, "unknown or used token")
        until = self._tokens.pop(found)  # one use, whatever follows
        if time.monotonic() >= until:
            raise HttpRefusal(403, "expired token")
        if self._session is not None:
            raise HttpRefusal(409, "a page is already attached")
        self._session = secrets.token_urlsafe(32)
        self.attached.set()
        return Response(body=json.dumps({"session": self._session}).encode(), content_type="application/json")

    async def _stream_events(self, stream: http.Stream) -> None:
        """Streams the page's commands until the page goes (then ``closed``) or the host stops."""
        if self._streaming or self.closed.is_set():
            raise HttpRefusal(409, "already streaming")
        self._streaming = True
        try:
            await stream.send(http.head(200, "application/x-ndjson; charset=utf-8", [], None))
            async with anyio.create_task_group() as group:

                async def page_gone() -> None:
                    while True:
                        try:
                            await stream.receive(4096)
                        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                            break
                    group.cancel_scope.cancel()

                group.start_soon(page_gone)
                async for command in self._events_out:
                    await stream.send(json.dumps(command).encode() + b"\n")
                    if command["type"] == "stopped":
                        self._said_stopped.set()
                group.cancel_scope.cancel()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        finally:
            self.closed.set()

    async def _take_messages(self, body: Any) -> None:
        """The page's batch of view messages, each handed to its open view: what is not JSON-RPC 2.0 for an open
        view is dropped, and so is a ``sandbox-*`` method (the page's own business, never a view's)."""
        batch = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(batch, list):
            raise HttpRefusal(400, "no messages")
        for item in batch:
            if not isinstance(item, dict):
                continue
            name = item.get("view")
            view = self._views.get(name) if isinstance(name, str) else None
            message = item.get("message")
            if view is None or not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                logger.debug("app host: dropped a message that is not JSON-RPC 2.0 for an open view")
                continue
            if str(message.get("method", "")).startswith(SANDBOX_PREFIX):
                continue
            await view._deliver(message)
