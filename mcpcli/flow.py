"""The hand-run input-required loop (PROTOCOL.md): call, answer, persist, retry — until a result.

``Flow`` knows the answer sources (through the small ``AnswerSource`` interface)
and the session store, not how answers are collected. Every round is committed
before the retry is sent; a stale ``request_state`` restarts the flow with the
same arguments, and answers already given to unchanged questions are replayed.
Nothing here is process-global: one ``Flow`` per call, so a long-lived worker
can run many side by side — each its own lease owner, its store calls in worker
threads (``Keeper``), so one slow store write stalls only its own flow.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio
import mcp_types as t
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter, ValidationError

from mcpcli.connection import roots_asked_again
from mcpcli.display import some_of
from mcpcli.errors import (
    DRESSED_RPC_ERROR,
    Action,
    ExitCode,
    McpcliError,
    NextStep,
    ServerError,
    UsageError,
    invalid_shape,
    rpc_error,
)
from mcpcli.keeper import Keeper
from mcpcli.tasks import CreateTaskResult, TaskControl, same_question

if TYPE_CHECKING:
    from mcpcli.auth import Credentials
    from mcpcli.store import RoundRecord, SessionRecord
    from mcpcli.trace import Tracer

Method = Literal["tools/call", "prompts/get", "resources/read"]

STATE_ONLY_BACKOFF = (0.05, 0.25)
"""First sleep and cap (seconds) for state-only rounds: 50 ms doubling to 250 ms, as the SDK's own loop."""

MAX_RESTARTS = 2
"""How often one run may start the flow over after a stale ``request_state`` before giving up."""

ROOTS_SETTLE = 0.1
"""Seconds between answering a server's ``roots/list`` on connecting and sending the call (see ``Flow.start``)."""

ROOTS_WAIT = 2.0
"""How long a call waits for a kept-alive server told that the roots changed to ask for them."""


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

    @property
    def interactive(self) -> bool:
        """True when answering may ask a person (such sources run only after every other source declined)."""
        ...

    async def answer(self, question: Question) -> t.InputResponse | None:
        """The answer, or None when this source cannot answer that question."""
        ...


class RoundAnswerer(Protocol):
    """An interactive source that shows a round's open questions together (the TUI's round screen).

    Optional: when an interactive source has ``answer_round``, the flow hands it every question a person
    must answer in one call, so they are submitted together, as the protocol sends them in one retry.
    """

    async def answer_round(self, questions: Sequence[Question]) -> dict[str, t.InputResponse]:
        """Answers by request key; a key left out means nobody answered it (the flow then waits, exit 3)."""
        ...


class NeedInput(McpcliError):
    """Input is required and nobody can answer it: the session is saved, exit 3."""

    exit_code = ExitCode.INPUT_REQUIRED
    default_title = "Input required"

    def __init__(self, session: SessionRecord, pending: dict[str, dict[str, Any]], *, deferred: bool = True) -> None:
        what = some_of(list(pending), 10) or "input"
        if deferred:
            message = f"Session {session.id} is waiting for input: {what}."
        else:
            message = f"The server asked mid-call ({what}) and nobody could answer; such a question cannot be deferred."
        action: Action = "answer" if deferred else "answer_here"
        # No --answer answers a sampling request (an LLM does) nor a URL request (the user visits the page).
        if pending and all(wire.get("method") == "sampling/createMessage" for wire in pending.values()):
            action = "sample"
        elif pending and all((wire.get("params") or {}).get("mode") == "url" for wire in pending.values()):
            action = "visit"
        super().__init__(message, next_step=NextStep(action, session.id))
        self.session = session
        self.pending = pending
        self.deferred = deferred
        """Whether the question waits in the session (2026-07-28), or was asked mid-call and could not wait."""


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
    detached: bool = False
    """The call became a task left running on the server (``--detach``): no result yet, the session continues it."""
    cancelled: bool = False
    """The session's task was cancelled at the user's request (``resume --cancel-task``)."""
    refused: tuple[str, ...] = ()
    """What a pre-2026 server asked mid-call and did not get (nobody could answer, or mcpcli could not use the
    answer given) before it finished anyway: the front end prints the result and warns once (``refusal``)."""

    def refusal(self) -> str | None:
        """The one warning that goes with the result when ``refused`` names anything."""
        return f"The server finished without an answer to {'; '.join(self.refused)}." if self.refused else None


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


def prepare_validators() -> None:
    """Build the validators a flow uses now (a process that forks flows builds them once, not in every child)."""
    for kind in (t.InputRequest, t.InputResponses):
        _adapter(kind)


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

    keeper: Keeper
    """The flow's session on disk: created with the first round, leased, secrets sealed."""
    server: str
    """The target label, stored with the session."""
    sources: Sequence[AnswerSource]
    reporter: Reporter
    limits: Limits = field(default_factory=Limits)
    call: Call | None = None
    client: Client | None = None
    """Set once connected: the back-channel callbacks are built before the connection exists."""
    credentials: Credentials | None = None
    """How the connection signs in (HTTP); the session records the identity it names."""
    tracer: Tracer | None = None
    """The connection's tap: told where the loop stands (start, rounds, restarts, result) for the trace."""
    connection: dict[str, Any] | None = None
    """How the flow connects (``config.connection_settings``): kept with its session, so a resume reconnects
    the same way."""
    detach: bool = False
    """``--detach``: when the call becomes a task, save it and return at once, leaving it running on the server."""
    as_task: bool = False
    """2025-11-25: call the tool as a task (``task`` param): its ``execution.taskSupport`` asks for it."""
    task_control: TaskControl = field(default_factory=lambda: TaskControl())
    """A front end's detach or cancel request for the task the call became (the app's keys)."""
    roots_expected: bool = False
    """The server is known to ask for the roots on connecting (``batch``): the call waits for that question first."""
    resent: RoundRecord | None = None
    """The stored round this run sent again as it was (its answers were given before, to a driver that died)."""
    _t0: float = 0.0
    _deadline: float = math.inf
    _attempt: int = 1
    _back_channel_count: dict[str, int] = field(default_factory=dict)
    _back_channel_failed: dict[str, dict[str, Any]] = field(default_factory=dict)
    _refused: list[str] = field(default_factory=list)
    """Back-channel questions of legs that completed anyway, described for ``Outcome.refused``."""
    _refused_key: str | None = None
    """The request key of the question ``_back_channel_refused`` answered."""
    _back_channel_refused: McpcliError | None = None
    """Why mcpcli refused a back-channel question (an invalid --answer, asked as ``_refused_key``): the leg's error,
    when the server then failed it; named beside its result when it finished anyway (``_settle_back_channel``)."""
    _in_flight: bool = False
    _roots_given_at: float | None = None
    """When a ``roots/list`` that came before the call was answered (``_before_the_call``), on the monotonic clock."""

    @property
    def session(self) -> SessionRecord | None:
        """The flow's session once it has one (saved, or about to be saved with its first round)."""
        return self.keeper.session

    @property
    def _saved(self) -> bool:
        return self.keeper.saved

    # --- entry points ------------------------------------------------------------------------------------------------

    async def start(self, call: Call) -> Outcome:
        """Call for the first time; a session is created with the first input request.

        Run it inside ``async with flow.keeper.running():``, which holds the lease's heartbeat and gives the
        lease back however the run ends — after the connection is closed, so that a connection that died can
        still be recorded under the lease.
        """
        await self._roots_first()
        self.call = call
        self._arm_deadline()
        self._event("start", method=call.method, name=call.name)
        return await self._loop()

    async def _roots_first(self) -> None:
        """Before the call (while ``self.call`` is unset, so that the question is not taken for the flow's own):
        wait for a server known to ask for the roots on connecting to ask, then give it a moment to take them in
        — the filesystem server resolves each path before it serves any, and a call sent at once finds none."""
        if self.roots_expected or (self.client is not None and roots_asked_again(self.client)):
            with anyio.move_on_after(ROOTS_WAIT):  # a server that never asks after all is not waited for long
                while self._roots_given_at is None:
                    await anyio.sleep(0.01)
        if self._roots_given_at is not None:
            await anyio.sleep(max(0.0, self._roots_given_at + ROOTS_SETTLE - time.monotonic()))

    async def adopt(self, session: SessionRecord, *, steal: bool = False, wait: float = 0.0) -> SessionRecord:
        """Claim a stored session before anything is sent (before connecting, even), inside the keeper's
        ``running()``: ``SessionBusy`` (also for a second flow of this process; after ``wait`` seconds of waiting
        for the holder to stop), or ``keeper.Finished`` when another driver finished it since it was read."""
        return await self.keeper.adopt(session, steal=steal, wait=wait, note=self.reporter.note)

    async def resume(self) -> Outcome:
        """Continue the adopted session: answer what is pending and retry with the stored state, byte for byte."""
        session = self.keeper.session
        assert session is not None and self.keeper.lease is not None, "adopt() the session first"
        await self._roots_first()
        await self._check_identity(session)
        if self.connection is not None and self.connection != session.connection:
            await self.keeper.update(connection=self.connection)  # resumed another way (-s, --protocol): keep how
        self.call = Call(session.method, session.name, session.arguments)
        self._arm_deadline()
        if session.task is not None:
            from mcpcli import taskflow

            return await taskflow.resume(self)
        found = await self.keeper.last_round()
        last, lost = found if found else (None, set())
        self._attempt = last.attempt if last else 1
        self._event("resume", session=session.id, round=session.round, attempt=self._attempt)
        if last is not None and self.tracer is not None:
            self.tracer.learn(last.requests)  # which of the answers about to be sent are secret
        now_legacy = is_legacy(self.client.protocol_version if self.client else None)
        if last is not None and now_legacy != is_legacy(session.protocol_version):
            self.reporter.note(
                f"This flow ran as protocol {session.protocol_version}; the server now speaks "
                f"{self.client.protocol_version if self.client else '?'}: starting it over, replaying your answers."
            )
            await self.keeper.update(protocol_version=self.client.protocol_version if self.client else None)
            self._attempt += 1
            return await self._loop()
        if last is None or now_legacy:
            # A back-channel question cannot be answered after the call ended: ask the call again, replaying.
            if last is not None:
                self._attempt += 1
            return await self._loop()
        if last.answers is not None and not lost:
            # Still "running" as claimed: its driver died mid-round (a stop or a lost connection would have put it
            # back to waiting). Its answers are re-sent as stored, so the presets that gave them met their question.
            why = (
                "its driver died before the result came back" if session.status == "running" else "no result came back"
            )
            self.reporter.note(f"Round {last.index} was answered, but {why}: sending it again with the same answers.")
            self.resent = last
            return await self._loop(last.answers, last.request_state)
        responses = await self._answer_stored(last)
        return await self._loop(responses, last.request_state)

    async def lost(self, message: str) -> ServerError:
        """The connection died mid-flow (the transport failed under the loop): keep the session resumable."""
        return await self._fail(message)

    async def interrupted(self) -> None:
        """Ctrl-C, SIGTERM or SIGHUP stopped the run: a session left running goes back to waiting (resumable),
        under the lease, before the lease is given back (the keeper's writes are shielded from the cancellation
        that is taking the run down)."""
        session = self.keeper.session
        if session is None or not self.keeper.saved or self.keeper.lease is None:
            return
        with contextlib.suppress(McpcliError):  # lost the lease meanwhile, or the store failed: nothing to record
            await self.keeper.update(status="waiting")

    @property
    def in_doubt(self) -> bool:
        """Whether the run stopped after answers were committed and sent, before their result arrived."""
        return self._in_flight

    async def _check_identity(self, session: SessionRecord) -> None:
        """Say so when this run is not who started the flow: the server binds its state to that principal."""
        now = self.credentials.identity() if self.credentials else None
        if session.identity is None or now == session.identity:
            return
        self.reporter.note(
            f"This flow was started as {session.identity}; this run is {now or 'not signed in'}. "
            "If the server refuses the flow's state for that, mcpcli starts the flow over as you."
        )
        await self.keeper.update(identity=now)

    # --- the loop ----------------------------------------------------------------------------------------------------

    def _arm_deadline(self) -> None:
        self._t0 = time.monotonic()
        if self.limits.timeout is not None:
            self._deadline = time.monotonic() + self.limits.timeout

    async def _loop(self, responses: dict[str, Any] | None = None, state: str | None = None) -> Outcome:
        call = self.call
        assert call is not None
        rounds = restarts = 0
        delay = STATE_ONLY_BACKOFF[0]
        while True:
            self.keeper.check()
            self._in_flight = responses is not None and self._saved
            try:
                result = await self._send(call, responses, state)
            except MCPError as exc:
                self._in_flight = False
                if state is not None and is_stale_state(exc) and restarts < MAX_RESTARTS:
                    restarts += 1
                    self._attempt += 1
                    self._event("restart", session=self._session_record().id, attempt=self._attempt)
                    self.reporter.note(
                        "The server no longer accepts this flow's state (expired or restarted); "
                        "starting over with the same arguments and replaying your answers."
                    )
                    responses = state = None
                    continue
                if exc.code == t.CONNECTION_CLOSED and exc.message == "Connection closed":
                    # The SDK's own verdict on a transport that ended under the request (a server may send -32000
                    # for anything: only the SDK's exact outcome means the connection is gone).
                    raise await self._fail("The server closed the connection before answering.") from None
                failure = await self._fail(rpc_error(exc.code, exc.message))
                failure.rpc_code = exc.code
                raise failure from None
            self._in_flight = False
            self.keeper.fault("after_send")
            if isinstance(result, CreateTaskResult):
                from mcpcli import taskflow

                return await taskflow.start(self, result)
            if not isinstance(result, t.InputRequiredResult):
                if (kind := getattr(result, "result_type", "complete")) != "complete":
                    # The SDK takes any string here; only "complete" is a result, "input_required" needs its
                    # requests or state (else it is not this class), and anything else is a kind no one agreed on.
                    raise await self._fail(f"The server sent a result of unknown type {kind!r} (resultType).")
                return await self._finish(dump(result))
            requests = {key: dump(req) for key, req in (result.input_requests or {}).items()}
            state = result.request_state
            rounds += 1
            asked = ", ".join(requests) or "nothing (not finished yet)"
            self.reporter.detail(f"round {rounds} (session {self._session_record().id}): the server asks {asked}")
            if rounds > self.limits.max_rounds:
                # Recorded unanswered: a later resume (with a higher --max-rounds) continues from the newest state.
                await self._record(requests, state)
                await self._keep("waiting")
                still = (
                    "still asks for input"
                    if requests
                    else "is still not finished (it asks nothing, only to call again)"
                )
                raise LimitReached(
                    f"The server {still} after {self.limits.max_rounds} rounds; stopped.",
                    next_step=self._next_step("continue_more_rounds"),
                )
            responses = await self._take_round(requests, state)
            if requests:
                delay = STATE_ONLY_BACKOFF[0]
            else:
                await self._sleep(delay)
                delay = min(delay * 2, STATE_ONLY_BACKOFF[1])

    async def _send(self, call: Call, responses: dict[str, Any] | None, state: str | None) -> Any:
        """One leg: the same method, name and arguments; only the responses and the state change."""
        finished = False
        try:
            result = await self._leg(call, responses, state)
            # A refusal the server hands back as a tool result (the TypeScript SDK dresses a JSON-RPC error so) is
            # the call failing after the refusal, not a result: the flow waits, as for any failed leg.
            finished = not (self._back_channel_failed or self._back_channel_refused) or not _dressed_error(result)
            return result
        finally:
            await self._settle_back_channel(finished=finished)

    async def _leg(self, call: Call, responses: dict[str, Any] | None, state: str | None) -> Any:
        typed = _typed_responses(for_server(responses)) if responses is not None else None
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise await self._timeout()
        assert self.client is not None
        session = self.client.session
        try:
            with anyio.fail_after(None if math.isinf(remaining) else remaining):
                if call.method == "tools/call" and self.as_task and responses is None and state is None:
                    from mcpcli.tasks import call_as_task

                    return await call_as_task(self.client, call.name, call.arguments, self._on_progress)
                if call.method == "tools/call":
                    return await session.call_tool(
                        call.name,
                        call.arguments,
                        progress_callback=self._on_progress,
                        input_responses=typed,
                        request_state=state,
                        allow_input_required=True,
                        allow_claimed=True,  # a task handle (tasks.CreateTaskResult), driven by taskflow
                    )
                if call.method == "prompts/get":
                    return await session.get_prompt(
                        call.name, call.arguments, input_responses=typed, request_state=state, allow_input_required=True
                    )
                return await session.read_resource(
                    call.name, input_responses=typed, request_state=state, allow_input_required=True
                )
        except TimeoutError:
            raise await self._timeout() from None
        except ValidationError as exc:
            why = invalid_shape(exc.errors(include_url=False))
            raise await self._fail(f"The server sent a malformed result: {why}.") from None
        except (MCPError, McpcliError):
            raise
        except Exception as exc:  # boundary: transports fail in many shapes (httpx2 errors, closed streams, groups)
            raise await self._fail(f"The connection to the server failed: {_innermost(exc)}") from exc

    async def _settle_back_channel(self, *, finished: bool) -> None:
        """After a leg, what became of the questions a pre-2026 server asked during it that got no answer.

        The leg failed: the flow waits (such a question cannot be deferred; exit 3, or the refusal's own error).
        The leg brought a complete result anyway: that result is the flow's — printed, the session done, so that
        no ``resume`` repeats a call that completed — and what was refused is named once (``Outcome.refused``).
        """
        pending = dict(self._back_channel_failed)
        self._back_channel_failed.clear()
        refused = self.take_refusal()
        if finished:
            if pending:
                self._refused.append(f"{some_of(list(pending), 10)} (nobody could answer)")
            if refused is not None:
                self._refused.append(f"{self._refused_key or 'a question'} ({refused.message.rstrip('.')})")
            return
        if pending:
            await self._keep("waiting")
            assert self.session is not None
            raise NeedInput(self.session, pending, deferred=False)
        if refused is not None:
            raise refused

    def take_refusal(self) -> McpcliError | None:
        """The error a back-channel answer failed with during the last leg, once (see ``_back_channel_refused``)."""
        refused, self._back_channel_refused = self._back_channel_refused, None
        return refused

    async def _on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.reporter.progress(progress, total, message)

    async def _sleep(self, seconds: float) -> None:
        if time.monotonic() + seconds > self._deadline:
            raise await self._timeout()
        await anyio.sleep(seconds)

    # --- answering ---------------------------------------------------------------------------------------------------

    async def _take_round(self, requests: dict[str, dict[str, Any]], state: str | None) -> dict[str, Any]:
        """Answer a fresh round and make it durable before anything is sent.

        When presets, roots or replay answer everything, the round and its answers are one write; otherwise
        the round is saved first (a person may take their time, or press Ctrl-C) and the answers after.
        """
        questions = self._questions(requests)
        session_id, index = self._session_record().id, self.keeper.last_index + 1
        self._event("round", session=session_id, round=index, attempt=self._attempt, requests=list(requests))
        try:
            answers = await self._answer_silently(questions)
        except BaseException as exc:
            await self._record(requests, state)  # e.g. an invalid preset or a refused sampling: nothing is sent
            if isinstance(exc, McpcliError) and not isinstance(exc, NeedInput):
                await self._keep("waiting", error=exc.message)  # why the flow paused, for the session's timeline
            raise
        if len(answers) == len(questions):
            await self._record(requests, state, answers)
            return answers
        record = await self._record(requests, state)
        try:
            answers = await self._ask_people(questions, answers)
        except McpcliError as exc:
            if not isinstance(exc, NeedInput):
                await self._keep("waiting", error=exc.message)
            raise
        await self.keeper.record_answers(record, answers)
        return answers

    async def _answer_stored(self, pending: RoundRecord) -> dict[str, Any]:
        """Answer a round saved by an earlier run, then save the answers before the retry."""
        questions = self._questions(pending.requests)
        answers = await self._ask_people(questions, await self._answer_silently(questions))
        await self.keeper.record_answers(pending, answers)
        return answers

    def _questions(self, requests: dict[str, dict[str, Any]], *, back_channel: bool = False) -> list[Question]:
        session = self._session_record()
        return [
            Question(key, parse_request(wire), wire, session.id, self.server, requests, back_channel=back_channel)
            for key, wire in requests.items()
        ]

    async def _answer_silently(self, questions: Sequence[Question]) -> dict[str, Any]:
        """What presets, roots and replay can answer: nobody is asked, and presets are checked first."""
        answers: dict[str, Any] = {}
        for question in questions:
            if (answer := await self._ask(question, interactive=False)) is not None:
                answers[question.key] = dump(answer)
        return answers

    async def _ask_people(self, questions: Sequence[Question], answers: dict[str, Any]) -> dict[str, Any]:
        """Ask a person what is left; with nobody to ask, stop with exit 3 (the round is saved)."""
        unanswered = [q for q in questions if q.key not in answers]
        if unanswered and not any(s.interactive for s in self.sources):
            raise NeedInput(self._session_record(), {q.key: q.wire for q in unanswered})
        together = next((s for s in self.sources if s.interactive and hasattr(s, "answer_round")), None)
        if together is not None and unanswered:
            given = await together.answer_round(unanswered)
            answers.update({key: dump(answer) for key, answer in given.items()})
            for key in given:
                self._answered(key, "prompt")
        for question in unanswered:
            if question.key in answers:
                continue
            answer = await self._ask(question, interactive=True)
            if answer is None:
                left = {q.key: q.wire for q in unanswered if q.key not in answers}
                raise NeedInput(self._session_record(), left)
            answers[question.key] = dump(answer)
        return answers

    async def _ask(self, question: Question, *, interactive: bool) -> t.InputResponse | None:
        """The first answer, in DESIGN.md's order: what the user gave for this run, replay, then the rest.

        Replay comes before every other source so that a restarted flow never asks a person, or bills an LLM,
        twice for a question already answered.
        """
        candidates = [s for s in self.sources if s.interactive == interactive]
        if not interactive:
            explicit = [s for s in candidates if getattr(s, "explicit", False)]
            for source in explicit:
                if (answer := await source.answer(question)) is not None:
                    self._answered(question.key, "preset")
                    return answer
            if (replayed := await self._replay(question)) is not None:
                self._answered(question.key, "replay")
                return replayed
            candidates = [s for s in candidates if s not in explicit]
        for source in candidates:
            if (answer := await source.answer(question)) is not None:
                self._answered(question.key, getattr(source, "origin", "prompt" if interactive else "preset"))
                return answer
        return None

    def _answered(self, key: str, source: str) -> None:
        """Where an answer came from, for a recording (``--record``): preset, replay, prompt, roots, llm."""
        if self.tracer is not None:
            self.tracer.fact("answer", key=key, source=source)

    async def _replay(self, question: Question) -> t.InputResponse | None:
        """An answer given in an earlier attempt of this flow to the identical question (same key, same request)."""
        if not self._saved or self._attempt == 1:
            return None
        for record, lost in reversed(await self.keeper.rounds()):
            if record.attempt >= self._attempt or record.answers is None or question.key in lost:
                continue
            if same_question(record.requests.get(question.key), question.wire) and question.key in record.answers:
                responses = _typed_responses({question.key: record.answers[question.key]})
                return responses[question.key]
        return None

    def back_channel(self, kind: str) -> Callable[[t.InputRequest], Awaitable[t.InputResponse | t.ErrorData]]:
        """An SDK callback body for pre-2026 servers: the same sources, asked mid-call, recorded as a round."""

        async def handle(request: t.InputRequest) -> t.InputResponse | t.ErrorData:
            if self.call is None:
                return await self._before_the_call(kind, request)
            self._back_channel_count[kind] = n = self._back_channel_count.get(kind, 0) + 1
            key = f"{kind}-{n}"
            requests = {key: dump(request)}
            try:
                answers = await self._take_round(requests, None)
            except NeedInput:
                self._back_channel_failed[key] = requests[key]
                return t.ErrorData(code=t.INVALID_REQUEST, message="The user is not available to answer.")
            except UsageError as exc:  # a bad answer, kept waiting by _take_round; the server hears a refusal
                if self._back_channel_refused is None:
                    self._back_channel_refused, self._refused_key = exc, key
                raise
            typed: t.InputResponse = _typed_responses(for_server(answers))[key]
            return typed

        return handle

    async def _before_the_call(self, kind: str, request: t.InputRequest) -> t.InputResponse | t.ErrorData:
        """A back-channel request that arrives before the flow's call was made: no flow is running yet to hold it.

        The reference filesystem server asks for the client's roots as soon as the handshake is done, and serves
        nothing until it has them: the sources that need nobody (``--root``, the working directory) answer it,
        unrecorded. Anything else — a question out of nowhere — is refused.
        """
        if isinstance(request, t.ListRootsRequest):
            question = Question(f"{kind}-0", request, dump(request), "", self.server, back_channel=True)
            for source in self.sources:
                if not source.interactive and (answer := await source.answer(question)) is not None:
                    self._roots_given_at = time.monotonic()
                    return answer
        return t.ErrorData(code=t.INVALID_REQUEST, message="The client has no call running to ask for.")

    # --- sessions ----------------------------------------------------------------------------------------------------

    def _session_record(self) -> SessionRecord:
        """The flow's session, built (not yet saved) at the first input request."""
        if self.keeper.session is None:
            from mcpcli.store import SessionRecord, new_session_id  # deferred: a call with no questions needs no store

            assert self.call is not None
            now = datetime.now(UTC)
            self.keeper.begin(
                SessionRecord(
                    id=new_session_id(),
                    server=self.server,
                    method=self.call.method,
                    name=self.call.name,
                    arguments=self.call.arguments,
                    protocol_version=self.client.protocol_version if self.client else None,
                    identity=self.credentials.identity() if self.credentials else None,
                    connection=self.connection,
                    status="running",
                    created=now,
                    updated=now,
                )
            )
        assert self.keeper.session is not None
        return self.keeper.session

    async def _record(
        self, requests: dict[str, Any], state: str | None, answers: dict[str, Any] | None = None
    ) -> RoundRecord:
        self._session_record()
        return await self.keeper.record_round(requests, state, self._attempt, answers)

    async def _keep(self, status: Literal["waiting", "failed", "expired"], error: str | None = None) -> None:
        await self.keeper.update(status=status, error=error)

    async def _finish(self, result: dict[str, Any], **changes: Any) -> Outcome:
        assert self.call is not None
        code = result_exit_code(self.call.method, result)
        self._event("result", session=self.session.id if self.session and self._saved else None, exit_code=int(code))
        await self.keeper.update(status="done", result=result, exit_code=int(code), last=True, **changes)
        session = self.session if self._saved else None
        return Outcome(result=result, session=session, exit_code=code, refused=tuple(self._refused))

    def _event(self, kind: str, /, **fields: Any) -> None:
        if self.tracer is not None:
            self.tracer.event(kind, **fields, elapsed_ms=round((time.monotonic() - self._t0) * 1000, 3))

    def _next_step(self, action: Action = "continue") -> NextStep | None:
        """Continue the saved session (the front end words it); None when nothing was saved."""
        if self.session is None or not self._saved:
            return None
        return NextStep(action, self.session.id)

    async def _fail(self, message: str) -> ServerError:
        await self._keep("waiting", error=message)
        return ServerError(message, next_step=self._next_step())

    async def _timeout(self) -> LimitReached:
        await self._keep("waiting")
        return LimitReached(f"The flow did not finish within {self.limits.timeout:g} s.", next_step=self._next_step())


def _innermost(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return (str(exc) or type(exc).__name__).splitlines()[0]


PRIVATE_META = "io.mcpcli/"
"""The ``_meta`` prefix of what mcpcli keeps in a stored answer for itself (a sampling reply's token counts)."""


def for_server(responses: Mapping[str, Any]) -> dict[str, Any]:
    """The answers as the server gets them: mcpcli's own ``_meta`` entries stay in the store, never go out."""
    sent: dict[str, Any] = {}
    for key, answer in responses.items():
        meta = answer.get("_meta") if isinstance(answer, Mapping) else None
        if isinstance(meta, Mapping) and any(str(name).startswith(PRIVATE_META) for name in meta):
            kept = {name: value for name, value in meta.items() if not str(name).startswith(PRIVATE_META)}
            answer = {k: v for k, v in answer.items() if k != "_meta"} | ({"_meta": kept} if kept else {})
        sent[key] = answer
    return sent


def _typed_responses(responses: Mapping[str, Any]) -> t.InputResponses:
    typed: t.InputResponses = _adapter(t.InputResponses).validate_python(dict(responses), by_alias=True)
    return typed


def _dressed_error(result: Any) -> bool:
    """Whether ``result`` is an ``isError`` tool result whose one text is a JSON-RPC error (``MCP error -32600: …``)."""
    content = getattr(result, "content", None)
    if not getattr(result, "is_error", False) or not isinstance(content, list) or len(content) != 1:
        return False
    text = getattr(content[0], "text", None)
    return isinstance(text, str) and DRESSED_RPC_ERROR.fullmatch(text.strip()) is not None
