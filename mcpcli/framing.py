"""Length-prefixed JSON messages on a Unix stream socket, with file descriptors beside them: how the front end
and the worker (``worker``), a kept-alive server's transport and the lock keeper (``state.store.pglocks``) talk.

Standard library only, and only its cheapest modules: the front end's warm path imports this, and each module
costs every warm command a few milliseconds. Every read is bounded: a message says its length in 4 bytes, and one
longer than ``MAX_MESSAGE`` (an environment is a few KiB) is refused.
"""

from __future__ import annotations

import _socket  # not ``socket``: its Python layer (enum, selectors) costs every warm command ~2 ms
import os
import struct

from mcpcli.platform import POSIX

TYPE_CHECKING = False  # not typing's: importing typing costs the warm path ~4 ms (mypy reads the name alone)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MAX_MESSAGE = 4 * 2**20
"""The largest message either side reads; the environment of a shell fits many times over."""

MAX_FDS = 4
"""The most descriptors one message carries: the caller's stdio, and its connection when the worker hands it to its
spare child (``worker.spare``)."""


class FramingError(Exception):
    """The other side closed the connection, or sent something that is not a message."""


FDS_PASS = POSIX and hasattr(_socket.socket, "sendmsg") and hasattr(_socket, "SCM_RIGHTS")
"""Descriptors can go beside a message here (``SCM_RIGHTS``: not on Windows)."""


def send(sock: _socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    body = _encode(message)
    data = struct.pack(">I", len(body)) + body
    if fds:
        if not FDS_PASS:
            raise FramingError("this system cannot pass file descriptors over a socket")
        data = data[_send_fds(sock, data, fds) :]
    if data:
        sock.sendall(data)


def receive(sock: _socket.socket, *, with_fds: bool = False) -> tuple[dict[str, Any], list[int]]:
    """One message (and the descriptors that came with it); ``FramingError`` at EOF or on garbage."""
    fds: list[int] = []
    if with_fds and FDS_PASS:
        head, fds = _receive_fds(sock, 4)
    else:
        head = sock.recv(4)
    head += read_exactly(sock, 4 - len(head)) if head else b""
    if len(head) != 4:
        _close(fds)
        raise FramingError("closed")
    (length,) = struct.unpack(">I", head)
    if length > MAX_MESSAGE:
        _close(fds)
        raise FramingError(f"a message of {length} bytes")
    try:
        message = _decode(read_exactly(sock, length))
    except (ValueError, StopIteration):
        _close(fds)
        raise FramingError("not JSON") from None
    if not isinstance(message, dict):
        _close(fds)
        raise FramingError("not an object")
    return message, fds


def _json_codec() -> tuple[Callable[[object], bytes], Callable[[bytes], object]]:
    """JSON in and out through the interpreter's own C codec (``_json``, what ``json`` runs on) without importing
    ``json``, ~1 ms of every warm command; ``json`` itself where there is no ``_json``. The text is the same as
    ``json.dumps(message, separators=(",", ":"))`` writes."""
    try:
        import _json
    except ImportError:
        import json

        return (lambda message: json.dumps(message, separators=(",", ":")).encode()), json.loads

    def refuse(value: object) -> object:
        raise TypeError(f"{type(value).__name__} is not JSON")

    def constant(name: str) -> object:
        raise ValueError(f"{name} is not JSON")

    encoder = _json.make_encoder({}, refuse, _json.encode_basestring_ascii, None, ":", ",", False, False, False)

    class Context:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = staticmethod(constant)

    scanner = _json.make_scanner(Context())  # type: ignore[arg-type]  # the attributes it reads

    def decode(data: bytes) -> object:
        text = data.decode("utf-8")
        value, end = scanner(text, 0)
        if end != len(text):
            raise ValueError("more than one JSON value")
        return value

    return (lambda message: "".join(encoder(message, 0)).encode()), decode


_encode, _decode = _json_codec()


def _send_fds(sock: _socket.socket, data: bytes, fds: list[int]) -> int:
    """Send ``data`` with ``fds`` beside it, as ``socket.send_fds``: how much of ``data`` went."""
    if not POSIX:
        raise FramingError("this system cannot pass file descriptors over a socket")
    return sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))])


def _receive_fds(sock: _socket.socket, size: int) -> tuple[bytes, list[int]]:
    """Up to ``size`` bytes and the descriptors sent beside them (at most ``MAX_FDS``), as ``socket.recv_fds``."""
    if not POSIX:
        raise FramingError("this system cannot pass file descriptors over a socket")
    data, ancillary, _flags, _address = sock.recvmsg(size, _socket.CMSG_LEN(MAX_FDS * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            whole = len(payload) // 4
            fds.extend(struct.unpack(f"{whole}i", payload[: whole * 4]))
    return data, fds


def read_exactly(sock: _socket.socket, n: int) -> bytes:
    """``n`` bytes from a blocking socket; ``FramingError`` when it closes first."""
    chunks = []
    while n > 0:
        chunk = sock.recv(min(n, 65536))
        if not chunk:
            raise FramingError("closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _close(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
