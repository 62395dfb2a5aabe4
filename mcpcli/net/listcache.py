"""The one on-disk cache of each server's tool and prompt listings: shell completion reads it instead of
connecting, and a warm call adopts its tool listing instead of asking (``mcpcli.net.warmcache``).

``<cache dir>/tools/<sha256 of where the server is>.json`` (0600 in 0700 directories) holds the tools — each as
listed, its description cut to the first line (``inputSchema``, ``outputSchema``, ``execution``, ``_meta``: what
the SDK checks a call by) — and the prompts (name, description, arguments), each with when it was fetched and when
it expires. It is written whenever mcpcli lists tools or prompts anyway (``mcpcli tools``, ``prompts``, the listing
``call`` and ``prompt`` do to type ``--arg``) and by ``mcpcli _refresh-cache``, the detached process completion
starts. Expiry honours the server's hint as the SDK's own cache does (a 2026-07-28 ``ttlMs``, capped at its 24 h);
without one (pre-2026 servers) a list is fresh for ``DEFAULT_TTL``, an hour. Refreshes of one server start at most
every ``REFRESH_INTERVAL`` seconds: a dead server does not cost a wait on every TAB, and a list marked immediately
stale (``ttlMs: 0``, the SDK server's default) is not refetched on every TAB either.

**Who may adopt a tool listing** (``vouched``): completion offers whatever a server listed last, whoever asked; a
call adopts a listing only when a connection with its own warm-cache key (who asks, what it declares:
``warmcache.key``) — of the same kept-alive server generation — listed exactly these tools, and only while the warm
cache's own time runs (``warmcache.expires``, from ``fetched_at`` and the server's ``ttl_ms``). A warm entry
dropped as stale takes its key off (``unvouch``).

Light at import, like ``mcpcli.cli.completion``: reading the cache needs no ``mcp``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import subprocess

    from mcpcli.settings.config import Paths
    from mcpcli.settings.targets import Target

Kind = Literal["tools", "prompts"]

CACHE_VERSION = 1
DEFAULT_TTL = 3600.0
"""Seconds a list stays fresh when the server gives no hint (pre-2026 servers)."""
MAX_TTL = 24 * 3600.0
"""The cap on a server's ``ttlMs``: the SDK's own ``MAX_TTL_MS`` (a test keeps the two equal)."""
REFRESH_INTERVAL = 30.0
"""Seconds between two refreshes of one server's lists started by completion."""
REFRESH_TIMEOUT = 20.0
"""Seconds a refresh may take in all, connection included."""
MAX_VOUCHED = 20
"""The most warm keys a listing keeps (the oldest go): who asks rarely changes, but nothing here grows unbounded."""


def identity(target: Target) -> str:
    """Where the server is — what the list depends on. Headers and env are left out: they say who asks, not which
    server answers (and a cache file name must not depend on a secret's value)."""
    import hashlib
    import json

    if target.kind == "http":
        parts = ["http", target.url or ""]
    elif target.kind == "stdio":
        parts = ["stdio", target.command or "", *target.args, target.cwd or ""]
    else:
        parts = ["demo"]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def cache_file(paths: Paths, target: Target) -> Path:
    return paths.cache_dir / "tools" / f"{identity(target)}.json"


def read_cache(path: Path) -> dict[str, Any]:
    """The cache document, or ``{}`` when missing or unreadable (a corrupt file is as good as none)."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) and doc.get("version") == CACHE_VERSION else {}


def cached(doc: dict[str, Any], kind: Kind, now: float | None = None) -> tuple[list[dict[str, Any]], bool] | None:
    """``(items, fresh)`` of one list in a cache document, or ``None`` when it holds none."""
    entry = doc.get(kind)
    if not isinstance(entry, dict) or not isinstance(entry.get("items"), list):
        return None
    items = [item for item in entry["items"] if isinstance(item, dict) and isinstance(item.get("name"), str)]
    expires = entry.get("expires_at")
    fresh = isinstance(expires, int | float) and (time.time() if now is None else now) < expires
    return items, fresh


def ttl_of(pages: Sequence[Any], protocol_version: str | None) -> tuple[float, str]:
    """Seconds the listing may be kept, and whose word that is: the smallest ``ttlMs`` of its pages when the
    session is 2026-07-28 (as the SDK's own cache reads hints), else ``DEFAULT_TTL``; capped at ``MAX_TTL``."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # the listing came from the SDK: it is loaded

    hinted = [p.ttl_ms for p in pages if "ttl_ms" in getattr(p, "model_fields_set", ())]
    if protocol_version in MODERN_PROTOCOL_VERSIONS and hinted and len(hinted) == len(pages):
        return min(min(hinted) / 1000.0, MAX_TTL), "server"
    return DEFAULT_TTL, "default"


def _summary(kind: Kind, item: Any) -> dict[str, Any]:
    """A listed tool or prompt as kept: a tool whole but for its description's first line only (what a call is
    checked by stays); a prompt's name, description and arguments."""
    raw: dict[str, Any] = (
        item if isinstance(item, dict) else item.model_dump(mode="json", by_alias=True, exclude_none=True)
    )
    kept = {"name": raw.get("name"), "description": _first_line(raw.get("description"))}
    if kind == "tools":
        kept = {**raw, **kept, "inputSchema": raw.get("inputSchema") or {}}
    else:
        kept["arguments"] = [
            {"name": a.get("name"), "description": _first_line(a.get("description")), "required": a.get("required")}
            for a in raw.get("arguments") or []
            if isinstance(a, dict)
        ]
    return kept


def _first_line(text: Any) -> str:
    return str(text or "").strip().split("\n", 1)[0]


Vouch = tuple[str, str | None]
"""A warm connection's key (``warmcache.key``) and its kept-alive server's generation (None: not a kept server)."""


def remember(
    paths: Paths,
    target: Target,
    kind: Kind,
    pages: Sequence[Any],
    protocol_version: str | None,
    vouch: Vouch | None = None,
) -> None:
    """Keep a complete listing (every page, as the SDK returned them) for completion and, ``vouch``ed by the
    connection that listed it, for a warm call; never fails the caller."""
    remember_at(cache_file(paths, target), target.label, kind, pages, protocol_version, vouch)


def remember_at(
    path: Path, server: str, kind: Kind, pages: Sequence[Any], protocol_version: str | None, vouch: Vouch | None
) -> None:
    """``remember`` into the cache file at ``path``. The same tools listed again keep the keys that vouched for
    them (and gain ``vouch``'s); another listing is vouched for by ``vouch`` alone."""
    try:
        ttl, source = ttl_of(pages, protocol_version)
        items = [_summary(kind, item) for page in pages for item in getattr(page, kind)]
        dumped = [page.model_dump(mode="json", by_alias=True, exclude_none=True) for page in pages]
        last = {k: v for k, v in (dumped[-1] if dumped else {}).items() if k not in (kind, "nextCursor")}
        ttls = [page.get("ttlMs") for page in dumped]
        now = time.time()
        doc = read_cache(path) or {"version": CACHE_VERSION}
        entry = {"fetched_at": now, "expires_at": now + ttl, "ttl": source, "items": items, "page": last}
        entry["ttl_ms"] = min(ttls) if ttls and all(isinstance(x, int) for x in ttls) else None
        entry |= _vouched(doc.get(kind), entry, vouch)
        doc["server"] = server
        doc[kind] = entry
        _write(path, doc)
    except Exception:  # boundary: the cache is a convenience; the command that listed goes on
        import logging

        logging.getLogger(__name__).debug("could not write the listing cache", exc_info=True)


def _vouched(old: Any, new: dict[str, Any], vouch: Vouch | None) -> dict[str, Any]:
    """Who may adopt ``new``: the keys that vouched for ``old`` when it listed the same (of the same generation),
    and ``vouch``'s."""
    generation = vouch[1] if vouch is not None else None
    same = isinstance(old, dict) and (old.get("items"), old.get("page")) == (new["items"], new["page"])
    keys = list(old.get("vouched") or []) if same and old.get("generation") == generation else []
    if vouch is not None and vouch[0] not in keys:
        keys = [*keys, vouch[0]][-MAX_VOUCHED:]
    return {"vouched": keys, "generation": generation if keys else None}


def vouched_tools(path: Path, key: str, generation: str | None) -> tuple[dict[str, Any], float, Any] | None:
    """The tools listing at ``path`` as the server gave it (a ``ListToolsResult`` document), when ``key`` vouched
    for it with this ``generation``; and when it was fetched, and the server's ``ttlMs``. None otherwise."""
    entry = read_cache(path).get("tools")
    if not isinstance(entry, dict) or key not in (entry.get("vouched") or []):
        return None
    if entry.get("generation") != generation or not isinstance(entry.get("page"), dict):
        return None
    fetched = entry.get("fetched_at")
    if not isinstance(fetched, int | float) or not isinstance(entry.get("items"), list):
        return None
    return {**entry["page"], "tools": entry["items"]}, float(fetched), entry.get("ttl_ms")


def unvouch(path: Path, key: str) -> None:
    """``key``'s connection found its adopted listing stale: it adopts it no more (completion still offers it)."""
    doc = read_cache(path)
    entry = doc.get("tools")
    if isinstance(entry, dict) and key in (entry.get("vouched") or []):
        entry["vouched"] = [k for k in entry["vouched"] if k != key]
        with contextlib.suppress(OSError):
            _write(path, doc)


def _write(path: Path, doc: dict[str, Any]) -> None:
    """Replace ``path`` atomically with a 0600 file in 0700 directories."""
    import json

    from mcpcli.settings.config import write_private

    write_private(path, json.dumps(doc), durable=False)  # a cache: losing it to a crash costs one listing


def start_refresh(path: Path, given: str | None) -> subprocess.Popen[bytes] | None:
    """Start ``mcpcli _refresh-cache`` detached (its own session, no terminal, no pipe the shell waits on), unless
    one started less than ``REFRESH_INTERVAL`` seconds ago."""
    import subprocess

    from mcpcli.settings.config import private_dir

    marker = path.with_suffix(".refresh")
    with contextlib.suppress(FileNotFoundError):
        if time.time() - marker.stat().st_mtime < REFRESH_INTERVAL:
            return None
    private_dir(marker.parent)
    marker.touch(mode=0o600)  # (its mtime is when the last refresh started)
    argv = [sys.executable, "-P", "-m", "mcpcli", "_refresh-cache", *([given] if given else [])]
    # Without the shell's completion variables: the child must run the command, not answer the shell again.
    env = {k: v for k, v in os.environ.items() if k != "_MCPCLI_COMPLETE" and not k.startswith(("COMP_", "_TYPER_"))}
    return subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
