"""The run screen: one flow's call, its progress, and its result (or why it stopped).

The flow runs in the app's worker; this screen only shows what the worker reports. Results are shown
the way ``output`` prints them — text blocks as text — plus structured content as JSON, images and audio
described, and a tool error in an error panel. Everything from the server goes through ``text.plain``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, ProgressBar, Static

from mcpcli.display import progress_numbers
from mcpcli.errors import McpcliError
from mcpcli.tui.host import Following, host
from mcpcli.tui.text import plain, pretty_json

if TYPE_CHECKING:
    from mcpcli.engine.steps import NeedInput, Outcome
    from mcpcli.net.tasks import TaskControl


def _block(block: Mapping[str, Any]) -> Static:
    kind = block.get("type")
    if kind == "text":
        return Static(plain(block.get("text", "")), classes="result--text")
    if kind in ("image", "audio"):
        described = f"[{kind} {block.get('mimeType', '')}, {len(block.get('data', ''))} base64 chars]"
        return Static(plain(described), classes="result--described")
    if kind == "resource_link":
        return Static(plain(f"[link {block.get('name', '')}: {block.get('uri', '')}]"), classes="result--described")
    if kind == "resource":
        res = block.get("resource") or {}
        return Static(plain(res.get("text", f"[resource {res.get('uri', '')}]")), classes="result--text")
    return Static(pretty_json(dict(block)), classes="result--json")


def result_widgets(method: str, result: Mapping[str, Any]) -> Iterable[Static]:
    """A flow's result as widgets: the same content ``output.result`` prints, plus structured content."""
    if method == "prompts/get":
        if result.get("description"):
            yield Static(plain(result["description"]), classes="result--described")
        for message in result.get("messages") or []:
            yield Static(plain(f"{message.get('role', '?')}:"), classes="result--role")
            yield _block(message.get("content") or {})
        return
    if method == "resources/read":
        for item in result.get("contents") or []:
            if "text" in item:
                yield Static(plain(item["text"]), classes="result--text")
            else:
                size = len(item.get("blob", ""))
                shown = f"[binary {item.get('mimeType') or 'data'} at {item.get('uri')}, {size} base64 chars]"
                yield Static(plain(shown), classes="result--described")
        return
    for block in result.get("content") or []:
        yield _block(block)
    if result.get("structuredContent") is not None:
        yield Static("Structured content", classes="result--role")
        yield Static(pretty_json(result["structuredContent"]), classes="result--json")


WAITING_KEYS_SHOWN = 20
"""Request keys the waiting panel lists; the rest are counted (a round may ask thousands)."""


class RunScreen(Screen[None]):
    """A flow from call to result. ``standalone``: the app's only job (``call --tui``); enter/q then exit."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "close", "Close"),
        Binding("enter", "close", "Close", show=False),
        Binding("escape", "back", "Back"),
        Binding("d", "detach", "Detach task"),
        Binding("f", "follow", "Follow updates"),
        Binding("c", "cancel_task", "Cancel task"),
    ]

    def __init__(self, title: str, *, standalone: bool) -> None:
        super().__init__()
        self.title_text = title
        self.standalone = standalone
        self.finished = False
        """The flow has ended (result, error or waiting): closing the screen is now safe."""
        self.task_control: TaskControl | None = None
        """The task the call became, while it runs: what the detach and cancel keys ask of it."""
        self.follow_uri: str | None = None
        """A read's resource URI: its result can follow the server's updates (``f``)."""
        self.following: Following | None = None
        """The app's watch of ``follow_uri`` while it follows (cancelled when the screen closes)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="run-header"):
            yield Static(plain(self.title_text, "bold"), id="run-title")
            yield Static("Connecting…", id="run-status", classes="muted")
            yield from self.compose_header()
        yield ProgressBar(id="run-progress", show_eta=False)
        yield VerticalScroll(id="run-result")
        yield from self.compose_below()
        yield Footer()

    def compose_header(self) -> ComposeResult:
        """More lines in the header (an app run's link)."""
        yield from ()

    def compose_below(self) -> ComposeResult:
        """More below the result (an app run's events)."""
        yield from ()

    def closing_hint(self) -> str:
        """What the status says once the flow has ended."""
        return "enter or q: close" if self.standalone else "escape: back"

    def on_mount(self) -> None:
        self.query_one(ProgressBar).display = False

    def set_status(self, text: str) -> None:
        self.query_one("#run-status", Static).update(plain(text))

    def show_progress(self, progress: float, total: float | None, message: str | None) -> None:
        bar = self.query_one(ProgressBar)
        bar.display = True
        progress, total = progress_numbers(progress, total)
        bar.update(total=total, progress=progress)
        if message:
            self.set_status(message)

    def show_task(self, task_id: str, status: str, message: str | None, control: TaskControl) -> None:
        """The call runs as a task on the server: its status and message, and the detach and cancel keys."""
        self.task_control = control
        said = f" — {message}" if message else ""
        self.set_status(f"Task {task_id} · {status.replace('_', ' ')}{said}")
        self.refresh_bindings()

    def _show(self, *widgets: Static, title: str, classes: str) -> None:
        self.finished = True
        self.task_control = None
        self.query_one(ProgressBar).display = False
        box = self.query_one("#run-result", VerticalScroll)
        box.remove_children()
        panel = Vertical(*widgets, classes=f"result {classes}")
        panel.border_title = plain(title)
        box.mount(panel)
        self.set_status(self.closing_hint())
        self.refresh_bindings()

    def show_result(self, method: str, outcome: Outcome) -> None:
        """The final result in the result panel, an error result marked as one; the header says done and the keys
        that close."""
        session = outcome.session
        if (outcome.detached or outcome.cancelled) and session is not None:
            task = str((session.task or {}).get("id"))
            if outcome.detached:
                lines = [f"Task {task} keeps running on the server.", f"Continue it with: mcpcli resume {session.id}"]
            else:
                lines = [f"Task {task}: cancellation sent (the server decides when it stops)."]
            title = ("Task left running" if outcome.detached else "Task cancelled") + f" · session {session.id}"
            self._show(*(Static(plain(line)) for line in lines), title=title, classes="-waiting")
            return
        result = outcome.result
        error = method == "tools/call" and bool(result.get("isError"))
        title = "The tool reported an error" if error else "Result"
        if outcome.session is not None:
            title += f" · session {outcome.session.id}"
        widgets = list(result_widgets(method, result)) or [Static("(empty result)", classes="muted")]
        if (refusal := outcome.refusal()) is not None:
            widgets.append(Static(plain(refusal), classes="muted"))
        self._show(*widgets, title=title, classes="-error" if error else "-ok")

    def show_update(self, result: Mapping[str, Any]) -> None:
        """The followed resource changed: its contents as read again."""
        widgets = list(result_widgets("resources/read", result)) or [Static("(empty result)", classes="muted")]
        box = self.query_one("#run-result", VerticalScroll)
        box.remove_children()
        panel = Vertical(*widgets, classes="result -ok")
        panel.border_title = plain(f"Updated {datetime.now().strftime('%H:%M:%S')} · following")
        box.mount(panel)

    def show_error(self, exc: McpcliError) -> None:
        widgets = [Static(plain(exc.message))]
        if exc.hint:
            widgets.append(Static(plain(exc.hint), classes="muted"))
        self._show(*widgets, title=exc.title, classes="-error")

    def show_waiting(self, need: NeedInput) -> None:
        lines = [Static(plain(need.message))]
        keys = list(need.pending)
        lines += [Static(plain(f"• {key}"), classes="muted") for key in keys[:WAITING_KEYS_SHOWN]]
        if len(keys) > WAITING_KEYS_SHOWN:
            lines.append(Static(plain(f"… and {len(keys) - WAITING_KEYS_SHOWN:,} more"), classes="muted"))
        if need.hint:
            lines.append(Static(plain(need.hint), classes="muted"))
        self._show(*lines, title="Input required · session saved", classes="-waiting")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Close once the flow has ended; back only to a start or sessions screen (hidden otherwise)."""
        if action == "close":
            return self.finished
        if action == "back":
            return self.finished and not self.standalone
        if action in ("detach", "cancel_task"):
            return self.task_control is not None and not self.finished
        if action == "follow":
            return self.finished and self.follow_uri is not None and self.following is None
        return True

    def action_follow(self) -> None:
        if self.follow_uri is not None and self.following is None and hasattr(self.app, "follow_resource"):
            host(self.app).follow_resource(self.follow_uri, self)
            self.set_status("Following updates of this resource (escape or q: stop).")
            self.refresh_bindings()

    def on_unmount(self) -> None:
        if self.following is not None:
            self.following.stop()

    def action_detach(self) -> None:
        if self.task_control is not None:
            self.task_control.ask("detach")
            self.set_status("Detaching…")

    def action_cancel_task(self) -> None:
        if self.task_control is not None:
            self.task_control.ask("cancel")
            self.set_status("Cancelling the task…")

    def action_close(self) -> None:
        if self.finished:
            self.dismiss(None)  # the app decides what closing means (exit, or back to the start screen)

    def action_back(self) -> None:
        if self.finished and not self.standalone:
            self.dismiss(None)
