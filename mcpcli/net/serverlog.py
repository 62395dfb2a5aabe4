"""A stdio server's stderr: appended to a private log file (``servers.log``), and the few lines of its end that
explain a failed start (its last lines and the error line, without the stack frames)."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

from mcpcli.settings.config import Paths, private_dir
from mcpcli.settings.targets import Target

STDERR_TAIL_LINES = 8
STDERR_TAIL_BYTES = 64 * 1024
"""How much of the end of a failed server's output is read to find what it said."""
_FRAME = re.compile(r"\s+at\s")
"""A JavaScript stack frame."""
_ERROR_LINE = re.compile(r"\s*(\w+(Error|Exception)\b|error\b|fatal\b)", re.IGNORECASE)


class ServerLog:
    """A stdio server's stderr, appended to a private log file; its tail explains a failed start."""

    def __init__(self, paths: Paths, target: Target) -> None:
        self.path = paths.log_dir / "servers.log"
        try:
            private_dir(paths.log_dir)
            self.file = open(self.path, "a", encoding="utf-8", errors="replace", opener=_private_opener)  # noqa: SIM115
        except OSError:  # a read-only home: the server's stderr goes nowhere (mcpcli already warned about logs)
            self.path = Path(os.devnull)
            self.file = self.path.open("w", encoding="utf-8")
        self.file.write(f"--- {datetime.now(UTC).isoformat()} {target.label}\n")
        self.file.flush()
        self.start = self.file.tell()

    def tail(self) -> str:
        if not self.file.closed:
            self.file.flush()
        if str(self.path) == os.devnull:
            return ""
        with self.path.open("rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(self.start, end - STDERR_TAIL_BYTES))  # a server may have written megabytes: only the end
            text = f.read().decode("utf-8", errors="replace")
        return failure_lines(text)


def failure_lines(text: str) -> str:
    """What a server that failed to start said, in a few lines: its last ones — stack frames left out (Node's
    ``at …`` lines push the error itself out of view) — and the error line itself when it comes before them."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip() and not _FRAME.match(line)]
    tail = lines[-STDERR_TAIL_LINES:]
    errors = [line for line in lines[: len(lines) - len(tail)] if _ERROR_LINE.match(line)]
    return "\n".join([*errors[-1:], *tail])


def _private_opener(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)
