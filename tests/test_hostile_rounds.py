"""Hostile servers inside the multi-round loop (tests/hostile.py's round KINDs) against a real ``mcpcli``.

Each misbehaviour is met by every way of answering — ``--no-input``, presets, ``--json``, a pseudo-terminal —
and by ``sessions show`` and ``resume`` afterwards: one clear line and a documented exit code, never a traceback,
nothing the server chose reaching the terminal raw, no stored session lost.
"""

from __future__ import annotations

import io
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest
from conftest import PY, ROOT, Result, run_process
from test_hostile import assert_clean

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "hostile.py"


def server(kind: str, size: int = 20) -> str:
    return shlex.join([PY, str(SCRIPT), kind, "--size", str(size)])


def mcpcli(*args: str) -> Result:
    return run_process(*args, env={"COLUMNS": "4000"})


def call(kind: str, *args: str, size: int = 20) -> Result:
    """``mcpcli call work ARGS`` against the hostile ``kind``; the output must be clean and traceback-free."""
    r = mcpcli("call", "work", *args, "-s", server(kind, size))
    assert_clean(r.out + r.err, f"{kind} {args}")
    assert "Traceback" not in r.err and "Internal error" not in r.err, r.err
    return r


def session_ids() -> list[str]:
    return [s["id"] for s in mcpcli("sessions", "list", "--json").json()]


def on_a_terminal(kind: str, *args: str, size: int = 20) -> Any:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "mcpcli", "call", "work", *args, "-s", server(kind, size)],
        env={**os.environ, "TERM": "xterm", "COLUMNS": "120"},
        cwd=str(ROOT),
        dimensions=(40, 120),
        encoding="utf-8",
        timeout=30,
    )
    child.logfile_read = io.StringIO()
    return child


# --- results that are not results --------------------------------------------------------------------------------


def test_a_result_of_a_type_nobody_knows_is_a_protocol_error_not_a_result() -> None:
    r = call("weird_type")
    assert r.code == 4, r.err
    assert "The server sent a result of unknown type 'weird'" in r.err
    assert r.out == ""  # nothing printed as if it were the tool's answer


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("unknown_method", "inputRequests.weird.method: 'telepathy/read"),
        ("malformed_request", "inputRequests.a.params: Input should be a valid dictionary"),
        ("number_state", "requestState: Input should be a valid string"),
        ("empty_round", "requires at least one of input_requests or request_state"),
        ("unknown_content", "content.0.type: 'hologram' is not one of 'text', 'image'"),
    ],
)
def test_a_malformed_round_or_result_says_what_is_wrong_in_one_line(kind: str, said: str) -> None:
    r = call(kind, "--no-input")
    assert r.code == 4, r.err
    assert said in r.err, r.err
    assert "Field required" not in r.err  # the complaint of a result arm the server never meant
    assert len(r.err.strip().splitlines()) == 1, r.err
    document = call(kind, "--no-input", "--json")
    assert document.code == 4
    assert said.split(":")[0] in document.json()["error"]["message"]


# --- a terminal ------------------------------------------------------------------------------------------------------


def test_ctrl_d_at_a_url_consent_stops_with_exit_5_and_keeps_the_session() -> None:
    child = on_a_terminal("bad_urls")
    try:
        child.expect_exact("[c]ancel: ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    seen = child.logfile_read.getvalue()
    assert child.exitstatus == 5, seen
    assert "Stopped at the prompt; the session is kept." in seen
    assert "EOFError" not in seen and "Internal error" not in seen
    assert "Refused: javascript scheme" in seen  # the links that are no web page were declined, not offered
    assert_clean(seen, "the URL consent", terminal=True)
    (sid,) = session_ids()
    assert f"mcpcli resume {sid}" in seen
