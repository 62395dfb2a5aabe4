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


def reply(rid: Any, result: dict[str, Any] | None = None, *, code: int = 0, message: str = "") -> None:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
    body |= {"result": result} if code == 0 else {"error": {"code": code, "message": message}}
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind")
    parser.add_argument("--record", type=Path)
    args = parser.parse_args()
    if args.record:
        with args.record.open("a") as f:
            f.write("start\n")
    first = True
    spoiled = False
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if args.record:
            with args.record.open("a") as f:
                f.write(f"{method}\n")
        if first and (method != "initialize" or args.kind == "dies"):
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
            reply(rid, {"tools": [TOOL]})
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
