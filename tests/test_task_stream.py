"""A running task's status from the server's listen stream (the tasks extension's ``taskIds`` filter and
``notifications/tasks``), where a 2026 server honours it: polls drop to a safety net; where it does not, or the
stream breaks or goes quiet, polling goes on and the task still completes — against ``tests/task_push.py`` (an SDK
``MCPServer`` whose tasks run by the clock), over stdio and HTTP, in real processes."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, HttpServer, free_port, run_inprocess
from task_servers import answers_received

from mcpcli.settings.config import Paths
from mcpcli.state.store import open_store

pytestmark = pytest.mark.slow

PUSH = ROOT / "tests" / "task_push.py"
STEPS = ["accepted", "step 1 of 4", "step 2 of 4", "step 3 of 4", "step 4 of 4", "done"]


@pytest.fixture
def push_server(tmp_path: Path) -> Iterator[Any]:
    """``push_server(transport, *options)``: a ``-s`` target for the push server and its state file."""
    servers: list[HttpServer] = []

    def start(transport: str, *extra: str) -> tuple[str, Path]:
        state = tmp_path / "server-state.json"
        argv = [PY, str(PUSH), "--state", str(state), *extra]
        if transport == "stdio":
            return shlex.join(argv), state
        port = free_port()
        server = HttpServer([*argv, "--http", f"127.0.0.1:{port}"], port, tmp_path / f"push-{port}.log")
        servers.append(server)
        return server.start().url, state

    yield start
    for server in servers:
        server.stop()


def served(state: Path) -> dict[str, Any]:
    """What the server counted: ``gets`` (tasks/get answered), ``pushed`` (notifications sent), ``listens``."""
    data: dict[str, Any] = json.loads(state.read_text())
    return data


def task() -> dict[str, Any]:
    with open_store(None, Paths.from_env().store_file) as store:
        (session,) = store.list()
    assert session.task is not None
    return session.task


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_running_tasks_status_comes_from_the_stream_and_polls_drop(push_server: Any, transport: str) -> None:
    server, state = push_server(transport, "--poll-ms", "100", "--every", "0.3")
    r = run_inprocess("call", "slow_ok", "-a", "polls=4", "-s", server)
    assert (r.code, r.out) == (0, "slow_ok finished after 4 polls\n"), r.err
    seen = served(state)
    record = task()
    assert seen["listens"] == [{"asked": [record["id"]], "honoured": [record["id"]]}]
    # Every step is seen, each lasting 0.3 s, with two polls in all: the first, and one once the stream was honoured
    # (a change before it began would have no notification); the rest, the result included, came from the stream.
    assert [e.get("message") for e in record["timeline"]] == STEPS
    assert seen["gets"] == record["polls"] <= 3, (seen, record)
    assert record["pushed"] >= 5 and seen["pushed"] >= record["pushed"]
    assert "stream" not in r.err  # nothing to tell: the task went as it would have


def test_a_server_that_does_not_honour_task_status_is_polled_as_before(push_server: Any) -> None:
    server, state = push_server("stdio", "--poll-ms", "100", "--every", "0.3", "--honour", "no")
    r = run_inprocess("call", "slow_ok", "-a", "polls=4", "-s", server)
    assert (r.code, r.out) == (0, "slow_ok finished after 4 polls\n"), r.err
    seen, record = served(state), task()
    assert seen["listens"] == [{"asked": [record["id"]], "honoured": []}]  # asked once, and let go
    assert record["pushed"] == 0 and "pushed" not in seen
    assert seen["gets"] >= 6, seen  # the usual pace: 100 ms, growing by half while nothing changes
    assert [e.get("message") for e in record["timeline"]] == STEPS


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_stream_that_breaks_mid_task_falls_back_to_polling_and_the_task_completes(
    push_server: Any, transport: str
) -> None:
    server, state = push_server(transport, "--poll-ms", "100", "--every", "0.3", "--break-after", "2")
    r = run_inprocess("call", "slow_ok", "-a", "polls=4", "-s", server)
    assert (r.code, r.out) == (0, "slow_ok finished after 4 polls\n"), r.err
    assert "status stream for task" in r.err and "ended (the stream broke" in r.err and "polling again" in r.err
    seen, record = served(state), task()
    assert 1 <= record["pushed"] <= seen["pushed"] == 2  # the first may be answered by the poll taken then
    assert seen["gets"] >= 4, seen  # after the break: polled at the usual pace to the end
    assert record["timeline"][-1]["status"] == "completed"


def test_a_stream_gone_quiet_is_caught_by_the_slow_safety_poll(push_server: Any) -> None:
    server, state = push_server("stdio", "--poll-ms", "100", "--every", "0.3", "--silent-after", "2")
    started = time.monotonic()
    r = run_inprocess("call", "slow_ok", "-a", "polls=4", "-s", server)
    assert (r.code, r.out) == (0, "slow_ok finished after 4 polls\n"), r.err
    seen, record = served(state), task()
    assert 1 <= record["pushed"] <= 2 and record["timeline"][-1]["status"] == "completed"
    # The task ends 1.5 s in; a poll every second (ten times the 100 ms interval) sees it within about one more.
    assert 2 <= seen["gets"] <= 6, seen
    assert time.monotonic() - started < 30


def test_a_question_asked_through_the_stream_is_answered_once_and_the_result_streamed(push_server: Any) -> None:
    server, state = push_server("stdio", "--poll-ms", "100", "--every", "0.3")
    r = run_inprocess("call", "ask_once", "-s", server, "--answer", "confirm=true")
    assert (r.code, r.out) == (0, "confirm=true\n"), r.err
    record = task()
    assert record["pushed"] >= 2 and record["delivered"] == ["confirm-1"]
    assert answers_received(state)[record["id"]] == {"confirm-1": 1}
    assert served(state)["gets"] <= 3


def test_a_quiet_task_stream_over_http_is_not_cut_by_the_idle_bound(
    push_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listen response is quiet while nothing changes: the idle bound (1 s here) is for responses that should
    end, so the stream stays and delivers each step, 1.5 s apart."""
    monkeypatch.setenv("MCPCLI_IDLE_TIMEOUT", "1")
    server, _state = push_server("http", "--poll-ms", "500", "--every", "1.5")
    r = run_inprocess("call", "slow_ok", "-a", "polls=2", "-s", server)
    assert (r.code, r.out) == (0, "slow_ok finished after 2 polls\n"), r.err
    assert "stream" not in r.err, r.err
    record = task()
    assert record["pushed"] >= 3 and record["polls"] <= 3, record


def test_a_flood_of_status_updates_is_folded_bounded_and_shown_sanitized(push_server: Any) -> None:
    server, _state = push_server("stdio", "--poll-ms", "100", "--every", "0.3", "--flood", "20000")
    started = time.monotonic()
    r = run_inprocess("call", "slow_ok", "-a", "polls=2", "-s", server)
    elapsed = time.monotonic() - started
    assert (r.code, r.out) == (0, "slow_ok finished after 2 polls\n"), r.err
    record = task()
    # Taken at most ten times a second, whatever the server sends; the rest folded into the latest.
    assert 1 <= record["pushed"] <= elapsed * 10 + 5, (record["pushed"], elapsed)
    assert "\x1b" not in r.err and "flood" in r.err
    assert len(record["timeline"]) <= 50 and record["timeline"][-1]["status"] == "completed"
