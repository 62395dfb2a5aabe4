"""The hand-run input-required loop (PROTOCOL.md): call, answer, persist, retry — until a result.

``Flow`` knows the answer sources (through the small ``AnswerSource`` interface)
and the session store, not how answers are collected. Every round is committed
before the retry is sent; a stale ``request_state`` restarts the flow with the
same arguments, and answers already given to unchanged questions are replayed.
Nothing here is process-global: one ``Flow`` per call, so a long-lived worker
can run many side by side.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import anyio
import mcp_types as t
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter, ValidationError

from mcpcli.errors import ExitCode, McpcliError, ServerError
from mcpcli.store import RoundRecord, SessionRecord, Store, new_session_id

Method = Literal["tools/call", "prompts/get", "resources/read"]
FlowResult = t.CallToolResult | t.GetPromptResult | t.ReadResourceResult

STATE_ONLY_BACKOFF = (0.05, 0.25)
"""First sleep and cap (seconds) for state-only rounds: 50 ms doubling to 250 ms, as the SDK's own loop."""

MAX_RESTARTS = 2
"""How often one run may start the flow over after a stale ``request_state`` before giving up."""


@dataclass(frozen=True)
class Call:
    """What the flow calls: the same method, name and arguments on every leg."""

    method: Method
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Question:
    """One input request of a round, as an answer source sees it."""

    key: str
    """The request key the server chose (for back-channel questions: ``elicitation-1``, ``roots-1``...)."""
    request: t.InputRequest
    """The typed request."""
    wire: dict[str, Any]
    """The request as received (JSON); stored, replayed and shown in the exit-3 document."""
    session_id: str
    server: str
    """The server target label, for display."""
    round_requests: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """Every request of this round (to tell which request a bare ``--answer FIELD=...`` means)."""
    back_channel: bool = False
    """Asked mid-call by a pre-2026 server: it cannot be deferred to a later resume."""


class AnswerSource(Protocol):
    """Something that can answer some questions: presets, replay, roots, the terminal, an LLM."""

    interactive: bool
    """True when answering may ask a person (such sources run only after every other source declined)."""

    async def answer(self, question: Question) -> t.InputResponse | None:
        """The answer, or None when this source cannot answer that question."""
        ...


class NeedInput(McpcliError):
    """Input is required and nobody can answer it: the session is saved, exit 3."""

    exit_code = ExitCode.INPUT_REQUIRED
    default_title = "Input required"

    def __init__(self, session: SessionRecord, pending: dict[str, dict[str, Any]], *, deferred: bool = True) -> None:
        what = ", ".join(pending) or "input"
        if deferred:
            message = f"Session {session.id} is waiting for input: {what}."
            hint = f"Answer it with: mcpcli resume {session.id} --answer FIELD=VALUE (or at a terminal)"
        else:
            message = f"The server asked mid-call ({what}) and nobody could answer; such a question cannot be deferred."
            hint = f"Run again at a terminal, or with --answer: mcpcli resume {session.id} --answer FIELD=VALUE"
        super().__init__(message, hint=hint)
        self.session = session
        self.pending = pending


class LimitReached(McpcliError):
    """``--max-rounds`` or ``--timeout`` was reached: exit 4, session kept."""

    exit_code = ExitCode.SERVER
    default_title = "Limit reached"


@dataclass
class Outcome:
    """A finished flow: the result and the session (None when no round needed input)."""

    result: dict[str, Any]
    session: SessionRecord | None
    exit_code: ExitCode


@dataclass
class Limits:
    max_rounds: int = 10
    """How many input-required results one run may answer."""
    timeout: float | None = None
    """Wall-clock seconds for the whole run (network legs and back-off; a person's think time is not cut off)."""


class Reporter(Protocol):
    """What the flow tells the user along the way (stderr)."""

    def note(self, text: str) -> None: ...

    def detail(self, text: str) -> None:
        """Shown with ``-v`` only."""
        ...

    def progress(self, progress: float, total: float | None, message: str | None) -> None: ...


def dump(model: Any) -> dict[str, Any]:
    """An SDK model as wire JSON."""
    result: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


def is_stale_state(exc: MCPError) -> bool:
    """The server's fixed answer to a state it no longer accepts (expired, restarted, other key)."""
    data = exc.data if isinstance(exc.data, dict) else {}
    return exc.code == t.INVALID_PARAMS and (
        data.get("reason") == "invalid_request_state" or "requeststate" in exc.message.lower().replace(" ", "")
    )


def result_exit_code(method: str, result: Mapping[str, Any]) -> ExitCode:
    return ExitCode.TOOL_ERROR if method == "tools/call" and result.get("isError") else ExitCode.OK


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    """Validators for stored JSON, built once (a pure cache, not flow state)."""
    return TypeAdapter(kind)


def parse_request(wire: Mapping[str, Any]) -> t.InputRequest:
    """A stored request (JSON) back to its SDK model."""
    request: t.InputRequest = _adapter(t.InputRequest).validate_python(wire, by_alias=True)
    return request


def is_legacy(protocol_version: str | None) -> bool:
    """Pre-2026 servers ask over the back-channel; their flows resume by starting over."""
    return protocol_version is not None and protocol_version < "2026-07-28"


@dataclass
class Flow:
    """One flow: a call and its rounds, driven by hand over one connected ``Client``."""

    store: Store
    server: str
    """The target label, stored with the session."""
    sources: Sequence[AnswerSource]
    reporter: Reporter
    limits: Limits = field(default_factory=Limits)
    session: SessionRecord | None = None
    _deadline: float = math.inf
    _attempt: int = 1
    _back_channel_count: dict[str, int] = field(default_factory=dict)
    _back_channel_failed: dict[str, dict[str, Any]] = field(default_factory=dict)
    call: Call | None = None
    client: Client | None = None
    """Set once connected: the back-channel callbacks are built before the connection exists."""

    # --- entry points ------------------------------------------------------------------------------------------------

    async def start(self, call: Call) -> Outcome:
        """Call for the first time; a session is created at the first input request."""
        self.call = call
        self._arm_deadline()
        return await self._loop(pending=None)

    async def resume(self, session: SessionRecord) -> Outcome:
        """Continue a stored session: answer what is pending and retry with the stored state, byte for byte."""
        self.session = session
        self.call = Call(session.method, session.name, session.arguments)
        self._arm_deadline()
        last = self.store.last_round(session.id)
        self._attempt = last.attempt if last else 1
        if last is None or is_legacy(session.protocol_version):
            # A back-channel question cannot be answered after the call ended: ask the call again, replaying.
            if last is not None:
                self._attempt += 1
            return await self._loop(pending=None)
        if last.answers is not None:
            self.reporter.note(
                f"Round {last.index} was answered but its result never arrived; sending it again with the same answers."
            )
            return await self._loop(pending=last, resend=last.answers)
        return await self._loop(pending=last)

    # --- the loop ----------------------------------------------------------------------------------------------------

    def _arm_deadline(self) -> None:
        if self.limits.timeout is not None:
            self._deadline = time.monotonic() + self.limits.timeout

    async def _loop(self, pending: RoundRecord | None, resend: dict[str, Any] | None = None) -> Outcome:
        call = self.call
        assert call is not None
        rounds = 0
        restarts = 0
        delay = STATE_ONLY_BACKOFF[0]
        while True:
            responses: dict[str, Any] | None = None
            state: str | None = None
            if pending is not None:
                state = pending.request_state
                if resend is not None:
                    responses, resend = resend, None
                elif pending.requests:
                    responses = await self._answer_round(pending)
                    self.store.record_answers(pending.session_id, pending.index, responses)
                else:
                    self.store.record_answers(pending.session_id, pending.index, {})
                    await self._sleep(delay)
                    delay = min(delay * 2, STATE_ONLY_BACKOFF[1])
            try:
                result = await self._send(call, responses, state)
            except MCPError as exc:
                if pending is not None and is_stale_state(exc) and restarts < MAX_RESTARTS:
                    restarts += 1
                    self._attempt += 1
                    self.reporter.note(
                        "The server no longer accepts this flow's state (expired or restarted); "
                        "starting over with the same arguments and replaying your answers."
                    )
                    pending = None
                    continue
                raise self._fail(f"The server answered with an error: {exc.message} (code {exc.code}).") from None
            if isinstance(result, t.InputRequiredResult):
                session = self._ensure_session()
                if result.input_requests:
                    delay = STATE_ONLY_BACKOFF[0]
                requests = {key: dump(req) for key, req in (result.input_requests or {}).items()}
                # Recorded before the limit is checked: a later resume continues from the newest state.
                pending = self.store.add_round(
                    session.id, attempt=self._attempt, requests=requests, request_state=result.request_state
                )
                rounds += 1
                asked = ", ".join(requests) or "nothing (not finished yet)"
                self.reporter.detail(f"round {pending.index} (session {session.id}): the server asks {asked}")
                if rounds > self.limits.max_rounds:
                    self._keep("waiting")
                    raise LimitReached(
                        f"The server still asks for input after {self.limits.max_rounds} rounds; stopped.",
                        hint=self._resume_hint("--max-rounds N"),
                    )
                continue
            return self._finish(dump(result))

    async def _send(self, call: Call, responses: dict[str, Any] | None, state: str | None) -> Any:
        """One leg: the same method, name and arguments; only the responses and the state change."""
        typed = _typed_responses(responses) if responses is not None else None
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout()
        assert self.client is not None
        session = self.client.session
        try:
            with anyio.fail_after(None if math.isinf(remaining) else remaining):
                if call.method == "tools/call":
                    return await session.call_tool(
                        call.name,
                        call.arguments,
                        progress_callback=self._on_progress,
                        input_responses=typed,
                        request_state=state,
                        allow_input_required=True,
                    )
                if call.method == "prompts/get":
                    return await session.get_prompt(
                        call.name, call.arguments, input_responses=typed, request_state=state, allow_input_required=True
                    )
                return await session.read_resource(
                    call.name, input_responses=typed, request_state=state, allow_input_required=True
                )
        except TimeoutError:
            raise self._timeout() from None
        except ValidationError as exc:
            raise self._fail(f"The server sent a malformed result: {exc.errors()[0]['msg']}.") from None
        except (MCPError, McpcliError):
            raise
        except Exception as exc:  # boundary: transports fail in many shapes (httpx2 errors, closed streams, groups)
            raise self._fail(f"The connection to the server failed: {_innermost(exc)}") from exc
        finally:
            if self._back_channel_failed:
                pending = dict(self._back_channel_failed)
                self._back_channel_failed.clear()
                self._keep("waiting")
                assert self.session is not None
                raise NeedInput(self.session, pending, deferred=False)

    async def _on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.reporter.progress(progress, total, message)

    async def _sleep(self, seconds: float) -> None:
        if time.monotonic() + seconds > self._deadline:
            raise self._timeout()
        await anyio.sleep(seconds)

    # --- answering ---------------------------------------------------------------------------------------------------

    async def _answer_round(self, pending: RoundRecord) -> dict[str, Any]:
        """Answer every request of the round, or save and stop (exit 3) when nobody can."""
        assert self.session is not None
        questions = [
            Question(key, parse_request(wire), wire, self.session.id, self.server, pending.requests)
            for key, wire in pending.requests.items()
        ]
        answers: dict[str, Any] = {}
        for question in questions:  # every non-interactive source first: presets are checked before anyone is asked
            if (answer := await self._ask(question, interactive=False)) is not None:
                answers[question.key] = dump(answer)
        unanswered = [q for q in questions if q.key not in answers]
        if unanswered and not any(s.interactive for s in self.sources):
            raise NeedInput(self.session, {q.key: q.wire for q in unanswered})
        for question in unanswered:
            answer = await self._ask(question, interactive=True)
            if answer is None:
                raise NeedInput(self.session, {q.key: q.wire for q in unanswered if q.key not in answers})
            answers[question.key] = dump(answer)
        return answers

    async def _ask(self, question: Question, *, interactive: bool) -> t.InputResponse | None:
        for source in self.sources:
            if source.interactive == interactive and (answer := await source.answer(question)) is not None:
                return answer
        return None if interactive else self._replay(question)

    def _replay(self, question: Question) -> t.InputResponse | None:
        """An answer given in an earlier attempt of this flow to the identical question (same key, same request)."""
        for record in reversed(self.store.rounds(question.session_id)):
            if record.attempt >= self._attempt or record.answers is None:
                continue
            if record.requests.get(question.key) == question.wire and question.key in record.answers:
                responses = _typed_responses({question.key: record.answers[question.key]})
                return responses[question.key]
        return None

    def back_channel(self, kind: str) -> Callable[[t.InputRequest], Awaitable[t.InputResponse | t.ErrorData]]:
        """An SDK callback body for pre-2026 servers: the same sources, asked mid-call, recorded as a round."""

        async def handle(request: t.InputRequest) -> t.InputResponse | t.ErrorData:
            self._back_channel_count[kind] = n = self._back_channel_count.get(kind, 0) + 1
            key = f"{kind}-{n}"
            wire = dump(request)
            session = self._ensure_session()
            record = self.store.add_round(session.id, attempt=self._attempt, requests={key: wire}, request_state=None)
            question = Question(key, request, wire, session.id, self.server, {key: wire}, back_channel=True)
            answer = await self._ask(question, interactive=False) or await self._ask(question, interactive=True)
            if answer is None:
                self._back_channel_failed[key] = wire
                return t.ErrorData(code=t.INVALID_REQUEST, message="The user is not available to answer.")
            self.store.record_answers(session.id, record.index, {key: dump(answer)})
            return answer

        return handle

    # --- sessions ----------------------------------------------------------------------------------------------------

    def _ensure_session(self) -> SessionRecord:
        if self.session is None:
            assert self.call is not None
            from datetime import UTC, datetime

            now = datetime.now(UTC)
            self.session = SessionRecord(
                id=new_session_id(),
                server=self.server,
                method=self.call.method,
                name=self.call.name,
                arguments=self.call.arguments,
                protocol_version=self.client.protocol_version if self.client else None,
                status="running",
                created=now,
                updated=now,
            )
            self.store.create(self.session)
        return self.session

    def _keep(self, status: Literal["waiting", "failed", "expired"], error: str | None = None) -> None:
        if self.session is not None:
            self.session = self.store.update(self.session.id, status=status, error=error)

    def _finish(self, result: dict[str, Any]) -> Outcome:
        assert self.call is not None
        code = result_exit_code(self.call.method, result)
        if self.session is not None:
            self.session = self.store.update(self.session.id, status="done", result=result, exit_code=int(code))
        return Outcome(result=result, session=self.session, exit_code=code)

    def _resume_hint(self, extra: str = "") -> str | None:
        if self.session is None:
            return None
        return f"Continue with: mcpcli resume {self.session.id}" + (f" {extra}" if extra else "")

    def _fail(self, message: str) -> ServerError:
        self._keep("waiting", error=message)
        return ServerError(message, hint=self._resume_hint())

    def _timeout(self) -> LimitReached:
        self._keep("waiting")
        return LimitReached(f"The flow did not finish within {self.limits.timeout:g} s.", hint=self._resume_hint())


def _innermost(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return (str(exc) or type(exc).__name__).splitlines()[0]


def _typed_responses(responses: Mapping[str, Any]) -> t.InputResponses:
    typed: t.InputResponses = _adapter(t.InputResponses).validate_python(dict(responses), by_alias=True)
    return typed
