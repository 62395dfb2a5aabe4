"""The app's other screens under pilot: sampling review, sessions (resuming in place), the start screen — and
how fast a form is painted after the server's reply.
"""

from __future__ import annotations

import time
from typing import Any

import mcp_types as t
import pytest
from textual.widgets import DataTable, OptionList
from tuikit import SIZE, finished, make_app, pick, screen_of, shown_text, until

from mcpcli.commands.jobs import CallJob
from mcpcli.engine.flow import Flow
from mcpcli.engine.sampling import Decision, SamplingView
from mcpcli.engine.steps import dump
from mcpcli.settings.config import Paths
from mcpcli.state.store import open_store
from mcpcli.tui.round import RoundScreen
from mcpcli.tui.run import RunScreen
from mcpcli.tui.sampling import SamplingReview
from mcpcli.tui.sessions import SessionsScreen
from mcpcli.tui.start import StartScreen

pytestmark = pytest.mark.anyio

FIRST_PAINT_TARGET = 0.5
"""Seconds from the server's reply to the first painted form."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sampling_view() -> SamplingView:
    """A real ``CreateMessageRequest`` as the sampler would show it."""
    request = t.CreateMessageRequest(
        params=t.CreateMessageRequestParams(
            messages=[t.SamplingMessage(role="user", content=t.TextContent(type="text", text="Summarise the report."))],
            system_prompt="You are terse.",
            max_tokens=200,
            temperature=0.2,
        )
    )
    params = dump(request)["params"]
    return SamplingView("demo", "local", "llama3.2", 200, params)


async def review(stage_reply: dict[str, Any] | None, *keys: str) -> Decision:
    """Push a review screen on a bare app, press ``keys``, return what it dismissed with."""
    app = make_app(mode="sessions")
    decided: list[Decision] = []
    async with app.run_test(size=SIZE) as pilot:
        await screen_of(pilot, SessionsScreen)
        app.push_screen(SamplingReview(sampling_view(), stage_reply), decided.append)
        screen = await screen_of(pilot, SamplingReview)
        assert "local/llama3.2" in shown_text(screen) and "max tokens 200" in shown_text(screen)
        await pilot.press(*keys)
        await until(pilot, lambda: bool(decided), "a decision")
    return decided[0]


async def test_sampling_review_approves_the_request_as_shown() -> None:
    assert await review(None, "enter") == Decision("approve")


async def test_sampling_review_rejects_with_escape() -> None:
    assert await review(None, "escape") == Decision("reject")


async def test_sampling_review_edits_the_system_prompt_before_sending() -> None:
    # Edit (tab to it, enter) focuses the system prompt: select all (f7), replace it, tab past the message to Approve.
    keys = ("tab", "enter", "f7", *"Be kind.", "tab", "tab", "enter")
    decision = await review(None, *keys)
    assert decision.action == "edit"
    assert decision.value["systemPrompt"] == "Be kind."
    assert decision.value["messages"] == sampling_view().params["messages"]


async def test_sampling_review_edits_the_reply_before_it_is_returned() -> None:
    reply = {"role": "assistant", "content": {"type": "text", "text": "All good."}, "model": "llama3.2"}
    decision = await review(reply, "tab", "enter", "end", *" Really.", "tab", "enter")
    assert decision == Decision("edit", "All good. Really.")


@pytest.fixture
def waiting(cli: Any) -> Any:
    """A flow saved waiting for its region (no terminal to ask at)."""
    assert cli("call", "provision", "--arg", "name=orders").code == 3
    return open_store(None, Paths.from_env().store_file).list()[0]


async def test_the_sessions_screen_resumes_a_waiting_flow_in_place(waiting: Any) -> None:
    store = open_store(None, Paths.from_env().store_file)
    waiting = store.list()[0]
    app = make_app(mode="sessions")
    async with app.run_test(size=SIZE) as pilot:
        screen = await screen_of(pilot, SessionsScreen)
        table = screen.query_one("#waiting", DataTable)
        assert table.row_count == 1
        assert "region (region)" in str(table.get_row_at(0)[5])  # waiting for
        await pilot.press("enter")
        form = await screen_of(pilot, RoundScreen)
        assert form.info.session_id == waiting.id and form.info.round == 1
        await pilot.press(*"ap-south-1", "enter")
        run = await finished(pilot)
        assert "Provisioned 'orders' in ap-south-1." in shown_text(run)
        await pilot.press("escape")  # back to the list, read again: nothing waits now
        await screen_of(pilot, SessionsScreen)
        assert table.row_count == 0 and screen.query_one("#recent", DataTable).row_count == 1
    assert store.get(waiting.id).status == "done"


@pytest.fixture
def interrupted(cli: Any) -> Any:
    """A driver on another host answered round 1, sent it, and died: its lease ran out with the session running."""
    assert cli("call", "provision", "--arg", "name=cut", "--no-input").code == 3
    store = open_store(None, Paths.from_env().store_file)
    session = store.list()[0]
    lease = store.claim(session.id, host="gone-host", pid=1, ttl=0.001)
    last = store.rounds(session.id)[-1]
    answer = {key: {"action": "accept", "content": {"region": "x"}} for key in last.requests}
    store.record_answers(session.id, last.index, answer, lease=lease)
    return session


async def test_an_interrupted_session_waits_on_the_sessions_screen_and_resumes_in_place(interrupted: Any) -> None:
    session = interrupted
    store = open_store(None, Paths.from_env().store_file)
    app = make_app(mode="sessions")
    async with app.run_test(size=SIZE) as pilot:
        screen = await screen_of(pilot, SessionsScreen)
        table = screen.query_one("#waiting", DataTable)
        assert table.row_count == 1
        status, waits_for = (str(table.get_row_at(0)[column]) for column in (1, 5))
        assert status == "interrupted" and waits_for == "(interrupted: resume sends its answered round again)"
        await pilot.press("enter")
        run = await finished(pilot)
        assert "Provisioned 'cut' in x." in shown_text(run)
    assert store.get(session.id).status == "done"


async def test_the_start_screen_lists_the_tools_and_runs_provision_from_its_form() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        start = await screen_of(pilot, StartScreen)
        await until(pilot, lambda: bool(start.entries), "the catalog")
        names = [e.name for e in start.entries]
        assert {"provision", "onboard", "note", "demo://report/{project}", "demo://readme"} <= set(names)
        catalog = start.query_one("#catalog", OptionList)
        await pick(pilot, start, "provision")
        assert catalog.has_focus
        await pilot.press("enter", *"orders", "enter")  # on to the name field, type, run
        await screen_of(pilot, RoundScreen)
        await pilot.press(*"eu-west-1", "enter")
        run = await finished(pilot)
        assert "Provisioned 'orders' in eu-west-1." in shown_text(run)
        await pilot.press("escape")
        await screen_of(pilot, StartScreen)
    assert app.outcome is not None and app.outcome[1].result["isError"] is False


async def test_the_first_form_is_painted_after_the_servers_reply_and_the_time_is_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Measured under pilot: from the moment the flow holds the server's reply (``Flow._send`` returns) to the
    round screen's first after-refresh callback (``RoundScreen.painted_at``) — the round's durable store
    write, building the screen, layout and the first paint included. The demo's biggest form: 14 fields.

    Speed is measured, not asserted (a loaded machine must not fail the build): the time is printed — run
    ``pytest -s -k first_form`` to read it; the target is under 0.5 s."""
    replied: list[float] = []
    send = Flow._send

    async def timed_send(self: Flow, *args: Any) -> Any:
        result = await send(self, *args)
        replied.append(time.perf_counter())
        return result

    monkeypatch.setattr(Flow, "_send", timed_send)
    app = make_app(CallJob("tools/call", "onboard", arguments={"team": "data"}))
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        await until(pilot, lambda: form.painted_at is not None, "the first paint")
    assert form.painted_at is not None
    elapsed = form.painted_at - replied[0]
    with capsys.disabled():
        target = "ok" if elapsed < FIRST_PAINT_TARGET else "MISS"
        print(f"\nfirst painted form after the server's reply: {elapsed * 1000:.0f} ms (onboard, 14 fields) {target}")
    assert elapsed > 0


def test_the_run_screen_is_the_result_view_of_a_stored_flow(cli: Any) -> None:
    """Resuming a finished session shows its stored result again (no server needed)."""
    import asyncio

    from mcpcli.commands.jobs import ResumeJob

    assert cli("call", "provision", "--arg", "name=orders", "--answer", "region=eu-west-1").code == 0
    session = open_store(None, Paths.from_env().store_file).list()[0]

    async def main() -> None:
        app = make_app(ResumeJob(session.id))
        async with app.run_test(size=SIZE) as pilot:
            run = await finished(pilot)
            assert isinstance(run, RunScreen) and "Provisioned 'orders' in eu-west-1." in shown_text(run)
            await pilot.press("enter")
        assert app.return_value is not None and app.return_value.code == 0

    asyncio.run(main())
