"""The environment a stdio server starts with, whether this command starts it or the worker keeps it alive.

- A command line (``-s "python server.py"``, ``MCPCLI_SERVER``, a stored session's once trusted) runs as a shell
  would run it: with the caller's whole environment, so ``FOO=bar mcpcli -s "python server.py" …`` gives the
  server ``FOO``.
- A server named in the config files runs as desktop hosts run the same ``mcp.json`` entry: with the SDK's safe
  defaults (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``; their Windows equivalents there) and
  the entry's ``env`` over them. Nothing else of the caller's reaches it: that is what ``env`` is for.

mcpcli's own plumbing (the worker's socket and HTTP relay, set only inside the worker) is never passed on, so a
server sees the same environment cold and warm. Which kept-alive server a command gets is keyed by this
environment, less ``UNSHARED``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpcli.settings.targets import Target

PLUMBING = ("MCPCLI_WORKER_SOCKET", "MCPCLI_RELAY_SOCKET")
"""Set by the worker in the commands it runs (``worker.child``): where to reach it, nothing a server may use."""

UNSHARED = frozenset({"_", "OLDPWD", "PWD", "SHLVL", "COLUMNS", "LINES"})
"""Variables two shells running the same command differ in and no server's behaviour hangs on (its directory is
keyed on its own): two commands whose servers' environments differ only in these share one kept-alive server,
which keeps the first one's."""


def server_environment(target: Target) -> dict[str, str]:
    """The whole environment ``target``'s process starts with (the module's docstring says which)."""
    if target.source == "name":
        from mcp.client.stdio import get_default_environment

        return get_default_environment() | target.env
    return {name: value for name, value in os.environ.items() if name not in PLUMBING} | target.env


def sharing_key(env: dict[str, str]) -> dict[str, str]:
    """The part of a server's environment that tells two kept-alive servers apart (sorted, for a stable key)."""
    return {name: env[name] for name in sorted(env) if name not in UNSHARED}
