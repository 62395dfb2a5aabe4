"""A command line builds only the command it runs (Typer converts every command's signature to build the whole
tree): the lean tree must parse, help and fail exactly as the whole one."""

from __future__ import annotations

import io
import re
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


# --- every help page reads as one product ----------------------------------------------------------------------------


def _tree(command: Any, path: tuple[str, ...] = ()) -> Any:
    """Every command and group under ``command`` that help lists (hidden ones are not shown), with its path."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            yield from _tree(sub, (*path, name))


WHOLE = typer.main.get_command(app)  # type: ignore[attr-defined]
PAGES = [path for path, _ in _tree(WHOLE)]


def _help(path: tuple[str, ...], columns: int, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, err = _run(typer.main.get_command(app), [*path, "--help"])
    assert code == 0 and not err, (path, err)
    return out


def _command(path: tuple[str, ...]) -> Any:
    found = WHOLE
    for name in path:
        found = found.commands[name]
    return found


def test_the_walk_sees_every_group_and_its_commands() -> None:
    assert {("call",), ("sessions", "import"), ("worker", "status"), ("auth", "login"), ("servers", "add")} <= set(
        PAGES
    )
    assert len(PAGES) > 40


@pytest.mark.parametrize("path", PAGES, ids=lambda p: " ".join(p) or "mcpcli")
def test_every_help_names_its_positionals_in_one_style_with_no_type_names(
    path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TOOL``, ``[ID]``, ``ID...``, ``[URI]...`` — never ``{tool}``, ``tool <str>`` or ``ID... <list[str]>``."""
    text = _help(path, 80, monkeypatch)
    usage = text.split("\n\n")[0].split()
    assert usage[:2] == ["Usage:", " ".join(("mcpcli", *path)).split()[0]]
    after = usage[usage.index("[OPTIONS]") + 1 :]
    for word in after:
        assert re.fullmatch(r"\[?[A-Z][A-Z_]*\]?(\.\.\.)?", word), (path, word)
    arguments = re.search(r"^Arguments:\n((?:  .*\n)+)", text, re.M)
    for line in arguments.group(1).splitlines() if arguments else []:
        if not line.startswith("   "):  # a name, not a wrapped help line
            assert re.fullmatch(r"[A-Z][A-Z_]*(\.\.\.)?", line.split()[0]), (path, line)
    assert not re.search(r"<[a-z_]+(\[[^\]]*\])?>|\{[a-z_]+\}", text), (path, text)
    params = _command(path).params
    ids = [
        p for p in params if p.param_type_name == "argument" and re.match(r"(Session id|Resume this session)", p.help)
    ]
    assert all(p.metavar == "ID" for p in ids), path  # a session's id is ID wherever a command takes one


@pytest.mark.parametrize("path", PAGES, ids=lambda p: " ".join(p) or "mcpcli")
def test_every_help_shows_an_example_command_line(path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    text = _help(path, 80, monkeypatch)
    assert re.search(r"(Examples?:|Try:)\s+mcpcli\b", text), text


@pytest.mark.parametrize("columns", [50, 60, 80, 120])
def test_no_help_line_ends_inside_a_word_at_any_width(columns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every word of every help text (choices such as ``emergency``, flags such as ``--accept-defaults``) shows
    whole: the wrap breaks between words only, never inside one nor at its hyphen."""
    for path in PAGES:
        command = _command(path)
        shown = set(_help(path, columns, monkeypatch).split())
        texts = [command.help or "", *(p.help or "" for p in command.params if not getattr(p, "hidden", False))]
        for text in texts:
            for word in text.split():
                if word != "\b":
                    assert word in shown, (columns, path, word)
