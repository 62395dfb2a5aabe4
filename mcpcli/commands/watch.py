"""The body of ``mcpcli watch``: connect (again and again), hand the events to ``mcpcli.engine.watching``, and print
each one — a line, or a JSON object — with what ``--read`` read again (a resource's contents, a list's additions
and removals)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import anyio
from mcp.shared.exceptions import MCPError

from mcpcli.commands.connecting import credentials, declared, with_server_logs
from mcpcli.commands.discovery import all_pages
from mcpcli.commands.seat import at_terminal
from mcpcli.display import TERMINAL_TEXT_MAX, clip, json_text, sanitize, some_of
from mcpcli.engine.steps import dump
from mcpcli.engine.watching import LIST_KINDS, Change, Honoured, Stats, Want, Watch
from mcpcli.errors import McpcliError
from mcpcli.net.bounds import size
from mcpcli.net.connection import connect, transport_failure

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import MessageHandlerFnT

    from mcpcli.commands.runtime import Runtime

STREAM_IDLE = 10 * 365 * 24 * 3600.0
"""A watch's connection may be quiet for as long as nothing changes: no idle bound on its streams (the connect
timeout still applies, and each ``--read`` is bounded by the usual idle timeout)."""
NAMES_SHOWN = 20
"""Names of added or removed items shown on one line (a server may add thousands)."""
LINE_MAX = 1000
"""Characters of one line of a watch on stdout, past which it is cut (saying so): a watch runs unattended for
hours against whatever a server sends, and a 10 KB name or a one-line megabyte must not become one line."""
JSON_LINE_MAX = 1024 * 1024
"""Characters of one ``--json`` line: past it, what the server sent (``result``, ``added``, ``removed``) is left out
and ``cut`` says how long the line would have been (``mcpcli read URI`` has it all)."""
_LABELS = {
    "resource_updated": "resource updated",
    "tools_list_changed": "tools changed",
    "prompts_list_changed": "prompts changed",
    "resources_list_changed": "resources changed",
}
_LISTINGS = {
    "tools_list_changed": ("list_tools", "tools", "name"),
    "prompts_list_changed": ("list_prompts", "prompts", "name"),
    "resources_list_changed": ("list_resources", "resources", "uri"),
}


@dataclass(frozen=True)
class WatchOptions:
    uris: tuple[str, ...] = ()
    tools: bool = False
    prompts: bool = False
    resources: bool = False
    read: bool = False
    count: int | None = None
    seconds: float | None = None
    reconnect: bool = True
    json: bool = False


async def watch(rt: Runtime, opts: WatchOptions) -> int:
    """``mcpcli watch``: connect as ``tools`` would (a watcher of a kept-alive server, its reads bounded by the
    stream's own idle time), again after each drop while ``reconnect``; print each event until the count or the
    time is up."""
    target = rt.target()
    usual = rt.bounds()
    options = replace(
        declared(rt, target),
        bounds=replace(usual, idle_timeout=STREAM_IDLE),
        credentials=credentials(rt, interactive=at_terminal()),
        tracer=rt.tracer(),
        watcher=True,
    )
    options = with_server_logs(options, rt, rt.out.note)

    def connector(handler: MessageHandlerFnT) -> Any:
        return connect(replace(options, on_notification=handler))

    printer = _Printer(rt, opts, usual.idle_timeout)
    want = Want(opts.uris, opts.tools, opts.prompts, opts.resources)
    runner = Watch(
        want,
        connector,
        on_change=printer.change,
        on_ready=printer.ready,
        note=rt.out.note,
        reconnect=opts.reconnect,
        count=opts.count,
        # A stdio server's end is noticed at the next ping: often, since it costs nothing there.
        liveness=5.0 if target.kind == "http" else 1.0,
    )
    printer.watch = runner
    try:
        if opts.seconds is not None:
            with anyio.move_on_after(opts.seconds):
                await runner.run()
        else:
            await runner.run()
    finally:
        printer.summary(runner.stats)
    return 0


class _Printer:
    """What the user sees of a watch: one line (or JSON object) per change on stdout, notes on stderr."""

    def __init__(self, rt: Runtime, opts: WatchOptions, read_timeout: float) -> None:
        self.rt = rt
        self.opts = opts
        self.read_timeout = read_timeout
        self.watch: Watch | None = None
        self._said_missing: list[str] | None = None
        self._known: dict[str, list[str]] = {}
        """With ``--read``: the names in each watched list as last listed (what a change added and removed)."""

    async def ready(self, client: Client, honoured: Honoured, again: bool) -> None:
        """A connection is listening: warn once of what the server does not honour, say what is watched on the
        first connection, and with ``--read`` learn the lists as they are now (what a change adds is told by them)."""
        assert self.watch is not None
        missing = honoured.missing(self.watch.want)
        if missing != self._said_missing:
            if missing:
                self.rt.out.warning(f"The server does not honour: {some_of(missing, NAMES_SHOWN)}.")
            self._said_missing = missing
        if not again:
            what = [*(f"{name} list" for name in self.watch.want.lists() if getattr(honoured, name)), *honoured.uris]
            how = "subscriptions/listen" if _modern(client) else "resources/subscribe"
            self.rt.out.note(f"Watching {some_of(what, NAMES_SHOWN)} ({client.protocol_version}, {how}); Ctrl-C stops.")
        if not self.opts.read:
            return
        for kind in (LIST_KINDS[name] for name in self.watch.want.lists() if getattr(honoured, name)):
            if again:  # the list may have changed while nobody listened: compare (shown only when it did)
                self.watch.backlog.put(Change(kind, reason="reconnected"))
            else:
                self._known[kind] = await self._names(client, kind)
        if again:
            for uri in honoured.uris:  # an update may have been missed: read again
                self.watch.backlog.put(Change("resource_updated", uri, reason="reconnected"))

    async def change(self, client: Client | None, change: Change) -> None:
        """Print one event — a line, or a JSON object — with what ``--read`` read again on the connection (a failed
        read is part of the event, never the end of the watch)."""
        doc: dict[str, Any] = {"event": change.kind}
        if change.uri is not None:
            doc["uri"] = change.uri
        doc["at"] = change.at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if change.folded:
            doc["coalesced"] = change.folded
        if change.reason is not None:
            doc["reason"] = change.reason
        lines: list[str] = []
        if self.opts.read and client is not None:
            if change.kind == "resource_updated":
                lines = await self._read(client, change, doc)
            else:
                lines = await self._relist(client, change, doc)
                if change.reason is not None and not (doc.get("added") or doc.get("removed")):
                    return  # listened to again and nothing changed meanwhile: nothing to say
        if self.opts.json:
            self.rt.out.json_line(_within(doc))
            return
        head = f"{_clock(change.at)}  {_LABELS[change.kind]}"
        if change.uri is not None:
            head += f"  {change.uri}"
        if change.folded:
            head += f"  (+{change.folded} coalesced)"
        if change.reason is not None:
            head += "  (read again after reconnecting)"
        self.rt.out.line("\n".join(_cut(line) for line in [head, *lines]))

    async def _read(self, client: Client, change: Change, doc: dict[str, Any]) -> list[str]:
        """Read the changed resource again, bounded; its contents into ``doc`` and the lines to show."""
        assert change.uri is not None
        try:
            with anyio.fail_after(self.read_timeout):
                result = dump(await client.read_resource(change.uri))
        except Exception as exc:  # boundary: a read that fails is part of the event, not the end of the watch
            doc["error"] = _failure(exc)
            return [f"  could not read it: {doc['error']}"]
        doc["result"] = result
        lines: list[str] = []
        for content in result.get("contents") or []:
            if isinstance(text := content.get("text"), str):
                shown = clip(text, "all of it: --json", TERMINAL_TEXT_MAX)
                lines += ["  " + line for line in shown.splitlines() or [""]]
            elif isinstance(blob := content.get("blob"), str):
                kind = content.get("mimeType") or "unknown type"
                lines.append(f"  [binary: {size(_decoded_size(blob))}, {kind}]")
        return lines

    async def _relist(self, client: Client, change: Change, doc: dict[str, Any]) -> list[str]:
        """List the changed kind again, bounded; what it added and removed since the last listing into ``doc``."""
        try:
            with anyio.fail_after(self.read_timeout):
                names = await self._names(client, change.kind)
        except Exception as exc:  # boundary: as for a read
            doc["error"] = _failure(exc)
            return [f"  could not list it again: {doc['error']}"]
        before = self._known.get(change.kind, [])
        self._known[change.kind] = names
        old, new = set(before), set(names)
        added = [n for n in names if n not in old]
        removed = [n for n in before if n not in new]
        doc["added"], doc["removed"] = added, removed
        parts = []
        if added:
            parts.append(f"added {some_of(added, NAMES_SHOWN)}")
        if removed:
            parts.append(f"removed {some_of(removed, NAMES_SHOWN)}")
        return [f"  {'; '.join(parts) or 'no names added or removed'}"]

    async def _names(self, client: Client, kind: str) -> list[str]:
        method, key, field = _LISTINGS[kind]
        items = await all_pages(getattr(client, method), key)
        return [str(item.get(field, "")) for item in items]

    def summary(self, stats: Stats) -> None:
        parts = []
        if stats.folded or stats.dropped:
            parts.append(f"{stats.folded + stats.dropped:,} of {stats.received:,} events coalesced")
        if stats.dropped:
            parts.append(f"{stats.dropped:,} dropped while over {BACKLOG_NOTE}")
        if stats.ignored:
            parts.append(f"{stats.ignored:,} ignored (not asked for)")
        if parts:
            self.rt.out.note(f"Watch: {'; '.join(parts)}.")


BACKLOG_NOTE = "the backlog's 1,024 distinct changes"


def _cut(line: str) -> str:
    """One line of output, sanitized and at most ``LINE_MAX`` characters (saying how long it was)."""
    shown = sanitize(line)
    if len(shown) <= LINE_MAX:
        return shown
    tail = f"… [cut: of {len(shown):,} characters; all of it: --json]"
    return shown[: LINE_MAX - len(tail)] + tail


def _within(doc: dict[str, Any]) -> dict[str, Any]:
    """A ``--json`` event of at most ``JSON_LINE_MAX`` characters (see there); an error's text is cut as on a
    terminal."""
    if isinstance(error := doc.get("error"), str) and len(error) > TERMINAL_TEXT_MAX:
        doc["error"] = error[:TERMINAL_TEXT_MAX] + "…"
    length = len(json_text(doc, indent=None))
    if length <= JSON_LINE_MAX:
        return doc
    kept = {key: value for key, value in doc.items() if key not in ("result", "added", "removed")}
    return {**kept, "cut": length}


def _modern(client: Client) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


def _clock(at: datetime) -> str:
    return at.astimezone().strftime("%H:%M:%S.%f")[:-3]


def _decoded_size(blob: str) -> int:
    return max(0, len(blob) * 3 // 4 - blob[-2:].count("="))


def _failure(exc: BaseException) -> str:
    if isinstance(exc, McpcliError):
        return exc.message
    if isinstance(exc, MCPError):
        return exc.message
    if isinstance(exc, TimeoutError):
        return "the server did not answer in time"
    return transport_failure(exc) or (str(exc) or type(exc).__name__)


# --- the full-screen app's watches -----------------------------------------------------------------------------------

Catalog = dict[str, list[dict[str, Any]]]


async def follow_catalog(rt: Runtime, on_catalog: Callable[[Catalog], None], note: Callable[[str], None]) -> None:
    """The app's start screen: each list the server sends change notices for is listed again when it changes, and
    the whole catalog handed to ``on_catalog``. Returns when the server offers none (nothing to follow)."""
    from mcpcli.commands.discovery import catalog_of

    async def changed(client: Client | None, change: Change) -> None:
        if client is not None:
            with anyio.fail_after(rt.bounds().idle_timeout):
                on_catalog(await catalog_of(client))

    await _follow(rt, Want(tools=True, prompts=True, resources=True), changed, note)


async def follow_resource(
    rt: Runtime, uri: str, on_update: Callable[[dict[str, Any]], None], note: Callable[[str], None]
) -> None:
    """The app's resource view: read ``uri`` again each time the server says it changed (and after listening
    again), handing each ``ReadResourceResult`` to ``on_update``. Returns when the server does not offer it."""

    async def changed(client: Client | None, change: Change) -> None:
        if client is not None:
            with anyio.fail_after(rt.bounds().idle_timeout):
                on_update(dump(await client.read_resource(uri)))

    async def ready(client: Client, honoured: Honoured, again: bool) -> None:
        if again:
            runner.backlog.put(Change("resource_updated", uri, reason="reconnected"))

    runner = _app_watch(rt, Want(uris=(uri,)), changed, note, ready)
    await _quietly(runner)


async def _follow(rt: Runtime, want: Want, changed: Any, note: Callable[[str], None]) -> None:
    async def ready(client: Client, honoured: Honoured, again: bool) -> None:
        if again:  # a list may have changed while nobody listened
            runner.backlog.put(Change(LIST_KINDS[honoured_list(honoured)], reason="reconnected"))

    runner = _app_watch(rt, want, changed, note, ready)
    await _quietly(runner)


def honoured_list(honoured: Honoured) -> str:
    return next(name for name in LIST_KINDS if getattr(honoured, name))


def _app_watch(rt: Runtime, want: Want, changed: Any, note: Callable[[str], None], ready: Any) -> Watch:
    """The app's watch of its server: connected as the app's lists are (no sign-in at a terminal the app owns, the
    views' extension declared), telling ``changed`` and ``ready`` instead of printing."""
    from mcpcli.apphost.resource import SHOWS_VIEWS

    target = rt.resolve()[0]
    options = replace(
        declared(rt, target),
        bounds=replace(rt.bounds(), idle_timeout=STREAM_IDLE),
        extensions=SHOWS_VIEWS,
        credentials=credentials(rt, interactive=False),  # the app owns the terminal
        tracer=rt.tracer(summaries=False),
        watcher=True,
    )

    def connector(handler: MessageHandlerFnT) -> Any:
        return connect(replace(options, on_notification=handler))

    liveness = 5.0 if target.kind == "http" else 1.0
    return Watch(want, connector, on_change=changed, on_ready=ready, note=note, liveness=liveness)


async def _quietly(runner: Watch) -> None:
    """Run an app's watch; a server that does not offer it (or cannot be reached for it) is simply not followed:
    the app says what matters about the server elsewhere."""
    try:
        await runner.run()
    except McpcliError:
        return
