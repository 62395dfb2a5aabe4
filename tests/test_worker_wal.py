"""Commands in a row through the worker write their rounds over a write-ahead log already on disk: the lock keeper
holds each SQLite store a command used open between commands (a commit that grows a new log waits for the file
system's metadata too). At rest the store file alone is whole, a deleted home is let go while the worker serves
others, and nothing is held once idle or once the worker stops."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import wait_until
from test_worker import mcpcli, worker_dir  # noqa: F401  (worker_dir: a worker directory of each test's own)

from mcpcli.userdirs import socket_path

pytestmark = [pytest.mark.slow, pytest.mark.cold_only]

FLOW = ("call", "provision", "-a", "name=w", "--answer", "region=eu-west-1")
"""A two-round flow of the demo server: a session, written to the store."""


def _holders(path: Path) -> set[int]:
    """The processes (other than this one) with ``path`` open, its log, or a deleted file that was there."""
    found: set[int] = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:  # gone, or not ours
            continue
        for fd in fds:
            with contextlib.suppress(OSError):  # closed meanwhile
                if str(fd.readlink()).startswith(str(path)):
                    found.add(int(proc.name))
                    break
    return found


def _sessions_in_the_file_alone(store: Path, scratch: Path) -> int:
    """The sessions a copy of the store file holds without its log (what a backup by ``cp`` would keep)."""
    copy = scratch / "copy.db"
    shutil.copyfile(store, copy)
    for side in ("-wal", "-shm"):
        Path(f"{copy}{side}").unlink(missing_ok=True)
    with sqlite3.connect(copy) as conn:
        (count,) = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()
    copy.unlink()
    return int(count)


@pytest.fixture
def start_worker(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Start the worker (the other tests run cold) with the given environment; stopped afterwards."""
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)

    def start(**env: str) -> None:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        started = mcpcli("worker", "start")
        assert started.returncode == 0, started.stderr

    yield start
    if socket_path().exists():
        mcpcli("worker", "stop")


def _flow(**env: str) -> None:
    done = mcpcli(*FLOW, env=env)
    assert done.returncode == 0, done.stderr


def test_commands_in_a_row_commit_over_a_log_the_keeper_holds_and_the_file_alone_is_whole(
    start_worker: Callable[..., None], home: Path, tmp_path: Path
) -> None:
    start_worker()
    store = home / "sessions.db"
    for _ in range(3):
        _flow()
    # Between commands, no command runs, yet the store and its log stay open (the keeper)...
    assert wait_until(lambda: _holders(store)), "nobody holds the store between commands"
    assert Path(f"{store}-wal").exists()
    # ...and the log has been copied into the file: a copy of the file alone has every session.
    assert wait_until(lambda: _sessions_in_the_file_alone(store, tmp_path) == 3)
    _flow()
    assert wait_until(lambda: _sessions_in_the_file_alone(store, tmp_path) == 4)


def test_a_deleted_home_is_let_go_while_the_worker_serves_another(
    start_worker: Callable[..., None], home: Path, tmp_path: Path
) -> None:
    start_worker()
    other = tmp_path / "other-home"
    other.mkdir(mode=0o700)
    _flow(MCPCLI_HOME=str(other))  # the worker serves two homes; the one deleted below is not its last
    _flow()
    store = home / "sessions.db"
    assert wait_until(lambda: _holders(store))
    assert wait_until(lambda: _holders(other / "sessions.db"))
    shutil.rmtree(home)
    assert wait_until(lambda: not _holders(store)), "a deleted store is still held open"
    assert _holders(other / "sessions.db"), "the other home's store was let go too"


def test_an_idle_store_and_a_stopped_worker_leave_nothing_open_and_no_log_behind(
    start_worker: Callable[..., None], home: Path
) -> None:
    start_worker(MCPCLI_WORKER_HOLD_LINGER="6")  # long enough to see it held on a loaded machine
    store = home / "sessions.db"
    _flow()
    assert wait_until(lambda: _holders(store), timeout=6), "the store was not held after the command"
    # Six seconds after the last command: closed as a command closes it — the log copied in and removed.
    assert wait_until(lambda: not _holders(store))
    assert wait_until(lambda: not Path(f"{store}-wal").exists())

    _flow()
    assert wait_until(lambda: _holders(store), timeout=6)
    stopped = mcpcli("worker", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert wait_until(lambda: not _holders(store)), "the keeper outlived the worker, holding the store"
    assert not Path(f"{store}-wal").exists()
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone() == (2,)
