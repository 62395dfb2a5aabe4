"""The hand-run input-required loop of MCP 2026-07-28: call, answer, persist, retry — until a result.

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
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio
import mcp_types as t
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from mcpcli import telemetry
from mcpcli.engine import taskflow
from mcpcli.engine.askers import Askers
from mcpcli.engine.midcall import MidCall
from mcpcli.engine.partial import (
    check_identity,
    earlier_answer,
    keep_part,
    others_answer,
    resend_note,
)
from mcpcli.engine.roots import EarlyRoots
from mcpcli.engine.steps import (
    AnswerSource,
    Call,
    LimitReached,
    Limits,
    NeedInput,
    Outcome,
    Question,
    Reporter,
    dump,
    failed_result,
    for_server,
    innermost,
    is_legacy,
    is_stale_state,
    new_session,
    parse_request,
    result_exit_code,
    typed_responses,
)
from mcpcli.errors import Action, McpcliError, NextStep, ServerError, invalid_shape, rpc_error
from mcpcli.net.tasks import CreateTaskResult, TaskControl
from mcpcli.state.keeper import Keeper

if TYPE_CHECKING:
    from mcpcli.auth import Credentials
    from mcpcli.state.store import RoundRecord, SessionRecord
    from mcpcli.state.trace import Tracer

STATE_ONLY_BACKOFF = (0.05, 0.25)
"""First sleep and cap (seconds) for state-only rounds: 50 ms doubling to 250 ms, as the SDK's own loop."""

MAX_RESTARTS = 2
"""How often one run may start the flow over after a stale ``request_state`` before giving up."""


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
    """How the flow connects (``targets.connection_settings``): kept with its session, so a resume reconnects
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
    owner: str | None = None
    """Who runs the flow (``inbox.whoami``): its session's owner."""
    route: Callable[[str], dict[str, Any] | None] | None = None
    """Whom the flow asks, by its call's name (``inbox.routing_for``): its session's ``routing``."""
    _t0: float = 0.0
    deadline: float = math.inf
    _attempt: int = 1
    mid_call: MidCall = field(default_factory=MidCall)
    """The questions a pre-2026 server asks mid-call, over the back-channel (``engine.midcall``)."""
    _in_flight: bool = False
    _early: EarlyRoots = field(default_factory=EarlyRoots)
    """The ``roots/list`` a server asks before the call (``engine.roots``)."""
    _kept: dict[str, Any] = field(default_factory=dict)
    """The answers a stored round kept while it waited for the rest (``answer_stored``), by request key."""

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
        await self._early.settle(self.roots_expected, self.client)
        self.call = call
        self._arm_deadline()
        self.event("start", method=call.method, name=call.name)
        with telemetry.flow_run(call.method, call.name):
            return await self._loop()

    async def adopt(self, session: SessionRecord, *, steal: bool = False, wait: float = 0.0) -> SessionRecord:
        """Claim a stored session before anything is sent (before connecting, even), inside the keeper's
        ``running()``: ``SessionBusy`` (also for a second flow of this process; after ``wait`` seconds of waiting
        for the holder to stop), or ``keeper.Finished`` when another driver finished it since it was read."""
        return await self.keeper.adopt(session, steal=steal, wait=wait, note=self.reporter.note)

    async def resume(self) -> Outcome:
        """Continue the adopted session: answer what is pending and retry with the stored state, byte for byte."""
        session = self.keeper.session
        assert session is not None and self.keeper.lease is not None, "adopt() the session first"
        await self._early.settle(self.roots_expected, self.client)
        await check_identity(
            self.keeper, session, self.credentials.identity() if self.credentials else None, self.reporter
        )
        if self.connection is not None and self.connection != session.connection:
            await self.keeper.update(connection=self.connection)  # resumed another way (-s, --protocol): keep how
        self.call = Call(session.method, session.name, session.arguments)
        self._arm_deadline()
        with telemetry.flow_run(session.method, session.name, session):
            if (traced := telemetry.stored_context()) is not None:  # this run parks it next, if it does
                await self.keeper.update(trace_context=traced)
            return await self._resumed(session)

    async def _resumed(self, session: SessionRecord) -> Outcome:
        """Pick up an adopted session where its last round left it, and run the loop from there.

        A task is followed as a task. No stored round, a pre-2026 server (a back-channel question cannot be
        answered once its call ended) or a protocol that changed since: the call is sent again, answers replayed.
        A round answered by someone else is checked first; a complete round is re-sent as stored; otherwise what
        is still pending (and ``lost`` secrets) is asked and saved before the retry.
        """
        if session.task is not None:
            return await taskflow.resume(self)
        found = await self.keeper.last_round()
        last, lost = found if found else (None, set())
        self._attempt = last.attempt if last else 1
        self.event("resume", session=session.id, round=session.round, attempt=self._attempt)
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
        if last.answered_by is not None and not await others_answer(self.keeper, last, self.sources, self.reporter):
            return await self._loop(
                await self.answer_stored(last.model_copy(update={"answers": None})), last.request_state
            )
        if last.complete and not lost:  # answered by someone else, or by a driver that died: re-sent as stored
            self.reporter.note(resend_note(session, last))
            self.resent = last if last.answered_by is None else None
            return await self._loop(last.answers, last.request_state)
        responses = await self.answer_stored(last, lost)
        return await self._loop(responses, last.request_state)

    async def lost(self, message: str) -> ServerError:
        """The connection died mid-flow (the transport failed under the loop): keep the session resumable."""
        return await self.fail(message)

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

    # --- the loop ----------------------------------------------------------------------------------------------------

    def _arm_deadline(self) -> None:
        self._t0 = time.monotonic()
        if self.limits.timeout is not None:
            self.deadline = time.monotonic() + self.limits.timeout

    async def _loop(self, responses: dict[str, Any] | None = None, state: str | None = None) -> Outcome:
        """The flow's heart: send, answer the round the server asks for (durably), retry with its state — until
        a result (``finish``), a task (``taskflow``) or an error. Every error leaves the session resumable.

        A stale ``request_state`` starts over with the same arguments (at most ``MAX_RESTARTS`` times); a round
        that asks nothing is retried after a backoff (``STATE_ONLY_BACKOFF``); past ``max_rounds`` the round is
        stored unanswered and ``LimitReached`` raised. The lease is checked before every send (``SessionBusy``).
        """
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
                    self.event("restart", session=self.session_record().id, attempt=self._attempt)
                    self.reporter.note(
                        "The server no longer accepts this flow's state (expired or restarted); "
                        "starting over with the same arguments and replaying your answers."
                    )
                    responses = state = None
                    continue
                if exc.code == t.CONNECTION_CLOSED and exc.message == "Connection closed":
                    # The SDK's own verdict on a transport that ended under the request (a server may send -32000
                    # for anything: only the SDK's exact outcome means the connection is gone).
                    raise await self.fail("The server closed the connection before answering.") from None
                failure = await self.fail(rpc_error(exc.code, exc.message))
                failure.rpc_code = exc.code
                raise failure from None
            self._in_flight = False
            self.keeper.fault("after_send")
            if isinstance(result, CreateTaskResult):
                return await taskflow.start(self, result)
            if not isinstance(result, t.InputRequiredResult):
                if (kind := getattr(result, "result_type", "complete")) != "complete":
                    # The SDK takes any string here; only "complete" is a result, "input_required" needs its
                    # requests or state (else it is not this class), and anything else is a kind no one agreed on.
                    raise await self.fail(f"The server sent a result of unknown type {kind!r} (resultType).")
                return await self.finish(dump(result))
            requests = {key: dump(req) for key, req in (result.input_requests or {}).items()}
            state = result.request_state
            rounds += 1
            asked = ", ".join(requests) or "nothing (not finished yet)"
            self.reporter.detail(f"round {rounds} (session {self.session_record().id}): the server asks {asked}")
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
                    next_step=self.next_step("continue_more_rounds"),
                )
            responses = await self.take_round(requests, state)
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
            # An isError result after a refusal is the call failing for want of its answer, however the server
            # words it (fastmcp: "Error calling tool …", the TypeScript SDK: "MCP error -32600: …"): the flow waits,
            # as for a JSON-RPC error, and resume calls again with the answer. Only a result that is no error stands.
            finished = not (self.mid_call.failed or self.mid_call.refusal) or not failed_result(result)
            return result
        finally:
            await self.mid_call.settle(finished=finished, wait=self._waiting)

    async def _leg(self, call: Call, responses: dict[str, Any] | None, state: str | None) -> Any:
        """One request on the wire, within the flow's deadline: the call's method with these responses and state
        (the first leg of an ``as_task`` tool call asks for a task). Returns the SDK's parsed result.

        ``MCPError`` and ``McpcliError`` pass through for ``_loop`` to judge; the deadline raises ``timed_out()``'s
        error; a malformed result or a failing transport becomes ``fail()``'s ``ServerError`` (session kept waiting).
        """
        typed = typed_responses(for_server(responses)) if responses is not None else None
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise await self.timed_out()
        assert self.client is not None
        session = self.client.session
        try:
            with anyio.fail_after(None if math.isinf(remaining) else remaining):
                if call.method == "tools/call" and self.as_task and responses is None and state is None:
                    from mcpcli.net.tasks import call_as_task

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
            raise await self.timed_out() from None
        except ValidationError as exc:
            why = invalid_shape(exc.errors(include_url=False))
            raise await self.fail(f"The server sent a malformed result: {why}.") from None
        except (MCPError, McpcliError):
            raise
        except Exception as exc:  # boundary: transports fail in many shapes (httpx2 errors, closed streams, groups)
            raise await self.fail(f"The connection to the server failed: {innermost(exc)}") from exc

    def take_refusal(self) -> McpcliError | None:
        """The error a back-channel answer failed with during the last leg, once."""
        return self.mid_call.take_refusal()

    async def _on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.reporter.progress(progress, total, message)

    async def _sleep(self, seconds: float) -> None:
        if time.monotonic() + seconds > self.deadline:
            raise await self.timed_out()
        await anyio.sleep(seconds)

    # --- answering ---------------------------------------------------------------------------------------------------

    async def take_round(self, requests: dict[str, dict[str, Any]], state: str | None) -> dict[str, Any]:
        """Answer a fresh round and make it durable before anything is sent.

        When presets, roots or replay answer everything, the round and its answers are one write; otherwise
        the round is saved first (a person may take their time, or press Ctrl-C) and the answers after.
        """
        questions = self._questions(requests)
        session_id, index = self.session_record().id, self.keeper.last_index + 1
        self.event("round", session=session_id, round=index, attempt=self._attempt, requests=list(requests))
        answers: dict[str, Any] = {}
        with telemetry.round_span(index, requests):
            try:
                await self.askers.silently(questions, answers)
            except BaseException as exc:
                record = await self._record(requests, state)
                if isinstance(exc, McpcliError):
                    await keep_part(self.keeper, record, answers, exc, back_channel=questions[0].back_channel)
                raise
            if len(answers) == len(questions):
                await self._record(requests, state, answers)
                return answers
            record = await self._record(requests, state)
            return await self._answer_rest(record, questions, answers)

    async def answer_stored(self, pending: RoundRecord, lost: Collection[str] = ()) -> dict[str, Any]:
        """Answer a round saved by an earlier run — what it kept answered is not asked again (unless this run's
        presets answer it), ``lost`` secrets are — then save the answers before the retry."""
        questions = self._questions(pending.requests)
        self._kept = {key: answer for key, answer in pending.partial.items() if key not in lost}
        answers: dict[str, Any] = {}
        with telemetry.round_span(pending.index, pending.requests):
            try:
                await self.askers.silently(questions, answers)
            except McpcliError as exc:
                await keep_part(self.keeper, pending, {**self._kept, **answers}, exc)
                raise
            finally:
                self._kept = {}
            return await self._answer_rest(pending, questions, answers)

    async def _answer_rest(
        self, record: RoundRecord, questions: Sequence[Question], answers: dict[str, Any]
    ) -> dict[str, Any]:
        """Ask people what the silent sources left; the answers saved before the retry. Stopped before every
        question has its answer (nobody can give one, the user quit): the answers given so far are kept."""
        try:
            await self.askers.people(questions, answers)
        except McpcliError as exc:
            await keep_part(self.keeper, record, answers, exc)
            raise
        await self.keeper.record_answers(record, answers)
        return answers

    def _questions(self, requests: dict[str, dict[str, Any]], *, back_channel: bool = False) -> list[Question]:
        """A round's requests as questions for the answer sources, each knowing its session (built now if this is the
        first round) and the rest of its round."""
        session = self.session_record()
        return [
            Question(key, parse_request(wire), wire, session.id, self.server, requests, back_channel=back_channel)
            for key, wire in requests.items()
        ]

    @functools.cached_property
    def askers(self) -> Askers:
        """The flow's answer sources in order, with replay from its earlier rounds and every answer told to its
        trace and span (``engine.askers``)."""
        return Askers(
            self.sources,
            self.reporter,
            stuck=lambda left: NeedInput(self.session_record(), left),
            replay=self._replayed,
            told=self._answered,
        )

    async def _replayed(self, question: Question) -> t.InputResponse | None:
        """An answer given before to the same question (this run's kept answers, or an earlier attempt's)."""
        attempt = self._attempt if self._saved else 1
        return await earlier_answer(self.keeper, attempt, self._kept, question)

    def _answered(self, key: str, label: str, answer: Any, source: Any = None) -> None:
        """Where an answer came from: for a recording (``--record``: preset, replay, prompt, roots, llm), and for the
        round's span (``telemetry.answered``: flag or file, tui, declined …)."""
        if self.tracer is not None:
            self.tracer.fact("answer", key=key, source=label)
        telemetry.answered(key, telemetry.answered_as(source, key, label), answer)

    def back_channel(self, kind: str) -> Callable[[t.InputRequest], Awaitable[t.InputResponse | t.ErrorData]]:
        """An SDK callback body for pre-2026 servers: the same sources, asked mid-call, recorded as a round."""

        async def before_call(request: t.InputRequest) -> t.InputResponse | t.ErrorData | None:
            if self.call is not None:
                return None
            question = Question(f"{kind}-0", request, dump(request), "", self.server, back_channel=True)
            return await self._early.answer(question, self.sources)

        return self.mid_call.handler(kind, self.take_round, before_call)

    # --- sessions ----------------------------------------------------------------------------------------------------

    def session_record(self) -> SessionRecord:
        """The flow's session, built (not yet saved) at the first input request."""
        if self.keeper.session is None:  # deferred: a call with no questions needs no store
            assert self.call is not None
            session = new_session(
                self.call,
                server=self.server,
                protocol_version=self.client.protocol_version if self.client else None,
                identity=self.credentials.identity() if self.credentials else None,
                connection=self.connection,
                owner=self.owner,
                routing=None if self.route is None else self.route(self.call.name),
                trace_context=telemetry.stored_context(),
            )
            self.keeper.begin(session)
            telemetry.note_session(session.id)
        assert self.keeper.session is not None
        return self.keeper.session

    async def _record(
        self, requests: dict[str, Any], state: str | None, answers: dict[str, Any] | None = None
    ) -> RoundRecord:
        """Save a round as received (with its answers, when known) in one durable write; the first round saves the
        session with it."""
        self.session_record()
        return await self.keeper.record_round(requests, state, self._attempt, answers)

    async def _keep(self, status: Literal["waiting", "failed", "expired"], error: str | None = None) -> None:
        await self.keeper.update(status=status, error=error)

    async def _waiting(self) -> SessionRecord:
        await self._keep("waiting")
        assert self.session is not None
        return self.session

    async def finish(self, result: dict[str, Any], **changes: Any) -> Outcome:
        """The flow ends with ``result``: the session (if one was saved) is marked done with its exit code and its lease
        given back in the same write. The outcome carries the refusals of questions asked mid-call."""
        assert self.call is not None
        code = result_exit_code(self.call.method, result)
        self.event("result", session=self.session.id if self.session and self._saved else None, exit_code=int(code))
        await self.keeper.update(status="done", result=result, exit_code=int(code), last=True, **changes)
        session = self.session if self._saved else None
        return Outcome(result=result, session=session, exit_code=code, refused=tuple(self.mid_call.notes))

    def event(self, kind: str, /, **fields: Any) -> None:
        telemetry.flow_event(kind, fields)
        if self.tracer is not None:
            self.tracer.event(kind, **fields, elapsed_ms=round((time.monotonic() - self._t0) * 1000, 3))

    def next_step(self, action: Action = "continue") -> NextStep | None:
        """Continue the saved session (the front end words it); None when nothing was saved."""
        if self.session is None or not self._saved:
            return None
        return NextStep(action, self.session.id)

    async def call_again(self, *, as_task: bool) -> Outcome:
        """A new attempt at the call (the task it became is gone): the stored answers are replayed, each only to
        the new attempt's identical question (same key, same request)."""
        found = await self.keeper.last_round()
        self._attempt = max(self._attempt, found[0].attempt if found else 1) + 1
        self.as_task = as_task
        assert self.session is not None
        self.event("restart", session=self.session.id, attempt=self._attempt)
        return await self._loop()

    async def fail(self, message: str) -> ServerError:
        """The error to raise for a failure that a later resume may get past: the session goes back to waiting with
        ``message`` as its error, and the error's next step continues it."""
        await self._keep("waiting", error=message)
        return ServerError(message, next_step=self.next_step())

    async def timed_out(self) -> LimitReached:
        """The error to raise when ``--timeout`` ran out: the session goes back to waiting, resumable."""
        await self._keep("waiting")
        return LimitReached(f"The flow did not finish within {self.limits.timeout:g} s.", next_step=self.next_step())
