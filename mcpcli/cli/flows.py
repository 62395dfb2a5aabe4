"""Commands that talk to a server: discovery (tools, prompts, resources, info) and flows (call, prompt, read,
resume, tui). A flow command parses, builds its job (``commands.jobs``) and hands it to ``flow_command``, which runs
it with the terminal's seat (``commands.run.run_job``) or in the full-screen app; discovery runs
``commands.discovery``."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
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
from mcpcli.commands.runtime import AnswerOptions, Globals, Runtime, StopSignals, run_async, until_stopped
from mcpcli.errors import ExitCode
from mcpcli.terminal.hints import stop_note

if TYPE_CHECKING:
    from mcpcli.commands.jobs import Job
    from mcpcli.engine.flow import Flow
    from mcpcli.engine.steps import Method


# --- discovery -------------------------------------------------------------------------------------------------------


def _discovery(ctx: typer.Context, what: str, values: dict[str, Any]) -> None:
    g: Globals = ctx.obj.merged(**global_values(values))

    def body() -> int:
        from mcpcli.commands.discovery import discover

        rt = Runtime(g, json_out=values["json"])
        return until_stopped(rt, lambda: run_async(lambda: discover(rt, what)) or 0)

    run_guarded(body, g.debug, json=g.json or values["json"])


LISTING = {**CONNECTION, "json": (Json, False)}


@app.command()
@shared(LISTING)
def tools(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """List the server's tools and their arguments.

    Example: mcpcli tools -s http://127.0.0.1:8000/mcp --json
    """
    _discovery(ctx, "tools", shared)


@app.command()
@shared(LISTING)
def prompts(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """List the server's prompts.

    Example: mcpcli prompts -s "python server.py"
    """
    _discovery(ctx, "prompts", shared)


@app.command()
@shared(LISTING)
def resources(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """List the server's resources and resource templates.

    Example: mcpcli resources --json
    """
    _discovery(ctx, "resources", shared)


@app.command()
@shared(LISTING)
def info(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """Show the server's name, version, negotiated protocol and capabilities.

    Example: mcpcli info -s http://127.0.0.1:8000/mcp
    """
    _discovery(ctx, "info", shared)


# --- flows -----------------------------------------------------------------------------------------------------------


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
        roots=list(values.get("root") or []),
        max_rounds=values.get("max_rounds", 10),
        timeout=values.get("timeout"),
        json=json,
        llm=values.get("llm"),
        approve_sampling=values.get("approve_sampling"),
        ask=list(values.get("ask") or []),
        no_self_answer=bool(values.get("no_self_answer")),
        wait_for_answer=_wait_for_answer(values.get("wait_for_answer")),
    )


def _wait_for_answer(seconds: float | None) -> float | None:
    if seconds is not None and not seconds > 0:  # also NaN
        from mcpcli.errors import UsageError

        raise UsageError(
            f"--wait-for-answer needs a positive number of seconds, not {seconds:g}.",
            hint="Give --wait-for-answer=600, or --wait-for-answer alone for an hour.",
        )
    return seconds


def flow_command(
    ctx: typer.Context, values: dict[str, Any], job: Callable[[], Job | None], *, lines: bool = False
) -> None:
    """Run the flow ``job()`` describes (built once the options are checked), at the terminal — or, with ``--tui``,
    in the full-screen app — and exit with its code. ``lines``: its stdout is JSON Lines with ``--json``
    (``--app``'s events), its error document one line too."""
    g: Globals = ctx.obj.merged(**global_values(values))
    as_json = bool(values["json"] or g.json)

    def body() -> int:
        """The command's body under the runtime's guard: options checked (a bad value exits 2), the job built and run
        inline or in the app, a stop said where the flow can be picked up."""
        opts = answer_options(values, no_input=values["no_input"], json=as_json)  # a bad value: one line, exit 2
        rt = Runtime(g, json_out=opts.json)
        rt.json_lines = lines and rt.json
        flows: list[Flow] = []

        def run() -> int:
            described = job()
            if values.get("tui"):
                _need_terminal()
                if g.trace == "-" and sys.stdout.isatty():  # the app draws on this terminal: lines would tear it
                    from mcpcli.errors import UsageError

                    raise UsageError(
                        "--trace - writes to stdout, a terminal the full-screen app draws on.",
                        hint="Give --trace a file (--trace run.ndjson), or send stdout elsewhere (> run.ndjson).",
                    )
                return _run_tui(rt, opts, flows, job=described)  # the app runs its own event loop
            assert described is not None
            return _run_inline(rt, opts, flows, described)

        return until_stopped(rt, run, functools.partial(_stopped, rt, opts, flows))

    run_guarded(body, g.debug, json=as_json, lines=lines)


def _run_inline(rt: Runtime, opts: AnswerOptions, flows: list[Flow], job: Job) -> int:
    """The job at the terminal: ``commands.run`` runs it with the terminal's seat (``answer``: the inbox's short
    path); a flow left waiting for a person is announced."""
    from mcpcli.commands.jobs import AnswerJob
    from mcpcli.commands.printed import terminal_seat

    if isinstance(job, AnswerJob):
        from mcpcli.commands.answer import run_answer

        return run_async(lambda: run_answer(rt, opts, job.session_id, terminal_seat(rt, opts))) or 0
    from mcpcli.commands.inbox import announce_parked
    from mcpcli.commands.run import run_job

    views = None
    if job.app is not None:
        from mcpcli.commands.apps import terminal_views

        views = terminal_views(rt, opts)
    seat = terminal_seat(rt, opts, views=views)
    code = run_async(lambda: run_job(rt, opts, job, seat, flows)) or 0
    if code == ExitCode.INPUT_REQUIRED and opts.wait_for_answer is None:
        announce_parked(rt, flows)
    return code


def _stopped(rt: Runtime, opts: AnswerOptions, flows: list[Flow], stops: StopSignals) -> int:
    """Ctrl-C, SIGTERM or SIGHUP under a flow: say where it can be picked up (``--json``: the error document); at a
    terminal, a task still running on the server may be cancelled instead of left running."""
    from mcpcli.commands.printed import interrupted
    from mcpcli.commands.tasks import offer_task_cancel, task_left_running

    interrupted(rt, flows, stops.what())
    if stops.signum is None and offer_task_cancel(rt, opts, flows):  # Ctrl-C, not a signal from afar
        from mcpcli.commands.jobs import ResumeJob
        from mcpcli.commands.printed import terminal_seat
        from mcpcli.commands.run import run_job

        session = task_left_running(flows)
        assert session is not None
        return (
            run_async(lambda: run_job(rt, opts, ResumeJob(session.id, cancel=True), terminal_seat(rt, opts), [])) or 0
        )
    if opts.json:
        from mcpcli.commands.runtime import Interrupted
        from mcpcli.errors import error_document

        saved = next((f.session.id for f in flows if f.session and f.keeper.saved), None)
        said = stops.what()
        note = next((n for f in flows if (n := stop_note(f, said)) is not None), None)
        stop = Interrupted(note or f"{said}.")
        saved = saved or next((f.keeper.adopting for f in flows if f.keeper.adopting), None)
        stop.exit_code = stops.exit_code()  # type: ignore[assignment]
        stop.session_id = saved
        (rt.out.json_line if rt.json_lines else rt.out.json)(error_document(stop))
    return stops.exit_code()


def _run_tui(rt: Runtime, opts: AnswerOptions, flows: list[Flow], *, job: Job | None) -> int:
    """Run the full-screen app; once the terminal is back, print the result (stdout) or the error, as the CLI would."""
    from mcpcli.commands.printed import needs_input, render
    from mcpcli.tui.app import build_app  # deferred: only --tui and `mcpcli tui` load Textual

    app = build_app(rt, opts, job=job, flows=flows)
    ended = app.run()
    if ended is None:
        return 0
    if ended.interrupted:  # Ctrl-C in the app: stopped here as inline (``until_stopped``: the note, exit 130)
        raise KeyboardInterrupt
    if ended.error is not None:
        raise ended.error
    if ended.need is not None:
        return needs_input(rt, ended.need)
    if ended.answered is not None:
        from mcpcli.commands.answer import show_answered

        show_answered(rt, ended.answered)
    if ended.outcome is not None and ended.method is not None:
        return render(rt, ended.method, ended.outcome)
    return ended.code


def _need_terminal() -> None:
    """The app reads keys from stdin and draws on stderr: without a terminal on both it would write escape codes
    into a pipe and wait for keys that never come."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        from mcpcli.errors import UsageError

        raise UsageError(
            "The full-screen app needs a terminal (stdin and stderr), and this is not one.",
            hint="Run it in a terminal, or answer without it: --answer FIELD=VALUE, --answers FILE, "
            "or --no-input (exit 3 with an answers template).",
        )


def _call_job(method: Method, name: str, pairs: list[str], args: str | None, **more: Any) -> Callable[[], Job]:
    """A ``call``/``prompt``/``read`` job, built when the command runs (``--app``'s options checked then)."""

    def job() -> Job:
        from mcpcli.commands.jobs import CallJob

        return CallJob(method, name, tuple(pairs), args, **more)

    return job


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


AppFlag = Annotated[
    bool,
    typer.Option(
        "--app",
        help="Open the tool's interactive view (MCP Apps) in your browser, bridged through this connection; the"
        " command lasts while the view is open (close it, Ctrl-C, or --for).",
    ),
]
NoBrowser = Annotated[
    bool, typer.Option("--no-browser", help="With --app: print the view's one-time URL instead of opening it.")
]
ForSeconds = Annotated[
    float | None,
    typer.Option("--for", metavar="SECONDS", help="With --app: close the view after SECONDS.", show_default=False),
]


@app.command()
@shared(CONNECTION, STORE, ANSWERS)
def call(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(help="The tool to call.", metavar="TOOL", autocompletion=complete_tools)],
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
    app: AppFlag = False,
    no_browser: NoBrowser = False,
    for_seconds: ForSeconds = None,
    *,
    shared: dict[str, Any],
) -> None:
    """Call a tool; answer what the server asks, round after round, until the result.

    A tool the server runs as a task is polled (its status on stderr) until its result; Ctrl-C at a terminal
    asks whether to detach or cancel it. With --app, a tool that has an interactive view (mcpcli tools marks
    them) opens it in your browser, sandboxed, for as long as it is open. Example: mcpcli call provision --arg
    name=orders --answer region=eu-west-1   ·   mcpcli call dashboard --app --no-browser
    """

    def job() -> Job:
        from mcpcli.commands.jobs import CallJob, check_app_options

        apps = check_app_options(app, no_browser, for_seconds)
        return CallJob("tools/call", tool, tuple(arg or []), args, app=apps, detach=detach, as_task=task)

    flow_command(ctx, shared, job, lines=app)


def _usage(message: str) -> Exception:
    from mcpcli.errors import UsageError

    return UsageError(message, hint="Run it without --tui: mcpcli call TOOL --app")


@app.command()
@shared(CONNECTION, STORE, ANSWERS)
def prompt(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The prompt to get.", metavar="NAME", autocompletion=complete_prompts)],
    arg: ArgPairs = None,
    *,
    shared: dict[str, Any],
) -> None:
    """Get a prompt, answering what the server asks.

    Example: mcpcli prompt note -a topic=release
    """

    flow_command(ctx, shared, _call_job("prompts/get", name, arg or [], None))


@app.command()
@shared(CONNECTION, STORE, ANSWERS)
def read(
    ctx: typer.Context,
    uri: Annotated[str, typer.Argument(help="The resource URI (a template's URI filled in).", metavar="URI")],
    *,
    shared: dict[str, Any],
) -> None:
    """Read a resource, answering what the server asks.

    Example: mcpcli read demo://report/orders
    """

    flow_command(ctx, shared, _call_job("resources/read", uri, [], None))


@app.command()
@shared(CONNECTION, STORE, ANSWERS)
def resume(
    ctx: typer.Context,
    session: Annotated[
        str,
        typer.Argument(
            help="Session id, or a unique prefix of at least 4 characters.",
            metavar="ID",
            autocompletion=complete_sessions,
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
    wait: Annotated[
        float | None,
        typer.Option(
            "--wait",
            metavar="[=SECONDS]",
            min=0,
            help="When another driver holds the session, wait for it to stop (up to SECONDS, 60 for a bare --wait)"
            " instead of exiting 6 at once; a driver that dies frees it at once on PostgreSQL and on this host.",
            show_default=False,
        ),
    ] = None,
    cancel_task: Annotated[
        bool,
        typer.Option(
            "--cancel-task", help="Cancel the session's task on the server (tasks/cancel) instead of continuing it."
        ),
    ] = False,
    app: AppFlag = False,
    no_browser: NoBrowser = False,
    for_seconds: ForSeconds = None,
    *,
    shared: dict[str, Any],
) -> None:
    """Continue a saved flow: answer what is pending and retry with the stored state; a task is polled again.

    It reconnects the way the flow was connected (its server and protocol era) unless -s / --protocol say
    otherwise. Another driver on it: exit 6 saying when it frees, or --wait for it. --app reopens the view of a
    tool call that has one. Example: mcpcli resume 3f2a --answer region=eu-west-1   ·   mcpcli resume 3f2a
    --wait=120   ·   mcpcli resume 3f2a --cancel-task   ·   mcpcli resume 3f2a --app
    """

    def job() -> Job:
        from mcpcli.commands.jobs import ResumeJob, check_app_options

        apps = check_app_options(app, no_browser, for_seconds)
        if apps is not None and cancel_task:
            raise _usage("--app and --cancel-task do not go together: a cancelled task has no view to show.")
        return ResumeJob(session, steal, trust_server, wait or 0.0, cancel=cancel_task, app=apps)

    flow_command(ctx, shared, job, lines=app)


TUI_ANSWERS = {name: spec for name, spec in ANSWERS.items() if name not in ("tui", "json")}
"""``mcpcli tui`` takes the answer options too (presets pre-fill its forms); it is always full-screen, never JSON."""


@app.command()
@shared(CONNECTION, STORE, TUI_ANSWERS)
def tui(
    ctx: typer.Context,
    session: Annotated[
        str | None,
        typer.Argument(
            help="Resume this session (id or prefix) in the app.",
            metavar="ID",
            show_default=False,
            autocompletion=complete_sessions,
        ),
    ] = None,
    *,
    shared: dict[str, Any],
) -> None:
    """Open the full-screen app: the server's tools, prompts and resources, and your sessions.

    Example: mcpcli tui   ·   mcpcli tui 3f2a (resume that session in the app)
    """

    def job() -> Job | None:
        from mcpcli.commands.jobs import ResumeJob

        return ResumeJob(session) if session else None

    flow_command(ctx, {**shared, "tui": True, "json": False}, job)
