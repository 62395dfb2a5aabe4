"""The server's own log messages (``notifications/message``), when the user opts in with ``--log-level``.

2026-07-28 makes delivery a per-request opt-in (``Client(log_level=…)`` stamps it in every request's
``_meta``); before that, a server that offers logging is asked once with ``logging/setLevel``. Either way
each message at or above the level is printed as one sanitized line; without ``--log-level``, none are.
Asking for the logs is the connection's (``connection.opt_in_to_logs``); printing them is this module's.
"""

from __future__ import annotations

import json
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
