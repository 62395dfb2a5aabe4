"""A command's side of a kept-alive stdio server: a transport that talks to the worker's copy of the server.

Inside the worker a command runs in a forked child; the server process it wants kept belongs to the worker
itself (``kept``), which outlives the command. ``attached`` asks the worker for that server (started on first
use, restarted if it died) and then exchanges the same newline-delimited JSON-RPC the stdio transport would,
through the worker. The SDK session above it cannot tell the difference.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp.shared.message import SessionMessage

from mcpcli.errors import ServerError
from mcpcli.net.serverenv import server_environment
from mcpcli.platform import current_umask
from mcpcli.settings.targets import Target

if TYPE_CHECKING:
    from anyio.abc import SocketStream

SOCKET_ENV = "MCPCLI_WORKER_SOCKET"
"""Set by the worker in each command's environment: where to attach to kept-alive servers."""

READ_CHUNK = 64 * 1024


def worker_socket() -> str | None:
    """The worker to attach kept-alive servers through: the one running this command, else (the TUI, an in-process
    run) this user's worker if it is running and not turned off — a kept server is one process, whichever command
    reaches it."""
    if given := os.environ.get(SOCKET_ENV):
        return given
    from mcpcli.userdirs import OFF, socket_path

    if os.environ.get("MCPCLI_WORKER", "").strip().lower() in OFF:
        return None
    path = socket_path()
    return str(path) if path.exists() else None


def server_key(target: Target) -> dict[str, Any]:
    """What makes two commands' servers one kept process: exactly the server the command names — the executable
    its command resolves to on this command's ``PATH`` (from its directory, for a relative one), the arguments,
    the environment it starts with (``net.serverenv``: a typed command line's is the caller's, an entry's the safe
    defaults and its ``env``), the directory it runs in (the entry's ``cwd``, else the command's) and the home.
    ``python server.py`` in two directories is two servers; so is ``tool`` under two ``PATH``s that find two
    programs, and ``FOO=1`` and ``FOO=2 mcpcli -s "python server.py"``."""
    import shutil

    from mcpcli.userdirs import state_home

    assert target.command is not None
    cwd = Path.cwd() / Path(target.cwd).expanduser() if target.cwd else Path.cwd()
    command = str(Path(target.command).expanduser())
    if os.sep in command:  # ``./server``: from the directory the server runs in, as a process started there finds it
        command = str(cwd / command)
    found = shutil.which(command, path=os.environ.get("PATH", os.defpath))
    return {
        "command": target.command,
        "executable": str(Path(found).absolute()) if found else None,  # not resolved: a venv's python is a link
        "args": list(target.args),
        "cwd": os.path.normpath(cwd),
        "env": server_environment(target),
        "home": str(Path(state_home()).absolute()),
    }


@asynccontextmanager
async def attached(
    path: str,
    target: Target,
    *,
    max_message_bytes: int,
    note: Callable[[str], None],
    asks_roots: Callable[[], None] | None = None,
    fresh: bool = False,
    watcher: bool = False,
    generation: Callable[[str], None] | None = None,
) -> AsyncIterator[Any]:
    """The kept-alive server for ``target``, through the worker at ``path``, as an SDK transport.

    ``asks_roots`` is told when the server already asked an earlier command for its roots: it holds that
    command's, not this one's (the caller says they changed). ``fresh``: the worker starts the server anew even
    when its process still runs (the command's first attempt left it unable to serve). A ``watcher`` (``mcpcli
    watch``) shares the server with the other commands instead of waiting its turn, and gets its events alone
    (``worker.kept``). ``generation`` is told the server's generation (its process and the list changes it
    announced: ``net.warmcache`` keys a kept server's remembered answers by it)."""
    from mcpcli.net.transports import parse_line, write_lines

    stream = await anyio.connect_unix(path)
    reply, buffer = await _attach(stream, target, fresh=fresh, watcher=watcher)
    if reply.get("asks_roots") and asks_roots is not None:
        asks_roots()
    if isinstance(reply.get("generation"), str) and generation is not None:
        generation(reply["generation"])  # what warmcache remembered of an older one is stale
    if reply.get("restarted") and not fresh:  # a fresh start was asked for: the caller said why
        note(f"The kept-alive server {target.label} had stopped; started it again (pid {reply.get('pid')}).")

    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        """The server's lines, after what came with the worker's reply, until the worker closes or a line
        grows past the bound (the session then sees its stream end)."""
        pending = buffer
        async with read_writer:
            while True:
                while (end := pending.find(b"\n")) != -1:
                    line = bytes(pending[:end])
                    del pending[: end + 1]
                    if line.strip():
                        try:
                            await read_writer.send(parse_line(line))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return
                if len(pending) > max_message_bytes:
                    return
                try:
                    chunk = await stream.receive(READ_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    return
                pending += chunk

    async def writer() -> None:
        await write_lines(write_reader, stream.send, read_writer)

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            write_stream.close()
            read_stream.close()
            with anyio.CancelScope(shield=True):
                await stream.aclose()  # detaching: the server keeps running in the worker
            tg.cancel_scope.cancel()


async def _attach(
    stream: SocketStream, target: Target, *, fresh: bool, watcher: bool
) -> tuple[dict[str, Any], bytearray]:
    """Ask the worker on ``stream`` for ``target``'s kept server; its reply, and what came after it (the server's
    first bytes). A worker that cannot start it is one ``ServerError`` line, the stream closed."""
    # The directory the command runs in, as the kernel has it ($PWD is the shell's, stale under a program that
    # started mcpcli elsewhere: subprocess's cwd=): a kept server runs there, and it is part of which server it is.
    request: dict[str, Any] = {
        "op": "attach",
        "name": target.label,
        "server": server_key(target),
        "cwd": str(Path.cwd()),
        "umask": current_umask(),  # a server it starts creates files as the command would
        "fresh": fresh,
    }
    if watcher:
        request["watch"] = True
    body = json.dumps(request).encode()
    await stream.send(struct.pack(">I", len(body)) + body)
    buffer = bytearray()
    while len(buffer) < 4 or len(buffer) < 4 + struct.unpack(">I", bytes(buffer[:4]))[0]:
        chunk = await stream.receive(READ_CHUNK)
        if not chunk:
            raise ServerError(f"The worker would not start the kept-alive server {target.label!r}.")
        buffer += chunk
    (length,) = struct.unpack(">I", bytes(buffer[:4]))
    reply: dict[str, Any] = json.loads(bytes(buffer[4 : 4 + length]))
    del buffer[: 4 + length]
    if not reply.get("ok"):
        await stream.aclose()
        raise ServerError(f"Cannot start the kept-alive server {target.label!r}: {reply.get('why', 'unknown')}.")
    return reply, buffer
