"""The sampling review screen: approve, edit or reject an LLM request before it is sent, then its reply.

``SamplingReview(view)`` is the first gate (the request), ``SamplingReview(view, reply=...)`` the second
(the reply); either returns a ``sampling.Decision`` through ``dismiss``. ``TuiApprover`` is the sampler's
``sampling.Approver`` under the TUI: it awaits the screen from the flow's worker. Everything shown — the
system prompt, the messages, the reply — came from a server or a model, so it goes through
``text.plain``; the editable copies sit in ``TextArea``s, which never interpret markup.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Static, TextArea

from mcpcli.display import sanitize
from mcpcli.engine.sampling import Decision, SamplingView
from mcpcli.tui.text import plain


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    blocks = content if isinstance(content, list) else [content]
    return [block for block in blocks if isinstance(block, Mapping)]


def _describe(block: Mapping[str, Any]) -> str:
    """Non-text content in a few words (images and audio are described, never drawn)."""
    kind = str(block.get("type", "?"))
    if kind in ("image", "audio"):
        return f"[{kind} {block.get('mimeType', '')}, {len(str(block.get('data', '')))} base64 chars]"
    return f"[{kind} content]"


class ReviewText(TextArea):
    """Read-only until the user chooses Edit; a steady cursor when the app says so."""

    DEFAULT_CSS = "ReviewText { height: auto; max-height: 8; }"

    def __init__(self, text: str, *, name: str, editable: bool) -> None:
        super().__init__(sanitize(text), read_only=True, soft_wrap=True, id=f"text-{name}")
        self.original = sanitize(text)
        self.editable = editable
        """Whether this stage may change it: the request's texts at the first gate, the reply's at the second."""
        self.can_focus = editable

    def on_mount(self) -> None:
        self.cursor_blink = bool(getattr(self.app, "blink", True))


class SamplingReview(ModalScreen[Decision]):
    """One gate of a sampling approval; escape rejects (nothing is sent, the flow waits)."""

    DEFAULT_CSS = """
    SamplingReview { align: center middle; }
    SamplingReview > Vertical { width: 94%; height: 94%; border: thick $accent; background: $surface; padding: 0 1; }
    SamplingReview .review--facts { color: $text-muted; margin-bottom: 1; }
    SamplingReview .review--role { text-style: bold; margin-top: 1; }
    SamplingReview #review-buttons { height: auto; dock: bottom; padding-top: 1; }
    SamplingReview Button { margin-right: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "reject", "Reject")]

    def __init__(self, view: SamplingView, reply: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.view = view
        self.reply = reply

    def compose(self) -> ComposeResult:
        """The request as it will be sent (facts, system prompt, messages) — editable at the first gate only — and, at
        the second, the model's reply, editable; then Approve, Edit, Reject."""
        view, params = self.view, self.view.params
        with Vertical() as box:
            box.border_title = "Send this to your LLM?" if self.reply is None else "Return this reply to the server?"
            facts = [f"{view.server} asks", f"model {view.provider}/{view.model}", f"max tokens {view.max_tokens}"]
            if params.get("temperature") is not None:
                facts.append(f"temperature {params['temperature']}")
            if params.get("stopSequences"):
                facts.append(f"stop {', '.join(map(str, params['stopSequences']))}")
            yield Static(plain(" · ".join(facts)), classes="review--facts")
            with VerticalScroll():
                first_gate = self.reply is None
                yield Static("System prompt", classes="review--role")
                yield ReviewText(str(params.get("systemPrompt") or ""), name="system", editable=first_gate)
                for index, message in enumerate(params.get("messages") or []):
                    yield Static(plain(f"Message {index + 1} · {message.get('role', '?')}"), classes="review--role")
                    yield from self._content(f"m{index}", message.get("content"), editable=first_gate)
                if self.reply is not None:
                    yield Static(plain(f"Reply · {self.reply.get('model', '?')}"), classes="review--role")
                    yield from self._content("reply", self.reply.get("content"), editable=True)
            with Horizontal(id="review-buttons"):
                yield Button("Approve", id="approve", variant="success")
                yield Button("Edit", id="edit")
                yield Button("Reject", id="reject", variant="error")

    def _content(self, name: str, content: Any, *, editable: bool) -> Iterator[Widget]:
        blocks = _blocks(content)
        if len(blocks) == 1 and blocks[0].get("type") == "text":
            yield ReviewText(str(blocks[0].get("text", "")), name=name, editable=editable)
            return
        for block in blocks:  # several blocks, or not text: shown, not editable
            yield Static(plain(block.get("text", "") if block.get("type") == "text" else _describe(block)))

    def on_mount(self) -> None:
        self.query_one("#approve", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "edit":
            editable = [area for area in self.query(ReviewText) if area.editable]
            for area in editable:
                area.read_only = False
            if editable:
                editable[0].focus()
        elif event.button.id == "approve":
            self.dismiss(self._approved())
        else:
            self.action_reject()

    def action_reject(self) -> None:
        self.dismiss(Decision("reject"))

    def _approved(self) -> Decision:
        """``approve``, or ``edit`` with the edited request params (first gate) or reply text (second)."""
        changed = {str(a.id).removeprefix("text-"): a.text for a in self.query(ReviewText) if a.text != a.original}
        if not changed:
            return Decision("approve")
        if self.reply is not None:
            return Decision("edit", changed.get("reply", ""))
        params = copy.deepcopy(self.view.params)
        if "system" in changed:
            params["systemPrompt"] = changed.pop("system")
        for name, text in changed.items():
            params["messages"][int(name[1:])]["content"] = {"type": "text", "text": text}
        return Decision("edit", params)


class TuiApprover:
    """The sampler's ``Approver`` under the TUI: each gate is a ``SamplingReview`` screen."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app

    async def review_request(self, view: SamplingView) -> Decision:
        decision: Decision = await self.app.push_screen_wait(SamplingReview(view))
        return decision

    async def review_reply(self, view: SamplingView, reply: dict[str, Any]) -> Decision:
        decision: Decision = await self.app.push_screen_wait(SamplingReview(view, reply))
        return decision
