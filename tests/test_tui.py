"""The full-screen app driven with the keyboard under Textual's pilot, against real SDK servers.

The demo server runs in-process (target ``demo``); ``tests/servers.py rounds`` runs over stdio. Tests
assert on state — what reached the server, what the store holds, which widget refuses what — and wait
for the app's workers by letting it run until a condition holds, never for a time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Switch
from tuikit import SIZE, field, finished, make_app, rounds_server, screen_of, shown_text, until

from mcpcli.commands.jobs import CallJob
from mcpcli.settings.config import Paths
from mcpcli.state.store import open_store
from mcpcli.tui.round import FormPanel, RoundScreen, UrlPanel
from mcpcli.tui.url import UrlConsent

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio


def stored() -> Any:
    return open_store(None, Paths.from_env().store_file)


def result_text(app: Any) -> str:
    _method, outcome = app.outcome
    return "\n".join(block["text"] for block in outcome.result["content"])


async def test_the_demo_onboarding_is_completed_with_the_keyboard_alone_and_bad_values_are_refused(
    tmp_path: Path,
) -> None:
    app = make_app(CallJob("tools/call", "onboard", arguments={"team": "data"}), roots=[tmp_path])
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        submit = form.query_one("#submit", Button)
        assert submit.disabled  # required fields are empty

        async def typed(name: str, bad: str, good: str, error: str) -> None:
            """Type a refused value, see the error and a disabled Submit, then replace it with a good one."""
            await pilot.press(*bad)
            assert error in (field(form, name).error() or ""), field(form, name).error()
            assert error in shown_text(field(form, name))
            assert submit.disabled
            await pilot.press("ctrl+u", *good)
            assert field(form, name).error() is None
            await pilot.press("tab")

        await typed("display_name", "D", "Data team", "between 2 and 40 characters")
        await typed("email", "data@", "data@example.com", "email address")
        await typed("homepage", "data example", "https://data.example.com", "URI")
        await typed("start", "2026-13-01", "2026-12-01", "YYYY-MM-DD")
        await typed("kickoff", "tomorrow", "2026-12-01T09:30:00Z", "date-time")
        await pilot.press("ctrl+u")  # seats: the default 5 is pre-filled
        await typed("seats", "99", "12", "between 1 and 50")
        await typed("budget", "-1", "2500.5", "between 0 and 10000")
        assert form.focused is not None and form.focused.id == field(form, "remote").query_one(Switch).id
        await pilot.press("space", "tab")  # remote: on by default → off
        await pilot.press("enter", "down", "enter", "tab")  # size: small (default) → medium
        await pilot.press("enter", "down", "enter", "tab")  # region: pick the first
        await pilot.press("enter", "down", "down", "down", "enter", "tab")  # tier: Gold
        languages = field(form, "languages")
        await pilot.press("space", "down", "space", "down", "space", "down", "space")  # all four: one too many
        assert "between 1 and 3 choices" in (languages.error() or "")
        assert submit.disabled
        await pilot.press("space", "tab")  # typescript off again
        await pilot.press("down", "space", "tab")  # channels: email (default) + chat
        await pilot.press(*"short")
        assert "at least 8 characters" in (field(form, "passphrase").error() or "")
        await pilot.press("enter")  # refused: Submit shows what is wrong instead of sending
        assert isinstance(app.screen, RoundScreen)
        await pilot.press(*" but long enough")
        assert not submit.disabled
        await pilot.press("enter")

        confirm = await screen_of(pilot, RoundScreen)
        assert confirm is not form
        assert "Create Data team <data@example.com>, 12 seats?" in shown_text(confirm)
        await pilot.press("ctrl+s")  # the confirmation's default (yes) is pre-filled

        run = await finished(pilot)
        assert "Onboarded team 'data' with 1 workspace root:" in shown_text(run)
        await pilot.press("enter")
    assert app.return_value is not None and app.return_value.code == 0
    details = json.loads(result_text(app).splitlines()[1])
    assert details == {
        "display_name": "Data team",
        "email": "data@example.com",
        "homepage": "https://data.example.com",
        "start": "2026-12-01",
        "kickoff": "2026-12-01T09:30:00Z",
        "seats": 12,
        "budget": 2500.5,
        "remote": False,
        "size": "medium",
        "region": "eu-west-1",
        "tier": "g",
        "languages": ["python", "go", "rust"],
        "channels": ["email", "chat"],
    }
    session = stored().list()[0]
    assert session.status == "done" and session.round == 3
    assert tmp_path.as_uri() in result_text(app)


async def test_declining_a_form_sends_decline_and_the_tool_error_exits_1() -> None:
    app = make_app(CallJob("tools/call", "provision", arguments={"name": "orders"}))
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        await pilot.press("shift+tab", "right", "enter")  # from the region field up to Accept/Decline/Cancel
        assert form.query_one(FormPanel).action == "decline"
        assert field(form, "region").disabled  # nothing to fill in for a declined form
        await pilot.press("ctrl+s")
        run = await finished(pilot)
        assert "The tool reported an error" in str(run.query_one(".result").border_title)
        await pilot.press("q")
    assert app.return_value is not None and app.return_value.code == 1
    assert result_text(app) == "Provisioning of 'orders' was declined."


async def test_escape_cancels_the_whole_round() -> None:
    app = make_app(CallJob("tools/call", "provision", arguments={"name": "orders"}))
    async with app.run_test(size=SIZE) as pilot:
        await screen_of(pilot, RoundScreen)
        await pilot.press(*"eu-", "escape")
        await finished(pilot)
        await pilot.press("enter")
    assert result_text(app) == "Provisioning of 'orders' was cancelled."
    assert stored().rounds(stored().list()[0].id)[0].answers == {"region": {"action": "cancel"}}


async def test_two_requests_of_one_round_are_answered_on_one_screen_and_sent_in_one_retry() -> None:
    app = make_app(CallJob("tools/call", "trip", arguments={"city": "Oslo"}), server=rounds_server())
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        assert [p.question.key for p in form.panels()] == ["traveller", "dates"]
        await pilot.press(*"Ada", "tab", *"ada@example.org", "tab")
        await pilot.press("tab", *"2027-02-30")  # past the second panel's Accept/Decline/Cancel; no such day
        assert form.query_one("#submit", Button).disabled
        assert "dates: 1 field to fix" in shown_text(form)
        await pilot.press("ctrl+u", *"2027-02-27", "tab", "ctrl+u", *"15")  # nights: at most 14
        assert form.query_one("#submit", Button).disabled
        await pilot.press("backspace", "enter")
        run = await finished(pilot)
        assert "Oslo" in shown_text(run)
    sent = json.loads(result_text(app).removeprefix("Oslo: "))
    assert sent == {
        "dates": {"action": "accept", "content": {"nights": 1, "start": "2027-02-27"}},
        "traveller": {"action": "accept", "content": {"email": "ada@example.org", "name": "Ada"}},
    }
    assert len(stored().rounds(stored().list()[0].id)) == 1


async def test_one_request_declined_and_the_other_accepted_go_out_together() -> None:
    app = make_app(CallJob("tools/call", "trip", arguments={"city": "Oslo"}), server=rounds_server())
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        await pilot.press("shift+tab", "right", "enter")  # traveller: decline
        await pilot.press("tab", "tab", *"2027-03-01")  # dates: departure; nights keeps its default 3
        assert not form.query_one("#submit", Button).disabled
        await pilot.press("ctrl+s")
        await finished(pilot)
    sent = json.loads(result_text(app).removeprefix("Oslo: "))
    assert sent == {
        "dates": {"action": "accept", "content": {"nights": 3, "start": "2027-03-01"}},
        "traveller": {"action": "decline"},
    }


async def test_a_form_part_no_form_can_hold_is_shown_and_the_form_can_only_be_declined() -> None:
    app = make_app(CallJob("tools/call", "odd", arguments={}), server=rounds_server())
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        panel = form.query_one(FormPanel)
        assert "Not supported here: address: nested objects are not supported" in shown_text(panel)
        assert panel.action == "decline"  # Accept is disabled: a required part cannot be answered
        assert not form.query_one("#submit", Button).disabled
        await pilot.press("ctrl+s")
        await finished(pilot)
    assert json.loads(result_text(app)) == {"where": {"action": "decline"}}


async def test_a_url_is_opened_only_after_consent_and_then_accepted() -> None:
    opened: list[str] = []
    app = make_app(CallJob("tools/call", "connect", arguments={"service": "github"}), opened=opened)
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        assert form.query_one("#submit", Button).disabled  # undecided
        await pilot.press("enter")  # "Review and open…" has the focus
        consent = await screen_of(pilot, UrlConsent)
        assert consent.query_one("#url").render().plain == "https://auth.example.com/connect?service=github"
        assert opened == []
        await pilot.press("escape")  # back, undecided: still nothing opened
        await screen_of(pilot, RoundScreen)
        assert opened == [] and form.query_one(UrlPanel).decision is None
        await pilot.press("enter")
        await screen_of(pilot, UrlConsent)
        await pilot.press("enter")  # "Open in browser"
        await screen_of(pilot, RoundScreen)
        assert opened == ["https://auth.example.com/connect?service=github"]
        await pilot.press("ctrl+s")
        await finished(pilot)
    assert result_text(app) == "Connected 'github'."


async def test_a_plain_http_punycode_link_is_flagged_and_can_be_declined_without_opening() -> None:
    opened: list[str] = []
    app = make_app(CallJob("tools/call", "risky_link", arguments={}), server=rounds_server(), opened=opened)
    async with app.run_test(size=SIZE) as pilot:
        await screen_of(pilot, RoundScreen)
        await pilot.press("enter")
        consent = await screen_of(pilot, UrlConsent)
        text = shown_text(consent)
        assert "not encrypted (http, not https)" in text
        assert "international characters (punycode xn--pple-43d.example)" in text
        consent.query_one("#decline", Button).press()
        await screen_of(pilot, RoundScreen)
        await pilot.press("ctrl+s")
        await finished(pilot)
    assert opened == []
    assert json.loads(result_text(app)) == {"login": {"action": "decline"}}


async def test_server_progress_is_shown_as_a_progress_bar() -> None:
    from textual.widgets import ProgressBar

    app = make_app(CallJob("tools/call", "wait_for_build", arguments={"build": "b1"}))
    async with app.run_test(size=SIZE) as pilot:
        run = await finished(pilot)
        bar = run.query_one(ProgressBar)
        assert (bar.progress, bar.total) == (3, 3)
    assert result_text(app) == "Build b1 finished after 3 checks."


async def test_a_fatal_error_ends_the_app_with_the_exit_code_the_cli_would_use() -> None:
    app = make_app(CallJob("tools/call", "no_such_tool", pairs=("x=1",)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.return_value is not None, "the app to exit")
    ended = app.return_value
    assert ended is not None and ended.code == 2 and ended.error is not None
    assert "no tool 'no_such_tool'" in ended.error.message


async def test_with_nobody_to_answer_the_app_exits_3_and_keeps_the_session() -> None:
    app = make_app(CallJob("tools/call", "provision", arguments={"name": "orders"}), no_input=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.return_value is not None, "the app to exit")
    assert app.return_value is not None and app.return_value.code == 3
    assert app.return_value.need is not None and list(app.return_value.need.pending) == ["region"]
    assert stored().list()[0].status == "waiting"


async def test_quitting_mid_flow_exits_5_and_the_session_can_be_resumed() -> None:
    app = make_app(CallJob("tools/call", "provision", arguments={"name": "orders"}))
    async with app.run_test(size=SIZE) as pilot:
        await screen_of(pilot, RoundScreen)
        await pilot.press("ctrl+q")
        await until(pilot, lambda: app.return_value is not None, "the app to exit")
    ended = app.return_value
    assert ended is not None and ended.code == 5 and ended.error is not None
    session = stored().list()[0]
    assert session.status == "waiting" and f"mcpcli resume {session.id}" in (ended.error.hint or "")


async def test_hostile_server_text_is_shown_escaped_and_never_as_markup() -> None:
    from conftest import stdio_server

    app = make_app(CallJob("tools/call", "trap", arguments={}), server=stdio_server("hostile"))
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        text = shown_text(form)
        assert "Message \\x1b[31mRED\\x1b[0m" in text and "[bold red]markup[/bold red]" in text
        assert "\\u202eevil" in text and "\x1b" not in text and "\u202e" not in text
        title = field(form, "choice").query_one(".field--label").render()
        assert "Title \\x1b[31mRED" in str(title)


async def test_a_required_yes_no_question_is_asked_not_answered_false_for_the_user() -> None:
    from textual.widgets import Select

    app = make_app(CallJob("tools/call", "confirm", arguments={}), server=rounds_server())
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        sure = field(form, "sure")
        submit = form.query_one("#submit", Button)
        assert submit.disabled and "1 field to fill in" in shown_text(form)  # untouched is not "no"
        await pilot.press("ctrl+s")
        assert app.screen is form and "is required" in shown_text(sure)
        sure.query_one(Select).value = False  # the user picks "No"
        await until(pilot, lambda: not submit.disabled, "Submit to be enabled")
        await pilot.press("ctrl+s")
        await finished(pilot)
    assert json.loads(result_text(app)) == {"confirm": {"action": "accept", "content": {"sure": False}}}


async def test_without_colour_the_picked_choices_are_marked_and_the_others_blank(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcpcli.tui.marks import Checklist, Radio

    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(CallJob("tools/call", "onboard", arguments={"team": "data"}))
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        assert app.no_color
        marks = {str(radio.label): radio._button.plain for radio in form.query(Radio)}
        assert marks == {"Accept": "▐●▌", "Decline": "▐ ▌", "Cancel": "▐ ▌"}
        channels = field(form, "channels").query_one(Checklist)  # "email" is picked by default
        boxes = [channels.render_line(y).text[:3] for y in range(channels.option_count)]
        assert boxes[0] == "▐X▌" and set(boxes[1:]) == {"▐ ▌"}, boxes
        label = field(form, "homepage").query_one(".field--label").render()
        assert str(label).startswith("Homepage (optional) · URI")
