"""The real ``mcpcli`` process on a real pseudo-terminal.

``test_inline.py`` drives the prompts with scripted readers; these tests check
what only a terminal shows: that a passphrase is not echoed, that Ctrl-C and
Ctrl-D from the line discipline stop the flow and keep the session, that a
browser is launched (through ``$BROWSER``) only after consent, and which bytes
a terminal actually receives from a hostile server.

Every step waits for the prompt it answers (``expect``), never for a time.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest
from conftest import ROOT, run_process, stdio_server

pytestmark = pytest.mark.slow

FIELD = "› "
"""The end of every field prompt (after an optional ``[default] ``)."""
CONFIRM = "Send? [Y/n/decline/cancel] "
CONSENT = "[c]ancel: "
FINISHED = "Press Enter when you have finished on that page. "
PROVISION = ("call", "provision", "--arg", "name=orders")


class Term:
    """One ``mcpcli`` process on a 40x120 pseudo-terminal; ``seen`` is everything the terminal received."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.log = io.StringIO()
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "mcpcli", *args],
            env={**os.environ, "TERM": "xterm", "COLUMNS": "120", **(env or {})},
            cwd=str(ROOT),
            dimensions=(40, 120),
            encoding="utf-8",
            timeout=30,
        )
        self.child.logfile_read = self.log

    @property
    def seen(self) -> str:
        return self.log.getvalue()

    def answer(self, prompt: str, text: str) -> None:
        """Wait for ``prompt`` (literal text), then type ``text`` and Enter."""
        self.child.expect_exact(prompt)
        self.child.sendline(text)

    def finish(self) -> int:
        """Wait for the process to end; its exit code."""
        self.child.expect(pexpect.EOF)
        self.child.close()
        assert self.child.signalstatus is None, f"killed by signal {self.child.signalstatus}:\n{self.seen}"
        return int(self.child.exitstatus)


@pytest.fixture
def terms() -> Iterator[Callable[..., Term]]:
    """Spawn terminals; any still running when the test ends is killed, so a failure cannot leak a process."""
    spawned: list[Term] = []

    def spawn(*args: str, env: dict[str, str] | None = None) -> Term:
        term = Term(*args, env=env)
        spawned.append(term)
        return term

    yield spawn
    for term in spawned:
        if term.child.isalive():
            term.child.terminate(force=True)


def plain(text: str) -> str:
    """``text`` without the colours mcpcli itself adds."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def only_session() -> dict[str, object]:
    result = run_process("sessions", "list", "--json")
    assert result.code == 0, result.err
    sessions = json.loads(result.out)
    assert len(sessions) == 1, sessions
    return sessions[0]


# --- the everyday path -----------------------------------------------------------------------------------------------


def test_a_call_at_a_terminal_asks_for_the_region_inline_and_prints_the_result(terms) -> None:
    term = terms(*PROVISION)
    term.child.expect_exact("Which region should 'orders' be provisioned in?")
    term.answer(FIELD, "eu-west-1")
    term.answer(CONFIRM, "y")
    assert term.finish() == 0
    assert "Provisioned 'orders' in eu-west-1." in term.seen


def test_every_field_kind_of_onboard_is_answered_at_the_prompts_and_roots_come_from_root(terms, tmp_path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    term = terms("call", "onboard", "--arg", "team=core", "--root", str(workspace))
    term.child.expect_exact("Tell us about team 'core'.")
    for prompt, text in [
        ("Display name", "Core team"),
        ("Contact email", "core@example.com"),
        ("Homepage", "https://core.example.com"),
        ("Start date", "2026-09-01"),
        ("Kick-off meeting", "2026-09-01T10:00:00Z"),
        ("Seats", "99"),  # out of range: re-asked below
    ]:
        term.child.expect_exact(prompt)
        term.answer(FIELD, text)
    term.child.expect_exact("seats: must be an integer between 1 and 50")
    term.answer("[5] " + FIELD, "")  # Enter keeps the default
    for prompt, text in [
        ("Monthly budget (EUR)", "1200.5"),
        ("Remote team", "n"),  # boolean, default y
        ("Team size", "2"),  # enum, by number
        ("Region", "1"),  # titled oneOf, by number
        ("Support tier", "Gold"),  # legacy enumNames, by label
        ("Languages", "1,3"),  # multi-select, by numbers
        ("Notification channels", ""),  # titled multi-select: keep the default
    ]:
        term.child.expect_exact(prompt)
        term.answer(FIELD, text)
    term.child.expect_exact("Vault passphrase")
    term.child.expect_exact(FIELD)
    assert term.child.waitnoecho(timeout=10), "the passphrase prompt left echo on"
    term.child.sendline("hunter2secret")
    term.child.expect_exact(CONFIRM)
    summary = plain(term.child.before)
    for shown in ['"Core team"', "Seats=5 ", "Team size=medium", "Region=Europe (Ireland)", "Languages=python, rust"]:
        assert shown in summary, shown
    assert "hunter2secret" not in summary
    term.child.sendline("y")
    term.child.expect_exact("Create Core team <core@example.com>, 5 seats?")
    term.answer(FIELD, "y")
    term.answer(CONFIRM, "")
    assert term.finish() == 0, term.seen
    assert "hunter2secret" not in term.seen
    assert f"Onboarded team 'core' with 1 workspace root: {workspace.resolve().as_uri()}." in term.seen
    assert '"channels": ["email"]' in term.seen
    assert '"seats": 5' in term.seen
    assert "passphrase" not in term.seen.split("Onboarded team")[1]  # the demo keeps it to itself


# --- stopping at the prompt ------------------------------------------------------------------------------------------


def test_decline_at_the_prompt_sends_decline_and_the_servers_result_decides_exit_1(terms) -> None:
    term = terms(*PROVISION)
    term.answer(FIELD, ":decline")
    assert term.finish() == 1
    assert "Provisioning of 'orders' was declined." in term.seen


def test_ctrl_d_at_the_prompt_exits_5_keeps_the_session_and_resume_finishes_it(terms) -> None:
    term = terms(*PROVISION)
    term.child.expect_exact(FIELD)
    term.child.sendeof()
    assert term.finish() == 5
    assert "the session is kept" in term.seen
    session = only_session()
    assert session["status"] == "waiting"
    resumed = run_process("resume", str(session["id"]), "--answer", "region=eu-west-1")
    assert resumed.code == 0, resumed.err
    assert resumed.out == "Provisioned 'orders' in eu-west-1.\n"
    assert only_session()["status"] == "done"


def test_ctrl_c_at_the_prompt_exits_130_and_keeps_the_session(terms) -> None:
    term = terms(*PROVISION)
    term.child.expect_exact(FIELD)
    term.child.sendintr()
    assert term.finish() == 130
    assert "Interrupted" in term.seen
    session = only_session()
    assert session["status"] == "waiting"
    resumed = run_process("resume", str(session["id"]), "--answer", "region=eu-west-1")
    assert (resumed.code, resumed.out) == (0, "Provisioned 'orders' in eu-west-1.\n"), resumed.err


def _writer_of(marker: str) -> int:
    """The pid of the process running the flow (mcpcli cold, the worker's child warm): the parent of the stdio
    server that has ``marker`` as one of its arguments (mcpcli's own ``-s`` holds it inside a longer one)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                    return int((entry / "stat").read_text().rsplit(")", 1)[-1].split()[1])
        time.sleep(0.05)
    raise AssertionError("the stdio server never started")


def test_ctrl_c_while_a_forms_header_prints_counts_at_once(terms, tmp_path: Path) -> None:
    """Ctrl-C after the form's header started printing, before its first read: the run stops there (exit 130, the
    session kept), instead of the Ctrl-C waiting for the whole form to be answered. The terminal is paused (XOFF)
    so that the flow is caught in the header's write; the line discipline resumes output on Ctrl-C."""
    record = tmp_path / "legs.jsonl"
    term = terms("-s", stdio_server("recorder", "--record", str(record)), "call", "two_rounds", "-a", "item=x")
    term.child.send("\x13")  # XOFF: whatever mcpcli writes to the terminal now waits
    flow = _writer_of(str(record))
    deadline = time.monotonic() + 60
    while not (record.exists() and record.read_text().strip()):  # the server was called, and asks
        assert time.monotonic() < deadline, term.seen
        time.sleep(0.05)
    while Path(f"/proc/{flow}/syscall").read_text().split()[:2] != ["1", "0x2"]:  # blocked writing to stderr
        assert time.monotonic() < deadline, term.seen
        time.sleep(0.05)
    term.child.sendintr()
    assert term.finish() == 130, term.seen
    assert "Interrupted; session" in term.seen
    assert "Record it?" not in term.seen.split("^C", 1)[-1].split("Interrupted", 1)[-1]
    assert only_session()["status"] == "waiting"


@pytest.mark.parametrize("key", ["ctrl-c", "ctrl-d"])
def test_stopping_at_the_prompt_says_which_session_to_resume(terms, key: str) -> None:
    term = terms(*PROVISION)
    term.child.expect_exact(FIELD)
    if key == "ctrl-c":
        term.child.sendintr()
    else:
        term.child.sendeof()
    term.finish()
    session_id = str(only_session()["id"])
    assert f"mcpcli resume {session_id}" in term.seen


# --- URL-mode consent ------------------------------------------------------------------------------------------------


@pytest.fixture
def browser(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A ``$BROWSER`` that only writes down the URL it was asked to open (webbrowser waits for it to exit)."""
    opened = tmp_path / "opened.txt"
    script = tmp_path / "browser.py"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nwith open({str(opened)!r}, 'a') as f:\n    f.write(sys.argv[1] + '\\n')\n"
    )
    script.chmod(0o755)
    return {"BROWSER": str(script)}, opened


CONNECT = ("call", "connect", "--arg", "service=github")
URL = "https://auth.example.com/connect?service=github"


def test_url_consent_shows_the_host_and_opens_the_browser_only_after_yes(terms, browser) -> None:
    env, opened = browser
    term = terms(*CONNECT, env=env)
    term.child.expect_exact(CONSENT)
    shown = term.child.before
    assert "Sign in to github to connect it." in shown
    assert plain(shown).count(URL) == 1
    host_style = re.search(r"\x1b\[([0-9;]*)mauth\.example\.com", shown)
    assert host_style is not None and "7" in host_style[1].split(";") and "2" not in host_style[1].split(";")
    assert not opened.exists()
    term.child.sendline("y")
    term.child.expect_exact(FINISHED)
    assert opened.read_text() == URL + "\n"
    term.child.sendline("")
    assert term.finish() == 0
    assert "Connected 'github'." in term.seen


def test_url_consent_answered_no_declines_without_opening_anything(terms, browser) -> None:
    env, opened = browser
    term = terms(*CONNECT, env=env)
    term.answer(CONSENT, "n")
    assert term.finish() == 1
    assert "Connecting 'github' was declined." in term.seen
    assert not opened.exists()


def test_url_consent_with_no_input_never_opens_the_browser_and_exits_3(terms, browser) -> None:
    env, opened = browser
    term = terms(*CONNECT, "--no-input", env=env)
    assert term.finish() == 3
    assert CONSENT not in term.seen
    assert URL in term.seen
    assert not opened.exists()
    assert only_session()["status"] == "waiting"


# --- display safety --------------------------------------------------------------------------------------------------


def test_hostile_server_text_reaches_the_terminal_escaped_and_markup_stays_literal(terms) -> None:
    term = terms("call", "trap", "-s", stdio_server("hostile"))
    term.child.expect_exact("Message ")
    term.child.expect_exact("2) b")
    term.answer(FIELD, "b")
    term.answer(CONFIRM, "y")
    term.child.expect_exact("result ")
    assert term.finish() == 0
    seen = term.seen
    for raw in ("\x1b]8;;", "\u202e", "\u202c", "\x9b", "\x1b[31m", "\x07"):
        assert raw not in seen, f"{raw!r} reached the terminal"
    for escaped in (r"\x1b[31mRED", r"\x1b]8;;http://evil.example\x07", r"\u202eevil\u202c", r"\x9b2J"):
        # The message, the title, the first choice, the summary and the result: each shown, each escaped.
        assert seen.count(escaped) >= 5, escaped
    assert seen.count("[bold red]markup[/bold red]") >= 5
    result_line = seen[seen.rindex("result ") :]
    assert r"result \x1b[31mRED\x1b[0m" in result_line


@pytest.mark.parametrize(
    ("notes", "shown"),
    [
        ([(1, None, "step")], "step"),  # no total: optional in MCP
        ([(-5, 0, "start"), (3, -1, "odd")], "odd"),  # a zero and a negative total, a negative count
        ([(2, 4, "x" * 100_000)], "…"),  # a message cut, not a screenful
    ],
)
def test_server_progress_of_any_shape_draws_and_never_fails_the_flow(
    notes: list[tuple[float, float | None, str]], shown: str
) -> None:
    """Before, a notification without a total ended the call with 'Internal error' (the count's format)."""
    from rich.console import Console

    from mcpcli.terminal.output import PROGRESS_TEXT_MAX, Output

    screen = io.StringIO()
    out = Output(err_console=Console(file=screen, force_terminal=True, width=100))
    for progress, total, message in notes:
        out.progress(progress, total, message)
    out.stop_progress()
    text = screen.getvalue()
    assert shown in text
    assert max(len(line) for line in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).split("\r")) < PROGRESS_TEXT_MAX + 200
