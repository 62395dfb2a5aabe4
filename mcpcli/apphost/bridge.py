"""The bridge between an MCP App view and the server connection (SEP-1865, ``io.modelcontextprotocol/ui``).

The view — read and checked by ``apphost.resource``, shown by ``apphost.host`` — speaks JSON-RPC over the loopback
host's message path. This module answers it through the run's server connection: ``ui/initialize`` with the host
context, the tool's input and result, ``tools/call`` (refused before any server traffic when the tool's visibility
excludes the app; otherwise driven by mcpcli's own loop, multi-round and stored, through the command's
``call_tool``), ``resources/read``, ``ui/open-link`` (the user's consent first), ``ui/message`` and model-context
updates (told to the command, which shows them), display mode, logging, and ``ui/resource-teardown``.

The bridge words no command and never prompts: what a person must see or decide goes to the command's callbacks.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from mcpcli.apphost.resource import visibility_of
from mcpcli.errors import McpcliError

log = logging.getLogger(__name__)

APPS_PROTOCOL = "2026-01-26"
"""The MCP Apps protocol version the bridge speaks to a view (``ui/initialize``)."""

HOST_MODES = ("inline", "fullscreen")
"""The display modes the host page can show: in its flow, or filling the tab."""
TEARDOWN_WAIT = 2.0
"""Seconds the view gets to answer ``ui/resource-teardown`` before it is closed anyway."""

JsonRpc = dict[str, Any]


class ViewChannel(Protocol):
    """What the bridge needs of a shown view (``apphost.host.View``)."""

    async def send(self, message: JsonRpc) -> None: ...

    async def receive(self) -> JsonRpc: ...

    async def set_display_mode(self, mode: str) -> None: ...


class AppRefused(McpcliError):
    """A view's request the host will not carry out: its JSON-RPC error (code -32000 unless said)."""

    def __init__(self, message: str, *, code: int = -32000) -> None:
        super().__init__(message)
        self.code = code


Event = Callable[[str, dict[str, Any]], None]
"""What the bridge tells the command: ``("message", params)``, ``("model-context", params)``, ``("log", params)``,
``("refused", {"method", "reason"})``, ``("csp-violation", report)``, ``("initialized", {...})``."""


@dataclass
class Bridge:
    """One view's bridge. ``tools``: the server's tools by name (for the visibility guard); ``call_tool`` and
    ``read_resource`` carry a view's requests to the server (``call_tool`` drives the flow: rounds asked and
    stored, the view gets only the final result); ``consent_link`` asks the user before a link is opened."""

    view: ViewChannel
    tool: Mapping[str, Any]
    tools: Mapping[str, Mapping[str, Any]]
    call_tool: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
    read_resource: Callable[[str], Awaitable[Mapping[str, Any]]]
    consent_link: Callable[[str], Awaitable[bool]]
    on_event: Event
    host_info: dict[str, Any]
    context: dict[str, Any] = field(default_factory=dict)
    """The host context sent at ``ui/initialize`` (theme, locale, sizes…); ``toolInfo`` and modes are added."""
    sandbox: dict[str, Any] = field(default_factory=dict)
    """What the host granted: ``{"csp": {...domains}, "permissions": {...}}`` (``hostCapabilities.sandbox``)."""
    request_id: Any = None
    """The JSON-RPC id of the launching ``tools/call``, when known (``hostContext.toolInfo.id``)."""
    record: Callable[[str, JsonRpc], None] | None = None
    """Every message between view and host, ``("from-view"|"to-view", message)``: the trace and the session."""

    initialized: anyio.Event = field(default_factory=anyio.Event)
    closed: anyio.Event = field(default_factory=anyio.Event)
    display_mode: str = "inline"
    app_modes: tuple[str, ...] | None = None
    model_context: dict[str, Any] | None = None
    _input: dict[str, Any] | None = None
    _ending: JsonRpc | None = None
    _sent_input: bool = False
    _sent_ending: bool = False
    _next_id: int = 0
    _serving: bool = False
    _waiting: dict[Any, Any] = field(default_factory=dict)
    _lock: anyio.Lock = field(default_factory=anyio.Lock)

    # --- what the host tells the view ---

    async def tool_input(self, arguments: dict[str, Any]) -> None:
        """The launching call's complete arguments (sent once the view has initialized)."""
        self._input = dict(arguments)
        await self._deliver()

    async def tool_result(self, result: Mapping[str, Any]) -> None:
        self._ending = {"method": "ui/notifications/tool-result", "params": dict(result)}
        await self._deliver()

    async def tool_cancelled(self, reason: str) -> None:
        self._ending = {"method": "ui/notifications/tool-cancelled", "params": {"reason": reason}}
        await self._deliver()

    async def _deliver(self) -> None:
        """Nothing before the view's ``initialized``; then the input once, then the result or the cancellation. A
        view whose page closed meanwhile (before ``run`` read that) is noted closed: nobody is left to tell."""
        from mcpcli.apphost.host import ViewClosed

        async with self._lock:
            if not self.initialized.is_set() or self.closed.is_set():
                return
            try:
                if not self._sent_input and self._input is not None:
                    self._sent_input = True
                    await self._send(
                        {
                            "jsonrpc": "2.0",
                            "method": "ui/notifications/tool-input",
                            "params": {"arguments": self._input},
                        }
                    )
                if self._sent_input and not self._sent_ending and self._ending is not None:
                    self._sent_ending = True
                    await self._send({"jsonrpc": "2.0", **self._ending})
            except ViewClosed:
                self.closed.set()

    async def teardown(self, reason: str, wait: float = TEARDOWN_WAIT) -> bool:
        """``ui/resource-teardown``, and up to ``wait`` seconds for its answer; whether the view answered. A view
        that never initialized is not sent anything (the spec's rule: nothing before ``initialized``). Works while
        ``run`` serves the view and after it was cancelled (Ctrl-C): then it reads the answer itself."""
        if not self.initialized.is_set() or self.closed.is_set():
            return False
        answered = anyio.Event()
        self._next_id += 1
        key = f"mcpcli-teardown-{self._next_id}"
        self._waiting[key] = answered
        try:
            with anyio.move_on_after(wait):
                await self._send(
                    {"jsonrpc": "2.0", "id": key, "method": "ui/resource-teardown", "params": {"reason": reason}}
                )
                if self._serving:
                    await answered.wait()
                else:
                    await self._read_until(answered)
        except Exception:  # boundary: the page is gone, nothing to wait for
            log.debug("teardown could not be completed", exc_info=True)
        finally:
            self._waiting.pop(key, None)
        return answered.is_set()

    async def _read_until(self, answered: anyio.Event) -> None:
        """Read the view's messages (recorded, answers matched; requests left unanswered: the view is going)."""
        while not answered.is_set():
            message = await self.view.receive()
            if self.record is not None:
                self.record("from-view", message)
            if "method" not in message and message.get("id") in self._waiting:
                self._waiting[message["id"]].set()

    async def _send(self, message: JsonRpc) -> None:
        if self.record is not None:
            self.record("to-view", message)
        await self.view.send(message)

    # --- what the view asks ---

    async def run(self) -> None:
        """Serve the view until it is gone: each request answered in its own task (a tool call that waits on a
        person must not hold a ``ping``). ``closed`` is set when the view or its page went away."""
        from mcpcli.apphost.host import ViewClosed

        self._serving = True
        try:
            async with anyio.create_task_group() as tg:
                while True:
                    try:
                        message = await self.view.receive()
                    except ViewClosed:
                        self.closed.set()
                        tg.cancel_scope.cancel()
                        return
                    if self.record is not None:
                        self.record("from-view", message)
                    self._take(message, tg)
        finally:
            self._serving = False

    def _take(self, message: JsonRpc, tg: Any) -> None:
        """Sort one message from the view without waiting on it: a CSP report is told to the command, an answer
        wakes the host's request it answers, a request or notification gets a task of its own. What is not JSON-RPC
        2.0, or has an id that cannot be answered, is dropped: a view cannot make the host raise."""
        violation = message.get("mcpcli/csp-violation")
        if isinstance(violation, Mapping):
            self.on_event("csp-violation", dict(violation))
            return
        if message.get("jsonrpc") != "2.0":
            log.debug("a view message that is not JSON-RPC 2.0 was dropped")
            return
        method = message.get("method")
        msg_id = message.get("id")
        if not isinstance(method, str):
            if msg_id in self._waiting:  # an answer to the host's request (teardown)
                self._waiting[msg_id].set()
            return
        params = message.get("params")
        params = dict(params) if isinstance(params, Mapping) else {}
        if msg_id is None:
            tg.start_soon(self._notified, method, params)
        elif isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool):
            tg.start_soon(self._answer, msg_id, method, params)

    async def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "ui/notifications/initialized":
            self.initialized.set()
            self.on_event("initialized", {})
            await self._deliver()
        elif method == "notifications/message":
            self.on_event("log", params)
        # size-changed: the page resized the frame itself; the rest is recorded, nothing to do

    async def _answer(self, msg_id: str | int, method: str, params: dict[str, Any]) -> None:
        """Every request gets one reply, result or JSON-RPC error, whatever its handler raised (a refusal keeps its
        code, a server's error goes back as the server said it); a view already closed is not written to."""
        try:
            result = await self._handle(method, params)
            reply: JsonRpc = {"jsonrpc": "2.0", "id": msg_id, "result": result}
        except AppRefused as exc:
            reply = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": exc.code, "message": exc.message}}
        except McpcliError as exc:
            reply = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32000, "message": exc.message}}
        except Exception as exc:  # boundary: a server's JSON-RPC error (MCPError) goes back to the view as it was
            error = getattr(exc, "error", None)
            code = getattr(error, "code", None)
            message = getattr(error, "message", None) or str(exc) or type(exc).__name__
            reply = {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": {"code": code if isinstance(code, int) else -32603, "message": str(message)},
            }
        if self.closed.is_set():
            return
        try:
            await self._send(reply)
        except Exception:  # boundary: the page went away while the request ran
            log.debug("a reply to the view could not be sent", exc_info=True)

    async def _handle(self, method: str, params: dict[str, Any]) -> Any:
        handler = _HANDLERS.get(method)
        if handler is None:
            raise AppRefused(f"Method not found: {method[:80]}", code=-32601)
        return await handler(self, params)

    async def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        """``ui/initialize``: the host context the command gave, with the launching tool and the display modes,
        and only the capabilities the bridge serves; the sandbox granted is what the host already enforces. The
        display modes the view says it has bound what it may later ask for."""
        caps = params.get("appCapabilities")
        modes = caps.get("availableDisplayModes") if isinstance(caps, Mapping) else None
        if isinstance(modes, list):
            self.app_modes = tuple(m for m in modes if isinstance(m, str))
        info = params.get("appInfo")
        self.on_event("initialize", {"appInfo": dict(info) if isinstance(info, Mapping) else None})
        tool_info: dict[str, Any] = {"tool": dict(self.tool)}
        if self.request_id is not None:
            tool_info["id"] = self.request_id
        context = {
            **self.context,
            "toolInfo": tool_info,
            "displayMode": self.display_mode,
            "availableDisplayModes": list(HOST_MODES),
        }
        return {
            "protocolVersion": APPS_PROTOCOL,
            "hostInfo": self.host_info,
            "hostCapabilities": {
                "openLinks": {},
                "serverTools": {},
                "serverResources": {},
                "logging": {},
                "sandbox": self.sandbox,
            },
            "hostContext": context,
        }

    async def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        """A view's ``tools/call``: refused before any server traffic unless the server lists the tool and lets
        apps call it (``_meta.ui.visibility``); otherwise the command's own flow runs it (rounds asked and stored)
        and the view gets only the final result."""
        name = params.get("name")
        if not isinstance(name, str):
            raise AppRefused("tools/call needs a tool name.", code=-32602)
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise AppRefused("tools/call arguments must be an object.", code=-32602)
        tool = self.tools.get(name)
        if tool is None:
            self._refused("tools/call", f"the view called {name!r}, a tool the server does not list")
            raise AppRefused(f"Unknown tool: {name[:80]}", code=-32602)
        if "app" not in visibility_of(tool):
            self._refused("tools/call", f"the view called {name!r}, which the server keeps from apps (visibility)")
            raise AppRefused(f"Tool {name[:80]} is not available to apps (its visibility excludes the app).")
        return await self.call_tool(name, dict(arguments or {}))

    async def _read(self, params: dict[str, Any]) -> Any:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise AppRefused("resources/read needs a uri.", code=-32602)
        return await self.read_resource(uri)

    async def _open_link(self, params: dict[str, Any]) -> dict[str, Any]:
        url = params.get("url")
        if not isinstance(url, str) or not url.lower().startswith(("https://", "http://")):
            self._refused("ui/open-link", "the view asked to open a link that is not http(s)")
            raise AppRefused("Invalid URL")
        if not await self.consent_link(url):
            raise AppRefused("Link opening denied by user")
        return {}

    async def _message(self, params: dict[str, Any]) -> dict[str, Any]:
        content = params.get("content")
        if params.get("role") != "user" or not isinstance(content, (Mapping, list)):
            raise AppRefused("Invalid message format", code=-32602)
        self.on_event("message", params)
        return {}

    async def _model_context(self, params: dict[str, Any]) -> dict[str, Any]:
        self.model_context = params
        self.on_event("model-context", params)
        return {}

    async def _display_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        mode = params.get("mode")
        allowed = mode in HOST_MODES and (self.app_modes is None or mode in self.app_modes)
        if isinstance(mode, str) and allowed and mode != self.display_mode:
            self.display_mode = mode
            await self.view.set_display_mode(mode)
            await self._send(
                {"jsonrpc": "2.0", "method": "ui/notifications/host-context-changed", "params": {"displayMode": mode}}
            )
        return {"mode": self.display_mode}

    async def _ping(self, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _refused(self, method: str, reason: str) -> None:
        self.on_event("refused", {"method": method, "reason": reason})


_HANDLERS: dict[str, Callable[[Bridge, dict[str, Any]], Awaitable[Any]]] = {
    "ui/initialize": Bridge._initialize,
    "ping": Bridge._ping,
    "tools/call": Bridge._call,
    "resources/read": Bridge._read,
    "ui/open-link": Bridge._open_link,
    "ui/message": Bridge._message,
    "ui/update-model-context": Bridge._model_context,
    "ui/request-display-mode": Bridge._display_mode,
}


def app_tools(tools: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The server's tools by name (the first of a repeated name wins, as a listing is read)."""
    named: dict[str, Mapping[str, Any]] = {}
    for tool in tools:
        name = tool.get("name")
        if isinstance(name, str) and name not in named:
            named[name] = tool
    return named
