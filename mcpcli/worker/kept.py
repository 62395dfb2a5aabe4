"""Kept-alive stdio servers: processes the worker owns, lent to one command at a time.

A server is started by the first command that attaches to it (``attach.attached``) and then outlives it. Which
server a command gets is exactly the one it names (``attach.server_key``): the executable its command resolves
to on the caller's ``PATH``, the arguments, the environment it starts with, the working directory and the home — the
same relative command in two directories is two servers, and each home has its own. While
a command is attached, the worker relays newline-delimited JSON-RPC both ways; a second command waits for the
first to detach (a stateful server serves one conversation at a time). Because every command's SDK session
begins with a handshake, a pre-2026 ``initialize`` is sent to the server once: later ones are answered from the
first reply, and their ``notifications/initialized`` is not passed on (``server/discover`` is stateless and goes
through). The ids of a command's requests are prefixed with its attachment number on the way in and restored
on the way out, so a late answer to a command that has gone cannot reach the next one.

Everything here runs in the worker's one thread, from its selector loop: nothing may block for long.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpcli.framing import send
from mcpcli.net.serverenv import sharing_key
from mcpcli.platform import POSIX
from mcpcli.userdirs import private_dirs

assert POSIX, "the background worker needs fork and Unix sockets (mcpcli.platform.WORKERLESS says why)"

MAX_LINE = 64 * 2**20
"""The longest line either side may send before its connection is cut (a bound, as on the cold path)."""


def _lines(buffer: bytearray) -> Iterator[bytes]:
    """The complete, non-empty lines at the front of ``buffer``, taken out of it (a partial line stays)."""
    while (end := buffer.find(b"\n")) != -1:
        line = bytes(buffer[:end])
        del buffer[: end + 1]
        if line.strip():
            yield line


def _message(line: bytes) -> dict[str, Any] | None:
    """A JSON-RPC message (an object), or ``None`` for anything else on the line (dropped)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
"""The ``_meta`` key naming the listen stream a 2026-07-28 event frame belongs to (its request's id)."""
_LIST_CHANGES = frozenset(
    {"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"}
)


def _deliver(attachment: Attachment, message: dict[str, Any]) -> bool:
    """One line to an attachment's socket (bounded wait: a reader that stopped reading is given up)."""
    data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
    try:
        attachment.conn.setblocking(True)
        attachment.conn.settimeout(5.0)
        attachment.conn.sendall(data)
        attachment.conn.setblocking(False)
    except OSError:
        return False
    return True


def _key(server: dict[str, Any]) -> str:
    return json.dumps({**server, "env": sharing_key(server["env"])}, sort_keys=True)


@dataclass
class Attachment:
    """One command attached to (or waiting for) a kept server."""

    conn: socket.socket
    number: int
    cwd: str | None = None
    """The command's working directory (a server it starts runs there, unless its entry names a ``cwd``)."""
    umask: int | None = None
    """The command's umask: a server it starts runs under it (not the worker's, which is whoever started that)."""
    buffer: bytearray = field(default_factory=bytearray)
    answered_from_cache: bool = False
    fresh: bool = False
    """The command asks for a new process: its first attempt left the running one unable to serve it (a strict
    server spoiled by the 2026-07-28 probe)."""


@dataclass
class KeptServer:
    name: str
    spec: dict[str, Any]
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    calls: int = 0
    restarts: int = 0
    init_reply: dict[str, Any] | None = None
    init_pending: str | None = None
    asks_roots: bool = False
    """The server has asked a command for its roots (``roots/list``): it holds the roots of whoever it asked, which
    the next command must replace with its own (``attach.attached``)."""
    current: Attachment | None = None
    waiting: deque[Attachment] = field(default_factory=deque)
    watchers: dict[int, Attachment] = field(default_factory=dict)
    """``mcpcli watch`` commands attached beside ``current`` (they only listen: see ``Kept.attach``)."""
    watched: dict[str, set[int]] = field(default_factory=dict)
    """Before 2026: each URI a watcher subscribed to (``resources/subscribe``) → the watchers that did."""
    out: bytearray = field(default_factory=bytearray)
    changes: int = 0
    """The list changes (``notifications/*/list_changed``) the server announced: with its pid, its generation."""

    @property
    def generation(self) -> str:
        """Which server, as of which list change, a command is lent (``net.warmcache`` drops what it remembered of
        another generation: a restart or a list change between two commands)."""
        return f"{self.proc.pid if self.proc else 0}.{self.changes}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def home(self) -> str:
        return str(self.spec.get("home") or "")

    def start(self, cwd: str | None = None, umask: int | None = None) -> None:
        """Start the server's process: the executable its command resolved to, with exactly the environment that command
        computed, in its entry's directory (else ``cwd``), with the caller's ``umask``; its stderr appended to its
        home's ``logs/servers.log`` (to nowhere when the home is gone: never made again). What the previous process said
        (its ``initialize`` reply, whether it asks for roots, unread output) is forgotten."""
        try:
            if not self.home or not Path(self.home).is_dir():
                raise FileNotFoundError(self.home)  # never make again a home that was deleted
            log = (private_dirs(Path(self.home) / "logs") / "servers.log").open("ab")
        except OSError:
            log = Path(os.devnull).open("ab")  # noqa: SIM115 — a home that went away: the server runs without a log
        try:
            self.proc = subprocess.Popen(
                [self.spec.get("executable") or self.spec["command"], *self.spec["args"]],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self.spec.get("cwd") or cwd or None,
                env=self.spec["env"],  # the whole of it, as the command computed it (mcpcli.net.serverenv)
                start_new_session=True,
                umask=-1 if umask is None else umask & 0o777,
            )
        finally:
            log.close()
        self.started = time.time()
        self.init_reply = None
        self.init_pending = None
        self.asks_roots = False
        self.out.clear()

    def stop(self) -> None:
        """Stop the server's process, if it has one: its stdin closed, then SIGTERM to its process group after 0.5 s and
        SIGKILL after 1 s more; waited for, so no zombie is left."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin:
                proc.stdin.close()
        try:
            proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc.stdout:
            proc.stdout.close()

    def describe(self) -> dict[str, Any]:
        """This server as ``mcpcli worker ps`` shows it (JSON): what it runs, where, for which home, its process and its
        counters."""
        return {
            "name": self.name,
            "command": [self.spec["command"], *self.spec["args"]],
            "executable": self.spec.get("executable"),
            "cwd": self.spec.get("cwd"),
            "home": self.home,
            "pid": self.proc.pid if self.proc else None,
            "alive": self.alive,
            "uptime": time.time() - self.started if self.alive else 0.0,
            "calls": self.calls,
            "restarts": self.restarts,
            "attached": self.current is not None,
            "waiting": len(self.waiting),
            "watchers": len(self.watchers),
        }


class Kept:
    """The worker's kept servers, and the relay between them and the commands attached to them."""

    def __init__(self, register: Any, unregister: Any) -> None:
        self.servers: dict[str, KeptServer] = {}
        self._register = register
        self._unregister = unregister
        self._numbers = 0

    # --- attaching -----------------------------------------------------------------------------------------------

    def attach(self, conn: socket.socket, request: dict[str, Any]) -> None:
        """A command asks for its server: lend it now, or queue it behind the command holding it."""
        spec = request.get("server") or {}
        if not isinstance(spec, dict) or not spec.get("command"):
            send(conn, {"ok": False, "why": "no command"})
            conn.close()
            return
        spec = {
            "command": str(spec["command"]),
            "executable": str(spec.get("executable") or "") or None,
            "args": [str(a) for a in spec.get("args") or []],
            "cwd": spec.get("cwd"),
            "env": {str(k): str(v) for k, v in (spec.get("env") or {}).items()},
            "home": str(spec.get("home") or ""),
        }
        server = self.servers.setdefault(_key(spec), KeptServer(str(request.get("name") or spec["command"]), spec))
        self._numbers += 1
        cwd = request.get("cwd")
        mask = request.get("umask")
        attachment = Attachment(conn, self._numbers, cwd if isinstance(cwd, str) else None)
        attachment.umask = mask if isinstance(mask, int) and not isinstance(mask, bool) else None
        attachment.fresh = request.get("fresh") is True
        if request.get("watch"):
            # A watch holds its connection for as long as it runs: it shares the server with the command that
            # holds it (and the ones after), rather than queueing them all behind it. Its requests are tagged like
            # any command's; the events of its subscriptions go to it alone.
            self._lend_watcher(server, attachment)
        elif server.current is None:
            self._lend(server, attachment)
        else:
            server.waiting.append(attachment)

    def _lend_watcher(self, server: KeptServer, attachment: Attachment) -> None:
        restarted = self._ensure_started(server, attachment)
        if restarted is None:
            return
        server.watchers[attachment.number] = attachment
        try:
            reply = {"ok": True, "pid": server.proc.pid if server.proc else None, "restarted": restarted}
            send(attachment.conn, reply | {"asks_roots": False})
        except OSError:
            self._drop_watcher(server, attachment)
            return
        attachment.conn.setblocking(False)
        self._register(attachment.conn, ("watching", (server, attachment)))

    def _drop_watcher(self, server: KeptServer, attachment: Attachment) -> None:
        if server.watchers.pop(attachment.number, None) is None:
            return
        for numbers in server.watched.values():
            numbers.discard(attachment.number)
        server.watched = {uri: numbers for uri, numbers in server.watched.items() if numbers}
        with contextlib.suppress(KeyError, ValueError):
            self._unregister(attachment.conn)
        attachment.conn.close()

    def _ensure_started(self, server: KeptServer, attachment: Attachment) -> bool | None:
        """Start the server when it is not running: whether it ran before (restarted), None when it cannot start
        (the attachment is told why and closed)."""
        restarted = False
        if attachment.fresh and server.proc is not None:
            self._unregister(server.proc.stdout)
            server.stop()
            server.calls = max(server.calls, 1)
        if not server.alive:
            restarted = server.proc is not None or server.calls > 0
            if server.proc is not None:
                self._unregister(server.proc.stdout)
                server.stop()
            try:
                server.start(attachment.cwd, attachment.umask)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    send(attachment.conn, {"ok": False, "why": exc.strerror or str(exc)})
                attachment.conn.close()
                return None
            if restarted:
                server.restarts += 1
            assert server.proc is not None and server.proc.stdout is not None
            self._register(server.proc.stdout, ("server", server))
        return restarted

    def _lend(self, server: KeptServer, attachment: Attachment) -> None:
        restarted = self._ensure_started(server, attachment)
        if restarted is None:
            return
        server.current = attachment
        server.calls += 1
        try:
            reply = {"ok": True, "pid": server.proc.pid if server.proc else None, "restarted": restarted}
            send(attachment.conn, reply | {"asks_roots": server.asks_roots, "generation": server.generation})
        except OSError:
            self._detach(server)
            return
        attachment.conn.setblocking(False)
        self._register(attachment.conn, ("attached", server))

    def _detach(self, server: KeptServer) -> None:
        attachment, server.current = server.current, None
        if attachment is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._unregister(attachment.conn)
            attachment.conn.close()
        while server.waiting and server.current is None:
            self._lend(server, server.waiting.popleft())

    # --- relaying ------------------------------------------------------------------------------------------------

    def from_command(self, server: KeptServer) -> None:
        """Bytes from the command attached to ``server``: each whole line goes to the server (``_to_server``); the
        command is detached at EOF, on an error, or when a line outgrows ``MAX_LINE``."""
        attachment = server.current
        assert attachment is not None
        try:
            chunk = attachment.conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk or len(attachment.buffer) > MAX_LINE:
            self._detach(server)
            return
        attachment.buffer += chunk
        for line in _lines(attachment.buffer):
            self._to_server(server, attachment, line)

    def from_watcher(self, server: KeptServer, attachment: Attachment) -> None:
        try:
            chunk = attachment.conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk or len(attachment.buffer) > MAX_LINE:
            self._drop_watcher(server, attachment)
            return
        attachment.buffer += chunk
        for line in _lines(attachment.buffer):
            self._to_server(server, attachment, line)

    def _to_server(self, server: KeptServer, attachment: Attachment, line: bytes) -> None:
        """One JSON-RPC line of an attachment's, to the server: a watcher's subscriptions noted, an ``initialize``
        answered from the server's first reply (and its ``initialized`` then dropped), a request's id tagged with the
        attachment's number so that its answer finds its way back. A line that is not a message is dropped."""
        if (message := _message(line)) is None:
            return
        method = message.get("method")
        if method in ("resources/subscribe", "resources/unsubscribe") and attachment.number in server.watchers:
            uri = str((message.get("params") or {}).get("uri"))
            numbers = server.watched.setdefault(uri, set())
            (numbers.add if method == "resources/subscribe" else numbers.discard)(attachment.number)
        if method == "initialize" and "id" in message and server.init_reply is not None:
            reply = {**server.init_reply, "id": message["id"]}
            attachment.answered_from_cache = True
            self._to_command(server, reply)
            return
        if method == "notifications/initialized" and attachment.answered_from_cache:
            return
        if method is not None and "id" in message:  # a request of the command's: tag its id
            tagged = f"k{attachment.number}:{json.dumps(message['id'])}"
            if method == "initialize":
                server.init_pending = tagged
            message = {**message, "id": tagged}
        self._write_server(server, json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def _write_server(self, server: KeptServer, data: bytes) -> None:
        if server.proc is None or server.proc.stdin is None:
            return
        try:
            server.proc.stdin.write(data)
            server.proc.stdin.flush()
        except OSError:
            self._server_gone(server)

    def from_server(self, server: KeptServer) -> None:
        assert server.proc is not None and server.proc.stdout is not None
        try:
            chunk = os.read(server.proc.stdout.fileno(), 65536)
        except OSError:
            chunk = b""
        if not chunk or len(server.out) > MAX_LINE:
            self._server_gone(server)
            return
        server.out += chunk
        for line in _lines(server.out):
            self._from_server_line(server, line)

    def _from_server_line(self, server: KeptServer, line: bytes) -> None:
        """One JSON-RPC line of the server's, to whom it is for: an answer to the attachment its tagged id names (the
        tag taken off; dropped when that command has gone), a watcher's event to its watcher, anything else to the
        attached command; with none attached, a ``ping`` is answered here and the rest dropped. Counts the list changes,
        remembers the first ``initialize`` reply and whether the server asks for roots."""
        if (message := _message(line)) is None:
            return
        if message.get("method") in _LIST_CHANGES:
            server.changes += 1
        current = server.current
        if "method" not in message and isinstance(message.get("id"), str) and message["id"].startswith("k"):
            number, _, original = message["id"][1:].partition(":")
            if message["id"] == server.init_pending and "result" in message:
                server.init_reply = {k: v for k, v in message.items() if k != "id"}
                server.init_pending = None
            message = {**message, "id": json.loads(original)}
            if (watcher := server.watchers.get(int(number) if number.isdigit() else -1)) is not None:
                self._to_watcher(server, watcher, message)
                return
            if current is None or number != str(current.number):
                return  # the answer to a command that has gone
        elif "id" not in message and self._to_watchers(server, message):
            return
        elif message.get("method") == "roots/list":
            server.asks_roots = True
        if current is None:
            if message.get("method") == "ping" and "id" in message:
                self._write_server(
                    server, json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode() + b"\n"
                )
            return
        self._to_command(server, message)

    def _to_watchers(self, server: KeptServer, message: dict[str, Any]) -> bool:
        """A notification that is a watcher's event, sent to it (or dropped when its watcher has gone): whether it
        was one. 2026-07-28: a frame of a listen stream names the stream (its request id, tagged on the way in);
        before: an update of a URI a watcher subscribed to, or a list change while anyone watches."""
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        tagged = meta.get(_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if isinstance(tagged, str) and tagged.startswith("k") and isinstance(params, dict) and isinstance(meta, dict):
            number, _, original = tagged[1:].partition(":")
            with contextlib.suppress(ValueError):
                message = {**message, "params": {**params, "_meta": {**meta, _SUBSCRIPTION_ID: json.loads(original)}}}
            if (watcher := server.watchers.get(int(number) if number.isdigit() else -1)) is not None:
                self._to_watcher(server, watcher, message)
            elif server.current is not None and number == str(server.current.number):
                self._to_command(server, message)
            return True
        method = message.get("method")
        if method == "notifications/resources/updated" and isinstance(params, dict):
            for subscriber in sorted(server.watched.get(str(params.get("uri")), ())):
                if (watcher := server.watchers.get(subscriber)) is not None:
                    self._to_watcher(server, watcher, message)
            return bool(server.watchers)
        if method in _LIST_CHANGES and server.watchers:
            for watcher in list(server.watchers.values()):
                self._to_watcher(server, watcher, message)
            return True
        return False

    def _to_watcher(self, server: KeptServer, watcher: Attachment, message: dict[str, Any]) -> None:
        if not _deliver(watcher, message):
            self._drop_watcher(server, watcher)

    def _to_command(self, server: KeptServer, message: dict[str, Any]) -> None:
        attachment = server.current
        if attachment is None:
            return
        if not _deliver(attachment, message):
            self._detach(server)

    def _server_gone(self, server: KeptServer) -> None:
        """The server exited (or its pipes broke): the command using it sees its connection end; the next one
        restarts it."""
        if server.proc is not None and server.proc.stdout is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._unregister(server.proc.stdout)
        server.stop()
        server.proc = None
        server.calls = max(server.calls, 1)
        for watcher in list(server.watchers.values()):
            self._drop_watcher(server, watcher)
        self._detach(server)

    # --- management ----------------------------------------------------------------------------------------------

    def describe(self, home: str | None = None) -> list[dict[str, Any]]:
        """The kept servers of ``home`` (``None``: of every home)."""
        return [server.describe() for server in self.servers.values() if home in (None, server.home)]

    def restart(self, name: str, home: str | None = None) -> bool:
        found = [s for s in self.servers.values() if s.name == name and home in (None, s.home)]
        for server in found:
            self._server_gone(server)
        return bool(found)

    def stop_home(self, home: str) -> int:
        """Stop and forget the servers of a home that is gone (one a command still holds stays until it lets go:
        the next look finds it then); how many."""
        gone = [key for key, s in self.servers.items() if s.home == home and s.current is None and not s.waiting]
        for key in gone:
            server = self.servers.pop(key)
            if server.proc is not None and server.proc.stdout is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self._unregister(server.proc.stdout)
            server.stop()
        return len(gone)

    def forget_in_child(self) -> None:
        """In a forked command: the kept servers' pipes and sockets are the worker's, not this process's."""
        for server in self.servers.values():
            for attachment in [server.current, *server.waiting, *server.watchers.values()]:
                if attachment is not None:
                    attachment.conn.close()
            if server.proc is not None:
                for pipe in (server.proc.stdin, server.proc.stdout):
                    if pipe is not None:
                        with contextlib.suppress(OSError):
                            pipe.close()  # this process's copy; the worker keeps its own

    def stop_all(self) -> None:
        for server in self.servers.values():
            for watcher in list(server.watchers.values()):
                self._drop_watcher(server, watcher)
            if server.current is not None:
                self._detach(server)
            server.stop()
