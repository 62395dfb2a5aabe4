"""``mcpcli call … --tui`` as a real process on a real pseudo-terminal: the CLI wiring end to end.

The pilot tests drive the same app in-process; this one checks what only a process shows — that the
flag opens the app, the keyboard answers the form, the terminal is restored, and the result then lands
on stdout with the flow's exit code. Every step waits for text on the screen, never for a time.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pexpect
import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow


def spawn(home: Path, *args: str) -> tuple[pexpect.spawn, io.StringIO]:
    seen = io.StringIO()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "mcpcli", *args],
        env={**os.environ, "TERM": "xterm-256color", "MCPCLI_HOME": str(home)},
        cwd=str(ROOT),
        dimensions=(40, 100),
        encoding="utf-8",
        timeout=30,
    )
    child.logfile_read = seen
    return child, seen


def test_call_with_tui_answers_in_the_app_then_prints_the_result_and_exits_0(home: Path) -> None:
    child, seen = spawn(home, "call", "provision", "-a", "name=orders", "--tui")
    child.expect_exact("Region")
    child.send("eu-west-1")
    child.send("\r")  # enter in the field submits the round
    child.expect_exact("Result")
    child.send("\r")  # enter closes the result; the CLI prints it on stdout
    child.expect_exact("Provisioned 'orders' in eu-west-1.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, seen.getvalue()[-2000:]


def test_quitting_the_app_mid_flow_exits_5_and_says_how_to_resume(home: Path) -> None:
    child, seen = spawn(home, "call", "provision", "-a", "name=orders", "--tui")
    child.expect_exact("Region")
    child.sendcontrol("q")
    child.expect_exact("mcpcli resume")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 5, seen.getvalue()[-2000:]


def _stopped_by_ctrl_c(child: pexpect.spawn, seen: io.StringIO) -> str:
    """Press Ctrl-C; return the line the CLI said it with, once the process has exited 130."""
    child.sendcontrol("c")
    child.expect(r"Interrupted[^\r\n]*")
    line = str(child.after)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130, seen.getvalue()[-2000:]
    return line


def _waiting(home: Path) -> str:
    """The one stored session, which must be waiting; its id."""
    from mcpcli.settings.config import Paths
    from mcpcli.state.store import open_store

    store = open_store(None, Paths.from_env().store_file)
    (record,) = store.list()
    assert record.status == "waiting", record.status
    return record.id


def test_ctrl_c_in_the_app_stops_as_inline_exit_130_session_kept_waiting_and_the_same_line(home: Path) -> None:
    child, seen = spawn(home, "call", "provision", "-a", "name=orders")  # inline, at a terminal
    child.expect_exact("Region")
    inline = _stopped_by_ctrl_c(child, seen)
    first = _waiting(home)
    from mcpcli.settings.config import Paths
    from mcpcli.state.store import open_store

    open_store(None, Paths.from_env().store_file).delete([first])

    child, seen = spawn(home, "call", "provision", "-a", "name=orders", "--tui")
    child.expect_exact("Region")
    in_app = _stopped_by_ctrl_c(child, seen)
    second = _waiting(home)
    assert "Press" not in seen.getvalue()  # not Textual's "Press ctrl+q to quit the app"
    assert in_app.replace(second, "ID") == inline.replace(first, "ID")
    assert in_app == f"Interrupted; session {second} saved. Resume it with: mcpcli resume {second}"


def test_ctrl_c_in_resume_tui_and_in_mcpcli_tui_exits_130_the_session_still_waiting(home: Path) -> None:
    from conftest import run_inprocess

    asked = run_inprocess("call", "provision", "-a", "name=orders", "--no-input")
    assert asked.code == 3, asked
    session = _waiting(home)

    child, seen = spawn(home, "resume", session, "--tui")
    child.expect_exact("Region")
    assert f"session {session} saved" in _stopped_by_ctrl_c(child, seen)
    assert _waiting(home) == session

    child, seen = spawn(home, "tui", session)
    child.expect_exact("Region")
    assert f"session {session} saved" in _stopped_by_ctrl_c(child, seen)
    assert _waiting(home) == session

    child, seen = spawn(home, "tui")  # the start screen, nothing asked
    child.expect_exact("provision")
    assert _stopped_by_ctrl_c(child, seen).startswith("Interrupted")
    assert _waiting(home) == session
