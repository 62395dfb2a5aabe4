"""Small purpose-built MCP servers for the tests, built with the SDK's MCPServer.

Run one: ``python tests/servers.py KIND [--http HOST:PORT] [--record FILE]`` (stdio by default).

- ``never_stops``: a tool that asks a question on every round, forever.
- ``hostile``: names, messages and results full of escape sequences, bidi controls and Rich markup.
- ``recorder``: a two-round tool that appends each leg's JSON-RPC id and arguments to ``--record``
  (``--slow S``: it takes S seconds to answer the second leg).
- ``vault``: asks for a password, then a confirmation, and says which password arrived.
- ``no_result_type``: a raw JSON-RPC stdio server whose complete result omits ``resultType``.
- ``crash``: writes to stderr and exits at once (a server that fails to start).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer

EVIL = (
    "\x1b[31mRED\x1b[0m \x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \u202eevil\u202c"
    " [bold red]markup[/bold red] \x9b2J"
)


def _form(message: str, name: str, schema: dict[str, Any] | None = None) -> t.ElicitRequest:
    props = {name: schema or {"type": "string"}}
    params = t.ElicitRequestFormParams(
        message=message, requested_schema={"type": "object", "properties": props, "required": [name]}
    )
    return t.ElicitRequest(params=params)


def never_stops() -> MCPServer:
    server = MCPServer("never-stops")

    @server.tool()
    async def forever(ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks again on every round."""
        n = int(ctx.request_state or 0) + 1
        return t.InputRequiredResult(input_requests={"again": _form(f"Question {n}?", "x")}, request_state=str(n))

    return server


def hostile() -> MCPServer:
    server = MCPServer("hostile" + EVIL)

    @server.tool(description="A tool " + EVIL)
    async def trap(ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks with hostile text, then answers with it."""
        answer = (ctx.input_responses or {}).get("q")
        if isinstance(answer, t.ElicitResult) and answer.action == "accept":
            return t.CallToolResult(content=[t.TextContent(type="text", text="result " + EVIL)])
        schema = {"type": "string", "title": "Title " + EVIL, "enum": ["a" + EVIL, "b"]}
        return t.InputRequiredResult(input_requests={"q": _form("Message " + EVIL, "choice", schema)})

    @server.tool()
    async def fail() -> str:
        """Raises with hostile text."""
        raise ValueError("boom " + EVIL)

    return server


def recorder(record: Path, slow: float = 0.0) -> MCPServer:
    server = MCPServer("recorder")

    @server.tool()
    async def two_rounds(item: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Records every leg; asks one question (and with --slow, takes its time to answer it)."""
        with record.open("a") as f:
            f.write(json.dumps({"id": ctx.request_id, "item": item, "state": ctx.request_state}) + "\n")
        answer = (ctx.input_responses or {}).get("ok")
        if isinstance(answer, t.ElicitResult) and answer.action == "accept":
            await anyio.sleep(slow)
            return t.CallToolResult(content=[t.TextContent(type="text", text=f"recorded {item}")])
        return t.InputRequiredResult(
            input_requests={"ok": _form("Record it?", "sure", {"type": "boolean"})}, request_state="asked"
        )

    return server


def vault() -> MCPServer:
    """Asks for a password, then a confirmation; says what it received (so tests can see the real value arrived)."""
    server = MCPServer("vault")

    @server.tool()
    async def unlock(door: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Two rounds: credentials (a password field), then a confirmation."""
        answers = json.loads(ctx.request_state or "{}")
        for key, response in (ctx.input_responses or {}).items():
            if isinstance(response, t.ElicitResult):
                answers[key] = response.model_dump(mode="json", exclude_none=True)
        creds = (answers.get("creds") or {}).get("content")
        if not creds:
            schema = {
                "type": "object",
                "properties": {"user": {"type": "string"}, "password": {"type": "string", "title": "Password"}},
                "required": ["user", "password"],
            }
            ask = t.ElicitRequest(params=t.ElicitRequestFormParams(message="Credentials?", requested_schema=schema))
            return t.InputRequiredResult(input_requests={"creds": ask}, request_state=json.dumps(answers))
        if not (answers.get("sure") or {}).get("content"):
            ask = _form(f"Unlock {door}?", "yes", {"type": "boolean"})
            return t.InputRequiredResult(input_requests={"sure": ask}, request_state=json.dumps(answers))
        text = f"unlocked {door} for {creds['user']} with {creds['password']}"
        return t.CallToolResult(content=[t.TextContent(type="text", text=text)])

    return server


def no_result_type() -> None:
    """A raw stdio JSON-RPC server (not the SDK): its complete tools/call result has no ``resultType``."""
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        result: dict[str, Any]
        if method == "server/discover":
            result = {
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bare", "version": "1"},
                "ttlMs": 0,
                "cacheScope": "public",
            }
        elif method == "tools/list":
            tool = {"name": "plain", "inputSchema": {"type": "object", "properties": {}}}
            result = {"resultType": "complete", "tools": [tool], "ttlMs": 0, "cacheScope": "public"}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "complete without resultType"}]}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}
            print(json.dumps(reply), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind")
    parser.add_argument("--http")
    parser.add_argument("--record", type=Path)
    parser.add_argument("--slow", type=float, default=0.0)
    args = parser.parse_args()
    if args.kind == "crash":
        sys.stderr.write("fatal: missing DATABASE_URL\n")
        raise SystemExit(1)
    if args.kind == "no_result_type":
        no_result_type()
        return
    server = {"never_stops": never_stops, "hostile": hostile, "vault": vault}.get(args.kind)
    built = recorder(args.record, args.slow) if args.kind == "recorder" else server() if server else None
    if built is None:
        raise SystemExit(f"unknown server kind {args.kind}")
    if args.http:
        host, _, port = args.http.rpartition(":")
        anyio.run(lambda: built.run_streamable_http_async(host=host, port=int(port)))
    else:
        anyio.run(built.run_stdio_async)


if __name__ == "__main__":
    main()
