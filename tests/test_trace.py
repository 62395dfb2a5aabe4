"""Traces (``--trace``, ``-v``, ``sessions show --trace``), their redaction, the store's schema 3, and the
server's log messages (``--log-level``) — through the CLI against real servers, and the redaction unit by unit."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, stdio_server
from servers import EVIL

from mcpcli.settings.config import Paths
from mcpcli.state.bundle import checksum
from mcpcli.state.store import SessionRecord, SqliteStore, Store, open_store
from mcpcli.state.store.base import TRACE_MAX_LINES, TRACE_TRUNCATED
from mcpcli.state.store.sql import SCHEMA_VERSION
from mcpcli.state.trace import (
    BUFFER_MAX_LINES,
    STORED_MESSAGE_MAX,
    Tracer,
    TraceSinks,
    open_trace_file,
    redact,
    state_digest,
)
from mcpcli.terminal.trace_lines import summarize

PASSPHRASE = "correct horse battery"
ONBOARD = [
    *("-A", "display_name=Data team", "-A", "email=data@example.com", "-A", "start=2026-12-01"),
    *("-A", "seats=3", "-A", "region=eu-west-1", "-A", "tier=g", "-A", "languages=python"),
    *("-A", f"passphrase={PASSPHRASE}", "-A", "confirm=true"),
]


def store() -> Store:
    return open_store(None, Paths.from_env().store_file)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def form(field: str, title: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {field: {"type": "string", "title": title}}, "required": [field]}
    return {"method": "elicitation/create", "params": {"mode": "form", "message": "?", "requestedSchema": schema}}


# --- redaction, unit by unit -----------------------------------------------------------------------------------------


def test_redaction_hides_state_secret_answers_registered_secrets_and_credential_headers() -> None:
    state = '{"answers": {"creds": "hunter2"}}'
    message = {
        "jsonrpc": "2.0",
        "id": "mcpcli-1",
        "method": "tools/call",
        "params": {
            "name": "unlock",
            "arguments": {"note": "my key is tok-0123456789 ok"},
            "inputResponses": {
                "creds": {"action": "accept", "content": {"user": "ann", "code": "hunter2"}},
                "unseen": {"action": "accept", "content": {"password": "swordfish", "colour": "blue"}},
            },
            "requestState": state,
            "_meta": {"Authorization": "Bearer xyz", "trace": {"request_state": "inner"}},
        },
    }
    original = json.dumps(message)
    shown = redact(message, secrets={"tok-0123456789", "ab"}, answer_secrets={"creds": {"code"}})
    params = shown["params"]
    digest = hashlib.sha256(state.encode()).hexdigest()[:16]
    assert params["requestState"] == {"redacted": "request_state", "length": len(state), "sha256": digest}
    assert params["inputResponses"]["creds"]["content"] == {"user": "ann", "code": "[secret]"}
    # A question this flow never saw: the field's name decides.
    assert params["inputResponses"]["unseen"]["content"] == {"password": "[secret]", "colour": "blue"}
    assert params["arguments"]["note"] == "[redacted]"
    assert params["_meta"]["Authorization"] == "[redacted]"
    assert params["_meta"]["trace"]["request_state"]["redacted"] == "request_state"
    assert params["name"] == "unlock"  # a registered secret too short to mean anything ("ab") hides nothing
    assert json.dumps(message) == original  # the message itself is left as it was sent


def test_a_message_with_nothing_to_hide_is_traced_without_being_copied() -> None:
    """The common case — a tool listing, a result — is read, not rebuilt: the same objects come back, and where
    one part changes only that part (and the dicts above it) is new."""
    listing = {"tools": [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(50)]}
    message = {"jsonrpc": "2.0", "id": 2, "result": listing}
    assert redact(message, secrets={"not-in-it-at-all"}) is message
    retry = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x", "requestState": "s"}}
    retry["params"]["arguments"] = listing
    shown = redact(retry)
    assert shown is not retry and shown["params"]["requestState"]["redacted"] == "request_state"
    assert shown["params"]["arguments"] is listing  # untouched parts are shared, not copied
    assert retry["params"]["requestState"] == "s"


def test_the_answer_to_a_secret_back_channel_question_is_masked() -> None:
    reply = {"jsonrpc": "2.0", "id": 3, "result": {"action": "accept", "content": {"pin": "0000-1111", "name": "x"}}}
    assert redact(reply, reply_secrets={"pin"})["result"]["content"] == {"pin": "[secret]", "name": "x"}
    assert redact(reply)["result"]["content"]["pin"] == "0000-1111"  # nothing said it was secret


def test_a_question_seen_in_an_earlier_run_teaches_which_answers_are_secret(tmp_path: Path) -> None:
    """A secret by its title, not its name: only ``learn`` (a resumed session's stored round) can tell."""
    path = tmp_path / "t.ndjson"
    sinks = TraceSinks(file=open_trace_file(path))
    retry = {
        "jsonrpc": "2.0",
        "id": "mcpcli-2",
        "method": "tools/call",
        "params": {
            "name": "x",
            "inputResponses": {"vault": {"action": "accept", "content": {"code": "open-sesame-42"}}},
        },
    }
    Tracer(sinks).record_message("send", retry)
    learned = Tracer(sinks)
    learned.learn({"vault": form("code", "Vault passphrase")})
    learned.record_message("send", retry)
    # ...and the server's echo of the secret later in the run is hidden too.
    learned.record_message(
        "recv", {"jsonrpc": "2.0", "id": "mcpcli-2", "result": {"text": "opened with open-sesame-42"}}
    )
    sinks.close()
    first, second, echo = lines_of(path)
    assert first["message"]["params"]["inputResponses"]["vault"]["content"]["code"] == "open-sesame-42"
    assert second["message"]["params"]["inputResponses"]["vault"]["content"]["code"] == "[secret]"
    assert echo["message"]["result"]["text"] == "[redacted]"


def test_a_registered_token_never_reaches_the_file_and_the_file_is_private(tmp_path: Path) -> None:
    given = tmp_path / "given"
    given.mkdir(mode=0o755)
    given.chmod(0o755)
    path = given / "new" / "deeper" / "trace.ndjson"
    sinks = TraceSinks(file=open_trace_file(path))
    tracer = Tracer(sinks)
    token = "ya29.a0AfH6SMBx-registered-token"
    tracer.register_secret(token)
    tracer.record_message(
        "recv", {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": f"t={token}"}}
    )
    tracer.record_message("send", {"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"_meta": {"k": token}}})
    sinks.close()
    raw = path.read_bytes()
    assert token.encode() not in raw and raw.count(b'"[redacted]"') == 2
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((given / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE((given / "new" / "deeper").stat().st_mode) == 0o700
    assert stat.S_IMODE(given.stat().st_mode) == 0o755  # the user's own directory is left as it was


def test_a_session_keeps_big_messages_cut_and_its_lines_bounded() -> None:
    tracer = Tracer(record=True)
    huge = {"jsonrpc": "2.0", "id": 1, "result": {"text": "x" * (STORED_MESSAGE_MAX + 10)}}
    tracer.record_message("recv", huge)
    (line,) = tracer.drain()
    entry = json.loads(line)
    assert entry["message"]["truncated"] is True and entry["bytes"] > STORED_MESSAGE_MAX
    assert len(line) < 8 * 1024
    assert "[cut]" in summarize(entry)
    for n in range(BUFFER_MAX_LINES + 5):
        tracer.record_message("recv", {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": n}})
    kept = tracer.drain()
    assert len(kept) == BUFFER_MAX_LINES + 1
    dropped = json.loads(kept[-1])
    assert (dropped["event"], dropped["lines"]) == ("dropped", 5)
    assert tracer.drain() == []


def test_lines_for_the_session_alone_are_made_when_the_loop_is_idle_and_a_last_write_takes_them_all() -> None:
    import anyio
    import mcp_types as t
    from mcp.shared.message import SessionMessage

    question = t.JSONRPCResponse(jsonrpc="2.0", id="a", result={"resultType": "input_required", "requestState": "s"})
    retry = t.JSONRPCRequest(jsonrpc="2.0", id="b", method="tools/call", params={"name": "x", "requestState": "s"})

    async def main() -> None:
        tracer = Tracer(record=True)
        tracer.event("start")
        tracer.message("recv", SessionMessage(message=question))
        assert tracer.drain(everything=False) == []  # nothing made yet: a round's write does not wait for it
        await anyio.sleep(0.01)  # the loop is idle: the lines are made, in order
        made = [json.loads(line) for line in tracer.drain(everything=False)]
        assert [e.get("event") or e["kind"] for e in made] == ["start", "response"]
        tracer.message("send", SessionMessage(message=retry))
        tracer.event("result", exit_code=0)
        last = [json.loads(line) for line in tracer.drain()]  # a last write: everything, made now
        assert [e.get("event") or e["kind"] for e in last] == ["request", "result"]
        assert last[0]["round"] == 1 and last[0]["message"]["params"]["requestState"]["redacted"] == "request_state"

    anyio.run(main)


# --- traces of real flows --------------------------------------------------------------------------------------------


def _answered_pairs(entries: list[dict[str, Any]]) -> None:
    """Every request has its response in the other direction, and every response its request."""
    requests = {(e["dir"], e["id"]) for e in entries if e.get("kind") == "request"}
    responses = {(e["dir"], e["id"]) for e in entries if e.get("kind") in ("response", "error")}
    flip = {"send": "recv", "recv": "send"}
    assert {(flip[d], i) for d, i in requests} == responses


@pytest.mark.parametrize("json_out", [False, True])
def test_trace_dash_writes_the_trace_to_stdout_and_the_results_to_stderr_and_no_file_named_dash(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, json_out: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    r = cli("tools", *(["--json"] if json_out else []), "--trace", "-")
    assert r.code == 0, r.err
    assert not (tmp_path / "-").exists()
    entries = [json.loads(line) for line in r.out.splitlines()]  # stdout is NDJSON, every line a trace line
    sent = [e["method"] for e in entries if e.get("dir") == "send" and e.get("kind") == "request"]
    assert sent[-1] == "tools/list"
    assert "provision" in r.err  # the result, on stderr


def test_trace_dash_with_the_full_screen_app_on_a_terminal_is_one_usage_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pexpect

    child = pexpect.spawn(PY, ["-m", "mcpcli", "call", "provision", "--tui", "--trace", "-"], cwd=str(tmp_path),
                          env={**os.environ, "MCPCLI_WORKER": "0"}, encoding="utf-8", timeout=60)  # fmt: skip
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2, child.before
    assert "--trace - writes to stdout, a terminal the full-screen app draws on" in (child.before or "")
    assert "\x1b[?1049h" not in (child.before or "")  # the app never took the screen
    assert not (tmp_path / "-").exists()


def test_a_trace_file_has_every_message_both_ways_and_each_round_and_no_secret(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "traces" / "onboard.ndjson"
    r = cli("call", "onboard", "-a", "team=data", *ONBOARD, "--trace", str(path))
    assert r.code == 0, r.err
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    entries = lines_of(path)
    messages = [e for e in entries if "dir" in e]
    _answered_pairs(messages)
    sent = [e["method"] for e in messages if e["dir"] == "send" and e["kind"] == "request"]
    assert sent == ["server/discover", "tools/list", "tools/call", "tools/call", "tools/call", "tools/call"]
    assert all(e["ms"] >= 0 for e in messages if e["kind"] == "response")
    rounds = [e for e in entries if e.get("event") == "round"]
    (session,) = store().list()
    assert [(e["round"], e["requests"], e["session"]) for e in rounds] == [
        (1, ["details"], session.id),
        (2, ["confirm"], session.id),
        (3, ["roots"], session.id),
    ]
    assert [e["event"] for e in entries if "event" in e] == ["start", "round", "round", "round", "result"]
    legs = [e["round"] for e in messages if e.get("method") == "tools/call"]
    assert legs == [1, 1, 2, 2, 3, 3, 4, 4]  # each leg's request and response, numbered by the loop
    raw = path.read_bytes()
    assert PASSPHRASE.encode() not in raw
    assert b'"passphrase":"[secret]"' in raw
    for stored in store().rounds(session.id):
        assert stored.request_state is not None
        assert stored.request_state.encode() not in raw  # the sealed state the server sent, byte for byte
        assert state_digest(stored.request_state)["sha256"].encode() in raw


def test_a_secret_answered_over_the_legacy_back_channel_is_masked(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "legacy.ndjson"
    r = cli("call", "onboard", "-a", "team=data", *ONBOARD, "--protocol", "legacy", "--trace", str(path))
    assert r.code == 0, r.err
    entries = lines_of(path)
    _answered_pairs([e for e in entries if "dir" in e])
    asked = [e["method"] for e in entries if e.get("dir") == "recv" and e.get("kind") == "request"]
    assert asked == ["elicitation/create", "elicitation/create", "roots/list"]
    raw = path.read_bytes()
    assert PASSPHRASE.encode() not in raw and b'"passphrase":"[secret]"' in raw


@pytest.mark.parametrize("how", ["header", "bearer"])
def test_a_token_sent_to_the_server_is_redacted_wherever_it_shows(
    cli: Any, tmp_path: Path, http_demo: Any, how: str
) -> None:
    """The token travels in HTTP headers; a server (or the user) may still put it in a message body."""
    server = http_demo()
    token = "sk-live-4f3c2b1a0"
    path = tmp_path / "echo.ndjson"
    given = ["-H", f"X-Api-Key: {token}"] if how == "header" else ["--bearer", token]
    r = cli("call", "echo", "-a", f"text=key {token}", "-s", server.url, *given, "--trace", str(path))
    assert r.code == 0, r.err
    assert r.out == f"key {token}\n"  # the call itself carried it
    raw = path.read_bytes()
    assert token.encode() not in raw
    assert raw.count(b'"[redacted]"') >= 2  # the argument sent, the text echoed


def test_sessions_show_trace_prints_what_the_flow_recorded(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "provision.ndjson"
    r = cli("call", "provision", "-a", "name=orders", "-A", "region=eu-west-1", "--trace", str(path))
    assert r.code == 0, r.err
    (session,) = store().list()
    doc = cli("sessions", "show", session.id[:6], "--trace", "--json")
    assert doc.code == 0, doc.err
    # the session kept the whole run, exactly as the file has it; each entry with its checksum (for replay)
    assert [{k: v for k, v in e.items() if k != "sum"} for e in doc.json()] == lines_of(path)
    assert all(len(e["sum"]) == 32 for e in doc.json())
    plain = cli("sessions", "show", session.id, "--trace")
    assert plain.code == 0, plain.err
    lines = plain.out.splitlines()
    assert lines[0].startswith("+0.0ms → server/discover #1")
    assert any(
        line.startswith("+") and "→ tools/call provision #mcpcli-" in line and "(round 2)" in line for line in lines
    )
    assert any("input_required (1 request) (round 1)" in line for line in lines)
    assert any(f"· round 1 (session {session.id}, attempt 1): region" in line for line in lines)
    assert lines[-1].endswith(" ms") and "· result: exit 0" in lines[-1]


def test_a_session_without_a_trace_file_records_every_line_in_order_as_the_file_would(cli: Any) -> None:
    # Without --trace or -v, lines are made when the event loop is idle and stored with a later write: the
    # session still holds every message and event, each in its place, numbered by its round, nothing secret.
    r = cli("call", "onboard", "-a", "team=data", *ONBOARD)
    assert r.code == 0, r.err
    (session,) = store().list()
    entries = [json.loads(line) for line in store().trace_lines(session.id)]
    assert [e["t"] for e in entries] == sorted(e["t"] for e in entries)
    messages = [e for e in entries if "dir" in e]
    _answered_pairs(messages)
    sent = [e["method"] for e in messages if e["dir"] == "send" and e["kind"] == "request"]
    assert sent == ["server/discover", "tools/list", "tools/call", "tools/call", "tools/call", "tools/call"]
    assert [e["event"] for e in entries if "event" in e] == ["start", "round", "round", "round", "result"]
    assert [e["round"] for e in messages if e.get("method") == "tools/call"] == [1, 1, 2, 2, 3, 3, 4, 4]
    raw = "\n".join(store().trace_lines(session.id))
    assert PASSPHRASE not in raw and '"passphrase":"[secret]"' in raw


def test_every_flow_records_its_trace_even_without_the_option_and_shows_it_sanitized(cli: Any) -> None:
    r = cli("call", "trap", "-s", stdio_server("hostile"), "-A", "choice=b")
    assert r.code == 0, r.err
    (session,) = store().list()
    stored = store().trace_lines(session.id)
    assert any('"tools/call"' in line for line in stored)
    shown = cli("sessions", "show", session.id, "--trace")
    assert shown.code == 0, shown.err
    assert "\x1b" not in shown.out and "\u202e" not in shown.out and "\x9b" not in shown.out
    assert "result #" in shown.out
    raw = cli("sessions", "show", session.id, "--trace", "--json")
    assert "\u202e" not in raw.out and json.loads(raw.out)[0]["method"] == "server/discover"


def test_sessions_show_trace_imports_neither_the_sdk_nor_textual(home: Path) -> None:
    from test_imports import SDK, UI, _imported, _matching, _run_main

    session = _session()
    line = json.dumps({"t": 0.1, "at": "2026-01-01T00:00:00+00:00", "dir": "send", "kind": "request", "id": 1})
    with closing(open_store(None, Paths.from_env({"MCPCLI_HOME": str(home)}).store_file)) as s:
        s.add_round(session.id, attempt=1, requests={}, request_state=None, new_session=session, trace=[line])
    modules = _imported(_run_main("sessions", "show", session.id, "--trace"), home)
    assert "mcpcli.terminal.trace_lines" in modules  # the command did format the line
    assert _matching(modules, SDK + UI) == []


def test_verbose_prints_one_line_per_message_on_stderr(cli: Any) -> None:
    r = cli("call", "provision", "-a", "name=orders", "-A", "region=eu-west-1", "-v")
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in eu-west-1.\n"
    lines = r.err.splitlines()
    calls = [line for line in lines if line.startswith("→ tools/call provision #mcpcli-")]
    assert len(calls) == 2 and all(line.endswith(" B") for line in calls)
    results = [line for line in lines if line.startswith("← result #mcpcli-")]
    assert "input_required (1 request)" in results[0] and results[0].endswith(" ms")
    quiet = cli("call", "provision", "-a", "name=more", "-A", "region=eu-west-1")
    assert "→" not in quiet.err and "←" not in quiet.err


def test_a_trace_file_that_cannot_be_written_is_a_usage_error(cli: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    r = cli("call", "echo", "-a", "text=hi", "--trace", str(blocker / "trace.ndjson"))
    assert r.code == 2
    assert "Cannot write the trace file" in r.err


# --- the server's log messages ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
def test_server_logs_are_printed_sanitized_only_when_asked_for(cli: Any, protocol: str) -> None:
    target = stdio_server("chatty")
    r = cli("call", "work", "-s", target, "--protocol", protocol, "--log-level", "WARNING")
    assert r.code == 0, r.err
    # Pre-2026, the opt-in is logging/setLevel (the server says it arrived); on 2026-07-28, each request's _meta.
    assert r.out == f"worked (setLevel: {'warning' if protocol == 'legacy' else 'none'})\n"
    logs = [line for line in r.err.splitlines() if line.startswith("[server ")]
    levels = [line.split("]")[0].removeprefix("[server ") for line in logs]
    assert levels == ["warning", "error", "critical", "alert", "emergency"]
    assert logs[0].startswith("[server warning] worker: disk almost full \\x1b[31mRED")
    assert "\x1b" not in r.err and "\u202e" not in r.err and "\x9b" not in r.err
    assert "[bold red]markup[/bold red]" in logs[0]  # shown as written, never as markup
    silent = cli("call", "work", "-s", target, "--protocol", protocol)
    assert silent.code == 0, silent.err
    assert "[server " not in silent.err and EVIL not in silent.err


def test_an_unknown_log_level_is_a_usage_error_naming_the_levels(cli: Any) -> None:
    r = cli("call", "work", "-s", stdio_server("chatty"), "--log-level", "loud")
    assert r.code == 2
    assert "Unknown log level 'loud'" in r.err
    assert "debug, info, notice, warning, error, critical, alert, emergency" in r.err


# --- the store: schema 3 ---------------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:{tmp_path / 'state' / 'sessions.db'}"


@pytest.fixture
def opened(store_url: str, tmp_path: Path) -> Iterator[Store]:
    s = open_store(store_url, tmp_path / "unused.db")
    yield s
    s.close()


def _session(**fields: Any) -> SessionRecord:
    base = {"server": "demo", "method": "tools/call", "name": "x", "arguments": {}, "protocol_version": None}
    return SessionRecord(**(base | {"status": "running"} | fields))


def test_trace_lines_are_written_with_the_flows_own_writes_bounded_and_go_with_the_session(opened: Store) -> None:
    session = _session(identity="oauth https://auth.example / client mcpcli / sha256:ab12")
    opened.add_round(session.id, attempt=1, requests={}, request_state="s", new_session=session, trace=["a", "b"])
    opened.record_answers(session.id, 1, {}, trace=["c"])
    opened.update(session.id, status="waiting", trace=[f"l{n}" for n in range(TRACE_MAX_LINES)])
    assert opened.get(session.id).identity == session.identity
    lines = opened.trace_lines(session.id)
    assert lines[:4] == ["a", "b", "c", "l0"]
    assert len(lines) == TRACE_MAX_LINES + 1 and lines[-1] == TRACE_TRUNCATED
    opened.update(session.id, status="done", trace=["more"])
    assert opened.trace_lines(session.id) == lines  # full: nothing more is kept
    assert opened.delete([session.id]) == 1
    other = _session()
    opened.add_round(other.id, attempt=1, requests={}, request_state=None, new_session=other, trace=["x"])
    assert opened.trace_lines(other.id) == ["x"]
    conn = opened._conn  # type: ignore[attr-defined]
    assert conn.execute("SELECT COUNT(*) AS n FROM trace").fetchone()["n"] == 1  # the deleted one's lines went too


V2_SQLITE = (  # schema 2, as mcpcli created it before traces
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE sessions (id TEXT PRIMARY KEY, server TEXT NOT NULL, method TEXT NOT NULL, name TEXT NOT NULL,
        arguments TEXT NOT NULL, protocol_version TEXT, status TEXT NOT NULL, round INTEGER NOT NULL DEFAULT 0,
        created TEXT NOT NULL, updated TEXT NOT NULL, result TEXT, exit_code INTEGER, error TEXT,
        version INTEGER NOT NULL DEFAULT 0, lease_host TEXT, lease_pid INTEGER, lease_acquired TEXT,
        lease_expires TEXT)""",
    """CREATE TABLE rounds (session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        round_index INTEGER NOT NULL, attempt INTEGER NOT NULL, requests TEXT NOT NULL, request_state TEXT,
        answers TEXT, received TEXT NOT NULL, answered TEXT, PRIMARY KEY (session_id, round_index))""",
    "INSERT INTO schema_version (version) VALUES (2)",
    """INSERT INTO sessions VALUES ('0123456789ab', 'demo', 'tools/call', 'provision', '{"name":"orders"}',
        '2026-07-28', 'waiting', 1, '2026-01-01T12:00:00.000000+00:00', '2026-01-01T12:00:05.000000+00:00',
        NULL, NULL, NULL, 3, NULL, NULL, NULL, NULL)""",
    """INSERT INTO rounds VALUES ('0123456789ab', 1, 1, '{"q":{}}', 'state-1', NULL,
        '2026-01-01T12:00:05.000000+00:00', NULL)""",
)
V2_POSTGRES = (
    "CREATE SCHEMA mcpcli",
    "CREATE TABLE mcpcli.schema_version (version integer NOT NULL)",
    """CREATE TABLE mcpcli.sessions (id text COLLATE "C" PRIMARY KEY, server text NOT NULL, method text NOT NULL,
        name text NOT NULL, arguments text NOT NULL, protocol_version text, status text NOT NULL,
        round integer NOT NULL DEFAULT 0, created timestamptz NOT NULL, updated timestamptz NOT NULL, result text,
        exit_code integer, error text, version integer NOT NULL DEFAULT 0, lease_host text, lease_pid integer,
        lease_acquired timestamptz, lease_expires timestamptz)""",
    """CREATE TABLE mcpcli.rounds (session_id text COLLATE "C" NOT NULL
        REFERENCES mcpcli.sessions (id) ON DELETE CASCADE, round_index integer NOT NULL, attempt integer NOT NULL,
        requests text NOT NULL, request_state bytea, answers text, received timestamptz NOT NULL,
        answered timestamptz, PRIMARY KEY (session_id, round_index))""",
    "INSERT INTO mcpcli.schema_version (version) VALUES (2)",
    """INSERT INTO mcpcli.sessions VALUES ('0123456789ab', 'demo', 'tools/call', 'provision', '{"name":"orders"}',
        '2026-07-28', 'waiting', 1, '2026-01-01T12:00:00+00', '2026-01-01T12:00:05+00', NULL, NULL, NULL, 3,
        NULL, NULL, NULL, NULL)""",
    """INSERT INTO mcpcli.rounds VALUES ('0123456789ab', 1, 1, '{"q":{}}', 'state-1', NULL,
        '2026-01-01T12:00:05+00', NULL)""",
)


def _v2_store(store_url: str) -> None:
    if store_url.startswith("sqlite:"):
        path = Path(store_url.removeprefix("sqlite:"))
        path.parent.mkdir(mode=0o700)
        with closing(sqlite3.connect(path)) as conn, conn:
            for statement in V2_SQLITE:
                conn.execute(statement)
        path.chmod(0o600)
        return
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as conn:
        for statement in V2_POSTGRES:
            conn.execute(statement)


def test_a_schema_2_store_is_migrated_to_the_current_schema_keeping_its_sessions(
    store_url: str, tmp_path: Path
) -> None:
    _v2_store(store_url)
    with closing(open_store(store_url, tmp_path / "unused.db")) as migrated:
        conn = migrated._conn  # type: ignore[attr-defined]
        assert conn.execute("SELECT version FROM schema_version").fetchone()["version"] == SCHEMA_VERSION >= 5
        session = migrated.get("0123")
        assert (session.name, session.version, session.identity, session.connection) == ("provision", 3, None, None)
        assert session.task is None  # schema 6: no task for a session stored before
        assert migrated.rounds(session.id)[0].request_state == "state-1"
        assert migrated.trace_lines(session.id) == []
        migrated.update(session.id, status="done", trace=['{"event":"result"}'])
        assert migrated.trace_lines(session.id) == ['{"event":"result"}']
        assert migrated.delete([session.id]) == 1
        assert conn.execute("SELECT COUNT(*) AS n FROM trace").fetchone()["n"] == 0
    if store_url.startswith("sqlite:"):
        with SqliteStore(tmp_path / "fresh" / "sessions.db") as fresh:
            fresh_path = fresh.path
        for table in ("sessions", "trace"):  # as if created at the current schema
            assert _columns(Path(store_url.removeprefix("sqlite:")), table) == _columns(fresh_path, table)


def _columns(path: Path, table: str) -> list[str]:
    with closing(sqlite3.connect(path)) as conn:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


# --- bundles ---------------------------------------------------------------------------------------------------------


def test_bundles_carry_the_identity_not_the_trace_and_version_1_bundles_still_import(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli("call", "provision", "-a", "name=orders", "--no-input").code == 3
    (session,) = store().list()
    exported = cli("sessions", "export", session.id)
    assert exported.code == 0, exported.err
    doc = exported.json()
    assert doc["version"] == 3 and doc["session"]["identity"] is None
    assert doc["session"]["connection"] == {"protocol": "auto", "kind": "demo", "source": "demo"}
    assert "trace" not in doc and "server/discover" not in exported.out
    old = {k: v for k, v in doc.items() if k != "checksum"} | {"version": 1}
    old["session"] = {  # as mcpcli wrote it before
        k: v for k, v in doc["session"].items() if k not in ("identity", "connection")
    }
    old["checksum"] = checksum(old)
    other = tmp_path / "other-home"
    other.mkdir(mode=0o700)
    monkeypatch.setenv("MCPCLI_HOME", str(other / "mcpcli"))
    r = cli("sessions", "import", "-", stdin=json.dumps(old))
    assert r.code == 0, r.err
    imported = store().get(session.id)
    assert (imported.status, imported.identity) == ("waiting", None)
    assert store().trace_lines(session.id) == []
    shown = cli("sessions", "show", session.id)
    assert "identity   -" in shown.out


def test_a_trace_file_on_a_full_disk_stops_the_trace_not_the_flow(cli: Any) -> None:
    """``/dev/full`` answers every write with ENOSPC: the flow ends as it would, and the trace's end is said once."""
    r = cli("--trace", "/dev/full", "call", "provision", "-a", "name=x", "--answer", "region=eu-west-1")
    assert (r.code, r.out) == (0, "Provisioned 'x' in eu-west-1.\n"), r.err
    assert r.err.count("cannot write the trace to /dev/full (No space left on device); tracing stopped.") == 1
