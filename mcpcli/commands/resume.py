"""Command body for ``resume``: a stored session picked up again — its server found (``-s``, or the session's own,
reconnected the way the flow was; a command line that came from the session runs only once trusted), its lease
taken, its flow resumed or its task cancelled. The steps it shares with ``call`` (the seat, building, connecting
and rendering a flow) are ``mcpcli.commands.flows``'."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from mcp import Client

from mcpcli.commands.flows import build_flow, connect_and_run, drive_connected, render, terminal_seat
from mcpcli.commands.tasks import check_cancellable, task_left_running
from mcpcli.display import sanitize
from mcpcli.engine import taskflow
from mcpcli.engine.steps import Outcome, is_legacy
from mcpcli.errors import ExitCode, UsageError, UserStopped
from mcpcli.settings import trust
from mcpcli.settings.targets import connection_settings
from mcpcli.state.keeper import Finished

if TYPE_CHECKING:
    from mcpcli.commands.apps import AppOptions
    from mcpcli.engine.flow import Flow
    from mcpcli.net.connection import Protocol
    from mcpcli.runtime import AnswerOptions, Runtime
    from mcpcli.settings.targets import Target
    from mcpcli.state.store import SessionRecord
    from mcpcli.terminal.inline import Terminal


async def run_resume(
    rt: Runtime,
    opts: AnswerOptions,
    flows: list[Flow],
    session_id: str,
    *,
    steal: bool = False,
    trust_server: bool = False,
    cancel: bool = False,
    wait: float = 0.0,
    app: AppOptions | None = None,
) -> int:
    record = rt.store.get(session_id)
    if cancel:
        check_cancellable(record)
    elif record.status == "done" and record.result is not None:
        rt.out.note(f"Session {record.id} already finished; here is its result again.")
        return render(rt, record.method, Outcome(record.result, record, ExitCode(record.exit_code or 0)))
    seat = terminal_seat(rt, opts)
    target, protocol = resume_target(rt, record, trust_server=trust_server, ask=seat.terminal)
    rt.store.check_writable()
    connection = connection_settings(target, protocol or target.protocol or "auto")
    flow = build_flow(rt, opts, seat, record.server, flows, connection=connection)

    async def run(client: Client) -> Outcome:
        if cancel:
            return await taskflow.cancel(flow)
        return await flow.resume()

    # The lease is claimed, and heart-beaten, from before connecting until after the connection is closed.
    async with flow.keeper.running():
        try:
            # Before connecting: a loser of a race starts and sends nothing.
            await flow.adopt(record, steal=steal, wait=wait)
        except Finished as done:
            finished = done.session
            rt.out.note(f"Session {finished.id} was finished by another run meanwhile; here is its result.")
            outcome = Outcome(finished.result or {}, finished, ExitCode(finished.exit_code or 0))
            return render(rt, finished.method, outcome)
        if app is not None:
            from mcpcli.commands.apps import app_resume

            return await drive_connected(rt, opts, flow, target, protocol, app_resume(rt, opts, flows, flow, app))
        return await connect_and_run(rt, opts, flow, target, run, protocol=protocol)


def resume_protocol(rt: Runtime, record: SessionRecord) -> Protocol | None:
    """``--protocol`` when given; else the era the flow ran in (a 2025-11-25 flow reconnects as legacy), else what
    the flow asked for when it started (``None``: as any connection to that target would)."""
    if rt.g.protocol:
        return cast("Protocol", rt.g.protocol)
    if is_legacy(record.protocol_version):
        return "legacy"
    asked = (record.connection or {}).get("protocol")
    return cast("Protocol", asked) if asked in ("legacy", "2026-07-28") else None


def resume_target(
    rt: Runtime, record: SessionRecord, *, trust_server: bool, ask: Terminal | None
) -> tuple[Target, Protocol | None]:
    """The server a resume connects to, and how: ``-s`` when given, else the session's own, reconnected the way
    the flow was; a command line that came from the session (not from the user) runs only once trusted."""
    from mcpcli.settings.servers import ServerTable
    from mcpcli.settings.targets import parse_headers, resolve_target

    given = rt.g.server
    servers = ServerTable(rt.paths, rt.settings)
    target, _note = resolve_target(
        given or record.server, rt.settings, headers=parse_headers(rt.g.headers), servers=servers
    )
    target = rt.kept(target)
    if given:
        trust.remember(rt.paths, target)
    elif not trust.is_trusted(rt.paths, target):
        confirm_stored_command(
            rt,
            target,
            trust_server=trust_server,
            ask=ask,
            what="session",
            named=f"Session {record.id}",
            hint=f"Check it; run it only if you trust it: mcpcli resume {record.id} --trust-server",
        )
    stored = (record.connection or {}).get("headers") or []
    sent = {name.lower() for name in target.headers}
    if missing := [name for name in stored if isinstance(name, str) and name.lower() not in sent]:
        rt.out.note(
            f"This flow was connected with the {'header' if len(missing) == 1 else 'headers'}"
            f" {', '.join(sanitize(m) for m in missing)}, which this run"
            " does not send (their values are never stored); add them with -H 'Name: value' if the server needs them."
        )
    return target, resume_protocol(rt, record)


def confirm_stored_command(
    rt: Runtime, target: Target, *, trust_server: bool, ask: Terminal | None, what: str, named: str, hint: str
) -> None:
    """A command line that did not come from the user (a stored session's, a recording's: ``what``, ``named`` so in
    the error) runs only after the user confirms the exact command, or with ``--trust-server``; either is
    remembered."""
    import shlex

    command = shlex.join([target.command or "", *target.args])
    if trust_server:
        trust.remember(rt.paths, target)
        return
    if ask is None:
        raise UsageError(
            f"{named} starts its server with a command line that did not come from you or your config:"
            f" {sanitize(command)}",
            hint=hint,
        )
    from mcpcli.terminal.inline import confirm_command

    if not confirm_command(ask, sanitize(command), cwd=target.cwd, holder=f"This {what}"):
        raise UserStopped(f"The {what}'s server command was not run; nothing was sent.", hint=None)
    trust.remember(rt.paths, target)


async def cancel_task_of(rt: Runtime, opts: AnswerOptions, flows: list[Flow]) -> int:
    """Cancel the task of the interrupted flow (its lease was given back as the run stopped)."""
    session = task_left_running(flows)
    assert session is not None
    return await run_resume(rt, opts, [], session.id, cancel=True)
