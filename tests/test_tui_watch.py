"""The app follows what the server changes: the start screen's lists (and the form shown) when a list changes,
and a resource's view when it is updated — where the server offers it (``tests/watch_servers.py ticker``)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from conftest import PY
from textual.pilot import Pilot
from textual.widgets import Button
from tuikit import SIZE, finished, make_app, pick, screen_of, shown_text, until

from mcpcli.commands.jobs import CallJob
from mcpcli.tui.start import StartScreen

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio


WATCH_SERVERS = Path(__file__).resolve().parent / "watch_servers.py"


def ticker(*extra: str) -> str:
    return shlex.join([PY, str(WATCH_SERVERS), "ticker", *extra])


async def test_the_start_screen_lists_what_the_server_adds_and_keeps_the_form_being_filled() -> None:
    app = make_app(server=ticker())
    async with app.run_test(size=SIZE) as pilot:
        start = await screen_of(pilot, StartScreen)
        await until(pilot, lambda: bool(start.entries), "the catalog")
        await pick(pilot, start, "note://b")
        await until(pilot, lambda: not start.query_one("#run", Button).disabled, "the form")
        names = lambda: {entry.name for entry in start.entries}  # noqa: E731
        await until(pilot, lambda: "extra3" in names(), "the tool the server added")
        await until(pilot, lambda: any(n.startswith("note://r") for n in names()), "the resource the server added")
        assert start.current is not None and start.current.name == "note://b"  # still the entry being looked at
        await until(pilot, lambda: len([n for n in names() if n.startswith("note://r")]) == 1 and
                    "note://r4" not in names(), "the resource it removed gone")  # fmt: skip


async def test_a_tools_form_is_rebuilt_only_when_its_own_tool_changed() -> None:
    app = make_app(server=ticker())
    async with app.run_test(size=SIZE) as pilot:
        start = await screen_of(pilot, StartScreen)
        await until(pilot, lambda: bool(start.entries), "the catalog")
        await pick(pilot, start, "noop")
        form = start.query_one("#argument-form")
        await until(pilot, lambda: "extra3" in {e.name for e in start.entries}, "a tool added")
        assert start.query_one("#argument-form") is form  # not rebuilt: the user's values stay


async def test_a_resource_view_follows_the_servers_updates() -> None:
    app = make_app(CallJob("resources/read", "note://a", arguments={}), server=ticker())
    async with app.run_test(size=SIZE) as pilot:
        run = await finished(pilot)
        assert "a v0" in shown_text(run)
        await pilot.press("f")
        await until(pilot, lambda: run.following is not None, "following")
        await until(pilot, lambda: "a v1" in shown_text(run), "the first update")
        await until(pilot, lambda: "a v6" in shown_text(run), "the next one")
        assert "following" in str(run.query_one("#run-result > Vertical").border_title)


def test_the_resource_view_while_following(snap_compare: Any) -> None:
    app = make_app(CallJob("resources/read", "note://a", arguments={}), server=ticker("--every", "3600"))

    async def run_before(pilot: Pilot[Any]) -> None:
        run = await finished(pilot)
        await pilot.press("f")
        await until(pilot, lambda: run.following is not None, "following")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
