"""A pre-2026 server's questions asked mid-call, over the back-channel (elicitation, sampling, roots): each answered
by the flow's own sources as a round of its own, and, once the leg is over, what became of those that got none.

``Flow`` holds one ``MidCall`` and hands its ``handler`` to the SDK's callbacks; ``taskflow`` settles a task's the same
way. Nothing here talks to the server: the SDK sends what a handler returns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp_types as t

from mcpcli.display import some_of
from mcpcli.engine.steps import REJECTED, Declined, NeedInput, dump, for_server, typed_responses
from mcpcli.errors import McpcliError, UsageError

if TYPE_CHECKING:
    from mcpcli.state.store import SessionRecord

Handler = Callable[[t.InputRequest], Awaitable[t.InputResponse | t.ErrorData]]
TakeRound = Callable[[dict[str, dict[str, Any]], str | None], Awaitable[dict[str, Any]]]


@dataclass
class MidCall:
    """One flow's back-channel questions: counted by kind, those nobody could answer, and mcpcli's own refusal."""

    asked: dict[str, int] = field(default_factory=dict)
    """How many questions of each kind were asked (their request keys are ``KIND-N``)."""
    failed: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Questions asked mid-call that nobody could answer, by request key."""
    refusal: McpcliError | None = None
    """Why mcpcli refused a question (an invalid --answer, asked as ``refused_key``): the leg's error, when the server
    then failed it; named beside its result when it finished anyway (``settle``)."""
    refused_key: str | None = None
    """The request key of the question ``refusal`` answered."""
    notes: list[str] = field(default_factory=list)
    """Questions of legs that completed anyway, described for ``Outcome.refused``."""

    def handler(
        self, kind: str, take_round: TakeRound, before_call: Callable[[t.InputRequest], Awaitable[Any]]
    ) -> Handler:
        """An SDK callback body: the question is a round of its own (``take_round``); before the call was sent (the
        roots a server asks on connecting) it goes to ``before_call`` instead. Nobody to answer: the server hears
        that the user is not available, and the flow waits once the leg is over."""

        async def handle(request: t.InputRequest) -> t.InputResponse | t.ErrorData:
            """One back-channel question: the roots asked before the call go to ``before_call``; anything else becomes a
            round of its own (``take_round``), answered while the call is open. Nobody to answer, or a decline: the
            server gets the spec's error and the key is kept for ``settle``; a bad answer is kept as the refusal and
            re-raised."""
            if (early := await before_call(request)) is not None:
                answer: t.InputResponse | t.ErrorData = early
                return answer
            self.asked[kind] = n = self.asked.get(kind, 0) + 1
            key = f"{kind}-{n}"
            requests = {key: dump(request)}
            try:
                answers = await take_round(requests, None)
            except NeedInput:
                self.failed[key] = requests[key]
                return t.ErrorData(code=t.INVALID_REQUEST, message="The user is not available to answer.")
            except Declined:  # the user's answer: the spec's error for a refused request (the server decides)
                what = "sampling" if kind == "sampling" else "roots"
                return t.ErrorData(code=REJECTED, message=f"User rejected {what} request")
            except UsageError as exc:  # a bad answer, kept waiting by take_round; the server hears a refusal
                if self.refusal is None:
                    self.refusal, self.refused_key = exc, key
                raise
            typed: t.InputResponse = typed_responses(for_server(answers))[key]
            return typed

        return handle

    async def settle(self, *, finished: bool, wait: Callable[[], Awaitable[SessionRecord]]) -> None:
        """After a leg, what became of the questions asked during it that got no answer.

        The leg failed: the flow waits (``wait`` keeps its session waiting; such a question cannot be deferred: exit
        3, or the refusal's own error). The leg brought a complete result anyway: that result is the flow's —
        printed, the session done, so that no ``resume`` repeats a call that completed — and what was refused is
        named once (``notes``).
        """
        pending = dict(self.failed)
        self.failed.clear()
        refused = self.take_refusal()
        if finished:
            if pending:
                self.notes.append(f"{some_of(list(pending), 10)} (nobody could answer)")
            if refused is not None:
                self.notes.append(f"{self.refused_key or 'a question'} ({refused.message.rstrip('.')})")
            return
        if pending:
            raise NeedInput(await wait(), pending, deferred=False)
        if refused is not None:
            raise refused

    def take_refusal(self) -> McpcliError | None:
        """The error a back-channel answer failed with during the last leg, once (see ``refusal``)."""
        refused, self.refusal = self.refusal, None
        return refused
