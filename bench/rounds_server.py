"""A bench server: ``survey(count)`` asks ``count`` questions, one round each, then finishes.

Every round is one form (a single string field, ``value``) keyed ``q0``, ``q1``, …; the number answered so far
travels in ``request_state`` (sealed by the SDK). One preset (``--answer value=x``) answers every round, so a
flow of any length runs unattended — the per-round cost of a hand-run loop, measured against the SDK's own.

    python bench/rounds_server.py --http 127.0.0.1:PORT [--delay SECONDS]

``--delay``: each call waits that long before it answers — a server that is not on this machine, or does work.
"""

from __future__ import annotations

import argparse
import json

import anyio
import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity

SCHEMA = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


def build_server(delay: float = 0.0) -> MCPServer:
    server = MCPServer("rounds", request_state_security=RequestStateSecurity.ephemeral(ttl=600.0))

    @server.tool()
    async def survey(count: int, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Ask ``count`` questions, one per round."""
        if delay:
            await anyio.sleep(delay)
        done = int(json.loads(ctx.request_state)["done"]) if ctx.request_state else 0
        if ctx.input_responses:
            done += 1
        if done >= count:
            return t.CallToolResult(content=[t.TextContent(type="text", text=f"answered {done}")])
        question = t.ElicitRequest(
            params=t.ElicitRequestFormParams(message=f"Question {done}?", requested_schema=SCHEMA)
        )
        return t.InputRequiredResult(input_requests={f"q{done}": question}, request_state=json.dumps({"done": done}))

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", metavar="HOST:PORT", required=True)
    parser.add_argument("--delay", type=float, default=0.0, metavar="SECONDS", help="wait this long in each call")
    args = parser.parse_args()
    host, _, port = args.http.rpartition(":")
    server = build_server(args.delay)
    anyio.run(lambda: server.run_streamable_http_async(host=host or "127.0.0.1", port=int(port)))


if __name__ == "__main__":
    main()
