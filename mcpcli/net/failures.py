"""Why a connection could not start, in words a person can act on: the one place a failed start is worded.

A transport says "All connection attempts failed" or "Server returned an error response"; the user needs what is
wrong — nothing listening on HOST:PORT, a host name that does not resolve, a TLS handshake or certificate that
failed, a web server that is not an MCP endpoint — and a hint that leads somewhere (never a command that would fail
the same way). What is not recognised keeps the transport's own words.
"""

from __future__ import annotations

import os
import socket
import ssl
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mcp.shared.exceptions import MCPError

from mcpcli.errors import McpcliError, ServerError
from mcpcli.net.causes import found

if TYPE_CHECKING:
    from mcpcli.auth import Credentials
    from mcpcli.net.serverlog import ServerLog
    from mcpcli.settings.targets import Target

NOT_AN_ENDPOINT = frozenset({"404", "405", "501"})
"""HTTP statuses a web server gives a POST to a path where no MCP server answers (a static file server: 501)."""
DEBUG_HINT = "Run it again with --debug to see the whole error."


def start_failure(target: Target, log: ServerLog | None, why: str, hint: str | None = None) -> ServerError:
    """The error of a start that failed because of ``why`` (a stdio server's last output appended)."""
    where = f"server {target.label!r}"
    hint = hint or DEBUG_HINT
    if target.kind == "http" and target.url is not None:
        from mcpcli.net.proxies import used_for

        if proxy := used_for(target.url, os.environ):
            where = f"{where} through the proxy {proxy}"
            hint = f"{hint} (Or the proxy: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY; NO_PROXY to go direct.)"
    if log is not None:
        if tail := log.tail():
            why = f"{why}\n{tail}"
        hint = f"The server's output is in {log.path}"
    return ServerError(f"Cannot connect to {where}: {why}", title="Connection failed", hint=hint)


def connect_failure(
    target: Target, log: ServerLog | None, creds: Credentials, exc: Exception, status: str | None = None
) -> McpcliError:
    """One line for a failed start: a sign-in that could not happen, a refused token, what is wrong with an HTTP
    target, or what the transport said (with the HTTP ``status`` the server answered, when the SDK leaves it out)."""
    if target.kind == "http":
        from mcpcli.auth.login import sign_in_error

        if (failure := sign_in_error(target.label, exc) or creds.refusal(target.label)) is not None:
            return failure
        assert target.url is not None
        if (found := http_failure(target.url, exc, status)) is not None:
            return start_failure(target, log, *found)
    if isinstance(exc, OSError):
        return start_failure(target, log, exc.strerror or str(exc))
    why = describe(exc)
    code, _, reason = (status or "").partition(" ")
    if code and code not in why:
        why = f"{why.rstrip('.')} (HTTP {code if reason and reason in why else status})"
    return start_failure(target, log, why)


def http_failure(url: str, exc: BaseException, status: str | None) -> tuple[str, str] | None:
    """What is wrong with an HTTP target and where to look, as (why, hint); None when the failure is none of
    the kinds named here. With a proxy, the socket errors are the proxy's (``start_failure`` names it)."""
    from mcpcli.net.proxies import used_for

    parts = urlsplit(url)
    proxy = used_for(url, os.environ)
    at = urlsplit(proxy) if proxy else parts
    host = at.hostname or "?"
    try:
        port = at.port or (443 if at.scheme == "https" else 80)
    except ValueError:
        port = 443 if at.scheme == "https" else 80
    where = f"{host}:{port}"
    if found(exc, ConnectionRefusedError) is not None:
        return f"nothing is listening on {where}.", "Start the server, or check the host and port in the URL."
    if (dns := found(exc, socket.gaierror)) is not None:
        return (
            f"the host name {host} does not resolve ({dns.strerror or dns}).",
            "Check the host name in the URL (a typo, or a name only a VPN or /etc/hosts knows).",
        )
    if (cert := found(exc, ssl.SSLCertVerificationError)) is not None:
        return (
            f"the TLS certificate of {where} is not trusted ({cert.verify_message or cert.reason or cert}).",
            "If it is signed by your own CA, trust that: SSL_CERT_FILE=ca.pem (or SSL_CERT_DIR=DIR).",
        )
    if (tls := found(exc, ssl.SSLError)) is not None:
        if tls.reason == "WRONG_VERSION_NUMBER":  # a TLS hello answered in plain HTTP
            plain = parts._replace(scheme="http").geturl()
            return f"the TLS handshake with {where} failed: it does not speak TLS.", f"If it is plain HTTP: -s {plain}"
        return (
            f"the TLS handshake with {where} failed ({tls.reason or tls}).",
            "Check that this port serves HTTPS, and the server's TLS settings.",
        )
    code = (status or "").partition(" ")[0]
    if code in NOT_AN_ENDPOINT and isinstance(_inner(exc), MCPError):
        path = parts.path or "/"
        why = (
            f"the web server there answered the MCP request (a POST to {path}) with HTTP {status}: not an MCP endpoint."
        )
        if path.rstrip("/") == "/mcp":
            return why, "Check the port: this is another web server, not the MCP server."
        return (
            why,
            f"Check the URL's path: MCP servers usually answer at /mcp (-s {parts._replace(path='/mcp').geturl()}).",
        )
    if code.startswith("5") and isinstance(_inner(exc), MCPError):
        return (
            f"the server failed on its side (HTTP {status}).",
            "Its own logs say why (or a proxy's in front of it); try again when it is back.",
        )
    return None


def describe(exc: BaseException) -> str:
    """The innermost meaningful message of a (possibly grouped) transport failure."""
    exc = _inner(exc)
    if isinstance(exc, MCPError):
        return exc.message
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0]


def _inner(exc: BaseException) -> BaseException:
    """The first exception at the bottom of ``exc``'s groups, even a group of several (unlike ``errors.lone``):
    what a failed connection is worded by, whichever of its tasks failed first."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
