"""The ``mcpcli`` executable: the warm path first, the command line itself only when the worker cannot serve.

Importing this is nearly free; ``mcpcli.cli`` (Typer, Rich) is imported only for a command that runs here. One
command is read here before Typer: a plain ``sessions list`` (``quick_listing``), which Typer would cost more than
the listing itself (it checks every option through pydantic).
"""

from __future__ import annotations

import sys

from mcpcli import SERVER_COMMANDS, hold_collector

TYPE_CHECKING = False  # not typing's: importing typing costs the warm path ~4 ms (mypy reads the name alone)
if TYPE_CHECKING:
    from typing import NoReturn

NO_WORKER = "--no-worker"


def _names_a_server_command(argv: list[str]) -> bool:
    """A cheap first look (``--help``, ``sessions list``… never import the worker client)."""
    return any(word in SERVER_COMMANDS for word in argv)


def main() -> None:
    """The executable: a server command goes to the warm worker when one serves (its exit code is this process's),
    else the command line runs here; a plain sessions list skips Typer."""
    argv = sys.argv[1:]
    if _names_a_server_command(argv):
        hold_collector()  # no collection while the SDK imports, until its connection is up (a front end
        # that hands the command to the worker allocates next to nothing meanwhile)
    if NO_WORKER in argv:
        # Anywhere on the line: run in this process. Typer never sees it.
        sys.argv = [sys.argv[0], *(word for word in argv if word != NO_WORKER)]
    elif _names_a_server_command(argv):
        from mcpcli.warm import delegate, wanted

        if wanted(argv) and (code := delegate(argv)) is not None:
            leave(code)
    try:
        code = quick_listing(sys.argv[1:])
    except KeyboardInterrupt:  # as the command line says it (cli.app.main)
        sys.stderr.write("\nInterrupted.\n")
        sys.exit(130)
    if code is not None:
        sys.exit(code)
    from mcpcli.cli import main as run_here

    run_here()


def leave(code: int) -> NoReturn:
    """Exit with the worker's status at once: this process imported a few C modules and wrote at most a line, so
    the interpreter's teardown (~1-2 ms of a warm command) has nothing to do that the kernel does not."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 — contextlib is not imported on this path
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it anyway
            pass
    os._exit(code & 0xFF)


_GLOBAL_FLAGS = frozenset({"--json", "--debug", "-v", "--verbose"})
_GLOBAL_VALUES = frozenset({"-s", "--server", "--store"})
_LIST_FLAGS = _GLOBAL_FLAGS | {"--waiting"}
_LIST_VALUES = _GLOBAL_VALUES | {"--status", "--limit"}


def quick_listing(argv: list[str]) -> int | None:
    """``sessions list`` run without Typer, when ``argv`` holds nothing but its plain options (and the globals it
    uses): its exit code. ``None`` for anything else — ``--help``, another option, a value Typer would refuse or
    read differently — and for a listing ``commands.listing`` leaves to the full path; Typer then runs the command
    line as always (tests/test_sessions_list.py checks that both read the same options alike)."""
    words = iter(argv)
    values: dict[str, str] = {}
    flags: set[str] = set()
    where = "global"
    for word in words:
        if where != "list" and word == ("sessions" if where == "global" else "list"):
            where = "sessions" if where == "global" else "list"
            continue
        if where == "sessions":
            return None
        name, eq, given = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in (_LIST_VALUES if where == "list" else _GLOBAL_VALUES):
            value = given if eq else next(words, "")
            if not value or value.startswith("-"):
                return None
            values["server" if name == "-s" else name.lstrip("-")] = value  # the later one wins, as in Typer
        elif word in (_LIST_FLAGS if where == "list" else _GLOBAL_FLAGS):
            flags.add(word)
        else:
            return None
    limit = values.get("limit", "50")
    if where != "list" or not (limit.isascii() and limit.isdigit() and int(limit) >= 1):
        return None
    from mcpcli.commands.listing import quick_list
    from mcpcli.commands.runtime import Globals
    from mcpcli.terminal.output import lenient_stdout

    lenient_stdout()
    g = Globals(store=values.get("store"), debug="--debug" in flags, json="--json" in flags)
    return quick_list(
        g, values.get("status"), int(limit), server=values.get("server"), waiting="--waiting" in flags, json_out=g.json
    )
