"""The worker's rehearsal (issue 36): before it serves, the worker runs a few commands once against the in-process
demo, so that every child inherits what a command builds on first use. It must leave nothing behind and take
nothing of the environment the worker was started in."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from otlp import Receiver
from otlp import serve as serve_otlp
from test_worker import mcpcli, worker_dir  # noqa: F401  # the fixture: a worker directory of each test's own

from mcpcli.worker import preload

pytestmark = pytest.mark.slow


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from serve_otlp()


def test_the_rehearsal_leaves_no_home_no_session_and_sends_no_span_from_the_workers_environment(
    home: Path, tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SERVICE_NAME": "starter", "TMPDIR": str(scratch)}
    started = mcpcli("worker", "start", env=traced)  # the worker's own environment asks for traces
    assert started.returncode == 0, started.stderr
    try:
        time.sleep(1.0)  # a span the rehearsal made would have been sent by now (the exporter flushes at once)
        assert receiver.spans == [] and receiver.bodies == []
        assert list(scratch.iterdir()) == []  # its home is gone
        listed = mcpcli("sessions", "list", "--json")
        assert (listed.returncode, json.loads(listed.stdout)) == (0, []), listed.stderr
        assert not (home / "sessions.db").exists() or "rehearsal" not in (home / "sessions.db").read_bytes().decode(
            "latin-1"
        )
        r = mcpcli("call", "echo", "-a", "text=after", env={"OTEL_SERVICE_NAME": "caller", "TMPDIR": str(scratch)})
        assert (r.returncode, r.stdout) == (0, "after\n"), r.stderr
        r = mcpcli("call", "echo", "-a", "text=traced", env={**traced, "OTEL_SERVICE_NAME": "caller"})
        assert (r.returncode, r.stdout) == (0, "traced\n"), r.stderr
        spans = receiver.wait_for(1, "tools/call")
        assert {span.service for span in receiver.spans} == {"caller"}, spans  # the caller's command alone
    finally:
        mcpcli("worker", "stop")


def test_a_rehearsal_puts_back_the_workers_environment_directory_streams_and_log_handlers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In this process: what the worker had before ``rehearse`` is what it has after, and the commands ran."""
    import logging
    import sys

    import typer.main

    from mcpcli.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCPCLI_HOME", str(tmp_path / "mine"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None  # as in a worker that has made no temporary file yet

    class Earlier(logging.Handler):  # the log handler of a command run before in this process
        closed = False

        def emit(self, record: logging.LogRecord) -> None:
            pass

        def close(self) -> None:
            self.closed = True
            super().close()

    earlier = Earlier()
    earlier.mcpcli = True  # type: ignore[attr-defined]  # as runtime.configure_logging marks its own
    logging.getLogger().addHandler(earlier)

    def state() -> tuple[Any, ...]:
        streams = (sys.stdin, sys.stdout, sys.stderr)
        return tempfile.tempdir, dict(os.environ), sys.argv, streams, list(logging.getLogger().handlers)

    before = state()
    ran: list[list[str]] = []
    command = typer.main.get_command(app)
    real_main = command.main

    def main(*args: Any, **kw: Any) -> Any:
        ran.append(list(kw["args"]))
        return real_main(*args, **kw)

    monkeypatch.setattr(command, "main", main)
    preload.rehearse(command)
    after = state()
    assert after == before
    assert Path.cwd() == tmp_path
    assert ran == [list(words) for words in preload.REHEARSALS]
    assert earlier in logging.getLogger().handlers and not earlier.closed
    logging.getLogger().removeHandler(earlier)
    assert [p.name for p in tmp_path.iterdir()] == []  # neither its home nor the worker's was written
