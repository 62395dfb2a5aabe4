"""The worker's spare child (issue 36): a command is taken by a child forked before it came, which runs that one
command and nothing else, holds nothing of the worker's or of another caller's, and is replaced when it goes."""

from __future__ import annotations

import os
import signal
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from conftest import gone, stdio_server, wait_until
from test_worker import mcpcli, worker_dir  # noqa: F401  # the fixture: a worker directory of each test's own
from test_worker import warm as _warm  # noqa: F401  # the fixture, used by every test here

from mcpcli.framing import receive, send
from mcpcli.userdirs import socket_path

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("_warm")]


def status(path: Path) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(path))
        send(sock, {"op": "status"})
        return receive(sock)[0]


def spare_of(path: Path) -> int:
    assert wait_until(lambda: status(path).get("spare"), 30)
    return int(status(path)["spare"])


def test_a_warm_command_is_taken_by_the_spare_forked_before_it_which_runs_that_command_alone() -> None:
    warm = socket_path()
    first = spare_of(warm)
    worker = status(warm)["pid"]
    assert Path(f"/proc/{first}/stat").read_text().rsplit(")", 1)[1].split()[2] == str(worker)  # the worker's child
    served = status(warm)["served"]
    r = mcpcli("call", "echo", "-a", "text=one")
    assert (r.returncode, r.stdout) == (0, "one\n"), r.stderr
    assert status(warm)["served"] == served + 1
    assert wait_until(lambda: gone(first))  # it ran this command, and exits with it
    second = spare_of(warm)
    assert second != first  # the next command has a process of its own
    r = mcpcli("call", "echo", "-a", "text=two")
    assert (r.returncode, r.stdout) == (0, "two\n"), r.stderr
    assert wait_until(lambda: gone(second))
    assert status(warm)["running"] == 0 or wait_until(lambda: status(warm)["running"] == 0)  # a spare is not busy


def test_a_spare_holds_no_connection_of_the_worker_or_of_another_caller() -> None:
    warm = socket_path()
    with socket.socket(socket.AF_UNIX) as silent:  # a front end the worker has accepted but not heard yet
        silent.connect(str(warm))
        assert wait_until(lambda: status(warm)["ok"])
        r = mcpcli("call", "echo", "-a", "text=x")  # its spare is forked after the silent one was accepted
        assert r.returncode == 0, r.stderr
        pid = spare_of(warm)
        fds = {int(fd.name): str(fd.readlink()) for fd in Path(f"/proc/{pid}/fd").iterdir()}
    sockets = [fd for fd, target in fds.items() if fd > 2 and target.startswith("socket:")]
    assert len(sockets) == 1, fds  # its pair with the worker, nothing else: no listener, no caller's connection
    assert not [fd for fd, target in fds.items() if fd > 2 and not target.startswith("socket:")], fds


def test_a_killed_spare_is_replaced_and_commands_still_run() -> None:
    warm = socket_path()
    os.kill(spare_of(warm), signal.SIGKILL)
    for n in range(3):
        r = mcpcli("call", "echo", "-a", f"text={n}")
        assert (r.returncode, r.stdout) == (0, f"{n}\n"), r.stderr
    assert spare_of(warm)


def test_the_pages_a_command_wrote_are_kept_private_and_go_with_the_worker() -> None:
    warm = socket_path()
    for n in range(2):
        assert mcpcli("call", "echo", "-a", f"text={n}").returncode == 0
    pages = warm.with_suffix(".pages")
    assert wait_until(pages.exists)
    assert stat.S_IMODE(pages.stat().st_mode) == 0o600
    assert stat.S_IMODE(pages.parent.stat().st_mode) == 0o700
    assert mcpcli("worker", "stop").returncode == 0
    assert wait_until(lambda: not pages.exists())


def test_a_warm_command_creates_files_with_its_callers_umask_not_the_workers(tmp_path: Path) -> None:
    """The worker was started under one umask; each command runs under its caller's (a stdio server it starts
    creates its files with it), as it would cold."""
    record = tmp_path / "legs.jsonl"
    server = stdio_server("recorder", "--record", str(record))
    r = mcpcli("call", "two_rounds", "-a", "item=u", "-s", server, preexec_fn=lambda: os.umask(0o077))
    assert r.returncode == 3, r.stderr  # asked a question: a session, and the record written
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
