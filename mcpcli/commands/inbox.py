"""Command bodies of the team inbox: ``answer`` (answers written to the store for the owner's driver to send),
``inbox`` (what waits for me, listed or watched live), and the announcements of a flow that parks, is answered,
finishes or fails.

What may be answered, by whom, is ``state.inbox``'s; how the store says a session changed is ``store.watch``'s; how an
announcement reaches people is ``mcpcli.announce``'s. Here they meet the runtime: options, the store, output.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mcpcli.errors import SessionError, UsageError
from mcpcli.state.inbox import (
    announcement,
    asked,
    asks_of,
    inbox_status,
    person_keys,
    refusal,
    waits_for,
    whoami,
)

if TYPE_CHECKING:
    from mcpcli.commands.flows import Seat
    from mcpcli.engine.flow import Flow
    from mcpcli.runtime import AnswerOptions, Runtime
    from mcpcli.state.store import RoundRecord, SessionRecord

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


# --- answer ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerJob:
    """A waiting flow to answer in the full-screen app (``mcpcli answer ID --tui``): its form, then the app ends."""

    session_id: str


@dataclass(frozen=True)
class Answered:
    """A round answered apart from driving (``answer_open``): what the CLI prints and the app shows."""

    session: SessionRecord
    """The session as the store has it after the write (``answered_by`` set)."""
    round: RoundRecord
    """The round written: its ``answered_by`` and ``answered_at``."""
    by: str
    """Who answered (``inbox.whoami``)."""
    answered: list[str]
    """The request keys answered here."""
    left: list[str]
    """The round's other open requests (sampling, roots): its owner's run answers them."""

    def note(self) -> str:
        """The one line that says so (the CLI's note, the app's notification)."""
        rest = f" ({', '.join(self.left)} is left to its owner's run)" if self.left else ""
        sid = self.session.id
        return (
            f"Answered round {self.round.index} of session {sid} as {self.by}{rest}. Its owner's run sends the"
            f" answers: at once if it waits for them, else with mcpcli resume {sid}."
        )

    def document(self) -> dict[str, Any]:
        """``answer --json``."""
        at = self.round.answered_at
        return {
            "status": "answered",
            "session_id": self.session.id,
            "round": self.round.index,
            "answered_by": self.by,
            "answered_at": None if at is None else at.isoformat(),
            "answered": sorted(self.answered),
            "left_to_owner": self.left,
        }


async def run_answer(rt: Runtime, opts: AnswerOptions, flows: list[Flow], session_id: str) -> int:
    """``mcpcli answer ID``: ``answer_open`` with the terminal's seat (presets, then the person at the terminal)."""
    from mcpcli.commands.flows import terminal_seat

    show_answered(rt, await answer_open(rt, opts, flows, session_id, terminal_seat(rt, opts)))
    return 0


def show_answered(rt: Runtime, answered: Answered) -> None:
    """What ``answer`` prints once the answers are stored (``--json``: the document; else one note)."""
    if rt.json:
        rt.out.json(answered.document())
    else:
        rt.out.note(answered.note())


async def answer_open(rt: Runtime, opts: AnswerOptions, flows: list[Flow], session_id: str, seat: Seat) -> Answered:
    """Answer the round a flow waits on, here, without connecting to its server — for ``mcpcli answer`` (the
    terminal's ``seat``) and the app's inbox (its form): the answers are collected from the seat's sources,
    checked against the round's schemas and written to the store with who gave them and when. The flow's owner
    sends them: at once when a driver waits (``--wait-for-answer``), else with their next ``resume``.

    Raises one-line errors: ``UsageError`` (not mine to answer, nothing a person answers, nothing answered),
    ``SessionError`` (finished, being driven), ``AlreadyAnswered`` (somebody was first)."""
    from mcpcli.commands.flows import build_flow
    from mcpcli.engine.steps import NeedInput

    store = rt.store
    record = store.get(session_id)
    me = whoami(rt.settings)
    last = _open_round(rt, record)
    if (why := refusal(record, me, rt.settings.inbox.groups)) is not None:
        raise UsageError(why, hint=f"See who it asks: mcpcli sessions show {record.id}")
    open_now = last.still_open() if last.answers is not None else dict(last.requests)
    keys = person_keys(open_now)
    if not keys:
        raise UsageError(
            f"Session {record.id} waits for nothing a person answers here ({', '.join(open_now) or 'nothing'}):"
            " its owner's run answers it (an LLM for sampling, its roots).",
            hint=f"Its owner continues it: mcpcli resume {record.id}",
        )
    store.check_writable()
    flow = build_flow(rt, opts, seat, record.server, flows)
    flow.keeper.begin(record)  # read here, never written through the keeper: nothing is leased, nothing sent
    try:
        answers = await flow.answer_stored(last, only=keys)
    except NeedInput:
        raise UsageError(
            f"Nothing here answers {', '.join(keys)} of session {record.id}.",
            hint=f"Give the answers: mcpcli answer {record.id} --answer FIELD=VALUE (or --answers FILE, or at a"
            " terminal)",
        ) from None
    complete = set(open_now) <= set(answers)
    saved = await flow.keeper.answer_for(last, answers, by=me, complete=complete)
    now = store.get(record.id)
    announce(rt, "answered", now, {k: last.requests[k] for k in answers}, ring=False)
    left = [k for k in open_now if k not in answers]
    return Answered(now, saved, me, list(answers), left)


def _open_round(rt: Runtime, record: SessionRecord) -> RoundRecord:
    """The round ``record`` waits on, or one clear line why there is none to answer."""
    from mcpcli.state.store.base import AlreadyAnswered

    last = rt.store.last_round(record.id)
    if last is not None and last.answered_by is not None:  # the loser of a race is told who won, even once sent
        raise AlreadyAnswered(record.id, last.index, last.answered_by, last.answered_at)
    if record.status in ("done", "failed", "expired"):
        raise SessionError(
            f"Session {record.id} is {record.status}: there is nothing left to answer.",
            hint=f"See it: mcpcli sessions show {record.id}",
        )
    if record.status != "waiting" or last is None or last.complete:
        raise SessionError(
            f"Session {record.id} is being driven right now (round {record.round}): it waits for no answer.",
            hint=f"See where it stands: mcpcli sessions show {record.id}",
        )
    return last


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
