"""A command's side of the worker's lock keeper (``mcpcli.worker.locks``): session locks taken on the keeper's one
connection instead of the command's own, so the command's connection need not be held for its flows' lives.

The socket to the keeper is the command's life: the keeper gives up the command's locks the moment it closes. When
the keeper is gone (killed; its connection failed), ``Broker.gone`` says so and the store takes its locks again on
its own connection — one it then keeps, as a command run without the worker does.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
from collections.abc import Callable
from typing import Any

from mcpcli.framing import FramingError, receive, send
from mcpcli.platform import closed_by_peer, unix_socket

WORKER_ENV = "MCPCLI_WORKER_SOCKET"
"""The worker's socket, set by the worker in the commands it runs (``net.attach.SOCKET_ENV``): asked where the
keeper listens (``{"op": "locks"}``), which starts it on first need."""

TIMEOUT = 15.0
"""Seconds a request may take (the keeper may be connecting to the database: its ``connect_timeout`` is 10 s)."""


class BrokerGone(Exception):
    """The keeper cannot be reached or failed: take the locks on this process's own connection."""


def libpq_environment() -> dict[str, str]:
    """This process's ``PG*`` variables as libpq connection parameters: the keeper connects as this command would."""
    from psycopg import pq

    found: dict[str, str] = {}
    for option in pq.Conninfo.get_defaults():
        if option.envvar and (value := os.environ.get(option.envvar.decode())):
            found[option.keyword.decode()] = value
    return found


def keeper_path(worker_socket: str, timeout: float) -> str | None:
    """Where the lock keeper listens, asked of the worker at ``worker_socket`` (which starts the keeper if it is not
    running); ``None`` when the worker has none. The socket's errors (``OSError``, ``FramingError``) are the
    caller's."""
    with unix_socket() as worker:
        worker.settimeout(timeout)
        worker.connect(worker_socket)
        send(worker, {"op": "locks"})
        answer, _ = receive(worker)
    path = answer.get("path")
    return path if answer.get("ok") and isinstance(path, str) else None


class Broker:
    """The connection to the keeper, opened on first use; one request at a time (the store's lock serialises)."""

    def __init__(self, path: str, url: str, params: dict[str, Any], on_gone: Callable[[], None]) -> None:
        self.path = path
        self.url = url
        self.params = params
        self.on_gone = on_gone
        """Called (in a thread of its own) the moment the keeper hangs up: the locks it held for us are gone."""
        self.sock: socket.socket | None = None
        self.failed = False

    @classmethod
    def from_env(cls, url: str, params: dict[str, Any], on_gone: Callable[[], None]) -> Broker | None:
        path = os.environ.get(WORKER_ENV)
        return cls(path, url, params | libpq_environment(), on_gone) if path else None

    def _watch(self, sock: socket.socket) -> None:
        closed = True
        with contextlib.suppress(OSError, ValueError):  # only the other end closing: answers are read by ``ask``
            closed = closed_by_peer(sock, wait=True)
        if closed and not self.failed:
            self.on_gone()

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """One request to the keeper and its answer, connecting (and watching the socket) on first use. Any failure
        closes the connection and raises ``BrokerGone``: from then on the store takes its locks on its own connection.
        """
        if self.failed:
            raise BrokerGone
        try:
            if self.sock is None:
                sock = unix_socket()
                sock.settimeout(TIMEOUT)
                sock.connect(self._keeper())
                self.sock = sock
                self._exchange({"op": "open", "url": self.url, "params": self.params})
                threading.Thread(target=self._watch, args=(sock,), name="mcpcli-lock-keeper", daemon=True).start()
            return self._exchange(message)
        except (OSError, FramingError, BrokerGone):
            self.close()
            raise BrokerGone from None

    def _keeper(self) -> str:
        path = keeper_path(self.path, TIMEOUT)
        if path is None:
            raise BrokerGone
        return path

    def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.sock is not None
        send(self.sock, message)
        answer, _ = receive(self.sock)
        if "error" in answer:
            raise BrokerGone
        return answer

    def gone(self) -> bool:
        """The keeper hung up (it died, or let this command go when its database connection failed) — a look that
        waits for nothing."""
        if self.failed:
            return True
        if self.sock is None:
            return False
        readable, _, _ = select.select([self.sock], [], [], 0)
        if readable:  # nothing is ever sent unasked: readable means closed
            self.close()
            return True
        return False

    def close(self) -> None:
        self.failed = True
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)  # the keeper sees it at once, and the watching thread ends
                self.sock.close()
            self.sock = None
