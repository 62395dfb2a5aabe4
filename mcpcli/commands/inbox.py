"""Command bodies of the team inbox: ``answer`` (answers written to the store for the owner's driver to send),
``inbox`` (what waits for me, listed or watched live), and the announcements of a flow that parks, is answered,
finishes or fails.

What may be answered, by whom, is ``state.inbox``'s; how the store says a session changed is ``store.watch``'s; how an
announcement reaches people is ``mcpcli.announce``'s. Here they meet the runtime: options, the store, output.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mcpcli.errors import SessionError
from mcpcli.state.inbox import (
    announcement,
    asked,
    asks_of,
    inbox_status,
    waits_for,
    whoami,
)

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime
    from mcpcli.engine.flow import Flow
    from mcpcli.engine.steps import NeedInput
    from mcpcli.state.store import RoundRecord, SessionRecord, Store

_ACTS = {"waiting": "mcpcli answer {id}", "answered": "mcpcli resume {id}"}
"""The command each announcement names: the one that acts on it (``sessions show`` for the rest)."""


# --- announcements ---------------------------------------------------------------------------------------------------


def announce(
    rt: Runtime,
    event: str,
    record: SessionRecord,
    pending: Mapping[str, Any] | None = None,
    *,
    waiting_since: datetime | None = None,
    ring: bool = True,
) -> None:
    """Announce ``event`` of ``record`` through the channels of ``[inbox] notify`` — never blocking the flow; the
    deliveries still on their way when the command ends get a bounded moment (``Runtime.close``). ``ring``: the
    ``terminal`` channel too (the bell of a command that waits; not of one that exits 3 and says so itself)."""
    config = rt.settings.inbox
    if not config.notify:
        return
    if rt.announcer is None:
        import sys

        from mcpcli.announce import Announcer

        terminal = sys.stderr if ring and sys.stderr.isatty() else None
        rt.announcer = announcer = Announcer(config, terminal=terminal, warn=rt.out.warning)
        rt.closers.append(announcer.close)
    command = _ACTS.get(event, "mcpcli sessions show {id}").format(id=record.id)
    rt.announcer.announce(announcement(event, record, pending, waiting_since=waiting_since, command=command))


def saved_sessions(rt: Runtime, flows: list[Flow]) -> Iterator[SessionRecord]:
    """The sessions a run's flows saved, as the store has them now (one deleted meanwhile is skipped)."""
    for flow in flows:
        session = flow.keeper.session
        if session is None or not flow.keeper.saved:
            continue
        try:
            yield rt.store.get(session.id)
        except SessionError:
            continue


def announce_parked(rt: Runtime, flows: list[Flow]) -> None:
    """A flow command that ended waiting for a person (exit 3): announce the sessions it left waiting."""
    for record in saved_sessions(rt, flows):
        last = rt.store.last_round(record.id) if record.status == "waiting" else None
        if last is not None:
            announce(rt, "waiting", record, last.still_open(), waiting_since=last.received, ring=False)


# --- waiting for an answer (--wait-for-answer) -----------------------------------------------------------------------


class WaitingRoom:
    """``--wait-for-answer``: a flow nobody here can answer parks instead of exiting 3 — announced, its session
    waiting in the store with no lease held — until an answer lands there (``mcpcli answer``, from any machine that
    shares the store); its owner's run then resumes it (``commands.run.run_job``).

    Bounded by ``deadline`` (then exit 3 with the usual document) and clean on Ctrl-C (the session kept, 130): the
    wait is a store watch in a thread that looks at least once a second, and stops with the command."""

    def __init__(self, rt: Runtime, deadline: float) -> None:
        self.rt = rt
        self.deadline = deadline
        self.fresh = True
        """No park yet: the first one is announced, and wakes for an answer already there."""

    async def wait(self, parked: NeedInput) -> SessionRecord | None:
        """Announce the parked session (not twice for the same question) and wait for it to move on: the session
        once answered, taken up or finished elsewhere; ``None`` at the deadline."""
        rt = self.rt
        record = rt.store.get(parked.session.id)
        last = rt.store.last_round(record.id)
        if self.fresh or record.answered_by is None:  # what a resume parked on again is no news: not announced twice
            announce(rt, "waiting", record, parked.pending, waiting_since=None if last is None else last.received)
        who = ", ".join(asked(record)) or "an answer"
        left = max(0.0, self.deadline - time.monotonic())
        rt.out.note(
            f"Session {record.id} waits for {who}: answer it from any shell or machine with: mcpcli answer {record.id}"
            f" (waiting up to {left:.0f} s; Ctrl-C stops, the session kept)."
        )
        woke = await until_answered(rt.store, record, self.deadline, fresh=self.fresh)
        if woke is not None and woke.answered_by is not None:
            # Announced by the answer itself (``mcpcli answer``), once: here only said.
            rt.out.note(f"Session {record.id} was answered by {woke.answered_by}: continuing.")
        self.fresh = False
        return woke

    def finished(self, flows: list[Flow], code: int) -> None:
        """Announce the end of a flow that waited for a person (a finish nobody waited for is no news)."""
        for record in saved_sessions(self.rt, flows):
            if record.status in ("done", "failed"):
                announce(self.rt, "done" if record.status == "done" and code in (0, 1) else "failed", record)
                return


async def until_answered(store: Store, parked: SessionRecord, deadline: float, *, fresh: bool) -> SessionRecord | None:
    """The session once it moved on from where it was parked — answered (``answered_by``), taken up or finished by
    someone else, a new round — or ``None`` at ``deadline``. A fresh park wakes also for an answer already there."""
    import threading

    import anyio

    stop = threading.Event()

    def moved(now: SessionRecord) -> bool:
        if fresh and now.answered_by is not None:
            return True
        return (now.status, now.round, now.answered_by) != (parked.status, parked.round, parked.answered_by)

    def wait() -> SessionRecord | None:
        """In a thread: the store's watch woken by a change or each second, until the session moved, is gone (None),
        the deadline passed (None) or the command stopped."""
        watch = store.watch()
        try:
            while not stop.is_set():
                try:
                    now = store.get(parked.id)
                except SessionError:
                    return None
                if moved(now):
                    return now
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                watch.wait(min(1.0, left))
            return None
        finally:
            watch.close()

    try:
        return await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
    finally:
        stop.set()


# --- inbox -----------------------------------------------------------------------------------------------------------


def inbox_doc(record: SessionRecord, last: RoundRecord | None, status: str | None = None) -> dict[str, Any]:
    """One flow as ``inbox --json`` shows it (and ``--watch --json``, one per change): never an answer."""

    pending = {} if last is None else (last.still_open() if record.answered_by is None else {})
    shown = status or inbox_status(record)
    return {
        "session_id": record.id,
        "status": shown,
        "server": record.server,
        "call": f"{record.method} {record.name}",
        "owner": record.owner,
        "ask": asked(record),
        "asks": asks_of(pending),
        "answered_by": record.answered_by,
        "round": record.round,
        "waiting_since": None if last is None else last.received.isoformat(),
    }


def _for_me(rt: Runtime, everyone: bool) -> Callable[[SessionRecord], bool]:
    """Whether a waiting flow is mine to answer (``everyone``: every one is), with who I am found once."""
    me, groups = whoami(rt.settings), rt.settings.inbox.groups
    return lambda record: everyone or waits_for(record, me, groups)


def inbox_docs(rt: Runtime, *, everyone: bool) -> list[dict[str, Any]]:
    """The flows waiting for me or my groups (``everyone``: every waiting flow), longest waiting first."""
    docs = []
    mine = _for_me(rt, everyone)
    for record in rt.store.list(status="waiting"):
        if mine(record):
            docs.append(inbox_doc(record, rt.store.last_round(record.id)))
    return sorted(docs, key=lambda d: (d["waiting_since"] or "", d["session_id"]))


def list_inbox(rt: Runtime, *, everyone: bool) -> int:
    """``mcpcli inbox``: a table (or ``--json``: an array) of what waits for me."""
    docs = inbox_docs(rt, everyone=everyone)
    if rt.json:
        rt.out.json(docs)
        return 0
    rows = [_row(doc) for doc in docs]
    who = "anyone" if everyone else whoami(rt.settings)
    rt.out.table(
        f"Waiting for {who}",
        ["ID", "STATUS", "WAITED", "CALL", "ASKS", "OWNER"],
        rows,
        empty="Nothing waits for you." if not everyone else "Nothing waits.",
    )
    if docs:
        rt.out.note(f"Answer one with: mcpcli answer {docs[0]['session_id']}")
    return 0


def _row(doc: dict[str, Any]) -> list[str]:
    """One flow as an inbox row: session, waited, server, call, what it asks, who asked; every server-chosen string
    sanitized."""
    asks = doc["asks"]
    first = (
        asks[0]["title"] or asks[0]["key"]
        if asks
        else (f"answered by {doc['answered_by']}" if doc["answered_by"] else "")
    )
    more = f" (+{len(asks) - 1})" if len(asks) > 1 else ""
    first = first if len(first) <= _SHOWN else first[: _SHOWN - 1] + "…"  # a title of a megabyte: --json has it
    return [
        doc["session_id"],
        doc["status"],
        _waited(doc["waiting_since"]),
        doc["call"],
        first + more,
        doc["owner"] or "",
    ]


def _waited(since: str | None) -> str:
    from mcpcli.terminal.session_lines import ago

    return "" if since is None else ago(datetime.fromisoformat(since), datetime.now(UTC))


_SHOWN = 200
"""Characters of a question's title an inbox line shows (``--json`` shows it whole)."""

WATCH_TICK = 1.0
"""Seconds a watch waits for a hint before it reads the store anyway (a hint lost is a second late, never missed)."""


def watch_inbox(rt: Runtime, *, everyone: bool, count: int | None, seconds: float | None) -> int:
    """``mcpcli inbox --watch``: the inbox, then one line (``--json``: one object) per change — a flow parks, is
    answered, is taken up, finishes or fails — until ``--count`` changes, ``--for`` seconds, or Ctrl-C."""
    rt.json_lines = rt.json
    deadline = None if seconds is None else time.monotonic() + seconds
    shown: dict[str, dict[str, Any]] = {}
    changes = 0
    watch = rt.store.watch()
    try:
        for doc in inbox_docs(rt, everyone=everyone):
            shown[doc["session_id"]] = doc
            _emit(rt, doc)
            changes += 1
            if count is not None and changes >= count:
                return 0
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return 0
            hint = watch.wait(WATCH_TICK if left is None else min(WATCH_TICK, left))
            for doc in _changed(rt, shown, hint, everyone=everyone):
                _emit(rt, doc)
                changes += 1
                if count is not None and changes >= count:
                    return 0
    finally:
        watch.close()


def _changed(
    rt: Runtime, shown: dict[str, dict[str, Any]], hint: set[str] | None, *, everyone: bool
) -> list[dict[str, Any]]:
    """What changed since ``shown`` (updated in place): flows newly waiting or answered, and shown ones that moved on
    (taken up: ``running``; ``done``, ``failed``…). ``hint``: the ids the store named, ``None``: look at all."""
    store = rt.store
    if hint is not None and not hint:
        return []
    out: list[dict[str, Any]] = []
    if hint is None:
        now = {d["session_id"]: d for d in inbox_docs(rt, everyone=everyone)}
        gone = [sid for sid in shown if sid not in now]
    else:
        now, gone = {}, []
        mine = _for_me(rt, everyone)
        for sid in sorted(hint):
            try:
                record = store.get(sid)
            except SessionError:  # deleted meanwhile
                if sid in shown:
                    out.append({**shown.pop(sid), "status": "deleted"})
                continue
            if record.status == "waiting" and mine(record):
                now[sid] = inbox_doc(record, store.last_round(sid))
            elif sid in shown:
                gone.append(sid)
    for sid, doc in now.items():
        before = shown.get(sid)
        if before is None or _key(before) != _key(doc):
            out.append(doc)
        shown[sid] = doc
    for sid in gone:
        try:
            record = store.get(sid)
        except SessionError:
            out.append({**shown.pop(sid), "status": "deleted"})
            continue
        shown.pop(sid)
        out.append(inbox_doc(record, None, status=record.status))
    return out


def _key(doc: dict[str, Any]) -> tuple[Any, ...]:
    return doc["status"], doc["round"], doc["answered_by"]


def _emit(rt: Runtime, doc: dict[str, Any]) -> None:
    if rt.json:
        rt.out.json_line(doc)
        return
    stamp = datetime.now().strftime("%H:%M:%S")
    asks = doc["asks"]
    what = f" asks: {asks[0]['title'] or asks[0]['key']}"[:_SHOWN] if asks else ""
    by = f" by {doc['answered_by']}" if doc["answered_by"] and doc["status"] == "answered" else ""
    owner = f" ({doc['owner']})" if doc["owner"] else ""
    rt.out.line(f"{stamp} {doc['status']:<9} {doc['session_id']}  {doc['call']}{owner}{by}{what}")
