"""The full-screen app's flows (``--tui``, ``mcpcli tui``): ``drive`` runs the flow ``run_call``/``run_resume``
would, built for the app's seat, and returns what to show instead of printing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from mcp import Client

from mcpcli.commands.connecting import tui_target
from mcpcli.commands.discovery import input_schema, keep_listing, prompt_schema
from mcpcli.commands.flows import Seat, build_flow, drive_connected
from mcpcli.commands.resume import resume_target
from mcpcli.engine.arguments import build_arguments
from mcpcli.engine.flow import Flow
from mcpcli.engine.steps import Call, Method, Outcome
from mcpcli.errors import ExitCode
from mcpcli.net.connection import Protocol
from mcpcli.net.tasks import task_support
from mcpcli.settings import trust
from mcpcli.settings.targets import connection_settings
from mcpcli.state.keeper import Finished

if TYPE_CHECKING:
    from mcpcli.commands.apps import AppOptions, AppSeat
    from mcpcli.runtime import AnswerOptions, Runtime


@dataclass(frozen=True)
class CallJob:
    """A flow to start in the app: what ``call``/``prompt``/``read`` would send."""

    method: Method
    name: str
    pairs: tuple[str, ...] = ()
    """``--arg KEY=VALUE`` pairs, typed by the tool's schema."""
    args: str | None = None
    """``--args JSON|@FILE|-``."""
    arguments: dict[str, Any] | None = None
    """Already typed (the start screen's form): sent as they are."""
    app: AppOptions | None = None
    """A tool call with its view (``call TOOL --app``, the start screen's key): ``drive_app`` runs it."""


@dataclass(frozen=True)
class ResumeJob:
    """A stored flow to continue in the app."""

    session_id: str
    steal: bool = False
    trust_server: bool = False
    """``--trust-server``: run the session's stored command line without asking."""
    wait: float = 0.0
    """``--wait``: seconds to wait for another driver to give the session up."""


async def drive(
    rt: Runtime,
    opts: AnswerOptions,
    flows: list[Flow],
    job: CallJob | ResumeJob,
    *,
    seat: Seat,
) -> Outcome:
    """The app's core coroutine: the flow ``run_call``/``run_resume`` drive, built for the app's ``seat`` (its
    answer source, reporter and sampling approver).

    Returns the outcome for the app to show instead of rendering it; errors (``NeedInput``, ``McpcliError``)
    propagate to the app, which shows them or exits with their code.
    """
    record = None
    if isinstance(job, ResumeJob):
        record = rt.store.get(job.session_id)
        if record.status == "done" and record.result is not None:
            return Outcome(record.result, record, ExitCode(record.exit_code or 0))
        target, protocol = resume_target(rt, record, trust_server=job.trust_server, ask=None)
    else:
        target, note = tui_target(rt)
        protocol = cast("Protocol | None", rt.protocol())
        if note:
            seat.reporter.note(note)
        trust.remember(rt.paths, target)
    rt.store.check_writable()
    server = record.server if record is not None else target.label
    connection = connection_settings(target, protocol or target.protocol or "auto")
    flow = build_flow(rt, opts, seat, server, flows, connection=connection)

    async def body(client: Client) -> Outcome:
        if isinstance(job, ResumeJob):
            return await flow.resume()
        if job.arguments is not None:
            arguments = job.arguments
        elif job.method == "tools/call":
            seen: dict[str, Any] = {}
            schema = await input_schema(client, job.name, keep_listing(rt, target, client, "tools"), seen)
            arguments = build_arguments(schema, list(job.pairs), job.args)
            flow.as_task = task_support(client, seen.get("execution"), False)
        elif job.method == "prompts/get":
            schema = await prompt_schema(client, job.name, list(job.pairs), keep_listing(rt, target, client, "prompts"))
            arguments = build_arguments(schema, list(job.pairs), None, what="prompt")
        else:
            arguments = {}
        return await flow.start(Call(job.method, job.name, arguments))

    async with flow.keeper.running():  # the lease, and its heartbeat, from the claim until after the connection
        if record is not None:
            try:
                resuming = job if isinstance(job, ResumeJob) else None
                await flow.adopt(record, steal=bool(resuming and resuming.steal), wait=resuming.wait if resuming else 0)
            except Finished as done:
                return Outcome(done.session.result or {}, done.session, ExitCode(done.session.exit_code or 0))
        return await drive_connected(rt, opts, flow, target, protocol, body)


async def drive_app(rt: Runtime, opts: AnswerOptions, flows: list[Flow], job: CallJob, where: AppSeat) -> int:
    """A tool call with its view, in the app: ``call TOOL --app``'s body with the app's seat, events and consent
    (``where``); it lasts while the view is open. Its exit code; errors propagate as ``drive``'s do."""
    from mcpcli.commands.apps import AppOptions, run_app_call

    target, note = tui_target(rt)
    if note:
        where.seat.reporter.note(note)
    app = job.app or AppOptions()
    pairs = list(job.pairs)
    return await run_app_call(
        rt, opts, flows, job.name, pairs, job.args, app, where=where, target=target, given=job.arguments
    )
