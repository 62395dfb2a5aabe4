"""``mcpcli _refresh-cache [TARGET]``: the detached process shell completion starts to rewrite a server's cached
tool and prompt lists (``mcpcli.net.listcache`` keeps them; ``cli.completion`` reads them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcli.commands.connecting import declared
from mcpcli.net.listcache import REFRESH_TIMEOUT, Kind, remember

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime
    from mcpcli.settings.targets import Target


def refresh(given: str | None) -> int:
    """``mcpcli _refresh-cache [TARGET]``: list the server's tools and prompts and rewrite their cache."""
    from mcpcli.commands.runtime import Globals, Runtime, StopSignals, run_async

    try:
        rt = Runtime(Globals(server=given))
        target = rt.target()
        with StopSignals():  # SIGTERM (a shutdown, a supervisor) stops a stdio server it started, too
            run_async(lambda: _refresh(rt, target))
    except BaseException as exc:  # boundary: nobody reads this process's output; the log says what went wrong
        import logging

        logging.getLogger(__name__).info("completion cache refresh of %r failed: %r", given or "default", exc)
        return 1
    return 0


async def _refresh(rt: Runtime, target: Target) -> None:
    """List the tools and prompts the server offers, every page, within ``REFRESH_TIMEOUT``, and keep them; a kind
    the server refuses keeps what was cached."""
    import anyio
    from mcp.shared.exceptions import MCPError

    from mcpcli.net.connection import connect

    paths = rt.paths
    with anyio.fail_after(REFRESH_TIMEOUT):
        # Declaring what `call` declares: a server may list some tools only to clients that can answer them.
        async with connect(declared(rt, target, later=True)) as client:
            caps = client.server_capabilities
            fetchers: dict[Kind, Any] = {"tools": client.list_tools, "prompts": client.list_prompts}
            for kind, fetch in fetchers.items():
                pages: list[Any] = []
                if caps is not None and getattr(caps, kind) is not None:
                    try:
                        pages = await _pages(fetch)
                    except MCPError:
                        continue
                remember(paths, target, kind, pages, client.protocol_version)


async def _pages(fetch: Any) -> list[Any]:
    """Every page of a listing (at most 100: a paginator that never ends cannot hold a refresh)."""
    pages: list[Any] = []
    cursor = None
    for _ in range(100):
        pages.append(await fetch(cursor=cursor))
        cursor = pages[-1].next_cursor
        if not cursor:
            break
    return pages
