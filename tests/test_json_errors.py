"""``--json`` errors as data (the README's errors as data): a hint in every error document, the session it is about,
and — where stdout is JSON Lines (``watch --json``, ``batch``) — the error document on one line like the rest."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, stdio_server

WATCH_SERVERS = Path(__file__).resolve().parent / "watch_servers.py"


def lines_of(out: str) -> list[dict[str, Any]]:
    """stdout as JSON Lines: every line one whole document (fails on a document spread over lines)."""
    return [json.loads(line) for line in out.splitlines()]


def test_a_watch_that_ends_in_an_error_prints_it_as_one_json_line_with_a_hint(process: Any) -> None:
    ticker = shlex.join([PY, str(WATCH_SERVERS), "ticker", "--die-after", "1"])
    r = process("watch", "note://a", "--json", "--no-reconnect", "-s", ticker)
    assert r.code == 4, r.err
    *events, last = lines_of(r.out)
    assert [e["uri"] for e in events] == ["note://a"]
    assert last["error"]["exit_code"] == 4 and isinstance(last["error"]["hint"], str) and last["error"]["hint"]


def test_a_watch_refused_by_its_options_prints_one_json_line(process: Any) -> None:
    r = process("watch", "--json", "--count", "0")
    assert r.code == 2
    (doc,) = lines_of(r.out)
    assert doc["error"]["exit_code"] == 2 and doc["error"]["hint"] == "See: mcpcli watch --help"


def test_a_batch_refused_before_it_starts_prints_one_json_line(process: Any) -> None:
    r = process("batch", "-s", stdio_server("rounds"), stdin='{"tool": 3}\n')
    assert r.code == 2
    (doc,) = lines_of(r.out)
    assert "line 1" in doc["error"]["message"] and doc["error"]["hint"]


def test_a_batch_option_click_refuses_is_a_json_line_too_as_batch_stdout_always_is(process: Any) -> None:
    r = process("batch", "--jobs", "0", stdin="")
    assert r.code == 2
    (doc,) = lines_of(r.out)
    assert doc["error"]["exit_code"] == 2 and doc["error"]["hint"] == "See: mcpcli batch --help"


@pytest.mark.parametrize(
    "args",
    [
        ("sessions", "import", "/nonexistent/bundle.json"),  # a failure with no hint of its own
        ("sessions", "show", "zzzz"),
        ("call", "provison", "-s", "demo"),
    ],
)
def test_every_json_error_has_a_hint(cli: Any, args: tuple[str, ...]) -> None:
    r = cli(*args, "--json")
    assert r.code != 0
    error = json.loads(r.out)["error"]
    assert set(error) >= {"message", "hint", "exit_code"}
    assert isinstance(error["hint"], str) and error["hint"].strip(), error


def test_a_json_error_about_a_session_names_it(cli: Any) -> None:
    """A session another driver holds: the error tells what to do about it, and its document says which one."""
    from test_sessions_cmd import store, waiting_provision

    session_id = waiting_provision(cli)
    store().claim(session_id, host="laptop-b", pid=4242, ttl=600)
    r = cli("resume", session_id, "--json", "--no-input")
    assert r.code == 6, r.err
    error = json.loads(r.out)["error"]
    assert error["session_id"] == session_id and session_id in error["hint"]
