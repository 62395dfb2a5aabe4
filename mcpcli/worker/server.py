"""The worker process: everything imported once, a child forked per command.

``python -m mcpcli.worker.server [STATE_DIR] [--asked]`` (the front end starts it; ``mcpcli worker start`` too,
with ``--asked``). One worker per user and install serves every ``MCPCLI_HOME``: each command runs with its
caller's environment, and what the worker itself keeps — kept-alive servers, their logs — is keyed by the home of
the command that asked for it. It binds the socket (``userdirs.socket_file``: a 0700 directory of this user's, a
0600 socket, under a lock so two starting workers cannot both bind), imports
what a command needs (the SDK, the CLI, the flow, the store engines), and then accepts: each connection is
checked (same uid, ``platform.peer``), greeted (same mcpcli version and install, or it is told to restart us),
and its ``run`` request forked. The child takes the caller's descriptors, environment and directory, waits for
the front end's "go", runs the command as the cold path would, reports its exit status on the socket and
exits. The worker itself never runs a command, so one command cannot disturb another or the worker.

It exits after ``idle`` seconds with no command running (``[worker] idle_timeout``, ``MCPCLI_WORKER_IDLE``,
default 900; at most ``EARLY_IDLE`` until it has served ``FEW`` commands, unless ``mcpcli worker start`` asked
for it), when every home it served is gone (a test suite's temporary homes, deleted), when its socket is removed
or replaced, on ``stop``, or on SIGTERM; its log is ``worker-TAG.log`` beside its socket.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import signal
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcpcli
from mcpcli import __version__
from mcpcli.framing import FramingError, receive, send
from mcpcli.platform import POSIX, peer, status_lines
from mcpcli.userdirs import env_seconds, own_private_dir, socket_path, state_home
from mcpcli.worker import child, log_line, spare

assert POSIX, "the background worker needs fork and Unix sockets (mcpcli.platform.WORKERLESS says why)"

if TYPE_CHECKING:
    from mcpcli.worker import relay

IDLE_TIMEOUT = 900.0
"""Seconds without a command after which the worker exits (15 minutes)."""

EARLY_IDLE = 60.0
"""Seconds without a command after which a worker that has served fewer than ``FEW`` commands exits: two commands
in a row start one, and when no third comes it is gone a minute later (``MCPCLI_WORKER_EARLY_IDLE``)."""

FEW = 3

CHECK_EVERY = 2.0
"""Seconds between looks at the homes served (a deleted one is let go) and at the socket (removed: exit)."""

GREETING_TIMEOUT = 10.0
"""Seconds an accepted connection may take to begin saying what it wants (the worker listens to many at once
meanwhile)."""

READ_TIMEOUT = 2.0
"""Seconds the rest of a message may take once its first bytes are here."""

RELAY_STOP_WAIT = 1.0
"""Seconds an exiting worker waits for its HTTP relay (one still serving running commands finishes them first)."""

RELAY_QUICK_DEATH = 5.0
"""A relay that fails within this many seconds of starting, three times in a row, is left off for a while..."""

RELAY_PAUSE = 60.0
"""...this many seconds."""


def log(text: str) -> None:
    log_line("worker", text)


class Worker:
    """One worker: its socket, its counters, and the children it forked."""

    def __init__(self, idle: float, *, home: str | None = None, asked: bool = False, early: float = EARLY_IDLE) -> None:
        """A worker for this user and install, not listening yet (``bind``): it exits after ``idle`` seconds without a
        command (``early`` until it has served ``FEW``; ``asked``, by ``mcpcli worker start``: the full timeout at
        once); ``home`` is the first home it serves."""
        self.path = socket_path()
        self.idle = idle
        self.early = idle if asked else min(idle, early)
        """The idle timeout until ``FEW`` commands are served (``mcpcli worker start``: the configured one)."""
        self.homes: dict[str, bool] = {}
        """The homes this worker has served, each with whether its directory has been seen (one that existed and
        is gone is let go; a worker with none left exits)."""
        self.homeless = False
        if home:
            self.note_home(home)
        self.checked = time.monotonic()
        self.started = time.time()
        self.served = 0
        self.children: set[int] = set()
        self.last_activity = time.monotonic()
        self.stopping = False
        self.package = str(Path(mcpcli.__file__).resolve().parent)  # which install: another one must not be served
        self.credentials = _credentials(os.getpid())
        self.listener: socket.socket | None = None
        self.inode: int | None = None
        self.kept: Any = None
        self.relay: relay.Handle | None = None
        self.locks: relay.Handle | None = None
        """The lock keeper (``worker.locks``): the PostgreSQL session locks of every command, on one connection."""
        self.relay_failures = 0
        self.relay_paused_until = 0.0
        self.spare: spare.Spare | None = None
        self.want_spare = True
        """Fork a spare at the next turn of the loop: at the start, and as each command has answered."""
        self.pages = spare.Pages(self.path)
        self.pending: dict[socket.socket, float] = {}
        """Accepted connections waiting to be heard, each with when it is given up."""
        self.selector: Any = None

    # --- the socket ----------------------------------------------------------------------------------------------

    def bind(self) -> bool:
        """Listen on the socket; ``False`` when another live worker has it already."""
        directory = self.path.parent
        if not own_private_dir(str(directory)):
            log(f"{directory} is not a private directory of this user's: not listening there")
            return False
        lock = os.open(self.path.with_suffix(".lock"), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.path.exists():
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                probe.settimeout(1.0)
                try:
                    probe.connect(str(self.path))
                    return False  # alive: that one serves
                except OSError:
                    self.path.unlink(missing_ok=True)  # stale: its worker is gone
                finally:
                    probe.close()
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o177)  # the socket is created 0600 (this process is single-threaded here)
            try:
                listener.bind(str(self.path))
            finally:
                os.umask(old)
            listener.listen(128)
            self.listener = listener
            self.pages.path.unlink(missing_ok=True)  # another worker's addresses
            self.inode = self.path.stat().st_ino
            return True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            os.close(lock)

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
            with contextlib.suppress(OSError):
                if self.path.stat().st_ino == self.inode:  # ours: a worker that replaced us may have bound it since
                    self.path.unlink()
                    self.pages.path.unlink(missing_ok=True)
            self.listener = None

    def idle_limit(self) -> float:
        return self.early if self.served < FEW else self.idle

    def note_home(self, home: str) -> None:
        if home not in self.homes:
            log(f"serving a new home ({len(self.homes) + 1} in all)")
        self.homeless = False
        self.homes[home] = self.homes.get(home, False) or Path(home).is_dir()

    def check(self) -> str | None:
        """Let go of the homes whose directory is gone (and their kept servers); why this worker should exit now,
        if it should: its socket was removed or replaced (``rm -rf`` of the worker directory, a newer worker), or
        every home it served is gone."""
        self.checked = time.monotonic()
        try:
            if self.path.stat().st_ino != self.inode:
                return "the socket was replaced"
        except OSError:
            return "the socket was removed"
        for home, seen in list(self.homes.items()):
            if Path(home).is_dir():
                self.homes[home] = True
            elif seen:
                del self.homes[home]
                stopped = self.kept.stop_home(home) if self.kept is not None else 0
                log(f"a home it served is gone ({stopped} kept servers stopped; {len(self.homes)} homes left)")
                self.homeless = not self.homes
        if self.homeless and not self.children:
            return "no home left to serve"
        return None

    # --- the loop ------------------------------------------------------------------------------------------------

    def serve(self) -> None:
        """The worker's loop, until it is idle past ``idle_limit``, ``check`` gives a reason to exit, or SIGTERM sets
        ``stopping``. Each turn reaps its children, keeps a spare forked, and answers what is ready: a new connection
        (heard within ``GREETING_TIMEOUT``), a greeting or a request (``greet``), a kept server's or an attached
        command's bytes (``kept``), a child's "answered" (the next spare). On the way out every kept server, the spare
        and the relay are stopped; the listener is ``close``'s."""
        from mcpcli.worker.kept import Kept

        assert self.listener is not None
        log(f"serving {self.path} (mcpcli {__version__}, idle timeout {self.idle:g} s, {self.early:g} s at first)")
        self.selector = selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        self.kept = Kept(
            lambda obj, data: selector.register(obj, selectors.EVENT_READ, data),
            selector.unregister,
        )
        self.last_activity = time.monotonic()  # idle from now: the preload before this is not idleness
        greeting = self.pending
        try:
            while not self.stopping:
                self.reap()
                if self.want_spare and self.spare is None and not self.stopping:
                    self.want_spare = False
                    self.spare = self.fork_spare()
                busy = self.children or greeting or any(s.current or s.watchers for s in self.kept.servers.values())
                if not busy and time.monotonic() - self.last_activity > self.idle_limit():
                    log("idle: exiting")
                    break
                if time.monotonic() - self.checked > CHECK_EVERY and (why := self.check()):
                    log(f"{why}: exiting")
                    break
                for key, _events in selector.select(timeout=0.5):
                    kind, server = key.data
                    if kind == "server":
                        self.kept.from_server(server)
                    elif kind == "attached":
                        self.kept.from_command(server)
                        self.last_activity = time.monotonic()
                    elif kind == "watching":
                        self.kept.from_watcher(*server)
                        self.last_activity = time.monotonic()
                    elif kind == "answered":  # a command has its status: the next spare, while its front end exits
                        selector.unregister(server)
                        server.close()
                        self.want_spare = True
                    elif kind in ("greeting", "request"):
                        selector.unregister(server)
                        del greeting[server]
                        after = self.greet(server, kind)
                        if after == "request":
                            greeting[server] = time.monotonic() + GREETING_TIMEOUT
                            selector.register(server, selectors.EVENT_READ, ("request", server))
                        elif after == "close":
                            server.close()
                    elif conn := self.accept():
                        greeting[conn] = time.monotonic() + GREETING_TIMEOUT
                        selector.register(conn, selectors.EVENT_READ, ("greeting", conn))
                now = time.monotonic()
                for conn in [c for c, deadline in greeting.items() if deadline < now]:
                    log("a connection said nothing in time")
                    selector.unregister(conn)
                    del greeting[conn]
                    conn.close()
        finally:
            self.kept.stop_all()
            for conn in greeting:
                conn.close()
            if self.spare is not None:
                self.spare.control.close()  # it sees the worker go, and exits
            selector.close()
            if self.relay is not None:
                self.relay.stop(wait=RELAY_STOP_WAIT)

    def accept(self) -> socket.socket | None:
        """A new connection, heard once it speaks: a slow front end (a loaded machine starves some) never holds up
        the others."""
        assert self.listener is not None
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, TimeoutError):
            return None
        except OSError as exc:
            log(f"accept failed: {exc}")
            return None
        self.last_activity = time.monotonic()
        return conn

    def greet(self, conn: socket.socket, stage: str) -> str:
        """Hear one message of a connection (``stage``: its ``"greeting"`` or its ``"request"``); what next
        (see ``handle``)."""
        try:
            if stage == "greeting":
                return self.handle(conn)
            self.run(conn)
        except (OSError, FramingError, ValueError, TypeError, KeyError) as exc:
            log(f"a connection failed: {type(exc).__name__}: {exc}")
        return "close"

    def reap(self) -> None:
        if self.spare is not None and self.spare.exited():  # killed, or failed: another once a command answers
            log(f"the spare child (pid {self.spare.pid}) exited before it had a command")
            self.spare.control.close()
            self.spare = None
        for pid in list(self.children):
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.children.discard(pid)
                self.last_activity = time.monotonic()

    def handle(self, conn: socket.socket) -> str:
        """Serve one connection's first message. What then: ``"close"`` it, it is ``"kept"`` (lent to a kept
        server), or it is greeted and its ``"request"`` comes next."""
        conn.settimeout(READ_TIMEOUT)
        pid, uid = peer(conn)
        if uid != os.getuid():
            log(f"refused a connection from uid {uid}")
            return "close"
        hello, _ = receive(conn)
        op = str(hello.get("op"))
        same = hello.get("version") == __version__ and hello.get("package") == self.package
        if op == "status":
            send(conn, self.status())
        elif op == "stop":
            send(conn, {"ok": True})
            self.stopping = True
        elif op == "ps":
            send(conn, {"ok": True, "servers": self.kept.describe(_home_of(hello))})
        elif op.startswith("restart:"):
            send(conn, {"ok": self.kept.restart(op.removeprefix("restart:"), _home_of(hello))})
        elif op == "locks":  # a command on PostgreSQL: the lock keeper, started on first need
            self.locks = child.lock_keeper(self.locks, self.path)
            send(conn, {"ok": self.locks is not None, "path": None if self.locks is None else str(self.locks.path)})
        elif op == "attach":
            self.kept.attach(conn, hello)
            return "kept"
        elif op != "hello":
            send(conn, {"ok": False, "why": f"unknown request {op!r}"})
        elif not same:
            send(conn, {"ok": False, "why": "version", "version": __version__, "package": self.package})
            self.stopping = True  # an mcpcli of another version or install is in use: let it start its own worker
        elif _credentials(pid) != self.credentials:
            # Other groups or capabilities than the worker's (``sg``, ``setpriv``, a dropped capability): run as
            # itself — a command must have its caller's rights, no more, whichever command started the worker.
            send(conn, {"ok": False, "why": "credentials"})
        else:
            send(conn, {"ok": True, "version": __version__, "pid": os.getpid()})
            return "request"
        return "close"

    def run(self, conn: socket.socket) -> None:
        """A greeted connection's request: the command, with the caller's descriptors beside it. (The front end
        sends them only once greeted: descriptors queued to a worker that never reads them would hold the caller's
        pipes open.)"""
        request, fds = receive(conn, with_fds=True)
        if request.get("op") != "run" or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            return
        env = request.get("env")
        home = state_home({str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {})
        self.note_home(str(Path(str(request.get("cwd") or "/"), home)))  # a relative MCPCLI_HOME: the caller's
        self.fork(conn, request, fds)

    def ensure_relay(self) -> None:
        """The HTTP relay runs: started again when it exited (idle, or killed) — unless it keeps dying as soon as it
        starts, when it is left off for ``RELAY_PAUSE`` seconds (commands go direct meanwhile)."""
        from mcpcli.worker import relay  # not before the preload: the worker binds its socket first

        handle = self.relay
        if handle is not None:
            if handle.running():
                return
            lived = time.monotonic() - handle.started
            log(f"the relay (pid {handle.pid}) exited with status {handle.status} after {lived:.0f} s")
            self.relay = None
            failed = handle.status not in (0, None) and lived < RELAY_QUICK_DEATH
            self.relay_failures = self.relay_failures + 1 if failed else 0
            if self.relay_failures >= 3:
                self.relay_failures = 0
                self.relay_paused_until = time.monotonic() + RELAY_PAUSE
        if time.monotonic() < self.relay_paused_until or (where := relay.socket_for(self.path)) is None:
            return
        self.relay = relay.start(where, self.idle)
        if self.relay is not None:
            log(f"HTTP relay started (pid {self.relay.pid})")

    def fork(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        """Hand the command to the spare child (forked now when there is none, or it is gone)."""
        self.ensure_relay()
        relay_path = str(self.relay.path) if self.relay is not None else None
        message = {"request": request, "relay": relay_path, "record": spare.records(self.served)}
        try:
            for attempt in (1, 2):
                taker, self.spare = self.spare or self.fork_spare(), None
                try:
                    send(taker.control, message, [conn.fileno(), *fds])
                    break
                except OSError:
                    taker.control.close()
                    taker.exited()
                    if attempt == 2:
                        raise
        finally:
            for fd in fds:
                os.close(fd)
        self.selector.register(taker.control, selectors.EVENT_READ, ("answered", taker.control))
        self.children.add(taker.pid)
        self.served += 1

    def fork_spare(self) -> spare.Spare:
        """A child forked now, with nothing of the worker's but its memory, waiting for a command (``spare``)."""
        return spare.fork(self, lambda control: _spare(control, str(self.path)))

    def status(self) -> dict[str, Any]:
        """What ``mcpcli worker status`` shows: the worker's process, version and install, what it served and runs, its
        idle timeouts, socket and log, its resident size and its relay."""
        return {
            "ok": True,
            "pid": os.getpid(),
            "version": __version__,
            "package": self.package,
            "started": self.started,
            "served": self.served,
            "running": len(self.children),
            "spare": self.spare.pid if self.spare is not None else None,
            "idle_timeout": self.idle,
            "idle_now": self.idle_limit(),
            "homes": len(self.homes),
            "socket": str(self.path),
            "log": str(self.path.with_suffix(".log")),
            "rss_kb": _rss_kb(),
            "relay": self.relay.describe() if self.relay is not None and self.relay.running() else None,
            "relay_paused": max(0.0, round(self.relay_paused_until - time.monotonic(), 1)),
        }


CREDENTIALS = ("Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:")
"""What of a process's rights (besides its uid, checked on every connection) a command run by the worker must share
with its caller."""


def _credentials(pid: int) -> list[str] | None:
    """The ``CREDENTIALS`` lines of the process's status (``platform.status_lines``); ``None`` where they cannot be
    read (then not compared: a front end that has gone is turned away later, at its request)."""
    return status_lines(pid, CREDENTIALS)


def _home_of(request: dict[str, Any]) -> str | None:
    """The home a control request (``ps``, ``restart``) is about; ``None``: every home."""
    home = request.get("home")
    return home if isinstance(home, str) and home else None


def _rss_kb() -> int:
    with contextlib.suppress(ValueError, IndexError):
        for line in status_lines("self", ("VmRSS:",)) or []:
            return int(line.split()[1])
    return 0


def _spare(control: socket.socket, path: str) -> int:
    """The spare child: its command (its front end's connection, the caller's descriptors), run; 0 when the worker
    goes first."""
    try:
        message, fds = receive(control, with_fds=True)
    except (OSError, FramingError):
        return 0
    if len(fds) != 4:
        return 0
    conn = socket.socket(fileno=fds[0])
    conn.setblocking(True)  # the worker's copy had a timeout (the flag is the descriptor's)
    code = _child(conn, dict(message["request"]), fds[1:], path, message.get("relay"), control)
    if message.get("record"):
        spare.record(path)
    return code


def _child(
    conn: socket.socket,
    request: dict[str, Any],
    fds: list[int],
    path: str,
    relay_path: str | None,
    control: socket.socket,
) -> int:
    """In the forked child: become the caller's process, wait for "go", run the command, report its status."""
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    child.take_environment(dict(request.get("env") or {}), path, relay_path)
    os.chdir(str(request.get("cwd") or "/"))
    if isinstance(mask := request.get("umask"), int):
        os.umask(mask & 0o777)  # the caller's, not that of the command that started the worker
    child.reopen_stdio()
    send(conn, {"started": os.getpid()})
    conn.settimeout(30.0)
    go, _ = receive(conn)
    if not go.get("go"):
        return 0
    conn.settimeout(None)
    child.hang_up_with(conn)
    argv = [str(word) for word in request.get("argv") or []]
    child.send_spans_later()
    code = _run(argv)
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    # The command is over: the front end that goes once it has the status no longer hangs this child up
    # (``hang_up_with``), which still has the store's log to hand over.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        send(conn, {"exit": code})
    with contextlib.suppress(OSError):
        control.send(b"a")  # answered: the worker forks the next spare now
    child.send_spans()
    child.keep_logs_open(path)
    return code


_COMMAND: Any = None
"""The CLI's Click command tree, built once in the worker (Typer builds it from the signatures on every call)."""


def _run(argv: list[str]) -> int:
    """Run ``argv`` in this child, which has become its caller's process (``_child``: environment, directory, stdio,
    umask), so in the process's own surroundings: its exit status, as the interpreter would have made it of
    ``SystemExit`` or Ctrl-C."""
    from mcpcli.cli.app import run_command  # preloaded

    sys.argv = ["mcpcli", *argv]
    try:
        run_command(_COMMAND, argv)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        sys.stderr.write(f"{exc.code}\n")  # what the interpreter prints for sys.exit("message")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("\nInterrupted.\n")
        return 130
    return 0


def preload() -> None:
    """Everything a command imports, once (``worker.preload``), and the CLI's command tree."""
    from mcpcli.worker import preload as everything

    global _COMMAND
    _COMMAND = everything.preload()


def main(argv: list[str] | None = None) -> int:
    """``python -m mcpcli.worker.server [STATE_DIR] [--asked]``: bind this user's socket (0 at once when another worker
    has it), preload everything, start the relay and serve until the worker exits; 2 for a bad command line."""
    args = sys.argv[1:] if argv is None else argv
    asked = "--asked" in args
    homes = [arg for arg in args if arg != "--asked"]
    if len(homes) > 1:
        sys.stderr.write("usage: python -m mcpcli.worker.server [STATE_DIR] [--asked]\n")
        return 2
    early = env_seconds("MCPCLI_WORKER_EARLY_IDLE", EARLY_IDLE)
    worker = Worker(
        env_seconds("MCPCLI_WORKER_IDLE", IDLE_TIMEOUT), home=homes[0] if homes else None, asked=asked, early=early
    )
    if not worker.bind():
        log("another worker is listening already (or the directory is not this user's alone); exiting")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: setattr(worker, "stopping", True))
    try:
        preload()
        worker.ensure_relay()  # forked now, with everything imported: its first requests are as warm as the rest
        worker.serve()
    finally:
        worker.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
