"""The sessions screen: flows waiting for input (and what each waits for), then recent ones.

Read from the store with ``inbox``' helpers — the same inbox ``sessions list --waiting`` prints.
Enter on a session resumes it in place (a ``ResumeJob`` on a run screen); a finished one shows its
stored result again. The list is read again whenever the screen comes back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from mcpcli.display import safe
from mcpcli.state.inbox import gone_drivers, inbox, pending_requests, shown_status
from mcpcli.tui.host import host

if TYPE_CHECKING:
    from mcpcli.state.store import SessionRecord

RECENT = 20
"""How many finished (or failed) sessions are listed under the waiting ones."""


def _waits_for(pending: Mapping[str, Mapping[str, Any]]) -> str:
    parts = []
    for key, what in pending.items():
        fields = what.get("fields")
        parts.append(f"{key} ({', '.join(fields)})" if fields else f"{key}: {what.get('kind')}")
    return "; ".join(parts) or "(answered; resume sends it)"


def _stamp(record: SessionRecord) -> str:
    return record.updated.strftime("%Y-%m-%d %H:%M")


class SessionsScreen(Screen[None]):
    """Waiting flows first; enter resumes the highlighted one here, escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("ctrl+r", "reload", "Reload"),
    ]

    def compose(self) -> ComposeResult:
        yield Static("Waiting for input", classes="section-title")
        yield DataTable(id="waiting", cursor_type="row", zebra_stripes=True)
        yield Static("Recent", classes="section-title")
        yield DataTable(id="recent", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        waiting = self.query_one("#waiting", DataTable)
        waiting.add_columns("id", "server", "name", "waiting for", "round", "updated (UTC)")
        recent = self.query_one("#recent", DataTable)
        recent.add_columns("id", "status", "server", "name", "round", "updated (UTC)")
        self.action_reload()
        waiting.focus()

    def on_screen_resume(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        store = host(self.app).rt.store
        waiting = self.query_one("#waiting", DataTable)
        recent = self.query_one("#recent", DataTable)
        waiting.clear()
        recent.clear()
        picked = inbox(store, limit=100)  # waiting sessions, and running ones whose driver is gone
        for r in picked:
            asked = pending_requests(store.last_round(r.id))
            pending = (
                "(interrupted: resume sends its answered round again)"
                if not asked and r.status == "running"
                else _waits_for(asked)
            )
            waiting.add_row(r.id, safe(r.server), safe(r.name), safe(pending), r.round, _stamp(r), key=r.id)
        shown = {r.id for r in picked}
        others = [r for r in store.list(limit=RECENT + 100) if r.status != "waiting" and r.id not in shown][:RECENT]
        gone = gone_drivers(store, others)
        for r in others:
            recent.add_row(r.id, shown_status(r, gone), safe(r.server), safe(r.name), r.round, _stamp(r), key=r.id)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        from mcpcli.commands.jobs import ResumeJob

        if event.row_key.value is not None:
            host(self.app).start_job(ResumeJob(event.row_key.value))

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.dismiss(None)
        else:
            host(self.app).exit_ok()
