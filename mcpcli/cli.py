"""The command line: parse → build objects → ``anyio.run`` one core coroutine → render → exit code.

No protocol logic lives here. Heavy modules (``mcp``, the flow, the demo
server) are imported inside the commands that need them, so ``--help``,
``--version`` and ``sessions list`` start fast (a test checks ``sys.modules``).

Options shared by several commands are declared once (``CONNECTION``,
``STORE``, ``ANSWERS``) and added to each command's signature by ``shared``;
the command receives them as one ``dict``.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import typing
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpcli import __version__
from mcpcli.completion import complete_args, complete_prompts, complete_servers, complete_sessions, complete_tools
from mcpcli.errors import ExitCode
from mcpcli.runtime import AnswerOptions, Globals, Runtime, guarded, lone, run_async

if TYPE_CHECKING:
    from mcpcli.flow import Flow, Method

# --- options ---------------------------------------------------------------------------------------------------------


def _opt(*names: str, help: str, kind: Any = str | None, metavar: str | None = None, complete: Any = None) -> Any:
    option = typer.Option(*names, help=help, show_default=False, metavar=metavar, autocompletion=complete)
    return Annotated[kind, option]


Server = _opt(
    "-s",
    "--server",
    help="URL, config name, 'demo', or a stdio command line.",
    metavar="TARGET",
    complete=complete_servers,
)
Header = _opt(
    "-H", "--header", help='HTTP header "Name: value" (repeatable).', kind=list[str] | None, metavar="'NAME: VALUE'"
)
ProtocolOpt = _opt("--protocol", help="auto | legacy | 2026-07-28 (default auto).", metavar="VERSION")
StoreOpt = _opt("--store", help="Session store URL (default: sqlite: under the state dir).", metavar="URL")
Debug = _opt("--debug", help="Show tracebacks and SDK logs.", kind=bool | None)
Bearer = _opt(
    "--bearer",
    help="Static bearer token for an HTTP server (prefer bearer_token_env in the config: flags show in ps).",
    metavar="TOKEN",
)
Verbose = _opt(
    "-v", "--verbose", help="Say what happens round by round, and each JSON-RPC message in one line.", kind=bool | None
)
TraceOpt = _opt("--trace", help="Write every JSON-RPC message, redacted, as NDJSON to FILE (0600).", metavar="FILE")
LogLevel = _opt(
    "--log-level",
    help="Print the server's log messages at LEVEL and up: debug|info|notice|warning|error|critical|alert|emergency.",
    metavar="LEVEL",
)
Json = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
Keys = list[str] | None

CONNECTION: dict[str, tuple[Any, Any]] = {
    "server": (Server, None),
    "header": (Header, None),
    "protocol": (ProtocolOpt, None),
    "bearer": (Bearer, None),
    "debug": (Debug, None),
    "verbose": (Verbose, None),
    "trace": (TraceOpt, None),
    "log_level": (LogLevel, None),
}
"""Global options that may also follow the subcommand (the later value wins)."""

STORE: dict[str, tuple[Any, Any]] = {"store": (StoreOpt, None)}

ANSWERS: dict[str, tuple[Any, Any]] = {
    "answer": (
        _opt(
            "--answer",
            "-A",
            help="FIELD=VALUE or REQUEST_KEY.FIELD=VALUE (repeatable).",
            kind=Keys,
            metavar="FIELD=VALUE",
        ),
        None,
    ),
    "answers": (_opt("--answers", help="JSON answers file, or - for stdin.", metavar="FILE"), None),
    "decline": (_opt("--decline", help="Decline request KEY (repeatable).", kind=Keys, metavar="KEY"), None),
    "cancel": (_opt("--cancel", help="Cancel request KEY (repeatable).", kind=Keys, metavar="KEY"), None),
    "accept": (
        _opt(
            "--accept", help="Accept request KEY with its defaults, or a URL visited already.", kind=Keys, metavar="KEY"
        ),
        None,
    ),
    "accept_defaults": (
        Annotated[bool, typer.Option("--accept-defaults", help="Accept every form whose defaults suffice.")],
        False,
    ),
    "no_input": (
        Annotated[bool, typer.Option("--no-input", help="Never prompt: save the session and exit 3 instead.")],
        False,
    ),
    "tui": (
        Annotated[bool, typer.Option("--tui", help="Answer in the full-screen app (forms, URL consent, sampling).")],
        False,
    ),
    "root": (
        _opt(
            "--root",
            help="A root to offer the server (repeatable; default: the current directory).",
            kind=list[Path] | None,
            metavar="PATH",
        ),
        None,
    ),
    "max_rounds": (
        Annotated[
            int, typer.Option("--max-rounds", min=1, metavar="N", help="Input-required rounds to answer at most.")
        ],
        10,
    ),
    "timeout": (
        _opt("--timeout", help="Wall-clock seconds for the whole flow.", kind=float | None, metavar="SECONDS"),
        None,
    ),
    "llm": (_opt("--llm", help="The LLM provider that answers sampling requests.", metavar="NAME"), None),
    "approve_sampling": (
        _opt("--approve-sampling", help="Sampling approval: ask | session | always | never.", metavar="POLICY"),
        None,
    ),
    "json": (Json, False),
}


def shared(*groups: dict[str, tuple[Any, Any]]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add the options of ``groups`` to a command; it receives their values as ``shared: dict``."""
    options = {name: spec for group in groups for name, spec in group.items()}

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(command, include_extras=True)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(command).parameters.values()
            if p.name != "shared"
        ]
        extra = [
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=a, default=d)
            for n, (a, d) in options.items()
        ]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> None:
            command(*args, shared={name: kwargs.pop(name) for name in options}, **kwargs)

        wrapper.__signature__ = inspect.Signature([*own, *extra])  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in [*own, *extra]}
        return wrapper

    return decorate


# --- the app ---------------------------------------------------------------------------------------------------------

app = typer.Typer(
    name="mcpcli",
    help=(
        "Call MCP servers from a shell, and carry flows that need more than one round trip to the end.\n\n"
        "Try: mcpcli call provision --arg name=orders   (against the built-in demo server)"
    ),
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion; what TAB offers: mcpcli.completion
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
sessions_app = typer.Typer(
    help="Stored flows: list, show, remove, prune, export and import them.", no_args_is_help=True
)
app.add_typer(sessions_app, name="sessions")
llm_app = typer.Typer(help="LLM providers that answer sampling requests: list them, test one.", no_args_is_help=True)
app.add_typer(llm_app, name="llm")
keys_app = typer.Typer(help="API keys of LLM providers (kept 0600 under the config dir).", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"mcpcli {__version__}\n")
        raise typer.Exit()


@app.callback()
@shared(CONNECTION, STORE)
def _main(
    ctx: typer.Context,
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = None,
    *,
    shared: dict[str, Any],
) -> None:
    ctx.obj = Globals().merged(**_globals(shared))


def _globals(values: dict[str, Any]) -> dict[str, Any]:
    """The global options among a command's values, named as ``Globals`` fields."""
    names = {"server", "protocol", "store", "debug", "verbose", "bearer", "trace", "log_level"}
    found = {k: v for k, v in values.items() if k in names}
    if values.get("header"):
        found["headers"] = list(values["header"])
    return found


def _run(body: Callable[[], int | None], debug: bool) -> None:
    raise typer.Exit(int(guarded(body, debug)))


# --- discovery -------------------------------------------------------------------------------------------------------


def _discovery(ctx: typer.Context, what: str, values: dict[str, Any]) -> None:
    g: Globals = ctx.obj.merged(**_globals(values))

    def body() -> int:
        from mcpcli.commands import discover

        rt = Runtime(g, json_out=values["json"])
        return run_async(lambda: discover(rt, what)) or 0

    _run(body, g.debug)


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

Start = Callable[[Runtime, AnswerOptions, "list[Flow]"], Coroutine[Any, Any, int]]


def _flow_command(
    ctx: typer.Context, values: dict[str, Any], start: Start, job: Callable[[], Any] | None = None
) -> None:
    """Run a flow command; with ``--tui`` (and a ``job`` describing the flow) in the full-screen app instead."""
    g: Globals = ctx.obj.merged(**_globals(values))
    opts = AnswerOptions(
        answer=list(values["answer"] or []),
        answers=values["answers"],
        decline=list(values["decline"] or []),
        cancel=list(values["cancel"] or []),
        accept=list(values["accept"] or []),
        accept_defaults=values["accept_defaults"],
        no_input=values["no_input"],
        roots=list(values["root"] or []),
        max_rounds=values["max_rounds"],
        timeout=values["timeout"],
        json=values["json"],
        llm=values.get("llm"),
        approve_sampling=values.get("approve_sampling"),
    )

    def body() -> int:
        rt = Runtime(g, json_out=opts.json)
        flows: list[Flow] = []
        try:
            if values.get("tui"):
                from mcpcli.commands import run_tui  # the app runs its own event loop

                return run_tui(rt, opts, flows, job=job() if job else None)
            return run_async(lambda: start(rt, opts, flows)) or 0
        except BaseException as exc:
            # The connection's task groups wrap what the body raised; Ctrl-C may arrive inside a group.
            single = lone(exc) if isinstance(exc, BaseExceptionGroup) else exc
            if isinstance(single, KeyboardInterrupt):
                from mcpcli.commands import interrupted

                interrupted(rt, flows)
                return int(ExitCode.INTERRUPTED)
            if single is not exc:
                raise single from None
            raise
        finally:
            rt.close()

    _run(body, g.debug)


def _call_command(
    ctx: typer.Context, values: dict[str, Any], method: Method, name: str, pairs: list[str], args: str | None
) -> None:
    async def start(rt: Runtime, opts: AnswerOptions, flows: list[Flow]) -> int:
        from mcpcli.commands import run_call

        return await run_call(rt, opts, flows, method, name, pairs, args)

    def job() -> Any:
        from mcpcli.commands import CallJob

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
StatusOpt = Annotated[
    str | None,
    typer.Option("--status", metavar="STATUS", help="Only sessions with this status.", show_default=False),
]


@app.command()
@shared(CONNECTION, STORE, ANSWERS)
def call(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(help="The tool to call.", autocompletion=complete_tools)],
    arg: ArgPairs = None,
    args: ArgsJson = None,
    *,
    shared: dict[str, Any],
) -> None:
    """Call a tool; answer what the server asks, round after round, until the result.

    Example: mcpcli call provision --arg name=orders --answer region=eu-west-1
    """

    _call_command(ctx, shared, "tools/call", tool, arg or [], args)


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
    *,
    shared: dict[str, Any],
) -> None:
    """Continue a saved flow: answer what is pending and retry with the stored state.

    Example: mcpcli resume 3f2a --answer region=eu-west-1
    """

    async def start(rt: Runtime, opts: AnswerOptions, flows: list[Flow]) -> int:
        from mcpcli.commands import run_resume

        return await run_resume(rt, opts, flows, session, steal=steal)

    def job() -> Any:
        from mcpcli.commands import ResumeJob

        return ResumeJob(session, steal)

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
        from mcpcli.commands import ResumeJob

        return ResumeJob(session) if session else None

    _flow_command(ctx, {**shared, "tui": True, "json": False}, start, job)


# --- sessions and paths ----------------------------------------------------------------------------------------------


SESSION_OPTIONS: dict[str, tuple[Any, Any]] = {
    "debug": (Debug, None),
    "verbose": (Verbose, None),
    "json": (Json, False),
}
SessionId = Annotated[
    str,
    typer.Argument(
        help="Session id, or a unique prefix of at least 4 characters.", metavar="ID", autocompletion=complete_sessions
    ),
]


def _sessions_command(ctx: typer.Context, values: dict[str, Any], body: Callable[[Runtime], int]) -> None:
    """Run a ``sessions`` subcommand: no server, no SDK — just the store and the output."""
    g: Globals = ctx.obj.merged(**_globals(values))

    def run() -> int:
        rt = Runtime(g, json_out=values.get("json", False))
        try:
            return body(rt)
        finally:
            rt.close()

    _run(run, g.debug)


@sessions_app.command("list")
@shared(STORE, SESSION_OPTIONS)
def sessions_list(
    ctx: typer.Context,
    status: StatusOpt = None,
    server: Annotated[
        str | None,
        typer.Option(
            "-s",
            "--server",
            metavar="TARGET",
            help="Only sessions of this server.",
            show_default=False,
            autocompletion=complete_servers,
        ),
    ] = None,
    waiting: Annotated[
        bool, typer.Option("--waiting", help="The inbox: flows waiting for input, and what each waits for.")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many.")] = 50,
    *,
    shared: dict[str, Any],
) -> None:
    """List stored sessions, newest first.

    Example: mcpcli sessions list --waiting
    """

    def body(rt: Runtime) -> int:
        from mcpcli.session_views import list_sessions

        return list_sessions(rt, status, limit, server=server or rt.g.server, waiting=waiting)

    _sessions_command(ctx, shared, body)


@sessions_app.command("show")
@shared(STORE, SESSION_OPTIONS)
def sessions_show(
    ctx: typer.Context,
    session: SessionId,
    reveal: Annotated[bool, typer.Option("--reveal", help="Show secret answers instead of masking them.")] = False,
    trace: Annotated[
        bool, typer.Option("--trace", help="Print the JSON-RPC messages the session recorded (redacted).")
    ] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Show a session: its call, and each round's questions and answers (secrets masked).

    The request_state is shown only as its size and hash. With --trace: its recorded messages instead,
    one line each (--json: the NDJSON lines as a JSON array).
    """

    def body(rt: Runtime) -> int:
        from mcpcli.session_views import show_session, show_trace

        return show_trace(rt, session) if trace else show_session(rt, session, reveal=reveal)

    _sessions_command(ctx, shared, body)


@sessions_app.command("rm")
@shared(STORE, SESSION_OPTIONS)
def sessions_rm(
    ctx: typer.Context,
    sessions: Annotated[
        list[str],
        typer.Argument(help="Session ids or unique prefixes.", metavar="ID...", autocompletion=complete_sessions),
    ],
    *,
    shared: dict[str, Any],
) -> None:
    """Delete sessions and their rounds (all of them, or none when one is unknown)."""

    def body(rt: Runtime) -> int:
        from mcpcli.session_views import remove_sessions

        return remove_sessions(rt, sessions)

    _sessions_command(ctx, shared, body)


@sessions_app.command("prune")
@shared(STORE, SESSION_OPTIONS)
def sessions_prune(
    ctx: typer.Context,
    older_than: Annotated[
        str, typer.Option("--older-than", metavar="AGE", help="Not updated for this long: 30d, 12h, 30m.")
    ] = "30d",
    status: Annotated[
        list[str] | None,
        typer.Option(
            "--status",
            metavar="STATUS",
            help="Remove sessions with this status (repeatable; default: done, failed, expired).",
            show_default=False,
        ),
    ] = None,
    *,
    shared: dict[str, Any],
) -> None:
    """Remove old finished sessions; waiting ones only with --status waiting.

    Example: mcpcli sessions prune --older-than 7d --status done
    """

    def body(rt: Runtime) -> int:
        from mcpcli.session_views import prune_sessions

        return prune_sessions(rt, older_than, status)

    _sessions_command(ctx, shared, body)


@sessions_app.command("export")
@shared(STORE, {"debug": (Debug, None), "verbose": (Verbose, None)})
def sessions_export(
    ctx: typer.Context,
    session: SessionId,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", metavar="FILE", help="Write the bundle here (mode 0600); default stdout."),
    ] = None,
    include_answers: Annotated[
        bool,
        typer.Option(
            "--include-answers", help="Include the answers, encrypted with a passphrase (MCPCLI_PASSPHRASE, or asked)."
        ),
    ] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Write a session as a checksummed bundle, to finish the flow on another machine.

    Answers are left out unless --include-answers (then encrypted with a passphrase).

    Example: mcpcli sessions export 3f2a -o flow.json
    """

    def body(rt: Runtime) -> int:
        from mcpcli.bundle import export_session

        return export_session(rt, session, output, include_answers=include_answers)

    _sessions_command(ctx, shared, body)


@sessions_app.command("import")
@shared(STORE, SESSION_OPTIONS)
def sessions_import(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Argument(help="A bundle file from 'sessions export', or - for stdin.", metavar="FILE")
    ],
    *,
    shared: dict[str, Any],
) -> None:
    """Add a session from a bundle to this store; then resume it here.

    Example: mcpcli sessions import flow.json && mcpcli resume 3f2a
    """

    def body(rt: Runtime) -> int:
        from mcpcli.bundle import import_session

        return import_session(rt, source)

    _sessions_command(ctx, shared, body)


# --- LLM providers and their keys ------------------------------------------------------------------------------------

ProviderName = Annotated[str, typer.Argument(help="The provider: a [providers.NAME] of config.toml.", metavar="NAME")]


@llm_app.command("list")
@shared(SESSION_OPTIONS)
def llm_list(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """List providers, models and where keys come from.

    Never shows a key: only whether it is stored (mcpcli keys set) or read from an environment variable.
    """

    def body(rt: Runtime) -> int:
        from mcpcli.llm.commands import list_providers

        return list_providers(rt)

    _sessions_command(ctx, shared, body)


@llm_app.command("test")
@shared(SESSION_OPTIONS)
def llm_test(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(help="The provider (default: [sampling] provider).", metavar="NAME")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", metavar="MODEL", help="An allowed model (default: the first).")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, metavar="SECONDS", help="Seconds each try may take.")
    ] = 60.0,
    *,
    shared: dict[str, Any],
) -> None:
    """Send one tiny request; print the model and its reply.

    Example: mcpcli llm test local --model llama3.2
    """

    def body(rt: Runtime) -> int:
        from mcpcli.llm.commands import test_provider

        return run_async(lambda: test_provider(rt, name, model, timeout)) or 0

    _sessions_command(ctx, shared, body)


@keys_app.command("set")
@shared({"debug": (Debug, None)})
def keys_set(ctx: typer.Context, name: ProviderName, *, shared: dict[str, Any]) -> None:
    """Store a provider's API key (hidden prompt, or stdin).

    The key goes to <config dir>/keys/llm-NAME.key (0600) and is sent only to that provider's base_url.

    Example: mcpcli keys set claude < ~/anthropic.key
    """

    def body(rt: Runtime) -> int:
        from mcpcli.llm.commands import set_key

        return set_key(rt, name)

    _sessions_command(ctx, shared, body)


@keys_app.command("rm")
@shared({"debug": (Debug, None)})
def keys_rm(ctx: typer.Context, name: ProviderName, *, shared: dict[str, Any]) -> None:
    """Delete a provider's stored API key."""

    def body(rt: Runtime) -> int:
        from mcpcli.llm.commands import rm_key

        return rm_key(rt, name)

    _sessions_command(ctx, shared, body)


# --- servers ---------------------------------------------------------------------------------------------------------

servers_app = typer.Typer(
    help=(
        "Named servers (-s NAME): list them, add or remove your own, import those other MCP clients know.\n\n"
        "Looked up in config.toml's mcpServers, then servers.json (managed here), then ./.mcp.json."
    ),
    no_args_is_help=True,
)
app.add_typer(servers_app, name="servers")
QUIET: dict[str, tuple[Any, Any]] = {"debug": (Debug, None), "verbose": (Verbose, None)}
Force = Annotated[bool, typer.Option("--force", help="Replace an entry of the same name in servers.json.")]


@servers_app.command("list")
@shared(SESSION_OPTIONS)
def servers_list(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """List the named servers: kind, target, where each is defined, and which one shadows which.

    Connects to nothing; env and header values are not shown, only their names.
    """

    def body(rt: Runtime) -> int:
        from mcpcli.server_commands import list_servers

        return list_servers(rt)

    _sessions_command(ctx, shared, body)


@servers_app.command("import")
@shared(QUIET)
def servers_import(
    ctx: typer.Context,
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="claude|vscode|cursor|FILE",
            help="Where from (default: every known place).",
            show_default=False,
        ),
    ] = None,
    name: Annotated[
        list[str] | None,
        typer.Option("--name", metavar="NAME", help="Import only this server (repeatable).", show_default=False),
    ] = None,
    force: Force = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be imported; write nothing.")] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Copy the servers Claude Desktop/Code, VS Code or Cursor know into servers.json.

    Entries are copied as written: ${env:NAME} references stay references, expanded when mcpcli connects.

    Example: mcpcli servers import --from vscode --dry-run
    """

    def body(rt: Runtime) -> int:
        from mcpcli.server_commands import import_servers

        return import_servers(rt, source, list(name or []), force=force, dry_run=dry_run)

    _sessions_command(ctx, shared, body)


@servers_app.command("add")
@shared(QUIET)
def servers_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The name to use with -s.", metavar="NAME")],
    target: Annotated[
        list[str], typer.Argument(help="A URL, a quoted command line, or -- command args...", metavar="TARGET")
    ],
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env", "-e", metavar="K=V", help="Environment for a stdio server (repeatable).", show_default=False
        ),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option("--header", "-H", metavar="'NAME: VALUE'", help="HTTP header (repeatable).", show_default=False),
    ] = None,
    cwd: Annotated[
        str | None,
        typer.Option("--cwd", metavar="DIR", help="Working directory of a stdio server.", show_default=False),
    ] = None,
    force: Force = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Add a server to servers.json.

    Quote references so the shell leaves them for mcpcli to expand at connect time.

    Example: mcpcli servers add files -e ROOT='${env:HOME}' -- npx -y @modelcontextprotocol/server-filesystem /tmp
    """

    def body(rt: Runtime) -> int:
        from mcpcli.server_commands import add_server

        return add_server(rt, name, target, env=list(env or []), headers=list(header or []), cwd=cwd, force=force)

    _sessions_command(ctx, shared, body)


@servers_app.command("remove")
@shared(QUIET)
def servers_remove(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A server of servers.json.", metavar="NAME")],
    *,
    shared: dict[str, Any],
) -> None:
    """Remove a server from servers.json (those of config.toml and ./.mcp.json are edited there)."""

    def body(rt: Runtime) -> int:
        from mcpcli.server_commands import remove_server

        return remove_server(rt, name)

    _sessions_command(ctx, shared, body)


# --- OAuth sign-in ---------------------------------------------------------------------------------------------------

auth_app = typer.Typer(
    help=(
        "Sign in to OAuth-protected HTTP servers once; mcpcli refreshes the tokens and uses them for calls "
        "and resumes.\n\n"
        "A call to a server that answers 401 signs in by itself when you are at a terminal."
    ),
    no_args_is_help=True,
)
app.add_typer(auth_app, name="auth")
AuthServer = Annotated[
    str | None,
    typer.Argument(help="URL or config name (default: -s / MCPCLI_SERVER / default_server).", metavar="SERVER"),
]
AUTH_OPTIONS: dict[str, tuple[Any, Any]] = {
    "server": (Server, None),
    "debug": (Debug, None),
    "verbose": (Verbose, None),
}


def _auth_command(
    ctx: typer.Context, given: str | None, values: dict[str, Any], body: Callable[[Runtime], int]
) -> None:
    _sessions_command(ctx, {**values, "server": given or values.get("server")}, body)


@auth_app.command("login")
@shared(AUTH_OPTIONS)
def auth_login(
    ctx: typer.Context,
    given: AuthServer = None,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the sign-in URL instead of opening a browser.")
    ] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Sign in to a server with OAuth (in your browser) and keep the tokens (0600 file, or the OS keyring).

    The browser comes back to a one-shot listener on 127.0.0.1, so sign in on this machine.
    $BROWSER is honoured as Python's webbrowser reads it.

    Example: mcpcli auth login https://mcp.example.com/mcp
    """

    def body(rt: Runtime) -> int:
        from mcpcli.auth.commands import login

        return run_async(lambda: login(rt, open_browser=not no_browser)) or 0

    _auth_command(ctx, given, shared, body)


@auth_app.command("status")
@shared({**AUTH_OPTIONS, "json": (Json, False)})
def auth_status(ctx: typer.Context, given: AuthServer = None, *, shared: dict[str, Any]) -> None:
    """List stored OAuth logins: state, expiry, scope, client — never the tokens."""

    def body(rt: Runtime) -> int:
        from mcpcli.auth.commands import status

        return status(rt, server_given=bool(given or shared.get("server")))

    _auth_command(ctx, given, shared, body)


@auth_app.command("logout")
@shared(AUTH_OPTIONS)
def auth_logout(ctx: typer.Context, given: AuthServer = None, *, shared: dict[str, Any]) -> None:
    """Forget a server's tokens and client registration on this machine."""

    def body(rt: Runtime) -> int:
        from mcpcli.auth.commands import logout

        return logout(rt)

    _auth_command(ctx, given, shared, body)


@app.command()
def paths(ctx: typer.Context, json: Json = False) -> None:
    """Print where the config, the named servers, the session store, logs, tokens and caches live."""

    def body() -> int:
        from mcpcli.config import Paths
        from mcpcli.servers import project_file

        p = Paths.from_env()
        project = project_file()
        where = {
            "config": str(p.config_file),
            "servers": str(p.servers_file),
            **({"project": str(project)} if project.is_file() else {}),
            "state": str(p.state_dir),
            "store": str(p.store_file),
            "logs": str(p.log_dir),
            "tokens": str(p.token_dir),
            "keys": str(p.store_key_file.parent),
            "cache": str(p.cache_dir),
        }
        if json:
            import json as j

            sys.stdout.write(j.dumps(where, indent=2) + "\n")
        else:
            sys.stdout.write("".join(f"{k:<8} {v}\n" for k, v in where.items()))
        return 0

    _run(body, ctx.obj.debug)


@app.command("_refresh-cache", hidden=True)
def refresh_cache(target: Annotated[str | None, typer.Argument()] = None) -> None:
    """Rewrite shell completion's cached tool and prompt lists of TARGET (started by completion, prints nothing)."""
    from mcpcli.listcache import refresh

    raise typer.Exit(refresh(target))


def main() -> None:
    """Console-script entry point."""
    try:
        if os.environ.get("_MCPCLI_COMPLETE"):  # the shell asks what TAB offers (Typer's protocol)
            from mcpcli.completion import answer_shell

            answer_shell(app)
        app()
    except KeyboardInterrupt:  # interrupted outside a command body (e.g. while parsing)
        sys.stderr.write("\nInterrupted.\n")
        sys.exit(int(ExitCode.INTERRUPTED))
