"""What each server negotiated last time, so that the next connection goes straight to the right handshake.

``mode="auto"`` first sends a 2026-07-28 ``server/discover``; a pre-2026 server refuses it and the SDK falls back
to ``initialize``: one wasted round trip (and the server's time to start refusing) on every connection. So
``connect`` remembers per target — keyed as shell completion's list cache is (``listcache.identity``: where the
server is, never who asks) — that it spoke the handshake, in one small 0600 file, ``<cache dir>/handshakes.json``,
and next time starts with ``initialize``. Should that fail (the server was upgraded), the entry is forgotten
and ``auto`` runs as if nothing were known. A modern server needs no entry: its discover succeeds first time.

A cache: unreadable or missing means nothing is known, and a failed write costs only the round trip.

Also what the handshake itself says (``HandshakeClient``): the back-channel capabilities ``initialize`` declares,
and the ``serverInfo`` of a discover result, wherever the server put it; and what a connection learns of its server
while it lives (``Learned``), kept on its client — never in a table beside it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp_types as t
from mcp import Client

if TYPE_CHECKING:
    from pathlib import Path

    from mcpcli.errors import McpcliError
    from mcpcli.settings.config import Paths
    from mcpcli.settings.targets import Target

MAX_ENTRIES = 200
"""The oldest entries go past this many servers."""


def _file(paths: Paths) -> Path:
    return paths.cache_dir / "handshakes.json"


def _read(paths: Paths) -> dict[str, Any]:
    try:
        doc = json.loads(_file(paths).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def remembered(paths: Paths, target: Target) -> str | None:
    """``"legacy"`` when ``target`` spoke the pre-2026 handshake last time, else None."""
    from mcpcli.net.listcache import identity

    entry = _read(paths).get(identity(target))
    return "legacy" if isinstance(entry, dict) and entry.get("mode") == "legacy" else None


def remember(paths: Paths, target: Target, legacy: bool) -> None:
    """Record what ``auto`` found (only a change is written); never fails the caller."""
    from mcpcli.net.listcache import identity
    from mcpcli.settings.config import write_private

    key = identity(target)
    doc = _read(paths)
    had = isinstance(doc.get(key), dict) and doc[key].get("mode") == "legacy"
    if had == legacy:
        return
    if legacy:
        doc[key] = {"mode": "legacy", "server": target.label, "at": time.time()}
        if len(doc) > MAX_ENTRIES:
            oldest = sorted(doc, key=lambda k: doc[k].get("at", 0) if isinstance(doc[k], dict) else 0)
            for old in oldest[: len(doc) - MAX_ENTRIES]:
                del doc[old]
    else:
        doc.pop(key, None)
    try:
        write_private(_file(paths), json.dumps(doc), durable=False)
    except OSError:
        logging.getLogger(__name__).debug("could not write %s", _file(paths), exc_info=True)


BACK_CHANNEL = frozenset({"sampling", "elicitation", "roots"})


class DispatcherWrapper:
    """One of mcpcli's wrappers around the SDK session's dispatcher: it sees every request and its raw result, and
    hands everything else to the dispatcher it wraps (``inner``), so that wrappers stack and ``sdk_dispatcher`` in
    ``net.connection`` can see through them all."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _Handshake(DispatcherWrapper):
    """Dispatcher wrapper for the handshake.

    ``initialize`` declares only the back-channel capabilities this run can answer (``offers``; None: all). On the
    handshake a question cannot wait for a later ``resume``, so a capability declared without an answerer only
    earns the server a refusal — and a server that would have done without (the SDK's own client declares nothing
    it cannot answer) may fail instead. The 2026-07-28 probe and every modern request keep declaring them all:
    there a question waits in the session.

    A ``server/discover`` result's ``serverInfo`` is kept when the server put it at the top level of the result
    (C# SDK 2.0) rather than in ``_meta``, where the SDK looks (its model drops the unknown field): ``server_info``.
    """

    def __init__(self, inner: Any, offers: frozenset[str] | None, client: HandshakeClient) -> None:
        super().__init__(inner)
        self._offers = offers
        self._client = client

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        """The request, ``initialize`` declaring only what this run answers; a discover result's raw form and
        top-level ``serverInfo`` kept on the client."""
        offers = self._offers
        if method == "initialize" and offers is not None and params and isinstance(params.get("capabilities"), dict):
            kept = {k: v for k, v in params["capabilities"].items() if k not in BACK_CHANNEL or k in offers}
            params = {**params, "capabilities": kept}
        raw: dict[str, Any] = await self.inner.send_raw_request(method, params, opts, **kw)
        if method == "server/discover" and isinstance(raw, dict):
            self._client.discovered = raw  # what ``warmcache`` remembers for the next connection
        if method == "server/discover" and isinstance(raw, dict) and isinstance(info := raw.get("serverInfo"), dict):
            from pydantic import ValidationError

            with contextlib.suppress(ValidationError):  # display-only, as the SDK reads the _meta stamp
                self._client.top_level_info = t.Implementation.model_validate(info)
        return raw


@dataclass
class Learned:
    """What one connection learns of its server while it lives (``HandshakeClient.learned``): the flow reads it to
    decide what to say or do next, and it goes when the client does."""

    wants_back_channel: bool = False
    """The server refused a first leg because it wanted to ask over the pre-2026 back-channel (``auto`` only)."""
    required_urls: list[t.ElicitRequestURLParams] = field(default_factory=list)
    """The pages the last -32042 "URL elicitation required" error of a flow leg named."""
    failures: list[McpcliError] = field(default_factory=list)
    """What back-channel answers failed with (a bad preset answer...), told after the call: the server heard only a
    refusal."""
    roots_asked_again: bool = False
    """This connection told its (kept-alive) server the roots changed: it is about to ask for them."""


class HandshakeClient(Client):
    """The SDK's client, its session's dispatcher wrapped before the handshake (``_Handshake``)."""

    handshake_offers: frozenset[str] | None = None
    top_level_info: t.Implementation | None = None
    discovered: dict[str, Any] | None = None
    """The raw result of this connection's ``server/discover``, when it sent one."""
    warm_slot: Any = None
    """This connection's place in the cache of discover results and listings (``warmcache.Slot``), if it has one."""
    learned: Learned
    """What this connection learned of its server (``connect`` gives every attempt the same one)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.learned = Learned()

    async def _build_session(self, exit_stack: AsyncExitStack) -> Any:
        session = await super()._build_session(exit_stack)
        session._dispatcher = _Handshake(session._dispatcher, self.handshake_offers, self)  # type: ignore[assignment]  # see module docstring
        return session


def server_info(client: Client) -> t.Implementation | None:
    """Who the server says it is, wherever it said it: the handshake's ``serverInfo``, the discover result's
    ``_meta`` stamp, or the discover result's top level."""
    return client.server_info or (client.top_level_info if isinstance(client, HandshakeClient) else None)
