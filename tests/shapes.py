"""Property schemas as the SDKs write them (schemars for rmcp, pydantic, zod, Go, C#), for the table test in
tests/test_schema_shapes.py; run as a script it is a raw 2025-11-25 stdio server listing them as tools:
``shapes`` (every property, all optional), ``rust_like`` and ``union`` (what the snapshot shows), each answering
with the arguments it got."""

# ruff: noqa: E501  (the table reads best one case a line)
from __future__ import annotations

import json
import sys
from typing import Any, NamedTuple

DEFS = {"Color": {"title": "Color", "type": "string", "enum": ["red", "green"]}}


class Case(NamedTuple):
    name: str
    """The property's name (and the test's id)."""
    sdk: str
    prop: dict[str, Any]
    required: bool
    listed: str
    """How ``mcpcli tools`` shows it: ``name?: type``."""
    raw: str
    """An ``--arg`` value (and an inline prompt's answer)…"""
    value: Any
    """… and what it is sent as."""
    field: str | None
    """The form field's kind (inline prompt, app form); None: a form cannot hold it (``--args`` JSON then)."""


CASES = [
    Case("timezone", "schemars Option<String>", {"type": ["string", "null"]}, False, "timezone?: string", "012", "012", "string"),
    Case("limit", "schemars Option<i64>", {"type": ["integer", "null"], "format": "int64"}, False, "limit?: integer", "5", 5, "integer"),
    Case("note", "pydantic Optional[str] = None", {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Note"}, False, "note?: string", "7", "7", "string"),
    Case("count", "pydantic Optional[conint(ge=1)]", {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}, False, "count?: integer", "3", 3, "integer"),
    Case("id", "zod z.union([z.string(), z.number()])", {"anyOf": [{"type": "string"}, {"type": "number"}]}, True, "id: string | number", "12", 12, "string"),
    Case("key", "schemars untagged enum / Go any", {"type": ["integer", "string"]}, True, "key: integer | string", "012", "012", "string"),
    Case("alias", "OpenAPI nullable", {"type": "string", "nullable": True}, False, "alias?: string", "x", "x", "string"),
    Case("version", "zod z.literal / pydantic Literal", {"const": "v1"}, True, 'version: "v1"', "v1", "v1", "select"),
    Case("level", "titled enum (oneOf const/title)", {"type": "string", "oneOf": [{"const": "lo", "title": "Low"}, {"const": "hi", "title": "High"}]}, False, 'level?: "lo" | "hi"', "hi", "hi", "select"),
    Case("size", "C# enum with enumNames", {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]}, False, 'size?: "s" | "m"', "m", "m", "select"),
    Case("color", "pydantic Enum ($ref)", {"$ref": "#/$defs/Color"}, True, 'color: "red" | "green"', "green", "green", "select"),
    Case("shade", "pydantic Optional[Enum]", {"anyOf": [{"$ref": "#/$defs/Color"}, {"type": "null"}], "default": None}, False, 'shade?: "red" | "green"', "red", "red", "select"),
    Case("tags", "zod z.array(z.string())", {"type": "array", "items": {"type": "string"}}, False, "tags?: string[]", '["a", "b"]', ["a", "b"], None),
    Case("picks", "multi-select (array of enum)", {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}, False, 'picks?: ("a" | "b")[]', '["b"]', ["b"], "multiselect"),
    Case("maybe", "pydantic Optional[list[str]]", {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}, False, "maybe?: string[]", '["z"]', ["z"], None),
    Case("address", "Go struct / nested object", {"type": "object", "properties": {"city": {"type": "string"}}}, False, "address?: object", '{"city": "Oslo"}', {"city": "Oslo"}, None),
    Case("ratio", "Go float64", {"type": "number"}, True, "ratio: number", "1.5", 1.5, "number"),
]  # fmt: skip


def schema(*cases: Case) -> dict[str, Any]:
    """An ``inputSchema`` (or ``requestedSchema``) holding ``cases``."""
    return {
        "type": "object",
        "properties": {case.name: case.prop for case in cases},
        "required": [case.name for case in cases if case.required],
        "$defs": DEFS,
    }


def _tools() -> list[dict[str, Any]]:
    every = schema(*CASES)
    every["required"] = []
    by_name = {case.name: case for case in CASES}
    return [
        {"name": "shapes", "inputSchema": every},
        {"name": "rust_like", "inputSchema": schema(*(by_name[n] for n in ("timezone", "limit", "ratio")))},
        {"name": "union", "inputSchema": schema(*(by_name[n] for n in ("key", "note", "level", "shade", "picks")))},
    ]


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
        if method == "initialize":
            info = {"name": "shapes", "version": "1"}
            reply["result"] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info}
        elif method == "tools/list":
            reply["result"] = {"tools": _tools()}
        elif method == "tools/call":
            arguments = (message.get("params") or {}).get("arguments")
            reply["result"] = {"content": [{"type": "text", "text": json.dumps(arguments, sort_keys=True)}]}
        else:
            reply["error"] = {"code": -32601, "message": "Method not found"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
