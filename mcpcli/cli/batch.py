"""``mcpcli batch``: many tool-call flows in one process over one connection (the body: ``commands.batch``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpcli.cli.app import app, global_values, run_guarded
from mcpcli.cli.flows import answer_options
from mcpcli.cli.options import ANSWERS, CONNECTION, STORE, shared
from mcpcli.commands.runtime import Globals, Runtime, StopSignals, run_async, until_stopped

if TYPE_CHECKING:
    from mcpcli.engine.flow import Flow

BATCH_ANSWERS = {name: spec for name, spec in ANSWERS.items() if name != "tui"}
"""``call``'s answer options but ``--tui``; ``--no-input`` and ``--json`` are accepted and change nothing (a batch
never prompts, and its stdout is always JSON Lines)."""


@app.command()
@shared(CONNECTION, STORE, BATCH_ANSWERS)
def batch(
    ctx: typer.Context,
    file: Annotated[
        str | None,
        typer.Argument(help="JSON Lines, one flow a line; - or omitted: stdin.", metavar="FILE", show_default=False),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option("--jobs", "-j", min=1, max=256, metavar="N", help="Flows running at once (1..256)."),
    ] = 8,
    *,
    shared: dict[str, Any],
) -> None:
    """Run many tool calls at once in one process, over one connection; one JSON line per flow on stdout.

    Each input line is one flow, a JSON object (blank lines and lines starting with # are skipped):

    \b
      {"tool": "provision", "arguments": {"name": "a"}, "answers": {"region": "eu-west-1"}, "id": 1}

    "tool" is required; "arguments" are sent as given (JSON-typed); "answers" (the --answers file format) are laid
    over the --answer/--answers/... options for that line (the line wins); "id" is any JSON value, echoed back.
    The whole input is checked before anything is sent (at most 10,000 flows, 1 MiB a line, 64 MiB in all): a bad
    line exits 2 naming it. An unknown tool fails only its own line (exit 2).

    Nobody is prompted (as --no-input): a question no preset answers saves that flow's session (exit 3 in its
    line) and the others go on. Each finished flow prints, in the order they finish:

    \b
      {"line": 1, "id": 1, "exit": 0, "status": "done", "session_id": "…", "result": {…}}

    status is done (exit 0), tool_error (1, with "result"), input_required (3, with "needs": the pending requests
    and an answers template) or failed (2, 4…, with "error"); a "warning" names what a pre-2026 server asked
    mid-call and finished without. stderr ends with a summary line. Exit code: 0 when
    every flow exited 0, else the highest exit code of a flow; 130 on Ctrl-C (running flows keep their sessions).

    \b
    Example: mcpcli batch flows.jsonl -s http://127.0.0.1:8000/mcp --jobs 32 --answer region=eu-west-1
    """
    g: Globals = ctx.obj.merged(**global_values(shared))

    def body() -> int:
        from mcpcli.commands.batch import interrupted, read_input, run_batch

        opts = answer_options(shared, no_input=True, json=True)
        lines = read_input(file, answers_file=opts.answers)  # all of it, checked, before anything is sent
        rt = Runtime(g, json_out=True)
        rt.json_lines = True
        flows: list[Flow] = []

        def stopped(stops: StopSignals) -> int:
            interrupted(rt, flows, stops.what())
            return stops.exit_code()

        return until_stopped(rt, lambda: run_async(lambda: run_batch(rt, opts, flows, lines, jobs=jobs)) or 0, stopped)

    run_guarded(body, g.debug, json=True, lines=True)
