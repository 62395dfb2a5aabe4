"""Every exit path gives back what it claimed: SIGHUP, SIGTERM and Ctrl-C sent to a ``resume`` at each phase — before
its claim, claimed but nothing sent, mid-round, after the result — cold and through the worker (and the worker's
front end killed outright), leave the lease released and the session waiting (or done), never running with a holder
that is gone; and what the command says is true for it (a resume never says "nothing was saved").

A phase is reached exactly: ``MCPCLI_FAULT=stop@POINT`` stops the driver (SIGSTOP) there; the test sends the signal
and lets it go on (SIGCONT). Mid-round is the answered retry in flight at a slow server."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, run_inprocess, wait_until
from test_durability import legs

from mcpcli.settings.config import Paths
from mcpcli.state.store import SessionRecord, open_store

pytestmark = pytest.mark.slow

SIGNALS = [(signal.SIGHUP, 129, "Hung up (SIGHUP)"), (signal.SIGTERM, 143, "Terminated (SIGTERM)")]
SIGNALS.append((signal.SIGINT, 130, "Interrupted"))
PHASES = ["before_claim", "after_claim", "mid_round", "after_result"]


def _store() -> Any:
    return open_store(None, Paths.from_env().store_file)


def _stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def _wait(condition: Any, timeout: float = 30.0) -> bool:
    return wait_until(condition, timeout, step=0.02)  # a phase is short: looked at every 20 ms


@pytest.mark.cold_only
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "worker"])
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize(("signum", "code", "said"), SIGNALS, ids=["SIGHUP", "SIGTERM", "SIGINT"])
def test_a_stopped_resume_gives_its_claim_back_and_says_what_it_left(
    signum: int, code: int, said: str, phase: str, warm: bool, http_server: Any, tmp_path: Path
) -> None:
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record), "--slow", "60" if phase == "mid_round" else "0")
    started = run_inprocess("call", "two_rounds", "-a", "item=x", "-s", server.url, "--no-input", "--json")
    assert started.code == 3, started.err
    session_id = started.json()["session_id"]
    env = {**os.environ, "MCPCLI_WORKER": "1" if warm else "0"}
    if phase != "mid_round":
        env["MCPCLI_FAULT"] = f"stop@{phase}"
    if warm:
        subprocess.run([PY, "-m", "mcpcli", "worker", "start"], env=env, capture_output=True, timeout=60, check=True)
    front = subprocess.Popen(
        [PY, "-m", "mcpcli", "resume", session_id, "--answer", "sure=true"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        if phase == "mid_round":
            assert _wait(lambda: len(legs(record)) >= 2), front.communicate(timeout=5)
            front.send_signal(signum)  # the front end: it forwards the signal to the worker's child
        else:
            assert _wait(lambda: bool(_stopped_here())), "the driver never reached " + phase
            (driver,) = _stopped_here()  # the front end itself, or the worker's child running the command
            assert (driver == front.pid) != warm
            front.send_signal(signum)
            if warm:  # the front end forwards it: pending at the stopped child before it goes on
                assert _wait(lambda: _pending(driver, signum)), "the front end did not forward the signal"
            os.kill(driver, signal.SIGCONT)
        out, err = front.communicate(timeout=60)
    finally:
        if front.poll() is None:
            front.kill()
        if warm:
            subprocess.run([PY, "-m", "mcpcli", "worker", "stop"], env=env, capture_output=True, timeout=60)
    _check(session_id, phase, code, said, front.returncode, out, err)


@pytest.mark.cold_only
@pytest.mark.parametrize("phase", ["before_claim", "after_claim", "mid_round"])
def test_a_worker_child_whose_front_end_was_killed_gives_its_claim_back(
    phase: str, http_server: Any, tmp_path: Path
) -> None:
    """The front end killed outright (its terminal's process group, kill -9): the child hears its socket close and
    stops as on SIGHUP — lease released, session waiting, and what it says is true for a resume."""
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record), "--slow", "60" if phase == "mid_round" else "0")
    started = run_inprocess("call", "two_rounds", "-a", "item=x", "-s", server.url, "--no-input", "--json")
    assert started.code == 3, started.err
    session_id = started.json()["session_id"]
    env = {**os.environ, "MCPCLI_WORKER": "1"}
    if phase != "mid_round":
        env["MCPCLI_FAULT"] = f"stop@{phase}"
    subprocess.run([PY, "-m", "mcpcli", "worker", "start"], env=env, capture_output=True, timeout=60, check=True)
    errors = tmp_path / "err.txt"
    with errors.open("w") as err_file:
        front = subprocess.Popen(
            [PY, "-m", "mcpcli", "resume", session_id, "--answer", "sure=true"],
            stdout=subprocess.DEVNULL,
            stderr=err_file,
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
        )
    try:
        driver = None
        if phase == "mid_round":
            assert _wait(lambda: len(legs(record)) >= 2)
        else:
            assert _wait(lambda: bool(_stopped_here())), "the driver never reached " + phase
            (driver,) = _stopped_here()
        front.kill()
        front.wait()
        if driver is not None:
            os.kill(driver, signal.SIGCONT)
        assert _wait(lambda: _store().get(session_id).lease_owner is None), _store().get(session_id)
        assert _wait(lambda: "mcpcli resume" in errors.read_text()), errors.read_text()
    finally:
        if front.poll() is None:
            front.kill()
        subprocess.run([PY, "-m", "mcpcli", "worker", "stop"], env=env, capture_output=True, timeout=60)
    err = errors.read_text()
    if phase == "before_claim" and "saved." in err:  # the child went on to claim before its hang-up came: fine
        phase = "after_claim"
    _check(session_id, phase, 129, "Hung up (SIGHUP)", 129, "", err)


@pytest.mark.cold_only
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "worker"])
def test_a_second_signal_while_stopping_does_not_cut_the_cleanup_short(
    warm: bool, http_server: Any, tmp_path: Path
) -> None:
    """SIGTERM and then SIGHUP at once (a front end told to stop, then its terminal gone): one stop, done whole."""
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record), "--slow", "60")
    started = run_inprocess("call", "two_rounds", "-a", "item=x", "-s", server.url, "--no-input", "--json")
    session_id = started.json()["session_id"]
    env = {**os.environ, "MCPCLI_WORKER": "1" if warm else "0"}
    if warm:
        subprocess.run([PY, "-m", "mcpcli", "worker", "start"], env=env, capture_output=True, timeout=60, check=True)
    front = subprocess.Popen(
        [PY, "-m", "mcpcli", "resume", session_id, "--answer", "sure=true"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        assert _wait(lambda: len(legs(record)) >= 2)
        driver = _store().get(session_id).lease_pid
        assert driver is not None
        os.kill(driver, signal.SIGTERM)
        for _ in range(5):
            time.sleep(0.01)
            with contextlib.suppress(ProcessLookupError):
                os.kill(driver, signal.SIGHUP)
        out, err = front.communicate(timeout=60)
    finally:
        if front.poll() is None:
            front.kill()
        if warm:
            subprocess.run([PY, "-m", "mcpcli", "worker", "stop"], env=env, capture_output=True, timeout=60)
    _check(session_id, "mid_round", 143, "Terminated (SIGTERM)", front.returncode, out, err)


def _check(session_id: str, phase: str, code: int, said: str, exit_code: int | None, out: str, err: str) -> None:
    session: SessionRecord = _store().get(session_id)
    assert "Traceback" not in err and "Internal error" not in err, err
    assert session.lease_owner is None, (session, err)  # the claim was given back, on every path
    assert "nothing was saved" not in err, err
    if phase == "after_result":  # the result was recorded before the signal: the flow is done, and says so
        assert session.status == "done", (session, err)
        assert out == "recorded x\n", (exit_code, out, err)
        return
    assert exit_code == code, (exit_code, out, err)
    assert session.status == "waiting", (session, err)
    assert f"{said}" in err and f"mcpcli resume {session_id}" in err, err
    if phase == "before_claim":
        assert "before anything was sent" in err, err
    elif phase == "mid_round":
        assert "may already have reached the server" in err, err
    else:
        assert f"session {session_id} saved" in err, err


def _pending(pid: int, signum: int) -> bool:
    """Whether ``signum`` waits to be delivered to the (stopped) process."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return False
    masks = [int(line.split()[1], 16) for line in lines if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(mask >> (signum - 1) & 1 for mask in masks)


def _stopped_here() -> list[int]:
    """The processes of this test's home (its front ends, its worker's children) stopped at a fault point."""
    home = f"MCPCLI_HOME={os.environ['MCPCLI_HOME']}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _stopped(int(entry.name)):
            try:
                if home in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
