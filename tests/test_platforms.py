"""mcpcli on a Python without Linux's extras (tests/platform_shim.py takes them out: as macOS, as Windows would
have them): the commands work in-process, the worker and kept-alive servers say once why they are not there, and
nothing ends in a traceback. ``mypy --platform darwin`` and ``--platform win32`` (.ci/run) hold the rest."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import PY, ROOT, stdio_server

SHIM = ROOT / "tests" / "platform_shim.py"
SYSTEMS = ["darwin", "win32"]


def on(system: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``mcpcli ARGS`` as that system's Python runs it — the worker asked for, so that its absence shows."""
    env = {**os.environ, "MCPCLI_WORKER": "1"}
    env.pop("MCPCLI_WORKER_REQUIRED", None)
    done = subprocess.run(
        [PY, str(SHIM), system, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
    )
    assert "Traceback" not in done.stderr and "Internal error" not in done.stderr, done.stderr
    return done


@pytest.mark.parametrize("system", SYSTEMS)
def test_calls_resumes_and_batches_run_in_process(system: str, home: Path, tmp_path: Path) -> None:
    echo = on(system, "call", "echo", "-a", "text=hi")
    assert (echo.returncode, echo.stdout) == (0, "hi\n")
    parked = on(system, "call", "provision", "-a", "name=p", "--no-input", "--json")
    assert parked.returncode == 3, parked.stderr
    session = json.loads(parked.stdout)["session_id"]
    resumed = on(system, "resume", session, "--answer", "region=eu-west-1")
    assert (resumed.returncode, resumed.stdout) == (0, "Provisioned 'p' in eu-west-1.\n"), resumed.stderr
    lines = [{"tool": "echo", "arguments": {"text": str(n)}, "id": n} for n in range(3)]
    flows = tmp_path / "flows.jsonl"
    flows.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    batch = on(system, "batch", str(flows))
    assert batch.returncode == 0, batch.stderr
    assert sorted(json.loads(line)["id"] for line in batch.stdout.splitlines()) == [0, 1, 2]


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_recording_replays_and_a_watch_ends(system: str, home: Path, tmp_path: Path) -> None:
    flow = tmp_path / "flow.ndjson"
    recorded = on(system, "--record", str(flow), "call", "provision", "-a", "name=r", "-A", "region=eu-west-1")
    assert recorded.returncode == 0, recorded.stderr
    replayed = on(system, "replay", str(flow))
    assert replayed.returncode == 0, replayed.stderr
    watched = on(system, "-s", stdio_server("counter"), "watch", "--tools", "--for", "1")
    assert watched.returncode == 0, watched.stderr


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_stdio_server_runs_and_is_stopped(system: str, home: Path) -> None:
    done = on(system, "-s", stdio_server("counter"), "call", "count")
    assert done.returncode == 0 and done.stdout.startswith("call 1 of pid "), done.stderr


@pytest.mark.parametrize("system", SYSTEMS)
def test_the_worker_and_kept_servers_say_once_why_they_are_not_there(system: str, home: Path) -> None:
    started = on(system, "worker", "start")
    assert started.returncode == 4
    assert started.stderr.startswith("No worker can run here: ") and len(started.stderr.splitlines()) == 1
    assert "runs in-process" in started.stderr
    status = on(system, "worker", "status")
    assert status.returncode == 0 and status.stderr == started.stderr
    kept = on(system, "-s", stdio_server("counter"), "--keep-alive", "call", "count")
    assert kept.returncode == 2 and kept.stdout == ""
    assert kept.stderr.startswith("Usage error: --keep-alive needs the background worker, and there is none here")
    home.mkdir(parents=True, exist_ok=True)
    args = json.dumps([str(ROOT / "tests" / "servers.py"), "counter"])
    entry = f"[mcpServers.tally]\ncommand = {json.dumps(PY)}\nargs = {args}\nkeep_alive = true\n"
    (home / "config.toml").write_text(entry, encoding="utf-8")
    named = on(system, "-s", "tally", "call", "count")  # the config's keep_alive: said, and the call still runs
    assert named.returncode == 0 and named.stdout.startswith("call 1 of pid ")
    assert "Not keeping tally alive: that needs the background worker (this system" in named.stderr


def test_no_module_but_platform_names_a_platform() -> None:
    """What differs by system is asked of ``mcpcli.platform``: nowhere else a system's name or a Linux-only look."""
    import re

    marks = re.compile(r"sys\.platform|os\.name\b|SO_PEERCRED|/proc/|os\.uname")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "mcpcli").rglob("*.py"))
        if path.name != "platform.py" or path.parent.name != "mcpcli"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if marks.search(line)
    ]
    assert found == []


@pytest.mark.parametrize("procfs", [True, False], ids=["proc", "psutil"])
def test_process_facts_come_from_proc_or_psutil_alike(procfs: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a session's driver still runs, and since when (a takeover's test): /proc on Linux, psutil elsewhere."""
    import time

    from mcpcli import platform

    monkeypatch.setattr(platform, "PROCFS", procfs)
    child = subprocess.Popen([PY, "-c", "pass"])
    running = platform.process_state(os.getpid())
    assert running is not None and running[0] == "running" and running[1] is not None
    assert abs(running[1] - time.time()) < 24 * 3600  # a start time, in epoch seconds
    deadline = time.monotonic() + 30
    while (state := platform.process_state(child.pid)) is not None and state[0] == "running":
        assert time.monotonic() < deadline, "the child never ended"
        time.sleep(0.02)
    assert state is not None and state[0] == "zombie"  # ended, not yet reaped
    child.wait()
    assert platform.process_state(child.pid) == ("gone", None)


def test_a_command_line_is_split_as_its_systems_shell_would() -> None:
    from mcpcli.platform import split_command

    assert split_command(r'python C:\srv\server.py --name "a b"', "win32") == [
        "python",
        r"C:\srv\server.py",
        "--name",
        "a b",
    ]
    assert split_command(r'"C:\Program Files\node.exe" server.js', "win32") == [
        r"C:\Program Files\node.exe",
        "server.js",
    ]
    assert split_command(r"python 'a b' c\ d", "linux") == ["python", "a b", "c d"]


@pytest.mark.parametrize("system", SYSTEMS)
def test_the_team_inbox_answers_and_waits_in_process(system: str, home: Path) -> None:
    import threading

    parked: dict[str, subprocess.CompletedProcess[str]] = {}
    waiting = threading.Thread(
        target=lambda: parked.setdefault(
            "done", on(system, "call", "provision", "-a", "name=w", "--wait-for-answer=40", "--ask", "bob")
        )
    )
    waiting.start()
    session = None
    for _ in range(200):
        docs = json.loads(on(system, "inbox", "--all", "--json").stdout or "[]")
        if docs:
            session = docs[0]["session_id"]
            break
        waiting.join(0.1)
    assert session is not None
    answered = subprocess.run(
        [PY, str(SHIM), system, "answer", session, "--answer", "region=eu"],
        capture_output=True, text=True, env={**os.environ, "MCPCLI_USER": "bob"}, timeout=60,
    )  # fmt: skip
    assert answered.returncode == 0, answered.stderr
    waiting.join(60)
    assert parked["done"].returncode == 0 and parked["done"].stdout == "Provisioned 'w' in eu.\n", parked["done"].stderr
