"""The Typer app: its global options, the sub-command groups, and the one way every command body runs
(``guarded``: one line and an exit code for every failure)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, NoReturn

import typer

from mcpcli import __version__
from mcpcli.cli.helpfmt import Typer
from mcpcli.cli.options import (
    CONNECTION,
    STORE,
    Json,
    shared,
)
from mcpcli.commands.runtime import Globals, Runtime, Surroundings, guarded
from mcpcli.errors import ExitCode
from mcpcli.terminal.output import lenient_stdout

# --- the app ---------------------------------------------------------------------------------------------------------

app = Typer(
    name="mcpcli",
    help=(
        "Call MCP servers from a shell, and carry flows that need more than one round trip to the end.\n\n"
        "Try: mcpcli call provision --arg name=orders   (against the built-in demo server)\n\n"
        "Server commands are served by a background worker, warm from the third of a run (mcpcli worker status);"
        " --no-worker anywhere on the line runs one in this process."
    ),
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion; what TAB offers: mcpcli.completion
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
sessions_app = Typer(
    help="Stored flows: list, show, remove, prune, export and import them.\n\n"
    "Example: mcpcli sessions list --status waiting",
    no_args_is_help=True,
)
app.add_typer(sessions_app, name="sessions")
llm_app = Typer(
    help="LLM providers that answer sampling requests: list them, test one.\n\nExample: mcpcli llm test local",
    no_args_is_help=True,
)
app.add_typer(llm_app, name="llm")
keys_app = Typer(
    help="API keys of LLM providers (kept 0600 under the config dir).\n\n"
    "Example: mcpcli keys set claude < ~/anthropic.key",
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"mcpcli {__version__}\n")
        raise typer.Exit()


@app.callback()
@shared(CONNECTION, STORE, {"json": (Json, False)})
def _main(
    ctx: typer.Context,
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = None,
    *,
    shared: dict[str, Any],
) -> None:
    # What the command runs in: handed by its caller (``run_command``'s ``surroundings``), else the process's own.
    handed = ctx.obj if isinstance(ctx.obj, Surroundings) else Surroundings.of_process()
    ctx.obj = Globals(surroundings=handed).merged(**global_values(shared))


def global_values(values: dict[str, Any]) -> dict[str, Any]:
    """The global options among a command's values, named as ``Globals`` fields."""
    names = {"server", "protocol", "store", "debug", "verbose", "bearer", "trace", "record", "log_level", "keep_alive"}
    found = {k: v for k, v in values.items() if k in names}
    if values.get("header"):
        found["headers"] = list(values["header"])
    if values.get("json"):  # a flag: given before or after the subcommand, either one turns it on
        found["json"] = True
    return found


def run_guarded(body: Callable[[], int | None], debug: bool, *, json: bool = False, lines: bool = False) -> None:
    """Run a command body; ``json``: a failure is also a JSON object on stdout (README: errors as data), on one
    line when ``lines`` (the command's stdout is JSON Lines: ``STREAMS``)."""
    raise typer.Exit(int(guarded(body, debug, json=json, lines=lines)))


STREAMS = frozenset({"watch", "batch"})
"""Commands whose stdout is JSON Lines (``batch`` always, ``watch`` with ``--json``): their error document is one line,
as every other line they print. ``batch``'s stdout is JSON whether or not ``--json`` is given."""


def local_command(ctx: typer.Context, values: dict[str, Any], body: Callable[[Runtime], int]) -> None:
    """Run a command that needs no server connection of its own (sessions, llm, keys, servers, auth): a ``Runtime``,
    the body, the exit code."""
    g: Globals = ctx.obj.merged(**global_values(values))

    def run() -> int:
        rt = Runtime(g, json_out=values.get("json", False))
        try:
            return body(rt)
        finally:
            rt.close()

    run_guarded(run, g.debug, json=g.json or bool(values.get("json")))


def run_command(command: Any, argv: list[str], surroundings: Surroundings | None = None) -> NoReturn:
    """Run the command line and exit with its code — here and in the worker's child alike, in ``surroundings``
    (``None``: the process's own; the worker's rehearsal hands it others, and its streams are ``sys``'s for the
    length of the command only: ``Surroundings.process_wide``).

    With ``--json``, a command line Click cannot parse (an unknown option, a bad value) is also a JSON error
    document on stdout (the README's errors as data), as every other failure is: agents read stdout."""
    where = Surroundings.of_process() if surroundings is None else surroundings
    with where.process_wide():
        _run_command(command, argv, where)


def _run_command(command: Any, argv: list[str], surroundings: Surroundings) -> NoReturn:
    """``run_command`` with its streams in place."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    if words and words[0] == "resume" and "--wait" in words:  # --wait[=SECONDS]: the bare flag waits the default
        from mcpcli.state.keeper import WAIT_DEFAULT

        at = words.index("--wait")
        argv = [*argv[:at], f"--wait={WAIT_DEFAULT:g}", *argv[at + 1 :]]
        words = argv[: argv.index("--")] if "--" in argv else argv
    if (
        "--wait-for-answer" in words
    ):  # --wait-for-answer[=SECONDS], as git's optional values: the bare flag waits an hour
        from mcpcli.cli.options import WAIT_FOR_ANSWER_DEFAULT

        at = words.index("--wait-for-answer")
        argv = [*argv[:at], f"--wait-for-answer={WAIT_FOR_ANSWER_DEFAULT:g}", *argv[at + 1 :]]
        words = argv[: argv.index("--")] if "--" in argv else argv
    from mcpcli.warm import subcommand

    stream = subcommand(argv) in STREAMS
    if "--json" not in words and subcommand(argv) != "batch":
        command.main(args=argv, prog_name="mcpcli", obj=surroundings)  # Click's own handling: it exits
        raise SystemExit(0)
    try:
        code = command.main(args=argv, prog_name="mcpcli", standalone_mode=False, obj=surroundings)
    except typer.TyperException as exc:  # Click's errors (Typer's own copy of Click): what it would have shown
        if callable(show := getattr(exc, "show", None)):
            show()
        else:
            sys.stderr.write(f"Error: {exc.format_message()}\n")
        from mcpcli.display import json_text

        ctx = getattr(exc, "ctx", None)
        where = getattr(ctx, "command_path", None) or "mcpcli"
        error = {"message": exc.format_message(), "hint": f"See: {where} --help", "exit_code": exc.exit_code}
        sys.stdout.write(json_text({"error": error}, indent=None if stream else 2) + "\n")
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        sys.stderr.write("Aborted!\n")
        raise SystemExit(1) from None
    raise SystemExit(code if isinstance(code, int) else 0)


_WHOLE_TREE = frozenset({"-h", "--help", "--version", "--install-completion", "--show-completion"})
"""Options that show or act on the whole command tree (help lists every command)."""


def command_for(argv: list[str]) -> Any:
    """The Click command that runs ``argv``: for a plain ``mcpcli [GLOBALS] COMMAND …`` line, the root with that one
    command only — Typer converts every command's signature when it builds the tree, a cold ``call`` paid that
    for forty — else the whole tree. The one command parses, helps and fails exactly as in the whole tree."""
    from mcpcli.warm import subcommand

    name = subcommand(argv)
    whole = typer.main.get_command
    if name is None or any(word in _WHOLE_TREE for word in argv):
        return whole(app)
    chosen = [c for c in app.registered_commands if _name(c) == name]
    if len(chosen) != 1:
        return whole(app)  # a group (sessions, llm…), or no such command: Click says so with the whole tree
    import copy

    lean = copy.copy(app)
    lean.registered_commands, lean.registered_groups = chosen, []
    return whole(lean)


def _name(command: Any) -> str | None:
    """A registered command's name, as Typer gives it (the function's, dashed, unless named)."""
    if command.name:
        return str(command.name)
    return typer.main.get_command_name(command.callback.__name__) if command.callback else None


def main() -> None:
    """Console-script entry point."""
    lenient_stdout()
    try:
        if os.environ.get("_MCPCLI_COMPLETE"):  # the shell asks what TAB offers (Typer's protocol)
            from mcpcli.cli.completion import answer_shell

            answer_shell(app)
        run_command(command_for(sys.argv[1:]), sys.argv[1:])
    except KeyboardInterrupt:  # interrupted outside a command body (e.g. while parsing)
        sys.stderr.write("\nInterrupted.\n")
        sys.exit(int(ExitCode.INTERRUPTED))
