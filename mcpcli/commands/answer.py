"""``mcpcli answer ID``: answering a flow apart from driving it — its round's answers collected here (presets, the
person at the terminal or on the app's form), checked against the round's schemas, and stored for its owner's run
to send (at once when it waits, ``--wait-for-answer``; else with its next ``resume``). Nothing connects.

Who may answer is ``state.inbox``'s rule; one answer wins a round (``Store.answer_round``: the loser is told who
answered first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from mcpcli.commands.inbox import announce
from mcpcli.errors import SessionError, UsageError
from mcpcli.state.inbox import person_keys, refusal, whoami

if TYPE_CHECKING:
    import mcp_types as t

    from mcpcli.commands.runtime import AnswerOptions, Runtime
    from mcpcli.commands.seat import Seat
    from mcpcli.state.store import RoundRecord, SessionRecord


# --- answer ------------------------------------------------------------------------------------------------------


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


async def run_answer(rt: Runtime, opts: AnswerOptions, session_id: str, seat: Seat) -> int:
    """``mcpcli answer ID``: ``answer_open`` with the terminal's seat (presets, then the person at the terminal)."""
    show_answered(rt, await answer_open(rt, opts, session_id, seat))
    return 0


def show_answered(rt: Runtime, answered: Answered) -> None:
    """What ``answer`` prints once the answers are stored (``--json``: the document; else one note)."""
    if rt.json:
        rt.out.json(answered.document())
    else:
        rt.out.note(answered.note())


async def answer_open(rt: Runtime, opts: AnswerOptions, session_id: str, seat: Seat) -> Answered:
    """Answer the round a flow waits on, here, without connecting to its server — for ``mcpcli answer`` (the
    terminal's ``seat``) and the app's inbox (its form): the answers are collected from the seat's sources,
    checked against the round's schemas and written to the store with who gave them and when. The flow's owner
    sends them: at once when a driver waits (``--wait-for-answer``), else with their next ``resume``.

    Raises one-line errors: ``UsageError`` (not mine to answer, nothing a person answers, nothing answered),
    ``SessionError`` (finished, being driven), ``AlreadyAnswered`` (somebody was first)."""
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
    from mcpcli.state.vault import load_store_key, sealed_for

    store.check_writable()
    answers = await _collected(opts, seat, record, last, {k: last.requests[k] for k in last.requests if k in keys})
    complete = set(open_now) <= set(answers)
    sealed = sealed_for(last.requests, answers, record.id, lambda: load_store_key(rt.paths.store_key_file))

    def write() -> RoundRecord:
        return store.answer_round(record.id, last.index, sealed, by=me, complete=complete)

    with anyio.CancelScope(shield=True):  # a write that was reached lands, even under Ctrl-C
        saved = await anyio.to_thread.run_sync(write)
    now = store.get(record.id)
    announce(rt, "answered", now, {k: last.requests[k] for k in answers}, ring=False)
    left = [k for k in open_now if k not in answers]
    return Answered(now, saved, me, list(answers), left)


async def _collected(
    opts: AnswerOptions, seat: Seat, record: SessionRecord, last: RoundRecord, requests: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The answers to ``requests`` from the seat's sources — the presets, then the person at the terminal or on the
    app's form; what the round kept while it waited is offered first — each checked against its schema by the
    source that gave it. Nobody here answers them all: one line, exit 2, nothing written."""
    from mcpcli.engine.askers import Askers
    from mcpcli.engine.partial import kept_answer
    from mcpcli.engine.steps import AnswerSource, NeedInput, Question, parse_request

    presets = opts.presets()
    sources: list[AnswerSource] = [presets, *seat.people(presets)]
    kept = last.partial

    async def replay(question: Question) -> t.InputResponse | None:
        return kept_answer(kept, question)

    askers = Askers(sources, seat.reporter, stuck=lambda left: NeedInput(record, left), replay=replay)
    if seat.app_user is not None and not opts.no_input:
        sources.append(seat.app_user(askers, presets))
    questions = [
        Question(key, parse_request(wire), wire, record.id, record.server, requests) for key, wire in requests.items()
    ]
    answers: dict[str, Any] = {}
    try:
        await askers.silently(questions, answers)
        return await askers.people(questions, answers)
    except NeedInput:
        raise UsageError(
            f"Nothing here answers {', '.join(requests)} of session {record.id}.",
            hint=f"Give the answers: mcpcli answer {record.id} --answer FIELD=VALUE (or --answers FILE, or at a"
            " terminal)",
        ) from None


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
