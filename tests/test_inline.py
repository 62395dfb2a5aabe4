"""Inline prompts, driven by scripted answers: no pseudo-terminal needed."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from mcpcli.errors import UserStopped
from mcpcli.forms import FieldSpec, parse_schema
from mcpcli.terminal.inline import FormOutcome, Terminal, ask_form


class Script:
    """Answers the prompts in order, like a user typing; Ctrl-D when it runs out."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[tuple[str, str]] = []  # (reader, prompt)

    def line(self, prompt: str) -> str:
        return self._next("line", prompt)

    def secret(self, prompt: str) -> str:
        return self._next("secret", prompt)

    def _next(self, reader: str, prompt: str) -> str:
        self.prompts.append((reader, prompt))
        if not self.answers:
            raise EOFError
        return self.answers.pop(0)


def fields_of(**properties: dict[str, Any]) -> list[FieldSpec]:
    required = [name for name, prop in properties.items() if prop.pop("required", False)]
    return parse_schema({"type": "object", "properties": properties, "required": required})


def run(
    fields: list[FieldSpec], *answers: str, message: str = "Fill this in", **options: Any
) -> tuple[FormOutcome, str, Script]:
    script = Script(*answers)
    console = Console(file=io.StringIO(), width=100)
    outcome = ask_form(Terminal(console, script.line, script.secret), message, fields, **options)
    return outcome, console.file.getvalue(), script  # type: ignore[attr-defined]


# -- one test per kind --------------------------------------------------------------------------------------------


def test_string_field_is_sent_verbatim() -> None:
    outcome, output, _ = run(fields_of(zip={"type": "string", "title": "Postcode", "required": True}), "012", "")
    assert outcome == FormOutcome("accept", {"zip": "012"})
    assert "Postcode" in output


def test_integer_field_shows_its_range_and_is_sent_as_an_integer() -> None:
    fields = fields_of(count={"type": "integer", "minimum": 1, "maximum": 10, "required": True})
    outcome, output, _ = run(fields, "7", "y")
    assert outcome.content == {"count": 7}
    assert "[integer 1–10]" in output


def test_number_field_accepts_a_decimal() -> None:
    outcome, _, _ = run(fields_of(ratio={"type": "number", "required": True}), "0.25", "")
    assert outcome.content == {"ratio": 0.25}


def test_boolean_field_takes_y_or_n() -> None:
    fields = fields_of(agree={"type": "boolean", "required": True}, notify={"type": "boolean", "required": True})
    outcome, output, _ = run(fields, "y", "N", "")
    assert outcome.content == {"agree": True, "notify": False}
    assert "[y/n]" in output


def test_select_lists_numbered_choices_and_accepts_a_number() -> None:
    zone = {"type": "string", "oneOf": [{"const": "eu-west", "title": "Europe (West)"}, {"const": "us", "title": "US"}]}
    outcome, output, _ = run(fields_of(zone=zone), "1", "")
    assert outcome.content == {"zone": "eu-west"}
    assert "1) Europe (West) (eu-west)" in output
    assert "2) US (us)" in output


@pytest.mark.parametrize("answer", ["us", "us (east)", "2"])
def test_select_accepts_a_value_a_title_or_a_number(answer: str) -> None:
    zone = {"type": "string", "oneOf": [{"const": "eu", "title": "EU"}, {"const": "us", "title": "US (East)"}]}
    outcome, _, _ = run(fields_of(zone=zone), answer, "")
    assert outcome.content == {"zone": "us"}


def test_select_with_numeric_values_is_answered_by_value_not_position() -> None:
    outcome, output, _ = run(fields_of(n={"type": "string", "enum": ["3", "2", "1"]}), "1", "")
    assert outcome.content == {"n": "1"}
    assert "- 3" in output and "1)" not in output


def test_multiselect_accepts_numbers_and_values_comma_separated() -> None:
    tags = {"type": "array", "items": {"type": "string", "enum": ["red", "green", "blue"]}, "maxItems": 2}
    outcome, output, _ = run(fields_of(tags=tags), "1, blue", "")
    assert outcome.content == {"tags": ["red", "blue"]}
    assert "3) blue" in output


def test_multiselect_accepts_a_json_array() -> None:
    tags = {"type": "array", "items": {"anyOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]}}
    outcome, _, _ = run(fields_of(tags=tags), '["b", "a"]', "")
    assert outcome.content == {"tags": ["b", "a"]}


def test_date_field_shows_its_format() -> None:
    outcome, output, _ = run(fields_of(day={"type": "string", "format": "date"}), "2026-07-28", "")
    assert outcome.content == {"day": "2026-07-28"}
    assert "YYYY-MM-DD" in output


# -- defaults, re-asking, presets ---------------------------------------------------------------------------------


def test_empty_input_keeps_the_default_which_is_shown_in_the_prompt() -> None:
    fields = fields_of(size={"type": "string", "enum": ["s", "m"], "default": "m"}, n={"type": "integer", "default": 3})
    outcome, _, script = run(fields, "", "", "")
    assert outcome.content == {"size": "m", "n": 3}
    assert script.prompts[0] == ("line", "[m] › ")
    assert script.prompts[1] == ("line", "[3] › ")


def test_empty_input_omits_an_optional_field_without_default() -> None:
    outcome, _, _ = run(fields_of(note={"type": "string"}, n={"type": "integer", "required": True}), "", "1", "")
    assert outcome.content == {"n": 1}


def test_empty_input_for_a_required_field_is_asked_again() -> None:
    outcome, output, _ = run(fields_of(name={"type": "string", "required": True}), "", "Ada", "")
    assert outcome.content == {"name": "Ada"}
    assert "name: is required" in output


def test_invalid_input_shows_the_error_and_asks_the_same_field_again() -> None:
    fields = fields_of(count={"type": "integer", "minimum": 1, "maximum": 10}, other={"type": "string"})
    outcome, output, script = run(fields, "11", "abc", "4", "x", "")
    assert outcome.content == {"count": 4, "other": "x"}
    assert output.count("count: must be an integer between 1 and 10") == 2
    assert len(script.prompts) == 5


def test_preset_fields_are_not_asked_but_are_sent() -> None:
    fields = fields_of(a={"type": "string", "required": True}, b={"type": "integer", "required": True})
    outcome, _, script = run(fields, "5", "", preset={"a": "given"})
    assert outcome.content == {"a": "given", "b": 5}
    assert len(script.prompts) == 2  # b, then the confirmation


def test_summary_shows_labels_before_sending() -> None:
    zone = {"type": "string", "title": "Zone", "oneOf": [{"const": "eu-west", "title": "Europe (West)"}]}
    _, output, script = run(fields_of(zone=zone), "1", "")
    assert "Send: Zone=Europe (West)" in output
    assert script.prompts[-1] == ("line", "Send? [Y/n/decline/cancel] ")


def test_no_at_the_confirmation_starts_over_with_the_entered_values_as_defaults() -> None:
    fields = fields_of(a={"type": "string", "required": True}, b={"type": "integer", "required": True})
    outcome, _, script = run(fields, "first", "1", "n", "", "2", "y")
    assert outcome == FormOutcome("accept", {"a": "first", "b": 2})
    assert [prompt for _, prompt in script.prompts[3:5]] == ["[first] › ", "[1] › "]


def test_an_unclear_confirmation_is_asked_again() -> None:
    outcome, output, _ = run(fields_of(a={"type": "string"}), "x", "maybe", "yes")
    assert outcome.action == "accept"
    assert "Answer y, n, decline or cancel." in output


# -- decline, cancel, quit ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("answers", "action"), [((":decline",), "decline"), (("a", ":CANCEL"), "cancel")])
def test_decline_and_cancel_work_at_any_field_prompt(answers: tuple[str, ...], action: str) -> None:
    outcome, _, _ = run(fields_of(a={"type": "string"}, b={"type": "string"}), *answers)
    assert outcome == FormOutcome(action, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("answer", "action"), [("decline", "decline"), ("cancel", "cancel"), (":decline", "decline")])
def test_decline_and_cancel_work_at_the_confirmation(answer: str, action: str) -> None:
    outcome, _, _ = run(fields_of(a={"type": "string"}), "x", answer)
    assert outcome == FormOutcome(action, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("answers", [(), ("x",), (":quit",), ("x", "quit")])
def test_ctrl_d_or_quit_stops_with_user_stopped(answers: tuple[str, ...]) -> None:
    with pytest.raises(UserStopped, match=r"Stopped at the prompt; the session is kept\.") as stopped:
        run(fields_of(a={"type": "string"}), *answers)
    assert stopped.value.hint is None
    assert stopped.value.exit_code == 5


# -- safety -------------------------------------------------------------------------------------------------------


def test_secret_fields_use_the_masked_reader_and_never_reach_the_console() -> None:
    fields = fields_of(user={"type": "string"}, password={"type": "string", "required": True})
    outcome, output, script = run(fields, "ada", "hunter2", "")
    assert outcome.content == {"user": "ada", "password": "hunter2"}
    assert [reader for reader, _ in script.prompts] == ["line", "secret", "line"]
    assert "hunter2" not in output
    assert "password=••••••" in output


def test_a_secret_default_is_masked_in_the_prompt() -> None:
    fields = fields_of(api_key={"type": "string", "default": "sk-123"})
    outcome, output, script = run(fields, "", "")
    assert outcome.content == {"api_key": "sk-123"}
    assert script.prompts[0] == ("secret", "[••••••] › ")
    assert "sk-123" not in output


def test_server_text_is_escaped_and_never_markup() -> None:
    fields = fields_of(
        x={"type": "string", "title": "[bold]T[/bold]\x1b[2J", "description": "\u202edesc", "enum": ["\x9bv"]}
    )
    _, output, script = run(fields, "1", "", message="Hi \x1b[31mred\x1b[0m [bold]x[/bold]", server_label="\x1b]8;;u")
    assert "Hi \\x1b[31mred\\x1b[0m [bold]x[/bold]" in output
    assert "[bold]T[/bold]\\x1b[2J" in output
    assert "\\u202edesc" in output
    assert "1) \\x9bv" in output
    assert "\\x1b]8;;u asks:" in output
    assert all(ch not in output for ch in "\x1b\x9b\u202e")
    assert "\x9b" not in "".join(prompt for _, prompt in script.prompts)


def test_the_help_line_is_shown_first() -> None:
    _, output, _ = run(fields_of(a={"type": "string"}), "x", "", message="Hello")
    assert output.splitlines()[:2] == ["Hello", "(:decline, :cancel, :quit at any prompt; Enter keeps the default)"]


def test_the_prompt_modules_import_neither_the_sdk_nor_textual() -> None:
    code = (
        "import sys, mcpcli.terminal.inline; print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'textual'}))"
    )
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert result.stdout.strip() == "[]"
