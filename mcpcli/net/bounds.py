"""The bounds every connection runs under (each configurable), and the one line that says which was reached.

``Bounds`` is read once per command from ``[limits]`` in ``config.toml`` with environment overrides; the
transports (``mcpcli.net.transports``) enforce it and, when one trips, record it on a ``Tripwire``. A limit that
trips fails the request it hit the way a broken connection would (the SDK then raises its own error), and
``connection.connect`` swaps that error for the tripwire's line, which names the size or the wait and the
setting that changes it. Pure: no ``mcp`` import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcpcli.errors import ConfigError, ServerError

if TYPE_CHECKING:
    from mcpcli.settings.config import Settings

MIB = 1024 * 1024

ENV = {
    "connect_timeout": "MCPCLI_CONNECT_TIMEOUT",
    "idle_timeout": "MCPCLI_IDLE_TIMEOUT",
    "max_message_mb": "MCPCLI_MAX_MESSAGE_MB",
}
"""The environment variable of each ``[limits]`` key (it wins over the file)."""


@dataclass(frozen=True)
class Bounds:
    """What one connection may cost: seconds to connect, seconds between messages, bytes in one message."""

    connect_timeout: float = 60.0
    idle_timeout: float = 300.0
    max_message_bytes: int = 64 * MIB

    @classmethod
    def from_settings(cls, settings: Settings | None = None, environ: Mapping[str, str] | None = None) -> Bounds:
        """``[limits]`` of the config, each overridden by its environment variable (a bad value: exit 2)."""
        env = os.environ if environ is None else environ
        limits = settings.limits if settings is not None else None
        values = {
            "connect_timeout": limits.connect_timeout if limits else cls.connect_timeout,
            "idle_timeout": limits.idle_timeout if limits else cls.idle_timeout,
            "max_message_mb": limits.max_message_mb if limits else cls.max_message_bytes / MIB,
        }
        for key, name in ENV.items():
            if (raw := env.get(name)) is None or not raw.strip():
                continue
            try:
                value = float(raw)
            except ValueError:
                value = -1.0
            if not value > 0 or value == float("inf"):
                raise ConfigError(f"{name}={raw!r} is not a positive number.", hint=f"Unset {name}, or set a number.")
            values[key] = value
        return cls(
            connect_timeout=values["connect_timeout"],
            idle_timeout=values["idle_timeout"],
            max_message_bytes=max(1, int(values["max_message_mb"] * MIB)),
        )


def size(n: float) -> str:
    """Bytes as a person reads them: ``512 B``, ``3.2 KiB``, ``100.0 MiB``."""
    if n < 1024:
        return f"{int(n)} B"
    if n < MIB:
        return f"{n / 1024:.1f} KiB"
    return f"{n / MIB:.1f} MiB"


class Tripwire:
    """Which bound one connection reached first (the transports set it; ``connect`` reads it)."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.error: ServerError | None = None
        self.http_status: str | None = None
        """The last HTTP error status the server answered with (``502 Bad Gateway``): the SDK says only "an error
        response", and a failure is worded with it."""

    def message_too_large(self, total: int | None = None) -> None:
        """A message of more than ``max_message_bytes`` (``total`` when the server announced its length)."""
        limit = self.bounds.max_message_bytes
        seen = size(total) if total is not None else f"more than {size(limit)}"
        self._trip(
            f"The server sent a message of {seen}, over the {size(limit)} limit; it was not read (nor more of it).",
            hint=f"Raise the limit with max_message_mb under [limits] in config.toml, or {ENV['max_message_mb']}=MB.",
        )

    def idle(self) -> None:
        """No message for ``idle_timeout`` seconds on a response that was still open."""
        self._trip(
            f"The server sent nothing for {self.bounds.idle_timeout:g} s while a response was open; gave up.",
            hint=f"Wait longer with idle_timeout under [limits] in config.toml, or {ENV['idle_timeout']}=SECONDS.",
        )

    def handshake(self) -> None:
        """The server did not finish starting and answering the handshake within ``connect_timeout``."""
        self._trip(
            f"The server did not answer the handshake within {self.bounds.connect_timeout:g} s.",
            hint=(
                f"Check it starts on its own (its log: mcpcli paths); wait longer with connect_timeout under [limits] "
                f"in config.toml, or {ENV['connect_timeout']}=SECONDS."
            ),
        )

    def _trip(self, message: str, *, hint: str) -> None:
        if self.error is None:  # the first bound reached is the one to tell
            self.error = ServerError(message, title="Limit reached", hint=hint)
