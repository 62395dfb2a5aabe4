"""Which stdio command lines may run without asking: the ones this user typed, or confirmed once.

A session keeps its server as the user gave it; for a command line that is the command itself. A session
that arrives from elsewhere — an imported bundle, a row another machine wrote into a shared store — could
carry any command, and a checksum cannot tell an edit from the original. So ``resume`` runs a stored
command line only when this machine's user typed it (``call -s "…"`` records it here), or confirms the exact
command at a terminal, or passes ``--trust-server``. Named servers are the user's own config and need no
entry; URLs and the demo run no command.

The list lives in the user's config dir (0600), as sha256 digests of the exact argv and working directory:
nothing in a store or a bundle can add to it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpcli.settings.config import Paths
    from mcpcli.settings.targets import Target

log = logging.getLogger(__name__)

FILE_NAME = "trusted-commands.json"
MAX_ENTRIES = 2000
"""Oldest entries go first past this many: a forgotten command is simply asked about again."""


def needs_trust(target: Target) -> bool:
    """Whether running ``target`` starts a command line that did not come from the user's config."""
    return target.kind == "stdio" and target.source == "command"


def _digest(target: Target) -> str:
    material = json.dumps([target.command, *target.args, target.cwd or ""], separators=(",", ":"))
    return hashlib.sha256(material.encode()).hexdigest()


def _read(paths: Paths) -> dict[str, str]:
    try:
        data = json.loads((paths.config_dir / FILE_NAME).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        log.warning("the trusted-commands list is unreadable; every stored command line will be asked about")
        return {}
    entries = data.get("commands") if isinstance(data, dict) else None
    return {k: v for k, v in entries.items() if isinstance(v, str)} if isinstance(entries, dict) else {}


def is_trusted(paths: Paths, target: Target) -> bool:
    return not needs_trust(target) or _digest(target) in _read(paths)


def remember(paths: Paths, target: Target) -> None:
    """Record a command line the user typed or confirmed. Best effort: a list that cannot be written only means
    the command is asked about again on a later resume."""
    if not needs_trust(target):
        return
    entries = _read(paths)
    key = _digest(target)
    if key in entries:
        return
    entries[key] = datetime.now(UTC).isoformat(timespec="seconds")
    kept = dict(sorted(entries.items(), key=lambda item: item[1])[-MAX_ENTRIES:])
    from mcpcli.settings.config import write_private

    try:
        write_private(paths.config_dir / FILE_NAME, json.dumps({"commands": kept}, indent=0), durable=False)
    except OSError as exc:
        log.warning("could not record a trusted command line: %s", exc)
