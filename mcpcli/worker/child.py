"""In a worker's forked child, before it runs its command: becoming the caller's process (its environment, its
stdio, a hang-up when the front end goes), and the worker's helpers it is told about."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpcli.platform import POSIX
from mcpcli.userdirs import OFF

assert POSIX, "the background worker needs fork and Unix sockets (mcpcli.platform.WORKERLESS says why)"

if TYPE_CHECKING:
    from mcpcli.worker.relay import Handle


def take_environment(env: dict[str, Any], path: str, relay_path: str | None) -> None:
    """The caller's environment, and where this worker's socket and relay are — never ones the caller's environment
    names. (The worker's socket also tells a command on PostgreSQL where to ask for the lock keeper.)"""
    import tempfile  # preloaded

    from mcpcli.net.transports import RELAY_ENV  # preloaded

    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    tempfile.tempdir = None  # found again from the caller's TMPDIR, should the worker have cached its own
    os.environ["MCPCLI_WORKER_SOCKET"] = path  # kept-alive servers are attached through the worker
    os.environ.pop(RELAY_ENV, None)
    if relay_path is not None and os.environ.get("MCPCLI_HTTP_RELAY", "").strip().lower() not in OFF:
        os.environ[RELAY_ENV] = relay_path  # and HTTP requests go through its relay (mcpcli.net.relayed)


def lock_keeper(handle: Handle | None, worker_socket: Path) -> Handle | None:
    """The worker's lock keeper, started again if it is gone (killed: its locks went with it)."""
    from mcpcli.worker import locks

    if handle is not None and handle.running():
        return handle
    where = locks.socket_for(worker_socket)
    return None if where is None else locks.start(where)


def keep_logs_open(worker_socket: str) -> None:
    """As the command ends (its exit status already with the front end): name each SQLite store it wrote a flow's
    rounds to to the lock keeper, which keeps the store's write-ahead log open for the next command (``worker.locks``).
    Best effort and bounded: a worker or keeper that does not answer costs at most a second. (Nobody waits for this:
    the front end has the status, and the worker counts the child as running until it exits.)"""
    from mcpcli.framing import FramingError, receive, send
    from mcpcli.state.store import sqlite  # preloaded
    from mcpcli.state.store.pglocks import keeper_path

    if not sqlite.ROUNDS_WRITTEN:
        return
    with contextlib.suppress(OSError, FramingError):
        where = keeper_path(worker_socket, 1.0)  # started on first need
        if where is None:
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as keeper:
            keeper.settimeout(1.0)
            keeper.connect(where)
            for path in sorted(sqlite.ROUNDS_WRITTEN):
                send(keeper, {"op": "hold", "path": str(path.absolute())})
                receive(keeper)  # held and settled, or not: either way the command is done


def send_spans_later() -> None:
    """Before the command runs: its OpenTelemetry spans, if it makes any, wait for ``send_spans``."""
    from mcpcli.telemetry import export  # preloaded; light (the OpenTelemetry SDK is imported only when tracing is on)

    export.LATER = True


def send_spans() -> None:
    """As the command ends (its exit status already with the front end): the spans it made go to its collector, with
    its own settings (``mcpcli.telemetry.export``: bounded by the OTLP timeout). Nobody waits for this."""
    from mcpcli.telemetry import export

    export.LATER = False
    export.stop()


def hang_up_with(conn: socket.socket) -> None:
    """When the front end goes away mid-command (killed, its terminal closed), this child gets SIGHUP — what the
    cold path's process would have got from its terminal: a flow saves its session and stops its server."""
    import threading

    def watch() -> None:
        with contextlib.suppress(OSError):
            if conn.recv(1) == b"":
                os.kill(os.getpid(), signal.SIGHUP)

    threading.Thread(target=watch, name="mcpcli-front-end-watch", daemon=True).start()


def reopen_stdio() -> None:
    """Fresh text streams on the caller's descriptors, buffered as Python would for them (line-buffered on a
    terminal)."""
    encoding = os.environ.get("PYTHONIOENCODING", "utf-8").split(":")[0] or "utf-8"
    sys.stdin = open(0, encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stdout = open(  # noqa: SIM115
        1, "w", encoding=encoding, errors="backslashreplace", closefd=False, buffering=1 if os.isatty(1) else -1
    )  # as the cold path's stdout (``terminal.output.lenient_stdout``)
    sys.stderr = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115
