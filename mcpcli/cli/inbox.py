"""``mcpcli answer``, ``mcpcli inbox`` and ``mcpcli skill``: the team inbox — answering a flow apart from driving
it, seeing what waits for you (live with ``--watch``), and the contract an agent follows to hand a question to a
person. No server connection here: the store and the output only."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcpcli.cli.app import app, local_command
from mcpcli.cli.flows import flow_command
from mcpcli.cli.options import ANSWERS, SESSION_OPTIONS, STORE, SessionId, shared
from mcpcli.commands.runtime import Runtime

ANSWER_OPTIONS = {
    name: spec
    for name, spec in ANSWERS.items()
    if name in ("answer", "answers", "decline", "cancel", "accept", "accept_defaults", "no_input", "tui", "json")
}
"""What ``answer`` takes of the flow commands' answer options: the answers, not the flow's bounds or routing."""


@app.command()
@shared(STORE, ANSWER_OPTIONS)
def answer(ctx: typer.Context, session: SessionId, *, shared: dict[str, Any]) -> None:
    """Answer a flow that waits for you, without running it: the answers are checked and stored for its owner.

    Its owner's run sends them: at once when it waits (--wait-for-answer), else with their next resume. One answer
    wins a round: a second person is told who answered first. Sampling and roots stay the owner's to answer.
    --tui answers on the round's form in the full-screen app (as "a" does in mcpcli tui's sessions).
    Example: mcpcli answer 3f2a --answer confirm=true   ·   mcpcli answer 3f2a --tui   ·   mcpcli inbox
    """

    def job() -> Any:  # --tui: the round's form in the full-screen app, the same checks and the same write
        from mcpcli.commands.jobs import AnswerJob

        return AnswerJob(session)

    flow_command(ctx, shared, job)


@app.command()
@shared(STORE, SESSION_OPTIONS)
def inbox(
    ctx: typer.Context,
    everyone: Annotated[bool, typer.Option("--all", help="Every waiting flow, not only those for you.")] = False,
    watch: Annotated[
        bool, typer.Option("--watch", help="Stay: one line (--json: one object) per change, as it happens.")
    ] = False,
    count: Annotated[
        int | None, typer.Option("--count", min=1, metavar="N", help="With --watch: stop after N.")
    ] = None,
    seconds: Annotated[
        float | None, typer.Option("--for", min=0, metavar="SECONDS", help="With --watch: stop after SECONDS.")
    ] = None,
    *,
    shared: dict[str, Any],
) -> None:
    """The flows waiting for you or your groups: how long each has waited, what it asks first, who asked.

    Whom a flow asks comes from --ask and [inbox] routes; who you are from [user] name (or MCPCLI_USER).
    --watch follows the store live (PostgreSQL: LISTEN/NOTIFY; SQLite: the file), across machines that share it.
    Example: mcpcli inbox   ·   mcpcli inbox --watch --json   ·   mcpcli answer ID (answer one)
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.inbox import list_inbox, watch_inbox

        if watch:
            return watch_inbox(rt, everyone=everyone, count=count, seconds=seconds)
        if count is not None or seconds is not None:
            from mcpcli.errors import UsageError

            raise UsageError("--count and --for go with --watch.", hint="Add --watch, or drop them.")
        return list_inbox(rt, everyone=everyone)

    local_command(ctx, shared, body)


@app.command()
def skill() -> None:
    """Print the agent skill (SKILL.md): how an agent drives mcpcli and hands a question to a person.

    Save it where your agent reads skills, e.g. mcpcli skill > ~/.claude/skills/mcpcli/SKILL.md
    Example: mcpcli skill
    """
    import sys
    from importlib.resources import files

    sys.stdout.write(files("mcpcli").joinpath("SKILL.md").read_text(encoding="utf-8"))
