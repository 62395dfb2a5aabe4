"""``mcpcli sessions list``: one line per session at any width, and its fast path (read without Typer, pydantic or
Rich) giving exactly what the full path gives — on sessions made by real flows against real servers."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
from contextlib import closing, redirect_stderr, redirect_stdout
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, demo_stdio, run_process
from test_flows import store
from test_imports import SDK, UI, _matching
from test_sessions_cmd import done_provision, set_updated, waiting_provision

from mcpcli import entry
from mcpcli.commands.sessions import session_json
from mcpcli.settings.config import Paths
from mcpcli.state import listing
from mcpcli.state.inbox import LEASE_FIELDS, inbox, pending_requests
from mcpcli.state.store import SessionRecord
from mcpcli.state.store.base import STATUSES
from mcpcli.state.store.sql import SCHEMA_VERSION
from mcpcli.terminal.session_lines import ago, cells, cut, render
from mcpcli.userdirs import config_home, state_home


def _config(home: Path) -> Path:
    """An (empty) config.toml: the listing then takes the full path (the config model, the store's records)."""
    path = home / "config.toml"
    path.write_text("")
    path.chmod(0o600)
    return path


@pytest.fixture
def sessions(cli: Any, http_demo: Any, tmp_path: Path) -> dict[str, str]:
    """Real flows: waiting and done on the demo, one waiting over HTTP, one on a stdio command line, one aged."""
    server = http_demo(key_file=tmp_path / "demo.key")
    made = {
        "old": done_provision(cli, "an-old-one"),
        "http": waiting_provision(cli, "orders", "-s", server.url),
        "stdio": waiting_provision(cli, "x" * 200, "-s", demo_stdio(tmp_path / "stdio.key")),
        "waiting": waiting_provision(cli, "billing-" + "y" * 90),
    }
    set_updated(made["old"], datetime.now(UTC) - timedelta(days=3, minutes=5))
    return made


def _lines(out: str) -> list[str]:
    return out.rstrip("\n").split("\n")


@pytest.mark.parametrize("columns", [80, 120, 300])
def test_each_session_is_one_line_that_fits_the_terminal(
    sessions: dict[str, str], columns: int, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    r = run_process("sessions", "list")
    assert r.code == 0, r.err
    lines = _lines(r.out)
    assert len(lines) == 1 + len(sessions)  # the header and one line each: nothing wraps
    assert lines[0].split() == ["ID", "STATUS", "WAITING", "FOR", "SERVER", "CALL", "UPDATED"]
    assert all(cells(line) <= columns for line in lines), r.out
    by_id = {line.split()[0]: line for line in lines[1:]}
    assert set(by_id) == set(sessions.values())
    http = by_id[sessions["http"]]
    assert "waiting" in http and "http://" not in http and "/mcp" not in http
    assert "127.0.0.1:" in http  # the server as its host
    assert "call orders" not in http and "call provision" in http  # call, not tools/call
    assert "just now" in http or "min ago" in http
    assert "3 days ago" in by_id[sessions["old"]] and "done" in by_id[sessions["old"]]
    assert ("region: Whi" if columns == 80 else "region: Which region") in by_id[sessions["waiting"]]
    assert f" python -m mcpcli.demo --key-file {Path(PY).parent}" not in r.out  # the program, not its path
    if columns == 80:
        assert "…" in by_id[sessions["stdio"]]  # a long name is cut, not wrapped
    # The same lines from the full path (a config.toml: the config model and the store's records).
    _config(home)
    assert run_process("sessions", "list").out == r.out


def test_the_fast_path_prints_the_documents_the_full_path_prints(
    sessions: dict[str, str], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    store().claim(sessions["waiting"], host="laptop-b", pid=4242, ttl=600)
    variants = [
        ["sessions", "list", "--json"],
        ["--json", "sessions", "list", "--status", "waiting"],
        ["sessions", "list", "--json", "--limit", "2"],
        ["sessions", "list", "--json", "--server", "demo"],
        ["sessions", "list", "--waiting", "--json"],
        ["-s", "demo", "sessions", "list", "--waiting", "--json"],
        ["sessions", "list", "--waiting"],
    ]
    fast = [run_process(*argv) for argv in variants]
    _config(home)
    full = [run_process(*argv) for argv in variants]
    for argv, a, b in zip(variants, fast, full, strict=True):
        assert (a.code, a.out) == (b.code, b.out), argv
    leases = {d["id"]: d["lease"] for d in json.loads(fast[4].out)}
    assert leases[sessions["waiting"]]["holder"] == "pid 4242 on laptop-b"
    assert "held by pid 4242 on laptop-b" in fast[6].out


def test_the_reader_gives_each_record_as_session_json(sessions: dict[str, str], home: Path) -> None:
    """Also for times without microseconds, an interrupted session, a task, and the inbox's extra keys."""
    s = store()
    first = s.get(sessions["http"])
    s.update(first.id, status="running", task={"id": "t1", "status": "working", "message": "half way", "polls": 1})
    with closing(sqlite3.connect(Paths.from_env().store_file)) as conn, conn:
        conn.execute("UPDATE sessions SET created = ? WHERE id = ?", ("2026-01-02T03:04:05.000000+00:00", first.id))
    path = Paths.from_env().store_file
    for kwargs in ({}, {"status": "waiting"}, {"limit": 1}, {"server": "demo"}):
        got = listing.read(path, **kwargs)
        assert got is not None
        assert got.docs == [session_json(r) for r in s.list(**kwargs)], kwargs
    got = listing.read(path, waiting=True)
    assert got is not None
    records = inbox(s)
    assert first.id in [r.id for r in records]  # interrupted: running, and nobody holds it
    assert [d["id"] for d in got.docs] == [r.id for r in records]
    for doc, record in zip(got.docs, records, strict=True):
        assert {k: v for k, v in doc.items() if k not in ("pending", "lease")} == session_json(record)
        assert doc["pending"] == pending_requests(s.last_round(record.id))
    assert listing.read(path, status="sleeping") is None  # the real store says what is wrong


def test_the_reader_leaves_what_it_does_not_know_to_the_store(home: Path, cli: Any) -> None:
    path = Paths.from_env().store_file
    assert listing.read(path) == listing.Listing([])  # nothing stored yet: no file is made
    assert not path.exists()
    waiting_provision(cli)
    assert listing.read(path) is not None
    path.chmod(0o644)  # the store refuses a file others can read: so must the listing
    assert listing.read(path) is None
    r = run_process("sessions", "list")
    assert r.code == 4 and "can be read or written by other users" in r.err
    path.chmod(0o600)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE schema_version SET version = 99")
    assert listing.read(path) is None


def test_what_the_fast_path_copies_agrees_with_the_store() -> None:
    assert listing.SCHEMA_VERSION == SCHEMA_VERSION
    assert listing.STATUSES == STATUSES
    assert {"version", *(n for n in SessionRecord.model_fields if n.startswith("lease_"))} == LEASE_FIELDS
    paths = Paths.from_env()
    assert Path(state_home()) / "sessions.db" == paths.store_file
    assert Path(config_home()) == paths.config_dir


def _quick(argv: list[str]) -> tuple[int | None, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = entry.quick_listing(argv)
    return code, out.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "list", "--json"],
        ["--json", "sessions", "list"],
        ["sessions", "list", "--status=waiting", "--json"],
        ["--store", "sqlite:", "sessions", "list", "--json", "--limit", "1"],
        ["-s", "elsewhere", "sessions", "list", "--json"],
        ["-s", "elsewhere", "sessions", "list", "--json", "-s", "demo"],
        ["sessions", "list", "--server=demo", "--waiting", "--json", "--debug", "-v"],
    ],
)
def test_the_command_line_reads_alike_with_and_without_typer(argv: list[str], cli: Any) -> None:
    waiting_provision(cli)
    done_provision(cli, "other")
    code, out = _quick(argv)
    typer = cli(*argv)
    assert (code, out) == (typer.code, typer.out)


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "list", "--help"],
        ["sessions", "list", "--limit", "0"],
        ["sessions", "list", "--limit", "x"],
        ["sessions", "list", "--status"],
        ["sessions", "list", "--server", "--json"],
        ["sessions", "list", "extra"],
        ["sessions", "list", "--verbose=1"],
        ["-H", "A: b", "sessions", "list"],
        ["--waiting", "sessions", "list"],
        ["sessions", "show", "abcd"],
        ["sessions"],
        ["--store", "sqlite:/elsewhere.db", "sessions", "list"],
    ],
)
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    assert _quick(argv)[0] is None


def test_a_config_file_leaves_the_listing_to_the_full_path(home: Path, cli: Any) -> None:
    waiting_provision(cli)
    assert _quick(["sessions", "list"])[0] == 0
    (home / "config.toml").write_text("colour = 'blue'\n")
    assert _quick(["sessions", "list"])[0] is None  # its mistakes are reported as by every command
    r = run_process("sessions", "list")
    assert r.code == 2 and "colour" in r.err


def test_sessions_list_imports_neither_typer_nor_pydantic_nor_the_sdk(sessions: dict[str, str], home: Path) -> None:
    for argv in (["sessions", "list"], ["sessions", "list", "--json"], ["sessions", "list", "--waiting"]):
        script = (
            "import sys\n"
            f"sys.argv = ['mcpcli', *{argv!r}]\n"
            "from mcpcli.entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "import json\nprint('@@' + json.dumps(sorted(sys.modules)))\n"
        )
        proc = subprocess.run(
            [PY, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60, env={**os.environ}
        )
        modules = set(json.loads(proc.stdout.rsplit("@@", 1)[1]))
        assert sessions["http"] in proc.stdout  # the listing ran in that interpreter
        assert _matching(modules, (*SDK, *UI, "pydantic", "typer", "rich")) == [], argv


# --- the lines themselves --------------------------------------------------------------------------------------------


def _doc(**fields: Any) -> dict[str, Any]:
    doc = {"id": "0123456789ab", "server": "demo", "method": "tools/call", "name": "provision", "status": "done"}
    return doc | {"updated": "2026-01-02T03:04:05Z", "interrupted": False, "task": None} | fields


def test_server_chosen_text_is_escaped_and_kept_on_one_line() -> None:
    hostile = "\x1b[31mred\u202e\nnext\x9b"
    pending = {"0123456789ab": {f"k{hostile}": {"kind": "form", "message": hostile, "fields": ["a\tb"]}}}
    doc = _doc(status="waiting", name=hostile, server=f"http://user:secret@ho\u200bst{hostile}:1/mcp")
    now = datetime(2026, 1, 2, 3, 7, 5, tzinfo=UTC)
    for width in (80, 400):
        lines = render([doc], pending, width=width, now=now)
        assert len(lines) == 2
        text = "\n".join(lines)
        for raw in ("\x1b", "\u202e", "\x9b", "\u200b", "\t", "secret"):
            assert raw not in text
    assert "\\x1b[31mred" in text and "3 min ago" in text


def test_colours_only_style_the_status_and_the_header() -> None:
    lines = render([_doc(status="failed")], {}, width=80, now=datetime.now(UTC), color=True)
    assert lines[0].startswith("\x1b[1m")
    assert "\x1b[31mfailed" in lines[1]


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(5, "just now"), (-30, "just now"), (61, "1 min ago"), (3600 * 5, "5 hours ago"), (86400, "1 day ago")],
)
def test_times_are_said_relatively(seconds: float, said: str) -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    assert ago(now - timedelta(seconds=seconds), now) == said


def test_wide_characters_are_cut_by_the_cells_they_take() -> None:
    assert cells("日本語") == 6
    assert cut("日本語です", 7) == "日本語…" and cells(cut("日本語です", 7)) <= 7
    assert cut("short", 10) == "short"
