"""Options shared by several commands, declared once (``CONNECTION``, ``STORE``, ``ANSWERS``...) and added to each
command's signature by ``shared``; the command receives them as one ``dict``."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

# --- options ---------------------------------------------------------------------------------------------------------


def _lazy(name: str) -> Callable[[typer.Context, str], list[Any]]:
    """A completion callback that imports ``mcpcli.cli.completion`` only when the shell asks (not at every start)."""

    def complete(ctx: typer.Context, incomplete: str) -> list[Any]:
        from mcpcli.cli import completion

        found: list[Any] = getattr(completion, name)(ctx, incomplete)
        return found

    return complete


complete_servers = _lazy("complete_servers")
complete_tools = _lazy("complete_tools")
complete_prompts = _lazy("complete_prompts")
complete_args = _lazy("complete_args")
complete_sessions = _lazy("complete_sessions")


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
TraceOpt = _opt(
    "--trace",
    help="Write every JSON-RPC message, redacted, as NDJSON to FILE (0600); '-': stdout (results then on stderr).",
    metavar="FILE",
)
RecordOpt = _opt(
    "--record",
    help="Write a recording of the run to FILE (0600): the --trace lines with bodies whole, the answers' sources"
    " and the connection; replay it with 'mcpcli replay FILE', serve it with 'mcpcli mock FILE'.",
    metavar="FILE",
)
LogLevel = _opt(
    "--log-level",
    help="Print the server's log messages at LEVEL and up:"
    " debug | info | notice | warning | error | critical | alert | emergency.",
    metavar="LEVEL",
)
KeepAlive = _opt(
    "--keep-alive",
    help="stdio: keep the server running between commands, in the background worker (mcpcli worker ps).",
    kind=bool | None,
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
    "record": (RecordOpt, None),
    "log_level": (LogLevel, None),
    "keep_alive": (KeepAlive, None),
}
"""Global options that may also follow the subcommand (the later value wins)."""

STORE: dict[str, tuple[Any, Any]] = {"store": (StoreOpt, None)}

WAIT_FOR_ANSWER_DEFAULT = 3600.0
"""How long a bare ``--wait-for-answer`` waits: an hour, so that nothing waits forever by default."""

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
    "ask": (
        _opt("--ask", help="A person or group who may answer (repeatable; the team inbox).", kind=Keys, metavar="NAME"),
        None,
    ),
    "no_self_answer": (
        Annotated[bool, typer.Option("--no-self-answer", help="Someone other than you must answer this flow.")],
        False,
    ),
    "wait_for_answer": (
        _opt(
            "--wait-for-answer",
            help="With nobody here to answer: wait for an answer from mcpcli answer, for up to SECONDS "
            f"(bare: {WAIT_FOR_ANSWER_DEFAULT:g}), then exit 3.",
            kind=float | None,
            metavar="[=SECONDS]",
        ),
        None,
    ),
    "json": (Json, False),
}


def shared(*groups: dict[str, tuple[Any, Any]]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add the options of ``groups`` to a command; it receives their values as ``shared: dict``."""
    options = {name: spec for group in groups for name, spec in group.items()}

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        """``command`` with the groups' options added to its signature (for Typer to read) after its own; called, they
        are taken out of the keyword arguments and handed over as ``shared``."""
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

StatusOpt = Annotated[
    str | None,
    typer.Option("--status", metavar="STATUS", help="Only sessions with this status.", show_default=False),
]
QUIET: dict[str, tuple[Any, Any]] = {"debug": (Debug, None), "verbose": (Verbose, None)}
