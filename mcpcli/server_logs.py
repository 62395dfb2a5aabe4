"""The server's own log messages (``notifications/message``), when the user opts in with ``--log-level``.

2026-07-28 makes delivery a per-request opt-in (``Client(log_level=…)`` stamps it in every request's
``_meta``); before that, a server that offers logging is asked once with ``logging/setLevel``. Either way
each message at or above the level is printed as one sanitized line; without ``--log-level``, none are.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from mcpcli.display import sanitize
from mcpcli.errors import UsageError

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""RFC 5424 severities, least severe first (MCP's ``LoggingLevel``)."""


def check_log_level(level: str | None) -> str | None:
    """``--log-level`` as given, lower-cased; a usage error (exit 2) names the levels when it is none of them."""
    if level is None:
        return None
    if level.lower() not in LOG_LEVELS:
        raise UsageError(f"Unknown log level {level!r}.", hint=f"Use one of: {', '.join(LOG_LEVELS)}")
    return level.lower()


def log_printer(level: str, say: Callable[[str], None]) -> Callable[[Any], Awaitable[None]]:
    """The SDK ``logging_callback``: each server log message at or above ``level`` as one sanitized line."""
    floor = LOG_LEVELS.index(level)

    async def on_log(params: Any) -> None:
        severity = str(params.level)
        if severity in LOG_LEVELS and LOG_LEVELS.index(severity) < floor:
            return  # the server sent more than was asked for
        data = params.data if isinstance(params.data, str) else json.dumps(params.data, ensure_ascii=False)
        who = f" {params.logger}:" if params.logger else ""
        say(sanitize(f"[server {severity}]{who} {data}").replace("\n", "\\n"))

    return on_log


async def opt_in_to_logs(client: Any, level: str) -> None:
    """Ask a handshake-era server for its logs (``logging/setLevel``), when it offers logging at all.

    On 2026-07-28 the opt-in is per request (``Client(log_level=…)`` stamps it in ``_meta``): nothing to send.
    """
    from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if client.protocol_version in MODERN_PROTOCOL_VERSIONS or client.server_capabilities.logging is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        with contextlib.suppress(MCPError):  # a server that refuses keeps logging as it did; the flow goes on
            await client.session.set_logging_level(level)
