"""A raw 2026-07-28 stdio server (no SDK) whose tools have input schemas the SDK lets through but JSON Schema does
not mean: ``properties`` a list, a property a string, ``required`` a name or a list of lists, a list of types, a
pattern no regex engine compiles, a bound of the wrong type. Its one tool answers with the arguments it got."""

import json
import sys

TOOLS = [
    {"name": "listed", "inputSchema": {"type": "object", "properties": ["x"], "required": [["x"]]}},
    {
        "name": "loose",
        "inputSchema": {
            "type": "object",
            "properties": {"p": "not a schema", "q": {"type": ["string", "null"]}, "r": {"anyOf": 5, "enum": 7}},
            "required": "p",
        },
    },
    {
        "name": "broken",
        "inputSchema": {
            "type": "object",
            "properties": {"s": {"type": "string", "pattern": "(unclosed"}, "n": {"type": "integer", "minimum": "x"}},
        },
    },
    {"name": "open", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}},
    {
        "name": "closed",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": False},
    },
]


def result(method: str, params: dict) -> dict:
    if method == "server/discover":
        return {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "odd-schemas", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    return {"content": [{"type": "text", "text": json.dumps(params.get("arguments"), sort_keys=True)}]}


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] not in ("server/discover", "tools/list", "tools/call"):
        reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
    else:
        body = {"resultType": "complete", "ttlMs": 0, "cacheScope": "public"}
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": body | result(message["method"], message["params"])}
    print(json.dumps(reply), flush=True)
