"""The ``mcpcli`` executable: the warm path first, the command line itself only when the worker cannot serve.

Importing this is nearly free; ``mcpcli.cli`` (Typer, Rich) is imported only for a command that runs here.
"""

from __future__ import annotations

import sys

from mcpcli import SERVER_COMMANDS

NO_WORKER = "--no-worker"


def _names_a_server_command(argv: list[str]) -> bool:
    """A cheap first look (``--help``, ``sessions list``… never import the worker client)."""
    return any(word in SERVER_COMMANDS for word in argv)


def main() -> None:
    argv = sys.argv[1:]
    if NO_WORKER in argv:
        # Anywhere on the line: run in this process. Typer never sees it.
        sys.argv = [sys.argv[0], *(word for word in argv if word != NO_WORKER)]
    elif _names_a_server_command(argv):
        from mcpcli.warm import delegate, wanted

        if wanted(argv) and (code := delegate(argv)) is not None:
            sys.exit(code)
    from mcpcli.cli import main as run_here

    run_here()
