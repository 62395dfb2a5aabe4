"""``mcpcli mock FILE...``: serve recordings as an MCP server, over stdio (default) or streamable HTTP.

Every recording is read and checked first (a malformed one: exit 2 naming its line, nothing served). Over stdio
stdout is the protocol's: only the server writes there; what mcpcli says goes to stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpcli.commands.replay import load
from mcpcli.display import counted, sanitize
from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime


def parse_address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--http {sanitize(value)!r} is not HOST:PORT.", hint="For example: --http 127.0.0.1:8765")
    return host.strip("[]"), int(port)


async def mock(rt: Runtime, files: list[str], *, http: str | None, max_mb: float | None) -> int:
    """``mock``: serve the finished flows and listings of the recordings, on stdio or at ``--http HOST:PORT``, until
    stopped. Bad files or an address are refused before anything is served; recordings with nothing to serve are a
    ``UsageError``."""
    address = parse_address(http) if http else None
    recordings = [load(path, max_mb) for path in files]
    from mcpcli.engine.mock import build_server, serve_http, serve_stdio, served

    what = served(recordings)
    if not what.flows and not what.listings:
        raise UsageError(
            f"{'The recording holds' if len(recordings) == 1 else 'The recordings hold'} nothing to serve: no listing,"
            " no finished flow.",
            hint=None,
        )
    server = build_server(recordings)
    if address is None:
        await serve_stdio(server)
        return 0
    host, port = address
    rt.out.note(
        f"Serving {counted(len(what.flows), 'flow')} of {counted(len(recordings), 'recording')}"
        f" at http://{host}:{port}/mcp"
        " (Ctrl-C stops)."
    )
    await serve_http(server, host, port)
    return 0
