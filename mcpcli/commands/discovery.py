"""The bodies of the commands that list what a server offers (``tools``, ``prompts``, ``resources``, ``info``),
the app's start-screen ``catalog``, and the listings a call or a prompt reads its arguments' schema from. How
they connect is ``commands.connecting``'s. Imported only by commands that talk to a server (it pulls in the SDK).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as t
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from mcpcli.commands.connecting import credentials, declared, with_server_logs
from mcpcli.commands.seat import at_terminal
from mcpcli.engine.arguments import no_such, usable_schema
from mcpcli.engine.steps import dump
from mcpcli.errors import ServerError
from mcpcli.net.connection import connect
from mcpcli.net.handshakes import server_info

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime
    from mcpcli.settings.targets import Target


async def discover(rt: Runtime, what: str) -> int:
    """``tools``, ``prompts``, ``resources`` or ``info``: one connection, every page, printed; a complete tools or
    prompts listing kept for completion. A refused or malformed listing is one ``ServerError`` line (with a hint
    when 2026-07-28 was asked for by name)."""
    target = rt.target()
    options = replace(declared(rt, target, later=True), credentials=credentials(rt, interactive=at_terminal()))
    options = with_server_logs(replace(options, tracer=rt.tracer()), rt, rt.out.note)
    async with connect(options) as client:
        # A server that does not declare a kind refuses to list it ("Method not found"): it has none of it.
        offers = client.server_capabilities
        try:
            if what == "info":
                return _info(rt, client)
            if what == "tools":
                keep = keep_listing(rt, target, client, "tools")
                tools = await all_pages(client.list_tools, "tools", keep, offers.tools)
                rows = [(x["name"], _args_summary(x.get("inputSchema")), _described(x)) for x in tools]
                return _emit(rt, {"tools": tools}, "Tools", ("name", "arguments", "description"), rows)
            if what == "prompts":
                keep = keep_listing(rt, target, client, "prompts")
                prompts = await all_pages(client.list_prompts, "prompts", keep, offers.prompts)
                rows = [(p["name"], _prompt_args(p), p.get("description", "")) for p in prompts]
                return _emit(rt, {"prompts": prompts}, "Prompts", ("name", "arguments", "description"), rows)
            resources = await all_pages(client.list_resources, "resources", None, offers.resources)
            templates = await all_pages(client.list_resource_templates, "resourceTemplates", None, offers.resources)
            if rt.json:
                rt.out.json({"resources": resources, "resourceTemplates": templates})
                return 0
            rows = [(r["uri"], r.get("name", ""), r.get("description", "")) for r in resources]
            rows += [(r["uriTemplate"], r.get("name", "") + " (template)", r.get("description", "")) for r in templates]
            rt.out.table("Resources", ("uri", "name", "description"), rows, "The server has no resources.")
            return 0
        except MCPError as exc:
            hint = _older_protocol_hint(rt, target)
            raise ServerError(f"The server refused to list {what}: {exc.message}.", hint=hint) from None
        except ValidationError as exc:
            hint = _older_protocol_hint(rt, target)
            raise ServerError(f"The server's {what} listing is malformed: {first_problem(exc)}.", hint=hint) from None


def _described(tool: dict[str, Any]) -> str:
    """A tool's description, marked ``[app]`` when it has an interactive view (``mcpcli call TOOL --app``) and
    ``[app only]`` when its server keeps it for views (MCP Apps visibility without ``model``)."""
    from mcpcli.apphost.resource import resource_uri_of, visibility_of

    text = str(tool.get("description") or "")
    marks = ["[app]"] * bool(resource_uri_of(tool)) + ["[app only]"] * ("model" not in visibility_of(tool))
    return " ".join([*marks, text]).strip()


def _older_protocol_hint(rt: Runtime, target: Target) -> str | None:
    """When 2026-07-28 was asked for by name, a server that refuses or garbles a listing may speak an older one."""
    chosen = rt.protocol() or target.protocol
    if chosen is None or not chosen.startswith("2026"):
        return None
    return f"It may speak an older protocol than the {chosen} asked for: try --protocol auto (or legacy)."


Keep = Callable[[list[Any]], None]
"""Takes the pages of a complete listing (see ``keep_listing``)."""


async def all_pages(fetch: Any, key: str, keep: Keep | None = None, offered: object = True) -> list[dict[str, Any]]:
    """Every page of a listing (bounded: a paginator that never ends cannot hang us); ``keep`` gets the pages of a
    complete one. ``offered``: the server's capability for the kind; when it has none (None), "Method not found"
    means an empty listing — asked all the same, since a connection that skipped discovery knows no capability."""
    items: list[dict[str, Any]] = []
    pages: list[Any] = []
    cursor = None
    for _ in range(100):
        try:
            pages.append(await fetch(cursor=cursor))
        except MCPError as exc:
            if offered is not None or exc.code != t.METHOD_NOT_FOUND or pages:
                raise
            if keep is not None:
                keep(pages)  # a complete listing, of nothing
            break
        page = dump(pages[-1])
        items.extend(page.get(key) or [])
        cursor = page.get("nextCursor")
        if not cursor:
            if keep is not None:
                keep(pages)
            break
    return items


def keep_listing(rt: Runtime, target: Target, client: Client, kind: Literal["tools", "prompts"]) -> Keep:
    """Hands a complete tools or prompts listing to the listing cache (``mcpcli.net.listcache``): shell completion
    reads it, and a later call on a connection like this one (``warmcache.vouch_of``) adopts its tools."""
    from mcpcli.net import warmcache
    from mcpcli.net.listcache import remember

    return lambda pages: remember(rt.paths, target, kind, pages, client.protocol_version, warmcache.vouch_of(client))


def _emit(rt: Runtime, doc: dict[str, Any], title: str, cols: tuple[str, ...], rows: list[Any]) -> int:
    if rt.json:
        rt.out.json(doc)
    else:
        rt.out.table(title, cols, rows, f"The server has no {title.lower()}.")
    return 0


def _args_summary(schema: Any) -> str:
    usable = usable_schema(schema)
    props, required = usable.get("properties") or {}, set(usable.get("required") or [])
    from mcpcli.schemas import text

    parts = [
        f"{name}{'' if name in required else '?'}: {text(prop, usable, optional=name not in required)}"
        for name, prop in props.items()
    ]
    return ", ".join(parts)


def _prompt_args(prompt: dict[str, Any]) -> str:
    return ", ".join(f"{a['name']}{'' if a.get('required') else '?'}" for a in prompt.get("arguments") or [])


def _info(rt: Runtime, client: Client) -> int:
    """``mcpcli info``: who the server says it is (wherever it said it), the protocol spoken, what it offers and its
    instructions — from the connection alone, nothing more is asked."""
    server = server_info(client)
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


async def catalog(rt: Runtime) -> dict[str, list[dict[str, Any]]]:
    """What the start screen lists: every tool, prompt, resource and resource template (a kind refused: none)."""
    creds = credentials(rt, interactive=False)  # the app owns the terminal: sign in with `mcpcli auth login`
    tracer = rt.tracer(summaries=False)
    from mcpcli.apphost.resource import SHOWS_VIEWS  # the app shows views: it lists what a server offers such a client

    options = declared(rt, rt.resolve()[0], later=True)
    async with connect(replace(options, credentials=creds, tracer=tracer, extensions=SHOWS_VIEWS)) as client:
        return await catalog_of(client)


async def catalog_of(client: Client) -> dict[str, list[dict[str, Any]]]:
    """``catalog`` on a connection already open (the app's watch lists again on it when a list changes)."""
    kinds = {"tools": "list_tools", "prompts": "list_prompts", "resources": "list_resources"}
    kinds["resourceTemplates"] = "list_resource_templates"
    found: dict[str, list[dict[str, Any]]] = {}
    for key, method in kinds.items():
        try:
            found[key] = await all_pages(getattr(client, method), key)
        except MCPError:
            found[key] = []
    return found


def first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


async def prompt_schema(client: Client, prompt: str, pairs: list[str], keep: Keep | None = None) -> dict[str, Any]:
    """Prompt arguments are strings; the prompt's listing says which are required."""
    prompts = await all_pages(client.list_prompts, "prompts", keep)
    listed = next((p for p in prompts if p["name"] == prompt), None)
    if listed is None:
        raise no_such("prompt", prompt, [str(p["name"]) for p in prompts])
    arguments = listed.get("arguments") or []
    return {
        "type": "object",
        "properties": {a["name"]: {"type": "string"} for a in arguments},
        "required": [a["name"] for a in arguments if a.get("required")],
    }


async def input_schema(
    client: Client, tool: str, keep: Keep | None = None, seen: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The tool's inputSchema; an unknown tool is a usage error (nothing is sent). ``seen["execution"]``: the
    tool's ``execution`` (2025-11-25 task support), when asked for. A listing remembered for this connection
    (``net.warmcache``) serves when it names the tool; else the server is asked (and its answer remembered)."""
    from mcpcli.net import warmcache

    found = next((item for item in warmcache.remembered_tools(client) or () if item.name == tool), None)
    cursor, names, pages = None, list[str](), list[Any]()
    for _ in range(0 if found else 100):
        page = await client.list_tools(cursor=cursor)
        pages.append(page)
        cursor = page.next_cursor
        if not cursor:  # the whole list: completion's and the next call's (one listing cache)
            if keep is not None:
                keep(pages)
            else:
                warmcache.remember_tools(client, pages)
        names.extend(item.name for item in page.tools)
        if (found := next((item for item in page.tools if item.name == tool), None)) or not cursor:
            break
    if found is None:
        raise no_such("tool", tool, names)
    if seen is not None:
        seen["execution"] = found.execution
    return usable_schema(found.input_schema)
