"""What a server said to ``server/discover`` and ``tools/list``, kept between commands so that a call asks the
server only for the call itself.

A warm ``mcpcli call echo`` used to send three requests: ``server/discover`` (7 ms at the demo server),
``tools/list`` (2 ms) and the ``tools/call``. Their answers rarely change between two commands, so ``connect``
adopts a known discover result instead of probing (the SDK's ``prior_discover``), and ``call`` types its ``--arg``
values by a known tool listing, absorbed into the session as if just listed (the SDK validates the result against
it, and builds its ``x-mcp-header`` mirrors from it). The listing is the one shell completion reads
(``mcpcli.net.listcache``: one copy on disk), adopted only when a connection with this entry's key listed it.

**Keyed by everything that can change the answer** (``key``): where the server is (URL; command line, its
directory and the environment it starts with), who asks (``Credentials.identity`` and a digest of the headers
sent — the entry's file name is one SHA-256 of it all, nothing secret is written), the protocol asked for, and
the capabilities and extensions the requests declare (MCP Apps' ``io.modelcontextprotocol/ui`` lists a server's
app tools; sampling with tools; the handshake's offers). A kept-alive server's entry also holds its generation
(``worker.kept``: its process and the list changes it announced), so a restart or a ``list_changed`` between
commands drops it.

**Bounded in time** (``expires``): a positive ``ttlMs`` is the server's word (capped at the SDK's 24 h); without
one — and the SDK's servers send ``ttlMs: 0`` for every result their author gave no hint for, indistinguishable from
none — an entry is fresh for ``DEFAULT_TTL`` (30 s; ``MCPCLI_WARM_TTL=SECONDS``, 0 turns the cache off).

**What the server does on connecting** is learned too: a server that asks for the roots before the first call (the
reference filesystem server) is waited for on the next connection, which no longer gives it a listing's round trip
to ask in.

**Dropped at once** when it may be stale: a ``list_changed`` notification on a connection (its message handler), a
request the server refused as a protocol error on a connection that used it (``stale_error``), a tool the listing
does not name (the caller lists afresh before saying "unknown tool"), and an error validating a result against a
remembered output schema.

A cache: ``<cache dir>/warm/<key>.json`` (the discover result, what the server does on connecting) and the
listing cache's file (the tools), 0600 in 0700 directories; unreadable or missing means nothing is known, and a
write that fails costs only the round trips.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mcp_types as t
    from mcp import Client
    from mcp.client.session import MessageHandlerFnT

    from mcpcli.net.handshakes import HandshakeClient
    from mcpcli.settings.config import Paths
    from mcpcli.settings.targets import Target

VERSION = 1
MODERN = "2026-07-28"
DEFAULT_TTL = 30.0
"""Seconds an answer stays fresh when the server gives no positive ``ttlMs``."""
MAX_TTL = 24 * 3600.0
"""The cap on a server's ``ttlMs`` (the SDK's ``MAX_TTL_MS``)."""
TTL_ENV = "MCPCLI_WARM_TTL"

LIST_CHANGES = frozenset(
    {"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"}
)
STALE_CODES = frozenset({-32600, -32601, -32602, -32022, -32020})
"""JSON-RPC errors that may mean the adopted discover result or listing is out of date: invalid request, method not
found, invalid params (the arguments typed by an old schema), unsupported protocol version, header mismatch."""


def default_ttl() -> float:
    raw = os.environ.get(TTL_ENV)
    if raw:
        with contextlib.suppress(ValueError):
            return max(0.0, float(raw))
    return DEFAULT_TTL


def key(
    target: Target,
    *,
    protocol: str,
    who: str | None,
    headers: Mapping[str, str],
    declared: Mapping[str, Any],
    environment: Mapping[str, str] | None,
) -> str:
    """One SHA-256 of everything an answer depends on (see the module docstring)."""
    parts: dict[str, Any] = {
        "v": VERSION,
        "kind": target.kind,
        "url": target.url,
        "command": [target.command, *target.args] if target.command else None,
        "cwd": target.cwd or (str(Path.cwd()) if target.kind == "stdio" else None),
        "env": dict(sorted(environment.items())) if environment is not None else None,
        "keep_alive": target.keep_alive,
        "protocol": protocol,
        "who": who,
        "headers": sorted((k.lower(), v) for k, v in headers.items()),
        "declared": declared,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def slot_for(target: Target, paths: Paths, given: str, who: str | None, declaring: dict[str, Any]) -> Slot | None:
    """A connection's place in the cache (None: the in-process demo, which costs nothing to ask, or the cache is
    off). ``who``: ``Credentials.identity`` once prepared."""
    if target.kind == "demo" or default_ttl() <= 0:
        return None
    environment = None
    if target.kind == "stdio":
        from mcpcli.net.serverenv import server_environment, sharing_key

        environment = sharing_key(server_environment(target))
    name = key(target, protocol=given, who=who, headers=target.headers, declared=declaring, environment=environment)
    return slot(paths, target, name)


def expires(raw: Mapping[str, Any], now: float) -> float:
    ttl = raw.get("ttlMs")
    if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0:
        return now + min(ttl / 1000.0, MAX_TTL)
    return now + default_ttl()


@dataclass
class Slot:
    """One connection's place in the cache: what it found there, and what it learns."""

    path: Path
    server: str
    name: str = ""
    """The entry's key (``key``): what vouches for the tool listing it adopts."""
    listing: Path | None = None
    """The listing cache's file for the server (``listcache.cache_file``): where its tool listing is kept."""
    generation: str | None = None
    """A kept-alive server's generation as the worker told this connection (None: not a kept server)."""
    doc: dict[str, Any] = field(default_factory=dict)
    used: bool = False
    """This connection adopted a remembered answer (a protocol error then drops the entry)."""

    def fresh(self, what: str, now: float | None = None, *, any_generation: bool = False) -> Any:
        """The remembered raw answer for ``what`` (``discover``), or None when there is none fresh.
        ``any_generation``: of whichever kept-alive server generation (not known yet: ``connect`` checks it once
        the worker has said)."""
        entry = self.doc.get(what)
        if not isinstance(entry, dict):
            return None
        expiry = entry.get("expires_at")
        if not isinstance(expiry, int | float) or (time.time() if now is None else now) >= expiry:
            return None
        if not any_generation and entry.get("generation") != self.generation:
            return None
        return entry.get("raw")

    def keep(self, what: str, raw: Any, hint: Mapping[str, Any]) -> None:
        """Remember ``raw`` for ``what``, fresh by ``hint``'s ``ttlMs`` (never fails the caller)."""
        if default_ttl() <= 0:
            return
        now = time.time()
        self.doc = {**self.doc, "version": VERSION, "server": self.server}
        self.doc[what] = {"raw": raw, "expires_at": expires(hint, now), "generation": self.generation}
        self._write()

    def learn(self, fact: str) -> None:
        """Remember that the server behaves so (``asks_roots``), for as long as the entry lives."""
        if self.doc.get(fact) is not True:
            self.doc = {**self.doc, "version": VERSION, "server": self.server, fact: True}
            self._write()

    def drop(self) -> None:
        """Forget everything remembered for this key (the next connection asks the server)."""
        self.doc = {}
        self.used = False
        with contextlib.suppress(OSError):
            self.path.unlink()
        if self.listing is not None:
            from mcpcli.net.listcache import unvouch

            unvouch(self.listing, self.name)

    def _write(self) -> None:
        from mcpcli.settings.config import write_private

        try:
            write_private(self.path, json.dumps(self.doc), durable=False)
        except OSError:
            import logging

            logging.getLogger(__name__).debug("could not write %s", self.path, exc_info=True)


def slot(paths: Paths, target: Target, name: str) -> Slot | None:
    """The cache entry named ``name`` (a ``key``), read; None when the cache is off."""
    if default_ttl() <= 0:
        return None
    from mcpcli.net.listcache import cache_file

    path = paths.cache_dir / "warm" / f"{name}.json"
    found = Slot(path, target.label, name, cache_file(paths, target))
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return found
    if isinstance(doc, dict) and doc.get("version") == VERSION:
        found.doc = doc
    return found


def attach(client: HandshakeClient, found: Slot) -> None:
    """``client``'s connection reads and writes ``found`` (``HandshakeClient.warm_slot``)."""
    client.warm_slot = found


def slot_of(client: object) -> Slot | None:
    found = getattr(client, "warm_slot", None)
    return found if isinstance(found, Slot) else None


def stale_error(client: object, code: int) -> None:
    """A request on ``client``'s connection failed with JSON-RPC error ``code``: when the connection used a
    remembered answer and the error may say it is out of date, it is forgotten."""
    if code in STALE_CODES and (found := slot_of(client)) is not None and found.used:
        found.drop()


def discover_result(raw: Any) -> t.DiscoverResult | None:
    """A remembered discover result as the SDK adopts it (None: none, or one it cannot read)."""
    import mcp_types as t
    from pydantic import ValidationError

    if not isinstance(raw, dict):
        return None
    try:
        return t.DiscoverResult.model_validate(raw)
    except ValidationError:
        return None


async def warmed(client: HandshakeClient, found: Slot, prior: Any, kept: list[str]) -> None:
    """After the handshake: remember a discover result the server just gave, or — when one was adopted for a
    kept-alive server that has since restarted or announced a change — ask the server afresh."""
    import mcp_types as t
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    from pydantic import ValidationError

    found.generation = kept[-1] if kept else None
    if prior is not None:
        if found.fresh("discover") is not None:
            found.used = True
            if isinstance(info := prior.get("serverInfo"), dict):
                with contextlib.suppress(ValidationError):
                    client.top_level_info = t.Implementation.model_validate(info)
            return
        await client.session.discover()  # adopted; the handshake wrapper keeps the raw result
    raw = client.discovered
    if raw is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        found.keep("discover", raw, raw)


def dropping_on_list_changes(handler: MessageHandlerFnT | None, found: Slot | None) -> MessageHandlerFnT | None:
    """The connection's message handler, after a list change has dropped what is remembered for it."""
    if found is None:
        return handler

    async def handle(message: Any) -> None:
        if getattr(message, "method", None) in LIST_CHANGES:
            found.drop()
        if handler is not None:
            await handler(message)

    return handle


def remembered_tools(client: Client) -> list[Any] | None:
    """The tools of a remembered complete listing for ``client``'s connection, absorbed into its session as if
    just listed (the SDK checks results and mirrors headers by it); None when there is none fresh — none that a
    connection with this key listed (``listcache.vouched_tools``), or one past its time."""
    import mcp_types as t
    from pydantic import ValidationError

    from mcpcli.net.listcache import vouched_tools

    found = slot_of(client)
    kept = vouched_tools(found.listing, found.name, found.generation) if found and found.listing else None
    if kept is None or default_ttl() <= 0:
        return None
    raw, fetched, ttl_ms = kept
    if time.time() >= expires({"ttlMs": ttl_ms}, fetched):
        return None
    try:
        listing = t.ListToolsResult.model_validate(raw)
    except ValidationError:
        return None
    assert found is not None
    found.used = True
    client.session._absorb_tool_listing(listing, complete=True)  # as the SDK's own cache does on a hit
    return list(listing.tools)


def vouch_of(client: object) -> tuple[str, str | None] | None:
    """What ``client``'s connection vouches for a listing it made with (``listcache.remember``): its key and its
    kept server's generation; None without a warm entry (the demo, the cache off)."""
    found = slot_of(client)
    return (found.name, found.generation) if found is not None and found.name else None


def remember_tools(client: Client, pages: list[Any]) -> None:
    """Keep a complete tools listing (every page, as the SDK returned them) for the next connection (and for
    completion: one listing cache)."""
    from mcpcli.net.listcache import remember_at

    found = slot_of(client)
    if found is None or found.listing is None or not pages:
        return
    remember_at(found.listing, found.server, "tools", pages, client.protocol_version, vouch_of(client))


def asks_roots(client: object) -> bool:
    """Whether the server asked an earlier connection for its roots before its call: it serves nothing until it has
    them, so a call that skips the listing's round trip waits for that question first (``engine.roots``)."""
    found = slot_of(client)
    return found is not None and found.doc.get("asks_roots") is True


def learned_asks_roots(client: object) -> None:
    if (found := slot_of(client)) is not None:
        found.learn("asks_roots")


def forget(client: object) -> None:
    """Something failed on a connection that used a remembered answer: forget it (the next one asks)."""
    if (found := slot_of(client)) is not None and found.used:
        found.drop()
