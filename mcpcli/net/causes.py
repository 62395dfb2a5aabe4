"""The socket error beneath a transport's failure — refused, unresolved, a TLS handshake or certificate — found
through the layers that wrap it (httpx2 wraps httpcore's error, which wraps the socket's), and carried across the
worker's HTTP relay as JSON so that the command words it as if it had met it itself (``net.failures``).
"""

from __future__ import annotations

import socket
import ssl
from typing import Any, TypeVar

E = TypeVar("E", bound=BaseException)

SOCKET_CAUSES: dict[str, type[OSError]] = {
    cls.__name__: cls for cls in (ssl.SSLCertVerificationError, ssl.SSLError, socket.gaierror, ConnectionRefusedError)
}
"""The errors beneath a transport's failure that ``http_failure`` words (most specific first): the worker's HTTP relay
carries the one it met back to the command (``net.relayed``), where it is raised again as the cause."""


def socket_cause(exc: BaseException) -> dict[str, Any] | None:
    """The socket error beneath ``exc`` that ``http_failure`` words, as JSON (``rebuilt_cause`` makes it again)."""
    for cls in SOCKET_CAUSES.values():
        if (cause := found(exc, cls)) is not None:
            said: dict[str, Any] = {"class": cls.__name__, "errno": cause.errno, "text": cause.strerror or str(cause)}
            said |= {"reason": getattr(cause, "reason", None), "verify": getattr(cause, "verify_message", None)}
            return said
    return None


def rebuilt_cause(said: Any) -> OSError | None:
    """The socket error ``socket_cause`` described (None for anything else: a frame is input from another process)."""
    if not isinstance(said, dict) or (cls := SOCKET_CAUSES.get(str(said.get("class")))) is None:
        return None
    errno = said.get("errno") if isinstance(said.get("errno"), int) else None
    cause = cls(errno, str(said.get("text") or ""))
    if isinstance(cause, ssl.SSLError):
        cause.reason = str(said.get("reason") or "")
        if isinstance(cause, ssl.SSLCertVerificationError):
            cause.verify_message = str(said.get("verify") or "")
    return cause


def found(exc: BaseException, kind: type[E]) -> E | None:
    """The first ``kind`` in ``exc``'s causes (httpx2 wraps httpcore's error, which wraps the socket's)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 64:
        one = todo.pop(0)
        if id(one) in seen:
            continue
        seen.add(id(one))
        if isinstance(one, kind):
            return one
        if isinstance(one, BaseExceptionGroup):
            todo.extend(one.exceptions)
        todo.extend(e for e in (one.__cause__, one.__context__) if e is not None)
        todo.extend(arg for arg in one.args if isinstance(arg, BaseException))
    return None
