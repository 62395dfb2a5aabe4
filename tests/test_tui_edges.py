"""The app at the edges: a 40×10 terminal, a start-up note, Ctrl-C, a form nobody has touched yet, keys typed
faster than the screen moves — each driven with the pilot against the real demo server (issue 32, point 8).

A field "shows" when the screen can view it entirely (``Screen.can_view_entire``): its label (the question: title,
required mark, hint, description) and its control, where keys land.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual import events
from textual.widget import Widget
from textual.widgets import Button, Input, Static
from textual.widgets._toast import Toast
from tuikit import SIZE, field, make_app, rounds_server, screen_of, settled, shown_text, until

from mcpcli.commands.jobs import CallJob
from mcpcli.errors import ExitCode
from mcpcli.tui.app import TuiExit
from mcpcli.tui.fields import FieldWidget
from mcpcli.tui.round import FormPanel, RoundScreen

pytestmark = pytest.mark.anyio

SMALL = (40, 10)
"""The smallest terminal the app is tried at."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio


def provision(server: str | None = "demo") -> Any:
    return make_app(CallJob("tools/call", "provision", arguments={"name": "orders"}), server=server)


def shows(screen: Any, widget: Widget) -> bool:
    return bool(screen.can_view_entire(widget))


def owner(widget: Widget | None) -> FieldWidget:
    """The form field a focused control belongs to."""
    found = next((node for node in (widget.ancestors if widget else []) if isinstance(node, FieldWidget)), None)
    assert found is not None, f"{widget!r} is not in a form field"
    return found


def status(form: RoundScreen) -> str:
    return str(form.query_one("#round-status", Static).render())


async def test_at_40x10_the_focused_field_its_label_and_the_servers_question_show() -> None:
    async with provision().run_test(size=SMALL) as pilot:
        form = await screen_of(pilot, RoundScreen)
        await settled(pilot)
        region = field(form, "region")
        assert pilot.app.focused is region.query_one(Input)
        assert shows(form, region.query_one(Input)) and shows(form, region.query_one(".field--label"))
        assert shows(form, form.query_one(FormPanel).query_one(".panel--message"))
        await pilot.press(*"eu-west-1")
        assert region.query_one(Input).value == "eu-west-1"


async def test_at_40x10_every_field_of_a_long_form_shows_with_its_label_going_down_and_back_up() -> None:
    app = make_app(CallJob("tools/call", "onboard", arguments={"team": "data"}))
    async with app.run_test(size=SMALL) as pilot:
        form = await screen_of(pilot, RoundScreen)
        names = [f.spec.name for f in form.query(FieldWidget)]
        seen: list[str] = []
        for key in ["tab"] * (len(names) - 1) + ["shift+tab"] * (len(names) - 1):
            await settled(pilot)
            here = owner(app.focused)
            assert app.focused is not None and shows(form, app.focused), f"{here.spec.name}: its control is hidden"
            assert shows(form, here.query_one(".field--label")), f"{here.spec.name}: its label is hidden"
            seen.append(here.spec.name)
            await pilot.press(key)
        assert set(seen) == set(names)


async def test_a_start_up_note_does_not_cover_the_focused_field_at_40x10() -> None:
    app = provision(server=None)  # no -s: the app says it uses the built-in demo server, in a notification
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        form = await screen_of(pilot, RoundScreen)
        await until(pilot, lambda: bool(app.screen.query(Toast)), "the note")
        await settled(pilot)
        toast = app.screen.query_one(Toast)
        assert "built-in demo server" in str(toast.render())
        region = field(form, "region")
        for part in (region.query_one(Input), region.query_one(".field--label")):
            assert not toast.region.overlaps(part.region), f"the note covers {part!r}"


async def test_the_app_at_120x40_keeps_its_full_layout() -> None:
    async with provision().run_test(size=(120, 40)) as pilot:
        form = await screen_of(pilot, RoundScreen)
        await settled(pilot)
        assert form.query_one("#submit", Button).outer_size.height == 3
        assert "session" in shown_text(form.query_one("#round-header"))
        assert shows(form, field(form, "region").query_one(Input))


async def test_ctrl_c_in_the_app_stops_as_it_does_inline_not_with_textuals_quit_hint() -> None:
    app = provision()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await screen_of(pilot, RoundScreen)
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app.return_value is not None, "the app to end")
        assert not app._notifications  # no "Press ctrl+q to quit the app"
    ended = app.return_value
    assert isinstance(ended, TuiExit) and ended.interrupted and ended.code == ExitCode.INTERRUPTED


async def test_a_form_nobody_touched_says_what_is_left_to_fill_in_not_what_to_fix() -> None:
    async with provision().run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        region = field(form, "region")
        assert "to fix" not in status(form) and "region: 1 field to fill in" in status(form)
        assert not region.has_class("-invalid") and "is required" not in shown_text(region)
        await pilot.press("x", "backspace")  # touched, and empty again: now it is an error to fix
        assert "region: 1 field to fix" in status(form) and "is required" in shown_text(region)


async def test_counts_read_in_the_right_number() -> None:
    async with provision().run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        assert "asks 1 question " in shown_text(form.query_one("#round-header"))
        await pilot.press(*"eu-west-1")
        assert status(form) == "Ready: 1 answer to send."
    app = make_app(CallJob("tools/call", "trip", arguments={"city": "Oslo"}), server=rounds_server())
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        assert "asks 2 questions " in shown_text(form.query_one("#round-header"))
        assert "(s)" not in shown_text(form)


async def test_a_checklist_says_pick_any_not_comma_separated() -> None:
    app = make_app(CallJob("tools/call", "onboard", arguments={"team": "data"}))
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        label = str(field(form, "channels").query_one(".field--label", Static).render())
        assert "pick any" in label and "comma" not in label


async def test_keys_typed_right_after_a_refused_ctrl_s_land_in_the_first_field_to_fix() -> None:
    app = make_app(CallJob("tools/call", "onboard", arguments={"team": "data"}))
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        await pilot.press(*"Data team", "tab", *"d@x.org", "tab")  # in "homepage" (optional); "start" is required
        for key, character in [("ctrl+s", None), ("2", "2"), ("0", "0")]:  # as fast as a terminal delivers them
            app.post_message(events.Key(key, character))
        await until(pilot, lambda: field(form, "start").query_one(Input).value == "20", "the keys to land")
        assert app.focused is field(form, "start").query_one(Input)
        assert field(form, "homepage").query_one(Input).value == ""


async def test_a_refused_ctrl_s_shows_the_errors_of_every_request_of_the_round() -> None:
    app = make_app(CallJob("tools/call", "trip", arguments={"city": "Oslo"}), server=rounds_server())
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        await pilot.press("ctrl+s")
        assert "is required" in shown_text(field(form, "name")) and "is required" in shown_text(field(form, "start"))
        assert app.focused is field(form, "name").query_one(Input)
