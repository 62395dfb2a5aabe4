"""The command line: parse → build objects → ``anyio.run`` one core coroutine → render → exit code.

No protocol logic lives here. Heavy modules (``mcp``, the flow, the demo server) are imported inside the
commands that need them, so ``--help``, ``--version`` and ``sessions list`` start fast (a test checks
``sys.modules``). ``app`` holds the global options and the groups; each module adds its commands to it.
"""

from mcpcli.cli import (  # noqa: F401  — importing them registers their commands
    accounts,
    batch,
    flows,
    inbox,
    recordings,
    servers,
    sessions,
    watch,
    worker,
)
from mcpcli.cli.app import app, main

__all__ = ["app", "main"]
