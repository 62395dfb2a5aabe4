"""A tool run with its view (MCP Apps) in the full-screen app: what ``mcpcli call TOOL --app`` does, shown here.

``commands.apps`` runs the view's host and bridge and the launching call; the app answers its rounds (and those of
the view's own ``tools/call``) with its forms. This module is the app's side of it: ``AppRunScreen``, the run screen
with the view's one-time link in its header and the app's events in a log below the result; ``TuiAppEvents``,
the ``commands.app_events.AppEvents`` that writes there; and ``LinkConsent``, the yes/no dialog (default no) before
a view's ``ui/open-link`` is opened. Leaving the screen (escape, or quitting) ends the run: the view is told
``ui/resource-teardown`` first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from mcpcli.commands.app_events import Level, parked_line, said_line, teardown_line
from mcpcli.display import sanitize
from mcpcli.errors import ExitCode
from mcpcli.terminal.asking import check_url, url_text
from mcpcli.tui.run import RunScreen
from mcpcli.tui.text import plain

if TYPE_CHECKING:
    from mcpcli.engine.steps import NeedInput, Outcome
    from mcpcli.errors import McpcliError
    from mcpcli.tui.host import Following

EVENTS_KEPT = 500
"""Lines the app's log keeps (the oldest go first)."""


class AppRunScreen(RunScreen):
    """The run screen of a tool with its view: the link to open, the result as usual, and what the app says."""

    DEFAULT_CSS = """
    AppRunScreen #app-link { height: auto; }
    AppRunScreen #app-events {
        height: 10; margin: 0 1; padding: 0 1; border: round $primary; border-title-color: $text;
    }
    AppRunScreen.-short #app-events { height: 5; }
    AppRunScreen .app-event { height: auto; }
    AppRunScreen .app-event.-warning { color: $warning; }
    AppRunScreen .app-event.-detail { color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "copy_link", "Copy link"),
        Binding("n", "new_link", "New link"),
    ]

    def __init__(self, title: str, *, standalone: bool) -> None:
        super().__init__(title, standalone=standalone)
        self.link: str | None = None
        """The view's one-time link, once the host is up."""
        self.renew: Callable[[], str] | None = None
        self.running: Following | None = None
        """The app's worker for this run: stopped when the screen goes (the view is told to close first)."""
        self.ended = False
        """The run is over (the view closed, or the run failed): nothing more will come."""
        self.lines: list[str] = []
        """The log's lines (the last ``EVENTS_KEPT``), also those said as the screen went (the teardown's)."""

    def compose_header(self) -> ComposeResult:
        yield Static("Opening the app's host…", id="app-link", classes="muted")

    def compose_below(self) -> ComposeResult:
        events = VerticalScroll(id="app-events")
        events.border_title = "The app"
        yield events

    def set_status(self, text: str) -> None:
        if self.is_attached:  # the run's last words may come as the screen goes
            super().set_status(text)

    def closing_hint(self) -> str:
        if self.ended:
            return super().closing_hint()
        leave = "q: close it and exit" if self.standalone else "escape: close it and go back"
        return f"The view stays open in your browser · {leave}"

    def show_link(self, url: str, *, opened: bool, renew: Callable[[], str] | None) -> None:
        self.link, self.renew = url, renew
        said = "Opened in your browser; if it did not open, visit" if opened else "Open the app in a browser here"
        shown = self.query_one("#app-link", Static)
        shown.update(plain(f"{said} (one-time link): {url}"))
        shown.remove_class("muted")
        self.refresh_bindings()

    def add_event(self, level: Level, text: str) -> None:
        """One line in the app's log (already worded and sanitized)."""
        self.lines.append(text)
        del self.lines[:-EVENTS_KEPT]
        if not self.is_attached:
            return
        box = self.query_one("#app-events", VerticalScroll)
        lines = box.query(".app-event")
        if len(lines) >= EVENTS_KEPT:
            lines.first().remove()
        box.mount(Static(plain(text), classes=f"app-event -{level}"))
        box.scroll_end(animate=False)

    def run_ended(self, why: str) -> None:
        """The run is over: the view closed (or never will be shown); the screen stays until left."""
        self.ended = True
        self.add_event("detail", why)
        if self.finished:
            self.set_status(self.closing_hint())
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Back at any time (it closes the view); the link's keys while the view may still be opened."""
        if action == "back":
            return not self.standalone
        if action == "close" and self.ended:
            return True
        if action in ("copy_link", "new_link"):
            return self.link is not None and not self.ended and (action == "copy_link" or self.renew is not None)
        return super().check_action(action, parameters)

    def action_back(self) -> None:
        if not self.standalone:
            self.dismiss(None)

    def action_close(self) -> None:
        if self.finished or self.ended:
            self.dismiss(None)

    def action_copy_link(self) -> None:
        if self.link is not None:
            self.app.copy_to_clipboard(self.link)
            self.notify("The link is on the clipboard.", title="Copied")

    def action_new_link(self) -> None:
        """A link is good once and for a short while: another one for the same view."""
        if self.renew is not None and not self.ended:
            self.show_link(self.renew(), opened=False, renew=self.renew)

    def on_unmount(self) -> None:
        super().on_unmount()
        if self.running is not None:
            self.running.stop()


class TuiAppEvents:
    """``AppEvents`` for the full-screen app: the link in the run screen's header, the result in its result panel,
    everything else as lines in its log (worded as the CLI words them on stderr)."""

    def __init__(
        self, screen: AppRunScreen, on_result: Callable[[Outcome], None], on_error: Callable[[McpcliError], None]
    ) -> None:
        self.screen = screen
        self.on_result = on_result
        self.on_error = on_error
        self.need: NeedInput | None = None
        """The launching call waits for input nobody here can give (the run ends with exit 3)."""

    def url(self, url: str, *, opened: bool, renew: Callable[[], str] | None = None) -> None:
        self.screen.show_link(url, opened=opened, renew=renew)

    def result(self, done: Outcome) -> ExitCode:
        self.on_result(done)
        if self.screen.is_attached:
            self.screen.show_result("tools/call", done)
        return ExitCode(int(done.exit_code))

    def waiting(self, need: NeedInput) -> int:
        self.need = need
        if self.screen.is_attached:
            self.screen.show_waiting(need)
        return int(ExitCode.INPUT_REQUIRED)

    def error(self, exc: McpcliError) -> None:
        from mcpcli.terminal.hints import worded

        worded(exc)
        self.on_error(exc)
        if self.screen.is_attached:
            self.screen.show_error(exc)

    def teardown(self, reason: str, *, answered: bool) -> None:
        self.screen.add_event("detail", teardown_line(reason, answered=answered))

    def note(self, text: str) -> None:
        self.screen.add_event("note", text)

    def warning(self, text: str) -> None:
        self.screen.add_event("warning", text)

    def parked(self, tool: str, need: NeedInput) -> None:
        self.screen.add_event("warning", parked_line(tool, need))

    def view_call(self, tool: str, outcome: Outcome) -> None:
        self.screen.add_event("detail", f"The app called {sanitize(tool)}.")

    def link(self, url: str, *, opened: bool, why: str | None) -> None:
        if opened:
            self.screen.add_event("note", f"Opened the app's link {sanitize(url)}.")
        else:
            self.screen.add_event("warning", f"The app asked to open {sanitize(url)}; not opened ({why}).")

    def said(self, kind: str, params: dict[str, Any]) -> None:
        line = said_line(kind, params)
        if line is not None:
            self.screen.add_event(*line)


class LinkConsent(ModalScreen[bool]):
    """A view's ``ui/open-link``: open it in the browser, or not (the default: escape, or enter on "Don't open")."""

    DEFAULT_CSS = """
    LinkConsent { align: center middle; }
    LinkConsent > Vertical {
        width: 90%; max-width: 110; height: auto; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    LinkConsent .link--message { text-style: bold; margin-bottom: 1; }
    LinkConsent .link--warning { color: $warning; }
    LinkConsent .link--refused { color: $error; text-style: bold; }
    LinkConsent Horizontal { height: auto; margin-top: 1; }
    LinkConsent Button { margin-right: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "refuse", "Don't open")]

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.check = check_url(url)

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Open a link?"
            yield Static("The app asks to open this link in your browser:", classes="link--message")
            yield Static(Content.from_rich_text(url_text(self.url)), id="link-url")
            for warning in self.check.warnings:
                yield Static(plain(f"! {warning}"), classes="link--warning")
            if self.check.refused:
                yield Static("This link is not a web page; it cannot be opened.", classes="link--refused")
            with Horizontal():
                yield Button("Don't open", id="refuse", variant="primary")
                yield Button("Open in browser", id="open", variant="warning", disabled=self.check.refused)

    def on_mount(self) -> None:
        self.query_one("#refuse", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "open" and not self.check.refused)

    def action_refuse(self) -> None:
        self.dismiss(False)
