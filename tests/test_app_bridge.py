"""The MCP Apps bridge (mcpcli/apphost/bridge.py) when the view's page goes away at the worst moment: after the view
said ``ui/notifications/initialized`` and before the bridge had told it the tool's input or result. The channel here
is what ``mcpcli.apphost.host.View`` is then: messages the page sent before it closed are still there to read, and
every send raises ``ViewClosed``. (Seen for real: ``bench/apps.py`` closing the page as soon as ``ui/initialize``
reached mcpcli ended some runs with "Internal error: Unexpected ViewClosed", exit 4, instead of exit 0.)"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel

from mcpcli.apphost.bridge import Bridge
from mcpcli.apphost.host import ViewClosed

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "ui/initialize", "params": {"protocolVersion": "2026-01-26"}}
INITIALIZED = {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}


class GonePage:
    """A view whose page closed once ``gone`` is set (every send raises ``ViewClosed``); what it sent before is read
    in order, then ``ViewClosed`` once ``read_gone`` is set too (by default with ``gone``: the reader may learn of
    the close later than a sender does)."""

    def __init__(self, *sent: dict[str, Any]) -> None:
        self.sent = list(sent)
        self.gone = anyio.Event()
        self.read_gone = self.gone
        self.delivered: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        if self.gone.is_set():
            raise ViewClosed("the view is closed")
        self.delivered.append(message)

    async def receive(self) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()  # as a memory stream's receive: the bridge's other tasks run meanwhile
        if self.sent:
            return self.sent.pop(0)
        await self.read_gone.wait()
        raise ViewClosed("the view is closed")

    async def set_display_mode(self, mode: str) -> None:
        if self.gone.is_set():
            raise ViewClosed("the view is closed")


def bridge(view: GonePage) -> Bridge:
    async def nothing(*args: Any) -> Any:
        raise AssertionError("no call expected")

    return Bridge(
        view=view,
        tool={"name": "t", "inputSchema": {"type": "object"}},
        tools={},
        call_tool=nothing,
        read_resource=nothing,
        consent_link=nothing,
        on_event=lambda kind, params: None,
        host_info={"name": "mcpcli", "version": "0"},
    )


def test_a_page_closed_right_after_initialized_ends_the_bridge_quietly_with_the_input_still_to_send() -> None:
    async def main() -> None:
        view = GonePage(INITIALIZE, INITIALIZED)
        view.gone.set()  # the page closed; its last two messages are still to be read
        b = bridge(view)
        await b.tool_input({"name": "x"})
        with anyio.fail_after(5):
            await b.run()  # returns: the view is gone (no ViewClosed out of the task group)
        assert b.closed.is_set()
        await b.tool_result({"content": []})  # the launching call's result: nobody to tell, no error

    anyio.run(main)


def test_a_result_for_a_view_whose_page_just_closed_is_dropped_and_the_bridge_notes_it_closed() -> None:
    async def main() -> None:
        view = GonePage(INITIALIZE, INITIALIZED)
        view.read_gone = anyio.Event()
        b = bridge(view)
        async with anyio.create_task_group() as tg:
            tg.start_soon(b.run)
            await b.tool_input({"name": "x"})
            with anyio.fail_after(5):
                while not any(m.get("method") == "ui/notifications/tool-input" for m in view.delivered):
                    await anyio.lowlevel.checkpoint()  # the input went out once the view said initialized
            view.gone.set()  # the page went away; run has not read that yet
            await b.tool_result({"content": []})  # must not raise ViewClosed into the command
            assert b.closed.is_set()
            view.read_gone.set()
        assert [m.get("method") for m in view.delivered if "method" in m] == ["ui/notifications/tool-input"]

    anyio.run(main)
