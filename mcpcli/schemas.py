"""A property schema as a person reads it: the one reading behind ``tools``, ``--arg`` typing and every form.

Each SDK writes the same idea its own way. An optional string is ``{"type": ["string", "null"]}`` from schemars
(rmcp), ``{"anyOf": [{"type": "string"}, {"type": "null"}]}`` from pydantic, ``{"type": "string",
"nullable": true}`` in OpenAPI style, and a plain ``{"type": "string"}`` left out of ``required`` from zod, Go
and C#. A union is a list of types or an ``anyOf``/``oneOf`` of simple schemas; an enum is ``enum`` (with C#'s
``enumNames``), a ``oneOf`` of ``const``/``title`` pairs, or a lone ``const``; pydantic puts enums and models
under ``$defs`` and points at them with ``$ref``. ``read`` turns any of them into one ``Shape``, ``text``
writes it the way people write types (``string``, ``string | integer``, ``"a" | "b"``, ``string[]``), and
``plain`` rewrites a property into the flat form a form field is built from (``forms``).

Pure and bounded: no I/O; a ``$ref`` is followed only inside the schema (``#/$defs/…``, ``#/definitions/…``) and
only ``MAX_DEPTH`` deep; anything unreadable reads as "any".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object")
MAX_DEPTH = 8
MAX_CHOICES_SHOWN = 6


@dataclass(frozen=True)
class Shape:
    """What a property accepts, read from any of the spellings above."""

    types: tuple[str, ...] = ()
    """The JSON types besides null, in the schema's order; empty: any."""
    nullable: bool = False
    """``null`` is accepted (an optional value said the pydantic/schemars/OpenAPI way)."""
    choices: tuple[tuple[Any, str], ...] = ()
    """(value, label) when only listed values are accepted (``enum``, ``const``, ``oneOf`` of consts)."""
    items: Shape | None = None
    """An array's items."""
    schema: Mapping[str, Any] = field(default_factory=dict)
    """The branch that carries the details (bounds, format, title…): the one non-null one, ``$ref`` resolved."""


def read(prop: Any, root: Mapping[str, Any] | None = None, depth: int = 0) -> Shape:
    """The ``Shape`` of ``prop``; ``root`` is the whole schema its ``$ref``s point into."""
    if not isinstance(prop, Mapping) or depth > MAX_DEPTH:
        return Shape()
    prop = _resolved(prop, root or {}, depth)
    nullable = prop.get("nullable") is True
    kind = prop.get("type")
    types: list[str] = []
    if isinstance(kind, str):
        types = [kind]
    elif isinstance(kind, list):
        types = [k for k in kind if isinstance(k, str)]
    detail: Mapping[str, Any] = prop
    choices = _choices(prop)
    branches = _listed(prop.get("anyOf")) or _listed(prop.get("oneOf"))
    if not types and branches and not choices:
        readings = [read(branch, root, depth + 1) for branch in branches]
        for reading in readings:
            types += [k for k in reading.types if k not in types]
            nullable = nullable or reading.nullable or _is_null(reading)
        real = [r for r in readings if not _is_null(r)]
        if len(real) == 1:  # X or null: X's details (bounds, choices, items) are the property's
            one = real[0]
            return Shape(tuple(types), nullable, one.choices, one.items, one.schema)
        if real and all(r.choices for r in real):
            choices = tuple(c for r in real for c in r.choices)
    if "null" in types:
        nullable = True
        types = [k for k in types if k != "null"]
    if not types and choices:
        types = list(dict.fromkeys(_json_type(value) for value, _ in choices if value is not None))
    items = read(prop.get("items"), root, depth + 1) if "array" in types and "items" in prop else None
    return Shape(tuple(types), nullable, choices, items, detail)


def _is_null(shape: Shape) -> bool:
    return shape.nullable and not shape.types and not shape.choices


def _resolved(prop: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
    """``prop`` with a local ``$ref`` (or a lone ``allOf`` around one, as pydantic writes a described enum)
    replaced by what it points at; its own keys (description, default) win."""
    for _ in range(MAX_DEPTH - depth):
        all_of = _listed(prop.get("allOf"))
        if len(all_of) == 1 and isinstance(all_of[0], Mapping):
            prop = {**all_of[0], **{k: v for k, v in prop.items() if k != "allOf"}}
            continue
        ref = prop.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return prop
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, Mapping) else None
        if not isinstance(target, Mapping):
            return {k: v for k, v in prop.items() if k != "$ref"}
        # What it points at is a type's (pydantic titles the model or enum class): the property keeps its name.
        prop = {**{k: v for k, v in target.items() if k != "title"}, **{k: v for k, v in prop.items() if k != "$ref"}}
    return prop


def _choices(prop: Mapping[str, Any]) -> tuple[tuple[Any, str], ...]:
    if isinstance(values := prop.get("enum"), list):
        labels = prop.get("enumNames")
        if not (isinstance(labels, list) and len(labels) == len(values)):
            labels = [_label(v) for v in values]
        return tuple((v, str(label)) for v, label in zip(values, labels, strict=True))
    if "const" in prop:
        return ((prop["const"], str(prop.get("title") or _label(prop["const"]))),)
    branches = _listed(prop.get("oneOf")) or _listed(prop.get("anyOf"))
    if branches and all(isinstance(b, Mapping) and "const" in b for b in branches):
        return tuple((b["const"], str(b.get("title") or _label(b["const"]))) for b in branches)
    return ()


def _label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    kinds = {str: "string", float: "number", list: "array", dict: "object"}
    return next((kind for cls, kind in kinds.items() if isinstance(value, cls)), "null")


def accepted(shape: Shape) -> set[str]:
    """The JSON types a value may have (``null`` included when it is accepted); empty: any."""
    return set(shape.types) | ({"null"} if shape.nullable and shape.types else set())


def text(prop: Any, root: Mapping[str, Any] | None = None, *, optional: bool = False) -> str:
    """How a person writes the type: ``string``, ``string | integer``, ``"a" | "b"``, ``integer[]``, ``any``.

    ``null`` is left out for an ``optional`` property (the ``?`` after its name says it may be left out, which
    is what pydantic's and schemars' ``null`` means), and shown for a required one."""
    return _text(read(prop, root), optional=optional)


def _text(shape: Shape, *, optional: bool = False) -> str:
    if shape.choices:
        shown = [json.dumps(value) for value, _ in shape.choices[:MAX_CHOICES_SHOWN]]
        if len(shape.choices) > MAX_CHOICES_SHOWN:
            shown.append(f"… ({len(shape.choices)} values)")
        parts = shown
    else:
        parts = [_one(kind, shape) for kind in shape.types] or ["any"]
    if shape.nullable and not optional and parts != ["any"]:
        parts.append("null")
    return " | ".join(parts)


def _one(kind: str, shape: Shape) -> str:
    if kind != "array":
        return kind
    inner = _text(shape.items, optional=True) if shape.items is not None else "any"
    return f"({inner})[]" if " | " in inner else f"{inner}[]"


def plain(prop: Any, root: Mapping[str, Any] | None = None) -> Any:
    """``prop`` rewritten as a flat form field is read (``forms``): one ``type``, the choices as ``enum`` (with
    ``enumNames``) or as ``oneOf`` const/title pairs, an array's items likewise; the null branch of an optional
    value dropped. A union of several types keeps ``string`` when it is one of them (any text is then a value),
    else the first. Anything else is returned as it was."""
    if not isinstance(prop, Mapping) or _already_plain(prop):
        return prop  # as it is: forms judges it (a bad enumNames, a bound of the wrong type) as before
    shape = read(prop, root)
    if not shape.types:
        return dict(prop) if "type" in prop else prop
    flat = {k: v for k, v in shape.schema.items() if k not in ("anyOf", "oneOf", "nullable", "$ref", "allOf")}
    for key in ("title", "description", "default"):  # the outer schema's words win over a referenced one's
        if key in prop:
            flat[key] = prop[key]
    flat["type"] = _field_type(shape)
    flat.pop("const", None)
    if shape.choices and flat["type"] in ("string", "integer", "number"):
        flat.pop("enum", None)
        flat.pop("enumNames", None)
        flat["oneOf"] = [{"const": value, "title": label} for value, label in shape.choices if value is not None]
    if shape.items is not None:
        items: dict[str, Any] = {"type": _field_type(shape.items)} if shape.items.types else {}
        if shape.items.choices:
            items["anyOf"] = [{"const": value, "title": label} for value, label in shape.items.choices]
        flat["items"] = items
    return flat


def _field_type(shape: Shape) -> str:
    """The one type a field of a union asks for: ``string`` when it is one of them (any text is a value), else the
    first."""
    return "string" if "string" in shape.types else shape.types[0]


_SPELLINGS = frozenset({"anyOf", "oneOf", "allOf", "$ref", "nullable", "const"})


def _already_plain(prop: Mapping[str, Any]) -> bool:
    """One type named by a string, no other spelling of a union, a null or a choice (``oneOf`` of a string is a
    titled enum, plain already); the items of an array likewise."""
    if not isinstance(prop.get("type"), str) or _SPELLINGS & (
        set(prop) - {"oneOf"} if prop["type"] == "string" else set(prop)
    ):
        return False
    items = prop.get("items")
    return not isinstance(items, Mapping) or "type" not in items or isinstance(items["type"], str)
