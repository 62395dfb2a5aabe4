"""``mcpcli sessions ...``: the store and the output only — no server, no SDK (``sessions list`` must start fast)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from mcpcli.cli.app import (
    global_values,
    local_command,
    sessions_app,
)
from mcpcli.cli.options import (
    SESSION_OPTIONS,
    STORE,
    Debug,
    SessionId,
    StatusOpt,
    Verbose,
    complete_servers,
    complete_sessions,
    shared,
)
from mcpcli.commands.runtime import Globals, Runtime

# --- sessions and paths ----------------------------------------------------------------------------------------------


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
        bool,
        typer.Option(
            "--waiting", help="The inbox: flows waiting for input (and interrupted ones), and what each waits for."
        ),
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many.")] = 50,
    *,
    shared: dict[str, Any],
) -> None:
    """List stored sessions, newest first: one line each (--json: everything).

    Example: mcpcli sessions list --waiting
    """
    from mcpcli.commands.listing import quick_list

    g: Globals = ctx.obj.merged(**global_values(shared))
    as_json = g.json or bool(shared.get("json"))
    code = quick_list(g, status, limit, server=server or g.server, waiting=waiting, json_out=as_json)
    if code is not None:
        raise typer.Exit(code)

    def body(rt: Runtime) -> int:
        from mcpcli.commands.sessions import list_sessions

        return list_sessions(rt, status, limit, server=server or rt.g.server, waiting=waiting)

    local_command(ctx, shared, body)


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

    Example: mcpcli sessions show 3f2a --trace
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.sessions import show_session, show_trace

        return show_trace(rt, session) if trace else show_session(rt, session, reveal=reveal)

    local_command(ctx, shared, body)


@sessions_app.command("rm")
@shared(STORE, SESSION_OPTIONS)
def sessions_rm(
    ctx: typer.Context,
    sessions: Annotated[
        list[str],
        typer.Argument(help="Session ids or unique prefixes.", metavar="ID", autocompletion=complete_sessions),
    ],
    *,
    shared: dict[str, Any],
) -> None:
    """Delete sessions and their rounds (all of them, or none when one is unknown).

    Example: mcpcli sessions rm 3f2a a1b2
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.sessions import remove_sessions

        return remove_sessions(rt, sessions)

    local_command(ctx, shared, body)


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
        from mcpcli.commands.sessions import prune_sessions

        return prune_sessions(rt, older_than, status)

    local_command(ctx, shared, body)


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
        from mcpcli.commands.bundle import export_session

        return export_session(rt, session, output, include_answers=include_answers)

    local_command(ctx, shared, body)


@sessions_app.command("import")
@shared(STORE, SESSION_OPTIONS)
def sessions_import(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Argument(help="A bundle file from 'sessions export', or - for stdin.", metavar="FILE")
    ],
    as_new: Annotated[
        bool,
        typer.Option("--as-new", help="Import it under a new session id (a copy of a session this store already has)."),
    ] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Add a session from a bundle to this store; then resume it here.

    A session whose id this store has already is refused (exit 2, nothing changed): import it --as-new, or remove
    the stored one first.

    Example: mcpcli sessions import flow.json && mcpcli resume 3f2a
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.bundle import import_session

        return import_session(rt, source, as_new=as_new)

    local_command(ctx, shared, body)
