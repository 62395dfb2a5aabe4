"""The core coroutine behind each command: connect, do the work, render, return the exit code.

``cli.py`` parses and calls these; they build the answer sources and the flow
and hand results to ``output``. Imported only by commands that talk to a
server (it pulls in the SDK).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpcli.answers import Presets, Roots, answers_template
from mcpcli.arguments import build_arguments
from mcpcli.connection import connect
from mcpcli.errors import ExitCode, ServerError, SessionError, UsageError, UserStopped
from mcpcli.flow import AnswerSource, Call, Flow, Limits, Method, NeedInput, Outcome, dump
from mcpcli.keeper import Keeper, lease_ttl_from_env
from mcpcli.output import describe_pending, pending_document

if TYPE_CHECKING:
    from mcpcli.runtime import AnswerOptions, Runtime


# --- discovery -------------------------------------------------------------------------------------------------------


async def discover(rt: Runtime, what: str) -> int:
    target = rt.target()
    async with connect(target, rt.paths, protocol=rt.protocol()) as client:
        try:
            if what == "info":
                return _info(rt, client)
            if what == "tools":
                tools = await _all(client.list_tools, "tools")
                rows = [(x["name"], _args_summary(x.get("inputSchema")), x.get("description", "")) for x in tools]
                return _emit(rt, {"tools": tools}, "Tools", ("name", "arguments", "description"), rows)
            if what == "prompts":
                prompts = await _all(client.list_prompts, "prompts")
                rows = [(p["name"], _prompt_args(p), p.get("description", "")) for p in prompts]
                return _emit(rt, {"prompts": prompts}, "Prompts", ("name", "arguments", "description"), rows)
            resources = await _all(client.list_resources, "resources")
            templates = await _all(client.list_resource_templates, "resourceTemplates")
            if rt.json:
                rt.out.json({"resources": resources, "resourceTemplates": templates})
                return 0
            rows = [(r["uri"], r.get("name", ""), r.get("description", "")) for r in resources]
            rows += [(r["uriTemplate"], r.get("name", "") + " (template)", r.get("description", "")) for r in templates]
            rt.out.table("Resources", ("uri", "name", "description"), rows, "The server has no resources.")
            return 0
        except MCPError as exc:
            raise ServerError(f"The server refused to list {what}: {exc.message}.") from None


async def _all(fetch: Any, key: str) -> list[dict[str, Any]]:
    """Every page of a listing (bounded: a paginator that never ends cannot hang us)."""
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(100):
        page = dump(await fetch(cursor=cursor))
        items.extend(page.get(key) or [])
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return items


def _emit(rt: Runtime, doc: dict[str, Any], title: str, cols: tuple[str, ...], rows: list[Any]) -> int:
    if rt.json:
        rt.out.json(doc)
    else:
        rt.out.table(title, cols, rows, f"The server has no {title.lower()}.")
    return 0


def _args_summary(schema: Any) -> str:
    props = (schema or {}).get("properties") or {}
    required = set((schema or {}).get("required") or [])
    parts = [f"{name}{'' if name in required else '?'}: {prop.get('type', 'any')}" for name, prop in props.items()]
    return ", ".join(parts)


def _prompt_args(prompt: dict[str, Any]) -> str:
    return ", ".join(f"{a['name']}{'' if a.get('required') else '?'}" for a in prompt.get("arguments") or [])


def _info(rt: Runtime, client: Client) -> int:
    server = client.server_info
    caps = dump(client.server_capabilities)
    doc = {
        "server": dump(server) if server else None,
        "protocolVersion": client.protocol_version,
        "capabilities": caps,
        "instructions": client.instructions,
    }
    if rt.json:
        rt.out.json(doc)
        return 0
    rows = [
        ("server", f"{server.name} {server.version}" if server else "?"),
        ("protocol", client.protocol_version),
        ("capabilities", ", ".join(sorted(k for k, v in caps.items() if v is not None)) or "none"),
    ]
    if client.instructions:
        rows.append(("instructions", client.instructions))
    rt.out.table("Server", ("", ""), rows, "")
    return 0


# --- flows -----------------------------------------------------------------------------------------------------------


def _sources(rt: Runtime, opts: AnswerOptions) -> list[AnswerSource]:
    presets = Presets.parse(
        opts.answer,
        opts.answers,
        decline=opts.decline,
        cancel=opts.cancel,
        accept=opts.accept,
        accept_defaults=opts.accept_defaults,
    )
    roots = Roots([p.expanduser() for p in opts.roots] or [Path.cwd()])
    sources: list[AnswerSource] = [presets, roots]
    if not opts.no_input and _interactive():
        import webbrowser

        from mcpcli.asking import TerminalUser  # deferred: only a terminal session needs Rich and the prompts
        from mcpcli.inline import Terminal

        sources.append(TerminalUser(Terminal(rt.out.err), presets, open_url=webbrowser.open))
    return sources


def _interactive() -> bool:
    """Somebody can answer: stdin is a terminal (``MCPCLI_ASSUME_TTY`` lets tests drive a pipe)."""
    return sys.stdin.isatty() or os.environ.get("MCPCLI_ASSUME_TTY") == "1"


def _flow(rt: Runtime, opts: AnswerOptions, server: str, flows: list[Flow]) -> Flow:
    from mcpcli.vault import load_store_key

    keeper = Keeper(
        open_store=lambda: rt.store,
        store_key=lambda: load_store_key(rt.paths.store_key_file),
        lease_ttl=lease_ttl_from_env(),
    )
    flow = Flow(
        keeper=keeper,
        server=server,
        sources=_sources(rt, opts),
        reporter=rt.out,
        limits=Limits(max_rounds=opts.max_rounds, timeout=opts.timeout),
    )
    flows.append(flow)
    return flow


async def _connect_and_run(rt: Runtime, opts: AnswerOptions, flow: Flow, target: Any, run: Any) -> int:
    async with connect(
        target,
        rt.paths,
        protocol=rt.protocol(),
        elicitation=flow.back_channel("elicitation"),
        roots=flow.back_channel("roots"),
        sampling=flow.back_channel("sampling"),
    ) as client:
        flow.client = client
        try:
            outcome = await run(client)
        except NeedInput as need:
            rt.out.stop_progress()
            return _needs_input(rt, need)
        except UserStopped as stop:
            if flow.session is not None:
                stop.hint = f"Resume it with: mcpcli resume {flow.session.id}"
            raise
        finally:
            rt.out.stop_progress()
    return _render(rt, flow.call.method if flow.call else "tools/call", outcome)


async def run_call(
    rt: Runtime, opts: AnswerOptions, flows: list[Flow], method: Method, name: str, pairs: list[str], args: str | None
) -> int:
    target = rt.target()
    flow = _flow(rt, opts, target.label, flows)

    async def run(client: Client) -> Outcome:
        if method == "tools/call":
            arguments = build_arguments(await _input_schema(client, name), pairs, args)
        elif method == "prompts/get":
            arguments = build_arguments(await _prompt_schema(client, name, pairs), pairs, None, what="prompt")
        else:
            arguments = {}
        return await flow.start(Call(method, name, arguments))

    return await _connect_and_run(rt, opts, flow, target, run)


async def _prompt_schema(client: Client, prompt: str, pairs: list[str]) -> dict[str, Any]:
    """Prompt arguments are strings; the prompt's listing says which are required."""
    listed = next((p for p in await _all(client.list_prompts, "prompts") if p["name"] == prompt), None)
    if listed is None:
        raise UsageError(f"The server has no prompt {prompt!r}.", hint="See them with: mcpcli prompts")
    arguments = listed.get("arguments") or []
    return {
        "type": "object",
        "properties": {a["name"]: {"type": "string"} for a in arguments},
        "required": [a["name"] for a in arguments if a.get("required")],
    }


async def _input_schema(client: Client, tool: str) -> dict[str, Any] | None:
    """The tool's inputSchema; an unknown tool is a usage error (nothing is sent)."""
    cursor = None
    names: list[str] = []
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        for item in page.tools:
            if item.name == tool:
                return dict(item.input_schema)
            names.append(item.name)
        cursor = page.next_cursor
        if not cursor:
            break
    shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
    raise UsageError(f"The server has no tool {tool!r}.", hint=f"Its tools: {shown or 'none'} (mcpcli tools)")


async def run_resume(
    rt: Runtime, opts: AnswerOptions, flows: list[Flow], session_id: str, *, steal: bool = False
) -> int:
    record = rt.store.get(session_id)
    if record.status == "done" and record.result is not None:
        rt.out.note(f"Session {record.id} already finished; here is its result again.")
        return _render(rt, record.method, Outcome(record.result, record, ExitCode(record.exit_code or 0)))
    g = rt.g
    if g.server is None:
        g.server = record.server
    target = rt.target()
    flow = _flow(rt, opts, record.server, flows)

    async def run(client: Client) -> Outcome:
        return await flow.resume(record, steal=steal)

    return await _connect_and_run(rt, opts, flow, target, run)


def _render(rt: Runtime, method: str, outcome: Outcome) -> int:
    if rt.json:
        rt.out.json(outcome.result)
    else:
        rt.out.result(method, outcome.result)
    return int(outcome.exit_code)


def _needs_input(rt: Runtime, need: NeedInput) -> int:
    if rt.json:
        rt.out.json(pending_document(need.session.id, need.pending, answers_template(need.pending)))
    else:
        describe_pending(rt.out.err, need.session.id, need.pending)
    if need.hint and "cannot be deferred" in need.message:
        from mcpcli.errors import print_error

        print_error(need)
    return int(ExitCode.INPUT_REQUIRED)


def interrupted(rt: Runtime, flows: list[Flow]) -> None:
    """Ctrl-C: every round is already committed; say where the flow can be picked up."""
    rt.out.stop_progress()
    for flow in flows:
        if flow.session is not None:
            with contextlib.suppress(SessionError):
                rt.store.update(flow.session.id, status="waiting")
            rt.out.err.print(
                f"\nInterrupted; session {flow.session.id} saved. Resume it with: mcpcli resume {flow.session.id}",
                markup=False,
                highlight=False,
            )
            return
    rt.out.err.print("\nInterrupted.", markup=False, highlight=False)
