"""A tool's MCP App view (SEP-1865, ``io.modelcontextprotocol/ui``): found on the tool, read and checked.

A tool names its view in ``_meta.ui.resourceUri``: a ``ui://`` resource of type ``text/html;profile=mcp-app``. The
server wrote it, so nothing in it is taken on trust: ``load_app`` reads it and refuses, with one clear line for each
way it fails (``AppUnavailable``), anything that is not exactly one UTF-8 document of that type within
``APP_HTML_MAX``; what its ``_meta.ui`` declares is kept by shape only (the CSP domains and permissions of
``apphost.csp``'s one table), and the host later refuses what is not a plain origin. ``SHOWS_VIEWS`` is what a run
that can show views declares to the server.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpcli.apphost.csp import DOMAIN_KEYS, PERMISSIONS
from mcpcli.errors import McpcliError

UI_EXTENSION = "io.modelcontextprotocol/ui"
"""The extension's identifier, declared (with ``UI_SETTINGS``) only by a run that can show a view."""
APP_MIME = "text/html;profile=mcp-app"
UI_SETTINGS: dict[str, Any] = {"mimeTypes": [APP_MIME]}
SHOWS_VIEWS: dict[str, dict[str, Any]] = {UI_EXTENSION: UI_SETTINGS}
"""``connect(extensions=…)`` of a run that can show a view: ``call --app``, ``resume --app`` and the whole TUI."""
APP_HTML_MAX = 8 * 1024 * 1024
"""The largest view document accepted (decoded): beyond it the app is refused, not shown."""


class AppUnavailable(McpcliError):
    """Why a tool's view cannot be shown: one line (exit 4: the server's app is not what the spec asks)."""

    default_title = "App not shown"


def resource_uri_of(tool: Mapping[str, Any]) -> str | None:
    """The tool's view: ``_meta.ui.resourceUri`` (or the deprecated flat ``_meta["ui/resourceUri"]``)."""
    meta = tool.get("_meta") or tool.get("meta") or {}
    if not isinstance(meta, Mapping):
        return None
    ui = meta.get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, Mapping) else None
    if uri is None:
        uri = meta.get("ui/resourceUri")
    return uri if isinstance(uri, str) and uri else None


def visibility_of(tool: Mapping[str, Any]) -> tuple[str, ...]:
    """Who may call the tool: ``_meta.ui.visibility``, ``("model", "app")`` when absent or malformed."""
    meta = tool.get("_meta") or tool.get("meta") or {}
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    seen = ui.get("visibility") if isinstance(ui, Mapping) else None
    if not isinstance(seen, list) or not all(isinstance(v, str) for v in seen):
        return ("model", "app")
    return tuple(seen)


@dataclass(frozen=True)
class AppResource:
    """A view, read and checked: its document and what its ``_meta.ui`` declares."""

    uri: str
    html: str
    csp: dict[str, list[str]] = field(default_factory=dict)
    permissions: dict[str, Any] = field(default_factory=dict)
    prefers_border: bool | None = None
    domain: str | None = None


async def load_app(read: Callable[[str], Awaitable[Mapping[str, Any]]], uri: str) -> AppResource:
    """Read ``uri`` with ``read`` (``resources/read``, wire JSON) and check it is one MCP App view; else one line
    saying why (``AppUnavailable``)."""
    from mcpcli.display import sanitize

    shown = sanitize(uri)[:200]
    if not uri.startswith("ui://"):
        raise AppUnavailable(f"The tool's view is {shown}, not a ui:// resource.", hint=_ASK_AUTHOR)
    try:
        result = await read(uri)
    except McpcliError as exc:
        raise AppUnavailable(f"The view {shown} could not be read: {exc.message}", hint=_UNKNOWN_HINT) from None
    except Exception as exc:  # boundary: the SDK raises MCPError, a transport may raise its own
        message = getattr(getattr(exc, "error", None), "message", None) or str(exc) or type(exc).__name__
        raise AppUnavailable(
            f"The view {shown} could not be read: {sanitize(str(message))}", hint=_UNKNOWN_HINT
        ) from None
    contents = result.get("contents")
    if not isinstance(contents, list) or not contents:
        raise AppUnavailable(f"The server returned no content for the view {shown}.", hint=_ASK_AUTHOR)
    if len(contents) > 1:
        raise AppUnavailable(
            f"The server returned {len(contents)} contents for the view {shown}; a view is exactly one.",
            hint=_ASK_AUTHOR,
        )
    content = contents[0] if isinstance(contents[0], Mapping) else {}
    mime = content.get("mimeType")
    if not isinstance(mime, str) or mime.replace(" ", "").lower() != APP_MIME:
        said = sanitize(mime) if isinstance(mime, str) else "no MIME type"
        raise AppUnavailable(f"The view {shown} is {said}, not {APP_MIME}: not an MCP App view.", hint=_ASK_AUTHOR)
    html = _document(content, shown)
    meta = content.get("_meta") or content.get("meta") or {}
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    ui = ui if isinstance(ui, Mapping) else {}
    border = ui.get("prefersBorder")
    domain = ui.get("domain")
    return AppResource(
        uri=uri,
        html=html,
        csp=_csp(ui.get("csp")),
        permissions=_permissions(ui.get("permissions")),
        prefers_border=border if isinstance(border, bool) else None,
        domain=domain if isinstance(domain, str) else None,
    )


_ASK_AUTHOR = (
    "The server's app does not follow the MCP Apps spec; tell its author (the tool's result is still printed)."
)
_UNKNOWN_HINT = "Check the tool's _meta.ui.resourceUri against the server's resources: mcpcli resources"


def _document(content: Mapping[str, Any], shown: str) -> str:
    """The view's HTML from its ``text`` or base64 ``blob``: refused (one line, the author to tell) when it is
    neither, not base64, past ``APP_HTML_MAX`` decoded, or not UTF-8."""
    text, blob = content.get("text"), content.get("blob")
    if isinstance(text, str):
        raw = text.encode("utf-8", "surrogatepass")
    elif isinstance(blob, str):
        try:
            raw = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            raise AppUnavailable(f"The view {shown} is a blob that is not base64.", hint=_ASK_AUTHOR) from None
    else:
        raise AppUnavailable(f"The view {shown} has neither text nor blob.", hint=_ASK_AUTHOR)
    if len(raw) > APP_HTML_MAX:
        raise AppUnavailable(
            f"The view {shown} is {len(raw) // 1024 // 1024} MiB; views up to {APP_HTML_MAX // 1024 // 1024} MiB "
            "are shown.",
            hint=_ASK_AUTHOR,
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise AppUnavailable(f"The view {shown} is not UTF-8 text.", hint=_ASK_AUTHOR) from None


def _csp(declared: Any) -> dict[str, list[str]]:
    """The CSP declarations as lists of strings (shape only: the host refuses what is not a plain origin)."""
    if not isinstance(declared, Mapping):
        return {}
    kept: dict[str, list[str]] = {}
    for key in DOMAIN_KEYS:
        values = declared.get(key)
        if isinstance(values, list):
            kept[key] = [v for v in values if isinstance(v, str)][:64]
    return kept


def _permissions(declared: Any) -> dict[str, Any]:
    if not isinstance(declared, Mapping):
        return {}
    return {key: {} for key in PERMISSIONS if isinstance(declared.get(key), Mapping)}
