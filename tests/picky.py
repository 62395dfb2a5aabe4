"""Raw stdio servers (no SDK) that are strict about their first message, as rmcp (the Rust SDK) is: it ends the
process when the first message is not ``initialize``. ``python tests/picky.py KIND [--record FILE]``; ``--record``
gets each method the process is sent, one a line, after a ``start`` line for each process.

- ``exits``: exits (status 1, one line on stderr) on any first message other than ``initialize``.
- ``refuses_32600``: answers a first message other than ``initialize`` with -32600, and every later message of this
  process too (its state is spoiled): only a fresh process takes the handshake.
- ``refuses_32603``: answers a first message other than ``initialize`` with -32603, then exits.
- ``dies``: exits on any first message, ``initialize`` too (a server that cannot start at all), after a line
  on stderr.

Once initialized each is a 2025-11-25 server with one tool, ``echo(text)``.

Two more take the probe as most servers do (-32601), and ask for sampling mid-call (``tools/call summarize``):

- ``samples``: when the client refuses, it finishes anyway: "no summary (the client said: ...)".
- ``samples_then_fails``: when the client refuses, the call fails with a JSON-RPC error.

Either, given a completion, returns "summary: <its text>"; with ``--strict`` either exits on a first message other
than ``initialize``, as ``exits`` does.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TOOL = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": ["string", "null"]}}, "required": ["text"]},
}

SUMMARIZE = {"name": "summarize", "inputSchema": {"type": "object", "properties": {}}}


def reply(rid: Any, result: dict[str, Any] | None = None, *, code: int = 0, message: str = "") -> None:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
    body |= {"result": result} if code == 0 else {"error": {"code": code, "message": message}}
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind")
    parser.add_argument("--record", type=Path)
    parser.add_argument(
        "--strict", action="store_true", help="the samples kinds exit on a first message but initialize"
    )
    args = parser.parse_args()
    if args.record:
        with args.record.open("a") as f:
            f.write("start\n")
    first = True
    spoiled = False
    asking = args.kind.startswith("samples")
    calls: dict[str, Any] = {}
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if method is None and rid in calls:  # the client's answer to our sampling request
            call_id = calls.pop(rid)
            if "result" in message:
                content = message["result"].get("content") or {}
                reply(call_id, {"content": [{"type": "text", "text": f"summary: {content.get('text')}"}]})
            elif args.kind == "samples":
                said = (message.get("error") or {}).get("message")
                reply(call_id, {"content": [{"type": "text", "text": f"no summary (the client said: {said})"}]})
            else:
                reply(call_id, code=-32603, message="sampling was refused: cannot summarize")
            continue
        if asking and first and method != "initialize":
            if args.strict:
                raise SystemExit(1)
            reply(rid, code=-32601, message="Method not found")
            continue
        if args.record:
            with args.record.open("a") as f:
                f.write(f"{method}\n")
        if first and not asking and (method != "initialize" or args.kind == "dies"):
            sys.stderr.write(f"Error: expect initialized request, but received: {method}\n")
            if args.kind in ("exits", "dies"):
                raise SystemExit(1)
            code = -32600 if args.kind == "refuses_32600" else -32603
            reply(rid, code=code, message=f"expected initialize, got {method}")
            if args.kind == "refuses_32603":
                raise SystemExit(1)
            spoiled = True
        elif spoiled:
            if rid is not None:
                reply(rid, code=-32600, message="this connection already failed")
        elif rid is None:
            pass  # notifications/initialized
        elif method == "initialize":
            info = {"name": f"picky-{args.kind}", "version": "1"}
            reply(rid, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info})
        elif method == "tools/list":
            reply(rid, {"tools": [SUMMARIZE if asking else TOOL]})
        elif method == "tools/call" and asking:
            calls[f"s{rid}"] = rid
            ask = {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Summarize MCP."}}],
                "maxTokens": 50,
            }
            sys.stdout.write(
                json.dumps({"jsonrpc": "2.0", "id": f"s{rid}", "method": "sampling/createMessage", "params": ask})
            )
            sys.stdout.write("\n")
            sys.stdout.flush()
        elif method == "tools/call":
            text = ((message.get("params") or {}).get("arguments") or {}).get("text")
            reply(rid, {"content": [{"type": "text", "text": f"echo: {text}"}]})
        elif method == "ping":
            reply(rid, {})
        else:
            reply(rid, code=-32601, message="Method not found")
        first = False


if __name__ == "__main__":
    main()
