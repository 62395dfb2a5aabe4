"""The bodies of the commands that run a flow (``call``, ``prompt``, ``read``, ``resume``): build it, connect,
drive it, render, return the exit code.

The front ends parse and call these; they build the answer sources and the flow and hand results to
``terminal.output``. Listing commands are in ``commands.discovery``, the app's flows in ``commands.jobs``.
Imported only by commands that talk to a server (it pulls in the SDK).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from mcp import Client
from pydantic import ValidationError

from mcpcli import telemetry
from mcpcli.commands.connecting import at_terminal, credentials, declared, with_server_logs
from mcpcli.commands.discovery import Keep, first_problem, input_schema, keep_listing, prompt_schema
from mcpcli.engine.answers import Presets, Roots, answers_template
from mcpcli.engine.apps import SHOWS_VIEWS
from mcpcli.engine.arguments import build_arguments
from mcpcli.engine.flow import Flow
from mcpcli.engine.steps import AnswerSource, Call, Limits, Method, NeedInput, Outcome
from mcpcli.errors import (
    DRESSED_RPC_ERROR,
    ExitCode,
    InvalidAnswer,
    McpcliError,
    NextStep,
    ServerError,
    UsageError,
    UserStopped,
    print_error,
)
from mcpcli.net.connection import connect, transport_failure
from mcpcli.net.tasks import task_support
from mcpcli.runtime import lone
from mcpcli.settings import trust
from mcpcli.settings.targets import connection_settings
from mcpcli.state.keeper import Keeper
from mcpcli.terminal.hints import stop_note, worded
from mcpcli.terminal.output import describe_pending, pending_document

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from mcpcli.engine.sampling import Policy
    from mcpcli.engine.steps import Reporter
    from mcpcli.runtime import AnswerOptions, Runtime
    from mcpcli.terminal.inline import Terminal


# --- flows -----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seat:
    """Where the person a flow answers to sits: the front end's part of a flow (``build_flow``).

    The inline terminal (``call``, ``resume``) and the full-screen app differ only in what is here; the
    presets, the roots, the sampler, the store and the limits are built the same way for both.
    """

    reporter: Reporter
    """The flow's notes and the server's progress: ``rt.out`` on stderr, or the app's notifications."""
    terminal: Terminal | None = None
    """The person at the terminal, asked inline (after the presets and roots); None: nobody to ask there."""
    app_user: MakeUser | None = None
    """The app's answer source, asked last (it needs the flow itself: its call is the round's header)."""
    approver: Any = None
    """Who approves sampling requests (``asking.TerminalApprover``, the app's screen); None: the policy alone."""
    summaries: bool = True
    """Whether ``-v`` prints trace lines on stderr (not in the app: it owns the terminal)."""
    sign_in: bool = False
    """Whether OAuth may open a browser to sign in (a person is at the terminal); else ``mcpcli auth login``."""
    alone: bool = False
    """The flow is its process's only one and no UI shares its event loop (the CLI): its store calls, to a local
    SQLite file, run on the loop's own thread (``Keeper.inline``)."""


def terminal_seat(rt: Runtime, opts: AnswerOptions) -> Seat:
    """The CLI's seat: inline prompts and sampling approval when a person is at the terminal, notes on stderr."""
    term = _terminal(rt, opts)
    approver = None
    if term is not None:
        from mcpcli.terminal.asking import TerminalApprover  # deferred: only a terminal session needs the prompts

        approver = TerminalApprover(term)
    return Seat(reporter=rt.out, terminal=term, approver=approver, sign_in=term is not None, alone=True)


def _terminal(rt: Runtime, opts: AnswerOptions) -> Terminal | None:
    """The person at the terminal: stdin is one and no ``--no-input`` (``MCPCLI_ASSUME_TTY``: tests drive a pipe)."""
    if opts.no_input or not at_terminal():
        return None
    from mcpcli.terminal.inline import Terminal

    return Terminal(rt.out.err)


def presets_of(opts: AnswerOptions) -> Presets:
    """The answers given up front on the command line (``--answer``, ``--answers``, ``--decline``, …)."""
    return Presets.parse(
        opts.answer,
        opts.answers,
        decline=opts.decline,
        cancel=opts.cancel,
        accept=opts.accept,
        accept_defaults=opts.accept_defaults,
    )


def build_flow(
    rt: Runtime,
    opts: AnswerOptions,
    seat: Seat,
    server: str,
    flows: list[Flow],
    *,
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
    presets = presets or presets_of(opts)
    roots = Roots([p.expanduser() for p in opts.roots] or [Path.cwd()])
    sources: list[AnswerSource] = [presets, roots]
    if seat.terminal is not None:
        import webbrowser

        from mcpcli.terminal.asking import TerminalUser  # deferred: only a terminal session needs Rich and the prompts

        sources.append(TerminalUser(seat.terminal, presets, open_url=webbrowser.open))
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
    """The sampling source when an LLM provider is configured; without one, ``NoProvider`` says so (exit 3)."""
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

    keys: list[str | None] = []  # read once, at the first completion (a run that never samples never reads it)

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


def connect_flow(
    rt: Runtime, opts: AnswerOptions, flow: Flow, target: Any, protocol: Any, *, extensions: Any = None
) -> AbstractAsyncContextManager[Client]:
    """The connection a flow runs on; its back-channel callbacks serve pre-2026 servers with the same sources.
    ``extensions``: declared besides tasks, by identifier with their settings (``--app``: MCP Apps)."""
    options = replace(
        declared(rt, target, opts.llm, **_answerers(opts, flow)),
        elicitation=flow.back_channel("elicitation"),
        roots=flow.back_channel("roots"),
        sampling=flow.back_channel("sampling"),
        credentials=flow.credentials,
        tracer=flow.tracer,
        extensions=extensions,
    )
    if protocol is not None:
        options = replace(options, protocol=protocol)
    return telemetry.connecting(flow.keeper.session, connect(with_server_logs(options, rt, flow.reporter.note)))


def _answerers(opts: AnswerOptions, flow: Flow) -> dict[str, Any]:
    """Who answers this flow's questions, for what its handshake declares (``declared``): a person (the terminal,
    the app), presets, the sampler's policy."""
    from mcpcli.engine.sampling import Sampler

    sampler = next((s for s in flow.sources if isinstance(s, Sampler)), None)
    person = any(s.interactive for s in flow.sources if s is not sampler)
    given = bool(opts.answer or opts.answers or opts.decline or opts.cancel or opts.accept or opts.accept_defaults)
    policy = "never" if sampler is None else sampler.policy
    return {"person": person, "presets": given, "sampling_policy": policy, "later": opts.no_input}


Body = Callable[[Client], Awaitable[Outcome]]
T = TypeVar("T")


async def connect_and_run(
    rt: Runtime, opts: AnswerOptions, flow: Flow, target: Any, run: Body, *, protocol: Any = None
) -> int:
    try:
        return await _run_connected(rt, opts, flow, target, run, protocol)
    except CallsBack:
        # Remembered for the target by the connection: this second connection speaks the handshake.
        rt.out.note(
            "The server asks its questions over the pre-2026 back-channel; calling again with --protocol legacy "
            '(set it for good: protocol = "legacy" in its config entry, or mcpcli servers add NAME --protocol legacy).'
        )
        return await _run_connected(rt, opts, flow, target, run, protocol)


class CallsBack(Exception):
    """The first leg was refused by a server that wants to call back (nothing was answered, no session yet)."""


async def _run_connected(rt: Runtime, opts: AnswerOptions, flow: Flow, target: Any, run: Body, protocol: Any) -> int:
    """Connect, run, print the result as soon as it is final; however the run ends, the flow's session is left
    resumable and its lease given back.

    Runs inside the flow keeper's ``running()`` (the caller's): the lease is held, and heart-beaten, until the
    connection is closed — a transport that dies under the loop surfaces only then (from the connection's task
    group), and its failure is recorded under the lease like any other.
    """
    from mcpcli.net.connection import back_channel_failure, required_urls, wants_back_channel

    printed: list[int] = []
    try:
        async with connect_flow(rt, opts, flow, target, protocol) as client:
            flow.client = client
            try:
                outcome = await run(client)
            except ServerError as exc:
                if (failure := back_channel_failure(client)) is not None:
                    raise failure from None  # what the server made of mcpcli's refusal is not the news
                if flow.session is None and wants_back_channel(client):
                    raise CallsBack from None
                if pages := required_urls(client):
                    _show_required_urls(rt, pages)
                    exc.hint = f"Open the page{'s' * (len(pages) > 1)} yourself, finish there, then run it again."
                raise
            finally:
                rt.out.stop_progress()
            _say_unmatched(rt, flow)
            # Printed before the connection closes: the result is final, whatever the server takes to exit.
            code = render(rt, flow.call.method if flow.call else "tools/call", error_result(outcome))
            printed.append(code)
            if (refusal := outcome.refusal()) is not None:
                rt.out.warning(refusal)  # a pre-2026 server finished without what it asked: its result stands
            if (
                code == ExitCode.TOOL_ERROR
                and client.protocol_version == "2026-07-28"
                and _wanted_back_channel(outcome)
            ):
                rt.out.note(
                    "hint: this server still asks over the pre-2026 back-channel: run it with --protocol legacy "
                    '(or set protocol = "legacy" for it: mcpcli servers add NAME ... --protocol legacy).'
                )
            return code
    except BaseException as exc:
        if isinstance(single := lone(exc) if isinstance(exc, BaseExceptionGroup) else exc, CallsBack):
            raise single from None
        if printed and isinstance(exc, Exception):  # the result is out and recorded: a messy teardown is not news
            log.debug("the connection failed while closing, after the result", exc_info=True)
            return printed[0]
        settled = await ending_of(flow, exc)
        if isinstance(settled, NeedInput):
            _say_unmatched(rt, flow)
            if opts.wait_for_answer and settled.deferred and not settled.confirming:
                raise settled from None  # parked: the waiting loop (commands.waiting) waits for an answer
            return needs_input(rt, settled)
        if isinstance(settled, McpcliError):
            if flow.session is not None and flow.keeper.saved:
                settled.session_id = flow.session.id
                if isinstance(settled, UserStopped):
                    settled.hint = f"Resume it with: mcpcli resume {flow.session.id}"
            if isinstance(settled, ServerError) and settled.hint is None and settled.next_step is None:
                settled.hint = _refused_hint(flow, settled.rpc_code)
            if isinstance(settled, InvalidAnswer) and settled.session_id is not None and settled.next_step is None:
                settled.next_step = NextStep("answer", settled.session_id)  # the question waits for a right one
            if not isinstance(settled, UsageError):  # a preset was wrong: that error first, the rest may be right
                _say_unmatched(rt, flow, failed=True)
        if settled is exc:
            raise
        raise settled from None
    finally:
        await flow.keeper.close()
        rt.out.stop_progress()


_LISTED_BY = {"tools/call": "mcpcli tools", "prompts/get": "mcpcli prompts", "resources/read": "mcpcli resources"}


def _refused_hint(flow: Flow, rpc_code: int | None) -> str | None:
    """What to do when the server refused the request itself as naming something it does not have or with bad
    parameters (-32602; -32002, resource not found): look at what it lists."""
    if flow.call is None or rpc_code not in (-32602, -32002):
        return None
    listing = _LISTED_BY.get(flow.call.method)
    what = "the URI" if flow.call.method == "resources/read" else "the name and the arguments"
    return f"Check {what} against what the server lists: {listing}" if listing else None


async def drive_connected(
    rt: Runtime, opts: AnswerOptions, flow: Flow, target: Any, protocol: Any, body: Callable[[Client], Awaitable[T]]
) -> T:
    """A run that can show a tool's view (the app, ``--app``): connect declaring MCP Apps, run ``body`` and return
    what it returns; however it ends, the flow's session is left resumable, as ``call``'s."""
    try:
        async with connect_flow(rt, opts, flow, target, protocol, extensions=SHOWS_VIEWS) as client:
            flow.client = client
            return await body(client)
    except BaseException as exc:
        settled = await ending_of(flow, exc)
        if settled is exc:
            raise
        raise settled from None
    finally:
        await flow.keeper.close()


async def ending_of(flow: Flow, exc: BaseException) -> BaseException:
    """What a run that raised ``exc`` ends with: an ``McpcliError`` as it is; a dead transport as one line (exit 4,
    the session kept waiting); anything else — Ctrl-C, a signal, a bug — with the session put back to waiting."""
    single = lone(exc) if isinstance(exc, BaseExceptionGroup) else exc
    if isinstance(single, McpcliError):
        return single
    if isinstance(single, Exception) and (why := transport_failure(single)) is not None:
        return await flow.lost(why)
    await flow.interrupted()
    return exc


def _show_required_urls(rt: Runtime, pages: Sequence[Any]) -> None:
    """The pages a -32042 error names, shown as URL-mode elicitation shows them: the whole URL, its host
    emphasised, the same warnings, non-http(s) refused. Nothing is opened: the error ended the call, so there is
    no request left to consent to; the user opens what they trust."""
    from rich.text import Text

    from mcpcli.display import safe
    from mcpcli.terminal.asking import check_url, url_text

    console = rt.out.err
    console.print(Text("The server needs you to visit a page before it can go on:", style="bold"))
    for page in pages:
        check = check_url(page.url)
        console.print(Text.assemble(("? ", "bold cyan"), safe(page.message)))
        console.print(Text.assemble("  ", safe(page.url) if check.refused else url_text(page.url)))
        for warning in check.warnings:
            console.print(Text.assemble(("  ! ", "bold yellow"), warning))


def _result_text(outcome: Outcome) -> str | None:
    """The one text of an ``isError`` tool result, if that is what it is."""
    content = outcome.result.get("content") or []
    if not outcome.result.get("isError") or len(content) != 1 or content[0].get("type") != "text":
        return None
    text = content[0].get("text")
    return text if isinstance(text, str) else None


def error_result(outcome: Outcome) -> Outcome:
    """A JSON-RPC error dressed as an ``isError`` result is a protocol error: exit 4, like any other."""
    text = _result_text(outcome)
    if text is not None and (match := DRESSED_RPC_ERROR.fullmatch(text.strip())):
        code, message = int(match.group(1)), match.group(2).strip()
        raise ServerError(f"The server answered with an error: {message} (code {code}).")
    return outcome


def _wanted_back_channel(outcome: Outcome) -> bool:
    """fastmcp's wording for a tool that asked over the back-channel on 2026-07-28 (only a hint depends on it)."""
    text = (_result_text(outcome) or "").lower()
    return "server-initiated request" in text and "2026-07-28" in text


def _say_unmatched(rt: Runtime, flow: Flow, *, failed: bool = False) -> None:
    """Once the flow has run: each ``--answer``/``--decline``... that met no question, with what was asked.

    A flow that ``failed`` before any question was read (a malformed round, a dead server) has nothing to match
    the presets against: "the server asked: nothing" would be wrong, and the error says what happened."""
    if flow.call is None:
        return  # it never started (e.g. an unknown tool): nothing was asked, the error says why
    for source in flow.sources:
        if isinstance(source, Presets) and flow.resent is not None:
            source.met(flow.resent.requests)  # the round re-sent as stored: its questions were asked, and answered
        if isinstance(source, Presets) and not (failed and not source.asked):
            for line in source.unmatched():
                rt.out.warning(line)


async def run_call(
    rt: Runtime,
    opts: AnswerOptions,
    flows: list[Flow],
    method: Method,
    name: str,
    pairs: list[str],
    args: str | None,
    *,
    detach: bool = False,
    as_task: bool = False,
) -> int:
    target = rt.target()
    protocol = rt.protocol()
    rt.store.check_writable()  # before the first request: not after the server acted on round 1
    trust.remember(rt.paths, target)  # the user typed this command line: a later resume may run it unasked
    connection = connection_settings(target, protocol or target.protocol or "auto")
    flow = build_flow(rt, opts, terminal_seat(rt, opts), target.label, flows, connection=connection)
    flow.detach = detach

    async def run(client: Client) -> Outcome:
        if method == "tools/call":
            seen: dict[str, Any] = {}
            arguments = await _tool_arguments(
                rt, client, name, pairs, args, keep_listing(rt, target, client, "tools"), seen
            )
            flow.as_task = task_support(client, seen.get("execution"), as_task)
        elif method == "prompts/get":
            schema = await prompt_schema(client, name, pairs, keep_listing(rt, target, client, "prompts"))
            arguments = build_arguments(schema, pairs, None, what="prompt", warn=rt.out.warning)
        else:
            arguments = {}
        return await flow.start(Call(method, name, arguments))

    async with flow.keeper.running():
        return await connect_and_run(rt, opts, flow, target, run, protocol=protocol)


async def _tool_arguments(
    rt: Runtime,
    client: Client,
    tool: str,
    pairs: list[str],
    args: str | None,
    keep: Keep | None,
    seen: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``--arg``/``--args`` typed by the tool's schema; when the listing cannot be read, sent untyped (strings).

    Typing is a convenience: a listing the SDK rejects (shape drift in some other tool, a field missing) must not
    stop a call the server would take.
    """
    try:
        schema = await input_schema(client, tool, keep, seen)
    except ValidationError as exc:
        rt.out.note(
            f"The server's tool listing could not be read ({first_problem(exc)}); sending --arg values as strings, "
            "unchecked (typed values: --args JSON)."
        )
        from mcpcli.net.connection import unlisted

        unlisted(client, tool)
        keys = [pair.partition("=")[0] for pair in pairs]
        schema = {"type": "object", "properties": {key: {"type": "string"} for key in keys if key}}
    return build_arguments(schema, pairs, args, warn=rt.out.warning)


def render(rt: Runtime, method: str, outcome: Outcome) -> int:
    """A final result on stdout (``--json``: as JSON); its exit code. A task left running (``--detach``): its
    session id on stdout (``--json``: a document saying so), to resume it with."""
    if outcome.detached or outcome.cancelled:
        from mcpcli.commands.tasks import render_task

        return render_task(rt, outcome)
    if rt.json:
        rt.out.json(outcome.result)
    else:
        rt.out.result(method, outcome.result)
    return int(outcome.exit_code)


def needs_input(rt: Runtime, need: NeedInput) -> int:
    """Nobody could answer: what the saved session waits for (``--json``: with an answers template); exit 3."""
    if rt.json:
        rt.out.json(pending_document(need.session.id, need.pending, answers_template(need.pending)))
    else:
        describe_pending(rt.out.err, need.session.id, need.pending)
    if not need.deferred or need.confirming:  # a mid-call question, an answer to confirm: say why, and how to
        print_error(worded(need))
    return int(ExitCode.INPUT_REQUIRED)


def interrupted(rt: Runtime, flows: list[Flow], what: str = "Interrupted") -> None:
    """Ctrl-C, SIGTERM or SIGHUP: every round is already committed (the flow put a running session back to
    waiting under its lease); say where the flow can be picked up, and whether a resume sends something again."""
    rt.out.stop_progress()
    say = functools.partial(rt.out.err.print, markup=False, highlight=False)
    for flow in flows:
        flow.keeper.give_back()  # normally given back already; not when a second signal cut the cleanup short
    for flow in flows:
        if (note := stop_note(flow, what)) is not None:
            say(f"\n{note}")
            return
    say(f"\n{what}; nothing was saved (the server had asked for nothing yet).")


MakeUser = Callable[[Flow, Presets], AnswerSource]
"""Builds the app's answer source for a flow (it needs the flow's call for its header, the presets to pre-fill)."""
