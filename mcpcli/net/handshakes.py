"""What each server negotiated last time, so that the next connection goes straight to the right handshake.

``mode="auto"`` first sends a 2026-07-28 ``server/discover``; a pre-2026 server refuses it and the SDK falls back
to ``initialize``: one wasted round trip (and the server's time to start refusing) on every connection. So
``connect`` remembers per target — keyed as shell completion's list cache is (``listcache.identity``: where the
server is, never who asks) — that it spoke the handshake, in one small 0600 file, ``<cache dir>/handshakes.json``,
and next time starts with ``initialize``. Should that fail (the server was upgraded), the entry is forgotten
and ``auto`` runs as if nothing were known. A modern server needs no entry: its discover succeeds first time.

A cache: unreadable or missing means nothing is known, and a failed write costs only the round trip.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

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
