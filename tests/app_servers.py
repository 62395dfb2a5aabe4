"""An MCP server that ships MCP Apps (SEP-1865, extension ``io.modelcontextprotocol/ui``), built with the SDK's
MCPServer, for the tests of ``mcpcli call TOOL --app`` and its web host. Both eras: the SDK serves 2026-07-28 and the
2025-11-25 handshake; the client picks (``mcpcli --protocol legacy``…). The view is ``tests/app_view.py`` (its
element ids and buttons are listed there).

Run it: ``python tests/app_servers.py apps [--http HOST:PORT]`` (stdio by default), as ``tests/servers.py``'s
servers run; ``build()`` returns it for an in-process SDK client.

Environment (read when the server is built):

- ``MCPCLI_TEST_APP_CSP``: JSON put as ``_meta.ui.csp`` on the views' resource contents (e.g.
  ``{"connectDomains": ["http://127.0.0.1:8123"], "resourceDomains": ["http://127.0.0.1:8123"]}``); none by default
  (the host must then apply the spec's restrictive default).
- ``MCPCLI_TEST_APP_PERMISSIONS``: JSON put as ``_meta.ui.permissions`` (e.g. ``{"clipboardWrite": {}}``).
- ``MCPCLI_TEST_APP_KEY``: a secret that seals ``requestState`` (the SDK seals it with AES-GCM; by default with a
  key of this process only, so a flow resumed by another server process is refused): set it for ``resume --app``.
- ``MCPCLI_TEST_APP_RECORD``: a file to which every ``tools/list``, ``tools/call``, ``resources/list`` and
  ``resources/read`` the server receives is appended as one JSON line: ``method``, ``name`` (tools/call) or ``uri``
  (resources/read), ``arguments``, ``protocol`` (the request's protocol version), ``ui`` (the
  ``io.modelcontextprotocol/ui`` settings the client declared for this request — on 2026-07-28 in the request's
  ``_meta``, before in the handshake — or null), ``requestState`` (as the tool sees it: unsealed by the SDK) and
  ``inputResponses`` (the keys answered).
  It proves what the host sent: ``model_only`` never called, the extension declared on every request, a state
  echoed exactly.

Tools (every result's text is plain; ``structuredContent`` is a JSON object):

- ``dashboard(name, fetch_url="", img_url="")``: ``_meta.ui.resourceUri`` ``ui://apps/dashboard``; returns
  "Hello, NAME!" and ``{"greeting": "Hello, NAME!", "name": NAME}``. ``fetch_url``/``img_url`` are what the view's
  ``#probe`` button tries to reach (a CSP test declares one domain and leaves the other out).
- ``provision_app(name="app")``: ``_meta.ui.visibility`` ["app"] (no resourceUri: a tool only the view calls).
  Multi-round: on 2026-07-28 the first leg returns an ``InputRequiredResult`` with ``input_requests`` {"setup": a
  form: ``region`` (enum eu-west/us-east/ap-south, required), ``confirm`` (boolean, required)} and
  ``request_state`` ``provision_state(name)`` (a JSON text with non-ASCII, quotes, a backslash and trailing
  blanks; the SDK seals it, so the wire value is an opaque token, and a retry whose state differs by one byte is
  refused with a JSON-RPC error); the retry with the answer gets the final result. Before 2026-07-28 it asks the
  same form over the back-channel (``elicitation/create``). Final text: "provisioned NAME in REGION
  (confirm=true|false)"; structured ``{"name", "region", "confirm", "requestState", "echoedExactly"}`` —
  ``requestState`` the state the retry brought, unsealed (null on 2025-11-25), ``echoedExactly`` whether it is
  ``provision_state(name)`` (null on 2025-11-25). A declined/cancelled answer: an error result (isError)
  "provision_app: decline" (or cancel).
- ``model_only()``: ``_meta.ui.visibility`` ["model"]: the view must never reach it. Returns "model_only call N".
- ``calls()``: how often each tool was called in this process, as JSON text (``{"model_only": 0, …}``).
- ``ui_declared()``: whether this very request declared the extension, as JSON text
  ``{"declared": bool, "settings": {...}|null, "protocol": "…"}``.
- ``gated_view(name)``: listed by ``tools/list`` only when that request declared the extension with the
  ``text/html;profile=mcp-app`` MIME type (as the spec tells servers to: SDK's ``client_supports_apps``); its view
  is the dashboard. Its result says whether the call declared it: "gated NAME (ui declared: true|false)".
- ``needs_input_first(name)``: the dashboard's view, but the launching call itself needs an answer: it asks
  ``input_requests`` {"color": form ``color`` enum red/green/blue} (state "needs-color"), then returns
  "NAME in COLOR" / ``{"name", "color"}``; a declined or cancelled answer gives an error result
  "needs_input_first: decline" (or cancel) — the view must then get ``ui/notifications/tool-cancelled``.
- ``declinable(name)``: the dashboard's view; asks {"go": form ``go`` boolean "Open NAME?"} (state "declinable");
  accepted and true: "opened NAME"; declined, cancelled or false: error result "declinable: declined" — the view
  must get ``ui/notifications/tool-cancelled``.
- The "why it did not render" tools, each ``(name="world")``, returning what ``dashboard`` returns, each bound to
  one view: ``blob_view`` → ``ui://apps/blob`` (the page base64 in ``blob``: works), ``wrong_mime`` →
  ``ui://apps/wrong-mime`` (``text/html``), ``no_contents`` → ``ui://apps/empty`` (``contents: []``),
  ``two_contents`` → ``ui://apps/two`` (two contents), ``unknown_view`` → ``ui://apps/missing`` (not served:
  ``resources/read`` fails -32602), ``silent_view`` → ``ui://apps/silent`` (a page that never sends
  ``ui/initialize``), ``flat_meta`` → the dashboard through the deprecated flat ``_meta["ui/resourceUri"]`` only.

Resources (all listed, except ``ui://apps/missing``): the views above and ``note://apps/readme`` (``text/plain``,
"readme of the apps server", what the view's ``#read`` button reads).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from app_view import view_html
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, Apps
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError

DASHBOARD = "ui://apps/dashboard"
BLOB = "ui://apps/blob"
WRONG_MIME = "ui://apps/wrong-mime"
EMPTY = "ui://apps/empty"
TWO = "ui://apps/two"
MISSING = "ui://apps/missing"
SILENT = "ui://apps/silent"
README = "note://apps/readme"
BROKEN_TOOLS = {
    "blob_view": BLOB,
    "wrong_mime": WRONG_MIME,
    "no_contents": EMPTY,
    "two_contents": TWO,
    "unknown_view": MISSING,
    "silent_view": SILENT,
}
"""The tools whose view is each one way of failing (``blob_view``'s works: base64 is allowed)."""
REGIONS = ["eu-west", "us-east", "ap-south"]
COLORS = ["red", "green", "blue"]
UI_SETTINGS = {"mimeTypes": [APP_MIME_TYPE]}
"""What a host declares for the extension."""


def provision_state(name: str) -> str:
    """The exact ``requestState`` ``provision_app`` sends on its first leg: a host must echo it byte for byte."""
    return json.dumps({"tool": "provision_app", "name": name, "nonce": 'ü ✓ "q" \\ end'}, ensure_ascii=False) + "  "


def _text(text: str, structured: dict[str, Any] | None = None, *, error: bool = False) -> t.CallToolResult:
    return t.CallToolResult(
        content=[t.TextContent(type="text", text=text)], structured_content=structured, is_error=error
    )


def _declared(ctx: Any) -> dict[str, Any] | None:
    """The extension's settings this request's client declared (``ctx``: a low-level request context or Context)."""
    session = ctx.request_context.session if isinstance(ctx, Context) else ctx.session
    capabilities = session.client_capabilities
    extensions = capabilities.extensions if capabilities else None
    settings = (extensions or {}).get(EXTENSION_ID)
    return dict(settings) if isinstance(settings, dict) else None


def _supports_apps(ctx: Any) -> bool:
    settings = _declared(ctx)
    return settings is not None and APP_MIME_TYPE in (settings.get("mimeTypes") or [])


def _legacy(ctx: Context) -> bool:
    return bool(ctx.protocol_version) and str(ctx.protocol_version) < "2026-07-28"


async def _ask(ctx: Context, key: str, message: str, properties: dict[str, Any], state: str) -> Any:
    """One form: its answer (an ElicitResult), or on 2026-07-28 the ``InputRequiredResult`` that asks it first.
    Before 2026-07-28 it is asked over the back-channel (``elicitation/create``)."""
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    form = t.ElicitRequestFormParams(message=message, requested_schema=schema)
    if _legacy(ctx):
        return await ctx.request_context.session.send_request(t.ElicitRequest(params=form), t.ElicitResult)
    answer = (ctx.input_responses or {}).get(key)
    if isinstance(answer, t.ElicitResult):
        return answer
    return t.InputRequiredResult(input_requests={key: t.ElicitRequest(params=form)}, request_state=state)


def _views() -> dict[str, list[t.TextResourceContents | t.BlobResourceContents]]:
    """Each served ``ui://`` URI's ``resources/read`` contents (``_meta.ui`` from the environment)."""
    ui: dict[str, Any] = {}
    if csp := os.environ.get("MCPCLI_TEST_APP_CSP"):
        ui["csp"] = json.loads(csp)
    if permissions := os.environ.get("MCPCLI_TEST_APP_PERMISSIONS"):
        ui["permissions"] = json.loads(permissions)
    meta = {"ui": ui} if ui else None
    page = view_html()

    def text(uri: str, html: str = page, mime: str = APP_MIME_TYPE) -> t.TextResourceContents:
        return t.TextResourceContents(uri=uri, mime_type=mime, text=html, _meta=meta)

    blob = t.BlobResourceContents(
        uri=BLOB, mime_type=APP_MIME_TYPE, blob=base64.b64encode(view_html("blob view").encode()).decode(), _meta=meta
    )
    return {
        DASHBOARD: [text(DASHBOARD)],
        BLOB: [blob],
        WRONG_MIME: [text(WRONG_MIME, mime="text/html")],
        EMPTY: [],
        TWO: [text(TWO), text(TWO, view_html("second view"))],
        SILENT: [text(SILENT, view_html("silent view", initialize=False))],
        README: [t.TextResourceContents(uri=README, mime_type="text/plain", text="readme of the apps server")],
    }


def _record(ctx: Any, method: str, params: Any) -> None:
    path = os.environ.get("MCPCLI_TEST_APP_RECORD")
    if not path:
        return
    line: dict[str, Any] = {"method": method, "protocol": str(ctx.protocol_version), "ui": _declared(ctx)}
    if isinstance(params, t.CallToolRequestParams):
        line.update(name=params.name, arguments=params.arguments, requestState=params.request_state)
        line["inputResponses"] = sorted(params.input_responses or {})
    elif isinstance(params, t.ReadResourceRequestParams):
        line["uri"] = str(params.uri)
    with Path(path).open("a", encoding="utf-8") as f:
        f.write(json.dumps(line, ensure_ascii=False) + "\n")


def build() -> MCPServer:
    """The ``apps`` server (see the module's docstring)."""
    key = os.environ.get("MCPCLI_TEST_APP_KEY")
    security = RequestStateSecurity(keys=[key]) if key else None
    # Apps(): declares the extension (capabilities.extensions), binds nothing: the tools below stamp their own _meta.
    server = MCPServer("apps", version="1.0", extensions=[Apps()], request_state_security=security)
    calls: Counter[str] = Counter()
    views = _views()

    @server.tool(meta={"ui": {"resourceUri": DASHBOARD}}, structured_output=False)
    async def dashboard(name: str, fetch_url: str = "", img_url: str = "") -> t.CallToolResult:
        """Greets NAME in an interactive dashboard."""
        calls["dashboard"] += 1
        greeting = f"Hello, {name}!"
        return _text(greeting, {"greeting": greeting, "name": name})

    @server.tool(meta={"ui": {"visibility": ["app"]}}, structured_output=False)
    async def provision_app(ctx: Context, name: str = "app") -> t.CallToolResult | t.InputRequiredResult:
        """Provisions an app (called by the view only); asks where, and to confirm."""
        calls["provision_app"] += 1
        properties = {
            "region": {"type": "string", "title": "Region", "enum": REGIONS},
            "confirm": {"type": "boolean", "title": "Provision it"},
        }
        answer = await _ask(ctx, "setup", f"Provision {name}?", properties, provision_state(name))
        if isinstance(answer, t.InputRequiredResult):
            return answer
        if answer.action != "accept":
            return _text(f"provision_app: {answer.action}", error=True)
        region, confirm = (answer.content or {}).get("region"), bool((answer.content or {}).get("confirm"))
        state = None if _legacy(ctx) else ctx.request_state
        echoed = None if _legacy(ctx) else state == provision_state(name)
        structured = {"name": name, "region": region, "confirm": confirm, "requestState": state}
        text = f"provisioned {name} in {region} (confirm={'true' if confirm else 'false'})"
        return _text(text, {**structured, "echoedExactly": echoed})

    @server.tool(meta={"ui": {"visibility": ["model"]}})
    async def model_only() -> str:
        """Only the model may call this; a view's call must be refused by the host."""
        calls["model_only"] += 1
        return f"model_only call {calls['model_only']}"

    @server.tool(name="calls")
    async def calls_tool() -> str:
        """How often each tool was called in this process."""
        return json.dumps({"model_only": 0, **calls}, sort_keys=True)

    @server.tool()
    async def ui_declared(ctx: Context) -> str:
        """Whether this request declared the MCP Apps extension."""
        settings = _declared(ctx)
        return json.dumps(
            {"declared": settings is not None, "settings": settings, "protocol": str(ctx.protocol_version)}
        )

    @server.tool(meta={"ui": {"resourceUri": DASHBOARD}})
    async def gated_view(ctx: Context, name: str = "world") -> str:
        """Listed only to a client that declared the MCP Apps extension."""
        calls["gated_view"] += 1
        return f"gated {name} (ui declared: {'true' if _supports_apps(ctx) else 'false'})"

    @server.tool(meta={"ui": {"resourceUri": DASHBOARD}}, structured_output=False)
    async def needs_input_first(ctx: Context, name: str = "world") -> t.CallToolResult | t.InputRequiredResult:
        """Opens the dashboard, but first asks which colour."""
        calls["needs_input_first"] += 1
        color = {"color": {"type": "string", "title": "Colour", "enum": COLORS}}
        answer = await _ask(ctx, "color", f"Which colour for {name}?", color, "needs-color")
        if isinstance(answer, t.InputRequiredResult):
            return answer
        if answer.action != "accept":
            return _text(f"needs_input_first: {answer.action}", error=True)
        picked = (answer.content or {}).get("color")
        return _text(f"{name} in {picked}", {"name": name, "color": picked})

    @server.tool(meta={"ui": {"resourceUri": DASHBOARD}}, structured_output=False)
    async def declinable(ctx: Context, name: str = "world") -> t.CallToolResult | t.InputRequiredResult:
        """Opens the dashboard if the user says so."""
        calls["declinable"] += 1
        go = {"go": {"type": "boolean", "title": f"Open {name}"}}
        answer = await _ask(ctx, "go", f"Open {name}?", go, "declinable")
        if isinstance(answer, t.InputRequiredResult):
            return answer
        if answer.action != "accept" or not (answer.content or {}).get("go"):
            return _text("declinable: declined", error=True)
        return _text(f"opened {name}", {"name": name})

    def broken(tool: str, meta: dict[str, Any]) -> None:
        async def fn(name: str = "world") -> t.CallToolResult:
            calls[tool] += 1
            greeting = f"Hello, {name}!"
            return _text(greeting, {"greeting": greeting, "name": name})

        description = f"Greets NAME; its view is {meta}."
        server.add_tool(fn, name=tool, description=description, meta=meta, structured_output=False)

    for tool, uri in BROKEN_TOOLS.items():
        broken(tool, {"ui": {"resourceUri": uri}})
    broken("flat_meta", {"ui/resourceUri": DASHBOARD})

    _serve_views(server, views)
    _gate_and_record(server)
    return server


def _serve_views(server: MCPServer, views: dict[str, list[t.TextResourceContents | t.BlobResourceContents]]) -> None:
    """``resources/list`` and ``resources/read`` by hand: MCPServer's own cannot serve no or two contents."""
    low = server._lowlevel_server

    async def list_resources(ctx: Any, params: t.PaginatedRequestParams) -> t.ListResourcesResult:
        _record(ctx, "resources/list", params)
        listed = [
            t.Resource(uri=uri, name=uri.rsplit("/", 1)[-1], mime_type=APP_MIME_TYPE if uri != README else "text/plain")
            for uri in views
        ]
        return t.ListResourcesResult(resources=listed)

    async def read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        _record(ctx, "resources/read", params)
        uri = str(params.uri)
        if uri not in views:
            raise MCPError(code=t.INVALID_PARAMS, message=f"Unknown resource: {uri}", data={"uri": uri})
        return t.ReadResourceResult(contents=views[uri])

    low.add_request_handler("resources/list", t.PaginatedRequestParams, list_resources)
    low.add_request_handler("resources/read", t.ReadResourceRequestParams, read_resource)


def _gate_and_record(server: MCPServer) -> None:
    """``tools/list`` hides ``gated_view`` from a request that did not declare the extension; both tool methods
    are recorded (``MCPCLI_TEST_APP_RECORD``)."""
    low = server._lowlevel_server
    listing = low.get_request_handler("tools/list")
    calling = low.get_request_handler("tools/call")
    assert listing is not None and calling is not None

    async def list_tools(ctx: Any, params: Any) -> Any:
        _record(ctx, "tools/list", params)
        result = await listing.handler(ctx, params)
        if not _supports_apps(ctx):
            result = result.model_copy(update={"tools": [x for x in result.tools if x.name != "gated_view"]})
        return result

    async def call_tool(ctx: Any, params: Any) -> Any:
        _record(ctx, "tools/call", params)
        return await calling.handler(ctx, params)

    low.add_request_handler("tools/list", listing.params_type, list_tools)
    low.add_request_handler("tools/call", calling.params_type, call_tool)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["apps"])
    parser.add_argument("--http")
    args = parser.parse_args()
    built = build()
    if args.http:
        host, _, port = args.http.rpartition(":")
        anyio.run(lambda: built.run_streamable_http_async(host=host, port=int(port)))
    else:
        anyio.run(built.run_stdio_async)


if __name__ == "__main__":
    main()
