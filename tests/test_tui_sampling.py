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
