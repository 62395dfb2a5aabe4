"""Elicitation forms: the one translation of a ``requestedSchema`` into fields, and of answers into values.

An MCP elicitation schema is a flat object of primitive properties. This module
turns it into ``FieldSpec``s, turns what the user typed (a flag, a prompt, an
answers file) into typed values, and checks them against the field's bounds
and formats. The inline prompts, the Textual form and the preset sources all
use it, so a value accepted in one place is accepted everywhere, and nothing
invalid is ever sent to the server.

Pure: no I/O, no UI, no MCP SDK. Messages may quote server-provided text
(choice values, labels); callers sanitize them before display.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import date, datetime
from itertools import pairwise
from typing import Any, Literal
from urllib.parse import urlparse

from mcpcli.schemas import plain

Kind = Literal["string", "number", "integer", "boolean", "select", "multiselect"]

SECRET_MASK = "••••••"


@dataclass(frozen=True)
class Choice:
    """One option of a select: the value sent to the server and the label shown to the user."""

    value: str
    label: str


@dataclass(frozen=True)
class FieldSpec:
    """One form field, with everything needed to prompt for it and to validate the answer."""

    name: str
    kind: Kind
    title: str
    """What the user sees; the property name when the schema gives no title."""
    description: str | None = None
    required: bool = False
    default: Any = None
    """The schema's default as given; ``defaults()`` keeps only the valid ones."""
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None
    """``email``, ``uri``, ``date`` and ``date-time`` are checked; other formats are shown only."""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Choice, ...] = ()
    min_items: int | None = None
    max_items: int | None = None
    secret: bool = False
    """Password-like: mask it in prompts, summaries and logs."""


class SchemaError(ValueError):
    """The schema uses something a flat elicitation form cannot hold (nested objects, bad bounds...)."""


class FieldError(ValueError):
    """A value does not fit its field; ``str(e)`` is a one-line message for the user."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


# -- parsing the schema -------------------------------------------------------------------------------------------


def parse_schema(schema: Mapping[str, Any]) -> list[FieldSpec]:
    """The fields of an elicitation ``requestedSchema``, in property order."""
    if not isinstance(schema, Mapping):
        raise SchemaError("the requested schema is not a JSON object")
    if schema.get("type", "object") != "object":
        raise SchemaError(f"the requested schema must have type 'object', not {schema.get('type')!r}")
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(properties, Mapping):
        raise SchemaError("'properties' must be a JSON object")
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise SchemaError("'required' must be a list of property names")
    unknown = [name for name in required if name not in properties]
    if unknown:
        raise SchemaError(f"required properties are not defined: {', '.join(unknown)}")
    return [_parse_property(str(name), plain(prop, schema), name in required) for name, prop in properties.items()]


@dataclass(frozen=True)
class Unsupported:
    """A property a form cannot ask for (nested object, unknown type...): shown to the user, never sent."""

    name: str
    reason: str
    """Why, in one line (``SchemaError``'s message)."""
    required: bool
    """A required one means the form cannot be accepted, only declined or cancelled."""


def parse_schema_lenient(schema: Mapping[str, Any]) -> tuple[list[FieldSpec], list[Unsupported]]:
    """The fields a form can ask, and the properties it cannot — for a UI that shows what it cannot ask.

    ``parse_schema`` refuses a whole schema for one bad property (a preset or a prompt cannot work
    around it); a full-screen form can still show the rest and let the user decline. A schema that is not
    an object of properties at all still raises ``SchemaError``.
    """
    try:
        return parse_schema(schema), []
    except SchemaError:
        pass
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise SchemaError("the requested schema is not a JSON object")
    if not isinstance(schema.get("properties", {}), Mapping):
        raise SchemaError("'properties' must be a JSON object")
    required = schema.get("required", [])
    required = required if isinstance(required, list) else []
    fields: list[FieldSpec] = []
    unsupported: list[Unsupported] = []
    for name, prop in schema.get("properties", {}).items():
        try:
            fields.append(_parse_property(str(name), plain(prop, schema), name in required))
        except SchemaError as exc:
            unsupported.append(Unsupported(str(name), str(exc), name in required))
    known = {field.name for field in fields} | {item.name for item in unsupported}
    unsupported += [Unsupported(str(n), f"{n}: required but not defined", True) for n in required if n not in known]
    return fields, unsupported


def _parse_property(name: str, prop: Any, required: bool) -> FieldSpec:
    """One property as a field: its kind and choices, title (else the name), bounds, and whether its value is secret (a
    typed-in value with a secret-sounding name, ``format: password`` or ``writeOnly``). Raises ``SchemaError`` for a
    property no form can ask, including bounds no value fits."""
    if not isinstance(prop, Mapping):
        raise SchemaError(f"{name}: the property schema is not a JSON object")
    kind, choices = _kind_and_choices(name, prop)
    title = prop.get("title")
    description = prop.get("description")
    fmt = prop.get("format")
    # Only typed-in values can leak; a choice or a yes/no is visible in the form anyway.
    secret = kind in ("string", "number", "integer") and (
        is_secret_name(name, title if isinstance(title, str) else None)
        or fmt == "password"
        or prop.get("writeOnly") is True
    )
    for low, high in (("minimum", "maximum"), ("minLength", "maxLength"), ("minItems", "maxItems")):
        lowest, highest = _bound(name, prop, low, integral=low != "minimum"), _bound(name, prop, high, integral=False)
        if lowest is not None and highest is not None and lowest > highest:
            # No value fits: asking would loop on "must be between 10 and 1" until the user gives up.
            raise SchemaError(f"{name}: {low!r} {_num(lowest)} is over {high!r} {_num(highest)}, so no value fits")
    return FieldSpec(
        name=name,
        kind=kind,
        title=title if isinstance(title, str) and title else name,
        description=description if isinstance(description, str) and description else None,
        required=required,
        default=prop.get("default"),
        min_length=_bound(name, prop, "minLength", integral=True),
        max_length=_bound(name, prop, "maxLength", integral=True),
        format=fmt if isinstance(fmt, str) else None,
        minimum=_bound(name, prop, "minimum", integral=False),
        maximum=_bound(name, prop, "maximum", integral=False),
        choices=choices,
        min_items=_bound(name, prop, "minItems", integral=True),
        max_items=_bound(name, prop, "maxItems", integral=True),
        secret=secret,
    )


def _kind_and_choices(name: str, prop: Mapping[str, Any]) -> tuple[Kind, tuple[Choice, ...]]:
    """A property's kind — a string with ``enum``/``oneOf`` is a select, an array of choices a multiselect — and its
    choices. Anything else a form cannot hold (a nested object, an array of free values, no type) is a ``SchemaError``
    that names the property."""
    kind = prop.get("type")
    if kind == "string" and ("enum" in prop or "oneOf" in prop):
        return "select", _choices(name, prop)
    if kind in ("string", "number", "integer", "boolean"):
        return kind, ()
    if kind == "array":
        items = prop.get("items")
        if isinstance(items, Mapping) and ("enum" in items or "anyOf" in items or "oneOf" in items):
            return "multiselect", _choices(name, items)
        raise SchemaError(f"{name}: only arrays of choices (items with 'enum' or 'anyOf') are supported")
    if kind == "object":
        raise SchemaError(f"{name}: nested objects are not supported in a form")
    if kind is None:
        raise SchemaError(f"{name}: the property has no 'type'")
    raise SchemaError(f"{name}: unsupported property type {kind!r}")


def _choices(name: str, prop: Mapping[str, Any]) -> tuple[Choice, ...]:
    """Choices from ``enum`` (+ legacy ``enumNames``) or from ``oneOf``/``anyOf`` const/title pairs."""
    if "enum" in prop:
        values, labels = prop["enum"], prop.get("enumNames", prop["enum"])
        if not isinstance(values, list) or not isinstance(labels, list) or len(labels) != len(values):
            raise SchemaError(f"{name}: 'enum' must be a list (and 'enumNames' one label per value)")
        pairs = list(zip(values, labels, strict=True))
    else:
        options = prop.get("oneOf", prop.get("anyOf"))
        if not isinstance(options, list) or not all(isinstance(o, Mapping) and "const" in o for o in options):
            raise SchemaError(f"{name}: 'oneOf'/'anyOf' must be a list of {{'const', 'title'}} objects")
        pairs = [(o["const"], o.get("title", o["const"])) for o in options]
    if not pairs:
        raise SchemaError(f"{name}: a select needs at least one choice")
    if not all(isinstance(value, str) and isinstance(label, str) for value, label in pairs):
        raise SchemaError(f"{name}: choice values and titles must be strings")
    return tuple(Choice(value, label) for value, label in pairs)


def _bound(name: str, prop: Mapping[str, Any], key: str, *, integral: bool) -> Any:
    value = prop.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or (integral and not float(value).is_integer()):
        raise SchemaError(f"{name}: {key!r} must be {'an integer' if integral else 'a number'}")
    return int(value) if integral else float(value)


_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SECRET_WORDS = frozenset({"password", "passphrase", "secret", "token", "apikey", "pin"})
_SECRET_PAIRS = frozenset({("api", "key"), ("private", "key")})


def is_secret_name(name: str, title: str | None = None) -> bool:
    """Whether a field's name or title says it holds a password-like value.

    Matches whole words (``apiKey``, ``api_key``, ``API key``, ``client-secret``)
    so that ``spinner`` or ``max_tokens`` are not masked.
    """
    for text in (name, title or ""):
        words = [word.lower() for word in _WORD.findall(text)]
        if _SECRET_WORDS.intersection(words) or _SECRET_PAIRS.intersection(pairwise(words)):
            return True
    return False


# -- coercion and validation --------------------------------------------------------------------------------------

_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_NUMBER_TEXT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_TRUE = frozenset({"true", "yes", "y", "1"})
_FALSE = frozenset({"false", "no", "n", "0"})


def coerce(field: FieldSpec, raw: Any) -> Any:
    """The typed, validated value for ``raw``: text from a flag or prompt, or a JSON value from an answers file.

    Strings are kept verbatim (``"012"`` stays ``"012"``); everything else is
    parsed by the value syntax docs/sessions.md documents for answers. Raises ``FieldError``.
    """
    if field.kind in ("number", "integer"):
        value: Any = _coerce_number(field, raw)
    elif field.kind == "boolean":
        value = _coerce_boolean(field, raw)
    elif field.kind == "select":
        value = _resolve_choice(field, raw) if isinstance(raw, str) else raw
    elif field.kind == "multiselect":
        value = _coerce_multiselect(field, raw)
    else:
        value = raw
    validate(field, value)
    return value


def _coerce_number(field: FieldSpec, raw: Any) -> Any:
    if isinstance(raw, str):
        text = raw.strip()
        if _INTEGER_TEXT.fullmatch(text):
            return int(text)  # exact, even past float precision
        if _NUMBER_TEXT.fullmatch(text):
            number = float(text)
            return int(number) if field.kind == "integer" and number.is_integer() else number
        raise FieldError(_number_message(field), field=field.name)
    if field.kind == "integer" and isinstance(raw, float) and raw.is_integer():
        return int(raw)  # JSON has no integer type: 3.0 is 3
    return raw


def _coerce_boolean(field: FieldSpec, raw: Any) -> Any:
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise FieldError(f"{field.name}: must be true or false (yes/no, 1/0)", field=field.name)
    return raw


def _coerce_multiselect(field: FieldSpec, raw: Any) -> Any:
    """A multiselect answer as a list of choice values, each once: from a list, a JSON array or comma-separated text, a
    title matching its value. What is not a list of strings is handed on as it is, for ``validate`` to say why."""
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("["):
            try:
                raw = json.loads(text)
            except (json.JSONDecodeError, RecursionError):
                raise FieldError(f"{field.name}: not a valid JSON array", field=field.name) from None
        else:
            raw = [item.strip() for item in text.split(",") if item.strip()]
    if not isinstance(raw, list | tuple):
        return raw
    if not all(isinstance(item, str) for item in raw):
        return list(raw)  # validate() says why
    return list(dict.fromkeys(_resolve_choice(field, item) for item in raw))  # picking twice means picking once


def _resolve_choice(field: FieldSpec, text: str) -> str:
    """The choice value for ``text``: the value itself, else a title matched case-insensitively."""
    if any(choice.value == text for choice in field.choices):
        return text
    folded = text.strip().casefold()
    matches = [c.value for c in field.choices if c.label != c.value and c.label.casefold() == folded]
    return matches[0] if len(matches) == 1 else text  # no or ambiguous match: validate() lists the options


def validate(field: FieldSpec, value: Any) -> None:
    """Check an already-typed value against the field's type, bounds, format and choices."""
    if field.kind == "string":
        _validate_string(field, value)
    elif field.kind in ("number", "integer"):
        _validate_number(field, value)
    elif field.kind == "boolean":
        if not isinstance(value, bool):
            raise FieldError(f"{field.name}: must be true or false", field=field.name)
    elif field.kind == "select":
        if not isinstance(value, str) or value not in {choice.value for choice in field.choices}:
            raise FieldError(f"{field.name}: must be one of {_options(field)}", field=field.name)
    else:
        _validate_multiselect(field, value)


def _validate_string(field: FieldSpec, value: Any) -> None:
    if not isinstance(value, str):
        raise FieldError(f"{field.name}: must be a string", field=field.name)
    low, high = field.min_length, field.max_length
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        raise FieldError(f"{field.name}: must be {_range(low, high, 'character')}", field=field.name)
    check = _FORMATS.get(field.format or "")
    if check is not None and not check[0](value):
        raise FieldError(f"{field.name}: must be {check[1]}", field=field.name)


def _validate_number(field: FieldSpec, value: Any) -> None:
    valid_type = (int,) if field.kind == "integer" else (int, float)
    if (
        isinstance(value, bool)
        or not isinstance(value, valid_type)
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise FieldError(_number_message(field), field=field.name)
    low, high = field.minimum, field.maximum
    if (low is not None and value < low) or (high is not None and value > high):
        raise FieldError(_number_message(field), field=field.name)


def _validate_multiselect(field: FieldSpec, value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise FieldError(f'{field.name}: must be a list of choices, like a, b or ["a", "b"]', field=field.name)
    allowed = {choice.value for choice in field.choices}
    wrong = [item for item in value if item not in allowed]
    if wrong:
        raise FieldError(f"{field.name}: {', '.join(wrong)} not among {_options(field)}", field=field.name)
    if len(set(value)) != len(value):
        raise FieldError(f"{field.name}: a choice is listed twice", field=field.name)
    low, high = field.min_items, field.max_items
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        raise FieldError(f"{field.name}: must have {_range(low, high, 'choice')}", field=field.name)


def _number_message(field: FieldSpec) -> str:
    noun = "an integer" if field.kind == "integer" else "a number"
    low, high = field.minimum, field.maximum
    if low is not None and high is not None:
        return f"{field.name}: must be {noun} between {_num(low)} and {_num(high)}"
    if low is not None:
        return f"{field.name}: must be {noun} of at least {_num(low)}"
    if high is not None:
        return f"{field.name}: must be {noun} of at most {_num(high)}"
    return f"{field.name}: must be {noun}"


def _range(low: int | None, high: int | None, unit: str) -> str:
    def count(n: int) -> str:
        return f"{n} {unit}{'' if n == 1 else 's'}"

    low = low or None  # "at least 0" says nothing
    if low is not None and high is not None:
        return f"exactly {count(low)}" if low == high else f"between {low} and {count(high)}"
    return f"at least {count(low)}" if low is not None else f"at most {count(high or 0)}"


def _num(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else repr(bound)


def _options(field: FieldSpec) -> str:
    return ", ".join(c.value if c.label == c.value else f"{c.value} ({c.label})" for c in field.choices)


# -- formats ------------------------------------------------------------------------------------------------------


def _is_email(text: str) -> bool:
    local, at, domain = text.partition("@")
    labels = domain.split(".")
    return bool(at) and bool(local) and "@" not in domain and len(labels) > 1 and all(labels) and " " not in text


def _is_uri(text: str) -> bool:
    if any(ch.isspace() for ch in text):
        return False
    try:
        parts = urlparse(text)
        host = parts.hostname
    except ValueError:  # e.g. a malformed IPv6 host
        return False
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme):
        return False
    return bool(host) if parts.scheme.lower() in ("http", "https") else bool(parts.netloc or parts.path)


def _is_date(text: str) -> bool:
    # date.fromisoformat also takes 20260728 and week dates; the form promises YYYY-MM-DD.
    return re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) is not None and _parses(date.fromisoformat, text)


def _is_date_time(text: str) -> bool:
    # A date-time needs a time; datetime.fromisoformat alone would take a bare date.
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}.*", text) is None:
        return False
    return _parses(datetime.fromisoformat, text[:-1] + "+00:00" if text[-1] in "Zz" else text)


def _parses(parse: Any, text: str) -> bool:
    try:
        parse(text)
    except ValueError:
        return False
    return True


_FORMATS = {
    "email": (_is_email, "an email address like name@example.com"),
    "uri": (_is_uri, "a URI like https://example.com/path"),
    "date": (_is_date, "a date like 2026-07-28 (YYYY-MM-DD)"),
    "date-time": (_is_date_time, "a date-time like 2026-07-28T14:30:00Z (ISO 8601)"),
}


# -- whole forms --------------------------------------------------------------------------------------------------


def validate_content(fields: Sequence[FieldSpec], content: Mapping[str, Any]) -> dict[str, Any]:
    """The clean content to send: every key known, every required field present, every value coerced.

    A ``null`` for an optional field means "not given" and is dropped.
    """
    names = [field.name for field in fields]
    unknown = [key for key in content if key not in names]
    if unknown:
        expected = ", ".join(names) or "no fields"
        raise FieldError(f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} (expected: {expected})")
    missing = [field.name for field in fields if field.required and content.get(field.name) is None]
    if missing:
        raise FieldError(f"missing required field{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    return {f.name: coerce(f, content[f.name]) for f in fields if content.get(f.name) is not None}


def defaults(fields: Sequence[FieldSpec]) -> dict[str, Any]:
    """The schema defaults that are valid for their field; an invalid default is ignored, not sent."""
    result: dict[str, Any] = {}
    for field in fields:
        if field.default is None:
            continue
        with suppress(FieldError):
            result[field.name] = coerce(field, field.default)
    return result


def constraint_hint(field: FieldSpec, *, typed: bool = True) -> str:
    """A short reminder of what the field accepts, e.g. ``integer 1–10`` or ``YYYY-MM-DD``; shared by every UI.

    ``typed``: the answer is typed as text (the inline prompts), so a yes/no is ``y/n`` and several choices are
    comma-separated; the app picks them with a switch or a checklist instead."""
    if field.kind in ("number", "integer"):
        low, high = field.minimum, field.maximum
        if low is not None and high is not None:
            return f"{field.kind} {_num(low)}–{_num(high)}"
        if low is not None or high is not None:
            return f"{field.kind} {'≥ ' + _num(low) if low is not None else '≤ ' + _num(high or 0)}"
        return field.kind
    if field.kind == "boolean":
        return "y/n" if typed else ""
    if field.kind == "select":
        return "pick one"
    if field.kind == "multiselect":
        low, high = field.min_items, field.max_items
        how = "pick any, comma-separated" if typed else "pick any"
        return how + (f"; {_range(low, high, 'choice')}" if low or high is not None else "")
    hints = {"email": "email", "uri": "URI", "date": "YYYY-MM-DD", "date-time": "YYYY-MM-DDTHH:MM:SS, ISO 8601"}
    parts = [hints[field.format or ""]] if field.format in hints else []
    if field.min_length or field.max_length is not None:
        parts.append(_range(field.min_length or None, field.max_length, "character"))
    return ", ".join(parts)


def display_value(field: FieldSpec, value: Any) -> str:
    """How a value reads in a summary: the label for choices, a mask for secrets, JSON otherwise."""
    if field.secret:
        return SECRET_MASK
    labels = {choice.value: choice.label for choice in field.choices}
    if field.kind == "select" and isinstance(value, str):
        return labels.get(value, value)
    if field.kind == "multiselect" and isinstance(value, list):
        return ", ".join(labels.get(item, str(item)) for item in value)
    return json.dumps(value, ensure_ascii=False)
