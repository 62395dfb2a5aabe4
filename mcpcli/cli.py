"""The command line: parse → build objects → ``anyio.run`` one core coroutine → render → exit code.

No protocol logic lives here. Heavy modules (``mcp``, the flow, the demo
server) are imported inside the commands that need them, so ``--help``,
``--version`` and ``sessions list`` start fast (a test checks ``sys.modules``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from mcpcli import __version__
from mcpcli.errors import ExitCode, McpcliError, UsageError

if TYPE_CHECKING:
    from mcpcli.config import Paths, Settings, Target
    from mcpcli.flow import Flow
    from mcpcli.output import Output
    from mcpcli.store import Store

# --- options shared by several commands ------------------------------------------------------------------------------

Server = Annotated[
    Optional[str],  # noqa: UP045 - typer reads the annotation at runtime
    typer.Option("-s", "--server", help="URL, config name, 'demo', or a stdio command line.", show_default=False),
]
Header = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("-H", "--header", help='HTTP header "Name: value" (repeatable).', show_default=False),
]
ProtocolOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--protocol", help="auto | legacy | 2026-07-28 (default auto).", show_default=False),
]
StoreOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--store", help="Session store URL (default: sqlite: under the state dir).", show_default=False),
]
Debug = Annotated[Optional[bool], typer.Option("--debug", help="Show tracebacks and SDK logs.", show_default=False)]  # noqa: UP045
Verbose = Annotated[Optional[bool], typer.Option("-v", "--verbose", help="Say more on stderr.", show_default=False)]  # noqa: UP045
Json = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]

Answer = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--answer", "-A", help="FIELD=VALUE or REQUEST_KEY.FIELD=VALUE (repeatable).", show_default=False),
]
AnswersFile = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--answers", help="JSON answers file, or - for stdin.", show_default=False),
]
Decline = Annotated[Optional[list[str]], typer.Option("--decline", help="Decline request KEY.", show_default=False)]  # noqa: UP045
Cancel = Annotated[Optional[list[str]], typer.Option("--cancel", help="Cancel request KEY.", show_default=False)]  # noqa: UP045
Accept = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--accept", help="Accept request KEY with defaults (or a visited URL).", show_default=False),
]
AcceptDefaults = Annotated[bool, typer.Option("--accept-defaults", help="Accept every form whose defaults suffice.")]
NoInput = Annotated[bool, typer.Option("--no-input", help="Never prompt: save the session and exit 3 instead.")]
Root = Annotated[
    Optional[list[Path]],  # noqa: UP045
    typer.Option(
        "--root", help="A root to offer the server (repeatable; default: the current directory).", show_default=False
    ),
]
MaxRounds = Annotated[int, typer.Option("--max-rounds", min=1, help="Input-required rounds to answer at most.")]
Timeout = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option("--timeout", min=0.0, help="Wall-clock seconds for the whole flow.", show_default=False),
]


@dataclass
class Globals:
    """Options given before the subcommand; the same options after it win."""

    server: str | None = None
    headers: list[str] = field(default_factory=list)
    protocol: str | None = None
    store: str | None = None
    debug: bool = False
    verbose: bool = False

    def merged(self, **after: Any) -> Globals:
        values = {k: v for k, v in after.items() if v not in (None, [])}
        if "headers" in values:
            values["headers"] = [*self.headers, *values["headers"]]
        return Globals(**{**self.__dict__, **values})


@dataclass
class AnswerOptions:
    answer: list[str]
    answers: str | None
    decline: list[str]
    cancel: list[str]
    accept: list[str]
    accept_defaults: bool
    no_input: bool
    roots: list[Path]
    max_rounds: int
    timeout: float | None
    json: bool


app = typer.Typer(
    name="mcpcli",
    help=(
        "Call MCP servers from a shell, and carry flows that need more than one round trip to the end.\n\n"
        "Try: mcpcli call provision --arg name=orders   (against the built-in demo server)"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
sessions_app = typer.Typer(help="Stored flows: list them (more subcommands to come).", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"mcpcli {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main(
    ctx: typer.Context,
    server: Server = None,
    header: Header = None,
    protocol: ProtocolOpt = None,
    store: StoreOpt = None,
    debug: Debug = None,
    verbose: Verbose = None,
    version: Annotated[
        Optional[bool],  # noqa: UP045
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    ctx.obj = Globals(server, list(header or []), protocol, store, bool(debug), bool(verbose))


# --- the runtime every command shares --------------------------------------------------------------------------------


class Runtime:
    """What a command needs, built lazily: paths, settings, store, output."""

    def __init__(self, g: Globals, *, json_out: bool = False) -> None:
        from mcpcli.config import Paths, load_settings
        from mcpcli.output import Output

        self.g = g
        self.json = json_out
        self.paths: Paths = Paths.from_env()
        self.settings: Settings = load_settings(self.paths)
        self.out: Output = Output(verbose=g.verbose)
        self._store: Store | None = None
        _configure_logging(self.paths, g.debug)

    @property
    def store(self) -> Store:
        if self._store is None:
            from mcpcli.store import open_store

            url = self.g.store or os.environ.get("MCPCLI_STORE") or self.settings.store
            self._store = open_store(url, self.paths.store_file)
        return self._store

    def target(self) -> Target:
        from mcpcli.config import parse_headers, resolve_target

        target, note = resolve_target(self.g.server, self.settings, headers=parse_headers(self.g.headers))
        if note:
            self.out.note(note)
        return target

    def protocol(self) -> Any:
        protocol = self.g.protocol or "auto"
        if protocol not in ("auto", "legacy", "2026-07-28"):
            raise UsageError(f"Unknown protocol {protocol!r}.", hint="Use --protocol auto, legacy or 2026-07-28.")
        return protocol

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def _configure_logging(paths: Paths, debug: bool) -> None:
    """SDK and server logs go to a private file; on stderr only with --debug."""
    import logging

    from mcpcli.config import private_dir

    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "mcpcli", False)]:  # a second run in one process
        root.removeHandler(old)
        old.close()
    private_dir(paths.log_dir)
    log_file = paths.log_dir / "mcpcli.log"
    os.close(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    handlers: list[logging.Handler] = [logging.FileHandler(log_file, encoding="utf-8")]
    handlers[0].setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if debug:
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in handlers:
        handler.mcpcli = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)


def _run(ctx: typer.Context, body: Callable[[], int | None], debug: bool) -> None:
    """Run a command body; map every expected failure to one line on stderr and its exit code."""
    code = int(_guarded(body, debug))
    raise typer.Exit(code)


def _guarded(body: Callable[[], int | None], debug: bool) -> int:
    from mcpcli.errors import print_error

    try:
        try:
            return body() or 0
        except BaseExceptionGroup as group:  # a task group wraps what a command body raised: unwrap a lone one
            raise _lone(group) from None
    except McpcliError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        print_error(exc)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("\nInterrupted.\n")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # boundary: a bug or an unforeseen failure still gets one line, not a traceback
        if debug:
            raise
        print_error(
            McpcliError(
                f"Unexpected {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                title="Internal error",
                hint="Run again with --debug for the traceback; stored sessions are unaffected.",
            )
        )
        return int(ExitCode.SERVER)


def _lone(group: BaseExceptionGroup[Any]) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _async(fn: Callable[[], Coroutine[Any, Any, int | None]]) -> int | None:
    import anyio

    return anyio.run(fn)


# --- discovery -------------------------------------------------------------------------------------------------------


def _discovery(ctx: typer.Context, what: str, json_out: bool, after: dict[str, Any]) -> None:
    g: Globals = ctx.obj.merged(**after)

    def body() -> int:
        from mcpcli.commands import discover

        rt = Runtime(g, json_out=json_out)
        return _async(lambda: discover(rt, what)) or 0

    _run(ctx, body, g.debug)


@app.command()
def tools(
    ctx: typer.Context,
    json: Json = False,
    server: Server = None,
    header: Header = None,
    protocol: ProtocolOpt = None,
    debug: Debug = None,
    verbose: Verbose = None,
) -> None:
    """List the server's tools and their arguments."""
    _discovery(ctx, "tools", json, dict(server=server, headers=header, protocol=protocol, debug=debug, verbose=verbose))


@app.command()
def prompts(
    ctx: typer.Context,
    json: Json = False,
    server: Server = None,
    header: Header = None,
    protocol: ProtocolOpt = None,
    debug: Debug = None,
    verbose: Verbose = None,
) -> None:
    """List the server's prompts."""
    _discovery(
        ctx, "prompts", json, dict(server=server, headers=header, protocol=protocol, debug=debug, verbose=verbose)
    )


@app.command()
def resources(
    ctx: typer.Context,
    json: Json = False,
    server: Server = None,
    header: Header = None,
    protocol: ProtocolOpt = None,
    debug: Debug = None,
    verbose: Verbose = None,
) -> None:
    """List the server's resources and resource templates."""
    _discovery(
        ctx, "resources", json, dict(server=server, headers=header, protocol=protocol, debug=debug, verbose=verbose)
    )


@app.command()
def info(
    ctx: typer.Context,
    json: Json = False,
    server: Server = None,
    header: Header = None,
    protocol: ProtocolOpt = None,
    debug: Debug = None,
    verbose: Verbose = None,
) -> None:
    """Show the server's name, version, negotiated protocol and capabilities."""
    _discovery(ctx, "info", json, dict(server=server, headers=header, protocol=protocol, debug=debug, verbose=verbose))


# --- flows -----------------------------------------------------------------------------------------------------------


def _flow_command(
    ctx: typer.Context,
    after: dict[str, Any],
    opts: AnswerOptions,
    start: Callable[[Runtime, AnswerOptions, list[Flow]], Coroutine[Any, Any, int]],
) -> None:
    g: Globals = ctx.obj.merged(**after)

    def body() -> int:
        rt = Runtime(g, json_out=opts.json)
        flows: list[Flow] = []
        try:
            return _async(lambda: start(rt, opts, flows)) or 0
        except BaseException as exc:
            # The connection's task groups wrap what the body raised; Ctrl-C may arrive inside a group.
            lone = _lone(exc) if isinstance(exc, BaseExceptionGroup) else exc
            if isinstance(lone, KeyboardInterrupt):
                from mcpcli.commands import interrupted

                interrupted(rt, flows)
                return int(ExitCode.INTERRUPTED)
            if lone is not exc:
                raise lone from None
            raise
        finally:
            rt.close()

    _run(ctx, body, g.debug)


def _answer_opts(
    answer: list[str] | None,
    answers: str | None,
    decline: list[str] | None,
    cancel: list[str] | None,
    accept: list[str] | None,
    accept_defaults: bool,
    no_input: bool,
    root: list[Path] | None,
    max_rounds: int,
    timeout: float | None,
    json: bool,
) -> AnswerOptions:
    return AnswerOptions(
        list(answer or []),
        answers,
        list(decline or []),
        list(cancel or []),
        list(accept or []),
        accept_defaults,
        no_input,
        list(root or []),
        max_rounds,
        timeout,
        json,
    )


@app.command()
def call(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(help="The tool to call.")],
    arg: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--arg", "-a", help="KEY=VALUE, typed by the tool's schema; KEY=@file reads a file.", show_default=False
        ),
    ] = None,
    args: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--args", help="All arguments as JSON, @FILE, or - for stdin.", show_default=False),
    ] = None,
    answer: Answer = None,
    answers: AnswersFile = None,
    decline: Decline = None,
    cancel: Cancel = None,
    accept: Accept = None,
    accept_defaults: AcceptDefaults = False,
    no_input: NoInput = False,
    root: Root = None,
    max_rounds: MaxRounds = 10,
    timeout: Timeout = None,
    json: Json = False,
    server: Server = None,
    header: Header = None,
    protocol: ProtocolOpt = None,
    store: StoreOpt = None,
    debug: Debug = None,
    verbose: Verbose = None,
) -> None:
    """Call a tool; answer what the server asks, round after round, until the result.

    Example: mcpcli call provision --arg name=orders --answer region=eu-west-1
    """
    from functools import partial

    opts = _answer_opts(
        answer, answers, decline, cancel, accept, accept_defaults, no_input, root, max_rounds, timeout, json
    )

    async def start(rt: Runtime, o: AnswerOptions, flows: list[Flow]) -> int:
        from mcpcli.commands import run_call

        return await run_call(rt, o, flows, "tools/call", tool, arg or [], args)

    _flow_command(
        ctx,
        dict(server=server, headers=header, protocol=protocol, store=store, debug=debug, verbose=verbose),
        opts,
        partial(start),
    )


@app.command()
def prompt(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The prompt to get.")],
    arg: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--arg", "-a", help="KEY=VALUE (prompt arguments are strings).", show_default=False),
    ] = None,
    answer: Answer = None,
    answers: AnswersFile = None,
    decline: Decline = None,
    cancel: Cancel = None,
    accept: Accept = None,
    accept_defaults: AcceptDefaults = False,
    no_input: NoInput = False,
    root: Root = None,
    max_rounds: MaxRounds = 10,
    timeout: Timeout = None,
    json: Json = False,
    server: Server = None,
    header: Header = None,
    protocol: ProtocolOpt = None,
    store: StoreOpt = None,
    debug: Debug = None,
    verbose: Verbose = None,
) -> None:
    """Get a prompt, answering what the server asks."""
    opts = _answer_opts(
        answer, answers, decline, cancel, accept, accept_defaults, no_input, root, max_rounds, timeout, json
    )

    async def start(rt: Runtime, o: AnswerOptions, flows: list[Flow]) -> int:
        from mcpcli.commands import run_call

        return await run_call(rt, o, flows, "prompts/get", name, arg or [], None)

    _flow_command(
        ctx,
        dict(server=server, headers=header, protocol=protocol, store=store, debug=debug, verbose=verbose),
        opts,
        start,
    )


@app.command()
def read(
    ctx: typer.Context,
    uri: Annotated[str, typer.Argument(help="The resource URI (a template's URI filled in).")],
    answer: Answer = None,
    answers: AnswersFile = None,
    decline: Decline = None,
    cancel: Cancel = None,
    accept: Accept = None,
    accept_defaults: AcceptDefaults = False,
    no_input: NoInput = False,
    root: Root = None,
    max_rounds: MaxRounds = 10,
    timeout: Timeout = None,
    json: Json = False,
    server: Server = None,
    header: Header = None,
    protocol: ProtocolOpt = None,
    store: StoreOpt = None,
    debug: Debug = None,
    verbose: Verbose = None,
) -> None:
    """Read a resource, answering what the server asks."""
    opts = _answer_opts(
        answer, answers, decline, cancel, accept, accept_defaults, no_input, root, max_rounds, timeout, json
    )

    async def start(rt: Runtime, o: AnswerOptions, flows: list[Flow]) -> int:
        from mcpcli.commands import run_call

        return await run_call(rt, o, flows, "resources/read", uri, [], None)

    _flow_command(
        ctx,
        dict(server=server, headers=header, protocol=protocol, store=store, debug=debug, verbose=verbose),
        opts,
        start,
    )


@app.command()
def resume(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id, or a unique prefix of at least 4 characters.")],
    answer: Answer = None,
    answers: AnswersFile = None,
    decline: Decline = None,
    cancel: Cancel = None,
    accept: Accept = None,
    accept_defaults: AcceptDefaults = False,
    no_input: NoInput = False,
    root: Root = None,
    max_rounds: MaxRounds = 10,
    timeout: Timeout = None,
    json: Json = False,
    server: Server = None,
    header: Header = None,
    protocol: ProtocolOpt = None,
    store: StoreOpt = None,
    debug: Debug = None,
    verbose: Verbose = None,
) -> None:
    """Continue a saved flow: answer what is pending and retry with the stored state.

    Example: mcpcli resume 3f2a --answer region=eu-west-1
    """
    opts = _answer_opts(
        answer, answers, decline, cancel, accept, accept_defaults, no_input, root, max_rounds, timeout, json
    )

    async def start(rt: Runtime, o: AnswerOptions, flows: list[Flow]) -> int:
        from mcpcli.commands import run_resume

        return await run_resume(rt, o, flows, session)

    _flow_command(
        ctx,
        dict(server=server, headers=header, protocol=protocol, store=store, debug=debug, verbose=verbose),
        opts,
        start,
    )


# --- sessions and paths ----------------------------------------------------------------------------------------------


@sessions_app.command("list")
def sessions_list(
    ctx: typer.Context,
    status: Annotated[Optional[str], typer.Option("--status", help="Only this status.", show_default=False)] = None,  # noqa: UP045
    json: Json = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many.")] = 50,
    store: StoreOpt = None,
    debug: Debug = None,
    verbose: Verbose = None,
) -> None:
    """List stored sessions, newest first."""
    g: Globals = ctx.obj.merged(store=store, debug=debug, verbose=verbose)

    def body() -> int:
        from mcpcli.session_views import list_sessions

        rt = Runtime(g, json_out=json)
        try:
            return list_sessions(rt, status, limit)
        finally:
            rt.close()

    _run(ctx, body, g.debug)


@app.command()
def paths(ctx: typer.Context, json: Json = False) -> None:
    """Print where the config, the session store and the logs live."""
    g: Globals = ctx.obj

    def body() -> int:
        from mcpcli.config import Paths

        p = Paths.from_env()
        where = {
            "config": str(p.config_file),
            "store": str(p.store_file),
            "logs": str(p.log_dir),
            "state": str(p.state_dir),
        }
        if json:
            import json as j

            sys.stdout.write(j.dumps(where, indent=2) + "\n")
        else:
            sys.stdout.write("".join(f"{k:<7} {v}\n" for k, v in where.items()))
        return 0

    _run(ctx, body, g.debug)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:  # interrupted outside a command body (e.g. while parsing)
        sys.stderr.write("\nInterrupted.\n")
        sys.exit(int(ExitCode.INTERRUPTED))
