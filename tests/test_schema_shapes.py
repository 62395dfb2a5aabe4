"""One table of property schemas as each SDK writes them (tests/shapes.py), read the same way by every front end:
``mcpcli tools``, ``--arg`` typing, the inline prompts and the app's form (its snapshot under snapshots/)."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from shapes import CASES, Case, schema
from textual.pilot import Pilot
from textual.widgets import Button
from tuikit import SIZE, make_app, pick, screen_of, until

from mcpcli.commands.discovery import _args_summary
from mcpcli.engine.arguments import build_arguments
from mcpcli.forms import SchemaError, parse_schema, parse_schema_lenient
from mcpcli.terminal.inline import Terminal, ask_form
from mcpcli.tui.start import StartScreen

SHAPES = Path(__file__).with_name("shapes.py")
ids = [case.name for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_tools_lists_each_shape_as_people_write_types(case: Case) -> None:
    assert _args_summary(schema(case)) == case.listed, case.sdk


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_an_arg_is_typed_by_each_shape(case: Case) -> None:
    assert build_arguments(schema(case), [f"{case.name}={case.raw}"]) == {case.name: case.value}, case.sdk


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_an_inline_prompt_asks_each_shape_a_form_can_hold(case: Case) -> None:
    if case.field is None:
        with pytest.raises(SchemaError):
            parse_schema(schema(case))
        fields, unsupported = parse_schema_lenient(schema(case))
        assert not fields and [u.name for u in unsupported] == [case.name]
        return
    fields = parse_schema(schema(case))
    assert [(f.name, f.kind) for f in fields] == [(case.name, case.field)], case.sdk
    answers = [case.raw, ""]
    console = Console(file=io.StringIO(), width=100)
    outcome = ask_form(Terminal(console, lambda _p: answers.pop(0), lambda _p: answers.pop(0)), "Fill in", fields)
    # A field of a union that takes any text is a text field: what is typed is sent as typed.
    expected = case.raw if case.field == "string" else case.value
    assert outcome.content == {case.name: expected}, case.sdk


def test_titles_of_an_enum_are_the_choices_labels_whatever_the_spelling() -> None:
    by_name = {case.name: case for case in CASES}
    for name, labels in (("level", ["Low", "High"]), ("size", ["Small", "Medium"]), ("color", ["red", "green"])):
        (field,) = parse_schema(schema(by_name[name]))
        assert [c.label for c in field.choices] == labels
        assert field.title == name  # a $ref's target titles the enum class, not the property


def _config(home: Path) -> str:
    from mcpcli.settings.config import private_dir

    private_dir(home)
    entry = f"[mcpServers.shapes]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps([str(SHAPES)])}\n"
    (home / "config.toml").write_text(entry, encoding="utf-8")
    return "shapes"


def test_a_server_listing_every_shape_is_listed_and_called_as_typed(process: Any, home: Path) -> None:
    target = _config(home)
    listed = process("-s", target, "tools", env={"COLUMNS": "400"})
    assert listed.code == 0, listed.err
    for case in CASES:  # the tool ``shapes`` takes each of them as optional
        assert (case.listed.replace(": ", "?: ", 1) if case.required else case.listed) in listed.out
    assert "['string', 'null']" not in listed.out
    pairs = [arg for case in CASES for arg in ("-a", f"{case.name}={case.raw}")]
    called = process("-s", target, "call", "shapes", *pairs)
    assert called.code == 0, called.err
    assert json.loads(called.out) == {case.name: case.value for case in CASES}


def test_the_app_form_for_unions_nulls_and_enums(snap_compare: Any, home: Path) -> None:
    _config(Path(os.environ["MCPCLI_HOME"]))
    app = make_app(server="shapes")

    async def run_before(pilot: Pilot[Any]) -> None:
        start = await screen_of(pilot, StartScreen)
        await until(pilot, lambda: bool(start.entries), "the catalog")
        await pick(pilot, start, "union")
        await pilot.press("enter", *"012")
        await until(pilot, lambda: not start.query_one("#run", Button).disabled, "the form")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
