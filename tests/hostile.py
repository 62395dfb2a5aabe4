"""Raw servers that misbehave on purpose (no SDK): each breaks one rule a client must survive.

stdio: ``python tests/hostile.py KIND [--size BYTES]``; HTTP on 127.0.0.1: ``... KIND --http PORT``.

- ``silent``: reads its stdin and never answers anything (a server stuck before ``initialize``).
- ``junk``: prints lines that are not JSON-RPC, then sleeps.
- ``huge``: answers ``tools/call`` with a text result of ``--size`` bytes (one line; over HTTP one JSON body
  sent in chunks, without a Content-Length).
- ``big_error``: answers ``tools/call`` with a JSON-RPC error whose message is ``--size`` characters long.
- ``no_cache_hints``: a 2026-07-28 server whose listing leaves out ``ttlMs`` and ``cacheScope``.
- ``drift``: a 2026-07-28 server whose listing has a tool without ``inputSchema`` (the SDK rejects it); its
  tool says what arguments arrived.
- ``url_required``: answers ``tools/call`` with -32042 "URL elicitation required", carrying two URLs.
- ``stubborn``: answers like ``huge`` but ignores the end of its stdin (it keeps sleeping), so only being
  terminated stops it; it writes its pid to ``--pid-file``.
- ``legacy``: a pre-2026 server: refuses ``server/discover``, answers ``initialize``; ``--record FILE`` gets
  each method it is sent, one a line.
- ``keepalive``: HTTP only; answers ``tools/call`` with an SSE stream of comments, forever.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODERN = "2026-07-28"
TOOL = {"name": "work", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}


def _discover() -> dict[str, Any]:
    return {
        "resultType": "complete",
        "supportedVersions": [MODERN],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "hostile", "version": "1"},
        "ttlMs": 0,
        "cacheScope": "public",
    }


def answer(kind: str, message: dict[str, Any], size: int) -> dict[str, Any] | None:
    """The reply to one request (None: no reply)."""
    method, rid = message.get("method"), message.get("id")
    if rid is None or kind in ("silent", "junk"):
        return None
    if method == "server/discover" and kind != "legacy":
        return {"jsonrpc": "2.0", "id": rid, "result": _discover()}
    if method == "initialize" and kind == "legacy":
        info = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "old", "version": "1"},
        }
        return {"jsonrpc": "2.0", "id": rid, "result": info}
    if method == "tools/list":
        tools: list[dict[str, Any]] = [TOOL]
        listing: dict[str, Any] = {"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "public"}
        if kind in ("no_cache_hints", "legacy"):
            del listing["ttlMs"], listing["cacheScope"]
        if kind == "legacy":
            del listing["resultType"]
        if kind == "drift":
            tools[0] = {"name": "work", "description": 42}
        return {"jsonrpc": "2.0", "id": rid, "result": listing}
    if method == "tools/call":
        if kind == "big_error":
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "E" * size}}
        if kind == "url_required":
            elicitations = [
                {
                    "mode": "url",
                    "message": "Sign in",
                    "url": "https://auth.example.com/start?x=1",
                    "elicitationId": "a",
                },
                {"mode": "url", "message": "Pay", "url": "http://xn--pple-43d.example/pay", "elicitationId": "b"},
            ]
            error = {"code": -32042, "message": "URL elicitation required", "data": {"elicitations": elicitations}}
            return {"jsonrpc": "2.0", "id": rid, "error": error}
        text = (
            "x" * size
            if kind in ("huge", "stubborn")
            else "arguments: " + json.dumps(message["params"].get("arguments"))
        )
        result = {"resultType": "complete", "content": [{"type": "text", "text": text}]}
        return {"jsonrpc": "2.0", "id": rid, "result": result}
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}


def stdio(kind: str, size: int, record: str | None) -> None:
    if kind == "junk":
        print("Starting server... (this is not JSON-RPC)", flush=True)
        print("{not json either", flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        if record:
            with Path(record).open("a") as f:
                f.write(f"{message.get('method')}\n")
        reply = answer(kind, message, size)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    if kind in ("silent", "junk", "stubborn"):
        time.sleep(3600)  # stdin closed: a well-behaved server exits here; these do not


def http(kind: str, port: int, size: int) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self) -> None:
            self.do_GET()

        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if message.get("method") == "tools/call" and kind == "keepalive":
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                try:
                    for _ in range(100_000):  # bounded, as every test server's loop: about 28 hours of comments
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                        time.sleep(1)
                except OSError:
                    return
                return
            reply = answer(kind, message, size)
            if reply is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for start in range(0, len(body), 1 << 16):
                    piece = body[start : start + (1 << 16)]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                return

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind")
    parser.add_argument("--http", type=int)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--pid-file")
    parser.add_argument("--record")
    args = parser.parse_args()
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()))
    if args.http:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        http(args.kind, args.http, args.size)
    else:
        stdio(args.kind, args.size, args.record)


if __name__ == "__main__":
    main()
