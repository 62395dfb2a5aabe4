"""The demo MCP server: the steps of ``demo.steps`` served on both protocol generations, and its MCP App's view.

On 2026-07-28 a step's questions go back as an ``InputRequiredResult`` whose ``request_state`` carries the answers
so far (sealed with the key of ``demo.key``); on older protocols they are asked over the back-channel, mid-call.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity

from mcpcli import __version__
from mcpcli.demo.steps import (
    Answers,
    Step,
    connect_step,
    onboard_step,
    provision_step,
    report_step,
    tone_step,
)

APP_URI = "ui://demo/provision"
"""The provision tool's view (MCP Apps), shipped in this package (``app.html``)."""

STATE_ONLY_POLLS = 3
"""How many times ``wait_for_build`` answers "not yet" before it finishes."""


# --- serving a step on both protocol generations ---------------------------------------------------------------------


def _decode_answers(ctx: Context) -> Answers:
    """Answers so far: the verified (unsealed) state of earlier rounds plus this round's responses."""
    answers: Answers = {}
    if ctx.request_state:
        try:
            answers = dict(json.loads(ctx.request_state).get("answers", {}))
        except (ValueError, AttributeError):
            answers = {}
    for key, response in (ctx.input_responses or {}).items():
        answers[key] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    return answers


def _modern(ctx: Context) -> bool:
    return bool(ctx.protocol_version) and str(ctx.protocol_version) >= "2026-07-28"


async def _ask_back_channel(ctx: Context, key: str, request: t.InputRequest) -> dict[str, Any]:
    """Pre-2026: ask one question over the back-channel, mid-call."""
    session = ctx.request_context.session
    result: t.ElicitResult | t.ListRootsResult
    if isinstance(request, t.ListRootsRequest):
        result = await session.list_roots()
    elif isinstance(request, t.ElicitRequest) and isinstance(request.params, t.ElicitRequestFormParams):
        p = request.params
        result = await session.elicit_form(p.message, p.requested_schema, related_request_id=ctx.request_id)
    elif isinstance(request, t.ElicitRequest) and isinstance(request.params, t.ElicitRequestURLParams):
        p2 = request.params
        result = await session.elicit_url(
            p2.message, p2.url, p2.elicitation_id or key, related_request_id=ctx.request_id
        )
    else:  # pragma: no cover - the demo asks nothing else
        raise TypeError(f"cannot ask {type(request).__name__}")
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _drive(ctx: Context, step: Step) -> str | t.InputRequiredResult:
    answers = _decode_answers(ctx)
    while True:
        outcome = step(answers)
        if isinstance(outcome, str):
            return outcome
        if _modern(ctx):
            return t.InputRequiredResult(input_requests=outcome, request_state=json.dumps({"answers": answers}))
        for key, request in outcome.items():
            answers[key] = await _ask_back_channel(ctx, key, request)


def _tool_result(text: str | t.InputRequiredResult) -> t.CallToolResult | t.InputRequiredResult:
    """A leading ``!`` marks a refusal: the tool reports it as an error result."""
    if isinstance(text, t.InputRequiredResult):
        return text
    is_error = text.startswith("!")
    body = text[1:] if is_error else text
    return t.CallToolResult(content=[t.TextContent(type="text", text=body)], is_error=is_error)


def build_server(key: bytes | None = None, *, ttl: float = 600.0) -> MCPServer:
    """The demo server; ``key`` seals ``request_state`` (None: a process-local key)."""
    security = RequestStateSecurity(keys=[key], ttl=ttl) if key else RequestStateSecurity.ephemeral(ttl=ttl)
    server = MCPServer(
        "mcpcli-demo",
        version=__version__,
        instructions="A demo server for mcpcli: every kind of question, offline.",
        request_state_security=security,
    )

    @server.tool(meta={"ui": {"resourceUri": APP_URI}})
    async def provision(name: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Provision a service; asks which region."""
        return _tool_result(await _drive(ctx, provision_step(name)))

    @server.resource(APP_URI, name="provision-view", mime_type="text/html;profile=mcp-app")
    def provision_view() -> str:
        """The provision tool's interactive view (MCP Apps: mcpcli call provision --app)."""
        from importlib.resources import files

        return files("mcpcli.demo").joinpath("app.html").read_text(encoding="utf-8")

    @server.tool()
    async def onboard(team: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Onboard a team over three rounds: a form with every field kind, a confirmation, then your roots."""
        return _tool_result(await _drive(ctx, onboard_step(team)))

    @server.tool()
    async def connect(service: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Connect an external account; asks you to visit a sign-in page (URL mode)."""
        return _tool_result(await _drive(ctx, connect_step(service)))

    @server.tool()
    async def wait_for_build(build: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Wait for a build: answers "not yet" (state only) a few times, then finishes."""
        polls = 0
        if ctx.request_state:
            polls = int(json.loads(ctx.request_state).get("polls", 0))
        await ctx.report_progress(polls, STATE_ONLY_POLLS, f"build {build}: step {polls}")
        if not _modern(ctx):
            for polls in range(1, STATE_ONLY_POLLS + 1):
                await anyio.sleep(0.05)
                await ctx.report_progress(polls, STATE_ONLY_POLLS, f"build {build}: step {polls}")
        elif polls < STATE_ONLY_POLLS:
            return t.InputRequiredResult(request_state=json.dumps({"polls": polls + 1}))
        return _tool_result(f"Build {build} finished after {STATE_ONLY_POLLS} checks.")

    @server.tool()
    def echo(text: str, count: int = 1) -> str:
        """Echo text back (no questions); handy for checking a connection."""
        return " ".join([text] * count)

    @server.prompt()
    async def note(topic: str, ctx: Context) -> str | t.InputRequiredResult:
        """A prompt that asks which tone to use."""
        return await _drive(ctx, tone_step(topic))

    @server.resource("demo://report/{project}", mime_type="text/plain")
    async def report(project: str, ctx: Context) -> str | t.InputRequiredResult:
        """A report whose scope you choose."""
        return await _drive(ctx, report_step(project))

    @server.resource("demo://readme", mime_type="text/plain")
    def readme() -> str:
        """What this server is."""
        return "The mcpcli demo server. Try: mcpcli call provision --arg name=orders"

    return server
