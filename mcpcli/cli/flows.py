"""Commands that talk to a server: discovery (tools, prompts, resources, info) and flows (call, prompt, read,
resume, tui). Each parses, builds the options and runs one command body from ``mcpcli.commands`` (``flows``,
``discovery``, ``jobs``)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpcli.cli.app import (
    app,
    global_values,
    run_guarded,
)
from mcpcli.cli.options import (
    ANSWERS,
    CONNECTION,
    STORE,
    Json,
    complete_args,
    complete_prompts,
    complete_sessions,
    complete_tools,
    shared,
)
from mcpcli.errors import ExitCode
from mcpcli.runtime import AnswerOptions, Globals, Runtime, lone, run_async

if TYPE_CHECKING:
    from mcpcli.commands.jobs import CallJob, ResumeJob
    from mcpcli.engine.flow import Flow
    from mcpcli.engine.steps import Method


# --- discovery -------------------------------------------------------------------------------------------------------


def _discovery(ctx: typer.Context, what: str, values: dict[str, Any]) -> None:
    g: Globals = ctx.obj.merged(**global_values(values))

    def body() -> int:
        from mcpcli.commands.discovery import discover

        rt = Runtime(g, json_out=values["json"])
        return run_async(lambda: discover(rt, what)) or 0

    run_guarded(body, g.debug, json=g.json or values["json"])


LISTING = {**CONNECTION, "json": (Json, False)}


@app.command()
@shared(LISTING)
def tools(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """List the server's tools and their arguments."""
    _discovery(ctx, "tools", shared)


@app.command()
@shared(LISTING)
def prompts(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """List the server's prompts."""
    _discovery(ctx, "prompts", shared)


@app.command()
@shared(LISTING)
def resources(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """List the server's resources and resource templates."""
    _discovery(ctx, "resources", shared)


@app.command()
@shared(LISTING)
def info(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """Show the server's name, version, negotiated protocol and capabilities."""
    _discovery(ctx, "info", shared)


# --- flows -----------------------------------------------------------------------------------------------------------


class _StopSignals:
    """SIGTERM and SIGHUP stop a flow the way Ctrl-C does: the running flow is cancelled, so its session is put
    back to waiting under its lease and a stdio server child is shut down (not left to init); the exit code is
    128 + the signal's number (143, 129), as shells report a signal, and 130 for Ctrl-C."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(ValueError, OSError):  # not the main thread, or no such signal here
                self._old[signum] = signal.signal(signum, self._forward)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, old in self._old.items():
            signal.signal(signum, old)

    def _forward(self, signum: int, frame: Any) -> None:
        self.signum = signum
        # Whatever handles Ctrl-C right now (asyncio's runner cancels the main task; outside it, KeyboardInterrupt).
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    def what(self) -> str:
        names = {int(signal.SIGTERM): "Terminated (SIGTERM)", int(signal.SIGHUP): "Hung up (SIGHUP)"}
        return names.get(self.signum or 0, "Interrupted")

    def exit_code(self) -> int:
        return 128 + self.signum if self.signum else int(ExitCode.INTERRUPTED)


Start = Callable[[Runtime, AnswerOptions, "list[Flow]"], Coroutine[Any, Any, int]]


def answer_options(values: dict[str, Any], *, no_input: bool, json: bool) -> AnswerOptions:
    """The answer options of a flow command (``call``, ``resume``, ``batch``…), from its option values."""
    return AnswerOptions(
        answer=list(values["answer"] or []),
        answers=values["answers"],
        decline=list(values["decline"] or []),
        cancel=list(values["cancel"] or []),
        accept=list(values["accept"] or []),
        accept_defaults=values["accept_defaults"],
        no_input=no_input,
        roots=list(values["root"] or []),
        max_rounds=values["max_rounds"],
        timeout=values["timeout"],
        json=json,
        llm=values.get("llm"),
        approve_sampling=values.get("approve_sampling"),
    )


def _flow_command(
    ctx: typer.Context, values: dict[str, Any], start: Start, job: Callable[[], Any] | None = None
) -> None:
    """Run a flow command; with ``--tui`` (and a ``job`` describing the flow) in the full-screen app instead."""
    g: Globals = ctx.obj.merged(**global_values(values))
    opts = answer_options(values, no_input=values["no_input"], json=values["json"] or g.json)

    def body() -> int:
        rt = Runtime(g, json_out=opts.json)
        flows: list[Flow] = []

        def run() -> int:
            if values.get("tui"):
                _need_terminal()
                return _run_tui(rt, opts, flows, job=job() if job else None)  # the app runs its own event loop
            return run_async(lambda: start(rt, opts, flows)) or 0

        def stopped(stops: _StopSignals) -> int:
            from mcpcli.commands.flows import interrupted
            from mcpcli.commands.resume import cancel_task_of
            from mcpcli.commands.tasks import offer_task_cancel

            interrupted(rt, flows, stops.what())
            if stops.signum is None and offer_task_cancel(rt, opts, flows):  # Ctrl-C, not a signal from afar
                return run_async(lambda: cancel_task_of(rt, opts, flows)) or 0
            if opts.json:
                from mcpcli.errors import error_document
                from mcpcli.runtime import Interrupted

                saved = next((f.session.id for f in flows if f.session and f.keeper.saved), None)
                said = stops.what()
                stop = Interrupted(f"{said}; session {saved} saved." if saved else f"{said}.")
                stop.exit_code = stops.exit_code()  # type: ignore[assignment]
                stop.session_id = saved
                rt.out.json(error_document(stop))
            return stops.exit_code()

        return until_stopped(rt, run, stopped)

    run_guarded(body, g.debug, json=opts.json)


def until_stopped(rt: Runtime, run: Callable[[], int], stopped: Callable[[_StopSignals], int]) -> int:
    """``run()`` under the stop signals, the runtime closed after it. Ctrl-C, SIGTERM or SIGHUP — even raised
    inside a task group, which wraps what its body raised — is ``stopped``'s to say and to end with its exit code."""
    stops = _StopSignals()
    try:
        with stops:
            return run()
    except BaseException as exc:
        single = lone(exc) if isinstance(exc, BaseExceptionGroup) else exc
        if isinstance(single, KeyboardInterrupt):
            return stopped(stops)
        if single is not exc:
            raise single from None
        raise
    finally:
        rt.close()


def _run_tui(rt: Runtime, opts: AnswerOptions, flows: list[Flow], *, job: CallJob | ResumeJob | None) -> int:
    """Run the full-screen app; once the terminal is back, print the result (stdout) or the error, as the CLI would."""
    from mcpcli.commands.flows import needs_input, render
    from mcpcli.tui.app import build_app  # deferred: only --tui and `mcpcli tui` load Textual

    app = build_app(rt, opts, job=job, flows=flows)
    ended = app.run()
    if ended is None:
        return 0
    if ended.error is not None:
        raise ended.error
    if ended.need is not None:
        return needs_input(rt, ended.need)
    if ended.outcome is not None and ended.method is not None:
        return render(rt, ended.method, ended.outcome)
    return ended.code


def _need_terminal() -> None:
    """The app reads keys from stdin and draws on stderr: without a terminal on both it would write escape codes
    into a pipe and wait for keys that never come."""
    import sys

    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        from mcpcli.errors import UsageError

        raise UsageError(
            "The full-screen app needs a terminal (stdin and stderr), and this is not one.",
            hint="Run it in a terminal, or answer without it: --answer FIELD=VALUE, --answers FILE, "
            "or --no-input (exit 3 with an answers template).",
        )


def _call_command(
    ctx: typer.Context,
    values: dict[str, Any],
    method: Method,
    name: str,
    pairs: list[str],
    args: str | None,
    *,
    detach: bool = False,
    as_task: bool = False,
) -> None:
    async def start(rt: Runtime, opts: AnswerOptions, flows: list[Flow]) -> int:
        from mcpcli.commands.flows import run_call

        return await run_call(rt, opts, flows, method, name, pairs, args, detach=detach, as_task=as_task)

    def job() -> Any:
        from mcpcli.commands.jobs import CallJob

        return CallJob(method, name, tuple(pairs), args)

    _flow_command(ctx, values, start, job)


ArgPairs = Annotated[
    list[str] | None,
    typer.Option(
        "--arg",
        "-a",
        metavar="KEY=VALUE",
        help="Typed by the schema; KEY=@file reads a file.",
        show_default=False,
        autocompletion=complete_args,
    ),
]
ArgsJson = Annotated[
    str | None,
    typer.Option("--args", metavar="JSON", help="All arguments as JSON, @FILE, or - for stdin.", show_default=False),
]


@app.command()
@shared(CONNECTION, STORE, ANSWERS)
def call(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(help="The tool to call.", autocompletion=complete_tools)],
    arg: ArgPairs = None,
    args: ArgsJson = None,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            help="When the server runs the call as a task, leave it running and print the session id"
            " (continue it later: mcpcli resume ID).",
        ),
    ] = False,
    task: Annotated[
        bool,
        typer.Option(
            "--task",
            help="On a 2025-11-25 server, call a tool whose task support is optional as a task (required: always).",
        ),
    ] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Call a tool; answer what the server asks, round after round, until the result.

    A tool the server runs as a task is polled (its status on stderr) until its result; Ctrl-C at a terminal
    asks whether to detach or cancel it. Example: mcpcli call provision --arg name=orders --answer region=eu-west-1
    """

    _call_command(ctx, shared, "tools/call", tool, arg or [], args, detach=detach, as_task=task)


@app.command()
@shared(CONNECTION, STORE, ANSWERS)
def prompt(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The prompt to get.", autocompletion=complete_prompts)],
    arg: ArgPairs = None,
    *,
    shared: dict[str, Any],
) -> None:
    """Get a prompt, answering what the server asks."""

    _call_command(ctx, shared, "prompts/get", name, arg or [], None)


@app.command()
@shared(CONNECTION, STORE, ANSWERS)
def read(
    ctx: typer.Context,
    uri: Annotated[str, typer.Argument(help="The resource URI (a template's URI filled in).")],
    *,
    shared: dict[str, Any],
) -> None:
    """Read a resource, answering what the server asks."""

    _call_command(ctx, shared, "resources/read", uri, [], None)


@app.command()
@shared(CONNECTION, STORE, ANSWERS)
def resume(
    ctx: typer.Context,
    session: Annotated[
        str,
        typer.Argument(
            help="Session id, or a unique prefix of at least 4 characters.", autocompletion=complete_sessions
        ),
    ],
    steal: Annotated[
        bool, typer.Option("--steal", help="Take the session over from a driver that is gone (its lease holder).")
    ] = False,
    trust_server: Annotated[
        bool,
        typer.Option(
            "--trust-server",
            help="Run the session's stored server command line without asking (for a session imported from a"
            " bundle or written by another machine; check the command first: mcpcli sessions show ID).",
        ),
    ] = False,
    cancel_task: Annotated[
        bool,
        typer.Option(
            "--cancel-task", help="Cancel the session's task on the server (tasks/cancel) instead of continuing it."
        ),
    ] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Continue a saved flow: answer what is pending and retry with the stored state; a task is polled again.

    It reconnects the way the flow was connected (its server and protocol era) unless -s / --protocol say
    otherwise. Example: mcpcli resume 3f2a --answer region=eu-west-1   ·   mcpcli resume 3f2a --cancel-task
    """

    async def start(rt: Runtime, opts: AnswerOptions, flows: list[Flow]) -> int:
        from mcpcli.commands.resume import run_resume

        return await run_resume(rt, opts, flows, session, steal=steal, trust_server=trust_server, cancel=cancel_task)

    def job() -> Any:
        from mcpcli.commands.jobs import ResumeJob

        return ResumeJob(session, steal, trust_server)

    _flow_command(ctx, shared, start, job)


TUI_ANSWERS = {name: spec for name, spec in ANSWERS.items() if name not in ("tui", "json")}
"""``mcpcli tui`` takes the answer options too (presets pre-fill its forms); it is always full-screen, never JSON."""


@app.command()
@shared(CONNECTION, STORE, TUI_ANSWERS)
def tui(
    ctx: typer.Context,
    session: Annotated[
        str | None,
        typer.Argument(
            help="Resume this session (id or prefix) in the app.", show_default=False, autocompletion=complete_sessions
        ),
    ] = None,
    *,
    shared: dict[str, Any],
) -> None:
    """Open the full-screen app: the server's tools, prompts and resources, and your sessions.

    Example: mcpcli tui   ·   mcpcli tui 3f2a (resume that session in the app)
    """

    async def start(rt: Runtime, opts: AnswerOptions, flows: list[Flow]) -> int:
        raise AssertionError("mcpcli tui always runs the app")  # pragma: no cover

    def job() -> Any:
        from mcpcli.commands.jobs import ResumeJob

        return ResumeJob(session) if session else None

    _flow_command(ctx, {**shared, "tui": True, "json": False}, start, job)
