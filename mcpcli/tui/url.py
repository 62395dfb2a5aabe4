"""Consent before a URL-mode request's page is opened: the full URL, its host emphasised, and the warnings.

The checks (non-https, punycode, a user name before the host, non-web schemes) are ``asking.check_url``'s,
shared with the inline prompt. The screen opens nothing itself: it returns the decision, and the round's
panel opens the browser only for an explicit "Open".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from mcpcli.terminal.asking import check_url, url_text
from mcpcli.tui.text import plain


@dataclass(frozen=True)
class UrlDecision:
    """What the user decided about one URL-mode request."""

    action: Literal["accept", "decline", "cancel"]
    open: bool = False
    """Open the page in the browser now (the user consented); False for "already done", decline, cancel."""


class UrlConsent(ModalScreen[UrlDecision | None]):
    """Open / copy / already done / decline / cancel; escape closes it undecided (``None``)."""

    DEFAULT_CSS = """
    UrlConsent { align: center middle; }
    UrlConsent > Vertical {
        width: 90%; max-width: 110; height: auto; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    UrlConsent .url--message { text-style: bold; margin-bottom: 1; }
    UrlConsent .url--link { margin-bottom: 1; }
    UrlConsent .url--warning { color: $warning; }
    UrlConsent .url--refused { color: $error; text-style: bold; }
    UrlConsent Horizontal { height: auto; margin-top: 1; }
    UrlConsent Button { margin-right: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Back")]

    def __init__(self, message: str, url: str, *, server: str) -> None:
        super().__init__()
        self.message = message
        self.url = url
        self.server = server
        self.check = check_url(url)

    def compose(self) -> ComposeResult:
        """The message, the link (host emphasised) and its warnings; for a link that is not a web page, only Decline and
        Cancel can be pressed."""
        with Vertical() as box:
            box.border_title = "Open a link?"
            yield Static(plain(f"{self.server} asks: {self.message}"), classes="url--message")
            yield Static(Content.from_rich_text(url_text(self.url)), classes="url--link", id="url")
            for warning in self.check.warnings:
                yield Static(plain(f"! {warning}"), classes="url--warning")
            if self.check.refused:
                yield Static("This link is not a web page; it cannot be opened. Decline it.", classes="url--refused")
            with Horizontal():
                refused = self.check.refused
                yield Button("Open in browser", id="open", variant="warning", disabled=refused)
                yield Button("Copy link", id="copy", disabled=refused)
                yield Button("Already done", id="done", disabled=refused)
                yield Button("Decline", id="decline")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#decline" if self.check.refused else "#open", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "copy":
            self.app.copy_to_clipboard(self.url)
            self.notify("The link is on the clipboard.", title="Copied")
            return
        decisions = {
            "open": UrlDecision("accept", open=True),
            "done": UrlDecision("accept"),
            "decline": UrlDecision("decline"),
            "cancel": UrlDecision("cancel"),
        }
        self.dismiss(decisions[str(event.button.id)])

    def action_close(self) -> None:
        self.dismiss(None)
