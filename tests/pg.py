"""A throwaway PostgreSQL server for the tests: one per test session, on 127.0.0.1, gone afterwards.

``PgCluster.start()`` finds the server binaries (Debian's ``/usr/lib/postgresql/*/bin`` or ``PATH``),
runs ``initdb`` into a fresh directory and starts the server on a free port with ``fsync=off`` (the
tests need PostgreSQL's semantics, not its durability). PostgreSQL refuses to run as root, so as root
the binaries run as the ``postgres`` user through ``runuser``; otherwise they run as we are.
``database()`` hands each test a fresh, empty database.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

SERVER_USER = "postgres"
"""The OS user the server runs as when the tests run as root (Debian's package creates it)."""

SUPERUSER = "postgres"
"""The database superuser ``initdb`` creates; the tests connect as it, without a password (``-A trust``)."""


class PgUnavailable(RuntimeError):
    """PostgreSQL cannot be started here; the message says what is missing."""


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``: Debian's newest version first, then ``PATH``."""

    def version(bindir: str) -> tuple[int, ...]:
        name = Path(bindir).parent.name
        return tuple(int(part) for part in name.split(".") if part.isdigit())

    candidates = sorted((str(p) for p in Path("/usr/lib/postgresql").glob("*/bin")), key=version, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parent))
    for bindir in candidates:
        if (Path(bindir) / "initdb").is_file() and (Path(bindir) / "pg_ctl").is_file():
            return Path(bindir)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """One PostgreSQL server for the test session: ``start()``, ``database()`` per test, ``stop()``."""

    def __init__(self) -> None:
        self.bindir: Path | None = None
        self.dir: Path | None = None
        self.port = 0
        self._names = itertools.count(1)
        self._as_server_user = os.geteuid() == 0 if hasattr(os, "geteuid") else False

    # -- running the binaries ------------------------------------------------

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        assert self.bindir is not None and self.dir is not None
        argv = [str(self.bindir / tool), *args]
        if self._as_server_user:
            argv = ["runuser", "-u", SERVER_USER, "--", *argv]
        done = subprocess.run(
            argv, cwd=self.dir, capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL
        )
        if check and done.returncode != 0:
            log = self.dir / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise PgUnavailable(f"{tool} {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")
        return done

    def start(self, *, durable: bool = False) -> PgCluster:
        """Start the server; ``durable`` keeps PostgreSQL's own fsync settings (the benchmark measures them)."""
        self.bindir = find_bindir()
        if self.bindir is None:
            raise PgUnavailable(
                "PostgreSQL server binaries (initdb, pg_ctl) were not found in /usr/lib/postgresql/*/bin or on PATH "
                "(Debian: apt-get install postgresql)"
            )
        if self._as_server_user and shutil.which("runuser") is None:
            raise PgUnavailable("running as root, but runuser is missing (PostgreSQL refuses to run as root)")
        # In /tmp rather than pytest's tmp_path: the server user must be able to reach it, and
        # pytest's directories are private to us. A short path also keeps the socket path short.
        self.dir = Path(tempfile.mkdtemp(prefix="mcpcli-pg-"))
        data = self.dir / "data"
        if self._as_server_user:
            shutil.chown(self.dir, user=SERVER_USER, group=None)
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", SUPERUSER, "--no-sync", "-E", "UTF8", "--locale=C")
        for _attempt in range(3):  # another process may take the free port before the server binds it
            self.port = _free_port()
            options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c max_connections=200"
            if not durable:  # tests need correctness, not crash safety of the throwaway server
                options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            started = self._run(
                "pg_ctl", "-D", str(data), "-l", str(self.dir / "server.log"), "-o", options, "-w", "start", check=False
            )
            if started.returncode == 0:
                return self
        raise PgUnavailable(f"pg_ctl start failed: {started.stderr.strip()}\n{self._log_tail()}")

    def _log_tail(self) -> str:
        log = None if self.dir is None else self.dir / "server.log"
        return log.read_text(errors="replace")[-2000:] if log is not None and log.exists() else ""

    def stop(self) -> None:
        """Stop the server at once and remove its files; harmless when it never started."""
        if self.dir is None:
            return
        if (self.dir / "data" / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    # -- what the tests use ----------------------------------------------------

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        """A fresh, empty database; returns its URL."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def drop(self, url: str) -> None:
        """Drop a database made by ``database()``, ending whatever connections a test left open."""
        import psycopg

        name = url.rsplit("/", 1)[1]
        with contextlib.suppress(psycopg.Error), psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
