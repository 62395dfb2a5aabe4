"""Answers from earlier, and rounds answered in part: what a flow keeps of a round it cannot send yet, what it
says at once about questions nobody will answer, and which earlier answers it gives again.

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
    from mcpcli.state.store import RoundRecord


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


async def earlier_answer(
    keeper: Keeper, attempt: int, kept: dict[str, Any], question: Question
) -> t.InputResponse | None:
    """An answer given before to this very question: kept by the round being resumed (``kept``, by request key), or
    given in an earlier ``attempt`` of the flow to the identical question (same key, same request) — replayed, so
    that a resumed or restarted flow never asks a person, or bills an LLM, twice for it."""
    if question.key in kept:
        return typed_responses({question.key: kept[question.key]})[question.key]
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
