"""``sessions list`` without the runtime: the plain case read straight from the default SQLite store.

The most frequent command costs what ``mcpcli --version`` costs, not three times that: no config model, no store
model (pydantic), no Rich. It serves only when nothing could make the full path answer differently — no
``config.toml`` (which may name another store, and whose mistakes every command reports), no other store given,
and ``listing.read`` able to read the file as it is — and otherwise returns ``None`` for the caller to run
``commands.sessions.list_sessions`` on a ``Runtime``. Both print through ``terminal.session_lines``, and ``--json``
through the same writer.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcpcli.commands.runtime import Globals, guarded
from mcpcli.state.listing import read
from mcpcli.userdirs import config_home, state_home


def quick_list(
    g: Globals, status: str | None, limit: int, *, server: str | None, waiting: bool, json_out: bool
) -> int | None:
    """The listing's exit code, or ``None`` when the full path must run it (nothing was printed then)."""
    if not _plain_store(g.store) or not _plain_store(os.environ.get("MCPCLI_STORE")):
        return None
    config = Path(config_home()) / "config.toml"
    if config.exists() or config.is_symlink():
        return None
    listing = read(Path(state_home()) / "sessions.db", status=status, server=server, limit=limit, waiting=waiting)
    if listing is None:
        return None

    def body() -> int:
        if json_out:
            from mcpcli.terminal.output import Output

            Output().json(listing.docs)
            return 0
        from mcpcli.terminal.session_lines import show

        show(listing.docs, listing.pending, waiting=waiting, limit=limit)
        return 0

    return guarded(body, g.debug, json=json_out)


def _plain_store(url: str | None) -> bool:
    """No store named, or the default one (``store.open_store``: ``sqlite:`` alone is the file under the state
    dir)."""
    return url is None or url.strip() in ("", "sqlite:")
