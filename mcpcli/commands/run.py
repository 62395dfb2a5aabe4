"""The one body that runs a flow, for every front end: ``run_job(rt, opts, job, seat, flows)``.

A front end describes what to run as a job (``commands.jobs``) and where its person sits (a ``Seat``: who answers,
where notes go, how the outcome is shown); ``run_job`` does the rest once — finds the server (``-s``, or a stored
session's own, whose command line runs only once trusted), checks the store can be written, builds the flow, takes
its lease, connects, builds the call's arguments, starts or resumes it, and hands the outcome to the seat as soon
as it is final. ``--wait-for-answer`` is a loop here: a flow nobody here answers parks, and is resumed as soon as
an answer lands in the store. However a run ends, its session is left resumable and its lease given back.

Imported only by commands that run a flow (it pulls in the SDK).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from mcp import Client
from pydantic import ValidationError

from mcpcli import telemetry
from mcpcli.apphost.resource import SHOWS_VIEWS
from mcpcli.commands.connecting import credentials, declared, with_server_logs
from mcpcli.commands.discovery import first_problem, input_schema, keep_listing, prompt_schema
from mcpcli.commands.jobs import CallJob, FlowJob, ResumeJob
from mcpcli.commands.seat import Seat
from mcpcli.commands.targets import resume_target
from mcpcli.engine.answers import Presets, Roots
from mcpcli.engine.arguments import build_arguments
from mcpcli.engine.endings import ending_of, error_result, refused_hint, wanted_back_channel
from mcpcli.engine.flow import Flow
from mcpcli.engine.steps import AnswerSource, Call, Limits, NeedInput, Outcome
from mcpcli.errors import (
    ExitCode,
    InvalidAnswer,
    McpcliError,
    NextStep,
    ServerError,
    UsageError,
    UserStopped,
    lone,
)
from mcpcli.net.connection import connect
from mcpcli.net.tasks import task_support
from mcpcli.settings import trust
from mcpcli.settings.targets import connection_settings
from mcpcli.state.keeper import Finished, Keeper

if TYPE_CHECKING:
    from mcpcli.commands.runtime import AnswerOptions, Runtime
    from mcpcli.engine.sampling import Policy
    from mcpcli.net.connection import Protocol as Era
    from mcpcli.settings.targets import Target
    from mcpcli.state.store import SessionRecord

log = logging.getLogger(__name__)


# --- the job ---------------------------------------------------------------------------------------------------------


async def run_job(rt: Runtime, opts: AnswerOptions, job: FlowJob, seat: Seat, flows: list[Flow]) -> int:
    """Run ``job`` to its end and return its exit code; the outcome goes to ``seat.shows`` as soon as it is final.

    With ``--wait-for-answer`` a flow that parks on a question nobody here answers is announced and waits for an
    answer in the store (``mcpcli answer``, from any machine sharing it), then resumed — until the time given runs
    out (exit 3 with the usual document). Errors propagate as one-line ``McpcliError``s; every flow built joins
    ``flows`` (the list the interrupt handlers read)."""
    if opts.wait_for_answer is None:
        return await _run_once(rt, opts, job, seat, flows, parks=False)
    from mcpcli.commands.inbox import WaitingRoom

    room = WaitingRoom(rt, time.monotonic() + opts.wait_for_answer)
    while True:
        try:
            code = await _run_once(rt, opts, job, seat, flows, parks=True)
        except NeedInput as parked:
            if await room.wait(parked) is None:
                return seat.shows.waiting(parked)
            job = ResumeJob(parked.session.id)
            continue
        room.finished(flows, code)
        return code


async def _run_once(
    rt: Runtime, opts: AnswerOptions, job: FlowJob, seat: Seat, flows: list[Flow], *, parks: bool
) -> int:
    """One run of ``job``: its server found and trusted, its flow built and leased (a resume's session adopted before
    anything is sent: a loser of a race sends nothing), connected, started or resumed. ``parks``: a flow left waiting
    for a person raises ``NeedInput`` instead of being shown (``run_job`` waits for the answer)."""
    record = None
    if isinstance(job, ResumeJob):
        record = rt.store.get(job.session_id)
        if job.cancel:
            from mcpcli.commands.tasks import check_cancellable

            check_cancellable(record)
        elif record.status == "done" and record.result is not None:
            seat.reporter.note(f"Session {record.id} already finished; here is its result again.")
            return seat.shows.result(record.method, _stored(record))
    target, protocol = _target(rt, seat, record, job)
    rt.store.check_writable()  # before the first request: not after the server acted on round 1
    connection = connection_settings(target, protocol or target.protocol or "auto")
    flow = build_flow(rt, opts, seat, record.server if record else target.label, flows, connection)
    flow.detach = isinstance(job, CallJob) and job.detach
    # The lease is claimed, and heart-beaten, from before connecting until after the connection is closed.
    async with flow.keeper.running():
        if record is not None and isinstance(job, ResumeJob):
            try:
                await flow.adopt(record, steal=job.steal, wait=job.wait)
            except Finished as done:
                finished = done.session
                seat.reporter.note(f"Session {finished.id} was finished by another run meanwhile; here is its result.")
                return seat.shows.result(finished.method, _stored(finished))
        run = Run(rt, opts, flow, seat, target, protocol, flows, parks, views=job.app is not None)
        return await run.connected(_body(run, job))


def _stored(record: SessionRecord) -> Outcome:
    """A finished session's stored result, shown again as if just received (with its exit code)."""
    return Outcome(record.result or {}, record, ExitCode(record.exit_code or 0))


def _target(rt: Runtime, seat: Seat, record: SessionRecord | None, job: FlowJob) -> tuple[Target, Era | None]:
    """The server a job talks to, and the protocol asked for: ``-s`` (or the configured default) for a new call,
    remembered as the user's own command line; a resume's own server otherwise (``targets.resume_target``)."""
    if record is not None:
        assert isinstance(job, ResumeJob)
        return resume_target(rt, record, trust_server=job.trust_server, ask=seat.terminal, say=seat.reporter.note)
    target, note = rt.resolve()
    if note:
        seat.reporter.note(note)
    trust.remember(rt.paths, target)  # the user typed this command line: a later resume may run it unasked
    return target, cast("Era | None", rt.protocol())


Body = Callable[[Client], Awaitable[Outcome | int]]


def _body(run: Run, job: FlowJob) -> Body:
    """What runs on the connection: the call started, the session resumed (or its task cancelled), or — with a
    view — either under the tool's view (``commands.apps``)."""
    flow = run.flow
    if job.app is not None:
        if run.seat.views is None:
            raise UsageError("This front end cannot show a tool's view.", hint="Run it without --app.")
        return functools.partial(run.seat.views.show, run, job)
    if isinstance(job, ResumeJob):
        if job.cancel:
            from mcpcli.engine import taskflow

            return lambda client: taskflow.cancel(flow)
        return lambda client: flow.resume()

    async def start(client: Client) -> Outcome:
        arguments = await run.arguments(client, job)
        return await flow.start(Call(job.method, job.name, arguments))

    return start


# --- building a flow -------------------------------------------------------------------------------------------------


def build_flow(
    rt: Runtime,
    opts: AnswerOptions,
    seat: Seat,
    server: str,
    flows: list[Flow],
    connection: dict[str, Any] | None = None,
    presets: Presets | None = None,
) -> Flow:
    """The one way a flow is built, for every front end: its session keeper, its answer sources in order — presets,
    roots, the person at the terminal, the sampler, the app's user — its reporter, limits, sign-in and trace tap.
    It joins ``flows`` (the list the interrupt handlers read). ``presets``: already built (``batch``: the command
    line's merged with a line's own answers); else parsed from ``opts``."""
    from mcpcli.state.inbox import routing_for, whoami
    from mcpcli.state.store import SqliteStore
    from mcpcli.state.vault import load_store_key

    rt.traces()  # OpenTelemetry, when asked for
    # Every flow records its trace in its session (bounded); --trace and -v read the same tap.
    tracer = rt.tracer(record=True, summaries=seat.summaries)
    keeper = Keeper(
        open_store=lambda: rt.store,
        store_key=lambda: load_store_key(rt.paths.store_key_file),
        lease_ttl=rt.process.lease_ttl,
        faults=rt.process.faults,
        tracer=tracer,
        # Only a local file: a write to a remote database waits on the network, where a thread keeps Ctrl-C heard.
        inline=seat.alone and isinstance(rt.store, SqliteStore),
    )
    presets = presets or opts.presets()
    roots = Roots([p.expanduser() for p in opts.roots] or [rt.surroundings.directory()])
    sources: list[AnswerSource] = [presets, roots, *seat.people(presets)]
    if (sampler := _sampler(rt, opts, server, keeper, seat.approver)) is not None:
        sources.append(sampler)
    flow = Flow(
        keeper=keeper,
        server=server,
        sources=sources,
        reporter=seat.reporter,
        limits=Limits(max_rounds=opts.max_rounds, timeout=opts.timeout),
        credentials=credentials(rt, interactive=seat.sign_in),
        tracer=tracer,
        connection=connection,
    )
    flow.owner = whoami(rt.settings)  # the team inbox: who runs it, whom it asks
    flow.route = functools.partial(
        routing_for, server, ask=opts.ask, no_self_answer=opts.no_self_answer, routes=rt.settings.inbox.routes
    )
    if seat.app_user is not None and not opts.no_input:
        sources.append(seat.app_user(flow, presets))  # the one source that needs the flow: it shows its call
    flows.append(flow)
    return flow


def _sampler(rt: Runtime, opts: AnswerOptions, server: str, keeper: Keeper, approver: Any) -> AnswerSource | None:
    """The sampling source when an LLM provider is configured; without one, ``NoProvider`` says so (exit 3).
    The API key is read at the first completion: a run that never samples never reads it."""
    from mcpcli import llm
    from mcpcli.engine.sampling import POLICIES, Budget, NoProvider, Sampler, usage_of

    settings = rt.settings
    if not settings.providers:
        return NoProvider(llm.no_provider())

    policy = opts.approve_sampling or settings.sampling.policy_for(server)
    if policy not in POLICIES:
        raise UsageError(f"Unknown sampling policy {policy!r}.", hint="Use ask, session, always or never.")
    name, provider = llm.resolve_provider(settings, opts.llm)

    def describe(hints: Sequence[str], requested: int) -> tuple[str, str, int]:
        return name, llm.pick_model(provider, hints).name, llm.clamp_tokens(requested, provider)

    keys: list[str | None] = []

    async def complete(hints: Sequence[str], params: dict[str, Any], max_tokens: int) -> llm.Completion:
        if not keys:
            keys.append(llm.api_key_for(name, provider, rt.paths))
        model = llm.pick_model(provider, hints)
        return await llm.complete(name, provider, model, params, api_key=keys[0], max_tokens=max_tokens)

    async def used() -> tuple[int, int]:
        if not keeper.saved:
            return 0, 0
        totals = [usage_of(r.answers or {}) for r, _ in await keeper.rounds()]
        return sum(c for c, _ in totals), sum(n for _, n in totals)

    budget = Budget(settings.sampling.max_calls, settings.sampling.max_tokens, used)
    return Sampler(server, cast("Policy", policy), complete, describe, approver=approver, budget=budget)


# --- connected -------------------------------------------------------------------------------------------------------


class CallsBack(Exception):
    """The first leg was refused by a server that wants to call back (nothing was answered, no session yet)."""


@dataclass
class Run:
    """One flow on its way through ``run_job``: what connecting, building the arguments and ending it need."""

    rt: Runtime
    opts: AnswerOptions
    flow: Flow
    seat: Seat
    target: Target
    protocol: Era | None
    flows: list[Flow]
    """Every flow this run built (a view's calls add theirs): the list the interrupt handlers read."""
    parks: bool = False
    """A flow left waiting for a person raises ``NeedInput`` (``--wait-for-answer``) instead of being shown."""
    views: bool = False
    """The run can show a tool's view (``--app``): its connection declares MCP Apps."""

    def connect(self) -> AbstractAsyncContextManager[Client]:
        """The connection the flow runs on; its back-channel callbacks serve pre-2026 servers with the same sources.
        A run that can show a tool's view declares MCP Apps."""
        rt, flow = self.rt, self.flow
        options = replace(
            declared(rt, self.target, self.opts.llm, **_answerers(self.opts, flow)),
            elicitation=flow.back_channel("elicitation"),
            roots=flow.back_channel("roots"),
            sampling=flow.back_channel("sampling"),
            credentials=flow.credentials,
            tracer=flow.tracer,
            extensions=SHOWS_VIEWS if self.views or self.seat.always_views else None,
        )
        if self.protocol is not None:
            options = replace(options, protocol=self.protocol)
        return telemetry.connecting(flow.keeper.session, connect(with_server_logs(options, rt, flow.reporter.note)))

    async def connected(self, body: Body) -> int:
        """Connect, run ``body``, show its outcome as soon as it is final; its exit code. A server that refused the
        first leg because it wants to call back is connected to once more, speaking the handshake (remembered)."""
        try:
            return await self._connected(body)
        except CallsBack:
            self.seat.reporter.note(
                "The server asks its questions over the pre-2026 back-channel; calling again with --protocol legacy "
                '(set it for good: protocol = "legacy" in its config entry, or mcpcli servers add NAME --protocol'
                " legacy)."
            )
            return await self._connected(body)

    async def _connected(self, body: Body) -> int:
        """One connection: the outcome shown before the connection closes (the result is final, whatever the server
        takes to exit); however it ends, the flow's session is left resumable and its lease given back.

        Runs inside the flow keeper's ``running()`` (the caller's): a transport that dies under the loop surfaces
        only when the connection closes (from its task group), and its failure is recorded under the lease too."""
        flow, shows = self.flow, self.seat.shows
        shown: list[int] = []
        try:
            async with self.connect() as client:
                flow.client = client
                done = await self._ran(body, client)
                if isinstance(done, int):
                    shown.append(done)
                    return done
                self._say_unmatched()
                code = shows.result(flow.call.method if flow.call else "tools/call", error_result(done))
                shown.append(code)
                if (refusal := done.refusal()) is not None:
                    shows.warning(refusal)  # a pre-2026 server finished without what it asked: its result stands
                if (
                    code == ExitCode.TOOL_ERROR
                    and client.protocol_version == "2026-07-28"
                    and wanted_back_channel(done)
                ):
                    flow.reporter.note(
                        "hint: this server still asks over the pre-2026 back-channel: run it with --protocol legacy "
                        '(or set protocol = "legacy" for it: mcpcli servers add NAME ... --protocol legacy).'
                    )
                return code
        except BaseException as exc:
            if isinstance(single := lone(exc), CallsBack):
                raise single from None
            if shown and isinstance(exc, Exception):  # the result is out and recorded: a messy teardown is not news
                log.debug("the connection failed while closing, after the result", exc_info=True)
                return shown[0]
            return await self._ended(exc)
        finally:
            await flow.keeper.close()
            self.rt.out.stop_progress()

    async def _ran(self, body: Body, client: Client) -> Outcome | int:
        """``body`` on the connection; a server error explained by what this connection saw — a back-channel
        answer mcpcli refused, a server that wants to call back, pages the person must visit."""
        from mcpcli.net.connection import back_channel_failure, required_urls, wants_back_channel

        try:
            return await body(client)
        except ServerError as exc:
            if (failure := back_channel_failure(client)) is not None:
                raise failure from None  # what the server made of mcpcli's refusal is not the news
            if self.flow.session is None and wants_back_channel(client):
                raise CallsBack from None
            if pages := required_urls(client):
                self.seat.shows.pages(pages)
                exc.hint = f"Open the page{'s' * (len(pages) > 1)} yourself, finish there, then run it again."
            raise
        finally:
            self.rt.out.stop_progress()

    async def _ended(self, exc: BaseException) -> int:
        """A run that raised ``exc``: a flow left waiting is shown (or parked); an error gets its session, its hint
        and its next step, and is raised as one line; anything else is raised with the session put back."""
        flow = self.flow
        settled = await ending_of(flow, exc)
        if isinstance(settled, NeedInput):
            self._say_unmatched()
            if self.parks and settled.deferred and not settled.confirming:
                raise settled from None  # parked: run_job waits for an answer
            return self.seat.shows.waiting(settled)
        if isinstance(settled, McpcliError):
            if flow.session is not None and flow.keeper.saved:
                settled.session_id = flow.session.id
                if isinstance(settled, UserStopped):
                    settled.hint = f"Resume it with: mcpcli resume {flow.session.id}"
            if isinstance(settled, ServerError) and settled.hint is None and settled.next_step is None:
                settled.hint = refused_hint(flow, settled.rpc_code)
            if isinstance(settled, InvalidAnswer) and settled.session_id is not None and settled.next_step is None:
                settled.next_step = NextStep("answer", settled.session_id)  # the question waits for a right one
            if not isinstance(settled, UsageError):  # a preset was wrong: that error first, the rest may be right
                self._say_unmatched(failed=True)
        if settled is exc:
            raise exc
        raise settled from None

    def _say_unmatched(self, *, failed: bool = False) -> None:
        """Once the flow has run: each ``--answer``/``--decline``... that met no question, with what was asked.

        A flow that ``failed`` before any question was read (a malformed round, a dead server) has nothing to match
        the presets against: "the server asked: nothing" would be wrong, and the error says what happened."""
        flow = self.flow
        if flow.call is None:
            return  # it never started (e.g. an unknown tool): nothing was asked, the error says why
        for source in flow.sources:
            if isinstance(source, Presets) and flow.resent is not None:
                source.met(flow.resent.requests)  # the round re-sent as stored: its questions were asked, and answered
            if isinstance(source, Presets) and not (failed and not source.asked):
                for line in source.unmatched():
                    self.seat.shows.warning(line)

    async def arguments(self, client: Client, job: CallJob) -> dict[str, Any]:
        """The one way a call's arguments are built: as typed already (the app's form, a batch line), else from
        ``--arg``/``--args`` typed by the tool's (or prompt's) listing. A tool's listing also says whether it runs
        as a task (2025-11-25)."""
        rt, pairs = self.rt, list(job.pairs)
        if job.method == "tools/call":
            seen: dict[str, Any] = {}
            if job.arguments is not None:
                return dict(job.arguments)
            arguments = await self._tool_arguments(client, job, seen)
            self.flow.as_task = task_support(client, seen.get("execution"), job.as_task)
            return arguments
        if job.arguments is not None:
            return dict(job.arguments)
        if job.method == "prompts/get":
            keep = keep_listing(rt, self.target, client, "prompts")
            schema = await prompt_schema(client, job.name, pairs, keep)
            return build_arguments(schema, pairs, None, what="prompt", warn=self.seat.shows.warning)
        return {}

    async def _tool_arguments(self, client: Client, job: CallJob, seen: dict[str, Any]) -> dict[str, Any]:
        """``--arg``/``--args`` typed by the tool's schema; when the listing cannot be read, sent untyped (strings).

        Typing is a convenience: a listing the SDK rejects (shape drift in some other tool, a field missing) must not
        stop a call the server would take."""
        pairs = list(job.pairs)
        try:
            schema = await input_schema(client, job.name, keep_listing(self.rt, self.target, client, "tools"), seen)
        except ValidationError as exc:
            self.flow.reporter.note(
                f"The server's tool listing could not be read ({first_problem(exc)}); sending --arg values as strings,"
                " unchecked (typed values: --args JSON)."
            )
            from mcpcli.net.connection import unlisted

            unlisted(client, job.name)
            keys = [pair.partition("=")[0] for pair in pairs]
            schema = {"type": "object", "properties": {key: {"type": "string"} for key in keys if key}}
        return build_arguments(schema, pairs, job.args, warn=self.seat.shows.warning)


def _answerers(opts: AnswerOptions, flow: Flow) -> dict[str, Any]:
    """Who answers this flow's questions, for what its handshake declares (``declared``): a person (the terminal,
    the app), presets, the sampler's policy."""
    from mcpcli.engine.sampling import Sampler

    sampler = next((s for s in flow.sources if isinstance(s, Sampler)), None)
    person = any(s.interactive for s in flow.sources if s is not sampler)
    given = bool(opts.answer or opts.answers or opts.decline or opts.cancel or opts.accept or opts.accept_defaults)
    policy = "never" if sampler is None else sampler.policy
    return {"person": person, "presets": given, "sampling_policy": policy, "later": opts.no_input}
