"""The round screen: every input request of a round on one screen, answered and submitted together.

The protocol sends a round's answers in one retry, so the screen has one panel per request key — a form,
or a URL to consent to — each with its own accept / decline / cancel, and a single Submit that stays
disabled until every accepted form is valid. Keyboard: tab moves through the fields, enter in a field
submits (or shows what is missing), escape cancels the whole round, ctrl+q quits and keeps the session.

Nothing here talks to a server: the screen is given the questions and returns the answers (``dismiss``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import mcp_types as t
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.lazy import Lazy
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Footer, RadioSet, Static

from mcpcli import forms
from mcpcli.display import counted
from mcpcli.engine.steps import Question
from mcpcli.terminal.asking import check_url, url_text
from mcpcli.tui.fields import NOT_GIVEN, FieldWidget, field_widget
from mcpcli.tui.marks import Radio
from mcpcli.tui.text import compact_json, plain, pretty_json
from mcpcli.tui.url import UrlConsent, UrlDecision

Action = Literal["accept", "decline", "cancel"]

EAGER_FIELDS = 6
"""Fields mounted with the screen; the rest follow right after its first paint (``Lazy``), so that even a long
form is on screen within a fraction of a second of the server's reply (target: 0.5 s)."""
RoundAnswers = dict[str, t.ElicitResult]
"""What the round screen returns: an answer for every request key it was shown."""


@dataclass(frozen=True)
class RoundInfo:
    """What the header says: who asks, in which call, which round of which session."""

    server: str
    method: str
    name: str
    arguments: dict[str, Any]
    round: int
    session_id: str


class RequestPanel(Vertical):
    """One request of the round. Subclasses say what would be sent, or why nothing can be yet."""

    DEFAULT_CSS = """
    RequestPanel { height: auto; border: round $primary; padding: 0 1; margin: 0 0 1 0; }
    RequestPanel.-problem { border: round $warning; }
    RequestPanel > .panel--message { text-style: bold; margin-bottom: 1; }
    RequestPanel > RadioSet { layout: horizontal; width: auto; margin-bottom: 1; }
    RequestPanel > RadioSet > RadioButton { width: auto; margin-right: 2; }
    RequestPanel > .panel--note { color: $text-muted; }
    RequestPanel > .panel--unsupported { color: $warning; }
    """

    class Changed(Message):
        """The panel's answer (or whether it can be sent) changed."""

    def __init__(self, question: Question, *, id: str) -> None:
        super().__init__(id=id)
        self.question = question
        self.border_title = plain(question.key)  # a str would be parsed as markup, and the server chose the key

    def answer(self) -> t.ElicitResult | None:
        """The answer to send, or None while it cannot be sent."""
        raise NotImplementedError

    def problem(self) -> str | None:
        """Why the answer cannot be sent yet, in a few words."""
        raise NotImplementedError

    def update_state(self) -> None:
        self.set_class(self.problem() is not None, "-problem")
        self.post_message(self.Changed())


def _field_of(widget: Widget | None) -> FieldWidget | None:
    """The form field a control belongs to (None: a button, a radio set, no widget)."""
    return next((node for node in widget.ancestors if isinstance(node, FieldWidget)), None) if widget else None


def _action_picker(*, accept_possible: bool = True) -> RadioSet:
    return RadioSet(
        Radio("Accept", value=accept_possible, disabled=not accept_possible),
        Radio("Decline", value=not accept_possible),
        Radio("Cancel"),
        classes="panel--action",
    )


class FormPanel(RequestPanel):
    """A form-mode request: its message, its fields, and what is not supported (shown, never sent)."""

    def __init__(self, question: Question, preset: dict[str, Any], *, id: str) -> None:
        super().__init__(question, id=id)
        params = question.request.params
        assert isinstance(params, t.ElicitRequestFormParams)
        self.message = params.message
        self.schema = params.requested_schema
        try:
            self.specs, self.unsupported = forms.parse_schema_lenient(self.schema)
            self.broken: str | None = None
        except forms.SchemaError as exc:
            self.specs, self.unsupported, self.broken = [], [], str(exc)
        self.initial = {**forms.defaults(self.specs), **preset}

    @property
    def acceptable(self) -> bool:
        return self.broken is None and not any(item.required for item in self.unsupported)

    def compose(self) -> ComposeResult:
        yield Static(plain(self.message), classes="panel--message")
        yield _action_picker(accept_possible=self.acceptable)
        for index, spec in enumerate(self.specs):
            widget = field_widget(spec, self.initial.get(spec.name), id=f"{self.id}-f{index}")
            yield widget if index < EAGER_FIELDS else Lazy(widget)
        if self.broken is not None:
            yield Static(plain(f"This form cannot be shown: {self.broken}."), classes="panel--unsupported")
            yield Static(pretty_json(self.schema), classes="panel--note")
        for item in self.unsupported:
            what = "required, so the form can only be declined" if item.required else "it will be left out"
            yield Static(plain(f"Not supported here: {item.reason} ({what})."), classes="panel--unsupported")
        if not self.specs and self.broken is None:
            yield Static("No fields: accepting just says yes.", classes="panel--note")

    def on_mount(self) -> None:
        for field in self.fields():
            field.refresh_error()
        self._enable_fields()

    def fields(self) -> list[FieldWidget]:
        return list(self.query(FieldWidget))

    @property
    def action(self) -> Action:
        index = self.query_one(RadioSet).pressed_index
        return ("accept", "decline", "cancel")[index] if index >= 0 else "accept"

    def answer(self) -> t.ElicitResult | None:
        if self.action != "accept":
            return t.ElicitResult(action=self.action)
        if self.problem() is not None:
            return None
        content = {f.spec.name: value for f in self.fields() if (value := f.value()) is not NOT_GIVEN}
        return t.ElicitResult(action="accept", content=content)

    def problem(self) -> str | None:
        if self.action != "accept":
            return None
        if not self.acceptable:
            return "cannot be accepted; decline or cancel it"
        if len(self.fields()) < len(self.specs):
            return "showing the rest of the form"  # Lazy fields not mounted yet: nothing is sent half-checked
        wrong = [f for f in self.fields() if f.error() is not None]
        shown = [f for f in wrong if f.touched]
        # A field nobody has touched yet is not "to fix": it is still to fill in (its error shows once touched).
        parts = [f"{counted(len(shown), 'field')} to fix"] if shown else []
        if left := len(wrong) - len(shown):
            parts.append(f"{counted(left, 'field')} to fill in" if not shown else f"{left} to fill in")
        return ", ".join(parts) or None

    def reveal(self) -> FieldWidget | None:
        """Show every error (an attempt to send); the first field in error, to focus."""
        first = None
        for field in self.fields():
            field.reveal_errors = True
            if field.refresh_error() is not None and first is None:
                first = field
        self.update_state()
        return first if self.action == "accept" else None

    def _enable_fields(self) -> None:
        for field in self.fields():
            field.disabled = self.action != "accept"

    @on(RadioSet.Changed)
    def _action_changed(self, event: RadioSet.Changed) -> None:
        event.stop()
        self._enable_fields()
        self.update_state()

    @on(FieldWidget.Changed)
    def _field_changed(self, event: FieldWidget.Changed) -> None:
        event.stop()
        if event.mounted:
            event.field.disabled = self.action != "accept"
        self.update_state()


class UrlPanel(RequestPanel):
    """A URL-mode request: the link (host emphasised, warnings) and the decision taken in ``UrlConsent``."""

    def __init__(self, question: Question, *, open_url: Callable[[str], object], id: str) -> None:
        super().__init__(question, id=id)
        params = question.request.params
        assert isinstance(params, t.ElicitRequestURLParams)
        self.message = params.message
        self.url = params.url
        self.open_url = open_url
        self.decision: UrlDecision | None = None

    def compose(self) -> ComposeResult:
        yield Static(plain(self.message), classes="panel--message")
        yield Static(Content.from_rich_text(url_text(self.url)))
        for warning in check_url(self.url).warnings:
            yield Static(plain(f"! {warning}"), classes="panel--unsupported")
        yield Static("Not decided yet.", classes="panel--note", id=f"{self.id}-status")
        with Horizontal(classes="panel--buttons"):
            yield Button("Review and open…", id=f"{self.id}-review", variant="warning")
            yield Button("Decline", id=f"{self.id}-decline")
            yield Button("Cancel", id=f"{self.id}-cancel")

    def answer(self) -> t.ElicitResult | None:
        return None if self.decision is None else t.ElicitResult(action=self.decision.action)

    def problem(self) -> str | None:
        return "open, decline or cancel the link" if self.decision is None else None

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        name = str(event.button.id).rsplit("-", 1)[-1]
        if name == "review":
            screen = UrlConsent(self.message, self.url, server=self.question.server)
            self.app.push_screen(screen, self.decide)
        else:
            self.decide(UrlDecision("decline" if name == "decline" else "cancel"))

    def decide(self, decision: UrlDecision | None) -> None:
        """The person's choice on the consent screen (``None``: backed out, nothing decided). The browser opens only
        here, after an explicit "Open in browser"; the panel then says what submitting will send."""
        if decision is None:
            return
        if decision.open:
            self.open_url(self.url)  # only now, after an explicit "Open in browser"
        self.decision = decision
        status = {
            "accept": "Opened in your browser; submit when you have finished on that page."
            if decision.open
            else "Done already; submitting accepts it.",
            "decline": "Declined.",
            "cancel": "Cancelled.",
        }[decision.action]
        self.query_one(f"#{self.id}-status", Static).update(status)
        self.update_state()


class RoundScreen(Screen[RoundAnswers | None]):
    """All of a round's requests; dismissed with an answer for each (``None``: quit, session kept)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # A priority binding runs as the app reads the key, before it hands the keys typed after it to the focused
        # widget: the focus moved to the first field to fix is where they land, not the field the cursor was in.
        Binding("ctrl+s", "submit", "Submit", priority=True),
        Binding("escape", "cancel_all", "Cancel all"),
    ]

    def __init__(
        self,
        info: RoundInfo,
        questions: Sequence[Question],
        *,
        presets: Callable[[Question], dict[str, Any]],
        open_url: Callable[[str], object],
        left: Sequence[tuple[str, str]] = (),
    ) -> None:
        """``presets`` gives each form its pre-filled values; ``open_url`` is called only on an explicit choice;
        ``left`` lists the round's requests this screen does not answer (key, what becomes of it)."""
        super().__init__()
        self.info = info
        self.questions = list(questions)
        self.left = list(left)
        """The round's other requests, not answered here (a sampling request): (key, what becomes of it)."""
        self.presets = presets
        self.open_url = open_url
        self._status = ""
        self.painted_at: float | None = None
        """``time.perf_counter()`` at the screen's first paint (how fast a form appears is a target: 0.5 s)."""

    def compose(self) -> ComposeResult:
        """The header (who asks, the call, the session), a panel per request (server text never read as markup) and a
        note for each request left to others, then the submit row: disabled until every answer fits."""
        info = self.info
        with Vertical(id="round-header"):
            asked = len(self.questions) + len(self.left)
            title = plain(f"{info.server} asks {counted(asked, 'question')} ", "bold")  # the space ends a run
            yield Static(title + plain(f"· round {info.round}"), id="round-title")
            yield Static(plain(f"{info.method} {info.name} {compact_json(info.arguments)}"), classes="muted")
            yield Static(plain(f"session {info.session_id}"), classes="muted")
        with VerticalScroll(id="round-panels"):
            for index, question in enumerate(self.questions):
                yield self._panel(question, index)
            for key, note in self.left:
                with Vertical(classes="round--left") as panel:
                    panel.border_title = plain(key)  # the server chose the key: never markup
                    yield Static(plain(note), classes="panel--note")
        with Horizontal(id="round-actions"):
            yield Static("", id="round-status")
            yield Button("Submit", id="submit", variant="primary", disabled=True)
        yield Footer()

    def _panel(self, question: Question, index: int) -> RequestPanel:
        params = question.request.params
        if isinstance(params, t.ElicitRequestURLParams):
            return UrlPanel(question, open_url=self.open_url, id=f"req{index}")
        return FormPanel(question, self.presets(question), id=f"req{index}")

    def on_mount(self) -> None:
        self.call_after_refresh(self._painted)
        self._refresh_state()
        first = next(iter(self.query("FieldWidget Input, FieldWidget Select, FieldWidget Switch")), None)
        if first is None:
            first = next(iter(self.query("RequestPanel Button, RequestPanel RadioSet")), None)
        if first is not None:
            first.focus()

    def set_focus(self, widget: Widget | None, scroll_visible: bool = True, from_app_focus: bool = False) -> None:
        """Focus ``widget``; a form field's control is scrolled into view with its label — and, for the first field
        of a request, with the request's question — above it, as far as the screen holds them (Textual alone
        scrolls the control just into view, its label left above the top edge on the way back up)."""
        holder = _field_of(widget)
        super().set_focus(widget, scroll_visible and holder is None, from_app_focus)
        if holder is not None and scroll_visible:
            self.call_after_refresh(self._show_field, widget, holder)

    def _show_field(self, control: Widget, holder: FieldWidget) -> None:
        """Scroll so that the focused control shows with its label — and, for a form's first field, its question — as
        far as the view holds them; the control always wins. Nothing when the focus moved on meanwhile."""
        if self.focused is not control:
            return
        panels = self.query_one("#round-panels", VerticalScroll)
        view = panels.scrollable_content_region
        bottom = control.region.bottom
        panel = holder.parent
        first = isinstance(panel, FormPanel) and next(iter(panel.fields()), None) is holder
        top = panel.region.y if first and isinstance(panel, Widget) else holder.region.y
        if bottom - top > view.height:  # no room for the question: the label at least
            top = holder.region.y
        top = max(top, bottom - view.height)  # no room for the label either: the control, from its top
        delta = top - view.y if top < view.y else max(bottom - view.bottom, 0)
        if delta:
            panels.scroll_to(y=panels.scroll_y + delta, animate=False, immediate=True)

    def _painted(self) -> None:
        if self.painted_at is None:
            self.painted_at = time.perf_counter()

    def panels(self) -> list[RequestPanel]:
        return list(self.query(RequestPanel))

    def _refresh_state(self) -> None:
        problems = [f"{p.question.key}: {why}" for p in self.panels() if (why := p.problem()) is not None]
        self.query_one("#submit", Button).disabled = bool(problems)
        many = len(self.questions)
        ready = f"Ready: {counted(many, 'answer')} go out together." if many > 1 else "Ready: 1 answer to send."
        status = "; ".join(problems) if problems else ready
        if status != self._status:
            self._status = status
            self.query_one("#round-status", Static).update(plain(status))

    @on(RequestPanel.Changed)
    def _panel_changed(self) -> None:
        self._refresh_state()

    @on(Button.Pressed, "#submit")
    def _submit_pressed(self) -> None:
        self.action_submit()

    def on_input_submitted(self) -> None:
        """Enter in a field: send when everything fits, else show what does not."""
        self.action_submit()

    def action_submit(self) -> None:
        """Dismiss with every answer when all of them fit; else every panel shows its errors, the focus goes to the
        first field to fix (at once, so keys typed after Ctrl-S land there), and nothing is sent."""
        answers = {p.question.key: p.answer() for p in self.panels()}
        if all(answer is not None for answer in answers.values()):
            self.dismiss({key: answer for key, answer in answers.items() if answer is not None})
            return
        first = None
        for panel in self.panels():  # every panel shows its errors, not only the first one in error
            if isinstance(panel, FormPanel) and (found := panel.reveal()) is not None:
                first = first or found
        self._refresh_state()
        if first is not None:
            # Focused now, not after the queued events (``Widget.focus`` defers): keys typed right after Ctrl-S
            # were already queued behind it and landed in the field the cursor had left.
            self.set_focus(first.query("Input, Select, Switch, SelectionList").first())
        self.notify("Some answers are not complete yet.", title="Not sent", severity="warning")

    def action_cancel_all(self) -> None:
        self.dismiss({q.key: t.ElicitResult(action="cancel") for q in self.questions})
