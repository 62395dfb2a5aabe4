"""Answers from earlier, from others, and rounds answered in part: what a flow keeps of a round it cannot send yet,
what it says at once about questions nobody will answer, which earlier answers it gives again, and how it sends
answers somebody else gave (``mcpcli answer``) or a run under another identity.

A round goes out whole (one retry carries every answer), so a round with one question nobody can answer — a sampling
request with no LLM provider beside a form a person filled in — waits. What was answered is not thrown away: it is
kept with the round (``Store.record_answers(partial=True)``), and a later run asks only what is still open. And what
no source will answer is said before anyone is asked, with the hint that changes it, not after the form.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as t

from mcpcli.engine.steps import AnswerSource, Declined, NeedInput, Question, Reporter, dump, typed_responses
from mcpcli.errors import McpcliError
from mcpcli.net.tasks import same_question

if TYPE_CHECKING:
    from mcpcli.state.keeper import Keeper
    from mcpcli.state.store import RoundRecord, SessionRecord


def why_open(sources: Sequence[AnswerSource], question: Question) -> McpcliError | None:
    """Why no source will answer ``question`` (``steps.Explains``: no LLM provider), known before anyone is asked."""
    for source in sources:
        why_not = getattr(source, "why_not", None)
        if why_not is not None and isinstance(why := why_not(question), McpcliError):
            return why
    return None


def say_open(
    sources: Sequence[AnswerSource], questions: Sequence[Question], reporter: Reporter, said: set[str]
) -> None:
    """Say at once, once a run, why some questions will stay open (the hint says what changes that)."""
    for question in questions:
        why = why_open(sources, question)
        if why is not None and why.message not in said:
            said.add(why.message)
            reporter.note(f"{why.message.rstrip('.')}: {question.key} stays open. {why.hint or ''}".rstrip())


async def keep_part(
    keeper: Keeper, record: RoundRecord, answers: dict[str, Any], exc: McpcliError, *, back_channel: bool = False
) -> None:
    """A round stopped before it could be sent: keep the answers it has (a later resume asks only the rest), and
    why it paused, for the session's timeline (exit 3 says that itself). A question asked mid-call by a pre-2026
    server is gone with its call: nothing of it is kept, and a declined one was answered (with the spec's error)."""
    if answers and not back_channel:
        await keeper.record_answers(record, answers, partial=True)
    if not isinstance(exc, NeedInput) and not (back_channel and isinstance(exc, Declined)):
        await keeper.update(status="waiting", error=exc.message)


def kept_answer(kept: dict[str, Any], question: Question) -> t.InputResponse | None:
    """The answer a stored round kept for this question while it waited for the rest (``kept``, by request key)."""
    return typed_responses({question.key: kept[question.key]})[question.key] if question.key in kept else None


async def earlier_answer(
    keeper: Keeper, attempt: int, kept: dict[str, Any], question: Question
) -> t.InputResponse | None:
    """An answer given before to this very question: kept by the round being resumed (``kept``, by request key), or
    given in an earlier ``attempt`` of the flow to the identical question (same key, same request) — replayed, so
    that a resumed or restarted flow never asks a person, or bills an LLM, twice for it."""
    if question.key in kept:
        return kept_answer(kept, question)
    if attempt == 1:
        return None
    for record, lost in reversed(await keeper.rounds()):
        if record.attempt >= attempt or record.answers is None or question.key in lost:
            continue
        if same_question(record.requests.get(question.key), question.wire) and question.key in record.answers:
            return typed_responses({question.key: record.answers[question.key]})[question.key]
    return None


async def answer_each(
    ask: Callable[[Question], Awaitable[t.InputResponse | None]], questions: Sequence[Question], answers: dict[str, Any]
) -> None:
    """Each question's answer from ``ask``, into ``answers``. A request the user declined that has no decline answer
    (``Declined``) stops the round — once every other question has had its answer, so that those are kept."""
    declined: Declined | None = None
    for question in questions:
        try:
            answer = await ask(question)
        except Declined as exc:
            declined = declined or exc
            continue
        if answer is not None:
            answers[question.key] = dump(answer)
    if declined is not None:
        raise declined


async def check_identity(keeper: Keeper, session: SessionRecord, now: str | None, reporter: Reporter) -> None:
    """Say so when this run is not who started the flow (``now``: this run's identity): the server binds its state
    to that principal."""
    if session.identity is None or now == session.identity:
        return
    reporter.note(
        f"This flow was started as {session.identity}; this run is {now or 'not signed in'}. "
        "If the server refuses the flow's state for that, mcpcli starts the flow over as you."
    )
    await keeper.update(identity=now)


def resend_note(session: SessionRecord, last: RoundRecord) -> str:
    """What a resume says before it sends a round answered before: by someone else, or to a driver that died."""
    if last.answered_by is not None:
        when = "" if last.answered_at is None else f" at {last.answered_at.strftime('%Y-%m-%d %H:%M:%S')} UTC"
        return f"Round {last.index} was answered by {last.answered_by}{when}: sending their answers."
    # Still "running" as claimed: its driver died mid-round (a stop or a lost connection would have put it back to
    # waiting). Its answers are re-sent as stored, so the presets that gave them met their question.
    why = "its driver died before the result came back" if session.status == "running" else "no result came back"
    return f"Round {last.index} was answered, but {why}: sending it again with the same answers."


async def others_answer(keeper: Keeper, last: RoundRecord, sources: Sequence[AnswerSource], reporter: Reporter) -> bool:
    """Whether to send the answers somebody else gave the round (``answered_by``). A route that asks the owner to
    confirm them shows them and asks the person at this terminal; refused, they are forgotten and the round asked
    here again. With nobody here to confirm, the flow waits (exit 3) for a run that can."""
    session = keeper.session
    if session is None or not (session.routing or {}).get("confirm") or last.answered_by is None:
        return True
    confirmer = next((s for s in sources if s.interactive and hasattr(s, "confirm_answers")), None)
    if confirmer is None:
        raise NeedInput(session, dict(last.requests), confirm_from=last.answered_by)
    if await confirmer.confirm_answers(last.answered_by, last.requests, last.answers or {}):
        return True
    reporter.note(f"{last.answered_by}'s answers were not sent; answer round {last.index} here.")
    await keeper.reopen_round(last)
    return False
