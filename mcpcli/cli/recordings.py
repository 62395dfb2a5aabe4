"""``mcpcli replay`` and ``mcpcli mock``: a recording (``--record FILE``) run again as a regression check, or served
as an MCP server (the bodies: ``commands.replay``, ``commands.mock``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcpcli.cli.app import app, global_values, run_guarded
from mcpcli.cli.options import CONNECTION, STORE, Json, shared
from mcpcli.commands.runtime import Globals, Runtime, run_async

RecordingFile = Annotated[
    str, typer.Argument(help="A recording: what --record wrote, or 'sessions show ID --trace --json'.", metavar="FILE")
]
MaxMb = Annotated[
    float | None,
    typer.Option(
        "--max-mb", min=0.001, metavar="MB", help="Refuse a recording larger than this (default 8).", show_default=False
    ),
]


@app.command()
@shared(CONNECTION, STORE, {"json": (Json, False)})
def replay(
    ctx: typer.Context,
    file: RecordingFile,
    answer: Annotated[
        list[str] | None,
        typer.Option(
            "--answer",
            "-A",
            metavar="FIELD=VALUE",
            help="A value for an answer the recording hides ([secret]): FIELD=VALUE or REQUEST_KEY.FIELD=VALUE.",
            show_default=False,
        ),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore",
            metavar="POINTER",
            help="Also ignore this JSON pointer in every compared message, e.g. /result/content/0/text (repeatable).",
            show_default=False,
        ),
    ] = None,
    trust_server: Annotated[
        bool,
        typer.Option("--trust-server", help="Run the recording's server command line without asking (check it first)."),
    ] = False,
    no_input: Annotated[
        bool, typer.Option("--no-input", help="Never prompt (a hidden answer not given: exit 3).")
    ] = False,
    max_mb: MaxMb = None,
    *,
    shared: dict[str, Any],
) -> None:
    """Run a recording again against a server and compare what it answers, round by round.

    Every listing and flow of FILE is sent again (to -s TARGET, default the recorded server), each round answered
    from the recording; the questions, results, isError and the number of rounds must match. Ignored: JSON-RPC
    ids, requestState, progress tokens, timestamps and session ids in _meta, and each --ignore POINTER.

    \b
    Exit: 0 equal · 1 different (the first differing round: expected vs got) · 2 a malformed recording (nothing
    sent) · 3 a hidden answer with nobody to give it · 4 the server cannot be reached.
    Example: mcpcli --record flow.ndjson call provision -a name=a -A region=eu-west-1; mcpcli replay flow.ndjson
    """
    g: Globals = ctx.obj.merged(**global_values(shared))
    json_out = bool(shared["json"]) or g.json

    def body() -> int:
        from mcpcli.commands.replay import ReplayOptions
        from mcpcli.commands.replay import replay as run

        options = ReplayOptions(
            file, list(answer or []), list(ignore or []), trust_server=trust_server, max_mb=max_mb, no_input=no_input
        )
        rt = Runtime(g, json_out=json_out)
        try:
            return run_async(lambda: run(rt, options)) or 0
        finally:
            rt.close()

    run_guarded(body, g.debug, json=json_out)


@app.command()
def mock(
    files: Annotated[list[str], typer.Argument(help="One or more recordings, served together.", metavar="FILE")],
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
            show_default=False,
        ),
    ] = None,
    max_mb: MaxMb = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and SDK logs.")] = False,
) -> None:
    """Serve recordings as an MCP server, for any client: the recorded server's name, listings and flows.

    Each recorded call answers with the same rounds: a 2026-07-28 client gets them as input-required results
    (with a requestState of the mock's own), a pre-2026 client is asked over the back-channel. A retry must carry
    the recorded answers (a [secret] one matches any value); another answer, or a call the recordings do not
    have, is a JSON-RPC error naming the difference.

    \b
    Example: mcpcli mock flow.ndjson                       (stdio: -s "mcpcli mock flow.ndjson" in a client)
             mcpcli mock a.ndjson b.ndjson --http 127.0.0.1:8765
    """
    g = Globals(debug=debug)

    def body() -> int:
        from mcpcli.commands.mock import mock as run

        rt = Runtime(g)
        try:
            return run_async(lambda: run(rt, list(files), http=http, max_mb=max_mb)) or 0
        except KeyboardInterrupt:
            return 0
        finally:
            rt.close()

    run_guarded(body, debug)
