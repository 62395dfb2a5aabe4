"""Raw servers that misbehave on purpose (no SDK): each breaks one rule a client must survive.

stdio: ``python tests/hostile.py KIND [--size BYTES]``; HTTP on 127.0.0.1: ``... KIND --http PORT``. A round
KIND asks only the requests named by ``--only KEY`` when that is given.

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

Inside the multi-round loop (``tools/call`` answers an ``InputRequiredResult``; ``ROUNDS`` below):

- ``many_requests``: ``--size`` form requests in one round.
- ``empty_round``: an ``inputRequests`` map that is empty and no ``requestState``, every time.
- ``nul``: a NUL character in a key, a message, a field name and title, and the ``requestState``.
- ``state_only``: "not finished yet" (a ``requestState`` with escapes, no request), forever.
- ``escaped_keys``: request keys with ANSI, OSC 8, C1 and bidi controls, and one ``--size`` characters long.
- ``bad_schemas``: form schemas a flat form cannot hold (nested, ``required`` naming absent fields, ``minimum``
  over ``maximum``, unknown types, ``pattern`` that is catastrophic or invalid, an enum of ``--size`` values,
  escapes in property names, a ``--size`` title), one request each.
- ``shapeless``: form schemas that are not shaped like schemas at all (``properties`` holding numbers, ``required``
  a number, a string or a list of objects, ``type`` ``array``).
- ``impossible_form``: one form whose one field has ``minimum`` 10 over ``maximum`` 1.
- ``unknown_method``: an input request whose ``method`` no client knows, beside a good one.
- ``malformed_request``: input requests with ``params`` not an object, and with no ``method``.
- ``huge_state``: a ``requestState`` of ``--size`` bytes with one question; accepts its echo.
- ``number_state``: a ``requestState`` that is a number.
- ``endless``: a fresh ``requestState`` and the same question every round, forever.
- ``same_again``: after being answered, asks the same question again, forever.
- ``error_retry``: the retry (with answers) gets a JSON-RPC error with escapes in its message.
- ``garbage_retry``: the retry gets a result that is not a result (a list).
- ``weird_type``: ``resultType`` ``"weird"``.
- ``bad_urls``: URL-mode requests for ``javascript:``, ``file:`` and ``data:`` URLs, one with escapes and one
  ``--size`` characters long.
- ``sampling``: a sampling request with an absurd ``maxTokens``, ``--size`` messages and tool definitions.
- ``sampling_bad_tool``: the same, offering a tool whose name holds escapes (no LLM provider takes it).
- ``roots``: a ``roots/list`` request; the result lists the roots it was given.
- ``unknown_content``: no question; a result whose one content item has a type no one knows.
- ``bad_content``: no question; a result with an image of invalid base64, an embedded resource with control
  characters and ``structuredContent`` nested ``--size`` deep.
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
        params = message.get("params") or {}
        if (special := retry_reply(kind, rid, params)) is not None:
            return special
        if (multi := rounds(kind, params, size)) is not None:
            if ONLY and isinstance(multi.get("inputRequests"), dict):
                multi["inputRequests"] = {k: v for k, v in multi["inputRequests"].items() if k in ONLY}
            return {"jsonrpc": "2.0", "id": rid, "result": multi}
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


# --- inside the multi-round loop ---------------------------------------------------------------------------------

ESC = "\x1b[2J\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\\x9b31m\u202e"
"""Escapes a key, a name or a message may carry: clear screen, an OSC 8 link, a C1 CSI, a bidi override."""


def _form(message: str, properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def _asking(requests: dict[str, Any] | None, state: Any = None) -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "input_required"}
    if requests is not None:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return result


def _done(text: str) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}]}


REGION = {"region": {"type": "string"}}
ONLY: list[str] = []
"""``--only KEY`` (repeatable): a round KIND asks only these of its requests."""


def rounds(kind: str, params: dict[str, Any], size: int) -> dict[str, Any] | None:
    """The ``tools/call`` result of a multi-round KIND (None: not one of them)."""
    responses = params.get("inputResponses")
    state = params.get("requestState")
    answered = "answers: " + json.dumps(responses, sort_keys=True)
    if kind == "many_requests":
        return _done(answered) if responses else _asking({f"q{i}": _form(f"Q{i}", REGION) for i in range(size)}, "s")
    if kind == "empty_round":
        return _asking({})
    if kind == "nul":
        ask = _form(f"Say\x00{ESC}", {"re\x00gion": {"type": "string", "title": "T\x00"}})
        return _done(answered) if responses else _asking({"k\x00ey": ask}, "st\x00ate")
    if kind == "state_only":
        return _asking(None, f"not yet {ESC}")
    if kind == "escaped_keys":
        keys = [f"key{ESC}", "k" * size]
        return _done(answered) if responses else _asking({key: _form(f"Say {ESC}", REGION) for key in keys}, "s")
    if kind == "bad_schemas":
        schemas: dict[str, dict[str, Any]] = {
            "nested": _form("nested", {"deep": {"type": "object", "properties": {"x": {"type": "string"}}}}),
            "absent": _form("absent", REGION, required=["region", "ghost"]),
            "inverted": _form("inverted", {"n": {"type": "integer", "minimum": 10, "maximum": 1}}),
            "untyped": _form("untyped", {"what": {"title": "no type"}, "odd": {"type": "quaternion"}}),
            "redos": _form("redos", {"word": {"type": "string", "pattern": "^(a+)+$"}}),
            "badregex": _form("badregex", {"word": {"type": "string", "pattern": "(unclosed[", "format": "x-odd"}}),
            "wrongdefault": _form("wrongdefault", {"n": {"type": "integer", "default": "ten"}}),
            "bigenum": _form("bigenum", {"pick": {"type": "string", "enum": [f"v{i}" for i in range(size)]}}),
            "escnames": _form("escnames", {f"name{ESC}": {"type": "string", "title": f"T{ESC}"}}),
            "bigtitle": _form("bigtitle", {"t": {"type": "string", "title": "T" * size, "description": "D" * size}}),
        }
        return _done(answered) if responses else _asking(schemas, "s")
    if kind == "shapeless":
        schemas = {
            "numrequired": {"type": "object", "properties": {"a": {"type": "string"}}, "required": 5},
            "dictrequired": {"type": "object", "properties": {"a": {"type": "string"}}, "required": [{"x": 1}]},
            "array": {"type": "array", "items": {"type": "string"}},
            "propnumber": {"properties": {"a": 7, "b": None}},
            "strrequired": {"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"},
        }
        asks = {
            key: {"method": "elicitation/create", "params": {"mode": "form", "message": key, "requestedSchema": schema}}
            for key, schema in schemas.items()
        }
        return _done(answered) if responses else _asking(asks, "s")
    if kind == "impossible_form":
        ask = _form(f"Pick {ESC}", {"n": {"type": "integer", "minimum": 10, "maximum": 1}})
        return _done(answered) if responses else _asking({"pick": ask}, "s")
    if kind == "unknown_method":
        weird = {"method": f"telepathy/read{ESC}", "params": {"mind": "yours"}}
        return _done(answered) if responses else _asking({"ok": _form("fine", REGION), "weird": weird}, "s")
    if kind == "malformed_request":
        broken = {"a": {"method": "elicitation/create", "params": "not an object"}, "b": {"params": {"x": 1}}, "c": 7}
        return _done(answered) if responses else _asking(broken, "s")
    if kind == "huge_state":
        big = "S" * size
        if responses:
            return _done(f"state echoed whole: {state == big}; " + answered)
        return _asking({"ask": _form("Region?", REGION)}, big)
    if kind == "number_state":
        return _done(answered) if responses else _asking({"ask": _form("Region?", REGION)}, 12345)
    if kind == "endless":
        n = int(state or "0") + 1
        return _asking({"ask": _form("Region?", REGION)}, str(n))
    if kind == "same_again":
        return _asking({"ask": _form("Region?", REGION)}, "again")
    if kind == "weird_type":
        return {"resultType": "weird", "content": [{"type": "text", "text": "?"}], "inputRequests": {}}
    if kind == "bad_urls":
        urls = {
            "js": "javascript:alert(document.cookie)",
            "file": "file:///etc/passwd",
            "data": "data:text/html,<script>alert(1)</script>",
            "esc": f"https://ok.example/{ESC}",
            "long": "https://long.example/" + "p" * size,
        }
        requests = {
            key: {
                "method": "elicitation/create",
                "params": {"mode": "url", "message": f"Open {key}", "url": url, "elicitationId": key},
            }
            for key, url in urls.items()
        }
        return _done(answered) if responses else _asking(requests, "s")
    if kind in ("sampling", "sampling_bad_tool"):
        messages = [{"role": "user", "content": {"type": "text", "text": f"m{i} {ESC}"}} for i in range(size)]
        name = f"look{ESC}" if kind == "sampling_bad_tool" else "lookup"
        tools = [{"name": name, "description": f"Look {ESC}", "inputSchema": {"type": "object"}}]
        request = {
            "method": "sampling/createMessage",
            "params": {"messages": messages, "maxTokens": 10**15, "tools": tools, "systemPrompt": ESC},
        }
        return _done(answered) if responses else _asking({"llm": request}, "s")
    if kind == "roots":
        return _done(answered) if responses else _asking({"where": {"method": "roots/list"}}, "s")
    if kind == "unknown_content":
        return {"resultType": "complete", "content": [{"type": "hologram", "text": f"unknown {ESC}"}]}
    if kind == "bad_content":
        nested: Any = "bottom"
        for _ in range(size):
            nested = {"d": nested}
        content = [
            {"type": "image", "data": "%%% not base64 %%%", "mimeType": f"image/png{ESC}"},
            {"type": "resource", "resource": {"uri": f"file:///x{ESC}", "text": f"embedded {ESC}"}},
            {"type": "text", "text": f"plain {ESC}"},
        ]
        return {"resultType": "complete", "content": content, "structuredContent": nested}
    return None


def retry_reply(kind: str, rid: Any, params: dict[str, Any]) -> dict[str, Any] | None:
    """What ``error_retry`` and ``garbage_retry`` send instead of a result once answered (None: nothing special)."""
    if kind not in ("error_retry", "garbage_retry"):
        return None
    if not params.get("inputResponses"):
        return {"jsonrpc": "2.0", "id": rid, "result": _asking({"ask": _form("Region?", REGION)}, "s")}
    if kind == "error_retry":
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": f"no {ESC}", "data": ESC}}
    return {"jsonrpc": "2.0", "id": rid, "result": ["not", "a", "result"]}


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
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    ONLY.extend(args.only)
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()))
    if args.http:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        http(args.kind, args.http, args.size)
    else:
        stdio(args.kind, args.size, args.record)


if __name__ == "__main__":
    main()
