"""Sessions across processes and crashes: one driver at a time, secrets at rest, and kills at every fault point."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, stdio_server
from test_flows import ONBOARD_ANSWERS, only_session, store

from mcpcli.settings.config import Paths


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "mcpcli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def legs(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


# --- one driver per session ------------------------------------------------------------------------------------------


def test_two_racing_resumes_send_the_round_exactly_once(process: Any, http_server: Any, tmp_path: Path) -> None:
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record), "--slow", "1.5")
    assert process("call", "two_rounds", "-a", "item=x", "-s", server.url).code == 3
    session = only_session()
    racers = [spawn("resume", session.id, "--answer", "sure=true") for _ in range(2)]
    results = [
        (p.wait(timeout=60), p.stdout.read() if p.stdout else "", p.stderr.read() if p.stderr else "") for p in racers
    ]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 6], results
    loser = next(err for code, _, err in results if code == 6)
    assert "is being driven by" in loser and "--steal" in loser
    assert len(legs(record)) == 2  # the first call and exactly one retry
    assert store().get(session.id).status == "done"


def wait_for_legs(record: Path, n: int) -> None:
    deadline = time.monotonic() + 20
    while len(legs(record)) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(legs(record)) >= n


@pytest.mark.cold_only
def test_a_live_driver_is_refused_and_a_steal_makes_its_late_commit_fail(
    process: Any, http_server: Any, tmp_path: Path
) -> None:
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record), "--slow", "4")
    assert process("call", "two_rounds", "-a", "item=x", "-s", server.url).code == 3
    session = only_session()
    holder = spawn("resume", session.id, "--answer", "sure=true")
    wait_for_legs(record, 2)  # the retry is in flight: the lease is held and heart-beaten
    busy = process("resume", session.id, "--answer", "sure=true")
    assert busy.code == 6
    assert f"pid {holder.pid}" in busy.err and "--steal" in busy.err
    stolen = process("resume", session.id, "--steal")
    assert stolen.code == 0, stolen.err
    assert stolen.out == "recorded x\n"
    assert "sending it again with the same answers" in stolen.err
    assert holder.wait(timeout=30) == 6  # its result came back after the steal: it may not commit or report it
    assert holder.stdout is not None and holder.stdout.read() == ""
    assert store().get(session.id).status == "done"


@pytest.mark.cold_only
def test_a_driver_killed_on_this_host_is_taken_over_without_steal(
    process: Any, http_server: Any, tmp_path: Path
) -> None:
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record), "--slow", "30")
    assert process("call", "two_rounds", "-a", "item=x", "-s", server.url).code == 3
    holder = spawn("resume", only_session().id, "--answer", "sure=true")
    wait_for_legs(record, 2)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    server.stop()
    server.argv[server.argv.index("--slow") + 1] = "0"
    server.start()
    r = process("resume", only_session().id)
    assert r.code == 0, r.err
    assert f"pid {holder.pid}) is gone" in r.err


@pytest.mark.cold_only
def test_an_expired_lease_is_taken_without_steal(process: Any, http_server: Any, tmp_path: Path) -> None:
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record), "--slow", "30")
    assert process("call", "two_rounds", "-a", "item=x", "-s", server.url).code == 3
    holder = spawn("resume", only_session().id, "--answer", "sure=true", env={"MCPCLI_LEASE_TTL": "0.5"})
    wait_for_legs(record, 2)
    holder.send_signal(signal.SIGSTOP)  # alive, but no longer heart-beating
    try:
        time.sleep(1.0)
        server.stop()
        server.argv[server.argv.index("--slow") + 1] = "0"
        server.start()
        r = process("resume", only_session().id)
        assert r.code == 0, r.err
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()


# --- secrets at rest -------------------------------------------------------------------------------------------------


def test_a_secret_answer_is_stored_sealed_and_a_resumed_flow_sends_the_original(process: Any) -> None:
    target = stdio_server("vault")
    first = process(
        "call", "unlock", "-a", "door=vault", "-s", target, "-A", "user=ann", "-A", "password=hunter2secret"
    )
    assert first.code == 3, first.err
    paths = Paths.from_env()
    for part in paths.state_dir.glob("sessions.db*"):
        assert b"hunter2secret" not in part.read_bytes()
    stored = store().rounds(only_session().id)[0].answers
    assert stored is not None and "$sealed" in stored["creds"]["content"]["password"]
    # A fresh stdio server has a new key: the state is stale, the flow restarts and replays the sealed answer.
    done = process("resume", only_session().id, "-A", "yes=true")
    assert done.code == 0, done.err
    assert done.out == "unlocked vault for ann with hunter2secret\n"


def test_without_the_store_key_a_secret_is_asked_again(process: Any) -> None:
    target = stdio_server("vault")
    assert process("call", "unlock", "-a", "door=v", "-s", target, "-A", "user=ann", "-A", "password=pw-one").code == 3
    Paths.from_env().store_key_file.unlink()
    again = process("resume", only_session().id, "-A", "yes=true", "--json")
    assert again.code == 3
    assert list(again.json()["pending"]) == ["creds"]
    done = process("resume", only_session().id, "-A", "password=pw-two", "-A", "user=ann", "-A", "yes=true")
    assert done.code == 0, done.err
    assert done.out == "unlocked v for ann with pw-two\n"


# --- crash consistency -----------------------------------------------------------------------------------------------


def check_consistent(session_id: str) -> list[Any]:
    """After a kill: the session reads back, indexes are 1..n with no gap or repeat."""
    rounds = store().rounds(session_id)
    assert [r.index for r in rounds] == list(range(1, len(rounds) + 1))
    return rounds


@pytest.mark.cold_only
@pytest.mark.parametrize("point", ["before_commit", "after_commit", "after_send"])
@pytest.mark.parametrize("nth", [1, 2, 3])
def test_a_kill_at_a_fault_point_loses_nothing_and_resume_finishes(
    process: Any, http_demo: Any, tmp_path: Path, point: str, nth: int
) -> None:
    server = http_demo()
    answers = tmp_path / "a.json"
    answers.write_text(json.dumps(ONBOARD_ANSWERS))
    argv = ["--answers", str(answers), "--accept", "confirm", "--root", str(tmp_path)]
    killed = process("call", "onboard", "-a", "team=t", "-s", server.url, *argv, env={"MCPCLI_FAULT": f"{point}:{nth}"})
    assert killed.code == -signal.SIGKILL, killed.err
    if nth == 1 and point != "after_commit":  # killed before the first write: nothing was saved or answered
        assert store().list() == []
        assert process("call", "onboard", "-a", "team=t", "-s", server.url, *argv).code == 0
        return
    session = only_session()
    rounds = check_consistent(session.id)
    if point != "before_commit":  # answers acknowledged by the commit must still be there
        assert rounds[-1].answers is not None
    done = process("resume", session.id, *argv)
    assert done.code == 0, done.err
    assert "Onboarded team 't'" in done.out
    if point == "after_send":
        assert "sending it again with the same answers" in done.err
    after = check_consistent(session.id)
    assert all(r.answers is not None for r in after)


@pytest.mark.cold_only
def test_a_bounded_kill_9_loop_never_corrupts_the_session(process: Any, http_demo: Any, tmp_path: Path) -> None:
    server = http_demo()
    answers = tmp_path / "a.json"
    answers.write_text(json.dumps(ONBOARD_ANSWERS))
    argv = ["--answers", str(answers), "--accept", "confirm", "--root", str(tmp_path)]
    rng = random.Random(7)
    first = spawn("call", "onboard", "-a", "team=k", "-s", server.url, *argv)
    time.sleep(rng.uniform(0.55, 0.9))
    first.send_signal(signal.SIGKILL)
    first.wait()
    slack = 0.0  # a loaded machine starts processes slowly: each kill before the first save waits longer next time
    for _ in range(8):
        sessions = store().list()
        if not sessions:  # killed before the first round was saved: nothing to resume, start again
            proc = spawn("call", "onboard", "-a", "team=k", "-s", server.url, *argv)
            slack += 0.3
        else:
            check_consistent(sessions[0].id)
            if sessions[0].status == "done":
                break
            proc = spawn("resume", sessions[0].id, "--steal", *argv)
        time.sleep(rng.uniform(0.5, 0.8) + slack)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
    session = only_session()
    check_consistent(session.id)
    final = process("resume", session.id, "--steal", *argv)
    assert final.code == 0, final.err
    assert "Onboarded team 'k'" in final.out
