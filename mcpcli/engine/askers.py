"""Who answers a round's questions, in order — for a flow being driven (``Flow``) and for ``mcpcli answer``, which
answers a stored round apart from driving it.

The order is the user's contract: what the user gave for this run (``--answer``, ``--answers``), then replay (a
restarted flow never asks a person, or bills an LLM, twice for a question already answered), then the other silent
sources (roots), and only then the interactive ones — a person at the terminal or in the app, the sampler. A
question nobody here can answer stops the round with ``NeedInput`` (exit 3; the round is kept).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import mcp_types as t

from mcpcli.engine.partial import answer_each, say_open
from mcpcli.engine.steps import AnswerSource, Call, NeedInput, Question, Reporter, dump

Replay = Callable[[Question], Awaitable[t.InputResponse | None]]
"""An answer given to the same question before (``partial.earlier_answer``), or None."""
Told = Callable[[str, str, Any, Any], None]
"""Told where each answer came from: key, label (preset, replay, prompt, roots, llm), answer, source."""
Stuck = Callable[[dict[str, dict[str, Any]]], NeedInput]
"""The ``NeedInput`` to raise for the requests nobody here answers (by key)."""


class Asked(Protocol):
    """What an interactive source may read of whoever asks it — a flow, or ``mcpcli answer``'s ``Askers``: the call
    (a form's header), where notes go, and the other sources (to say why a question stays open)."""

    @property
    def call(self) -> Call | None: ...

    @property
    def reporter(self) -> Reporter: ...

    @property
    def sources(self) -> Sequence[AnswerSource]: ...


@dataclass
class Askers:
    """The answer sources of one flow, or of one ``mcpcli answer``, and what they were asked so far."""

    sources: Sequence[AnswerSource]
    """In order: presets, roots, then the interactive ones (the terminal's person, the sampler, the app's user)."""
    reporter: Reporter
    """Where why-open notes go ("sampling has no provider: … stays open")."""
    stuck: Stuck
    replay: Replay | None = None
    """Answers from earlier rounds (a flow's); None: nothing is replayed (``mcpcli answer``)."""
    told: Told | None = None
    call: Call | None = None
    """The call being answered, shown in a form's header (None: a stored round answered apart)."""
    said: set[str] = field(default_factory=set)
    """Why-open notes already given this run."""

    async def silently(self, questions: Sequence[Question], answers: dict[str, Any]) -> None:
        """What presets, replay and roots can answer, into ``answers``: nobody is asked, presets are tried first.
        A declined question without a decline answer stops the round once the others have their answers
        (``partial.answer_each``)."""
        await answer_each(functools.partial(self.ask, interactive=False), questions, answers)

    async def people(self, questions: Sequence[Question], answers: dict[str, Any]) -> dict[str, Any]:
        """Ask a person what is left (into ``answers``, which is returned); with nobody to ask, stop with
        ``NeedInput``. What no source will answer (sampling with no LLM provider) is said first, before anyone is
        asked; a source that answers a round at once (the app's form) gets every open question together."""
        unanswered = [q for q in questions if q.key not in answers]
        say_open(self.sources, unanswered, self.reporter, self.said)
        if unanswered and not any(s.interactive for s in self.sources):
            raise self.stuck({q.key: q.wire for q in unanswered})
        together = next((s for s in self.sources if s.interactive and hasattr(s, "answer_round")), None)
        if together is not None and unanswered:
            given = await together.answer_round(unanswered)
            answers.update({key: dump(answer) for key, answer in given.items()})
            for key, answer in given.items():
                self._told(key, "prompt", answer, together)
        for question in unanswered:
            if question.key in answers:
                continue
            answer = await self.ask(question, interactive=True)
            if answer is None:
                raise self.stuck({q.key: q.wire for q in unanswered if q.key not in answers})
            answers[question.key] = dump(answer)
        return answers

    async def ask(self, question: Question, *, interactive: bool) -> t.InputResponse | None:
        """The first answer, in the contract's order (see the module): the user's own for this run, replay, then
        the rest; None when no source of that kind answers."""
        candidates = [s for s in self.sources if s.interactive == interactive]
        if not interactive:
            explicit = [s for s in candidates if getattr(s, "explicit", False)]
            for source in explicit:
                if (answer := await source.answer(question)) is not None:
                    self._told(question.key, "preset", answer, source)
                    return answer
            if self.replay is not None and (replayed := await self.replay(question)) is not None:
                self._told(question.key, "replay", replayed, None)
                return replayed
            candidates = [s for s in candidates if s not in explicit]
        for source in candidates:
            if (answer := await source.answer(question)) is not None:
                label = getattr(source, "origin", "prompt" if interactive else "preset")
                self._told(question.key, label, answer, source)
                return answer
        return None

    def _told(self, key: str, label: str, answer: Any, source: Any) -> None:
        if self.told is not None:
            self.told(key, label, answer, source)
