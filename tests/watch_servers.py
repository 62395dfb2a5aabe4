"""Servers that change things, for the ``mcpcli watch`` tests.

Run one: ``python tests/watch_servers.py KIND [--http HOST:PORT] [options]`` (stdio by default).

- ``ticker``: an SDK lowlevel ``Server`` speaking both eras. 2026-07-28 clients listen through the SDK's own
  ``ListenHandler`` over an ``InMemorySubscriptionBus``; older ones get ``resources/subscribe`` /
  ``unsubscribe`` handlers and the ``notifications/resources/updated`` / ``…/list_changed`` notifications (on
  stdio, or on the HTTP GET stream). Once someone listens or subscribes (or pings: a pre-2026 watch of lists only
  subscribes nothing), it makes one change every ``--every`` seconds, in this cycle (step n counts from 1):
  ``note://a`` becomes ``a v{n}`` (updated), ``note://b`` becomes ``b v{n}``, the tool ``extra{n}`` is added
  (tools changed), the resource ``note://r{n}`` replaces the one added before (resources changed),
  ``blob://c`` gets {n} bytes (updated). ``--die-after N``: the process exits after its N-th change (a crash
  mid-watch). ``--subscribe-refuses URI``: before 2026 that subscription is refused. ``--big CHARS``: ``note://a``
  is one line of that many more characters.
- ``rogue``: raw JSON-RPC on stdio (both eras): acknowledges only ``--honour`` (comma-separated: ``tools``,
  ``prompts``, ``resources`` or URIs; default all that was asked), and between updates of what was asked sends
  updates of ``note://unasked`` and a prompts list change nobody asked for.
- ``flood``: raw JSON-RPC on stdio (both eras): once listened or subscribed to, writes events as fast as its
  pipe takes them: ``note://a`` mostly, and one of 5,000 other ``note://a/{i}`` every tenth; ``--pid-file``
  gets its pid. ``--long CHARS``: every tenth is instead one URI under ``note://a/`` of that many characters.
  ``--total N``: after N events it falls silent (and goes on answering).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

MODERN = "2026-07-28"
SUB_KEY = "io.modelcontextprotocol/subscriptionId"


class Ticker:
    """The ``ticker`` server's state and its changes."""

    def __init__(self, every: float, die_after: int | None, refuses: str | None, big: int = 0) -> None:
        self.big = big
        self.every = every
        self.die_after = die_after
        self.refuses = refuses
        self.step = 0
        self.texts = {"note://a": "a v0", "note://b": "b v0"}
        self.tools = ["noop"]
        self.extra_resource: str | None = None
        self.started = anyio.Event()
        self.bus = _StartingBus(self.started)
        self.sessions: dict[int, tuple[Any, set[str]]] = {}
        """Pre-2026 sessions: id(session) → (session, its subscribed URIs)."""

    def server(self) -> Server[Any]:
        server: Server[Any] = Server(
            "ticker",
            version="1",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_read_resource=self.read_resource,
            on_subscribe_resource=self.subscribe,
            on_unsubscribe_resource=self.unsubscribe,
            on_subscriptions_listen=ListenHandler(self.bus),
            on_ping=self.ping,
        )
        options = server.create_initialization_options(NotificationOptions(True, True, True))
        server.create_initialization_options = lambda *a, **k: options  # type: ignore[method-assign]
        return server

    async def list_tools(self, ctx: Any, params: Any) -> t.ListToolsResult:
        tools = [t.Tool(name=name, input_schema={"type": "object"}) for name in self.tools]
        return t.ListToolsResult(tools=tools)

    async def call_tool(self, ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
        return t.CallToolResult(content=[t.TextContent(text=f"step {self.step}")])

    async def list_resources(self, ctx: Any, params: Any) -> t.ListResourcesResult:
        uris = ["note://a", "note://b", "blob://c", *([self.extra_resource] if self.extra_resource else [])]
        return t.ListResourcesResult(resources=[t.Resource(uri=u, name=u.split("//")[1]) for u in uris])

    async def read_resource(self, ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        uri = str(params.uri)
        if uri == "blob://c":
            blob = base64.b64encode(b"\x00" * self.step).decode()
            contents: list[Any] = [t.BlobResourceContents(uri=uri, blob=blob, mime_type="application/octet-stream")]
        else:
            contents = [t.TextResourceContents(uri=uri, text=self.texts.get(uri, "?"), mime_type="text/plain")]
        return t.ReadResourceResult(contents=contents)

    async def subscribe(self, ctx: Any, params: t.SubscribeRequestParams) -> t.EmptyResult:
        if str(params.uri) == self.refuses:
            from mcp.shared.exceptions import MCPError

            raise MCPError(t.INVALID_PARAMS, f"no subscriptions to {params.uri}")
        self.sessions.setdefault(_conn(ctx), (ctx.session, set()))[1].add(str(params.uri))
        self.started.set()
        return t.EmptyResult()

    async def unsubscribe(self, ctx: Any, params: t.UnsubscribeRequestParams) -> t.EmptyResult:
        if (entry := self.sessions.get(_conn(ctx))) is not None:
            entry[1].discard(str(params.uri))
        return t.EmptyResult()

    async def ping(self, ctx: Any, params: Any) -> t.EmptyResult:
        self.sessions.setdefault(_conn(ctx), (ctx.session, set()))  # only pre-2026 watches ping
        self.started.set()
        return t.EmptyResult()

    async def run(self) -> None:
        await self.started.wait()
        while True:
            await anyio.sleep(self.every)
            self.step += 1
            n = self.step
            match (n - 1) % 5:
                case 0:
                    self.texts["note://a"] = f"a v{n}" + "y" * self.big
                    await self.publish(ResourceUpdated("note://a"))
                case 1:
                    self.texts["note://b"] = f"b v{n}"
                    await self.publish(ResourceUpdated("note://b"))
                case 2:
                    self.tools.append(f"extra{n}")
                    await self.publish(ToolsListChanged())
                case 3:
                    self.extra_resource = f"note://r{n}"
                    await self.publish(ResourcesListChanged())
                case _:
                    await self.publish(ResourceUpdated("blob://c"))
            if self.die_after is not None and n >= self.die_after:
                await anyio.sleep(0.1)
                os._exit(0)

    async def publish(self, event: ServerEvent) -> None:
        await self.bus.publish(event)
        for session, uris in list(self.sessions.values()):
            try:
                if isinstance(event, ResourceUpdated):
                    if event.uri in uris:
                        await session.send_resource_updated(event.uri)
                elif isinstance(event, ToolsListChanged):
                    await session.send_tool_list_changed()
                elif isinstance(event, ResourcesListChanged):
                    await session.send_resource_list_changed()
            except Exception:  # a session that has gone
                self.sessions = {k: v for k, v in self.sessions.items() if v[0] is not session}


def _conn(ctx: Any) -> int:
    """One client connection (``ctx.session`` is a proxy made per request)."""
    return id(getattr(ctx.session, "_connection", ctx.session))


class _StartingBus(InMemorySubscriptionBus):
    """The SDK's in-memory bus; the first listener starts the ticking."""

    def __init__(self, started: anyio.Event) -> None:
        super().__init__()
        self._started = started

    def subscribe(self, listener: Any) -> Any:
        self._started.set()
        return super().subscribe(listener)


def ticker(http: str | None, every: float, die_after: int | None, refuses: str | None, big: int = 0) -> None:
    state = Ticker(every, die_after, refuses, big)
    server = state.server()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(state.run)
            if http:
                import uvicorn

                host, _, port = http.rpartition(":")
                app = server.streamable_http_app(host=host)
                await uvicorn.Server(uvicorn.Config(app, host=host, port=int(port), log_level="warning")).serve()
            else:
                from mcp.server.stdio import stdio_server

                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())
            tg.cancel_scope.cancel()

    anyio.run(main)


# --- raw servers -----------------------------------------------------------------------------------------------------


def _write(lock: threading.Lock, message: dict[str, Any]) -> None:
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def _handshake(message: dict[str, Any], subscribe: bool) -> dict[str, Any] | None:
    method, rid = message.get("method"), message.get("id")
    caps = {"tools": {"listChanged": True}, "prompts": {"listChanged": True}}
    caps["resources"] = {"subscribe": subscribe, "listChanged": True}
    if method == "server/discover":
        result = {"resultType": "complete", "supportedVersions": [MODERN], "capabilities": caps}
        result |= {"serverInfo": {"name": "raw", "version": "1"}, "ttlMs": 0, "cacheScope": "public"}
        return {"jsonrpc": "2.0", "id": rid, "result": result}
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": caps, "serverInfo": {"name": "raw", "version": "1"}}
        return {"jsonrpc": "2.0", "id": rid, "result": result}
    if method in ("ping", "resources/subscribe", "resources/unsubscribe"):
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    if method is not None and rid is not None and method != "subscriptions/listen":
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
    return None


def _updated(uri: str, sub: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"uri": uri}
    if sub is not None:
        params["_meta"] = {SUB_KEY: sub}
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params}


def _listed(kind: str, sub: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"}
    if sub is not None:
        message["params"] = {"_meta": {SUB_KEY: sub}}
    return message


def _honoured(asked: dict[str, Any], honour: str | None) -> dict[str, Any]:
    if honour is None:
        return asked
    keep = set(honour.split(",")) if honour else set()
    out = {
        f"{k}ListChanged": True for k in ("tools", "prompts", "resources") if asked.get(f"{k}ListChanged") and k in keep
    }
    uris = [u for u in asked.get("resourceSubscriptions") or [] if u in keep]
    if uris:
        out["resourceSubscriptions"] = uris
    return out


def raw(
    kind: str, honour: str | None, pid_file: Path | None, long: int | None = None, total: int | None = None
) -> None:
    """``rogue`` and ``flood``: both eras, by hand."""
    if pid_file is not None:
        pid_file.write_text(str(os.getpid()))
    lock = threading.Lock()
    started = threading.Event()
    state: dict[str, Any] = {"sub": None, "uris": []}

    def events() -> None:
        started.wait()
        sub = state["sub"]
        uris = state["uris"] or ["note://a"]
        i = 0
        part = "note://a/" + "x" * max(0, (long or 0) - len("note://a/"))
        while total is None or i < total:
            i += 1
            if kind == "flood":
                uri = (part if long else f"note://a/{i % 5000}") if i % 10 == 0 else uris[0]
                line = json.dumps(_updated(uri, sub)) + "\n"
                with lock:
                    sys.stdout.write(line)
                    if i % 64 == 0 or i == total:
                        sys.stdout.flush()
                continue
            _write(lock, _updated("note://unasked", sub))
            _write(lock, _listed("prompts", sub))
            for uri in uris:
                _write(lock, _updated(uri, sub))
            _write(lock, _listed("tools", sub))
            time.sleep(0.2)

    threading.Thread(target=events, daemon=True).start()
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        if message.get("method") == "subscriptions/listen":
            asked = (message.get("params") or {}).get("notifications") or {}
            honoured = _honoured(asked, honour)
            state["sub"] = message["id"]
            state["uris"] = list(honoured.get("resourceSubscriptions") or [])
            params = {"notifications": honoured, "_meta": {SUB_KEY: message["id"]}}
            _write(lock, {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": params})
            started.set()
            continue
        if message.get("method") == "resources/subscribe":
            uri = (message.get("params") or {}).get("uri")
            if honour is not None and uri not in honour.split(","):
                _write(lock, {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32602, "message": "no"}})
                continue
            state["uris"].append(uri)
            started.set()
        if message.get("method") == "ping" and not state["uris"]:
            started.set()
        reply = _handshake(message, subscribe=True)
        if reply is not None:
            _write(lock, reply)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["ticker", "rogue", "flood"])
    parser.add_argument("--http")
    parser.add_argument("--every", type=float, default=0.15)
    parser.add_argument("--die-after", type=int)
    parser.add_argument("--subscribe-refuses")
    parser.add_argument("--honour")
    parser.add_argument("--pid-file", type=Path)
    parser.add_argument("--long", type=int)
    parser.add_argument("--big", type=int, default=0)
    parser.add_argument("--total", type=int)
    args = parser.parse_args()
    if args.kind == "ticker":
        ticker(args.http, args.every, args.die_after, args.subscribe_refuses, args.big)
    else:
        raw(args.kind, args.honour, args.pid_file, args.long, args.total)


if __name__ == "__main__":
    main()
