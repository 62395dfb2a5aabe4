"""The session store: records of flows that met input requests, kept so they can be resumed.

``open_store`` turns a store URL (``--store`` / ``MCPCLI_STORE`` / config) into a
``Store``. Importing this package is cheap — pydantic and stdlib ``sqlite3`` —
so ``mcpcli sessions list`` starts fast; the PostgreSQL engine and its driver
(psycopg, the optional ``mcpcli[postgres]`` extra) are imported only when a
``postgresql://`` URL is used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from mcpcli.errors import ConfigError, StoreError, UsageError
from mcpcli.state.store.base import (
    Lease,
    LeaseLost,
    Method,
    RoundRecord,
    SessionBusy,
    SessionChanged,
    SessionRecord,
    Status,
    Store,
    new_lease_owner,
    new_session_id,
    redact_url,
    url_has_password,
    utcnow,
)
from mcpcli.state.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from mcpcli.state.store.postgres import PostgresStore

__all__ = [
    "Lease",
    "LeaseLost",
    "Method",
    "PostgresStore",
    "RoundRecord",
    "SessionBusy",
    "SessionChanged",
    "SessionRecord",
    "SqliteStore",
    "Status",
    "Store",
    "new_lease_owner",
    "new_session_id",
    "open_store",
    "utcnow",
]

_ACCEPTED = "sqlite: (the default file), sqlite:/abs/path.db, sqlite:///abs/path.db, postgresql://…"


def open_store(url: str | None, default_path: Path, *, source: Literal["flag", "env", "config"] = "flag") -> Store:
    """Open the store at ``url``; ``None`` or ``sqlite:`` means SQLite at ``default_path``.

    ``source`` says where the URL came from: one from the config file must not carry a password, since
    that file is meant to be shared and copied around (the flag and the environment are the user's own).
    """
    if url is None or url.strip() in ("", "sqlite:"):
        return SqliteStore(default_path)
    url = url.strip()
    if source == "config" and url_has_password(url):
        raise ConfigError(
            "The store URL in config.toml contains a password.",
            hint="Put the password in ~/.pgpass or PGPASSWORD, and remove it from config.toml",
        )
    if url.startswith(("postgresql://", "postgres://")):
        return _open_postgres(url)
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:")
        if path.startswith("///"):  # URL form with an empty host: sqlite:///abs/path.db
            path = path.removeprefix("//")
        if not path.startswith("//") and Path(path).is_absolute():
            return SqliteStore(Path(path))
    raise UsageError(f"Unsupported store URL '{redact_url(url)}'.", hint=f"Use one of: {_ACCEPTED}")


def _open_postgres(url: str) -> Store:
    try:
        from mcpcli.state.store.postgres import PostgresStore
    except ImportError as exc:  # the extra is not installed, or psycopg cannot find libpq
        raise StoreError(
            f"The PostgreSQL store needs psycopg, which cannot be imported here ({exc}).",
            hint="pip install 'mcpcli[postgres]'  (with pipx: pipx inject mcpcli 'psycopg[binary]')",
        ) from None
    return PostgresStore(url)


def __getattr__(name: str) -> object:
    # ``from mcpcli.state.store import PostgresStore`` works, but only that imports psycopg.
    if name == "PostgresStore":
        from mcpcli.state.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
