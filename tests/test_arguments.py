"""Tool arguments from ``--arg``/``--args``, typed and checked by the tool's ``inputSchema`` before anything is sent."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, stdio_server

from mcpcli.engine.arguments import build_arguments, typed_value, usable_schema
from mcpcli.errors import ExitCode, UsageError

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "force": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "meta": {"type": "object"},
    },
    "required": ["name"],
}


def build(*pairs: str, args: str | None = None, stdin: str = "", schema: Any = SCHEMA) -> dict[str, Any]:
    return build_arguments(schema, list(pairs), args, read_stdin=lambda: stdin)


# --- typing by the schema --------------------------------------------------------------------------------------------


def test_a_string_property_keeps_leading_zeros_and_json_looking_text() -> None:
    assert build("name=012") == {"name": "012"}
    assert build("name=true") == {"name": "true"}
    assert build('name={"a": 1}') == {"name": '{"a": 1}'}
    assert build("name=") == {"name": ""}


def test_a_value_may_contain_equals_signs() -> None:
    assert build("name=a=b=c") == {"name": "a=b=c"}


@pytest.mark.parametrize(
    ("pair", "expected"),
    [
        ("count=3", 3),
        ("count=-7", -7),
        ("ratio=1.5", 1.5),
        ("ratio=2", 2),
        ("ratio=1e3", 1000.0),
        ("tags=[]", []),
        ('tags=["a", "b"]', ["a", "b"]),
        ('meta={"k": [1, 2]}', {"k": [1, 2]}),
    ],
)
def test_numbers_arrays_and_objects_are_parsed_as_the_schema_says(pair: str, expected: Any) -> None:
    key = pair.partition("=")[0]
    value = build("name=x", pair)[key]
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("false", False), ("yes", True), ("no", False), ("1", True), ("0", False), ("TRUE", True)],
)
def test_booleans_accept_true_false_yes_no_1_0(raw: str, expected: bool) -> None:
    assert build("name=x", f"force={raw}")["force"] is expected


@pytest.mark.parametrize(
    ("pair", "kind"),
    [
        ("count=two", "integer"),
        ("count=1.5", "integer"),
        ("count=true", "integer"),
        ("ratio=lots", "number"),
        ("force=maybe", "boolean"),
        ("tags=a,b", "array"),
        ('tags={"a": 1}', "array"),
        ("meta=[1]", "object"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_usage_error_naming_the_argument(pair: str, kind: str) -> None:
    key, _, raw = pair.partition("=")
    with pytest.raises(UsageError) as info:
        build("name=x", pair)
    assert f"--arg {key}" in info.value.message
    assert repr(raw) in info.value.message
    assert kind in info.value.message
    assert info.value.exit_code == ExitCode.USAGE


def test_key_at_file_reads_the_value_from_the_file_then_types_it(tmp_path: Path) -> None:
    (tmp_path / "name.txt").write_text("line one\nline two\n", encoding="utf-8")
    (tmp_path / "tags.json").write_text('["x", "y"]', encoding="utf-8")
    arguments = build(f"name=@{tmp_path / 'name.txt'}", f"tags=@{tmp_path / 'tags.json'}")
    assert arguments == {"name": "line one\nline two\n", "tags": ["x", "y"]}


def test_a_lone_at_sign_is_a_literal_value() -> None:
    assert build("name=@") == {"name": "@"}


def test_key_at_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--arg name: cannot read .*missing"):
        build(f"name=@{tmp_path / 'missing'}")


@pytest.mark.parametrize("pair", ["name", "=x", ""])
def test_an_arg_without_key_or_equals_is_a_usage_error(pair: str) -> None:
    with pytest.raises(UsageError, match="Bad --arg") as info:
        build(pair)
    assert info.value.hint is not None
    assert "KEY=VALUE" in info.value.hint


# --- --args ----------------------------------------------------------------------------------------------------------


def test_args_inline_json() -> None:
    assert build(args='{"name": "012", "count": 2}') == {"name": "012", "count": 2}


def test_args_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"name": "orders", "tags": ["a"]}), encoding="utf-8")
    assert build(args=f"@{path}") == {"name": "orders", "tags": ["a"]}


def test_args_dash_reads_stdin() -> None:
    assert build(args="-", stdin='{"name": "from stdin"}') == {"name": "from stdin"}


def test_arg_overrides_the_same_key_from_args() -> None:
    assert build("count=5", args='{"name": "n", "count": 1}') == {"name": "n", "count": 5}


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        ("{not json", "", "--args is not valid JSON"),
        ("[1, 2]", "", "--args must be a JSON object"),
        ('"text"', "", "--args must be a JSON object"),
        ("-", "nope", "--args - (stdin) is not valid JSON"),
        ("-", "null", "--args - (stdin) must be a JSON object"),
    ],
)
def test_bad_or_non_object_args_json_is_a_usage_error(args: str, stdin: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        build(args=args, stdin=stdin)
    assert info.value.message.startswith(message)


def test_args_from_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read"):
        build(args=f"@{tmp_path / 'nope.json'}")


# --- checked against the whole schema --------------------------------------------------------------------------------


def test_a_missing_required_argument_is_a_usage_error_naming_it() -> None:
    with pytest.raises(UsageError) as info:
        build("count=1")
    assert "'name'" in info.value.message
    assert info.value.hint == "Add --arg name=VALUE"


def test_a_wrong_type_given_through_args_json_names_the_argument() -> None:
    with pytest.raises(UsageError) as info:
        build(args='{"name": "x", "count": "two"}')
    assert info.value.message.startswith("Argument count:")


def test_an_argument_the_tool_forbids_is_a_usage_error() -> None:
    schema = {**SCHEMA, "additionalProperties": False}
    with pytest.raises(UsageError, match=r"does not take that argument.*surprise"):
        build("name=x", "surprise=1", schema=schema)


@pytest.mark.parametrize(
    "schema", [SCHEMA, {**SCHEMA, "properties": {**SCHEMA["properties"], "force": {"enum": [True]}}}]
)
def test_an_explicit_null_for_an_optional_property_is_sent_as_not_given(schema: dict[str, Any]) -> None:
    # Both checkers: the plain one (SCHEMA) and jsonschema (an enum makes the schema not plain).
    sent = build(args='{"name": "x", "force": null, "count": null}', schema=schema)
    assert sent == {"name": "x", "force": None, "count": None}


@pytest.mark.parametrize(
    "schema", [SCHEMA, {**SCHEMA, "properties": {**SCHEMA["properties"], "force": {"enum": [True]}}}]
)
def test_a_null_for_a_required_property_is_still_a_usage_error(schema: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="name"):
        build(args='{"name": null}', schema=schema)


def test_a_null_for_an_argument_the_tool_forbids_is_still_a_usage_error() -> None:
    schema = {**SCHEMA, "additionalProperties": False}
    with pytest.raises(UsageError, match=r"does not take that argument.*surprise"):
        build(args='{"name": "x", "surprise": null}', schema=schema)


# --- no schema, unknown properties, unions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        *[("3", 3), ("1.5", 1.5), ("true", True), ("null", None), ("[1]", [1]), ('{"a": 1}', {"a": 1})],
        *[("012", "012"), ("hello", "hello"), ("", ""), ("{oops", "{oops")],
    ],
)
def test_an_unknown_property_is_json_if_it_parses_else_text(raw: str, expected: Any) -> None:
    assert build_arguments(None, [f"x={raw}"]) == {"x": expected}
    assert build(f"x={raw}", "name=n", schema=SCHEMA)["x"] == expected
    assert typed_value("x", raw, None) == expected


def test_a_property_without_a_type_keeps_the_text() -> None:
    assert typed_value("x", "3", {"description": "anything"}) == "3"


@pytest.mark.parametrize(
    ("prop", "raw", "expected"),
    [
        ({"type": ["integer", "string"]}, "3", 3),
        ({"type": ["integer", "string"]}, "012", "012"),  # not a JSON integer: the string branch keeps it
        ({"type": ["integer", "string"]}, "abc", "abc"),
        ({"type": ["integer", "string"]}, "", ""),
        ({"type": ["integer", "null"]}, "null", None),
        ({"type": ["boolean", "number"]}, "2.5", 2.5),
        ({"type": ["boolean", "number"]}, "yes", True),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "7", 7),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "null", None),
        ({"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]}, '["a"]', ["a"]),
        ({"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]}, "a,b", "a,b"),
        ({"oneOf": [{"type": "number"}, {"type": "boolean"}]}, "false", False),
        ({"enum": ["01", "02"]}, "01", "01"),
        ({"enum": [1, 2, 3]}, "2", 2),  # an untyped enum is typed by its values
        ({"enum": ["a", 1]}, "1", 1),
        ({"enum": ["a", 1]}, "a", "a"),
        ({"const": True}, "yes", True),
        ({"anyOf": [{"const": "auto"}, {"const": 0}]}, "0", 0),
    ],
)
def test_union_types_take_the_first_kind_that_parses(prop: dict[str, Any], raw: str, expected: Any) -> None:
    value = typed_value("v", raw, prop)
    assert value == expected
    assert type(value) is type(expected)


def test_an_untyped_integer_enum_passes_the_schema_check() -> None:
    schema = {"type": "object", "properties": {"level": {"enum": [1, 2, 3]}}}
    assert build("level=2", schema=schema) == {"level": 2}


def test_a_union_without_string_rejects_text() -> None:
    with pytest.raises(UsageError, match=r"--arg v: 'abc' is not an integer or null"):
        typed_value("v", "abc", {"anyOf": [{"type": "integer"}, {"type": "null"}]})


# --- through the CLI -------------------------------------------------------------------------------------------------


def test_call_types_args_by_the_tools_schema(cli: Any) -> None:
    r = cli("call", "echo", "--arg", "text=012", "--arg", "count=2")
    assert r.code == 0, r.err
    assert r.out == "012 012\n"


def test_call_with_a_badly_typed_arg_exits_2_before_calling(cli: Any) -> None:
    r = cli("call", "echo", "--arg", "text=x", "--arg", "count=two")
    assert r.code == ExitCode.USAGE
    assert r.out == ""
    assert "--arg count: 'two' is not an integer" in r.err
    assert "Traceback" not in r.err


def test_a_badly_typed_argument_never_reaches_the_server(cli: Any, tmp_path: Path) -> None:
    """The recorder server appends a line for every tools/call it receives; it must receive none."""
    record = tmp_path / "legs.jsonl"
    server = stdio_server("recorder", "--record", str(record))
    r = cli("call", "two_rounds", "--args", '{"item": 5}', "-s", server)
    assert r.code == ExitCode.USAGE, r.err
    assert "Argument item:" in r.err
    assert not record.exists()
    # Control: a well-typed call does reach it.
    r = cli("call", "two_rounds", "--arg", "item=5", "--answer", "sure=yes", "-s", server)
    assert r.code == 0, r.err
    assert [json.loads(line)["item"] for line in record.read_text().splitlines()] == ["5", "5"]


def test_plain_schemas_are_checked_without_jsonschema_and_rich_ones_with_it() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from mcpcli.engine.arguments import build_arguments\n"
        "plain = {'type': 'object', 'properties': {'n': {'type': 'integer', 'title': 'N'}}, 'required': ['n']}\n"
        "build_arguments(plain, ['n=3'])\n"
        "print('jsonschema' in sys.modules)\n"
        "rich = {'type': 'object', 'properties': {'n': {'type': 'integer', 'minimum': 5}}}\n"
        "try:\n    build_arguments(rich, ['n=3'])\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "False"
    assert out[1].startswith("UsageError") and "minimum" in out[1]
    assert out[2] == "True"


def test_an_unknown_key_close_to_an_argument_is_refused_with_a_suggestion() -> None:
    with pytest.raises(UsageError, match=r"has no argument 'nmae'") as refused:
        build("nmae=orders")
    assert refused.value.hint is not None and refused.value.hint.startswith("Did you mean --arg name=…?")
    assert "Its arguments: name, count, ratio, force, tags, meta" in refused.value.hint


def test_an_unknown_key_the_schema_allows_is_sent_and_named() -> None:
    heard: list[str] = []
    assert build_arguments(SCHEMA, ["name=n", "zzz=1"], warn=heard.append) == {"name": "n", "zzz": 1}
    assert heard == ["--arg zzz: the tool does not list that argument; sent as given. Its arguments: "
                     "name, count, ratio, force, tags, meta."]  # fmt: skip
    forbidden = {**SCHEMA, "additionalProperties": False}
    with pytest.raises(UsageError, match="does not take that argument: 'zzz'") as refused:
        build("name=n", "zzz=1", schema=forbidden)
    assert "Its arguments: name" in (refused.value.hint or "")


ODD = shlex.join([PY, str(Path(__file__).parent / "data" / "odd_schemas_server.py")])


@pytest.mark.parametrize(
    ("args", "sent"),
    [
        (("tools",), None),
        (("call", "listed", "-a", "x=1"), '{"x": 1}'),
        (("call", "loose", "-a", "p=1", "-a", "q=hi", "-a", "r=2"), '{"p": "1", "q": "hi", "r": "2"}'),
        (("call", "loose", "--args", '{"p": [1]}'), '{"p": [1]}'),
        (("call", "broken", "-a", "s=x", "-a", "n=3"), '{"n": 3, "s": "x"}'),
    ],
)
def test_input_schemas_json_schema_does_not_mean_are_read_as_far_as_they_can_be(
    process: Any, args: tuple[str, ...], sent: str | None
) -> None:
    """Before, each of these was "Internal error" (a list where an object was expected, a name that is not
    hashable): a server's odd schema leaves its arguments untyped or unchecked — the server judges them."""
    r = process("-s", ODD, *args)
    assert r.code == 0, r.err
    assert "Internal error" not in r.err
    if sent is None:
        assert "listed" in r.out and "loose" in r.out and "q?: string" in r.out
    else:
        assert r.out == sent + "\n"


@pytest.mark.parametrize(
    "schema",
    [
        "not a schema",
        {"type": "object", "properties": ["x"]},
        {"type": "object", "properties": {"x": 5}, "required": [["x"], "y", 3]},
        {"type": "object", "required": "x"},
    ],
)
def test_usable_schema_keeps_only_what_json_schema_means(schema: Any) -> None:
    usable = usable_schema(schema)
    assert isinstance(usable, dict) and usable.get("type") == "object"
    assert all(isinstance(p, dict) for p in (usable.get("properties") or {}).values())
    assert all(isinstance(n, str) for n in usable.get("required") or [])


def test_a_property_of_several_types_is_typed_and_checked_without_an_internal_error() -> None:
    """The sequential-thinking server's ``nextThoughtNeeded`` is ``["boolean", "string"]``."""
    schema = {"type": "object", "properties": {"next": {"type": ["boolean", "string"]}}, "required": ["next"]}
    assert build("next=true", schema=schema) == {"next": True}
    assert build("next=maybe", schema=schema) == {"next": "maybe"}
    with pytest.raises(UsageError, match="Missing required argument 'next'"):
        build(schema=schema)


def test_a_required_property_missing_inside_a_value_is_named_by_its_path() -> None:
    """The memory server's ``entities``: objects in an array, each with required fields; no --arg names them."""
    item = {"type": "object", "properties": {"name": {"type": "string"}, "kind": {"type": "string"}}}
    schema = {"type": "object", "properties": {"entities": {"type": "array", "items": item | {"required": ["kind"]}}}}
    with pytest.raises(UsageError) as caught:
        build('entities=[{"name": "Ada"}]', schema=schema)
    assert caught.value.message == "Argument entities.0: the required property 'kind' is missing."
    assert caught.value.hint is not None and "--arg entities=" in caught.value.hint


def test_an_array_or_object_given_as_a_word_is_shown_written_as_json() -> None:
    schema = {"type": "object", "properties": {"names": {"type": "array"}, "meta": {"type": "object"}}}
    with pytest.raises(UsageError) as caught:
        build("names=Ada, Bob", schema=schema)
    assert caught.value.hint == """Write an array as JSON: --arg names='["Ada", "Bob"]'"""
    with pytest.raises(UsageError) as caught:
        build("meta=x", schema=schema)
    assert caught.value.hint == """Write an object as JSON: --arg meta='{"name": "value"}'"""


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--args", "@/dev/zero"), "--args: /dev/zero holds more than 64 MiB."),
        (("-a", "text=@/dev/zero"), "--arg text: /dev/zero holds more than 64 MiB."),
        (("--answers", "/dev/zero"), "--answers: /dev/zero holds more than 64 MiB."),
    ],
)
def test_a_file_without_end_is_refused_not_read_until_memory_runs_out(
    process: Any, args: tuple[str, ...], words: str
) -> None:
    r = process("call", "echo", *args, timeout=30)
    assert r.code == 2 and words in r.err, r.err


def test_an_answers_file_that_is_not_utf8_is_one_line(process: Any, tmp_path: Path) -> None:
    bad = tmp_path / "answers.json"
    bad.write_bytes(b'\xff\xfe{"region": "eu"}')
    r = process("call", "provision", "-a", "name=x", "--answers", str(bad))
    assert r.code == 2 and f"--answers: {bad} is not UTF-8 text." in r.err, r.err


# --- names the server does not have ----------------------------------------------------------------------------------


def test_a_mistyped_tool_name_gets_did_you_mean_as_a_mistyped_argument_does(process: Any) -> None:
    r = process("-s", ODD, "call", "lsited", "-a", "x=1")
    assert r.code == 2 and r.out == "", r.err
    assert "The server has no tool 'lsited'." in r.err
    assert "hint: Did you mean listed? Its tools: listed, loose, broken, open, closed (mcpcli tools)" in r.err


def test_a_mistyped_prompt_name_gets_did_you_mean_too(cli: Any) -> None:
    r = cli("-s", "demo", "prompt", "nte", "-a", "topic=x")
    assert r.code == 2, r.err
    assert "The server has no prompt 'nte'." in r.err and "Did you mean note? Its prompts: note" in r.err


def test_an_argument_the_schema_does_not_have_is_refused_naming_the_known_ones_when_it_allows_no_more(
    process: Any,
) -> None:
    r = process("-s", ODD, "call", "closed", "-a", "x=1", "-a", "nope=1")
    assert r.code == 2 and r.out == "", r.err  # nothing sent: the server would have echoed the arguments
    assert "The tool does not take that argument: 'nope'." in r.err and "hint: Its arguments: x" in r.err


def test_an_argument_the_schema_does_not_have_is_sent_with_a_warning_when_it_allows_more(process: Any) -> None:
    """No ``additionalProperties`` in the schema means any other key is allowed (JSON Schema): sent, and said."""
    r = process("-s", ODD, "call", "open", "-a", "x=1", "-a", "nope=1")
    assert r.code == 0 and r.out == '{"nope": 1, "x": "1"}\n', r.err
    assert "warning: --arg nope: the tool does not list that argument; sent as given. Its arguments: x." in r.err
