"""Small purpose-built MCP servers for the tests, built with the SDK's MCPServer.

Run one: ``python tests/servers.py KIND [--http HOST:PORT] [--record FILE]`` (stdio by default).

- ``never_stops``: a tool that asks a question on every round, forever.
- ``hostile``: names, messages and results full of escape sequences, bidi controls and Rich markup;
  ``gauntlet`` carries every vector of ``VECTORS`` in its request keys, tool and field texts, enum labels, progress
  and log messages, a URL whose host hides characters, and its result; ``denied`` fails with them as a JSON-RPC
  error. The server's name, instructions, prompt and resource carry them too.
- ``recorder``: a two-round tool that appends each leg's JSON-RPC id and arguments to ``--record``
  (``--slow S``: it takes S seconds to answer the second leg; ``--slow-once S``: only an item's first answered
  leg, so a driver killed mid-round is taken over at full speed); ``sleepy`` records its leg and sleeps; ``nap``
  records when each call began and ended; ``refuse`` fails with a JSON-RPC error.
- ``vault``: asks for a password, then a confirmation, and says which password arrived.
- ``sampler``: a tool that asks the client's LLM for a completion (system prompt, hints, stop sequences,
  metadata that must not be forwarded) and returns it.
- ``no_result_type``: a raw JSON-RPC stdio server whose complete result omits ``resultType``.
- ``counter``: a stateful server — ``count`` says how often this process was called, and its pid; ``seen`` says
  the values of the environment variables it is asked for (what mcpcli started it with).
- ``legacy_only``: a raw JSON-RPC stdio server that speaks only 2025-11-25 (``server/discover`` is unknown to it)
  and asks ``provision``'s region over the back-channel.
- ``crash``: writes to stderr and exits at once (a server that fails to start).
- ``chatty``: a tool that logs at every level (one message full of escape sequences); it honours
  ``logging/setLevel`` on pre-2026 connections and says which level that asked for.
- ``shifting``: ``plan`` asks a size, then says the plan; ``--variant text|question|schema`` changes its wording,
  adds a round, or changes the question's schema (a server that changed since a recording).
- ``calls_back``: a tool that asks its question the pre-2026 way (``ctx.elicit``, over the back-channel) for an
  integer ``n``, and says what it got; on 2026-07-28 the SDK refuses that with -32600.
- ``mixed``: ``deploy`` asks a region, then a form (``approve``: confirm, note) and an LLM completion (``summary``)
  in one round; says every answer it got.
- ``rounds``: for the TUI — ``trip`` asks two forms in one round, ``odd`` asks a form with a part no form can
  hold, ``confirm`` asks a required boolean without a default, ``risky_link`` asks the user to visit a
  plain-http punycode URL; each says what it received.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer

EVIL = (
    "\x1b[31mRED\x1b[0m \x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \u202eevil\u202c"
    " [bold red]markup[/bold red] \x9b2J"
)


VECTORS = {
    "csi": "\x1b[2J\x1b[31;5mred",
    "osc8": "\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\",
    "osc-title": "\x1b]0;owned\x07",
    "c1": "\x9b31m\x9d0;t\x9c\x85",
    "bidi": "abc\u202edcba\u2066x\u2069",
    "c0": "bell\x07 nul\x00 bs\x08 del\x7f cr\rend",
}
"""What a hostile server puts in every string it controls (``gauntlet``): each must reach no terminal raw."""
VECTOR = "".join(VECTORS.values())
KEY = "pick" + VECTORS["osc8"] + VECTORS["c1"] + VECTORS["bidi"] + VECTORS["csi"]
"""A request key the server chose."""
LINK_KEY = "link" + VECTORS["bidi"] + VECTORS["osc-title"]
HIDDEN_HOST_URL = "https://exa\u200bmple.com\u202e/login?next=" + VECTORS["csi"]
"""A URL-mode link whose host holds a zero-width space and a bidi override (the IDNA codec refuses it)."""


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
    server = MCPServer("hostile" + EVIL + VECTOR, instructions="Instructions " + VECTOR)

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

    @server.tool(description="Every vector: " + VECTOR)
    async def gauntlet(ctx: Context, note: str = "") -> t.CallToolResult | t.InputRequiredResult:
        """Logs and reports progress with hostile text, asks a hostile form and link, then answers with them."""
        await ctx.log("warning", "log " + VECTOR, logger_name="logger" + VECTOR)
        await ctx.report_progress(1, 2, "progress " + VECTOR)
        answers = ctx.input_responses or {}
        if KEY in answers:
            got = json.dumps({k: v.model_dump(mode="json", exclude_none=True) for k, v in answers.items()})
            return t.CallToolResult(content=[t.TextContent(type="text", text="result " + VECTOR + " " + got)])
        schema = {
            "type": "object",
            "properties": {
                "choice": {
                    "type": "string",
                    "title": "Title " + VECTOR,
                    "description": "Description " + VECTOR,
                    "oneOf": [{"const": "a", "title": "Label " + VECTOR}, {"const": "b", "title": "plain b"}],
                }
            },
            "required": ["choice"],
        }
        form = t.ElicitRequestFormParams(message="Message " + VECTOR, requested_schema=schema)
        link = t.ElicitRequestURLParams(message="Visit " + VECTOR, url=HIDDEN_HOST_URL, elicitation_id="e" + VECTOR)
        asks = {KEY: t.ElicitRequest(params=form), LINK_KEY: t.ElicitRequest(params=link)}
        return t.InputRequiredResult(input_requests=asks, request_state="asked")

    @server.tool(name="evil" + VECTOR, description="A tool named " + VECTOR)
    async def evil() -> str:
        return "evil"

    @server.tool()
    async def denied() -> str:
        """Fails the request itself (a JSON-RPC error, not a tool error) with hostile text."""
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=-32000, message="denied " + VECTOR)

    @server.prompt(name="greet" + VECTOR, description="A prompt " + VECTOR)
    def greet() -> str:
        return "hello " + VECTOR

    @server.resource("note://hostile", name="note" + VECTOR, description="A resource " + VECTOR)
    def note() -> str:
        return "note " + VECTOR

    return server


def recorder(record: Path, slow: float = 0.0, slow_once: float = 0.0) -> MCPServer:
    server = MCPServer("recorder")
    answered: set[str] = set()  # --slow-once: the items whose first answered leg was taken slowly already

    @server.tool()
    async def sleepy(seconds: float, ctx: Context) -> str:
        """Records its leg, then takes its time and never asks anything."""
        with record.open("a") as f:
            f.write(json.dumps({"id": ctx.request_id, "item": "sleepy", "state": ctx.request_state}) + "\n")
        await anyio.sleep(seconds)
        return "slept"

    @server.tool()
    async def nap(seconds: float, ctx: Context) -> str:
        """Records when its call began and ended (``time.monotonic``), so a test can count the calls in flight."""
        with record.open("a") as f:
            f.write(json.dumps({"id": ctx.request_id, "item": "nap", "at": "enter", "t": time.monotonic()}) + "\n")
        await anyio.sleep(seconds)
        with record.open("a") as f:
            f.write(json.dumps({"id": ctx.request_id, "item": "nap", "at": "exit", "t": time.monotonic()}) + "\n")
        return "napped"

    @server.tool()
    async def refuse(ctx: Context) -> str:
        """Fails the request itself (a JSON-RPC error, not a tool error)."""
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=-32000, message="refused on purpose")

    @server.tool()
    async def two_rounds(item: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Records every leg; asks one question (and with --slow, takes its time to answer it)."""
        with record.open("a") as f:
            leg = {"id": ctx.request_id, "item": item, "state": ctx.request_state, "t": time.time()}
            f.write(json.dumps(leg) + "\n")
        answer = (ctx.input_responses or {}).get("ok")
        if isinstance(answer, t.ElicitResult) and answer.action == "accept":
            delay = slow_once if slow_once and item not in answered else slow
            answered.add(item)
            await anyio.sleep(delay)
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


def _received(ctx: Context) -> str:
    """What this leg's answers were, as sorted JSON (action and content per request key)."""
    got = {
        key: response.model_dump(mode="json", exclude_none=True)
        for key, response in sorted((ctx.input_responses or {}).items())
    }
    return json.dumps(got, sort_keys=True)


def rounds() -> MCPServer:
    """Rounds shaped for the full-screen app: two requests at once, an odd schema, a risky link."""
    server = MCPServer("rounds")

    @server.tool()
    async def trip(city: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks who travels and when — two forms in one round — then says what it received."""
        if ctx.input_responses:
            return t.CallToolResult(content=[t.TextContent(type="text", text=f"{city}: {_received(ctx)}")])
        who = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Traveller", "minLength": 2},
                "email": {"type": "string", "title": "Email", "format": "email"},
            },
            "required": ["name"],
        }
        when = {
            "type": "object",
            "properties": {
                "start": {"type": "string", "title": "Departure", "format": "date"},
                "nights": {"type": "integer", "title": "Nights", "minimum": 1, "maximum": 14, "default": 3},
            },
            "required": ["start", "nights"],
        }
        asks = {
            "traveller": t.ElicitRequest(
                params=t.ElicitRequestFormParams(message=f"Who goes to {city}?", requested_schema=who)
            ),
            "dates": t.ElicitRequest(params=t.ElicitRequestFormParams(message="When?", requested_schema=when)),
        }
        return t.InputRequiredResult(input_requests=asks, request_state="asked")

    @server.tool()
    async def odd(ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks a form with a nested object (which no elicitation form can hold) beside a plain field."""
        if ctx.input_responses:
            return t.CallToolResult(content=[t.TextContent(type="text", text=_received(ctx))])
        schema = {
            "type": "object",
            "properties": {
                "note": {"type": "string", "title": "Note"},
                "address": {"type": "object", "properties": {"street": {"type": "string"}}},
            },
            "required": ["note", "address"],
        }
        ask = t.ElicitRequest(params=t.ElicitRequestFormParams(message="Where to?", requested_schema=schema))
        return t.InputRequiredResult(input_requests={"where": ask}, request_state="asked")

    @server.tool()
    async def confirm(ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks a required yes/no question with no default: whatever arrives must be what the user chose."""
        if ctx.input_responses:
            return t.CallToolResult(content=[t.TextContent(type="text", text=_received(ctx))])
        ask = _form("Delete the old backups?", "sure", {"type": "boolean", "title": "Delete them"})
        return t.InputRequiredResult(input_requests={"confirm": ask}, request_state="asked")

    @server.tool()
    async def risky_link(ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks the user to visit a plain-http page on a punycode host (URL mode)."""
        if ctx.input_responses:
            return t.CallToolResult(content=[t.TextContent(type="text", text=_received(ctx))])
        params = t.ElicitRequestURLParams(
            message="Sign in to continue.", url="http://xn--pple-43d.example/login?next=1", elicitation_id="login"
        )
        return t.InputRequiredResult(input_requests={"login": t.ElicitRequest(params=params)}, request_state="asked")

    return server


SAMPLE_PARAMS = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "Summarize: MCP rounds."}}],
    "systemPrompt": "You are terse.",
    "maxTokens": 5000,
    "temperature": 0.2,
    "stopSequences": ["END"],
    "modelPreferences": {"hints": [{"name": "nonexistent-model"}, {"name": "small"}]},
    "metadata": {"tenant": "secret-tenant"},
    "includeContext": "thisServer",
}


def sampler() -> MCPServer:
    """A tool that asks the client's LLM (2026-07-28: in an InputRequiredResult; before: over the back-channel)."""
    server = MCPServer("sampler")

    @server.tool()
    async def summarize(ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks for a completion, then returns what came back."""
        request = t.CreateMessageRequest(params=t.CreateMessageRequestParams.model_validate(SAMPLE_PARAMS))
        if ctx.protocol_version and str(ctx.protocol_version) < "2026-07-28":
            session = ctx.request_context.session
            raw = await session.send_request(request, t.CreateMessageResult)
            reply: Any = raw
        else:
            reply = (ctx.input_responses or {}).get("llm")
            if not isinstance(reply, t.CreateMessageResult):
                return t.InputRequiredResult(input_requests={"llm": request}, request_state="asked")
        text = reply.content.text if isinstance(reply.content, t.TextContent) else "?"
        summary = f"summary by {reply.model} ({reply.stop_reason}): {text}"
        return t.CallToolResult(content=[t.TextContent(type="text", text=summary)])

    @server.tool()
    async def inspect(ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks for a completion, then says which ``_meta`` the reply carried (the server asked for none)."""
        request = t.CreateMessageRequest(params=t.CreateMessageRequestParams.model_validate(SAMPLE_PARAMS))
        if ctx.protocol_version and str(ctx.protocol_version) < "2026-07-28":
            reply: Any = await ctx.request_context.session.send_request(request, t.CreateMessageResult)
        else:
            reply = (ctx.input_responses or {}).get("llm")
            if not isinstance(reply, t.CreateMessageResult):
                return t.InputRequiredResult(input_requests={"llm": request}, request_state="asked")
        return t.CallToolResult(content=[t.TextContent(type="text", text=f"meta: {json.dumps(reply.meta)}")])

    @server.tool()
    async def plan(ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Offers the client's LLM a tool; reports which tool it chose to call, with what."""
        reply = (ctx.input_responses or {}).get("brain")
        if isinstance(reply, t.CreateMessageResultWithTools | t.CreateMessageResult):
            blocks = reply.content if isinstance(reply.content, list) else [reply.content]
            uses = [b for b in blocks if isinstance(b, t.ToolUseContent)]
            text = ", ".join(f"{u.name}({json.dumps(u.input, sort_keys=True)})" for u in uses) or "no tool"
            return t.CallToolResult(content=[t.TextContent(type="text", text=f"{reply.stop_reason}: {text}")])
        weather = {
            "name": "get_weather",
            "description": "Weather for a city",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }
        params = {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Weather in Oslo?"}}],
            "maxTokens": 100,
            "tools": [weather],
            "toolChoice": {"mode": "auto"},
        }
        request = t.CreateMessageRequest(params=t.CreateMessageRequestParams.model_validate(params))
        return t.InputRequiredResult(input_requests={"brain": request}, request_state="asked")

    @server.tool()
    async def look(ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks the client's LLM what an image shows."""
        reply = (ctx.input_responses or {}).get("eyes")
        if isinstance(reply, t.CreateMessageResult):
            text = reply.content.text if isinstance(reply.content, t.TextContent) else "?"
            return t.CallToolResult(content=[t.TextContent(type="text", text=f"it shows: {text}")])
        pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
        image = {"type": "image", "data": pixel, "mimeType": "image/png"}
        params = {"messages": [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}]}
        request = t.CreateMessageRequest(
            params=t.CreateMessageRequestParams.model_validate({**params, "maxTokens": 50})
        )
        return t.InputRequiredResult(input_requests={"eyes": request}, request_state="asked")

    return server


def mixed() -> MCPServer:
    """``deploy``: round 1 asks where; round 2 asks a form and an LLM completion together (2026-07-28 only)."""
    server = MCPServer("mixed")

    @server.tool()
    async def deploy(service: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks ``where`` (region), then ``approve`` (confirm, note) beside ``summary`` (sampling); says what it got.
        What a retry leaves out is asked again (the spec's rule), what it brought is kept in the state."""
        got = json.loads(ctx.request_state or "{}")
        for key, response in (ctx.input_responses or {}).items():
            got[key] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        if "where" not in got:
            ask = {"where": _form(f"Where does {service} go?", "region")}
            return t.InputRequiredResult(input_requests=ask, request_state=json.dumps(got))
        approve = {
            "type": "object",
            "properties": {"confirm": {"type": "boolean", "title": "Deploy it"}, "note": {"type": "string"}},
            "required": ["confirm"],
        }
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": f"Summarize {service}."}}]}
        asks: dict[str, t.InputRequest] = {
            "approve": t.ElicitRequest(
                params=t.ElicitRequestFormParams(message=f"Deploy {service}?", requested_schema=approve)
            ),
            "summary": t.CreateMessageRequest(
                params=t.CreateMessageRequestParams.model_validate({**params, "maxTokens": 50})
            ),
        }
        missing = {key: ask for key, ask in asks.items() if key not in got}
        if missing:
            return t.InputRequiredResult(input_requests=missing, request_state=json.dumps(got))
        return t.CallToolResult(
            content=[t.TextContent(type="text", text=f"{service}: {json.dumps(got, sort_keys=True)}")]
        )

    return server


LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def chatty() -> MCPServer:
    """Logs while it works: debug to emergency, the warning full of hostile text."""
    server = MCPServer("chatty")
    asked: dict[str, str] = {}  # what logging/setLevel asked for (pre-2026 connections only)

    async def set_level(ctx: Any, params: t.SetLevelRequestParams) -> t.EmptyResult:
        asked["level"] = params.level
        return t.EmptyResult()

    # MCPServer has no decorator for it; the low-level server declares the logging capability once it is there.
    server._lowlevel_server.add_request_handler("logging/setLevel", t.SetLevelRequestParams, set_level)

    @server.tool()
    async def work(ctx: Context) -> str:
        """Logs one message per level, then says which level logging/setLevel asked for."""
        floor = LOG_LEVELS.index(asked.get("level", "debug"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the logging feature is deprecated as of 2026-07-28
            for level in LOG_LEVELS[floor:]:
                text = "disk almost full " + EVIL if level == "warning" else f"a {level} message"
                await ctx.log(level, text, logger_name="worker")
        return f"worked (setLevel: {asked.get('level', 'none')})"

    return server


def shifting(variant: str = "same") -> MCPServer:
    """``plan(topic)`` asks a size (an integer), then says the plan. ``variant`` changes one thing, as a server changes
    between two releases: ``text`` the result's wording, ``question`` one more round (a confirmation), ``schema`` the
    size asked as a string."""
    server = MCPServer("shifting", version="1.0")

    @server.tool()
    async def plan(topic: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Plans a topic; asks its size."""
        answers = json.loads(ctx.request_state or "{}")
        for key, response in (ctx.input_responses or {}).items():
            answers[key] = response.model_dump(mode="json", exclude_none=True)
        if "size" not in answers:
            kind = "string" if variant == "schema" else "integer"
            ask = _form(f"How big is {topic}?", "size", {"type": kind, "title": "Size"})
            return t.InputRequiredResult(input_requests={"size": ask}, request_state=json.dumps(answers))
        if variant == "question" and "sure" not in answers:
            ask = _form("Sure?", "sure", {"type": "boolean"})
            return t.InputRequiredResult(input_requests={"sure": ask}, request_state=json.dumps(answers))
        size = (answers["size"].get("content") or {}).get("size")
        text = f"Plan for {topic}, size {size}" if variant == "text" else f"Plan for {topic}: size {size}"
        return t.CallToolResult(content=[t.TextContent(type="text", text=text)])

    return server


def calls_back() -> MCPServer:
    from pydantic import BaseModel

    server = MCPServer("calls-back")

    class Number(BaseModel):
        n: int

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Asks for a number over the back-channel."""
        answer = await ctx.elicit("Which number?", Number)
        return f"got {answer.action} {answer.data.n if answer.action == 'accept' else '-'}"

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


def counter() -> MCPServer:
    """A stateful server: ``count`` says how often this process was called, and its pid."""
    import os

    server = MCPServer("counter")
    calls = [0]

    @server.tool()
    async def count() -> str:
        """One more call of this process."""
        calls[0] += 1
        return f"call {calls[0]} of pid {os.getpid()}"

    @server.tool()
    async def seen(names: str) -> str:
        """The values of the comma-separated environment variables ``names`` in this process, and its pid."""
        found = " ".join(f"{name}={os.environ.get(name, '<unset>')}" for name in names.split(","))
        return f"{found} pid {os.getpid()}"

    @server.tool()
    async def umask() -> str:
        """The umask this process runs under, in octal."""
        mask = os.umask(0o077)
        os.umask(mask)
        return f"umask {mask:03o}"

    return server


def legacy_only() -> None:
    """A raw stdio JSON-RPC server that speaks only 2025-11-25 (as most servers in the wild still do):
    ``server/discover`` is an unknown method; ``provision`` asks its question over the back-channel."""
    pending: dict[str, Any] = {}
    provision = {
        "name": "provision",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    }
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method is None and message.get("id") in pending:  # the client's answer to our elicitation
            call = pending.pop(message["id"])
            if "result" not in message:  # refused (nobody to answer): the call fails, as a real server's would
                error = {"code": -32603, "message": "provision needs a region"}
                print(json.dumps({"jsonrpc": "2.0", "id": call["id"], "error": error}), flush=True)
                continue
            region = ((message.get("result") or {}).get("content") or {}).get("region", "?")
            text = f"Provisioned '{call['params']['arguments']['name']}' in {region}."
            result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
            print(json.dumps({"jsonrpc": "2.0", "id": call["id"], "result": result}), flush=True)
            continue
        if "id" not in message:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-only", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [provision]}
        elif method == "tools/call":
            ask_id = f"ask-{len(pending) + 1}"
            pending[ask_id] = message
            schema = {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}
            params = {"mode": "form", "message": "Which region?", "requestedSchema": schema}
            print(
                json.dumps({"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create", "params": params}),
                flush=True,
            )
            continue
        elif method == "ping":
            result = {}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
            print(json.dumps(reply), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)


def serve(built: MCPServer, http: str | None) -> None:
    """Run a test server: over streamable HTTP at ``HOST:PORT``, or over stdio."""
    if http:
        host, _, port = http.rpartition(":")
        anyio.run(lambda: built.run_streamable_http_async(host=host, port=int(port)))
    else:
        anyio.run(built.run_stdio_async)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind")
    parser.add_argument("--http")
    parser.add_argument("--record", type=Path)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--variant", default="same")
    parser.add_argument("--slow-once", type=float, default=0.0)
    args = parser.parse_args()
    if args.kind == "crash":
        sys.stderr.write("fatal: missing DATABASE_URL\n")
        raise SystemExit(1)
    if args.kind == "no_result_type":
        no_result_type()
        return
    if args.kind == "legacy_only":
        legacy_only()
        return
    kinds = {"never_stops": never_stops, "hostile": hostile, "vault": vault, "rounds": rounds, "sampler": sampler}
    kinds["chatty"] = chatty
    kinds["counter"] = counter
    kinds["calls_back"] = calls_back
    kinds["mixed"] = mixed
    server = kinds.get(args.kind)
    if args.kind == "shifting":
        serve(shifting(args.variant), args.http)
        return
    built = (
        recorder(args.record, args.slow, args.slow_once) if args.kind == "recorder" else server() if server else None
    )
    if built is None:
        raise SystemExit(f"unknown server kind {args.kind}")
    serve(built, args.http)


if __name__ == "__main__":
    main()
