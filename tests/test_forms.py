"""Elicitation schemas → fields, and answers → validated values (pure, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcli.forms import (
    Choice,
    FieldError,
    FieldSpec,
    SchemaError,
    coerce,
    constraint_hint,
    defaults,
    display_value,
    is_secret_name,
    parse_schema,
    validate,
    validate_content,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "title": "Region", "description": "Where", "minLength": 2, "maxLength": 12},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1.5, "default": 0.5},
        "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
        "agree": {"type": "boolean", "default": False},
        "size": {"type": "string", "enum": ["small", "medium", "large"], "default": "medium"},
        "zone": {
            "type": "string",
            "oneOf": [{"const": "eu-west", "title": "Europe (West)"}, {"const": "us-east", "title": "US (East)"}],
        },
        "tier": {"type": "string", "enum": ["b", "s", "g"], "enumNames": ["Bronze", "Silver", "Gold"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2},
        "langs": {
            "type": "array",
            "items": {"anyOf": [{"const": "py", "title": "Python"}, {"const": "rs", "title": "Rust"}]},
            "default": ["py"],
        },
    },
    "required": ["region", "count"],
}
FIELDS = {field.name: field for field in parse_schema(SCHEMA)}


def field(kind: Any = "string", **options: Any) -> FieldSpec:
    return FieldSpec(name=options.pop("name", "f"), kind=kind, title=options.pop("title", "F"), **options)


# -- parse_schema -------------------------------------------------------------------------------------------------


def test_every_primitive_kind_parses_in_property_order() -> None:
    kinds = [(f.name, f.kind) for f in parse_schema(SCHEMA)]
    assert kinds == [
        ("region", "string"),
        ("ratio", "number"),
        ("count", "integer"),
        ("agree", "boolean"),
        ("size", "select"),
        ("zone", "select"),
        ("tier", "select"),
        ("tags", "multiselect"),
        ("langs", "multiselect"),
    ]


def test_string_field_keeps_title_description_bounds_and_required() -> None:
    region = FIELDS["region"]
    assert (region.title, region.description, region.required) == ("Region", "Where", True)
    assert (region.min_length, region.max_length) == (2, 12)


def test_title_defaults_to_the_property_name() -> None:
    assert FIELDS["count"].title == "count"
    assert not FIELDS["ratio"].required


def test_number_bounds_and_defaults_are_kept() -> None:
    assert (FIELDS["count"].minimum, FIELDS["count"].maximum, FIELDS["count"].default) == (1, 10, 3)
    assert FIELDS["ratio"].maximum == 1.5


@pytest.mark.parametrize(
    ("name", "choices"),
    [
        ("size", (Choice("small", "small"), Choice("medium", "medium"), Choice("large", "large"))),
        ("zone", (Choice("eu-west", "Europe (West)"), Choice("us-east", "US (East)"))),
        ("tier", (Choice("b", "Bronze"), Choice("s", "Silver"), Choice("g", "Gold"))),
        ("tags", (Choice("a", "a"), Choice("b", "b"), Choice("c", "c"))),
        ("langs", (Choice("py", "Python"), Choice("rs", "Rust"))),
    ],
)
def test_choices_come_from_enum_enum_names_one_of_and_any_of(name: str, choices: tuple[Choice, ...]) -> None:
    assert FIELDS[name].choices == choices


def test_multiselect_keeps_item_bounds() -> None:
    assert (FIELDS["tags"].min_items, FIELDS["tags"].max_items) == (1, 2)


def test_date_format_is_kept() -> None:
    (when,) = parse_schema({"type": "object", "properties": {"when": {"type": "string", "format": "date"}}})
    assert when.format == "date"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array"},
        {"type": "object", "properties": {"x": {"type": "object", "properties": {}}}},
        {"type": "object", "properties": {"x": {"type": "array", "items": {"type": "string"}}}},
        {"type": "object", "properties": {"x": {"type": "null"}}},
        {"type": "object", "properties": {"x": {"type": "string", "enum": []}}},
        {"type": "object", "properties": {"x": {"type": "string", "enum": [1, 2]}}},
        {"type": "object", "properties": {"x": {"type": "string", "enum": ["a"], "enumNames": ["A", "B"]}}},
        {"type": "object", "properties": {"x": {"type": "string", "maxLength": "ten"}}},
        {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]},
        {"type": "object", "properties": ["x"]},
    ],
)
def test_unsupported_or_invalid_schemas_raise_schema_error(schema: dict[str, Any]) -> None:
    with pytest.raises(SchemaError):
        parse_schema(schema)


def test_empty_schema_has_no_fields() -> None:
    assert parse_schema({"type": "object", "properties": {}}) == []


# -- coercion from text and JSON ----------------------------------------------------------------------------------


def test_string_field_keeps_leading_zeros() -> None:
    assert coerce(field(), "012") == "012"


def test_string_field_keeps_text_verbatim() -> None:
    assert coerce(field(), "  two words ") == "  two words "


def test_string_field_rejects_a_json_number() -> None:
    with pytest.raises(FieldError, match="f: must be a string"):
        coerce(field(), 12)


@pytest.mark.parametrize(
    ("raw", "value"),
    [("3", 3), ("-2e3", -2000.0), ("1.5", 1.5), (" 7 ", 7), ("+4", 4), (".5", 0.5), (2, 2), (2.25, 2.25)],
)
def test_number_field_accepts_numbers_as_written(raw: Any, value: float) -> None:
    result = coerce(field("number"), raw)
    assert result == value and type(result) is type(value)


@pytest.mark.parametrize(("raw", "value"), [("3", 3), ("-12", -12), ("2e3", 2000), (5, 5), (5.0, 5), ("1.0", 1)])
def test_integer_field_accepts_whole_numbers(raw: Any, value: int) -> None:
    result = coerce(field("integer"), raw)
    assert result == value and type(result) is int


def test_integer_field_keeps_big_integers_exact() -> None:
    assert coerce(field("integer"), "12345678901234567890123") == 12345678901234567890123


@pytest.mark.parametrize("raw", ["1.5", "abc", "", "nan", "inf", "1_000", "0x10", 1.5, True, False, None, "1e400"])
def test_integer_field_rejects_what_is_not_an_integer(raw: Any) -> None:
    with pytest.raises(FieldError, match=r"^f: must be an integer$"):
        coerce(field("integer"), raw)


@pytest.mark.parametrize("raw", ["abc", "true", "nan", "Infinity", True, "1,5", float("inf"), [1]])
def test_number_field_rejects_non_numbers_and_booleans(raw: Any) -> None:
    with pytest.raises(FieldError, match=r"^f: must be a number$"):
        coerce(field("number"), raw)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        *[(text, True) for text in ("true", "TRUE", "yes", "Yes", "y", "1", " true ")],
        *[(text, False) for text in ("false", "False", "no", "NO", "n", "0")],
        (True, True),
        (False, False),
    ],
)
def test_boolean_field_accepts_words_digits_and_json_booleans(raw: Any, value: bool) -> None:
    assert coerce(field("boolean"), raw) is value


@pytest.mark.parametrize("raw", ["maybe", "", "2", 1, 0, None])
def test_boolean_field_rejects_anything_else(raw: Any) -> None:
    with pytest.raises(FieldError, match="f: must be true or false"):
        coerce(field("boolean"), raw)


@pytest.mark.parametrize(
    ("name", "raw", "value"),
    [
        ("size", "large", "large"),
        ("zone", "eu-west", "eu-west"),
        ("zone", "Europe (West)", "eu-west"),
        ("zone", "europe (west)", "eu-west"),
        ("zone", "  US (EAST) ", "us-east"),
        ("tier", "Gold", "g"),
        ("tier", "s", "s"),
    ],
)
def test_select_accepts_the_value_or_the_title_case_insensitively(name: str, raw: str, value: str) -> None:
    assert coerce(FIELDS[name], raw) == value


@pytest.mark.parametrize(
    ("raw", "message"),
    [("huge", "size: must be one of small, medium, large"), ("LARGE", "size: must be one of"), (3, "size")],
)
def test_select_rejects_values_outside_the_choices_and_miscased_values(raw: Any, message: str) -> None:
    with pytest.raises(FieldError, match=message):
        coerce(FIELDS["size"], raw)


def test_titled_select_error_lists_values_with_their_titles() -> None:
    with pytest.raises(FieldError, match=r"zone: must be one of eu-west \(Europe \(West\)\), us-east \(US \(East\)\)"):
        coerce(FIELDS["zone"], "mars")


def test_select_prefers_an_exact_value_over_a_title() -> None:
    swapped = field("select", choices=(Choice("a", "B"), Choice("b", "A")))
    assert coerce(swapped, "b") == "b"
    assert coerce(swapped, "B") == "a"


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ('["a", "b"]', ["a", "b"]),
        ("a, b", ["a", "b"]),
        ("c", ["c"]),
        ("a,a", ["a"]),
        (["b", "a"], ["b", "a"]),
        (" b ,, c ", ["b", "c"]),
    ],
)
def test_multiselect_accepts_json_arrays_comma_lists_and_json_lists(raw: Any, value: list[str]) -> None:
    assert coerce(FIELDS["tags"], raw) == value


def test_titled_multiselect_accepts_titles() -> None:
    assert coerce(FIELDS["langs"], "python, rs") == ["py", "rs"]
    assert coerce(FIELDS["langs"], ["Rust"]) == ["rs"]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "tags: must have between 1 and 2 choices"),
        ("a, b, c", "tags: must have between 1 and 2 choices"),
        ("a, z", "tags: z not among a, b, c"),
        ('["a", 1]', "tags: must be a list of choices"),
        ('["a"', "tags: not a valid JSON array"),
        ('{"a": 1}', 'tags: {"a": 1} not among a, b, c'),
        (7, "tags: must be a list of choices"),
    ],
)
def test_multiselect_rejects_bad_lists(raw: Any, message: str) -> None:
    with pytest.raises(FieldError, match=message):
        coerce(FIELDS["tags"], raw)


# -- bounds and formats -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "raw", "message"),
    [
        (field(name="region", max_length=12), "x" * 13, "region: must be at most 12 characters"),
        (field(name="region", min_length=3), "ab", "region: must be at least 3 characters"),
        (field(name="region", min_length=1), "", "region: must be at least 1 character$"),
        (field(name="code", min_length=2, max_length=4), "abcde", "code: must be between 2 and 4 characters"),
        (field(name="pin", min_length=4, max_length=4), "123", "pin: must be exactly 4 characters"),
        (field("integer", name="count", minimum=1, maximum=10), "11", "count: must be an integer between 1 and 10"),
        (field("integer", name="count", minimum=1, maximum=10), "0", "count: must be an integer between 1 and 10"),
        (field("integer", name="count", minimum=1, maximum=10), "x", "count: must be an integer between 1 and 10"),
        (field("number", name="ratio", minimum=0.5), "0.25", "ratio: must be a number of at least 0.5"),
        (field("number", name="ratio", maximum=2), "2.5", "ratio: must be a number of at most 2$"),
        (field("multiselect", name="t", choices=(Choice("a", "a"),), max_items=0), "a", "t: must have at most 0"),
    ],
)
def test_bounds_are_enforced_with_a_readable_message(spec: FieldSpec, raw: Any, message: str) -> None:
    with pytest.raises(FieldError, match=message):
        coerce(spec, raw)


def test_string_length_counts_characters_not_bytes() -> None:
    assert coerce(field(max_length=3), "日本語") == "日本語"


def test_values_on_the_bounds_are_accepted() -> None:
    assert coerce(field("integer", minimum=1, maximum=10), "10") == 10
    assert coerce(field("number", minimum=0, maximum=1.5), "0") == 0


@pytest.mark.parametrize(
    ("fmt", "good"),
    [
        ("email", ["ada@example.com", "a.b+c@mail.example.org"]),
        ("uri", ["https://example.com/x?y=1", "http://localhost:8080", "mailto:ada@example.com", "urn:isbn:123"]),
        ("date", ["2026-07-28", "2024-02-29"]),
        ("date-time", ["2026-07-28T14:30:00Z", "2026-07-28T14:30:00+02:00", "2026-07-28 14:30", "2026-07-28T14:30z"]),
        ("password", ["anything at all"]),
    ],
)
def test_formats_accept_well_formed_values(fmt: str, good: list[str]) -> None:
    for text in good:
        assert coerce(field(format=fmt), text) == text


@pytest.mark.parametrize(
    ("fmt", "bad", "message"),
    [
        ("email", ["ada", "@example.com", "ada@example", "ada@@example.com", "a da@example.com", "ada@.com"], "email"),
        ("uri", ["example.com", "https://", "http:///path", "not a uri", "1http://x", "https://[::1"], "a URI"),
        ("date", ["2026-02-30", "20260728", "2026-7-28", "28/07/2026", "2026-07-28T10:00"], "YYYY-MM-DD"),
        ("date-time", ["2026-07-28", "2026-07-28T25:00", "yesterday", "2026-07-28T10:00\nx"], "date-time"),
    ],
)
def test_formats_reject_malformed_values(fmt: str, bad: list[str], message: str) -> None:
    for text in bad:
        with pytest.raises(FieldError, match=message):
            coerce(field(format=fmt), text)


def test_validate_checks_typed_values_without_parsing_text() -> None:
    validate(FIELDS["count"], 5)
    with pytest.raises(FieldError):
        validate(FIELDS["count"], "5")
    with pytest.raises(FieldError, match="listed twice"):
        validate(FIELDS["tags"], ["a", "a"])


def test_field_error_names_its_field() -> None:
    with pytest.raises(FieldError) as caught:
        coerce(FIELDS["count"], "x")
    assert caught.value.field == "count"


# -- whole forms --------------------------------------------------------------------------------------------------


def test_validate_content_coerces_every_value_in_field_order() -> None:
    fields = list(FIELDS.values())
    clean = validate_content(fields, {"tags": "a", "count": "4", "region": "eu", "zone": "US (East)"})
    assert clean == {"region": "eu", "count": 4, "zone": "us-east", "tags": ["a"]}
    assert list(clean) == ["region", "count", "zone", "tags"]


def test_validate_content_requires_every_required_field() -> None:
    with pytest.raises(FieldError, match="missing required fields: region, count"):
        validate_content(list(FIELDS.values()), {"agree": True})


def test_validate_content_rejects_unknown_keys_naming_them() -> None:
    with pytest.raises(FieldError, match="unknown fields colour, shape"):
        validate_content(list(FIELDS.values()), {"region": "eu", "count": 1, "colour": "red", "shape": "x"})


def test_validate_content_drops_null_optional_values() -> None:
    assert validate_content(list(FIELDS.values()), {"region": "eu", "count": 1, "ratio": None}) == {
        "region": "eu",
        "count": 1,
    }


def test_validate_content_reports_the_first_bad_value() -> None:
    with pytest.raises(FieldError, match="count: must be an integer between 1 and 10"):
        validate_content(list(FIELDS.values()), {"region": "eu", "count": 99})


def test_defaults_keep_only_valid_defaults() -> None:
    fields = [*FIELDS.values(), field("integer", name="bad", maximum=1, default=5), field(name="s", default="x")]
    assert defaults(fields) == {
        "ratio": 0.5,
        "count": 3,
        "agree": False,
        "size": "medium",
        "langs": ["py"],
        "s": "x",
    }


# -- secrets, hints and display -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["password", "Password", "user_password", "passphrase", "client_secret", "clientSecret", "token", "auth-token",
     "apiKey", "APIKey", "api_key", "apikey", "API key", "pin", "PIN", "private_key", "privateKey"],
)  # fmt: skip
def test_secret_names_are_detected(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["spinner", "max_tokens", "username", "keyboard", "api", "key", "pinned", "tokenize"])
def test_ordinary_names_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_a_secret_title_makes_the_field_secret() -> None:
    assert is_secret_name("value", "Your GitHub token")


@pytest.mark.parametrize(
    ("prop", "secret"),
    [
        ({"type": "string"}, False),
        ({"type": "string", "format": "password"}, True),
        ({"type": "string", "writeOnly": True}, True),
        ({"type": "string", "title": "API key"}, True),
        ({"type": "integer", "title": "PIN"}, True),
        ({"type": "string", "title": "Token type", "enum": ["bearer", "basic"]}, False),
    ],
)
def test_secret_fields_come_from_the_name_title_format_or_write_only(prop: dict[str, Any], secret: bool) -> None:
    (parsed,) = parse_schema({"type": "object", "properties": {"x": prop}})
    assert parsed.secret is secret


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("zone", "eu-west", "Europe (West)"),
        ("langs", ["py", "rs"], "Python, Rust"),
        ("count", 3, "3"),
        ("agree", True, "true"),
        ("region", "012", '"012"'),
    ],
)
def test_display_value_shows_labels_and_json(name: str, value: Any, shown: str) -> None:
    assert display_value(FIELDS[name], value) == shown


def test_display_value_masks_secrets() -> None:
    assert display_value(field(secret=True), "hunter2") == "••••••"


@pytest.mark.parametrize(
    ("spec", "hint"),
    [
        (field("integer", minimum=1, maximum=10), "integer 1–10"),
        (field("number", minimum=0.5), "number ≥ 0.5"),
        (field("boolean"), "y/n"),
        (field(format="email"), "email"),
        (field(format="date", max_length=10), "YYYY-MM-DD, at most 10 characters"),
        (field(), ""),
        (FIELDS["tags"], "pick any, comma-separated; between 1 and 2 choices"),
    ],
)
def test_constraint_hints_are_short(spec: FieldSpec, hint: str) -> None:
    assert constraint_hint(spec) == hint


def test_a_lenient_parse_keeps_the_fields_it_can_and_names_the_parts_it_cannot() -> None:
    from mcpcli.forms import parse_schema_lenient

    schema = {
        "type": "object",
        "properties": {"note": {"type": "string"}, "address": {"type": "object"}, "tags": {"type": "array"}},
        "required": ["address"],
    }
    fields, unsupported = parse_schema_lenient(schema)
    assert [f.name for f in fields] == ["note"]
    assert [(u.name, u.required) for u in unsupported] == [("address", True), ("tags", False)]
    assert "nested objects" in unsupported[0].reason
    with pytest.raises(SchemaError):
        parse_schema_lenient({"type": "array"})
