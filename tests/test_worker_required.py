"""``MCPCLI_WORKER_REQUIRED=1``: a server command the worker cannot take is an error, never run in-process — what
makes the warm pass (.ci/run, ``MCPCLI_TEST_WARM=1``) fail when the worker is broken instead of passing cold."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import conftest
import pytest
from conftest import run_inprocess, stdio_server
from test_worker import mcpcli, served, warm, worker_dir  # noqa: F401  — the fixtures

from mcpcli.userdirs import socket_path

pytestmark = pytest.mark.slow


@pytest.fixture
def required(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker on and required; none running yet (this test's own worker directory)."""
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.setenv("MCPCLI_WORKER_REQUIRED", "1")
    home.mkdir(mode=0o700, parents=True, exist_ok=True)


def test_with_the_worker_required_and_none_running_a_server_command_fails_and_runs_nothing(
    required: None, tmp_path: Path
) -> None:
    record = tmp_path / "legs.jsonl"
    r = mcpcli("call", "two_rounds", "-a", "item=x", "-s", stdio_server("recorder", "--record", str(record)))
    assert (r.returncode, r.stdout) == (4, "")
    (line,) = r.stderr.splitlines()
    assert "no background worker listens at" in line and "MCPCLI_WORKER_REQUIRED is set" in line
    assert "mcpcli worker status" in line and "Traceback" not in r.stderr
    assert not record.exists()  # the server was never started: nothing ran in-process
    r = mcpcli("--json", "tools")
    assert r.returncode == 4
    error = json.loads(r.stdout)["error"]
    assert error["exit_code"] == 4 and "MCPCLI_WORKER_REQUIRED" in error["message"] and error["hint"]


def test_the_worker_required_is_the_worker_on_even_under_ci_but_not_against_an_explicit_no(
    required: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPCLI_WORKER")
    r = mcpcli("call", "echo", "-a", "text=ci", env={"CI": "true"})  # the worker is off under CI by default
    assert (r.returncode, r.stdout) == (4, "") and "MCPCLI_WORKER_REQUIRED" in r.stderr
    assert mcpcli("call", "echo", "-a", "text=no", env={"MCPCLI_WORKER": "0"}).stdout == "no\n"


def test_with_the_worker_required_a_worker_that_does_not_answer_fails_the_command(required: None) -> None:
    path = socket_path()
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    mute = socket.socket(socket.AF_UNIX)
    mute.bind(str(path))
    mute.listen(8)  # accepts (the kernel does) but never answers
    try:
        r = mcpcli("call", "echo", "-a", "text=not-here")
    finally:
        mute.close()
    assert (r.returncode, r.stdout) == (4, "")
    (line,) = r.stderr.splitlines()
    assert "did not answer" in line and "MCPCLI_WORKER_REQUIRED" in line and "running without it" not in line


def test_with_the_worker_required_commands_that_never_use_the_worker_still_run(required: None) -> None:
    for args in (("sessions", "list"), ("--help",), ("call", "--help"), ("--version",), ("worker", "status")):
        r = mcpcli(*args)
        assert r.returncode == 0, (args, r.stderr)
    assert mcpcli("--no-worker", "call", "echo", "-a", "text=asked").stdout == "asked\n"  # asked for: not a fallback
    assert mcpcli("call", "echo", "-a", "text=off", env={"MCPCLI_WORKER": "0"}).stdout == "off\n"


def test_the_warm_pass_runs_each_command_through_the_front_end_and_the_worker(
    warm: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(conftest, "WARM", True)
    monkeypatch.setenv("MCPCLI_WORKER_REQUIRED", "1")
    before = served(warm)
    r = run_inprocess("call", "echo", "-a", "text=through")
    assert (r.code, r.out) == (0, "through\n")
    assert served(warm) == before + 1  # the worker ran it, not this process
    assert run_inprocess("sessions", "list").code == 0  # not a server command: the front end runs it
    assert served(warm) == before + 1
    assert mcpcli("worker", "stop").returncode == 0
    assert conftest.wait_until(lambda: not warm.exists())
    r = run_inprocess("call", "echo", "-a", "text=nowhere")
    assert (r.code, r.out) == (4, "") and "MCPCLI_WORKER_REQUIRED" in r.err  # a broken worker fails the warm pass
