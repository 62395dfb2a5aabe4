"""The bundled demo MCP server: every kind of question mcpcli can answer, offline.

Built with the SDK's ``MCPServer``. Each interactive handler is written once as
a *step*: given the answers so far, it either returns its result or the
questions it still needs. ``_drive`` serves that step to both protocol
generations — on 2026-07-28 it returns an ``InputRequiredResult`` whose
``request_state`` carries the answers so far; on older protocols it asks over
the back-channel mid-call.

``request_state`` is sealed with a key generated once and kept (0600) under the
state dir, so a flow started by one process resumes in another.

Run it standalone: ``python -m mcpcli.demo`` (stdio) or
``python -m mcpcli.demo --http 127.0.0.1:8000`` (streamable HTTP at ``/mcp``).
"""

from __future__ import annotations

import argparse
import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity

from mcpcli import __version__
from mcpcli.settings.config import create_once

Answers = dict[str, dict[str, Any]]
"""Answers so far, keyed by the question's request key, as JSON (an ``ElicitResult`` or ``ListRootsResult``)."""

Step = Callable[[Answers], "str | t.InputRequests"]
"""Given the answers so far: the final text, or the questions still open."""

APP_URI = "ui://demo/provision"
"""The provision tool's view (MCP Apps), shipped beside this module (``demo_app.html``)."""

STATE_ONLY_POLLS = 3
"""How many times ``wait_for_build`` answers "not yet" before it finishes."""


def load_or_create_key(path: Path) -> bytes:
    """The sealing key: read it, or create it once (0600 in a 0700 directory) so every process shares it — also
    processes that start at the same moment (``create_once``): states sealed by one are opened by the others."""
    try:
        return _read_key(path)
    except FileNotFoundError:
        create_once(path, secrets.token_hex(32).encode())
    return _read_key(path)


class DamagedKey(Exception):
    """The key file is there but holds no key."""


def _read_key(path: Path) -> bytes:
    key = path.read_bytes().strip()
    if len(key) >= 32:
        return key
    raise DamagedKey(f"the key file {path} is damaged")


def form(message: str, properties: dict[str, Any], required: list[str] | None = None) -> t.ElicitRequest:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return t.ElicitRequest(params=t.ElicitRequestFormParams(message=message, requested_schema=schema))


def accepted(answers: Answers, key: str) -> dict[str, Any] | None:
    """The accepted content of one answer, or None when it is missing, declined or cancelled."""
    answer = answers.get(key)
    if answer is None or answer.get("action") != "accept":
        return None
    content = answer.get("content")
    return content if isinstance(content, dict) else {}


def refused(answers: Answers, key: str) -> str | None:
    """``"declined"``/``"cancelled"`` when the user refused that question, else None."""
    action = (answers.get(key) or {}).get("action")
    return {"decline": "declined", "cancel": "cancelled"}.get(str(action))


# --- the steps -------------------------------------------------------------------------------------------------------

REGION_SCHEMA = {"region": {"type": "string", "title": "Region", "description": "Where to provision, e.g. eu-west-1"}}


def provision_step(name: str) -> Step:
    def step(answers: Answers) -> str | t.InputRequests:
        if why := refused(answers, "region"):
            return f"!Provisioning of {name!r} was {why}."
        content = accepted(answers, "region")
        if content is None or not content.get("region"):
            return {"region": form(f"Which region should {name!r} be provisioned in?", REGION_SCHEMA, ["region"])}
        return f"Provisioned {name!r} in {content['region']}."

    return step


ONBOARD_FIELDS: dict[str, Any] = {
    "display_name": {"type": "string", "title": "Display name", "minLength": 2, "maxLength": 40},
    "email": {"type": "string", "title": "Contact email", "format": "email"},
    "homepage": {"type": "string", "title": "Homepage", "format": "uri"},
    "start": {"type": "string", "title": "Start date", "format": "date"},
    "kickoff": {"type": "string", "title": "Kick-off meeting", "format": "date-time"},
    "seats": {"type": "integer", "title": "Seats", "minimum": 1, "maximum": 50, "default": 5},
    "budget": {"type": "number", "title": "Monthly budget (EUR)", "minimum": 0, "maximum": 10000},
    "remote": {"type": "boolean", "title": "Remote team", "default": True},
    "size": {"type": "string", "title": "Team size", "enum": ["small", "medium", "large"], "default": "small"},
    "region": {
        "type": "string",
        "title": "Region",
        "oneOf": [
            {"const": "eu-west-1", "title": "Europe (Ireland)"},
            {"const": "us-east-1", "title": "US East (Virginia)"},
            {"const": "ap-south-1", "title": "Asia Pacific (Mumbai)"},
        ],
    },
    "tier": {
        "type": "string",
        "title": "Support tier",
        "enum": ["b", "s", "g"],
        "enumNames": ["Bronze", "Silver", "Gold"],
    },
    "languages": {
        "type": "array",
        "title": "Languages",
        "items": {"type": "string", "enum": ["python", "go", "rust", "typescript"]},
        "minItems": 1,
        "maxItems": 3,
    },
    "channels": {
        "type": "array",
        "title": "Notification channels",
        "items": {"anyOf": [{"const": "email", "title": "E-mail"}, {"const": "chat", "title": "Team chat"}]},
        "default": ["email"],
    },
    "passphrase": {"type": "string", "title": "Vault passphrase", "minLength": 8},
}
ONBOARD_REQUIRED = ["display_name", "email", "start", "seats", "region", "tier", "languages"]


def onboard_step(team: str) -> Step:
    def step(answers: Answers) -> str | t.InputRequests:
        details = accepted(answers, "details")
        if why := refused(answers, "details"):
            return f"!Onboarding of {team!r} was {why}."
        if details is None:
            return {"details": form(f"Tell us about team {team!r}.", ONBOARD_FIELDS, ONBOARD_REQUIRED)}
        confirm = accepted(answers, "confirm")
        if why := refused(answers, "confirm"):
            return f"!Onboarding of {team!r} was {why} at the confirmation."
        if confirm is None:
            summary = f"{details.get('display_name')} <{details.get('email')}>, {details.get('seats')} seats"
            schema = {"confirm": {"type": "boolean", "title": "Create the team now?", "default": True}}
            return {"confirm": form(f"Create {summary}?", schema, ["confirm"])}
        if not confirm.get("confirm"):
            return f"!Onboarding of {team!r} was not confirmed."
        roots = answers.get("roots")
        if roots is None:
            return {"roots": t.ListRootsRequest()}
        uris = [r.get("uri", "?") for r in roots.get("roots", [])]
        public = {k: v for k, v in details.items() if k != "passphrase"}
        return (
            f"Onboarded team {team!r} with {len(uris)} workspace root{'' if len(uris) == 1 else 's'}:"
            f" {', '.join(uris) or 'none'}.\n"
            f"{json.dumps(public, sort_keys=True)}"
        )

    return step


def connect_step(service: str) -> Step:
    def step(answers: Answers) -> str | t.InputRequests:
        if why := refused(answers, "consent"):
            return f"!Connecting {service!r} was {why}."
        if accepted(answers, "consent") is None:
            url = f"https://auth.example.com/connect?service={service}"
            params = t.ElicitRequestURLParams(
                message=f"Sign in to {service} to connect it.", url=url, elicitation_id=f"connect-{service}"
            )
            return {"consent": t.ElicitRequest(params=params)}
        return f"Connected {service!r}."

    return step


def tone_step(topic: str) -> Step:
    def step(answers: Answers) -> str | t.InputRequests:
        content = accepted(answers, "tone")
        if content is None:
            schema = {"tone": {"type": "string", "title": "Tone", "enum": ["formal", "friendly", "pirate"]}}
            return {"tone": form(f"Which tone for a note about {topic!r}?", schema, ["tone"])}
        return f"Write a {content['tone']} note about {topic}."

    return step


def report_step(project: str) -> Step:
    def step(answers: Answers) -> str | t.InputRequests:
        content = accepted(answers, "scope")
        if content is None:
            schema = {"private": {"type": "boolean", "title": "Include private details", "default": False}}
            return {"scope": form(f"Include private details in the report for {project!r}?", schema)}
        extra = " (with private details)" if content.get("private") else ""
        return f"Report for {project}{extra}: all systems nominal."

    return step


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

        return files("mcpcli").joinpath("demo_app.html").read_text(encoding="utf-8")

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mcpcli.demo", description="The mcpcli demo MCP server.")
    parser.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp")
    parser.add_argument("--key-file", type=Path, help="request_state sealing key (created if missing)")
    parser.add_argument("--ttl", type=float, default=600.0, help="seconds a request_state stays valid")
    args = parser.parse_args(argv)
    if args.key_file is None:
        from mcpcli.settings.config import Paths

        args.key_file = Paths.from_env().demo_key_file
    try:
        key = load_or_create_key(args.key_file)
    except (DamagedKey, OSError) as exc:
        raise SystemExit(f"demo server: {exc} (delete it to make a new one)") from None
    server = build_server(key, ttl=args.ttl)
    if args.http:
        host, _, port = args.http.rpartition(":")
        anyio.run(lambda: server.run_streamable_http_async(host=host or "127.0.0.1", port=int(port)))
    else:
        anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
