"""A command line builds only the command it runs (Typer converts every command's signature to build the whole
tree): the lean tree must parse, help and fail exactly as the whole one."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest
import typer

from mcpcli.cli import app
from mcpcli.cli.app import command_for


def test_a_plain_command_line_builds_its_command_only() -> None:
    assert list(command_for(["call", "echo", "-a", "text=hi"]).commands) == ["call"]
    assert list(command_for(["-s", "demo", "--json", "tools"]).commands) == ["tools"]
    whole = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert {"call", "sessions", "worker", "batch"} <= whole
    for argv in (["--help"], ["call", "-h"], ["sessions", "list"], ["--version"], ["nosuch"], []):
        assert set(command_for(argv).commands) == whole, argv


def _run(command: Any, argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            command.main(args=argv, prog_name="mcpcli")
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "--bogus"],
        ["call"],
        ["call", "x", "--max-rounds", "many"],
        ["--bogus", "call", "x"],
        ["-s", "http://127.0.0.1:9/mcp", "call"],
        ["tools", "--protocol"],
        ["prompt", "--answer"],
        ["read", "a", "b"],
    ],
)
def test_the_lean_tree_refuses_what_the_whole_one_refuses_in_the_same_words(argv: list[str]) -> None:
    lean, whole = _run(command_for(argv), argv), _run(typer.main.get_command(app), argv)
    assert lean == whole
    assert lean[0] == 2
