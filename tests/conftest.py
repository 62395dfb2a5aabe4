"""Shared fixtures: a private MCPCLI_HOME per test, the CLI in-process (in the warm pass: through the front end and
the worker) and as a real process, HTTP servers, and a PostgreSQL server (``pg_url``: a fresh database per test;
``tests/pg.py`` runs the server).

No test touches the real home directory: ``home`` is autouse and points
``MCPCLI_HOME`` at a fresh 0700 directory.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
from pg import PgCluster, PgUnavailable

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).resolve().parent / "servers.py"
PY = sys.executable


WORKER_DIR = pytest.StashKey[str]()

WARM = os.environ.get("MCPCLI_TEST_WARM") == "1"
"""The warm pass (.ci/run): ``cli`` runs each command as ``mcpcli`` does, through the front end and the worker."""

IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
"""Read once, at start: some tests take ``CI`` out of their environment (the worker is off under it)."""


def pytest_configure(config: pytest.Config) -> None:
    """Workers (one per user and install) listen in a directory of this test session's own: two test runs on one
    machine — other checkouts, CI jobs — never reach each other's worker, and none reaches the user's."""
    import tempfile

    directory = tempfile.mkdtemp(prefix="mcpcli-w-")  # short: a Unix socket's path is at most ~100 bytes
    os.environ["MCPCLI_WORKER_DIR"] = directory
    config.stash[WORKER_DIR] = directory


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the session's worker (if a test left one) and remove its directory."""
    import shutil

    directory = config.stash.get(WORKER_DIR, None)
    if directory is None:
        return
    if any(Path(directory).glob("*.sock")):
        subprocess.run([PY, "-m", "mcpcli", "worker", "stop"], capture_output=True, timeout=60, check=False)
    shutil.rmtree(directory, ignore_errors=True)  # a worker still there sees its socket gone and exits


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if WARM:
        skip = pytest.mark.skip(reason="the warm pass: this test kills or signals the mcpcli process itself")
        for item in items:
            if "cold_only" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("home")
    base.chmod(0o700)
    path = base / "mcpcli"
    monkeypatch.setenv("MCPCLI_HOME", str(path))
    for name in ("MCPCLI_SERVER", "MCPCLI_STORE", "MCPCLI_ASSUME_TTY", "TRACEPARENT"):
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in os.environ if n.startswith("OTEL_")]:  # a shell's own collector never gets test spans
        monkeypatch.delenv(name)
    if WARM:
        # The warm pass (.ci/run): the same tests, every server command through a worker started for this home —
        # and one that runs in-process instead (no worker, one that does not answer…) fails (exit 4). Both
        # variables turn the worker on under CI=true (which .ci/run sets), where it is off by default.
        monkeypatch.setenv("MCPCLI_WORKER", "1")
        monkeypatch.setenv("MCPCLI_WORKER_REQUIRED", "1")
        subprocess.run([PY, "-m", "mcpcli", "worker", "start"], capture_output=True, timeout=60, check=True)
        yield path
        subprocess.run([PY, "-m", "mcpcli", "worker", "stop"], capture_output=True, timeout=60)
        return
    monkeypatch.setenv("MCPCLI_WORKER", "0")  # the cold path; tests/test_worker.py turns the warm one on
    yield path


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_inprocess(*args: str, stdin: str = "") -> Result:
    """Run the CLI in this process (fast; the demo server runs in-process too). In the warm pass, as ``mcpcli``
    itself: a process through the front end (``mcpcli.entry``), which hands a server command to the worker."""
    if WARM:
        return run_process(*args, stdin=stdin, cwd=Path.cwd())
    from mcpcli.cli import app

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _stdin(stdin),
    ):
        try:
            rv = app(list(args), standalone_mode=False)
            code = rv if isinstance(rv, int) else 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        except Exception as exc:  # typer raises click's Exit with standalone_mode=False
            code = int(getattr(exc, "exit_code", 99))
            if code == 99:
                raise
    return Result(code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _stdin(text: str) -> Iterator[None]:
    old = sys.stdin
    sys.stdin = io.StringIO(text)
    try:
        yield
    finally:
        sys.stdin = old


@pytest.fixture
def cli() -> Any:
    return run_inprocess


def run_process(
    *args: str, stdin: str = "", env: dict[str, str] | None = None, timeout: float = 60, cwd: Path = ROOT
) -> Result:
    """Run ``python -m mcpcli`` as a real, separate process (from ``cwd``: the default root)."""
    proc = subprocess.run(
        [PY, "-m", "mcpcli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def process() -> Any:
    return run_process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpServer:
    """A server process on 127.0.0.1 speaking streamable HTTP; restartable (same port, maybe a new key)."""

    def __init__(self, argv: list[str], port: int, log: Path) -> None:
        self.argv = argv
        self.port = port
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self, extra: list[str] | None = None) -> HttpServer:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen([*self.argv, *(extra or [])], stdout=log, stderr=log, cwd=ROOT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return self
            time.sleep(0.05)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture
def http_demo(tmp_path: Path) -> Iterator[Any]:
    """Start the demo server over HTTP: ``http_demo(key_file=..., ttl=...)``; stopped after the test."""
    servers: list[HttpServer] = []

    def start(key_file: Path | None = None, ttl: float | None = None) -> HttpServer:
        port = free_port()
        argv = [PY, "-m", "mcpcli.demo", "--http", f"127.0.0.1:{port}"]
        argv += ["--key-file", str(key_file or tmp_path / "demo.key")]
        if ttl is not None:
            argv += ["--ttl", str(ttl)]
        server = HttpServer(argv, port, tmp_path / f"server-{port}.log")
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[Any]:
    """Start one of tests/servers.py over HTTP: ``http_server("never_stops")``."""
    servers: list[HttpServer] = []

    def start(kind: str, *extra: str) -> HttpServer:
        port = free_port()
        argv = [PY, str(SERVERS), kind, "--http", f"127.0.0.1:{port}", *extra]
        server = HttpServer(argv, port, tmp_path / f"{kind}-{port}.log")
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


def stdio_server(kind: str, *extra: str) -> str:
    """A ``-s`` command line that runs one of tests/servers.py over stdio."""
    import shlex

    return shlex.join([PY, str(SERVERS), kind, *extra])


def demo_stdio(key_file: Path) -> str:
    import shlex

    return shlex.join([PY, "-m", "mcpcli.demo", "--key-file", str(key_file)])


def cannot_run_here(what: str, reason: str) -> NoReturn:
    """Skip a test that cannot run on this machine (no root, no ``unshare``…), but fail it in CI: CI must run it."""
    if IN_CI:
        pytest.fail(f"CI must run {what}, but cannot: {reason}", pytrace=False)
    pytest.skip(f"{what} skipped locally: {reason}")


def _postgres_unavailable(reason: str) -> NoReturn:
    """Skip the PostgreSQL tests here, but fail them in CI: CI must run them for real."""
    cannot_run_here("the PostgreSQL tests", reason)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """One PostgreSQL server on 127.0.0.1 for the whole test session, started on first use."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        _postgres_unavailable(f"psycopg cannot be imported ({exc}); pip install -e '.[test,postgres]'")
    cluster = PgCluster()
    atexit.register(cluster.stop)  # also when pytest is interrupted before the fixture's teardown
    try:
        cluster.start()
    except PgUnavailable as exc:
        cluster.stop()
        _postgres_unavailable(str(exc))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> Iterator[str]:
    """The URL of a fresh, empty database (no password: the test server trusts 127.0.0.1); dropped afterwards."""
    url = pg_cluster.database()
    yield url
    pg_cluster.drop(url)


def _snapshot_dirname(cls: Any, *, test_location: Any) -> str:
    """SVG snapshots live at ``snapshots/<test_module>/<test>.svg`` (syrupy 4.8 has no --snapshot-dirname)."""
    return str(ROOT / "snapshots" / test_location.basename)


with contextlib.suppress(ImportError):  # pytest-textual-snapshot comes with the test extra
    from pytest_textual_snapshot import SVGImageExtension

    SVGImageExtension.dirname = classmethod(_snapshot_dirname)  # type: ignore[method-assign,assignment]


@pytest.fixture
def hostile_http(tmp_path: Path) -> Iterator[Any]:
    """Start one of tests/hostile.py's servers over HTTP on 127.0.0.1: ``hostile_http(kind, *extra)``; all are
    stopped after the test."""
    servers: list[HttpServer] = []

    def start(kind: str, *extra: str) -> HttpServer:
        port = free_port()
        script = Path(__file__).resolve().parent / "hostile.py"
        server = HttpServer([PY, str(script), kind, "--http", str(port), *extra], port, tmp_path / f"{kind}.log")
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended: no such process, or a zombie its parent has not reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def wait_until(condition: Any, timeout: float = 30.0, *, step: float = 0.05) -> bool:
    """Whether ``condition()`` became true within ``timeout`` seconds (looked at every ``step`` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return bool(condition())
