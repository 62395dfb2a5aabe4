"""The lock keeper: one process beside the worker that holds the PostgreSQL session locks of every command the worker
runs, on one connection per store — so a busy worker (many commands, ``batch --jobs 32`` in each) needs one
connection for all its flows' locks, not one per flow held for the flow's life.

A command (the worker's child) that claims a session on PostgreSQL asks the worker where the keeper is (the worker
starts it on first need: a worker whose commands never use PostgreSQL has none), then asks the keeper over a Unix
socket (``state.store.pglocks``) to take the session's lock before its claim's compare-and-set; the keeper takes
it on its connection and says whether nobody held it (which proves a lock-backed lease's holder gone). The
command's socket is its life: when the command exits or is killed the socket closes, and the keeper gives up every
lock the command took at once. When the keeper dies, its connection ends and the database frees all the locks; a
command still running sees the socket close and takes its locks again at once on a connection of its own. The
keeper outlives the worker while commands still hold locks through it (they are live drivers), then exits.

The rest of a command's store work runs on its own connection, closed when idle (``PostgresStore``), so a flow
waiting on a server holds no connection.

It also keeps SQLite stores' write-ahead logs open between commands. A command that ends names each store file it
wrote a flow's rounds to (``hold``); the keeper opens it (``state.store.sqlite.hold_open``), copies the log into the
file at once (``settle``: the file alone is whole at rest), and holds it ``HOLD_LINGER`` seconds after the last
command that named it — so commands in a row commit over a log already on disk instead of growing a new one each
time. A store whose file is gone is let go within a second; one whose file was replaced (moved aside, another made in
its place) is never closed by the keeper (SQLite would delete the log by its name, which may now be the new file's):
its descriptors go when the keeper exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpcli.framing import FramingError, receive, send
from mcpcli.platform import POSIX, peer
from mcpcli.userdirs import env_seconds
from mcpcli.worker import log_line

assert POSIX, "the background worker needs fork and Unix sockets (mcpcli.platform.WORKERLESS says why)"

from mcpcli.worker.relay import Handle, fork_beside  # noqa: E402  # after the assert: mypy --platform win32 skips it

LINGER = 30.0
"""Seconds a store's connection stays open holding no lock before the keeper closes it."""

HOLD_LINGER = 30.0
"""Seconds a SQLite store's log is held after the last command that named it (``MCPCLI_WORKER_HOLD_LINGER``)."""

MAX_HELD = 16
"""SQLite stores held at once (a test suite's temporary homes): past that, the one named longest ago is let go."""


def log(text: str) -> None:
    log_line("locks", text)


def socket_for(worker_socket: Path) -> Path | None:
    """Where the keeper of the worker at ``worker_socket`` listens (beside it), or ``None`` when too long a path."""
    path = worker_socket.with_name(f"{worker_socket.stem}-locks.sock")
    return path if len(os.fsencode(str(path))) < 108 else None


def start(path: Path) -> Handle | None:
    """Bind the keeper's socket and fork the keeper (in the worker, which has imported everything)."""
    return fork_beside(path, "locks", _main)


def _main(listener: socket.socket, control: socket.socket) -> int:
    for name in [name for name in os.environ if name.startswith("PG")]:
        del os.environ[name]  # libpq's defaults are each command's own: it sends them with its store
    return Keeper(listener, control).run()


# --- the keeper process ----------------------------------------------------------------------------------------------


@dataclass
class Store:
    """One store (URL and the libpq settings of the commands' environment): its connection and who holds what."""

    url: str
    params: dict[str, Any]
    conn: Any = None
    holders: dict[str, set[tuple[int, str]]] = field(default_factory=dict)
    """By session: the (channel, owner) pairs that took its lock (PostgreSQL counts a lock taken twice)."""
    idle_since: float = field(default_factory=time.monotonic)

    def connection(self) -> Any:
        import psycopg

        from mcpcli.state.store.postgres import SERVER_KEEPALIVE

        if self.conn is None or self.conn.closed or self.conn.broken:
            self.conn = psycopg.connect(self.url, autocommit=True, **self.params)
            self.conn.execute(SERVER_KEEPALIVE)
        return self.conn

    def lock(self, session_id: str, holder: tuple[int, str]) -> dict[str, bool]:
        from mcpcli.state.store.postgres import session_lock_key

        held = self.holders.get(session_id, set())
        if holder in held:
            return {"got": True, "proves_gone": False}
        row = self.connection().execute("SELECT pg_try_advisory_lock(%s, %s)", session_lock_key(session_id)).fetchone()
        if not row or not row[0]:
            return {"got": False, "proves_gone": False}
        self.holders.setdefault(session_id, set()).add(holder)
        return {"got": True, "proves_gone": not held}  # nobody else held it: a lock-backed lease's holder is gone

    def unlock(self, session_id: str, holder: tuple[int, str]) -> None:
        from mcpcli.state.store.postgres import session_lock_key

        held = self.holders.get(session_id)
        if held is None or holder not in held:
            return
        held.discard(holder)
        if not held:
            del self.holders[session_id]
            self.idle_since = time.monotonic()
        if self.conn is not None and not (self.conn.closed or self.conn.broken):
            self.conn.execute("SELECT pg_advisory_unlock(%s, %s)", session_lock_key(session_id))


@dataclass
class Held:
    """A SQLite store whose log the keeper holds open: the connection, the file it is on, and when it was last named."""

    conn: Any
    file: tuple[int, int]
    """The store file's device and inode when opened: another file at its path is not this store."""
    named: float = field(default_factory=time.monotonic)


def _file_of(path: str) -> tuple[int, int] | None:
    try:
        found = Path(path).stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


@dataclass
class Channel:
    """One command's connection to the keeper: the store it named, and what it holds."""

    sock: socket.socket
    store: str | None = None
    held: set[tuple[str, str]] = field(default_factory=set)


class Keeper:
    def __init__(self, listener: socket.socket, control: socket.socket) -> None:
        self.listener = listener
        self.control = control
        self.selector = selectors.DefaultSelector()
        self.channels: dict[int, Channel] = {}
        self.stores: dict[str, Store] = {}
        self.orphan = False
        """The worker is gone: exit once no command holds a lock through this keeper."""
        self.held: dict[str, Held] = {}
        """SQLite stores whose logs are kept open, by path."""
        self.stranded: list[Any] = []
        """Connections on a store file that was replaced: never closed (see the module's docstring)."""
        self.hold_linger = env_seconds("MCPCLI_WORKER_HOLD_LINGER", HOLD_LINGER, least=0.0)

    def run(self) -> int:
        """The keeper's loop: each command's lock requests answered, SQLite logs held, until the worker has gone (EOF on
        the control pair) and no command holds a lock through it; then every held log is let go. Exit status 0."""
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.control, selectors.EVENT_READ, "control")
        log("serving")
        while not (self.orphan and not self.channels):
            for key, _ in self.selector.select(timeout=1.0):
                if key.data == "accept":
                    self.accept()
                elif key.data == "control":
                    with contextlib.suppress(OSError):
                        if self.control.recv(1):
                            continue
                    self.selector.unregister(self.control)
                    self.orphan = True
                else:
                    self.serve(self.channels[key.data])
            self.let_idle_go()
        for path in list(self.held):
            self.let_go(path)
        log("the worker is gone and no command holds a lock: exiting")
        return 0

    def accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        if peer(sock)[1] != os.getuid():
            sock.close()
            return
        sock.settimeout(5.0)
        self.channels[sock.fileno()] = Channel(sock)
        self.selector.register(sock, selectors.EVENT_READ, sock.fileno())

    def serve(self, channel: Channel) -> None:
        """One request of ``channel``'s command, answered. A command gone (EOF) drops its locks; a database failure
        loses that store's locks (each command takes its own back) and is answered as an error; a malformed request is
        that command's error alone."""
        try:
            ask, _ = receive(channel.sock)
        except (OSError, FramingError):
            self.drop(channel)  # the command exited, or was killed: its locks go now
            return
        import psycopg

        try:
            answer = self.answer(channel, ask)
        except psycopg.Error as exc:  # the database failed: its locks are gone; each command takes its own back
            log(f"a lock request failed: {type(exc).__name__}: {exc}")
            self.lost(channel.store)
            answer = {"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
        except (KeyError, TypeError, ValueError) as exc:  # a malformed request: that command's alone
            answer = {"error": f"bad request: {type(exc).__name__}"}
        try:
            send(channel.sock, answer)
        except OSError:
            self.drop(channel)

    def answer(self, channel: Channel, ask: dict[str, Any]) -> dict[str, Any]:
        """What ``ask`` asks, done: ``hold`` (keep a SQLite store's log open), ``open`` (the PostgreSQL store this
        channel's locks are on), ``lock`` / ``unlock`` (a session's lock, for an owner); an unknown ``op`` is an error
        answer. The database's errors are raised (``serve`` words them)."""
        op = ask.get("op")
        if op == "hold":
            return {"ok": self.hold(str(ask["path"]))}
        if op == "open":
            url, params = str(ask["url"]), {str(k): str(v) for k, v in dict(ask.get("params") or {}).items()}
            channel.store = json.dumps([url, sorted(params.items())])
            self.stores.setdefault(channel.store, Store(url, params))
            return {"ok": True}
        store = self.stores[str(channel.store)]
        session_id, owner = str(ask["session"]), str(ask["owner"])
        holder = (channel.sock.fileno(), owner)
        if op == "lock":
            got = store.lock(session_id, holder)
            if got["got"]:
                channel.held.add((session_id, owner))
            return got
        if op == "unlock":
            channel.held.discard((session_id, owner))
            store.unlock(session_id, holder)
            return {"ok": True}
        return {"error": f"unknown request {op!r}"}

    def drop(self, channel: Channel) -> None:
        fd = channel.sock.fileno()
        self.selector.unregister(channel.sock)
        del self.channels[fd]
        store = self.stores.get(channel.store) if channel.store else None
        for session_id, owner in channel.held:
            if store is not None:
                try:
                    store.unlock(session_id, (fd, owner))
                except Exception as exc:  # boundary: the connection failed, and its locks went with it
                    log(f"could not give up a lock: {type(exc).__name__}: {exc}")
                    self.lost(channel.store)
                    break
        channel.sock.close()

    def lost(self, key: str | None) -> None:
        """The store's connection failed: its locks are gone; the commands that held some are let go (their next
        store call takes them again on a connection of their own)."""
        store = self.stores.pop(key, None) if key else None
        if store is None:
            return
        with contextlib.suppress(Exception):
            store.conn.close()
        for channel in [c for c in self.channels.values() if c.store == key and c.held]:
            channel.held.clear()
            self.drop(channel)

    def hold(self, path: str) -> bool:
        """Keep the log of the SQLite store at ``path`` open (a command that used it has ended), and settle it."""
        import sqlite3

        from mcpcli.errors import StoreError
        from mcpcli.state.store import sqlite

        file = _file_of(path) if Path(path).is_absolute() else None
        held = self.held.get(path)
        if held is not None and held.file != file:
            self.let_go(path)
            held = None
        if file is None:
            return False
        if held is None:
            while len(self.held) >= MAX_HELD:
                self.let_go(min(self.held, key=lambda p: self.held[p].named))
            try:
                held = self.held[path] = Held(sqlite.hold_open(Path(path)), file)
            except (StoreError, sqlite3.Error, OSError) as exc:
                log(f"not holding a store's log: {exc}")
                return False
            log(f"holding a store's log ({len(self.held)} held)")
        held.named = time.monotonic()
        try:
            sqlite.settle(held.conn)
        except sqlite3.Error as exc:
            log(f"could not settle a store's log: {exc}")
        return True

    def let_go(self, path: str) -> None:
        """Close a held store's connection — when its file is still the one opened, or gone with its log (a deleted
        home); otherwise strand it (the module's docstring says why)."""
        held = self.held.pop(path)
        file = _file_of(path)
        if file == held.file or (file is None and _file_of(path + "-wal") is None):
            with contextlib.suppress(Exception):
                held.conn.close()
            log(f"let a store's log go ({'its file is gone' if file is None else 'idle'}; {len(self.held)} held)")
        else:
            log("a held store's file was replaced: its connection is left open until the keeper exits")
            self.stranded.append(held.conn)

    def let_idle_go(self) -> None:
        now = time.monotonic()
        for path, held in list(self.held.items()):
            if now - held.named > self.hold_linger or _file_of(path) != held.file:
                self.let_go(path)
        for store in self.stores.values():
            if store.conn is not None and not store.holders and now - store.idle_since > LINGER:
                with contextlib.suppress(Exception):
                    store.conn.close()
                store.conn = None
