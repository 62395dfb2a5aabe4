"""The session store: records of flows that met input requests, kept so they can be resumed.

``open_store`` turns a store URL (``--store`` / ``MCPCLI_STORE`` / config) into a
``Store``. Importing this package is cheap — pydantic and stdlib ``sqlite3`` —
so ``mcpcli sessions list`` starts fast; engines with heavy drivers are imported
only when their URL is used.
"""

from __future__ import annotations

import re
from pathlib import Path

from mcpcli.errors import StoreError, UsageError
from mcpcli.store.base import Method, RoundRecord, SessionRecord, Status, Store, new_session_id, utcnow
from mcpcli.store.sqlite import SqliteStore

__all__ = [
    "Method",
    "RoundRecord",
    "SessionRecord",
    "SqliteStore",
    "Status",
    "Store",
    "new_session_id",
    "open_store",
    "utcnow",
]

_ACCEPTED = "sqlite: (the default file), sqlite:/abs/path.db, sqlite:///abs/path.db, postgresql://…"


def open_store(url: str | None, default_path: Path) -> Store:
    """Open the store at ``url``; ``None`` or ``sqlite:`` means SQLite at ``default_path``."""
    if url is None or url.strip() in ("", "sqlite:"):
        return SqliteStore(default_path)
    url = url.strip()
    if url.startswith(("postgresql://", "postgres://")):
        raise StoreError(
            "The PostgreSQL store is not available yet.",
            hint="Use the default SQLite store for now: drop --store (and unset MCPCLI_STORE)",
        )
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:")
        if path.startswith("///"):  # URL form with an empty host: sqlite:///abs/path.db
            path = path.removeprefix("//")
        if not path.startswith("//") and Path(path).is_absolute():
            return SqliteStore(Path(path))
    shown = re.sub(r"//[^/@]*@", "//…@", url)  # never echo a password embedded in the URL
    raise UsageError(f"Unsupported store URL '{shown}'.", hint=f"Use one of: {_ACCEPTED}")
