"""Driving the full-screen app in tests: the CLI's own factory, its options, and waiting on state — never on time.

Every app here comes from ``mcpcli.tui.app.build_app`` (as ``mcpcli call --tui`` builds it), with a
steady cursor and a recorder instead of a browser.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget

from mcpcli.commands.runtime import AnswerOptions, Globals, Runtime
from mcpcli.tui.app import McpcliApp, build_app
from mcpcli.tui.fields import FieldWidget
from mcpcli.tui.run import RunScreen

SIZE = (100, 40)
"""Every test and snapshot runs at this terminal size."""

S = TypeVar("S", bound=Screen[Any])


def options(**given: Any) -> AnswerOptions:
    """The answer options of ``call`` with no flags given (override any)."""
    values: dict[str, Any] = {
        "answer": [],
        "answers": None,
        "decline": [],
        "cancel": [],
        "accept": [],
        "accept_defaults": False,
        "no_input": False,
        "roots": [],
        "max_rounds": 10,
        "timeout": None,
        "json": False,
    }
    return AnswerOptions(**{**values, **given})


def make_app(
    job: Any = None, *, server: str | None = "demo", mode: Any = None, opened: list[str] | None = None, **given: Any
) -> McpcliApp:
    """The app as the CLI builds it; URLs the user agreed to open are appended to ``opened``."""
    rt = Runtime(Globals(server=server))
    sink = opened if opened is not None else []
    return build_app(rt, options(**given), job=job, mode=mode, open_url=sink.append, blink=False)


async def until(pilot: Pilot[Any], holds: Callable[[], bool], what: str, limit: float = 30.0) -> None:
    """Let the app run (one idle cycle at a time) until ``holds()``; fail after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not holds():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; screen is {pilot.app.screen!r}")
        await pilot.pause()


async def screen_of(pilot: Pilot[Any], kind: type[S]) -> S:
    """Wait until the top screen is a ``kind`` and has painted once (a round screen's forms are all composed by
    then: keys pressed before would go nowhere on a loaded machine); return it."""

    def ready() -> bool:
        screen = pilot.app.screen
        return isinstance(screen, kind) and screen.is_mounted and getattr(screen, "painted_at", 0) is not None

    await until(pilot, ready, kind.__name__)
    await pilot.pause()  # a screen back on top after a modal closed: let its resume run before the next key
    screen = pilot.app.screen
    assert isinstance(screen, kind)
    return screen


async def finished(pilot: Pilot[Any]) -> RunScreen:
    """Wait until the flow on the run screen has ended (result, error or waiting)."""
    await until(pilot, lambda: isinstance(pilot.app.screen, RunScreen) and pilot.app.screen.finished, "the result")
    screen = pilot.app.screen
    assert isinstance(screen, RunScreen)
    return screen


def field(screen: Screen[Any], name: str) -> FieldWidget:
    """The field widget of the form field ``name`` (on the given screen)."""
    found = [w for w in screen.query(FieldWidget) if w.spec.name == name]
    assert len(found) == 1, f"{len(found)} fields named {name!r}"
    return found[0]


def shown_text(screen: Screen[Any] | Widget) -> str:
    """Every Static's text on a screen or under a widget, joined (to assert on what the user reads)."""
    from textual.widgets import Static

    return "\n".join(str(static.render()) for static in screen.query(Static))


async def pick(pilot: Pilot[Any], start: Any, name: str) -> None:
    """Move down the start screen's catalog until the entry ``name`` is shown."""
    for _ in range(len(start.entries) + 5):
        if start.current is not None and start.current.name == name:
            return
        await pilot.press("down")
    raise AssertionError(f"no entry {name!r} in the catalog")


def rounds_server() -> str:
    """``tests/servers.py rounds`` over stdio, as the config entry ``rounds`` (a short, machine-independent label)."""
    import json
    import os
    import sys
    from pathlib import Path

    from mcpcli.settings.config import private_dir

    home = private_dir(Path(os.environ["MCPCLI_HOME"]))
    servers = Path(__file__).with_name("servers.py")
    args = json.dumps([str(servers), "rounds"])
    entry = f"[mcpServers.rounds]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n"
    (home / "config.toml").write_text(entry, encoding="utf-8")
    return "rounds"


async def settled(pilot: Pilot[Any], limit: float = 30.0) -> None:
    """Wait until the screen stands still, as a snapshot must catch it: the focused widget scrolled entirely into
    view, no scroll animating or still to go, and nothing moved over one more idle cycle. A loaded machine runs
    the scroll that a focus starts over many frames; a snapshot taken on time alone catches it mid-way."""
    app = pilot.app

    def offsets() -> list[tuple[float, float]]:
        return [(w.scroll_x, w.scroll_y) for w in app.screen.walk_children(Widget) if isinstance(w, Widget)]

    def still() -> bool:
        screen = app.screen
        for widget in (screen, *screen.walk_children(Widget)):
            if (widget.scroll_x, widget.scroll_y) != (widget.scroll_target_x, widget.scroll_target_y):
                return False
            if app.animator.is_being_animated(widget, "scroll_y") or app.animator.is_being_animated(widget, "scroll_x"):
                return False
        return app.focused is None or screen.can_view_entire(app.focused)

    deadline = time.monotonic() + limit
    while True:
        await pilot.wait_for_scheduled_animations()
        await until(pilot, still, "the screen to stop scrolling", max(deadline - time.monotonic(), 0.1))
        before = offsets()
        await pilot.pause()
        if still() and offsets() == before:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the screen kept moving; screen is {app.screen!r}")


async def mounted(pilot: Pilot[Any], screen: Screen[Any], selector: str) -> Widget:
    """Wait until ``selector`` names a mounted widget of ``screen`` (a form's fields are composed after the screen
    itself, later still on a loaded machine); return it."""
    await until(pilot, lambda: any(w.is_mounted for w in screen.query(selector)), selector)
    return screen.query_one(selector)
