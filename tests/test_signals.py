"""Every server command stops cleanly on SIGTERM, SIGHUP and Ctrl-C: exit 143, 129 or 130 (as ``call``), no stdio
server left running, a session left resumable — cold and, in the warm pass (MCPCLI_TEST_WARM=1), through the worker.

Each signal is sent while the stdio server is starting (before its handshake is answered: the command is still in
``connect``), and the server is looked for afterwards by a marker in its command line, walking /proc: warm, it is
not the command's child but the worker child's."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import PY, run_inprocess, stdio_server, wait_until
from test_durability import spawn
from test_flows import only_session, store

pytestmark = pytest.mark.slow

STARTING = """\
import sys, time
open(sys.argv[1], "w").write("started")
time.sleep(120)
"""
"""A stdio server that never answers its handshake: it says it started (a file) and sleeps."""


def _starting_server(tmp_path: Path) -> tuple[str, str, Path]:
    """A ``-s`` command line for the server above, the marker in its argv, and the file it writes once running."""
    script = tmp_path / "starting_server.py"
    script.write_text(STARTING)
    marker = f"mcpcli-signal-test-{uuid.uuid4().hex}"
    started = tmp_path / "started"
    return shlex.join([PY, str(script), str(started), marker]), marker, started


def _running(marker: str) -> list[int]:
    """The processes whose command line carries ``marker`` (walking /proc, whoever their parent is)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if marker.encode() in argv and state != "Z":
            found.append(int(entry.name))
    return found


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60  # a loaded machine starts Python slowly (twice: mcpcli, then the server)
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the stdio server never started"
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[str], signum: int, marker: str) -> tuple[int, str, str]:
    """Send ``signum``; return how the command ended, once no process of the server is left (or fail, bounded)."""
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=90)
    assert wait_until(lambda: not _running(marker), 10), f"the stdio server outlived mcpcli ({signum}): {err}"
    return proc.returncode, out, err


SIGNALS = [
    pytest.param(signal.SIGTERM, 143, "Terminated (SIGTERM)", id="sigterm"),
    pytest.param(signal.SIGHUP, 129, "Hung up (SIGHUP)", id="sighup"),
    pytest.param(signal.SIGINT, 130, "Interrupted", id="sigint"),
]


@pytest.mark.parametrize(("signum", "code", "said"), SIGNALS)
@pytest.mark.parametrize("command", [["tools"], ["info", "--json"], ["prompts"], ["resources"]])
def test_discovery_stops_its_stdio_server_on_every_stop_signal(
    command: list[str], signum: int, code: int, said: str, tmp_path: Path
) -> None:
    server, marker, started = _starting_server(tmp_path)
    proc = spawn("-s", server, *command)
    _wait_for(started, proc)
    exit_code, out, err = _stop(proc, signum, marker)
    assert exit_code == code, err
    assert f"{said}." in err
    if "--json" in command:
        assert json.loads(out)["error"]["exit_code"] == code


@pytest.mark.parametrize(("signum", "code", "said"), SIGNALS)
@pytest.mark.parametrize("command", [["call", "echo", "-a", "text=hi"], ["read", "demo://x"]])
def test_call_and_read_stop_their_stdio_server_while_it_starts(
    command: list[str], signum: int, code: int, said: str, tmp_path: Path
) -> None:
    server, marker, started = _starting_server(tmp_path)
    proc = spawn("-s", server, *command)
    _wait_for(started, proc)
    exit_code, _out, err = _stop(proc, signum, marker)
    assert exit_code == code, err
    assert f"{said}; nothing was saved" in err
    assert store().list() == []


@pytest.mark.parametrize(("signum", "code", "said"), SIGNALS)
def test_resume_stops_its_stdio_server_and_leaves_the_session_resumable(
    signum: int, code: int, said: str, tmp_path: Path
) -> None:
    recorder = stdio_server("recorder", "--record", str(tmp_path / "legs.jsonl"))
    asked = run_inprocess("-s", recorder, "call", "two_rounds", "-a", "item=x", "--no-input")
    assert asked.code == 3, asked.err
    session = only_session()
    server, marker, started = _starting_server(tmp_path)
    proc = spawn("resume", session.id, "-s", server, "--answer", "sure=true")
    _wait_for(started, proc)
    exit_code, _out, err = _stop(proc, signum, marker)
    assert exit_code == code, err
    assert f"{said}; session {session.id} saved" in err
    assert store().get(session.id).status == "waiting"
    again = run_inprocess("resume", session.id, "-s", recorder, "--answer", "sure=true")
    assert again.code == 0 and again.out == "recorded x\n", again.err


@pytest.mark.parametrize(("signum", "code", "said"), SIGNALS)
def test_batch_stops_its_stdio_server_while_it_starts(signum: int, code: int, said: str, tmp_path: Path) -> None:
    lines = tmp_path / "flows.jsonl"
    lines.write_text("".join(json.dumps({"tool": "echo", "arguments": {"text": str(n)}}) + "\n" for n in range(3)))
    server, marker, started = _starting_server(tmp_path)
    proc = spawn("batch", str(lines), "-s", server)
    _wait_for(started, proc)
    exit_code, _out, err = _stop(proc, signum, marker)
    assert exit_code == code, err
    assert said in err


def test_the_completion_cache_refresh_stops_its_stdio_server_on_sigterm(tmp_path: Path) -> None:
    """The background ``_refresh-cache`` (started by shell completion) lists a server too: a shutdown's SIGTERM
    must not leave the server it started behind."""
    server, marker, started = _starting_server(tmp_path)
    proc = spawn("_refresh-cache", server)
    _wait_for(started, proc)
    exit_code, _out, _err = _stop(proc, signal.SIGTERM, marker)
    assert exit_code == 1  # its failures go to the log only: nobody reads its output
