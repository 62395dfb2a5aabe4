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
