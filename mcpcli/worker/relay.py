"""The worker's HTTP relay: a process that keeps httpx2 connection pools between commands, so a warm command to an
HTTP server reuses the TCP + TLS connection an earlier one opened.

The worker is single-threaded and forks a child per command, which cannot keep a connection past its command; a
thread of the worker's would make those forks unsafe. So the relay is a process of its own, forked by the worker
(with everything imported already) on a Unix socket of its own beside the worker's: 0600 in the worker's 0700
directory, same-uid peers only. The worker binds that socket before the fork, so a command forked after it finds it
ready. Commands reach it through ``mcpcli.net.relayed`` (the protocol is described there).

Per exchange the relay sends the request upstream through the pool for the command's connection settings (the CA
files its environment names; one pool each, ``MAX_POOLS`` at most) — never following redirects, never signing
in: the command's client does that — and streams the response back, each chunk written before the next is read, so
it holds one chunk per exchange whatever the server sends. It sends a request again only when it failed on a kept
connection before it was written whole (the server had closed it and cannot have acted on it); never once written.
It takes no more than ``MAX_PER_POOL`` exchanges a pool, so a request never queues for a connection; past that (or
``MAX_OPEN`` connections from commands) it refuses, and the command goes direct.

It exits when the worker goes (its end of a socket pair reaches EOF: the relay stops listening, lets the exchanges
in flight finish, and exits), and after ``IDLE`` seconds without a request (the worker starts it again for the next
command). It logs to the worker's log: a request's method, origin and status or error type — never a header or a
path (they may carry tokens).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx2
from anyio.streams.buffered import BufferedByteReceiveStream

from mcpcli import __version__
from mcpcli.net.relayed import MAX_BODY, MAX_HEAD, FrameError, error_of, frame, loads, read_frame
from mcpcli.net.transports import connection_settings, direct_transport
from mcpcli.platform import POSIX, open_descriptors, peer
from mcpcli.worker import log_line

assert POSIX, "the background worker needs fork and Unix sockets (mcpcli.platform.WORKERLESS says why)"

KEEPALIVE_EXPIRY = 15.0
"""Seconds an idle upstream connection is kept: longer than httpx2's default (5 s, shorter than the pause between
two commands of a script), shorter than the idle timeouts of the NATs and load balancers that drop a connection
without a word (a request written to one fails: it is not sent again, see ``_forward``). Servers that close theirs
sooner say so, which the pool notices before reusing one."""

IDLE = 2 * KEEPALIVE_EXPIRY
"""Seconds without a request after which the relay exits (its connections have expired by then)."""

MAX_POOLS = 4
"""Distinct connection settings (CA files) kept at once; a fifth replaces the least recently used idle one."""

MAX_PER_POOL = 64
"""Connections (and so exchanges in flight) per pool; a request past it goes direct rather than wait."""

MAX_KEEPALIVE = 16
"""Idle connections kept per pool."""

MAX_OPEN = 4 * MAX_PER_POOL
"""Connections from commands at once; past it the relay refuses (the command goes direct)."""

STALE_RETRIES = 3
"""Times a request is sent again because the kept connection it went out on was closed by the server."""

HEAR_TIMEOUT = 10.0
"""Seconds a command that connected may take to send its request."""

CLOSE_TIMEOUT = 5.0
"""Seconds closing an upstream response may take (it is done even when the exchange was cancelled)."""

FRESH = ("connection.connect_tcp.", "connection.connect_unix_socket.")
SENT = "send_request_body.complete"
"""httpcore's trace event once a request is written whole (``http11.`` or ``http2.`` before it)."""
"""httpcore trace events of a request that opened a new connection (one without is on a kept connection)."""


def log(text: str) -> None:
    log_line("relay", text)


def socket_for(worker_socket: Path) -> Path | None:
    """Where the relay of the worker at ``worker_socket`` listens (beside it), or ``None`` when that path is too
    long for a Unix socket."""
    path = worker_socket.with_name(f"{worker_socket.stem}-relay.sock")
    return path if len(os.fsencode(str(path))) < 108 else None


# --- in the worker -------------------------------------------------------------------------------------------------


@dataclass
class Handle:
    """The worker's hold on its relay: the pid, the worker's end of the socket pair, where it listens."""

    pid: int
    control: socket.socket
    path: Path
    started: float = field(default_factory=time.monotonic)
    status: int | None = None
    """The exit status once reaped (``os.waitstatus_to_exitcode``: negative for a signal)."""

    def running(self) -> bool:
        if self.status is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                done, status = self.pid, 0
            if done:
                self.status = os.waitstatus_to_exitcode(status)
                self.control.close()
        return self.status is None

    def describe(self) -> dict[str, Any]:
        return {"pid": self.pid, "socket": str(self.path)}

    def forget_in_child(self) -> None:
        """In a forked command: the worker's end of the pair is not the command's (holding it would keep the relay
        from seeing the worker go)."""
        self.control.close()

    def stop(self, wait: float) -> None:
        """Tell the relay the worker is going and wait up to ``wait`` seconds for it; a relay still serving
        commands that are running finishes them first, then exits by itself."""
        self.control.close()
        deadline = time.monotonic() + wait
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.01)


def start(path: Path, idle: float) -> Handle | None:
    """Bind the relay's socket and fork the relay (in the worker, which has imported everything)."""
    return fork_beside(path, "relay", lambda listener, control: _main(listener, control, idle))


def fork_beside(path: Path, what: str, body: Callable[[socket.socket, socket.socket], int]) -> Handle | None:
    """Bind a socket at ``path`` (0600) and fork a process of the worker's that serves it: ``body(listener,
    control)`` in the child, with the worker's signal handlers and descriptors let go of; the socket file is removed
    when the child ends, unless a newer worker's process bound it since. ``None`` (logged) when it cannot bind."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a process of this worker's that is gone (this worker owns the directory)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600 (the worker is single-threaded)
    try:
        listener.bind(str(path))
    except OSError as exc:
        listener.close()
        log_line(what, f"cannot listen on {path}: {exc}")
        return None
    finally:
        os.umask(old)
    listener.listen(128)
    inode = path.stat().st_ino
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 70
        try:
            ours.close()
            _let_go_of_inherited({0, 1, 2, listener.fileno(), theirs.fileno()})
            for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGINT):
                signal.signal(signum, signal.SIG_DFL)
            code = body(listener, theirs)
        except BaseException as exc:  # a process's last word, in the worker's log
            log_line(what, f"failed: {type(exc).__name__}: {exc}")
        finally:
            with contextlib.suppress(OSError):
                if path.stat().st_ino == inode:
                    path.unlink()
            os._exit(code)
    listener.close()
    theirs.close()
    return Handle(pid, ours, path)


def _let_go_of_inherited(keep: set[int]) -> None:
    """The worker's descriptors that came with the fork (its socket, connections it is greeting, kept servers'
    pipes) are not the relay's: holding one would keep a front end waiting for an answer, or a kept server's stdin
    open. Each becomes /dev/null rather than closed, so a worker object that still names its number can never
    close a descriptor the relay opens later."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in open_descriptors():
        if fd in keep or fd == null:
            continue
        with contextlib.suppress(OSError):
            os.fstat(fd)  # the listing's own descriptor is closed by now
            os.dup2(null, fd)
    os.close(null)


# --- the relay process ---------------------------------------------------------------------------------------------


def _main(listener: socket.socket, control: socket.socket, idle: float) -> int:
    anyio.run(Relay(listener, control, min(idle, IDLE)).run)
    return 0


@dataclass
class Pool:
    transport: httpx2.AsyncBaseTransport
    in_flight: int = 0
    last_used: float = field(default_factory=time.monotonic)

    def connections(self) -> int:
        """Upstream connections open now (httpx2 has no public count; its pool's list is read, closed and expired
        ones left out)."""
        return sum(
            1
            for part in getattr(self.transport, "parts", [self.transport])  # direct, and one per proxy
            for c in getattr(getattr(part, "_pool", None), "connections", ())
            if not c.is_closed() and not c.has_expired()
        )


class Relay:
    def __init__(self, listener: socket.socket, control: socket.socket, idle: float) -> None:
        self.listener = listener
        self.control = control
        self.idle = idle
        self.pools: dict[str, Pool] = {}
        self.open = 0
        self.in_flight = 0
        self.served = 0
        self.retried = 0
        self.started = time.time()
        self.last_activity = time.monotonic()

    async def run(self) -> None:
        """Accept commands' exchanges, each served in a task of its own, until the worker has gone or nothing was asked
        for ``idle`` seconds (``_watch``); the exchanges in flight finish, then every pool is closed."""
        listener = await anyio.abc.SocketListener.from_socket(self.listener)
        log(f"relaying (idle timeout {self.idle:g} s)")
        async with anyio.create_task_group() as exchanges:
            with anyio.CancelScope() as accepting:
                exchanges.start_soon(self._watch, accepting)
                while True:
                    try:
                        stream = await listener.accept()
                    except OSError as exc:  # out of descriptors, say: the commands go direct meanwhile
                        log(f"accept failed: {exc}")
                        await anyio.sleep(0.1)
                        continue
                    self.open += 1
                    exchanges.start_soon(self._serve, stream)
            await listener.aclose()
        for pool in self.pools.values():
            with contextlib.suppress(Exception):
                await pool.transport.aclose()

    async def _watch(self, accepting: anyio.CancelScope) -> None:
        """Stop accepting when the worker has gone (EOF on the pair) or nothing was asked for ``idle`` seconds."""
        self.control.setblocking(False)
        while True:
            with anyio.move_on_after(1.0):
                await anyio.wait_readable(self.control)
                try:
                    gone = self.control.recv(1) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    log("the worker has gone: exiting once the requests in flight are done")
                    break
            if not self.open and time.monotonic() - self.last_activity > self.idle:
                log("idle: exiting")
                break
        accepting.cancel()

    async def _serve(self, stream: anyio.abc.SocketStream) -> None:
        try:
            async with stream:
                await self._exchange(stream)
        except (*_GONE, FrameError, TimeoutError, KeyError, ValueError, TypeError):
            pass  # the command went away, or sent something that is not an exchange
        except Exception as exc:  # one exchange's failure must not end the others
            log(f"an exchange failed: {type(exc).__name__}")
        finally:
            self.open -= 1
            self.last_activity = time.monotonic()

    async def _exchange(self, stream: anyio.abc.SocketStream) -> None:
        """One command's exchange: nothing for another uid's process; ``R`` (busy) past ``MAX_OPEN``; else greeted with
        ``A``, and a status (``S``) answered or a request (a ``Q`` head, a ``B`` body) sent upstream on its pool. A
        request it cannot take is refused with ``R`` before anything went upstream (the command then sends it direct);
        the command hanging up cancels it."""
        if peer(stream.extra(anyio.abc.SocketAttribute.raw_socket))[1] != os.getuid():
            return  # peer credentials: another user's process (the directory should have kept it out)
        if self.open > MAX_OPEN:
            await stream.send(frame(b"R", {"why": "busy"}))
            return
        await stream.send(frame(b"A", {"version": __version__, "pid": os.getpid()}))
        reader = BufferedByteReceiveStream(stream)
        with anyio.fail_after(HEAR_TIMEOUT):
            kind, payload = await read_frame(reader, MAX_HEAD)
            if kind == b"S":
                await stream.send(frame(b"S", self.status()))
                return
            if kind != b"Q":
                return
            ask = loads(payload)
            kind, body = await read_frame(reader, MAX_BODY)
            if kind != b"B":
                return
        try:
            request = _request(ask, body)
            pool = await self._pool(ask.get("settings"))
        except Exception as exc:  # nothing went upstream: the command sends it direct
            log(f"refused a request: {type(exc).__name__}")
            pool = None
        if pool is None or pool.in_flight >= MAX_PER_POOL or ask.get("version") != __version__:
            await stream.send(frame(b"R", {"why": "cannot take it"}))
            return
        pool.in_flight += 1
        self.in_flight += 1
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_hang_up, reader, tg.cancel_scope)
                await self._forward(stream, pool, request)
                tg.cancel_scope.cancel()
        finally:
            pool.in_flight -= 1
            pool.last_used = time.monotonic()
            self.in_flight -= 1
            self.served += 1

    async def _pool(self, settings: object) -> Pool | None:
        """The pool for these connection settings (made on first use; ``None`` when every slot is busy)."""
        if not isinstance(settings, dict):
            raise ValueError("no connection settings")
        known = connection_settings({})  # its keys: the settings a pool is made from, nothing else the command sent
        given = {k: (str(settings[k]) if settings.get(k) else None) for k in known}
        key = json.dumps(given, sort_keys=True)
        if (pool := self.pools.get(key)) is not None:
            return pool
        if len(self.pools) >= MAX_POOLS:
            idle = [(p.last_used, k) for k, p in self.pools.items() if not p.in_flight]
            if not idle:
                return None
            _, oldest = min(idle)
            await self.pools.pop(oldest).transport.aclose()
        limits = httpx2.Limits(
            max_connections=MAX_PER_POOL, max_keepalive_connections=MAX_KEEPALIVE, keepalive_expiry=KEEPALIVE_EXPIRY
        )
        pool = self.pools[key] = Pool(direct_transport(given, limits))
        return pool

    async def _forward(self, stream: anyio.abc.SocketStream, pool: Pool, request: _Request) -> None:
        """Send the request upstream (again on a new connection when a kept one turned out closed) and stream the
        response back, one chunk at a time."""
        method, origin = request.method, request.origin
        for attempt in range(STALE_RETRIES + 1):
            fresh = sent = False

            async def trace(event: str, info: dict[str, Any]) -> None:
                nonlocal fresh, sent
                fresh = fresh or event.startswith(FRESH)
                sent = sent or event.endswith(SENT)

            try:
                response = await pool.transport.handle_async_request(request.build(trace))
                break
            except (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError) as exc:
                # Again only when the server cannot have acted on it: on a kept connection, before the whole
                # request was written. Once it was, the server may have run the tool and then dropped the
                # connection; sending it again could run it twice (what a cold run would never do), so it fails
                # as a dropped connection does, and the flow's session is kept for a resume.
                if fresh or sent or attempt == STALE_RETRIES:
                    log(f"{method} {origin}: {type(exc).__name__}")
                    await stream.send(frame(b"X", error_of(exc)))
                    return
                self.retried += 1
                log(f"{method} {origin}: a kept connection was closed by the server; sending on a new one")
            except httpx2.HTTPError as exc:
                log(f"{method} {origin}: {type(exc).__name__}")
                await stream.send(frame(b"X", error_of(exc)))
                return
        try:
            head = {
                "status": response.status_code,
                "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in response.headers.raw],
                "http_version": bytes(response.extensions.get("http_version", b"HTTP/1.1")).decode("latin-1"),
                "reason_phrase": bytes(response.extensions.get("reason_phrase", b"")).decode("latin-1"),
            }
            await stream.send(frame(b"H", head))
            async for chunk in response.stream:  # type: ignore[union-attr]  # an async transport's stream
                await stream.send(frame(b"D", chunk))  # written before the next chunk is read: backpressure
            await stream.send(frame(b"E"))
            if response.status_code >= 400:
                log(f"{method} {origin}: {response.status_code}")
        except httpx2.HTTPError as exc:
            log(f"{method} {origin}: {response.status_code}, then {type(exc).__name__}")
            await stream.send(frame(b"X", error_of(exc)))
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
                await response.aclose()

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": __version__,
            "started": self.started,
            "served": self.served,
            "in_flight": self.in_flight,
            "retried": self.retried,
            "pools": len(self.pools),
            "connections": sum(pool.connections() for pool in self.pools.values()),
        }


_GONE = (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


async def _hang_up(reader: BufferedByteReceiveStream, scope: anyio.CancelScope) -> None:
    """The command sends nothing after its request: its connection ending (or anything else) cancels the
    exchange — the response was closed early, or the command is gone."""
    with contextlib.suppress(*_GONE):
        await reader.receive()
    scope.cancel()


@dataclass
class _Request:
    method: str
    url: str
    headers: list[tuple[bytes, bytes]]
    timeout: dict[str, float | None]
    body: bytes

    @property
    def origin(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"

    def build(self, trace: Any) -> httpx2.Request:
        """The request as the command's client made it: its headers as they are (``stream=`` adds none)."""
        return httpx2.Request(
            self.method,
            self.url,
            headers=self.headers,
            stream=httpx2.ByteStream(self.body),
            extensions={"timeout": self.timeout, "trace": trace},
        )


def _request(ask: dict[str, Any], body: bytes) -> _Request:
    timeout = ask.get("timeout") or {}
    request = _Request(
        method=str(ask["method"]),
        url=str(ask["url"]),
        headers=[(str(k).encode("latin-1"), str(v).encode("latin-1")) for k, v in ask["headers"]],
        timeout={
            k: (None if timeout.get(k) is None else float(timeout[k])) for k in ("connect", "read", "write", "pool")
        },
        body=body,
    )
    if urlsplit(request.url).scheme not in ("http", "https"):
        raise ValueError("not an HTTP URL")
    return request
