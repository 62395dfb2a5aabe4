"""The command reference, written from the command tree itself: ``python -m mcpcli.cli.reference > docs/reference.md``.

Each command and group that ``--help`` lists gets a heading and its help page as ``--help`` prints it, at a fixed
width and without colour, so the file is the same on every machine and changes only when a command does
(tests/test_docs.py regenerates it and fails when the committed one is stale). Only this module's own entry imports
it: building the whole tree is what ``mcpcli --help`` does anyway, but nothing else needs it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import typer

WIDTH = 100
"""The terminal width the help pages are wrapped at: one width, whatever the terminal that runs the generator."""

REFRESH = "python -m mcpcli.cli.reference > docs/reference.md"
"""The command that writes the reference again (the stale-reference test names it)."""

HEADER = f"""# Command reference

Every command of `mcpcli`, as its `--help` prints it. This page is generated from the command line itself; do not
edit it by hand — after changing a command, run `{REFRESH}`.
"""


def _walk(context: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command and group under ``context``'s command that help lists (hidden ones are left out), in the order
    help lists them, each with its own Click context (so its usage line names its whole path)."""
    yield path, context
    command = context.command
    for name in command.list_commands(context) if hasattr(command, "list_commands") else []:
        sub = command.get_command(context, name)
        if sub is None or sub.hidden:
            continue
        child = sub.make_context(name, [], parent=context, resilient_parsing=True, terminal_width=WIDTH)
        yield from _walk(child, (*path, name))


def reference() -> str:
    """The whole reference as Markdown: a contents list, then one section per command with its help page."""
    from mcpcli.cli import app

    root = typer.main.get_command(app)
    context = root.make_context(
        "mcpcli", [], resilient_parsing=True, terminal_width=WIDTH, max_content_width=WIDTH, color=False
    )
    pages = list(_walk(context))
    lines = [HEADER, "## Contents", ""]
    for path, _ in pages:
        title = " ".join(("mcpcli", *path))
        lines.append(f"{'  ' * max(len(path) - 1, 0)}- [`{title}`](#{_anchor(title)})")
    for path, sub in pages:
        title = " ".join(("mcpcli", *path))
        help_text = "\n".join(line.rstrip() for line in sub.command.get_help(sub).splitlines())
        lines += ["", f"## {title}", "", "```text", help_text.strip("\n"), "```"]
    return "\n".join(lines) + "\n"


def _anchor(title: str) -> str:
    """The anchor GitHub gives the heading ``## TITLE`` (lower case, spaces to dashes, punctuation dropped)."""
    return "".join(c for c in title.lower().replace(" ", "-") if c.isalnum() or c in "-_")


def main() -> None:
    """Print the reference on stdout."""
    sys.stdout.write(reference())


if __name__ == "__main__":
    main()
