"""The team inbox in the app: the sessions screen follows the store live (SQLite and PostgreSQL), ``a`` answers a
waiting flow with its form as ``mcpcli answer`` would, and ``mcpcli answer ID --tui`` is that form alone.

Everything real: flows parked by the CLI against the demo server, answers written by another process through the
store, the app under pilot. Every wait is for a state, bounded; none is a sleep.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from conftest import ROOT
from textual.pilot import Pilot
from textual.widgets import DataTable
from tuikit import SIZE, make_app, screen_of, settled, until

from mcpcli.commands.jobs import AnswerJob
from mcpcli.settings.config import Paths
from mcpcli.state.store import RoundRecord, SessionRecord, Store, open_store
from mcpcli.state.store.base import AlreadyAnswered
from mcpcli.tui.inbox import AnswerScreen
from mcpcli.tui.sessions import RELOAD_GAP, SessionsScreen

STATUS, OWNER, WAITING_FOR = 1, 2, 5
"""Columns of the waiting list."""
LIVE_LIMIT = 15.0
"""Seconds the screen may take to show what another process wrote (a second's tick, a loaded machine)."""


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Each live test on both stores: the SQLite file, and a fresh PostgreSQL database (``MCPCLI_STORE``)."""
    if request.param == "sqlite":
        return None
    url = str(request.getfixturevalue("pg_url"))
    monkeypatch.setenv("MCPCLI_STORE", url)
    return url


def the_store(url: str | None = None) -> Store:
    return open_store(url or os.environ.get("MCPCLI_STORE"), Paths.from_env().store_file)


def park(cli: Any, monkeypatch: pytest.MonkeyPatch, *, owner: str = "alice", ask: str = "bob") -> str:
    """``owner`` calls provision, which waits for its region, asking ``ask``; the session's id."""
    monkeypatch.setenv("MCPCLI_USER", owner)
    given = cli("call", "provision", "--arg", "name=orders", "--no-input", "--ask", ask)
    assert given.code == 3, given
    return the_store().list()[0].id


def row(screen: SessionsScreen, session_id: str) -> list[str]:
    table = screen.query_one("#waiting", DataTable)
    return [str(cell) for cell in table.get_row(session_id)]


def notes(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def elsewhere(who: str, *args: str) -> tuple[int, str]:
    """``mcpcli ARGS`` as ``who``, in another process (the app's event loop goes on meanwhile): exit code, stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mcpcli", *args, env={**os.environ, "MCPCLI_USER": who}, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    return int(proc.returncode or 0), err.decode()


# --- live --------------------------------------------------------------------------------------------------------


def test_the_sessions_screen_shows_a_flow_another_process_answered(
    cli: Any, monkeypatch: pytest.MonkeyPatch, store_url: str | None
) -> None:
    session_id = park(cli, monkeypatch)

    async def main() -> None:
        app = make_app(mode="sessions")
        async with app.run_test(size=SIZE) as pilot:
            screen = await screen_of(pilot, SessionsScreen)
            assert row(screen, session_id)[STATUS] == "waiting"
            assert row(screen, session_id)[OWNER] == "alice → bob"
            assert row(screen, session_id)[WAITING_FOR] == "region (region)"
            before = screen.reloads
            code, err = await elsewhere("bob", "answer", session_id, "--answer", "region=eu-west-1")
            assert code == 0, err
            await until(pilot, lambda: row(screen, session_id)[STATUS] == "answered", "the answer", LIVE_LIMIT)
            assert row(screen, session_id)[WAITING_FOR] == "answered by bob"
            assert screen.reloads - before <= 3  # one write, read once (a stray hint or two at most)

            # Its owner's run sends it and finishes: the flow leaves the waiting list for the recent one, live too.
            code, err = await elsewhere("alice", "resume", session_id)
            assert code == 0, err
            recent = screen.query_one("#recent", DataTable)
            await until(pilot, lambda: session_id in recent.rows, "the finished flow", LIVE_LIMIT)
            assert str(recent.get_row(session_id)[STATUS]) == "done"
            assert session_id not in screen.query_one("#waiting", DataTable).rows

    asyncio.run(main())


def test_a_burst_of_changes_is_read_again_a_few_times_not_once_each() -> None:
    store = the_store()

    async def main() -> None:
        app = make_app(mode="sessions")
        async with app.run_test(size=SIZE) as pilot:
            screen = await screen_of(pilot, SessionsScreen)
            before = screen.reloads
            started = time.monotonic()
            for index in range(40):  # forty commits by another connection, each a change the watch sees
                await asyncio.to_thread(_import_waiting, store, f"b0057{index:07d}")
            waiting = screen.query_one("#waiting", DataTable)
            await until(pilot, lambda: waiting.row_count == 40, "the burst", LIVE_LIMIT)
            elapsed = time.monotonic() - started
            assert screen.reloads - before <= elapsed / RELOAD_GAP + 2  # never two reloads within RELOAD_GAP

    asyncio.run(main())


def _import_waiting(store: Store, session_id: str, **fields: Any) -> None:
    when = fields.pop("when", datetime.now(UTC))
    requests = fields.pop("requests", {"region": ASK})
    round_fields = fields.pop("round_fields", {})
    session = SessionRecord(
        id=session_id, server="demo", method="tools/call", name="provision", arguments={"name": "orders"},
        protocol_version="2026-07-28", status="waiting", round=1, created=when, updated=when, **fields,
    )  # fmt: skip
    rounds = [
        RoundRecord(
            session_id=session_id, index=1, attempt=1, requests=requests, request_state="s", received=when,
            **round_fields,
        )
    ]  # fmt: skip
    store.import_session(session, rounds)


ASK = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Which region should 'orders' be provisioned in?",
        "requestedSchema": {
            "type": "object",
            "properties": {"region": {"type": "string", "title": "Region"}},
            "required": ["region"],
        },
    },
}
SAMPLING = {
    "method": "sampling/createMessage",
    "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 10},
}


# --- answering from the inbox ------------------------------------------------------------------------------------


def test_answering_from_the_inbox_form_stores_it_as_me_and_a_second_answer_is_refused(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = park(cli, monkeypatch)
    monkeypatch.setenv("MCPCLI_USER", "bob")

    async def main() -> None:
        app = make_app(mode="sessions")
        async with app.run_test(size=SIZE) as pilot:
            screen = await screen_of(pilot, SessionsScreen)
            await pilot.press("a")
            form = await screen_of(pilot, AnswerScreen)
            assert (form.info.session_id, form.info.name, form.info.round) == (session_id, "provision", 1)
            await pilot.press(*"eu-west-1", "enter")
            await screen_of(pilot, SessionsScreen)
            await until(pilot, lambda: row(screen, session_id)[STATUS] == "answered", "the answer")
            assert any(f"Answered round 1 of session {session_id} as bob." in n for n in notes(app))

            app.clear_notifications()
            await pilot.press("a")  # again: one answer wins a round
            await until(pilot, lambda: bool(notes(app)), "a notification")
            (refused,) = notes(app)
            assert refused.startswith(f"Round 1 of session {session_id} was already answered by bob at ")
            assert app.screen is screen  # no form: nothing left to answer

    asyncio.run(main())
    store = the_store()
    last = store.last_round(session_id)
    assert last is not None and last.answered_by == "bob" and last.answers is not None
    assert last.answers["region"]["content"] == {"region": "eu-west-1"}
    assert store.get(session_id).answered_by == "bob" and store.get(session_id).status == "waiting"


def test_leaving_the_inbox_form_with_escape_writes_nothing(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    session_id = park(cli, monkeypatch)
    monkeypatch.setenv("MCPCLI_USER", "bob")

    async def main() -> None:
        app = make_app(mode="sessions")
        async with app.run_test(size=SIZE) as pilot:
            screen = await screen_of(pilot, SessionsScreen)
            await pilot.press("a")
            await screen_of(pilot, AnswerScreen)
            await pilot.press("escape")  # on a run, "cancel all"; here, back without answering
            await screen_of(pilot, SessionsScreen)
            await until(pilot, lambda: bool(notes(app)), "a notification")
            assert notes(app) == [f"Nothing answered: session {session_id} still waits."]
            assert row(screen, session_id)[STATUS] == "waiting"

    asyncio.run(main())
    last = the_store().last_round(session_id)
    assert last is not None and last.answers is None and last.answered_by is None


def test_a_flow_i_may_not_answer_or_that_waits_only_on_sampling_says_so_in_one_line(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = park(cli, monkeypatch, ask="carol")
    _import_waiting(the_store(), "5a3b11e90001", owner="alice", requests={"llm": SAMPLING})
    monkeypatch.setenv("MCPCLI_USER", "bob")
    expected = [
        (session_id, "This flow asks carol; you are bob."),
        ("5a3b11e90001", "Session 5a3b11e90001 waits for nothing a person answers here (llm)"),
    ]

    async def main() -> None:
        app = make_app(mode="sessions")
        async with app.run_test(size=SIZE) as pilot:
            screen = await screen_of(pilot, SessionsScreen)
            table = screen.query_one("#waiting", DataTable)
            for sid, said in expected:
                app.clear_notifications()
                table.move_cursor(row=table.get_row_index(sid))
                await pilot.press("a")
                await until(pilot, lambda: bool(notes(app)), "a notification")
                (line,) = notes(app)
                assert line.startswith(said) and "\n" not in line
                assert app.screen is screen

    asyncio.run(main())
    assert the_store().get(session_id).answered_by is None


# --- mcpcli answer ID --tui ----------------------------------------------------------------------------------------


def test_the_answer_app_ends_0_once_stored_and_with_the_clis_error_when_refused(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = park(cli, monkeypatch)
    other = park(cli, monkeypatch, ask="dave")

    async def run(app: Any, *keys: str) -> Any:
        async with app.run_test(size=SIZE) as pilot:
            if keys:
                await screen_of(pilot, AnswerScreen)
                await pilot.press(*keys)
            await until(pilot, lambda: app.return_value is not None, "the app to end")
        return app.return_value

    monkeypatch.setenv("MCPCLI_USER", "bob")
    ended = asyncio.run(run(make_app(AnswerJob(session_id)), *"eu-west-1", "enter"))
    assert ended.code == 0 and ended.answered is not None
    assert (ended.answered.by, ended.answered.answered) == ("bob", ["region"])

    ended = asyncio.run(run(make_app(AnswerJob(session_id))))
    assert ended.code == 6 and isinstance(ended.error, AlreadyAnswered)

    ended = asyncio.run(run(make_app(AnswerJob(other))))
    assert ended.code == 2 and ended.error.message == "This flow asks dave; you are bob."


@pytest.mark.slow
def test_answer_with_tui_on_a_terminal_stores_the_answer_says_so_and_exits_0(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pexpect

    session_id = park(cli, monkeypatch)

    def spawn() -> Any:
        env = {**os.environ, "TERM": "xterm-256color", "MCPCLI_USER": "bob"}
        args = ["-m", "mcpcli", "answer", session_id, "--tui"]
        return pexpect.spawn(sys.executable, args, env=env, cwd=str(ROOT), dimensions=(40, 100), encoding="utf-8")

    child = spawn()
    child.expect_exact("Region", timeout=30)
    child.send("eu-west-1")
    child.send("\r")
    child.expect_exact(f"Answered round 1 of session {session_id} as bob.", timeout=30)
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 0

    child = spawn()
    child.expect_exact("already answered by bob", timeout=30)
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 6


# --- snapshots ----------------------------------------------------------------------------------------------------

FIXED = datetime(2026, 7, 28, 9, 30, tzinfo=UTC)
"""Every snapshot's sessions were stored at this time, with fixed ids: the screen shows only what it does."""


def _team_inbox() -> None:
    """alice's flow waiting for bob, and another of hers that carol answered (her run has yet to send it)."""
    store = the_store()
    routing = {"ask": ["bob"], "no_self_answer": False, "confirm": False}
    _import_waiting(store, "5e55104d0011", when=FIXED, owner="alice", routing=routing)
    answered = {"region": {"action": "accept", "content": {"region": "eu-west-1"}}}
    _import_waiting(
        store, "5e55104d0012", when=FIXED, owner="alice", routing={**routing, "ask": ["carol"]}, answered_by="carol",
        round_fields={"answers": answered, "answered": FIXED, "answered_by": "carol", "answered_at": FIXED},
    )  # fmt: skip


def test_the_sessions_screen_with_a_waiting_and_an_answered_flow(
    snap_compare: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _team_inbox()
    monkeypatch.setenv("MCPCLI_USER", "bob")

    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, SessionsScreen)
        await settled(pilot)

    assert snap_compare(make_app(mode="sessions"), terminal_size=SIZE, run_before=run_before)


def test_the_inbox_answer_form(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _team_inbox()
    monkeypatch.setenv("MCPCLI_USER", "bob")

    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, SessionsScreen)
        await pilot.press("down", "a")  # the second row (newest first, then by id): the flow waiting for bob
        await screen_of(pilot, AnswerScreen)
        await pilot.press(*"eu-")
        await settled(pilot)

    assert snap_compare(make_app(mode="sessions"), terminal_size=SIZE, run_before=run_before)
