"""Every hostile vector through every output path: nothing the server chose reaches a terminal raw.

The server is ``tests/servers.py hostile`` (a real SDK server over stdio): its name, instructions, tool, prompt
and resource names and descriptions, input-request keys, messages, field titles, descriptions and enum labels,
URL, progress and log messages, errors and results carry ``VECTORS`` — CSI and OSC sequences (a complete OSC-8
hyperlink, a window title), C1 bytes, C0 bytes, DEL and bidi controls. Each output path is driven for real: pipes
(tables, the exit-3 text and document, ``-v``, ``--log-level``, errors, ``sessions list|show``, ``sessions show
--trace``), a pseudo-terminal (inline prompts, URL consent, the progress bar), and the full-screen app (what its
compositor would write to the terminal).
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest
from conftest import ROOT, Result, run_process, stdio_server
from servers import HIDDEN_HOST_URL, KEY, LINK_KEY

pytestmark = pytest.mark.slow

HOSTILE = stdio_server("hostile")

_RAW = re.compile(
    "["
    + "".join(re.escape(chr(c)) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F, *range(0x80, 0xA0)))
    + "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    + "]"
)
"""What must never reach the output raw: C0 (but tab, newline and carriage return), DEL, C1, bidi controls."""

_OURS = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>78]|\x1b\([AB0]")
"""The terminal codes mcpcli's own rendering uses (Rich and Textual: CSI styles and cursor moves, keypad modes)."""

SERVER_SEQUENCES = ("\x1b[2J", "\x1b[31;5m", "\x1b]", "\x1b\\", "\x07", "\x9b", "\x9d", "\x9c", "\x85", "\u202e")
"""The server's own sequences, looked for verbatim (mcpcli never writes any of them)."""


def assert_clean(text: str, where: str, *, terminal: bool = False) -> None:
    """No server control sequence, raw control byte or bidi control in ``text``.

    On a pipe mcpcli writes no escape at all; on a terminal only its own CSI codes, which are removed before
    looking (after checking the server's CSI sequences are not among them).
    """
    for sequence in SERVER_SEQUENCES:
        assert sequence not in text, f"{where}: {sequence!r} reached the output"
    rest = _OURS.sub("", text) if terminal else text
    if terminal:
        rest = rest.replace("\r", "")
    found = sorted({f"U+{ord(ch):04X}" for ch in _RAW.findall(rest)})
    assert not found, f"{where}: raw {', '.join(found)} in the output"


def mcpcli(*args: str) -> Result:
    """One ``mcpcli`` process on pipes, with lines wide enough that no table cell wraps."""
    return run_process(*args, env={"COLUMNS": "4000"})


def hostile(*args: str) -> Result:
    """One ``mcpcli`` process on pipes against the hostile server."""
    return mcpcli(*args, "-s", HOSTILE)


# --- pipes -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["tools", "prompts", "resources", "info"])
def test_discovery_tables_show_every_server_string_escaped(command: str) -> None:
    r = hostile(command)
    assert r.code == 0, r.err
    assert_clean(r.out + r.err, command)
    assert r"\x1b]8;;https://evil.example/" in r.out  # shown, as visible escapes
    if command != "info":
        assert r"\u202edcba" in r.out


def test_a_flow_through_pipes_shows_keys_messages_logs_progress_and_trace_escaped(tmp_path: Path) -> None:
    waiting = hostile("-v", "--log-level", "debug", "call", "gauntlet", "--no-input")
    assert waiting.code == 3, waiting.err
    assert_clean(waiting.out + waiting.err, "exit 3 with -v and --log-level")
    err = waiting.err
    assert r"pick\x1b]8;;https://evil.example/\x1b\click me" in err  # the key, in the exit-3 text and -v lines
    assert "the server asks pick" in err  # -v's round line names the (escaped) keys
    assert "[server warning] logger" in err and "log \\x1b[2J" in err  # --log-level
    assert "notifications/progress 1/2 progress \\x1b[2J" in err  # the -v line of the progress notification
    assert "https://exa\\u200bmple.com\\u202e/login" in err  # the host's invisible characters, escaped
    assert "Answer with: mcpcli resume" in err

    document = hostile("call", "gauntlet", "--no-input", "--json")
    assert document.code == 3
    assert_clean(document.out, "the exit-3 document")
    doc = document.json()
    assert set(doc["pending"]) == {KEY, LINK_KEY}  # exact as data once parsed
    assert doc["pending"][LINK_KEY]["params"]["url"] == HIDDEN_HOST_URL
    assert f"{KEY}.choice" in doc["answers_template"]

    listed = mcpcli("sessions", "list")
    inbox = mcpcli("sessions", "list", "--waiting")
    assert listed.code == inbox.code == 0
    assert_clean(listed.out + listed.err, "sessions list")
    assert_clean(inbox.out + inbox.err, "sessions list --waiting")
    assert "pick\\x1b]8;;https://evil.example/" in inbox.out  # the waiting key, escaped

    ids = [s["id"] for s in mcpcli("sessions", "list", "--json").json()]
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({f"{KEY}.choice": "a", LINK_KEY: {"action": "accept"}}))
    done = mcpcli("resume", ids[0], "--answers", str(answers), "-v", "--log-level", "debug", "-s", HOSTILE)
    assert done.code == 0, done.err
    assert_clean(done.out + done.err, "resume with -v")
    assert done.out.startswith("result \\x1b[2J\\x1b[31;5mred\\x1b]8;;")

    show = mcpcli("sessions", "show", ids[0])
    trace = mcpcli("sessions", "show", ids[0], "--trace")
    assert show.code == trace.code == 0
    assert_clean(show.out + show.err, "sessions show")
    assert_clean(trace.out + trace.err, "sessions show --trace")
    assert "visit https://exa\\u200bmple.com\\u202e/login" in show.out
    assert "notifications/message warning logger\\x1b[2J" in trace.out
    assert "round 1 (session" in trace.out and ": pick\\x1b]8;;" in trace.out


def test_errors_from_the_server_are_one_escaped_line() -> None:
    denied = hostile("call", "denied")
    assert denied.code == 4
    assert_clean(denied.out + denied.err, "a JSON-RPC error")
    assert "denied \\x1b[2J" in denied.err
    assert "Traceback" not in denied.err


def test_a_link_whose_host_the_idna_codec_refuses_is_warned_about_not_a_crash() -> None:
    r = hostile("call", "gauntlet", "--answer", "choice=b")
    assert r.code == 3, r.err  # the link still needs someone; nothing crashed on it
    assert "Internal error" not in r.err and "UnicodeError" not in r.err
    assert_clean(r.out + r.err, "a hidden-character host")


# --- a real terminal -------------------------------------------------------------------------------------------------


def test_inline_prompts_url_consent_and_progress_on_a_terminal_show_nothing_raw() -> None:
    log = io.StringIO()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "mcpcli", "-v", "--log-level", "warning", "call", "gauntlet", "-s", HOSTILE],
        env={**os.environ, "TERM": "xterm", "COLUMNS": "120"},
        cwd=str(ROOT),
        dimensions=(40, 120),
        encoding="utf-8",
        timeout=30,
    )
    child.logfile_read = log
    try:
        child.expect_exact("2) plain b")
        child.expect_exact("› ")
        child.sendline("1")
        child.expect_exact("Send? [Y/n/decline/cancel] ")
        child.sendline("y")
        child.expect_exact("[c]ancel: ")
        child.sendline("a")  # done already: nothing is opened
        child.expect_exact("result ")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, log.getvalue()
    seen = log.getvalue()
    assert_clean(seen, "the terminal", terminal=True)
    for shown in ("Message \\x1b[2J", "Title \\x1b[2J", "Description \\x1b[2J", "Label \\x1b[2J", "Visit \\x1b[2J"):
        assert shown in seen, shown
    assert "exa\\u200bmple.com\\u202e" in seen  # the host, with what hides in it escaped
    assert "invisible or direction-changing characters" in seen  # and a warning about it


# --- the full-screen app ---------------------------------------------------------------------------------------------


def _screen_bytes(app: Any) -> str:
    """What the app would write to the terminal for the current screen (its compositor's full update)."""
    update = app.screen._compositor.render_full_update()
    text: str = update.render_segments(app.console)
    return text


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_full_screen_app_shows_the_round_and_the_result_with_nothing_raw() -> None:
    from textual.widgets import RadioSet
    from tuikit import SIZE, finished, options, screen_of, until

    from mcpcli.commands.jobs import CallJob
    from mcpcli.commands.runtime import Globals, Runtime
    from mcpcli.tui.app import build_app
    from mcpcli.tui.round import RoundScreen
    from mcpcli.tui.url import UrlConsent

    rt = Runtime(Globals(server=HOSTILE, log_level="warning", verbose=True))
    app = build_app(rt, options(), job=CallJob("tools/call", "gauntlet", arguments={}), open_url=[].append, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        await until(pilot, lambda: len(form.panels()) == 2, "both panels")
        assert_clean(_screen_bytes(app), "the round screen", terminal=True)
        titles = [str(panel.border_title) for panel in form.panels()]
        assert all("\x1b" not in title and "\\x1b" in title for title in titles), titles
        form.query_one("#req1-review").press()
        await screen_of(pilot, UrlConsent)
        assert_clean(_screen_bytes(app), "the URL consent", terminal=True)
        await pilot.press("escape")
        await screen_of(pilot, RoundScreen)
        assert form.query(RadioSet)

    answered = build_app(
        rt,
        options(answer=[f"{KEY}.choice=a"], accept=[LINK_KEY]),
        job=CallJob("tools/call", "gauntlet", arguments={}),
        open_url=[].append,
        blink=False,
    )
    async with answered.run_test(size=SIZE) as pilot:
        screen = await finished(pilot)
        await until(pilot, lambda: bool(answered._notifications), "the log message's notification")
        assert_clean(_screen_bytes(answered), "the result and notifications", terminal=True)
        assert "Result" in str(screen.query_one(".result").border_title)
