"""Tasks (2026-07-28, ``io.modelcontextprotocol/tasks``): a tool call that becomes a task is polled to its end, its
input answered by the usual sources and sent once, its id kept in the session — against the real task servers of
``tests/task_servers.py`` over stdio and HTTP, with the SQLite and PostgreSQL stores, in real processes."""

from __future__ import annotations

import itertools
import json
import os
import random
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, HttpServer, free_port, run_inprocess, run_process, wait_until
from task_servers import answers_received
from test_durability import spawn

from mcpcli.settings.config import Paths
from mcpcli.state.store import open_store

pytestmark = pytest.mark.slow

TASK_SERVERS = ROOT / "tests" / "task_servers.py"


def stdio(state: Path, *extra: str) -> str:
    return shlex.join([PY, str(TASK_SERVERS), "--state", str(state), *extra])


@pytest.fixture
def task_http(tmp_path: Path) -> Iterator[Any]:
    """Start the task server over HTTP on 127.0.0.1 with its state in ``state``."""
    servers: list[HttpServer] = []

    def start(state: Path, *extra: str) -> HttpServer:
        port = free_port()
        argv = [PY, str(TASK_SERVERS), "--state", str(state), "--http", f"127.0.0.1:{port}", *extra]
        server = HttpServer(argv, port, tmp_path / f"tasks-{port}.log")
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    """A ``-s`` target for the task server, over each transport, and its state file."""
    state = tmp_path / "server-state.json"
    if request.param == "stdio":
        return stdio(state), state
    server = request.getfixturevalue("task_http")(state)
    return str(server.url), state


def sessions(store_url: str | None = None) -> list[Any]:
    with open_store(store_url, Paths.from_env().store_file) as store:
        return store.list()


def only(store_url: str | None = None) -> Any:
    (session,) = sessions(store_url)
    return session


# --- a task to its end ------------------------------------------------------------------------------------------------


def test_a_task_is_polled_to_its_result_which_prints_like_any_result(target: tuple[str, Path]) -> None:
    server, _state = target
    r = run_inprocess("call", "slow_ok", "-a", "polls=3", "-s", server)
    assert (r.code, r.out) == (0, "slow_ok finished after 3 polls\n"), r.err
    assert "working: step 2 of 3" in r.err and "completed" in r.err
    session = only()
    assert (session.status, session.exit_code, session.round) == ("done", 0, 0)
    assert session.task["status"] == "completed" and session.task["generation"] == "2026-07-28"
    assert [e["status"] for e in session.task["timeline"]] == ["working"] * 4 + ["completed"]


def test_every_tasks_request_over_http_names_its_task_in_the_mcp_name_header(tmp_path: Path, task_http: Any) -> None:
    state = tmp_path / "state.json"
    server = task_http(state)
    r = run_inprocess("call", "ask_once", "-s", server.url, "--answer", "confirm=false")
    assert (r.code, r.out) == (0, "confirm=false\n"), r.err
    seen = json.loads(state.read_text())["headers"]
    assert {h["method"] for h in seen} == {"tasks/get", "tasks/update"}
    assert all(h["mcp-name"] == h["taskId"] and h["mcp-method"] == h["method"] for h in seen), seen


def test_a_task_that_fails_exits_4_and_is_never_a_success(target: tuple[str, Path]) -> None:
    server, _state = target
    r = run_inprocess("call", "slow_fail", "-s", server, "--json")
    assert r.code == 4, r.err
    assert "failed on the server: the backend refused the job" in r.err
    assert r.json()["error"]["exit_code"] == 4
    session = only()
    assert (session.status, session.result) == ("failed", None)


def test_a_task_whose_ttl_ran_out_is_reported_expired(target: tuple[str, Path]) -> None:
    server, _state = target
    r = run_inprocess("call", "expiring", "-s", server)
    assert r.code == 4, r.err
    assert "expired on the server (its ttl was 0.3 s)" in r.err and "Task has expired" in r.err
    session = only()
    assert (session.status, session.task["status"]) == ("expired", "expired")
    marked_failed = run_inprocess("call", "expiring_fails", "-s", server)
    assert marked_failed.code == 4 and "expired on the server" in marked_failed.err, marked_failed.err


def test_timeout_stops_polling_keeps_the_session_and_resume_picks_it_up(target: tuple[str, Path]) -> None:
    server, _state = target
    r = run_inprocess("call", "stuck", "-s", server, "--timeout", "0.3")
    assert r.code == 4 and "did not finish within 0.3 s" in r.err, r.err
    session = only()
    assert (session.status, session.task["status"]) == ("waiting", "working")
    cancelled = run_inprocess("resume", session.id, "--cancel-task")
    assert cancelled.code == 0 and "cancellation sent" in cancelled.err, cancelled.err


# --- detach, resume, cancel -------------------------------------------------------------------------------------------


def test_detach_prints_the_session_id_and_a_resume_from_a_new_process_finishes_the_task(
    target: tuple[str, Path],
) -> None:
    server, _state = target
    r = run_inprocess("call", "slow_ok", "-a", "polls=2", "-s", server, "--detach")
    assert r.code == 0, r.err
    session = only()
    assert r.out == f"{session.id}\n" and f"mcpcli resume {session.id}" in r.err
    assert (session.status, session.task["status"]) == ("waiting", "working")
    done = run_process("resume", session.id[:6])
    assert (done.code, done.out) == (0, "slow_ok finished after 2 polls\n"), done.err
    assert only().status == "done"
    again = run_inprocess("resume", session.id)
    assert (again.code, again.out) == (0, "slow_ok finished after 2 polls\n") and "already finished" in again.err


def test_a_task_is_cancelled_by_its_session_id(target: tuple[str, Path]) -> None:
    server, state = target
    r = run_inprocess("call", "stuck", "-s", server, "--detach", "--json")
    doc = r.json()
    assert doc["status"] == "detached" and doc["task_id"], r.err
    cancelled = run_inprocess("resume", doc["session_id"], "--cancel-task", "--json")
    assert cancelled.code == 0 and cancelled.json()["status"] == "cancelled", cancelled.err
    assert json.loads(state.read_text())["tasks"][doc["task_id"]]["task"]["status"] == "cancelled"
    session = only()
    assert session.status == "failed" and "cancelled at your request" in (session.error or "")
    twice = run_inprocess("resume", doc["session_id"], "--cancel-task")
    assert twice.code == 2 and "already ended" in twice.err
    plain = run_inprocess("call", "ask_first", "-s", server, "--no-input")
    assert plain.code == 3
    not_a_task = run_inprocess("resume", plain.err.split("session ")[1][:12], "--cancel-task")
    assert not_a_task.code == 2 and "is not a task" in not_a_task.err


# --- input while the task runs ----------------------------------------------------------------------------------------


def test_no_input_on_a_task_waiting_for_input_exits_3_with_the_answers_template(target: tuple[str, Path]) -> None:
    server, state = target
    r = run_inprocess("call", "ask_once", "-s", server, "--no-input", "--json")
    assert r.code == 3, r.err
    doc = r.json()
    assert doc["status"] == "input_required" and list(doc["pending"]) == ["confirm-1"]
    assert doc["pending"]["confirm-1"]["method"] == "elicitation/create"
    assert doc["answers_template"] == {"confirm-1.confirm": None} or "confirm-1.confirm" in json.dumps(
        doc["answers_template"]
    )
    session = only()
    assert (session.status, session.task["status"]) == ("waiting", "input_required")
    done = run_process("resume", doc["session_id"], "--answer", "confirm=true")
    assert (done.code, done.out) == (0, "confirm=true\n"), done.err
    (counts,) = answers_received(state).values()
    assert counts == {"confirm-1": 1}


def test_two_questions_asked_one_after_the_other_are_answered_by_presets_in_one_run(
    target: tuple[str, Path],
) -> None:
    server, state = target
    r = run_inprocess("call", "ask_twice", "-s", server, "--answer", "name=orders", "--answer", "region=eu")
    assert (r.code, r.out) == (0, "Provisioned 'orders' in eu.\n"), r.err
    (counts,) = answers_received(state).values()
    assert counts == {"name-1": 1, "region-2": 1}
    session = only()
    assert session.round == 2
    shown = run_inprocess("sessions", "show", session.id)
    assert "input_required — waiting for region-2" in shown.out and 'region = "eu"' in shown.out


def test_input_needed_before_the_task_exists_is_an_ordinary_round(target: tuple[str, Path]) -> None:
    server, _state = target
    r = run_inprocess("call", "ask_first", "-s", server, "--answer", "go=true")
    assert (r.code, r.out) == (0, "went: true\n"), r.err
    session = only()
    assert session.round == 1 and session.task["status"] == "completed"


def test_sessions_list_shows_the_task_status(target: tuple[str, Path]) -> None:
    server, _state = target
    assert run_inprocess("call", "ask_once", "-s", server, "--no-input").code == 3
    listed = run_inprocess("sessions", "list", "--json").json()
    assert listed[0]["task"]["status"] == "input_required" and listed[0]["status"] == "waiting"


def test_a_task_record_another_machine_damaged_is_one_line_not_an_internal_error(target: tuple[str, Path]) -> None:
    """A shared store's rows are written by other machines: a session's task JSON of the wrong shape is refused
    before anything reads it."""
    import sqlite3

    server, _state = target
    assert run_inprocess("call", "ask_once", "-s", server, "--no-input").code == 3
    session = only()
    with sqlite3.connect(Paths.from_env().state_dir / "sessions.db") as db:
        db.execute("UPDATE sessions SET task = ? WHERE id = ?", ('{"id": "t", "status": ["x"]}', session.id))
    r = run_inprocess("resume", session.id, "--answer", "go=true")
    assert r.code == 4, r.err
    assert "task record is damaged (status is not text)" in r.err and "Internal error" not in r.err


# --- durable: kill -9 anywhere, resume from a new process, nothing lost or sent twice ---------------------------------


@pytest.mark.cold_only
@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
# after_send:1 is the tools/call leg that created the task (before its id is saved: nothing to resume, the one
# window no client can close); :2 and :3 are the two tasks/update legs, acknowledged but not yet remembered as such.
@pytest.mark.parametrize("point", ["after_commit:1", "after_send:2", "after_commit:2", "after_send:3"])
def test_a_client_killed_around_a_task_answer_resumes_without_losing_or_repeating_it(
    engine: str, point: str, tmp_path: Path, task_http: Any, request: pytest.FixtureRequest
) -> None:
    store_url = request.getfixturevalue("pg_url") if engine == "postgres" else None
    env = {"MCPCLI_STORE": store_url} if store_url else {}
    state = tmp_path / "state.json"
    server = task_http(state)
    argv = ("-s", server.url, "--answer", "name=orders", "--answer", "region=eu")
    killed = run_process("call", "ask_twice", *argv, env={**env, "MCPCLI_FAULT": point})
    assert killed.code == -signal.SIGKILL, killed
    (session,) = sessions(store_url)
    assert session.task is not None
    done = run_process("resume", session.id, "--answer", "name=orders", "--answer", "region=eu", env=env)
    assert (done.code, done.out) == (0, "Provisioned 'orders' in eu.\n"), done.err
    (counts,) = answers_received(state).values()
    assert counts == {"name-1": 1, "region-2": 1}, (point, counts)


@pytest.mark.cold_only
@pytest.mark.parametrize("transport", ["stdio", "http", "stdio-2025"])
def test_killed_at_random_moments_every_task_finishes_and_no_answer_is_sent_twice(
    transport: str, tmp_path: Path, task_http: Any
) -> None:
    rng = random.Random(15)
    state = tmp_path / "state.json"
    slow = ("--poll-ms", "150")  # a task of ~1 s: a kill at a random moment of it
    if transport == "http":
        server = task_http(state, *slow).url
    else:  # 2025-11-25: the questions come over the back-channel while tasks/result waits
        server = stdio(state, *slow, *(("--gen", "2025") if transport == "stdio-2025" else ()))
    answers = ("--answer", "name=orders", "--answer", "region=eu")
    resumed = 0
    for n in range(30):  # ten runs at least; more until three were killed inside their task (a loaded machine's
        if n >= 10 and resumed >= 3:  # timing moves where a kill lands, and a run killed outside proves little)
            break
        before = len(answers_received(state))
        proc = spawn("call", "ask_twice", "-s", server, *answers)
        deadline = time.monotonic() + 30
        while len(answers_received(state)) == before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # until the server created the task
        if transport == "stdio-2025" and n % 2:
            # A 2025 task answers its questions back to back inside tasks/result (no poll interval between them):
            # every other run waits for the first answer to arrive, then kills in the short stretch around it.
            while not any(answers_received(state).values()) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.05))
        else:  # anywhere in its life: polling, answering, acknowledged
            time.sleep(rng.uniform(0, 0.35 if transport == "stdio-2025" else 1.0))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        for record in sessions():
            if record.status != "done":
                resumed += 1
                done = run_process("resume", record.id, *answers, "--steal")
                assert (done.code, done.out) == (0, "Provisioned 'orders' in eu.\n"), (n, done.err)
    assert resumed >= 3, resumed  # the loop killed runs inside their task, not only before or after it
    received = answers_received(state)
    finished = sessions()
    assert all(record.status == "done" for record in finished)
    for task_id, counts in received.items():
        assert all(count == 1 for count in counts.values()), (task_id, counts)  # never an answer sent twice
    # Every task a session knows got both answers, once; a run killed before the task existed left none behind.
    assert all(received[record.task["id"]] == {"name-1": 1, "region-2": 1} for record in finished)
    # A task no session knows was created by a run killed before it saved the task id (the window between the
    # server's CreateTaskResult and the client's write, which no client can close): it was never answered.
    known = {record.task["id"] for record in finished}
    assert all(counts == {} for task_id, counts in received.items() if task_id not in known)


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_two_racing_resumes_of_a_task_session_have_exactly_one_driver(
    engine: str, tmp_path: Path, task_http: Any, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_url = request.getfixturevalue("pg_url") if engine == "postgres" else None
    env = {"MCPCLI_STORE": store_url} if store_url else {}
    if store_url:
        monkeypatch.setenv("MCPCLI_STORE", store_url)
    state = tmp_path / "state.json"
    server = task_http(state)
    for _ in range(4):
        r = run_inprocess("call", "ask_once", "-s", server.url, "--no-input", "--json")
        assert r.code == 3, r.err
        session_id = r.json()["session_id"]
        racers = [spawn("resume", session_id, "--answer", "confirm=true", env=env) for _ in range(2)]
        results = [(p.wait(timeout=60), *(p.communicate())) for p in racers]
        winners = [res for res in results if res[0] == 0 and res[1] == "confirm=true\n" and "result" not in res[2]]
        assert len(winners) == 1, results
        (loser,) = [res for res in results if res is not winners[0]]
        assert loser[0] == 6 or (loser[0] == 0 and "finished" in loser[2]), results
    for counts in answers_received(state).values():
        assert counts == {"confirm-1": 1}


def _gets(state: Path) -> int:
    """How many ``tasks/get`` the server has answered (it rewrites the file under its lock)."""
    import fcntl

    with state.open() as f:
        fcntl.flock(f, fcntl.LOCK_SH)
        text = f.read()
    return int(json.loads(text).get("gets", 0)) if text.strip() else 0


@pytest.mark.cold_only
@pytest.mark.parametrize("choice", ["c", "d", ""])
def test_ctrl_c_at_a_terminal_asks_whether_to_detach_or_cancel_the_task(
    choice: str, tmp_path: Path, task_http: Any
) -> None:
    state = tmp_path / "state.json"
    server = task_http(state)
    env = {**os.environ, "MCPCLI_ASSUME_TTY": "1"}
    proc = subprocess.Popen(
        [PY, "-m", "mcpcli", "call", "stuck", "-s", server.url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert wait_until(lambda: answers_received(state), step=0.02)
    polled = _gets(state)
    assert wait_until(lambda: _gets(state) > polled, step=0.02)  # polling the task again, past the answer
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(choice + "\n", timeout=60)
    assert out == ""
    assert "Detach (leave it running) or cancel it?" in err, err
    (task_id,) = answers_received(state)
    on_server = json.loads(state.read_text())["tasks"][task_id]["task"]["status"]
    session = only()
    if choice == "c":
        assert proc.returncode == 0 and "cancellation sent" in err, err
        assert on_server == "cancelled" and session.status == "failed"
    else:
        assert proc.returncode == 130 and f"mcpcli resume {session.id}" in err, err
        assert on_server == "working" and session.status == "waiting"


# --- 2025-11-25: task-augmented calls ---------------------------------------------------------------------------------


def legacy(state: Path, *extra: str) -> str:
    return stdio(state, "--gen", "2025", *extra)


def test_a_2025_tool_that_requires_a_task_is_called_as_one_and_polled_to_its_result(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    r = run_inprocess("call", "ask_twice", "-s", legacy(state), "--answer", "name=orders", "--answer", "region=eu")
    assert (r.code, r.out) == (0, "Provisioned 'orders' in eu.\n"), r.err
    (counts,) = answers_received(state).values()
    assert counts == {"name-1": 1, "region-2": 1}
    session = only()
    assert (session.status, session.protocol_version, session.round) == ("done", "2025-11-25", 2)
    assert session.task["generation"] == "2025-11-25" and session.task["status"] == "completed"


def test_a_2025_tool_whose_task_support_is_optional_runs_as_a_task_only_when_asked(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    plain = run_inprocess("call", "slow_ok", "-s", legacy(state))
    assert (plain.code, plain.out) == (0, "ran without a task\n"), plain.err
    asked = run_inprocess("call", "slow_ok", "-s", legacy(state), "--task")
    assert (asked.code, asked.out) == (0, "slow_ok finished after 3 polls\n"), asked.err


def test_a_2025_task_that_fails_or_expires_exits_4(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    failed = run_inprocess("call", "slow_fail", "-s", legacy(state))
    assert failed.code == 4 and "the backend refused the job" in failed.err, failed.err
    expired = run_inprocess("call", "expiring", "-s", legacy(state))
    assert expired.code == 4 and "expired on the server" in expired.err, expired.err
    assert sorted(s.status for s in sessions()) == ["expired", "failed"]


def test_a_detached_2025_task_is_resumed_or_cancelled_by_its_session_id(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    r = run_inprocess("call", "ask_once", "-s", legacy(state), "--detach")
    assert r.code == 0, r.err
    session_id = r.out.strip()
    done = run_process("resume", session_id, "--answer", "confirm=true")
    assert (done.code, done.out) == (0, "confirm=true\n"), done.err
    stuck = run_inprocess("call", "stuck", "-s", legacy(state), "--detach", "--json").json()
    cancelled = run_inprocess("resume", stuck["session_id"], "--cancel-task")
    assert cancelled.code == 0, cancelled.err
    assert json.loads(state.read_text())["tasks"][stuck["task_id"]]["task"]["status"] == "cancelled"


def test_a_task_moved_to_another_machine_in_a_bundle_is_finished_there(
    tmp_path: Path, task_http: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state.json"
    server = task_http(state)
    r = run_inprocess("call", "ask_once", "-s", server.url, "--no-input", "--json")
    assert r.code == 3, r.err
    session_id = r.json()["session_id"]
    bundle = tmp_path / "task.bundle"
    assert run_inprocess("sessions", "export", session_id, "-o", str(bundle)).code == 0
    other = tmp_path / "other-machine"
    other.mkdir(mode=0o700)
    monkeypatch.setenv("MCPCLI_HOME", str(other / "mcpcli"))
    imported = run_inprocess("sessions", "import", str(bundle))
    assert imported.code == 0, imported.err
    assert only().task["status"] == "input_required"
    done = run_inprocess("resume", session_id, "--answer", "confirm=true")
    assert (done.code, done.out) == (0, "confirm=true\n"), done.err
    assert answers_received(state) == {only().task["id"]: {"confirm-1": 1}}


# --- a hostile server's poll interval and task id ---------------------------------------------------------------------


def _polled_at(state: Path) -> list[float]:
    times: list[float] = json.loads(state.read_text()).get("got_at", [])
    return times


def _busiest_second(times: list[float]) -> int:
    """The most ``tasks/get`` requests the server received within any one second."""
    return max((sum(1 for t in times if start <= t < start + 1) for start in times), default=0)


@pytest.mark.parametrize(("poll_ms", "most_a_second"), [(0, 10), (-5, 2)])
def test_a_task_polled_at_an_interval_of_zero_or_less_is_polled_at_most_ten_times_a_second(
    poll_ms: int, most_a_second: int, tmp_path: Path
) -> None:
    """pollIntervalMs 0 once made 4,256 tasks/get in 3 s: the interval is held at 100 ms or more (a negative one is
    no suggestion: 1 s), and an unchanged task is polled less and less often."""
    state = tmp_path / "server-state.json"
    r = run_inprocess("call", "stuck", "-s", stdio(state, f"--poll-ms={poll_ms}"), "--timeout", "4")
    assert r.code == 4 and "did not finish within 4 s" in r.err, r.err
    times = _polled_at(state)
    assert 2 <= len(times) <= 4 / 0.1, times  # one a poll; the floor alone would allow 40 in 4 s
    assert _busiest_second(times) <= most_a_second, times
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps[-1] > gaps[0], gaps  # backed off: the task never changes after its first poll


def test_a_task_whose_interval_is_ten_to_the_twelve_ms_is_polled_again_within_the_five_second_cap(
    tmp_path: Path,
) -> None:
    state = tmp_path / "server-state.json"
    started = time.monotonic()
    r = run_inprocess("call", "slow_ok", "-a", "polls=0", "-s", stdio(state, f"--poll-ms={10**12}"), "--timeout", "60")
    waited = time.monotonic() - started
    assert (r.code, r.out) == (0, "slow_ok finished after 0 polls\n"), r.err
    assert waited < 5 + 15, waited  # the 5 s cap, and a loaded machine's start-up
    assert len(_polled_at(state)) == 1


def test_a_ten_kilobyte_task_id_is_cut_in_status_lines_and_kept_whole_in_the_session(tmp_path: Path) -> None:
    state = tmp_path / "server-state.json"
    r = run_inprocess("call", "slow_ok", "-a", "polls=2", "-s", stdio(state, "--id-size=10240"))
    assert r.code == 0, r.err
    (task_id,) = json.loads(state.read_text())["tasks"]
    assert len(task_id) == 10240
    status = [line for line in r.err.splitlines() if line.startswith("task ")]
    assert len(status) >= 3 and all(len(line) < 200 for line in status), status
    assert "characters)" in status[0] and task_id not in r.err
    assert only().task["id"] == task_id


# --- a task the server no longer has ---------------------------------------------------------------------------------


def test_a_task_lost_with_its_stdio_server_is_started_over_on_resume_replaying_the_answers(tmp_path: Path) -> None:
    """No --state: the server's tasks live in its process, which ends with each command (as a real stdio server's)."""
    server = shlex.join([PY, str(TASK_SERVERS)])
    asked = run_inprocess("call", "ask_twice", "-s", server, "--answer", "name=Ada", "--no-input")
    assert asked.code == 3, asked.err
    session = only()
    r = run_inprocess("resume", session.id, "--answer", "region=eu")
    assert (r.code, r.out) == (0, "Provisioned 'Ada' in eu.\n"), r.err
    assert "expired" not in r.err
    said = [line for line in r.err.splitlines() if "not found on the server" in line]
    assert len(said) == 1 and "a stdio server's tasks end with its process" in said[0], r.err
    assert "Starting the call over and replaying your answers" in said[0]
    assert only().task["id"] != session.task["id"] and only().status == "done"


def test_a_task_lost_with_a_killed_server_replays_an_acknowledged_answer_once_to_the_identical_question(
    tmp_path: Path,
) -> None:
    """The server is killed between rounds and comes back without its tasks (a fresh state): the resume starts the
    call over; the new task's identical question gets the answer the lost task had acknowledged, sent once."""
    port = free_port()
    server = HttpServer([PY, str(TASK_SERVERS), "--http", f"127.0.0.1:{port}"], port, tmp_path / "tasks.log")
    first, second = tmp_path / "before.json", tmp_path / "after.json"
    server.start(["--state", str(first)])
    try:
        asked = run_inprocess("call", "ask_twice", "-s", server.url, "--answer", "name=Ada", "--no-input")
        assert asked.code == 3, asked.err
        (lost,) = answers_received(first).values()
        assert lost == {"name-1": 1}  # acknowledged by the task about to be lost
        server.proc.kill()  # type: ignore[union-attr]
        server.proc.wait()  # type: ignore[union-attr]
        server.start(["--state", str(second)])
        session = only()
        r = run_inprocess("resume", session.id, "--answer", "region=eu")
        assert (r.code, r.out) == (0, "Provisioned 'Ada' in eu.\n"), r.err
        assert "not found on the server" in r.err and "expired" not in r.err
        (now,) = answers_received(second).values()
        assert now == {"name-1": 1, "region-2": 1}
    finally:
        server.stop()


def test_a_task_lost_during_a_live_call_says_not_found_and_a_resume_starts_it_over(tmp_path: Path) -> None:
    state = tmp_path / "server-state.json"
    proc = spawn("call", "stuck", "-s", stdio(state, "--poll-ms=100"))
    deadline = time.monotonic() + 60
    while not (state.exists() and json.loads(state.read_text() or "{}").get("gets")):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    state.write_text("")  # the server forgets its tasks (as one restarted would)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, err
    assert "Task not found:" in err and "no longer has it" in err and "expired" not in err, err
    assert "mcpcli resume" in err
    assert only().status == "waiting"


def test_a_lost_2025_task_is_started_over_and_its_answered_question_replayed_under_the_new_task_id() -> None:
    """2025-11-25: the questions come over the back-channel tied to their task (``_meta`` related-task); the new
    task's identical question, under its new id, takes the answer given to the lost one."""
    server = shlex.join([PY, str(TASK_SERVERS), "--gen", "2025"])
    asked = run_inprocess("call", "ask_twice", "-s", server, "--answer", "name=Ada", "--no-input")
    assert asked.code == 3, asked.err
    session = only()
    r = run_inprocess("resume", session.id, "--answer", "region=eu")  # name is not given again: replayed
    assert (r.code, r.out) == (0, "Provisioned 'Ada' in eu.\n"), r.err
    assert "not found on the server" in r.err and "expired" not in r.err
