"""MCP Apps in the full-screen app: a tool with a view is marked on the start screen and ctrl+b runs it with its view
(``call TOOL --app`` in the app), the run screen shows the view's one-time link, the result and what the app says;
leaving the screen ends the run (the host closed, nothing left running); a view's ``ui/open-link`` asks in a
dialog; and, in a real browser (Chromium through Playwright's async API, on the pilot's own event loop), a view's
multi-round ``tools/call`` is answered with the app's form while the view sees only the final result.

The server is ``tests/app_servers.py apps`` over stdio, as the config entry ``apps``; no test opens a browser by
itself: the app's ``open_url`` is a recorder (``tuikit.make_app``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList
from tuikit import SIZE, make_app, pick, screen_of, settled, shown_text, until

from mcpcli.commands.app_events import said_line
from mcpcli.commands.jobs import AppOptions, CallJob
from mcpcli.settings.config import private_dir
from mcpcli.tui.apprun import AppRunScreen, LinkConsent
from mcpcli.tui.round import RoundScreen
from mcpcli.tui.start import StartScreen

FIXED_LINK = "http://127.0.0.1:40000/#one-time-token-shown-once-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio


def apps_server() -> str:
    """``tests/app_servers.py apps`` over stdio, as the config entry ``apps`` (a short, machine-independent label)."""
    home = private_dir(Path(os.environ["MCPCLI_HOME"]))
    script = Path(__file__).with_name("app_servers.py")
    entry = f"[mcpServers.apps]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps([str(script), 'apps'])}\n"
    (home / "config.toml").write_text(entry, encoding="utf-8")
    return "apps"


def dashboard(name: str = "Ada", **app: Any) -> CallJob:
    return CallJob("tools/call", "dashboard", arguments={"name": name}, app=AppOptions(**app))


def port_closed(url: str) -> bool:
    port = urlsplit(url).port
    assert port is not None
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


async def app_screen(pilot: Pilot[Any]) -> AppRunScreen:
    screen = await screen_of(pilot, AppRunScreen)
    await until(pilot, lambda: screen.link is not None and screen.finished, "the link and the result")
    return screen


@pytest.mark.anyio
async def test_ctrl_b_on_a_marked_tool_runs_it_with_its_view_and_escape_ends_the_run() -> None:
    opened: list[str] = []
    app = make_app(server=apps_server(), opened=opened)
    async with app.run_test(size=SIZE) as pilot:
        start = await screen_of(pilot, StartScreen)
        await until(pilot, lambda: bool(start.entries), "the catalog")
        shown = [str(option.prompt).strip() for option in start.query_one("#catalog", OptionList).options]
        assert "dashboard [app]" in shown and "model_only" in shown
        assert "gated_view [app]" in shown  # the app declares MCP Apps: a server lists it its app-only offers
        await pick(pilot, start, "dashboard")
        assert start.check_action("run_app", ()) is True
        assert "ctrl+b runs it with the view" in shown_text(start)
        await pilot.press("enter", *"Ada", "ctrl+b")
        screen = await app_screen(pilot)
        link = screen.link
        assert link is not None and link.startswith("http://127.0.0.1:") and len(link.partition("#")[2]) >= 22
        assert opened == [link]  # the browser opened on it (here: recorded, no browser)
        text = shown_text(screen)
        assert link in text and "Hello, Ada!" in text
        assert screen.check_action("back", ()) is True
        assert screen.running is not None and not screen.running.ended.is_set()  # the view stays open
        assert not port_closed(link)
        await pilot.press("escape")
        await screen_of(pilot, StartScreen)
        await until(pilot, screen.running.ended.is_set, "the run to end")
        assert port_closed(link)  # the host is gone with the run
        assert not [w for w in app.workers if w.group == "app" and w.is_running]
        assert app.outcome is not None and app.outcome[1].result["structuredContent"]["name"] == "Ada"
        start.query_one("#catalog", OptionList).focus()
        await pick(pilot, start, "model_only")  # no view: no key for one
        assert start.check_action("run_app", ()) is False


@pytest.mark.anyio
async def test_call_app_tui_shows_the_link_and_hands_the_result_back_on_close() -> None:
    opened: list[str] = []
    app = make_app(dashboard("Bo", browser=False), server=apps_server(), opened=opened)
    async with app.run_test(size=SIZE) as pilot:
        screen = await app_screen(pilot)
        assert opened == []  # --no-browser: only shown
        assert "Open the app in a browser here (one-time link)" in shown_text(screen)
        first = screen.link
        await pilot.press("n")  # a fresh link (the first is short-lived and good once)
        assert screen.link != first and screen.link in shown_text(screen)
        await pilot.press("q")
    assert app.return_value is not None
    assert app.return_value.code == 0
    assert app.return_value.outcome is not None
    assert app.return_value.outcome.result["structuredContent"]["greeting"] == "Hello, Bo!"
    assert first is not None and port_closed(first)


@pytest.mark.anyio
async def test_a_view_that_fails_to_render_says_why_on_the_run_screen_and_nothing_is_called() -> None:
    app = make_app(server=apps_server())
    async with app.run_test(size=SIZE) as pilot:
        start = await screen_of(pilot, StartScreen)
        await until(pilot, lambda: bool(start.entries), "the catalog")
        await pick(pilot, start, "wrong_mime")
        await pilot.press("ctrl+b")
        screen = await screen_of(pilot, AppRunScreen)
        await until(pilot, lambda: screen.finished and screen.ended, "the error")
        assert "not text/html;profile=mcp-app" in shown_text(screen)
        assert screen.link is None


@pytest.mark.anyio
async def test_the_open_link_dialog_says_no_unless_open_is_pressed() -> None:
    app = make_app(dashboard(browser=False), server=apps_server())
    async with app.run_test(size=SIZE) as pilot:
        await app_screen(pilot)
        answers: list[bool] = []
        app.push_screen(LinkConsent("https://example.com/docs"), answers.append)
        await screen_of(pilot, LinkConsent)
        await pilot.press("enter")  # the focused default: don't open
        await until(pilot, lambda: answers == [False], "no")
        app.push_screen(LinkConsent("https://example.com/docs"), answers.append)
        await screen_of(pilot, LinkConsent)
        await pilot.press("tab", "enter")
        await until(pilot, lambda: answers == [False, True], "yes")
        app.push_screen(LinkConsent("https://example.com/docs"), answers.append)
        await screen_of(pilot, LinkConsent)
        await pilot.press("escape")
        await until(pilot, lambda: answers == [False, True, False], "escape: no")


# --- snapshots -------------------------------------------------------------------------------------------------------


def test_the_start_screen_with_a_tool_that_has_a_view(snap_compare: Any) -> None:
    app = make_app(server=apps_server())

    async def run_before(pilot: Pilot[Any]) -> None:
        start = await screen_of(pilot, StartScreen)
        await until(pilot, lambda: bool(start.entries), "the catalog")
        await pick(pilot, start, "dashboard")
        await settled(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_the_run_screen_of_a_tool_with_its_view(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mcpcli.apphost.host.AppHost.page_url", lambda self: FIXED_LINK)
    monkeypatch.setattr("mcpcli.state.store.new_session_id", lambda: "5e55104d0001")
    app = make_app(dashboard(), server=apps_server())

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await app_screen(pilot)
        # What a view says reaches the log as the bridge's news (said_line words it, as on stderr): here without a
        # browser, the lines the view's buttons send (the browser test below sends them for real).
        for kind, params in [
            ("message", {"role": "user", "content": {"type": "text", "text": "hello from the view"}}),
            ("model-context", {"content": [{"type": "text", "text": "context from the view"}]}),
            ("refused", {"method": "tools/call", "reason": "model_only is not visible to apps"}),
        ]:
            line = said_line(kind, params)
            assert line is not None
            screen.add_event(*line)
        await settled(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_the_open_link_dialog(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mcpcli.apphost.host.AppHost.page_url", lambda self: FIXED_LINK)
    monkeypatch.setattr("mcpcli.state.store.new_session_id", lambda: "5e55104d0001")
    app = make_app(dashboard(), server=apps_server())

    async def run_before(pilot: Pilot[Any]) -> None:
        await app_screen(pilot)
        pilot.app.push_screen(LinkConsent("http://example.com/docs?from=view"))
        await screen_of(pilot, LinkConsent)
        await settled(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


# --- in a real browser -----------------------------------------------------------------------------------------------


async def _text(view: Any, selector: str, limit: float = 20.0) -> str:
    """The element's text once it is not empty (polled; the app runs on this loop meanwhile)."""
    element = view.locator(selector)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # the page may drop the view between two looks
            if await element.count() and (text := (await element.inner_text(timeout=500)).strip()):
                return text
        await asyncio.sleep(0.05)
    raise AssertionError(f"{selector} stayed empty")


@pytest.mark.anyio
async def test_a_views_multi_round_call_is_answered_with_the_apps_form_in_a_real_browser() -> None:
    from browser import _unavailable, chromium_path

    path = chromium_path()
    if path is None:
        _unavailable("needs chromium (or $MCPCLI_TEST_CHROMIUM)")  # a skip here, a failure in CI
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        _unavailable("needs playwright (the test extra)")
    app = make_app(dashboard("Cy", browser=False), server=apps_server())
    async with async_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = await playwright.chromium.launch(executable_path=path, headless=True, args=args)
        try:
            await _drive_the_view(app, await browser.new_page())
        finally:
            await browser.close()


async def _drive_the_view(app: Any, page: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        screen = await app_screen(pilot)
        assert screen.link is not None
        await page.goto(screen.link)
        view = page.frame_locator("section.view iframe").frame_locator("iframe")
        assert json.loads(await _text(view, "#tool-result"))["structuredContent"]["greeting"] == "Hello, Cy!"
        await until(pilot, lambda: "The app's view is up." in shown_text(screen), "the view's initialize")

        await view.locator("#call-provision").click()
        form = await screen_of(pilot, RoundScreen)
        assert "provision_app" in shown_text(form)
        await pilot.press("enter", "down", "down", "enter", "tab")  # region: the second choice
        await pilot.press("enter", "down", "enter", "ctrl+s")  # confirm: yes; submit
        provisioned = json.loads(await _text(view, "#provision-result"))
        assert provisioned["structuredContent"]["region"] == "us-east"
        assert provisioned["structuredContent"]["echoedExactly"] is True
        received = await view.locator("#log").inner_text()
        assert "inputRequests" not in received and "input_required" not in received  # only the final result

        await view.locator("#message").click()
        await until(pilot, lambda: "The app says: hello from the view" in shown_text(screen), "the message")
        await view.locator("#open-link").click()
        await screen_of(pilot, LinkConsent)
        await pilot.press("enter")  # the default: don't open
        assert "error" in json.loads(await _text(view, "#open-link-result"))
        await until(pilot, lambda: "not opened (declined)" in shown_text(screen), "the refusal's line")

        await pilot.press("q")  # the run screen closes, and the app: the view is told to close first
    assert screen.running is not None and screen.running.ended.is_set()
    assert "The app's view was told to close (mcpcli stopped)." in screen.lines  # and it answered
    assert app.return_value is not None and app.return_value.code == 0
