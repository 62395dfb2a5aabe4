"""The sessions screen: flows waiting for input (and what each waits for), then recent ones — live.

Read from the store with ``inbox``' helpers — the same inbox ``sessions list --waiting`` prints. Enter on a session
resumes it in place (a ``ResumeJob`` on a run screen); a finished one shows its stored result again. ``a`` answers
a waiting flow with its form, for its owner's run to send (``tui.inbox``, as ``mcpcli answer`` does).

The lists follow the store as flows park, are answered and finish — here or on any machine that shares it: a
thread waits on the store's watch (``store.watch``: PostgreSQL's NOTIFY, SQLite's ``data_version``) a second at a
time, and each change reads the lists again, at most ``1 / RELOAD_GAP`` times a second however many there are.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from mcpcli.display import safe, sanitize
from mcpcli.state.inbox import asked, gone_drivers, inbox, inbox_status, pending_requests, shown_status
from mcpcli.tui.host import host

if TYPE_CHECKING:
    from mcpcli.state.store import SessionRecord, Store

RECENT = 20
"""How many finished (or failed) sessions are listed under the waiting ones."""
WATCH_TICK = 1.0
"""Seconds the watching thread waits on the store at a time: how long it may outlive the screen."""
RELOAD_GAP = 0.3
"""Seconds at least between two reloads the watch asks for: a burst of changes is read once or twice, not each."""


def _waits_for(pending: Mapping[str, Mapping[str, Any]]) -> str:
    parts = []
    for key, what in pending.items():
        fields = what.get("fields")
        parts.append(f"{key} ({', '.join(fields)})" if fields else f"{key}: {what.get('kind')}")
    return "; ".join(parts) or "(answered; resume sends it)"


def _waiting_for(record: SessionRecord, pending: Mapping[str, Mapping[str, Any]]) -> str:
    """What a flow of the waiting list waits for: its open requests, or who answered them (its owner's run sends
    the answers)."""
    if record.status == "running" and not pending:
        return "(interrupted: resume sends its answered round again)"
    if record.status == "waiting" and record.answered_by:
        return f"answered by {record.answered_by}"
    return _waits_for(pending)


def _owner(record: SessionRecord) -> str:
    """Whose flow it is, and whom it asks when that is somebody else: ``alice → bob, ops``."""
    whom, owner = asked(record), record.owner or ""
    return f"{owner or '?'} → {', '.join(whom)}" if whom else owner


def _stamp(record: SessionRecord) -> str:
    return record.updated.strftime("%Y-%m-%d %H:%M")


def _cursor_key(table: DataTable[Any]) -> str | None:
    if not table.row_count:
        return None
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value


def _put_cursor(table: DataTable[Any], key: str | None) -> None:
    """Put the cursor back on the session it was on before a reload (where it still is listed)."""
    if key is None:
        return
    if key in table.rows:  # gone from this list: the cursor stays where the reload left it
        table.move_cursor(row=table.get_row_index(key), animate=False)


class SessionsScreen(Screen[None]):
    """Waiting flows first; enter resumes the highlighted one here, ``a`` answers it, escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("a", "answer", "Answer"),
        Binding("ctrl+r", "reload", "Reload"),
    ]

    class StoreChanged(Message):
        """The store's watch saw sessions change (posted from the watching thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.reloads = 0
        """How many times the lists were read (tests count them: a change is read once, a burst a few times)."""

    def compose(self) -> ComposeResult:
        yield Static("Waiting for input", classes="section-title")
        yield DataTable(id="waiting", cursor_type="row", zebra_stripes=True)
        yield Static("Recent", classes="section-title")
        yield DataTable(id="recent", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        waiting = self.query_one("#waiting", DataTable)
        # No round here (the form's header and ``sessions show`` say it): the owner and status columns took its room.
        waiting.add_columns("id", "status", "owner → asks", "server", "name", "waiting for", "updated (UTC)")
        recent = self.query_one("#recent", DataTable)
        recent.add_columns("id", "status", "owner", "server", "name", "round", "updated (UTC)")
        self.action_reload()
        waiting.focus()
        store = host(self.app).rt.store  # opened here, on the app's thread, before the watch's thread needs it
        self.run_worker(lambda: self._watch(store), name="watch-sessions", thread=True, exit_on_error=False)

    def on_screen_resume(self) -> None:
        self.action_reload()

    # --- following the store -----------------------------------------------------------------------------------------

    def _watch(self, store: Store) -> None:
        """In a thread: wait on the store's watch, ``WATCH_TICK`` at a time, until the screen goes (its workers are
        cancelled as it is removed, and all of them as the app ends); post ``StoreChanged`` for each change, never
        two within ``RELOAD_GAP`` — the changes in between are read with the next."""
        worker = get_current_worker()
        try:
            watch = store.watch()
        except Exception as exc:  # boundary: a store that cannot be watched still lists; ctrl+r reads it again
            with contextlib.suppress(RuntimeError):  # the app has ended meanwhile
                self.app.call_from_thread(self._not_watched, f"{type(exc).__name__}: {exc}")
            return
        last = 0.0
        try:
            while not worker.is_cancelled:
                hint = watch.wait(WATCH_TICK)
                if hint is not None and not hint:
                    continue  # nothing changed in time: look again (and whether the screen is still there)
                pause = RELOAD_GAP - (time.monotonic() - last)
                if pause > 0 and worker.cancelled_event.wait(pause):
                    break
                last = time.monotonic()
                self._post(self.StoreChanged())
        finally:
            watch.close()

    def _post(self, message: Message) -> None:
        with contextlib.suppress(RuntimeError):  # the app's event loop is already closed: nobody to tell
            self.post_message(message)

    def _not_watched(self, why: str) -> None:
        self.notify(sanitize(f"The list does not follow the store ({why}); ctrl+r reads it again."), markup=False)

    @on(StoreChanged)
    def _store_changed(self) -> None:
        if self.is_current:  # under a run or a form, it is read again when it comes back (``on_screen_resume``)
            self.action_reload()

    # --- the lists ---------------------------------------------------------------------------------------------------

    def action_reload(self) -> None:
        """Read both lists again from the store: the inbox (waiting, and running sessions whose driver is gone, shown
        interrupted) and the recent others. The cursors stay on the sessions they were on."""
        store = host(self.app).rt.store
        waiting = self.query_one("#waiting", DataTable)
        recent = self.query_one("#recent", DataTable)
        keys = _cursor_key(waiting), _cursor_key(recent)
        waiting.clear()
        recent.clear()
        picked = inbox(store, limit=100)  # waiting sessions, and running ones whose driver is gone
        for r in picked:
            pending = _waiting_for(r, pending_requests(store.last_round(r.id)))
            status = "interrupted" if r.status == "running" else inbox_status(r)
            cells = (safe(_owner(r)), safe(r.server), safe(r.name), safe(pending), _stamp(r))
            waiting.add_row(r.id, status, *cells, key=r.id)
        shown = {r.id for r in picked}
        others = [r for r in store.list(limit=RECENT + 100) if r.status != "waiting" and r.id not in shown][:RECENT]
        gone = gone_drivers(store, others)
        for r in others:
            row = (safe(r.owner or ""), safe(r.server), safe(r.name), r.round, _stamp(r))
            recent.add_row(r.id, shown_status(r, gone), *row, key=r.id)
        _put_cursor(waiting, keys[0])
        _put_cursor(recent, keys[1])
        self.reloads += 1

    def _highlighted(self) -> str | None:
        """The session under the cursor of the list in focus (the waiting one when neither is)."""
        focused = self.focused if isinstance(self.focused, DataTable) else self.query_one("#waiting", DataTable)
        return _cursor_key(focused)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        from mcpcli.commands.jobs import ResumeJob

        if event.row_key.value is not None:
            host(self.app).start_job(ResumeJob(event.row_key.value))

    def action_answer(self) -> None:
        """Answer the highlighted flow with its form; what may not be answered says why in one notification."""
        session_id = self._highlighted()
        if session_id is None:
            self.notify("No session to answer here.", severity="warning")
            return
        host(self.app).answer_session(session_id)

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.dismiss(None)
        else:
            host(self.app).exit_ok()
