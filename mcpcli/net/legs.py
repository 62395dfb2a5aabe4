"""Where mcpcli reaches inside the SDK for every leg of a flow: ``FlowLegs`` wraps a connected session's dispatcher so
that every leg goes out under a fresh, globally unique JSON-RPC id (a retry sent by another process must never reuse
an earlier leg's id), so that a complete result without ``resultType`` — the spec's default — is accepted (mcp
2.3.0's models reject it), as is a listing without cache hints, so that a server that still calls back on 2026-07-28
is noticed, and so that a task's ``subscriptions/listen`` goes out under the id ``taskfeed`` chose (which reads that
stream's frames off the SDK's dispatcher underneath: ``sdk_dispatcher``). What a leg's failure says about the server
goes on the client (``HandshakeClient.learned``) and into the warm cache (``warmcache.stale_error``, ``forget``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as t
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpcli.net import warmcache
from mcpcli.net.handshakes import DispatcherWrapper, HandshakeClient
from mcpcli.net.tasks import CREATED_TASK_META, LISTEN_ID

FLOW_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})


class FlowLegs(DispatcherWrapper):
    """Dispatcher wrapper: fresh string ids for flow legs, spec defaults the SDK's models insist on, and a
    server that still calls back noticed (see ``_refused_back_channel``)."""

    def __init__(self, inner: Any, client: HandshakeClient, on_refused: Callable[[], None] | None) -> None:
        super().__init__(inner)
        self._client = client
        self._on_refused = on_refused

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        """The SDK's request, under a fresh id when it is a flow leg; its raw result, completed with what the spec
        lets a server leave out; and what a refusal says about the server learned on the client."""
        if method in FLOW_METHODS:
            # A string that does not parse as an integer never collides with the dispatcher's own counter,
            # nor with any id an earlier process used for another leg of the same flow.
            opts = {**(opts or {}), "request_id": f"mcpcli-{secrets.token_hex(8)}"}
        elif method == "subscriptions/listen" and (listen_id := LISTEN_ID.get()) is not None:
            opts = {**(opts or {}), "request_id": listen_id}  # a task's stream: taskfeed knows its frames by it
        try:
            raw: dict[str, Any] = await self.inner.send_raw_request(method, params, opts, **kw)
        except MCPError as exc:
            warmcache.stale_error(self._client, exc.code)
            if self._on_refused is not None and self._refused_back_channel(method, params, exc):
                self._on_refused()
            if method in FLOW_METHODS and exc.code == t.URL_ELICITATION_REQUIRED:
                self._client.learned.required_urls = _url_elicitations(exc)
            raise
        if method == "tools/call" and raw.get("isError") is True:
            warmcache.forget(self._client)  # "Unknown tool", a changed schema...: the next call lists afresh
        if method == "tools/call" and params and "task" in params and isinstance(raw.get("task"), dict):
            # 2025-11-25 CreateTaskResult: the SDK would check it against CallToolResult and refuse it. Carried
            # through as a placeholder result whose _meta holds the task (tasks.call_as_task unwraps it).
            return {"content": [], "_meta": {CREATED_TASK_META: raw["task"]}}
        if not self._modern():
            return raw
        if method in FLOW_METHODS and "resultType" not in raw:
            raw = {**raw, "resultType": "complete"}
        elif method in LIST_METHODS and not {"ttlMs", "cacheScope"} <= raw.keys():
            # Cache hints a server left out mean what the SDK's own models default them to: stale at once,
            # private. Without them the wire check refuses the whole listing (and every call that lists first).
            raw = {"ttlMs": 0, "cacheScope": "private", **raw}
        return raw

    def _modern(self) -> bool:
        return self._client.session.protocol_version in MODERN_PROTOCOL_VERSIONS

    def _refused_back_channel(self, method: str, params: Mapping[str, Any] | None, exc: MCPError) -> bool:
        """A first leg refused with "invalid request" on 2026-07-28.

        That is how the SDK's servers answer a tool that asks over the back-channel, which 2026-07-28 removed
        (``NoBackChannelError`` → -32600): the request itself was well-formed (the SDK built it), the server
        could not call back. Told by the error code, never by the message's wording. (Their discover result
        names 2026-07-28 alone, though they answer ``initialize`` too, so it cannot tell.)
        """
        if method not in FLOW_METHODS or exc.code != t.INVALID_REQUEST or not self._modern():
            return False
        return not (params and ("requestState" in params or "inputResponses" in params))


LIST_METHODS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})


def install(client: HandshakeClient, on_refused: Callable[[], None] | None) -> None:
    """Wrap ``client``'s dispatcher in ``FlowLegs``, once connected; ``on_refused``: told when a first leg was refused
    because the server wanted to call back (None: nobody learns it — a protocol was asked for by name)."""
    session = client.session
    session._dispatcher = FlowLegs(session._dispatcher, client, on_refused)  # type: ignore[assignment]  # see module docstring


def sdk_dispatcher(client: Client) -> Any:
    """The SDK's own dispatcher of a connected client, under mcpcli's wrappers (``FlowLegs``, the handshake's):
    ``taskfeed`` reads its receive order."""
    dispatcher = client.session._dispatcher
    while isinstance(dispatcher, DispatcherWrapper):
        dispatcher = dispatcher.inner
    return dispatcher


def _url_elicitations(exc: MCPError) -> list[t.ElicitRequestURLParams]:
    from mcp.shared.exceptions import UrlElicitationRequiredError
    from pydantic import ValidationError

    try:
        return UrlElicitationRequiredError.from_error(exc.error).elicitations
    except (ValidationError, ValueError, TypeError, AttributeError):
        return []  # a malformed list: the error's message is all there is to show
