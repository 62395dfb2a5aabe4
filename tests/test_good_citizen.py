"""The worker as a good citizen of the machine: one worker family per user however many homes its commands use,
gone when its homes are; nothing left behind by a lone command, warm from the third of a run; and a kept-alive
server that is exactly the server a command names (directory, ``PATH``, home)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import PY, SERVERS, cannot_run_here, wait_until
from test_worker import mcpcli, served, worker_dir

from mcpcli.userdirs import socket_path, worker_file

pytestmark = pytest.mark.slow

__all__ = ["worker_dir"]  # the autouse fixture: a worker directory of each test's own


@pytest.fixture
def on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker on, by its own rules (the other tests run cold)."""
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    for name in ("MCPCLI_WORKER_WINDOW", "MCPCLI_WORKER_EARLY_IDLE", "MCPCLI_WORKER_IDLE"):
        monkeypatch.delenv(name, raising=False)


def family(directory: Path) -> dict[int, int]:
    """The processes of the worker family listening in ``directory`` (the worker, its relay, commands it runs),
    found by walking ``/proc``: each one whose environment names that directory and whose command line is
    mcpcli's; the memory each costs in KiB: its proportional share (PSS), since forked processes share their pages
    and the sum of their resident sizes would count those once per process."""
    needle = f"MCPCLI_WORKER_DIR={directory}".encode()
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes()
            rollup = (entry / "smaps_rollup").read_text()
        except OSError:
            continue
        if needle not in environ or b"mcpcli" not in cmdline:
            continue
        pss = [line.split()[1] for line in rollup.splitlines() if line.startswith("Pss:")]
        found[int(entry.name)] = int(pss[0]) if pss else 0
    return found


def running(timeout: float) -> bool:
    """Whether the worker answers within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if socket_path().exists() and json.loads(mcpcli("worker", "status", "--json").stdout)["running"] is True:
            return True
        time.sleep(0.2)
    return False


def settle(directory: Path, most: int, timeout: float = 30) -> dict[int, int]:
    """The family once it has ``most`` processes or fewer (workers that lost the race to listen exit on their own;
    a command's process ends with it) — or as it is after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while len(now := family(directory)) > most and time.monotonic() < deadline:
        time.sleep(0.2)
    return now


# --- 1. a bounded footprint, whatever the number of homes -----------------------------------------------------


def test_thirty_homes_share_one_worker_and_relay_under_250_mb_gone_when_the_homes_are(
    on: None, worker_dir: Path, tmp_path: Path
) -> None:
    homes = tmp_path / "homes"
    homes.mkdir(mode=0o700)
    for n in range(30):
        for _ in range(2):
            r = mcpcli("call", "echo", "-a", f"text=h{n}", env={"MCPCLI_HOME": str(homes / f"h{n}")})
            assert (r.returncode, r.stdout) == (0, f"h{n}\n"), r.stderr
    assert running(30)
    processes = settle(worker_dir, 3)
    assert len(processes) <= 3, processes  # the worker, its relay and its spare child: one family for thirty homes
    assert sum(processes.values()) <= 250 * 1024, processes
    assert json.loads(mcpcli("worker", "status", "--json").stdout)["homes"] == 30
    shutil.rmtree(homes)
    assert wait_until(lambda: family(worker_dir) == {}, 15)  # no home left to serve: gone within 15 s
    assert not socket_path().exists()


# --- 2. a lone command leaves nothing behind ------------------------------------------------------------------


def test_a_lone_command_starts_no_worker_and_leaves_nothing_behind(on: None, worker_dir: Path) -> None:
    r = mcpcli("call", "echo", "-a", "text=alone")
    assert (r.returncode, r.stdout) == (0, "alone\n"), r.stderr
    assert family(worker_dir) == {}  # nothing was started (today's worker was, for 15 minutes)
    time.sleep(2)
    assert family(worker_dir) == {}
    stamp = Path(worker_file(".last"))
    assert stamp.stat().st_mode & 0o777 == 0o600  # what remains: an empty stamp saying when it ran


def test_two_commands_in_a_row_start_a_worker_that_leaves_after_its_early_idle(
    on: None, worker_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPCLI_WORKER_EARLY_IDLE", "8")  # the rule's minute, made short
    for text in ("one", "two"):
        assert mcpcli("call", "echo", "-a", f"text={text}").stdout == f"{text}\n"
    assert running(30)  # the second in a row started it
    assert json.loads(mcpcli("worker", "status", "--json").stdout)["idle_now"] == 8
    assert settle(worker_dir, 0, timeout=40) == {}  # no third command: gone after the early idle


def test_the_worker_serves_from_the_third_command_of_a_run(on: None) -> None:
    went_through: list[bool] = []
    for n in range(5):
        if n == 2:
            assert running(30)  # started by the second (a loaded machine takes seconds to import)
        before = served(socket_path()) if socket_path().exists() else None
        r = mcpcli("call", "echo", "-a", f"text=n{n}")
        assert (r.returncode, r.stdout) == (0, f"n{n}\n"), r.stderr
        went_through.append(before is not None and served(socket_path()) == before + 1)
    assert went_through == [False, False, True, True, True]


def test_the_default_rule_starts_on_the_second_cold_command_within_five_minutes(tmp_path: Path) -> None:
    from mcpcli.warm import START_WINDOW, another_in_a_row
    from mcpcli.worker.server import EARLY_IDLE, FEW, IDLE_TIMEOUT, Worker

    assert (START_WINDOW, EARLY_IDLE, FEW, IDLE_TIMEOUT) == (300, 60, 3, 900)  # docs/worker.md's numbers
    directory = tmp_path / "w"
    stamp = str(directory / "worker-x.last")
    assert another_in_a_row(stamp, START_WINDOW, now=1000.0) is False  # the first: no stamp yet
    assert directory.stat().st_mode & 0o777 == 0o700
    assert another_in_a_row(stamp, START_WINDOW, now=1100.0) is True  # 100 s later
    assert another_in_a_row(stamp, START_WINDOW, now=1401.0) is False  # 301 s after that one
    assert another_in_a_row(stamp, 0, now=1402.0) is True  # MCPCLI_WORKER_WINDOW=0: at once
    directory.chmod(0o755)
    assert another_in_a_row(stamp, START_WINDOW, now=1403.0) is False  # a directory others can enter: no trust

    worker = Worker(IDLE_TIMEOUT)
    assert worker.idle_limit() == EARLY_IDLE
    worker.served = FEW
    assert worker.idle_limit() == IDLE_TIMEOUT
    assert Worker(IDLE_TIMEOUT, asked=True).idle_limit() == IDLE_TIMEOUT  # mcpcli worker start
    assert Worker(30.0).idle_limit() == 30.0  # [worker] idle_timeout rules when it is shorter


def test_worker_idle_timeout_in_config_reaches_the_worker(on: None, home: Path) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text("[worker]\nidle_timeout = 42\n", encoding="utf-8")
    assert mcpcli("call", "echo", "-a", "text=x").returncode == 0  # a valid table (the model refused it)
    assert mcpcli("worker", "start").returncode == 0
    assert json.loads(mcpcli("worker", "status", "--json").stdout)["idle_timeout"] == 42


# --- 3. a kept server is exactly the server the command names -------------------------------------------------


@pytest.fixture
def warm(on: None, home: Path) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    assert mcpcli("worker", "start").returncode == 0


def counter_script(directory: Path) -> Path:
    directory.mkdir(parents=True)
    script = directory / "server.py"
    run = f"runpy.run_path({str(SERVERS)!r}, run_name='__main__')"
    script.write_text(f"import runpy, sys\nsys.argv = ['servers.py', 'counter']\n{run}\n", encoding="utf-8")
    return script


def pid_of(out: str) -> int:
    return int(out.split()[-1])


def test_the_same_relative_command_in_two_directories_is_two_kept_servers(warm: None, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    counter_script(a)
    counter_script(b)
    target = shlex.join([PY, "server.py"])
    first_a = mcpcli("-s", target, "--keep-alive", "call", "count", cwd=a)
    first_b = mcpcli("-s", target, "--keep-alive", "call", "count", cwd=b)
    again_a = mcpcli("-s", target, "--keep-alive", "call", "count", cwd=a)
    assert first_a.stdout.startswith("call 1 of pid "), first_a.stderr
    assert first_b.stdout.startswith("call 1 of pid "), first_b.stderr  # not A's server's second call
    assert pid_of(first_a.stdout) != pid_of(first_b.stdout)
    assert again_a.stdout == f"call 2 of pid {pid_of(first_a.stdout)}\n"
    listed = json.loads(mcpcli("worker", "ps", "--json").stdout)
    assert sorted(s["cwd"] for s in listed) == [str(a), str(b)]
    text = mcpcli("worker", "ps").stdout
    assert f"in {a}" in text and f"in {b}" in text  # worker ps shows the directory


def test_the_same_command_under_another_path_is_another_kept_server(warm: None, tmp_path: Path) -> None:
    script = counter_script(tmp_path / "src")
    bins = []
    for name in ("one", "two"):
        directory = tmp_path / name
        directory.mkdir()
        tool = directory / "counter-tool"
        tool.write_text(f"#!/bin/sh\nexec {shlex.quote(PY)} {shlex.quote(str(script))}\n", encoding="utf-8")
        tool.chmod(0o755)
        bins.append(f"{directory}{os.pathsep}{os.environ['PATH']}")
    runs = [mcpcli("-s", "counter-tool", "--keep-alive", "call", "count", env={"PATH": p}) for p in (*bins, bins[0])]
    assert [r.stdout.split(" of ")[0] for r in runs] == ["call 1", "call 1", "call 2"], [r.stderr for r in runs]
    assert pid_of(runs[0].stdout) == pid_of(runs[2].stdout) != pid_of(runs[1].stdout)
    executables = sorted(s["executable"] for s in json.loads(mcpcli("worker", "ps", "--json").stdout))
    assert executables == [str(tmp_path / "one" / "counter-tool"), str(tmp_path / "two" / "counter-tool")]


def test_each_home_has_its_own_kept_server_and_sees_only_its_own(warm: None, tmp_path: Path) -> None:
    target = shlex.join([PY, str(SERVERS), "counter"])
    other = {"MCPCLI_HOME": str(tmp_path / "other")}
    mine = mcpcli("-s", target, "--keep-alive", "call", "count")
    theirs = mcpcli("-s", target, "--keep-alive", "call", "count", env=other)
    assert mine.stdout.startswith("call 1 ") and theirs.stdout.startswith("call 1 "), (mine.stderr, theirs.stderr)
    assert [s["pid"] for s in json.loads(mcpcli("worker", "ps", "--json").stdout)] == [pid_of(mine.stdout)]
    assert [s["pid"] for s in json.loads(mcpcli("worker", "ps", "--json", env=other).stdout)] == [pid_of(theirs.stdout)]


def test_a_command_with_fewer_rights_than_the_worker_runs_as_itself(warm: None) -> None:
    """One worker serves every command of the user: one started by a command with more rights (capabilities,
    groups) must not lend them to another. As root without CAP_DAC_OVERRIDE, a read-only file must bind."""
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        cannot_run_here("the test of a command with fewer rights", "it needs root and setpriv to drop a capability")
    before = served(socket_path())
    r = subprocess.run(
        ["setpriv", "--bounding-set=-dac_override", PY, "-m", "mcpcli", "call", "echo", "-a", "text=me"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert (r.returncode, r.stdout) == (0, "me\n"), r.stderr
    assert served(socket_path()) == before  # run in its own process, with its own rights
    assert mcpcli("call", "echo", "-a", "text=us").stdout == "us\n"
    assert served(socket_path()) == before + 1  # the worker still serves commands with its rights
