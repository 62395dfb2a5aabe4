"""Sampling: answer a server's ``CreateMessageRequest`` with the user's own LLM — with approval, within budget.

An ``AnswerSource`` like the others, for 2026-07-28 input requests and pre-2026
back-channel ``sampling/createMessage`` alike. Per server a policy decides:
``always`` (answer without asking), ``ask`` (two gates: the request before it is
sent, the reply before it is returned), ``session`` (ask once, then answer the
rest of this run), ``never``. A refused or over-budget request pauses the flow:
nothing is sent, the session stays resumable, and the reason is kept with the
session. A completion is never made up.

The gates are an ``Approver``: inline prompts (``asking.TerminalApprover``) or the
TUI's review screen. The provider calls live in ``llm``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

import mcp_types as t

from mcpcli.engine.steps import PRIVATE_META, Question
from mcpcli.errors import ExitCode, McpcliError, UserStopped

Policy = Literal["ask", "session", "always", "never"]
POLICIES: tuple[str, ...] = ("ask", "session", "always", "never")
USAGE_META = PRIVATE_META + "usage"
"""Where a stored reply keeps its token counts (``_meta``), so budgets hold across resumes. Kept in the store only:
``flow.for_server`` takes it out of what is sent (the server did not ask for the user's token counts)."""


class SamplingPaused(McpcliError):
    """Sampling was refused by policy or budget: nothing was sent; the session waits (exit 3)."""

    exit_code = ExitCode.INPUT_REQUIRED
    default_title = "Sampling paused"


@dataclass(frozen=True)
class SamplingView:
    """What a person approves: who asks, which model answers, and everything that would be sent."""

    server: str
    provider: str
    model: str
    max_tokens: int
    params: dict[str, Any]
    """The request as it would be sent (MCP wire JSON: messages, systemPrompt, temperature, stopSequences...)."""


@dataclass(frozen=True)
class Decision:
    action: Literal["approve", "edit", "reject"]
    value: Any = None
    """For ``edit``: the edited request params (first gate) or reply text (second gate)."""


class Approver(Protocol):
    """The two gates, shown to a person (terminal or TUI)."""

    async def review_request(self, view: SamplingView) -> Decision: ...

    async def review_reply(self, view: SamplingView, reply: dict[str, Any]) -> Decision: ...


async def _nothing_used() -> tuple[int, int]:
    return 0, 0


@dataclass
class Budget:
    """Per-session limits; ``used`` counts what the session's stored replies already spent."""

    max_calls: int | None = None
    max_tokens: int | None = None
    used: Callable[[], Awaitable[tuple[int, int]]] = _nothing_used
    """What the session's stored replies spent: (calls, tokens); read from the store (hence awaited)."""

    async def check(self, asking: int) -> str | None:
        calls, tokens = await self.used()
        if self.max_calls is not None and calls >= self.max_calls:
            return f"the session has used its {self.max_calls} sampling calls"
        if self.max_tokens is not None and tokens + asking > self.max_tokens:
            return f"{asking} more tokens would pass the session's budget of {self.max_tokens} ({tokens} used)"
        return None


def usage_of(answers: Mapping[str, Any]) -> tuple[int, int]:
    """Sampling calls and completion tokens recorded in one round's stored answers."""
    calls = tokens = 0
    for answer in answers.values():
        usage = (answer.get("_meta") or {}).get(USAGE_META) if isinstance(answer, Mapping) else None
        if isinstance(usage, Mapping):
            calls += 1
            tokens += int(usage.get("output", 0))
    return calls, tokens


@dataclass
class Sampler:
    """Answers sampling requests through the configured provider, when the policy and the budget allow."""

    origin: ClassVar[str] = "llm"
    """Where its answers came from, as a recording says."""
    server: str
    policy: Policy
    complete: Callable[[Sequence[str], dict[str, Any], int], Awaitable[Any]]
    """``(model hints, params, max_tokens) -> llm.Completion`` — bound to the provider by the caller."""
    describe: Callable[[Sequence[str], int], tuple[str, str, int]]
    """``(hints, requested max tokens) -> (provider name, model name, clamped max tokens)``; raises on bad config."""
    approver: Approver | None = None
    budget: Budget = field(default_factory=Budget)
    _session_approved: bool = False

    @property
    def interactive(self) -> bool:
        """Asked only after every silent source: unless the policy lets it answer alone."""
        return self.policy in ("ask", "session") and not self._session_approved

    async def answer(self, question: Question) -> t.InputResponse | None:
        """The model's completion for a sampling request (``None`` for anything else, or when a gated request has no
        approver: the flow waits).

        Policy ``never`` and a spent budget raise ``SamplingPaused``; under ``ask`` (every time) or ``session`` (once)
        the approver sees the request before it goes to the provider and the reply before it goes to the server, and may
        edit either; a refusal is ``UserStopped``. Nothing reaches the provider before policy, budget and approver allow
        it.
        """
        request = question.request
        if not isinstance(request, t.CreateMessageRequest):
            return None
        if self.policy == "never":
            raise SamplingPaused(
                f"Sampling is not allowed for {self.server} (policy never); nothing was sent.",
                hint="Allow it with --approve-sampling ask (or a [sampling.servers] policy in config.toml)",
            )
        params: dict[str, Any] = question.wire.get("params") or {}
        hints = [h.get("name", "") for h in ((params.get("modelPreferences") or {}).get("hints") or [])]
        provider, model, max_tokens = self.describe(hints, int(params.get("maxTokens") or 0))
        if reason := await self.budget.check(max_tokens):
            raise SamplingPaused(
                f"Sampling paused: {reason}; nothing was sent.", hint="Raise [sampling] max_calls/max_tokens"
            )
        view = SamplingView(self.server, provider, model, max_tokens, _forwardable(params))
        gated = self.policy == "ask" or (self.policy == "session" and not self._session_approved)
        if gated:
            if self.approver is None:
                return None  # nobody to approve: the flow waits (exit 3)
            decision = await self.approver.review_request(view)
            if decision.action == "reject":
                raise UserStopped("You refused the sampling request; nothing was sent.")
            if decision.action == "edit":
                view = SamplingView(view.server, provider, model, max_tokens, _forwardable(decision.value))
        completion = await self.complete(hints, view.params, max_tokens)
        reply: dict[str, Any] = dict(completion.result)
        if gated:
            assert self.approver is not None
            decision = await self.approver.review_reply(view, reply)
            if decision.action == "reject":
                raise UserStopped("You refused the model's reply; nothing was sent.")
            if decision.action == "edit":
                reply = {**reply, "content": {"type": "text", "text": str(decision.value)}}
            if self.policy == "session":
                self._session_approved = True
        usage = {"input": completion.usage_in, "output": completion.usage_out}
        reply["_meta"] = {**(reply.get("_meta") or {}), USAGE_META: usage}
        return _result(reply)


@dataclass(frozen=True)
class NoProvider:
    """Where the sampler would stand when no LLM provider is configured: it answers nothing, and says why at once
    (``steps.Explains``) — before a person fills in the rest of a round that cannot be sent without a completion."""

    reason: McpcliError
    """``llm.no_provider()``: what is missing, and how to add it."""
    interactive: ClassVar[bool] = False

    async def answer(self, question: Question) -> t.InputResponse | None:
        return None

    def why_not(self, question: Question) -> McpcliError | None:
        return self.reason if isinstance(question.request, t.CreateMessageRequest) else None


def _forwardable(params: Mapping[str, Any]) -> dict[str, Any]:
    """What may reach a provider: never ``metadata``; ``includeContext`` is treated as none."""
    return {k: v for k, v in params.items() if k not in ("metadata", "includeContext", "task", "_meta")}


def _result(reply: dict[str, Any]) -> t.InputResponse:
    from pydantic import TypeAdapter

    model: t.InputResponse = TypeAdapter(t.CreateMessageResult | t.CreateMessageResultWithTools).validate_python(
        reply, by_alias=True
    )
    return model
