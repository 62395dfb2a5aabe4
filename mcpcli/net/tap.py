"""The tap: the SDK ``Client``'s two memory streams wrapped so that every message crossing them is handed to a
``trace.Tracer`` — what is traced (and recorded) is exactly what the JSON-RPC dispatcher sends and receives, whatever
the transport. A connection without a tracer has no wrapper at all.

No SDK import at module level (the SDK's transports are imported when a connection is tapped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpcli.state.trace import Tracer


class _TapRead:
    """The client's read stream, recording every item it yields."""

    def __init__(self, inner: Any, tracer: Tracer) -> None:
        self._inner = inner
        self._tracer = tracer

    @property
    def last_context(self) -> Any:  # the dispatcher restores the sender's context from it
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._tracer.message("recv", item)
        return item

    def __aiter__(self) -> _TapRead:
        return self

    async def __anext__(self) -> Any:
        item = await self._inner.__anext__()
        self._tracer.message("recv", item)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _TapRead:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


class _TapWrite:
    """The client's write stream, recording every message before it goes."""

    def __init__(self, inner: Any, tracer: Tracer) -> None:
        self._inner = inner
        self._tracer = tracer

    async def send(self, item: Any) -> None:
        self._tracer.message("send", item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _TapWrite:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


class _TappedTransport:
    """A ``Transport`` (async context manager of the two streams) whose streams are tapped."""

    def __init__(self, inner: Any, tracer: Tracer) -> None:
        self._inner = inner
        self._tracer = tracer

    async def __aenter__(self) -> tuple[_TapRead, _TapWrite]:
        read, write = await self._inner.__aenter__()
        return _TapRead(read, self._tracer), _TapWrite(write, self._tracer)

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


def traced(server: Any, tracer: Tracer) -> Any:
    """What to give ``Client`` instead of ``server`` so that every message is recorded.

    An in-process server (the demo) is served over the SDK's in-memory JSON-RPC streams — the same dual-era
    loop a stdio server runs — since its direct in-process path has no messages to tap.
    """
    from mcp.client._memory import InMemoryTransport  # the SDK's own in-process transport (a private module)
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    if isinstance(server, Server | MCPServer):
        server = InMemoryTransport(server)
    elif isinstance(server, str):
        server = streamable_http_client(server)
    elif isinstance(server, StdioServerParameters):
        server = stdio_client(server)
    return _TappedTransport(server, tracer)
