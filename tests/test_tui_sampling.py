"""Sampling in the full-screen app: both gates on the review screen, against a real SDK server and a fake LLM."""

from __future__ import annotations

import pytest
from conftest import stdio_server
from fake_llm import serve
from test_sampling import configure

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test-0123456789")


# --- the two gates in the full-screen app ----------------------------------------------------------------------------


async def test_in_the_tui_the_request_and_the_reply_are_approved_on_the_review_screen() -> None:
    from tuikit import SIZE, finished, make_app, screen_of

    from mcpcli.commands.jobs import CallJob
    from mcpcli.tui.sampling import SamplingReview

    with serve("openai-chat") as fake:
        configure(fake.provider(), policy="ask")
        fake.reply("reviewed on screen")
        app = make_app(CallJob("tools/call", "summarize"), server=stdio_server("sampler"))
        async with app.run_test(size=SIZE) as pilot:
            await screen_of(pilot, SamplingReview)
            assert fake.requests == []  # nothing leaves before the request is approved
            await pilot.press("enter")
            review = await screen_of(pilot, SamplingReview)
            assert review.reply is not None  # the second gate: the reply, before it is returned
            await pilot.press("enter")
            await finished(pilot)
            _method, outcome = app.outcome
            assert (
                outcome.result["content"][0]["text"] == "summary by fake-model-2025-01-01 (endTurn): reviewed on screen"
            )
        assert len(fake.requests) == 1


# --- a round that asks a form and a completion, with no LLM provider -------------------------------------------------


async def test_in_the_tui_a_form_beside_sampling_without_a_provider_is_answered_and_kept() -> None:
    from conftest import stdio_server
    from test_flows import only_session, store
    from textual.widgets import Select
    from tuikit import SIZE, field, make_app, screen_of, shown_text, until

    from mcpcli.commands.jobs import CallJob
    from mcpcli.tui.round import RoundScreen

    app = make_app(CallJob("tools/call", "deploy", arguments={"service": "web"}), server=stdio_server("mixed"))
    async with app.run_test(size=SIZE) as pilot:
        where = await screen_of(pilot, RoundScreen)
        await pilot.press(*"eu-west-1", "ctrl+s")
        mixed = await screen_of(pilot, RoundScreen)
        assert mixed is not where
        text = shown_text(mixed)
        assert "asks 2 question" in text  # the form and the sampling request, not "1"
        assert "No LLM provider is configured" in text and "[providers.NAME]" in text  # on the screen, at once
        assert any("No LLM provider is configured" in str(n.message) for n in app._notifications)
        field(mixed, "confirm").query_one(Select).value = True
        await until(pilot, lambda: not mixed.query_one("#submit").disabled, "Submit to be enabled")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.return_value is not None, "the app to exit")
    ended = app.return_value
    assert ended is not None and ended.code == 3  # the sampling request waits in the session
    assert ended.need is not None and list(ended.need.pending) == ["summary"]  # and only it
    session = only_session()
    assert session.status == "waiting"
    last = store().rounds(session.id)[-1]
    assert last.answers == {"approve": {"action": "accept", "content": {"confirm": True}}}  # kept, not thrown away
