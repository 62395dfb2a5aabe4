"""The shared session store: a PostgreSQL database that several shells and machines use at once.

Imported only when a ``postgresql://`` (or ``postgres://``) store URL is used, so psycopg stays an
optional extra (``mcpcli[postgres]``). Credentials come from where libpq looks — the URL's user,
``PGPASSWORD``/``PGUSER``…, ``~/.pgpass``, a service file — and mcpcli never writes them anywhere;
messages show the URL with any password replaced.

The tables live in their own schema, ``mcpcli``, so a database that already holds an application's
``sessions`` table can host the store too. mcpcli creates and migrates that schema itself (the
``schema_version`` table), under an advisory lock so two first runs do not race. Every call is one
transaction (autocommit off); writes lock the session row (``SELECT … FOR UPDATE``) or change it with
one conditional UPDATE, so concurrent writers to one session serialise under READ COMMITTED.
Times are ``timestamptz``; JSON is kept as text, byte for byte, in the order it was sent (``jsonb``
would reorder keys); ``request_state`` is ``bytea`` because PostgreSQL text cannot hold a NUL.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from mcpcli.errors import StoreError
from mcpcli.state.store.base import SessionRecord, redact_url
from mcpcli.state.store.pglocks import Broker, BrokerGone
from mcpcli.state.store.rows import Taken, Tx
from mcpcli.state.store.sql import SqlStore
from mcpcli.state.store.watch import CHANNEL, PostgresWatch

log = logging.getLogger(__name__)

SCHEMA = "mcpcli"
"""The PostgreSQL schema (namespace) holding the store's tables."""

CONNECT_TIMEOUT = 10
"""Seconds to wait for the server, unless the URL or ``PGCONNECT_TIMEOUT`` says otherwise (libpq waits forever)."""

_SCHEMA_LOCK = 0x6D637063_6C690001  # "mcpcli" + 1: the advisory lock key for creating and migrating the schema

_SESSION_LOCKS = 0x6D630000
"""The first of a session lock's two keys is this ("mc") plus the top 16 bits of the session id's 48; the second is
its low 32 bits. Two-key advisory locks are a space of their own, apart from the one-key schema lock."""

KEEPALIVE = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 3}
"""TCP keepalives on the store's connection (unless the URL sets them): a peer that vanished (its host died, the
network went) is noticed within ~11 s — well within a lease (30 s) — by us, and by the server (``SERVER_KEEPALIVE``),
which then ends the connection and with it the session locks the vanished driver held."""

IDLE_CLOSE = 1.0
"""Seconds a worker's command keeps its own connection open unused (its session locks are the keeper's)."""

SERVER_KEEPALIVE = "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3"

_SESSION_SETTINGS = (
    # Unqualified names in the shared SQL mean the store's own tables, whatever else the database has.
    f"SET search_path TO {SCHEMA}; "
    # The store's tables are small and hot; at the default cost (4, for spinning disks) the planner would rather sort
    # thousands of sessions than walk the (status|server, updated, id) index backwards, which is what gives a listing
    # its order for free (and is faster, measured).
    "SET random_page_cost = 1.1; "
    # The server's side of the keepalives: a client host that vanished ends its connection (and its locks) in seconds
    # rather than the kernel's two hours. Settable by any user; ignored on a Unix socket.
    f"{SERVER_KEEPALIVE}"
)
"""Sent as one statement (no parameters: the simple protocol takes several), one round trip when the store opens."""


def connect_args(url: str) -> dict[str, Any]:
    """What the store adds to the URL's connection parameters (unless the URL or the environment sets them)."""
    given = conninfo_to_dict(url)
    extra: dict[str, Any] = {}
    if "connect_timeout" not in given and not os.environ.get("PGCONNECT_TIMEOUT"):
        extra["connect_timeout"] = CONNECT_TIMEOUT
    if "application_name" not in given and not os.environ.get("PGAPPNAME"):
        extra["application_name"] = "mcpcli"  # so a DBA can tell mcpcli's connections apart
    return extra | {name: value for name, value in KEEPALIVE.items() if name not in given}


def session_lock_key(session_id: str) -> tuple[int, int]:
    """The two keys of a session's advisory lock (``pg_advisory_lock(int, int)``): every session its own, for good."""
    number = int(session_id, 16)
    low = number & 0xFFFFFFFF
    return _SESSION_LOCKS | (number >> 32), low - (1 << 32) if low >= 1 << 31 else low


_STATUS_CHECK = "CHECK (status IN ('waiting', 'running', 'done', 'failed', 'expired'))"
_METHOD_CHECK = "CHECK (method IN ('tools/call', 'prompts/get', 'resources/read'))"

_TRACE_TABLE = f"""CREATE TABLE {SCHEMA}.trace (
        session_id text COLLATE "C" NOT NULL REFERENCES {SCHEMA}.sessions (id) ON DELETE CASCADE,
        seq integer NOT NULL,
        line text NOT NULL,
        PRIMARY KEY (session_id, seq)
    )"""

_DDL = (
    # Not CREATE SCHEMA IF NOT EXISTS: that needs the CREATE right on the database even when a DBA made the schema.
    f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_namespace WHERE nspname = '{SCHEMA}') THEN CREATE SCHEMA {SCHEMA};"
    " END IF; END $$",
    f"CREATE TABLE {SCHEMA}.schema_version (version integer NOT NULL)",
    # Ids compare byte-wise (COLLATE "C"), as in SQLite: prefix lookups are ranges [key, key + "g").
    f"""CREATE TABLE {SCHEMA}.sessions (
        id text COLLATE "C" PRIMARY KEY,
        server text NOT NULL,
        method text NOT NULL {_METHOD_CHECK},
        name text NOT NULL,
        arguments text NOT NULL,
        protocol_version text,
        status text NOT NULL {_STATUS_CHECK},
        round integer NOT NULL DEFAULT 0,
        created timestamptz NOT NULL,
        updated timestamptz NOT NULL,
        result text,
        exit_code integer,
        error text,
        version integer NOT NULL DEFAULT 0,
        lease_host text,
        lease_pid integer,
        lease_acquired timestamptz,
        lease_expires timestamptz,
        identity text,
        connection text,
        lease_owner text,
        task text,
        lease_locked boolean NOT NULL DEFAULT FALSE,
        owner text,
        routing text,
        answered_by text,
        trace_context text
    )""",
    # Listings are ordered by (updated, id); each filter has an index in that order.
    f"CREATE INDEX sessions_updated ON {SCHEMA}.sessions (updated, id)",
    f"CREATE INDEX sessions_status_updated ON {SCHEMA}.sessions (status, updated, id)",
    f"CREATE INDEX sessions_server_updated ON {SCHEMA}.sessions (server, updated, id)",
    f"""CREATE TABLE {SCHEMA}.rounds (
        session_id text COLLATE "C" NOT NULL REFERENCES {SCHEMA}.sessions (id) ON DELETE CASCADE,
        round_index integer NOT NULL,
        attempt integer NOT NULL,
        requests text NOT NULL,
        request_state bytea,
        answers text,
        received timestamptz NOT NULL,
        answered timestamptz,
        answered_by text,
        answered_at timestamptz,
        PRIMARY KEY (session_id, round_index)
    )""",
    _TRACE_TABLE,
)

_MIGRATIONS = {
    # 3: each session's redacted trace, and who the flow ran as (schema 2 was the first on PostgreSQL).
    3: (f"ALTER TABLE {SCHEMA}.sessions ADD COLUMN identity text", _TRACE_TABLE),
    # 4: how the flow was connected (resume reconnects the same way).
    4: (f"ALTER TABLE {SCHEMA}.sessions ADD COLUMN connection text",),
    # 5: each flow its own lease owner (host and pid stay, for people and the "holder is gone" rule).
    5: (f"ALTER TABLE {SCHEMA}.sessions ADD COLUMN lease_owner text",),
    # 6: the server-side task a tool call became (tasks: id, status, poll position, acknowledged answers).
    6: (f"ALTER TABLE {SCHEMA}.sessions ADD COLUMN task text",),
    # 7: the holder also holds the session's advisory lock on its connection (gone the moment the connection is).
    7: (f"ALTER TABLE {SCHEMA}.sessions ADD COLUMN lease_locked boolean NOT NULL DEFAULT FALSE",),
    # 8: the team inbox: who owns a flow, whom it asks, who answered its round apart from driving it, and when.
    8: (
        f"ALTER TABLE {SCHEMA}.sessions ADD COLUMN owner text",
        f"ALTER TABLE {SCHEMA}.sessions ADD COLUMN routing text",
        f"ALTER TABLE {SCHEMA}.sessions ADD COLUMN answered_by text",
        f"ALTER TABLE {SCHEMA}.rounds ADD COLUMN answered_by text",
        f"ALTER TABLE {SCHEMA}.rounds ADD COLUMN answered_at timestamptz",
    ),
    # 9: the flow's trace context (OpenTelemetry): a resume, on any host, continues the same trace.
    9: (f"ALTER TABLE {SCHEMA}.sessions ADD COLUMN trace_context text",),
}


@lru_cache(maxsize=256)
def _pg_sql(sql: str) -> str:
    # The shared statements use "?" and contain no "%" and no "?" of their own.
    return sql.replace("?", "%s")


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    line = lines[0] if lines else type(exc).__name__
    return line.removeprefix("connection failed: ").rstrip(".")


def _connect_error(where: str, exc: psycopg.Error) -> StoreError:
    """One line (and a hint) for a connection that could not be made."""
    detail = _first_line(exc)
    text = str(exc).lower()
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate in ("28P01", "28000") or "authentication failed" in text or "no password supplied" in text:
        return StoreError(
            f"PostgreSQL refused the login to the session store {where}: {detail}.",
            hint="Give the user in the URL (or PGUSER) and the password in ~/.pgpass or PGPASSWORD",
        )
    if sqlstate == "3D000" or ("database" in text and "does not exist" in text):
        return StoreError(
            f"The session store {where} names a database that does not exist: {detail}.",
            hint="Create it (createdb NAME), or fix the database name in the store URL",
        )
    unreachable = ("connection refused", "could not translate host name", "timeout expired", "no such file")
    if any(marker in text for marker in unreachable):
        return StoreError(
            f"Cannot reach PostgreSQL for the session store {where}: {detail}.",
            hint="Check the host and port in the store URL (or PGHOST / PGPORT), and that the server is running",
        )
    return StoreError(
        f"Cannot connect to the PostgreSQL session store {where}: {detail}.",
        hint="Check the store URL and the PG* environment variables (PGHOST, PGUSER, PGDATABASE…)",
    )


class PostgresStore(SqlStore):
    """The ``Store`` on a PostgreSQL database; one connection, calls serialised between threads."""

    for_update = " FOR UPDATE"
    schema = _DDL
    migrations: Mapping[int, Sequence[str]] = _MIGRATIONS

    def __init__(self, url: str) -> None:
        """Connect, and create or migrate the schema (the connection is closed if that fails). A URL psycopg cannot read
        is a ``StoreError`` with the password left out. In a command the worker runs, the session locks go to its keeper
        and this connection is closed while idle."""
        super().__init__()
        self.url = redact_url(url)
        """The store URL, without its password (if it had one)."""
        self._dsn = url
        try:
            self._extra = connect_args(url)
        except psycopg.Error as exc:
            raise StoreError(f"The store URL {self.url} is not a valid PostgreSQL URL: {_first_line(exc)}.") from None
        self._locks: dict[str, set[str]] = {}
        """The session locks this connection holds, by session: the owners (flows of this process) that took one.
        PostgreSQL counts a session-level lock taken twice on one connection, so each owner gives back its own."""
        self._broker = Broker.from_env(url, self._extra, self._keeper_gone)
        """In a command the worker runs: its lock keeper, which holds the session locks on its one connection."""
        self._brokered: dict[str, set[str]] = {}
        """The session locks the keeper holds for this process, by session: the owners that took one."""
        self._shut = False
        self._used = time.monotonic()
        self._conn: psycopg.Connection[dict[str, Any]] = self._connect()
        try:
            self._init_schema()
        except BaseException:
            self._conn.close()
            raise
        if self._broker is not None:  # no lock lives on this connection: closed when idle, opened again when needed
            threading.Thread(target=self._close_when_idle, name="mcpcli-store-idle", daemon=True).start()

    def _connect(self) -> psycopg.Connection[dict[str, Any]]:
        try:
            conn = psycopg.connect(self._dsn, autocommit=False, row_factory=dict_row, **self._extra)
        except psycopg.Error as exc:
            raise _connect_error(self.url, exc) from None
        try:
            with conn.transaction():
                conn.execute(_SESSION_SETTINGS)  # one round trip: a takeover from a cold process waits on each
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(f"The PostgreSQL session store {self.url} failed: {_first_line(exc)}.") from None
        return conn

    def _close_when_idle(self) -> None:
        """A worker's command holds its connection only while it uses it (its locks are the keeper's): a flow
        waiting on a server, or a busy worker's many flows, keep no connection open."""
        while True:
            time.sleep(IDLE_CLOSE / 2)
            with self._lock:
                if self._shut:
                    return
                idle = time.monotonic() - self._used > IDLE_CLOSE
                if idle and not self._locks and not self._conn.closed:
                    self._conn.close()

    # -- the dialect -----------------------------------------------------------

    def _execute(self, sql: str, params: Sequence[Any]) -> psycopg.Cursor[dict[str, Any]]:
        return self._conn.execute(_pg_sql(sql), params)

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Tx]:
        # Reads get a transaction too: with autocommit off, one is open from the first statement anyway,
        # and ending it here means no connection sits "idle in transaction" between calls.
        with self._lock:
            if self._conn.closed and not self._shut:  # closed when idle (``_close_when_idle``)
                self._conn = self._connect()
            try:
                with self._conn.transaction():
                    yield Tx(self._execute)
            except psycopg.Error as exc:
                raise self._error(exc) from None
            finally:
                self._used = time.monotonic()

    def _error(self, exc: psycopg.Error) -> StoreError:
        """One line (and a hint) for a failure of a statement or of the connection."""
        detail = _first_line(exc)
        if self._conn.closed or self._conn.broken:
            return StoreError(
                f"Lost the connection to the PostgreSQL session store {self.url}: {detail}.",
                hint="Check that the server is up, then run the command again",
            )
        if getattr(exc, "sqlstate", None) == "42501":  # insufficient_privilege
            return StoreError(
                f"PostgreSQL refused access to the session store {self.url}: {detail}.",
                hint=f"Grant the user CREATE on the database, or USAGE and CREATE on schema {SCHEMA} and its tables",
            )
        return StoreError(f"The PostgreSQL session store {self.url} failed: {detail}.")

    def _time(self, value: datetime) -> datetime:
        return value

    def _state_in(self, request_state: str | None) -> bytes | None:
        # surrogatepass: a JSON string may hold a lone surrogate, and it must come back as it was.
        return None if request_state is None else request_state.encode("utf-8", "surrogatepass")

    def _state_out(self, stored: Any) -> str | None:
        return None if stored is None else bytes(stored).decode("utf-8", "surrogatepass")

    def _schema_version(self, tx: Tx) -> int | None:
        # A query of the catalog, not to_regclass(): that reads a cache which, after waiting for the schema
        # lock, may not yet know the tables another process just created.
        found = tx.one(
            "SELECT 1 AS found FROM pg_tables WHERE schemaname = ? AND tablename = 'schema_version'", [SCHEMA]
        )
        if found is None:
            return None
        row = tx.one("SELECT MAX(version) AS version FROM schema_version")
        return None if row is None or row["version"] is None else int(row["version"])

    def _has_other_tables(self, tx: Tx) -> bool:
        return tx.one("SELECT 1 AS found FROM pg_tables WHERE schemaname = ?", [SCHEMA]) is not None

    def _lock_schema(self, tx: Tx) -> None:
        tx.one("SELECT pg_advisory_xact_lock(?) AS locked", [_SCHEMA_LOCK])

    # -- session locks: every flow of this process holds its sessions' locks on this one connection --------------------

    def _take_lock(self, tx: Tx, session_id: str, owner: str) -> Taken:
        """A session-level advisory lock for ``owner``: on the worker's keeper while it lives, else on this connection
        (taking back first what a gone keeper held for this process). Counted per owner, since PostgreSQL counts a lock
        taken twice on one connection; ``proves_gone`` only when no other flow of this process held it."""
        if self._broker is not None and not self._broker.gone():
            if owner in self._brokered.get(session_id, ()):
                return Taken(locked=True)
            try:
                got = self._broker.ask({"op": "lock", "session": session_id, "owner": owner})
            except BrokerGone:
                pass
            else:
                if not got.get("got"):
                    return Taken()
                self._brokered.setdefault(session_id, set()).add(owner)
                return Taken(locked=True, new=True, proves_gone=bool(got.get("proves_gone")))
        if self._brokered:  # the keeper is gone, and the locks it held for us with it: ours again, here
            self._take_back(tx)
        holders = self._locks.setdefault(session_id, set())
        if owner in holders:  # this owner's already (a claim of a session it holds)
            return Taken(locked=True)
        row = tx.one("SELECT pg_try_advisory_lock(?, ?) AS got", session_lock_key(session_id))
        if row is None or not row["got"]:
            if not holders:
                del self._locks[session_id]
            return Taken()
        # Got: nobody else holds it. Unless another flow of this process does (the lock is ours twice then), the
        # lease on the row, if it was lock-backed, is a gone driver's.
        proves_gone = not holders
        holders.add(owner)
        return Taken(locked=True, new=True, proves_gone=proves_gone)

    def _keeper_gone(self) -> None:
        """The keeper hung up (killed, or its connection failed): the locks it held for us, taken here at once."""
        with suppress(StoreError), self._transaction(write=True) as tx:
            if self._brokered:
                self._take_back(tx)

    def _take_back(self, tx: Tx) -> None:
        """The locks the keeper held for this process, taken on this connection; one that another driver got first
        stays theirs (their claim changed the session's version: this process's next write finds its lease lost)."""
        brokered, self._brokered = self._brokered, {}
        for session_id, owners in brokered.items():
            for owner in owners:
                row = tx.one("SELECT pg_try_advisory_lock(?, ?) AS got", session_lock_key(session_id))
                if row is not None and row["got"]:
                    self._locks.setdefault(session_id, set()).add(owner)

    def _drop_lock(self, session_id: str, owner: str) -> None:
        """Give back ``owner``'s lock where it was taken (the keeper, or this connection); nothing when it holds none.
        Never raises for the lock: a keeper that is gone, or a connection that broke, took the lock with it, and a
        failed unlock is only logged."""
        with self._lock:
            brokered = self._brokered.get(session_id)
            if brokered is not None and owner in brokered:
                brokered.discard(owner)
                if not brokered:
                    del self._brokered[session_id]
                assert self._broker is not None
                with suppress(BrokerGone):  # gone: the lock went with it
                    self._broker.ask({"op": "unlock", "session": session_id, "owner": owner})
                return
            holders = self._locks.get(session_id)
            if holders is None or owner not in holders:
                return
            holders.discard(owner)
            if not holders:
                del self._locks[session_id]
            if self._conn.closed or self._conn.broken:
                return  # the connection is gone, and its locks with it
            try:
                with self._conn.transaction():
                    self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", session_lock_key(session_id))
            except psycopg.Error:  # boundary: the lock goes with the connection at the latest
                log.warning("could not give up the lock of session %s", session_id, exc_info=True)

    def gone_holders(self, sessions: Sequence[SessionRecord]) -> set[str]:
        """The ids of ``sessions`` with an unexpired lock-backed lease whose lock nobody holds any more (``pg_locks``):
        their drivers' connections ended, so a listing shows them interrupted at once (``inbox.gone_drivers``)."""
        now = self.clock()
        watched = [s for s in sessions if s.lease_locked and s.lease_expires is not None and s.lease_expires >= now]
        if not watched:
            return set()
        with self._transaction(write=False) as tx:
            rows = tx.all(
                "SELECT classid::bigint AS high, objid::bigint AS low FROM pg_locks WHERE locktype = 'advisory'"
                " AND objsubid = 2 AND granted AND database = (SELECT oid FROM pg_database"
                " WHERE datname = current_database()) AND classid::bigint BETWEEN ? AND ?",
                [_SESSION_LOCKS, _SESSION_LOCKS | 0xFFFF],
            )
        held = {(row["high"], row["low"]) for row in rows}
        gone = set()
        for session in watched:
            high, low = session_lock_key(session.id)
            if (high, low & 0xFFFFFFFF) not in held:
                gone.add(session.id)
        return gone

    def _not_a_store(self) -> StoreError:
        return StoreError(
            f"The schema {SCHEMA} in {self.url} holds tables that are not an mcpcli session store.",
            hint="Point --store (or MCPCLI_STORE) at another database",
        )

    def _describe(self) -> str:
        return self.url

    def watch(self) -> PostgresWatch:
        """Sessions changed by anyone on this database, as ``NOTIFY`` tells them (``store.watch``)."""
        from mcpcli.state.store.watch import PostgresWatch

        return PostgresWatch(self._dsn, self._extra)

    def _changed(self, tx: Tx, session_id: str) -> None:
        tx.run(f"SELECT pg_notify('{CHANNEL}', ?)", [session_id])

    def close(self) -> None:
        with self._lock:
            self._shut = True
            self._conn.close()
            if self._broker is not None:
                self._broker.close()

    def __enter__(self) -> PostgresStore:
        return self
