"""SVG snapshots of every screen and state worth seeing, at 100x40 with a steady cursor.

Stored under ``snapshots/test_tui_snapshots/`` (see ``conftest.py``); regenerate after a deliberate
change with ``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at each diff. Session ids and
times are fixed so that a snapshot shows only what the screen does.
"""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, OptionList
from tuikit import SIZE, finished, make_app, mounted, pick, rounds_server, screen_of, settled, until

from mcpcli.commands.jobs import CallJob
from mcpcli.settings.config import Paths
from mcpcli.state.store import RoundRecord, SessionRecord, open_store
from mcpcli.tui.round import RoundScreen
from mcpcli.tui.sampling import SamplingReview
from mcpcli.tui.sessions import SessionsScreen
from mcpcli.tui.start import StartScreen
from mcpcli.tui.url import UrlConsent

FIXED_ID = "5e55104d0001"


@pytest.fixture(autouse=True)
def fixed_session_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mcpcli.state.store.new_session_id", lambda: FIXED_ID)


def onboard() -> Any:
    return make_app(CallJob("tools/call", "onboard", arguments={"team": "data"}))


def test_an_empty_form_with_every_field_kind(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, RoundScreen)

    assert snap_compare(onboard(), terminal_size=SIZE, run_before=run_before)


def test_a_filled_form_with_an_error_shown(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, RoundScreen)
        await pilot.press(*"Data team", "tab", *"data@example", "tab", *"https://data.example.com", "tab")
        await pilot.press(*"2026-12-01", "tab", *"2026-12-01T09:30", "tab", "ctrl+u", *"51")
        await settled(pilot)

    assert snap_compare(onboard(), terminal_size=SIZE, run_before=run_before)


def test_the_secret_field_is_masked_with_a_warning(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await screen_of(pilot, RoundScreen)
        (await mounted(pilot, screen, "#req0-f13-input")).focus()
        await pilot.press(*"hunter2hunter2")
        await settled(pilot)  # scrolled down to the field: on a loaded machine, over many frames

    assert snap_compare(onboard(), terminal_size=SIZE, run_before=run_before)


def test_the_form_without_colour_marks_what_is_picked(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")  # read when the app is built

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await screen_of(pilot, RoundScreen)
        (await mounted(pilot, screen, "#req0-f12-list")).focus()  # the channels checklist, its highlight on "email"
        await settled(pilot)

    assert snap_compare(onboard(), terminal_size=SIZE, run_before=run_before)


def test_a_required_yes_no_question_waits_for_a_pick(snap_compare: Any) -> None:
    app = make_app(CallJob("tools/call", "confirm", arguments={}), server=rounds_server())

    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, RoundScreen)
        await pilot.press("ctrl+s")  # refused: the field says it needs an answer

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_the_form_at_40x10_shows_the_focused_field_and_its_question(snap_compare: Any) -> None:
    app = make_app(CallJob("tools/call", "provision", arguments={"name": "orders"}))

    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, RoundScreen)
        await pilot.press(*"eu-")
        await settled(pilot)

    assert snap_compare(app, terminal_size=(40, 10), run_before=run_before)


def test_a_long_form_at_40x10_scrolled_to_a_later_field_with_its_label(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, RoundScreen)
        await pilot.press("tab", "tab", "tab", "tab", "shift+tab")  # back up to "start": its label shows too
        await settled(pilot)

    assert snap_compare(onboard(), terminal_size=(40, 10), run_before=run_before)


def test_a_round_of_two_requests(snap_compare: Any) -> None:
    app = make_app(CallJob("tools/call", "trip", arguments={"city": "Oslo"}), server=rounds_server())

    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, RoundScreen)
        await pilot.press(*"Ada", "tab", *"ada@example.org")
        await settled(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_form_beside_a_sampling_request_with_no_llm_provider(snap_compare: Any) -> None:
    from conftest import stdio_server

    config = Paths.from_env().config_file  # a config entry: a short label, the same on every machine
    config.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    command, *args = shlex.split(stdio_server("mixed"))
    config.write_text(f"[mcpServers.mixed]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n")
    app = make_app(CallJob("tools/call", "deploy", arguments={"service": "web"}), server="mixed")

    async def run_before(pilot: Pilot[Any]) -> None:
        where = await screen_of(pilot, RoundScreen)
        await pilot.press(*"eu-west-1", "ctrl+s")
        await until(pilot, lambda: pilot.app.screen is not where and isinstance(pilot.app.screen, RoundScreen), "2")
        await screen_of(pilot, RoundScreen)
        pilot.app.clear_notifications()  # the note is on the screen itself; a toast would cover part of it
        await settled(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_form_part_that_cannot_be_answered(snap_compare: Any) -> None:
    app = make_app(CallJob("tools/call", "odd", arguments={}), server=rounds_server())

    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, RoundScreen)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_url_consent_with_warnings(snap_compare: Any) -> None:
    app = make_app(CallJob("tools/call", "risky_link", arguments={}), server=rounds_server())

    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, RoundScreen)
        await pilot.press("enter")
        await screen_of(pilot, UrlConsent)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def _review(reply: dict[str, Any] | None) -> Any:
    from test_tui_screens import sampling_view

    app = make_app(mode="sessions")

    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, SessionsScreen)
        app.push_screen(SamplingReview(sampling_view(), reply))
        await screen_of(pilot, SamplingReview)

    return app, run_before


def test_sampling_review_of_the_request(snap_compare: Any) -> None:
    app, run_before = _review(None)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_sampling_review_of_the_reply(snap_compare: Any) -> None:
    reply = {"role": "assistant", "content": {"type": "text", "text": "All systems nominal."}, "model": "llama3.2"}
    app, run_before = _review(reply)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_the_start_screen_with_a_tool_form(snap_compare: Any) -> None:
    app = make_app()

    async def run_before(pilot: Pilot[Any]) -> None:
        start = await screen_of(pilot, StartScreen)
        await until(pilot, lambda: bool(start.entries), "the catalog")
        await pick(pilot, start, "echo")
        assert start.query_one("#catalog", OptionList).has_focus
        await pilot.press("enter", *"hello")  # on to the form's first field
        await until(pilot, lambda: not start.query_one("#run", Button).disabled, "the form")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_the_sessions_screen(snap_compare: Any) -> None:
    store = open_store(None, Paths.from_env().store_file)
    when = datetime(2026, 7, 28, 9, 30, tzinfo=UTC)
    ask = {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "Region?", "requestedSchema": {"properties": {"region": {}}}},
    }
    for index, (status, name) in enumerate([("waiting", "provision"), ("done", "onboard"), ("failed", "connect")]):
        session = SessionRecord(
            id=f"5e55104d000{index + 2}", server="demo", method="tools/call", name=name, arguments={},
            protocol_version="2026-07-28", status=status, round=1, created=when, updated=when,
        )  # fmt: skip
        answers = None if status == "waiting" else {"region": {"action": "decline"}}
        rounds = [
            RoundRecord(
                session_id=session.id, index=1, attempt=1, requests={"region": ask}, request_state="s",
                answers=answers, received=when,
            )
        ]  # fmt: skip
        store.import_session(session, rounds)
    assert snap_compare(make_app(mode="sessions"), terminal_size=SIZE)


def test_the_result_view(snap_compare: Any) -> None:
    app = make_app(CallJob("tools/call", "provision", arguments={"name": "orders"}))

    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, RoundScreen)
        await pilot.press(*"eu-west-1", "enter")
        await finished(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_tool_error_in_the_result_view(snap_compare: Any) -> None:
    app = make_app(CallJob("tools/call", "provision", arguments={"name": "orders"}))

    async def run_before(pilot: Pilot[Any]) -> None:
        await screen_of(pilot, RoundScreen)
        await pilot.press("escape")
        await finished(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
