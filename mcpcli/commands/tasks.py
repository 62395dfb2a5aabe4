"""Command bodies for tasks: how a task left running or cancelled is shown, which sessions can be cancelled, and
Ctrl-C's "detach or cancel?" — the task itself is driven by the core (``mcpcli.engine.taskflow``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from mcpcli.commands.runtime import AnswerOptions, Runtime
    from mcpcli.engine.flow import Flow
    from mcpcli.engine.steps import Outcome
    from mcpcli.state.store import SessionRecord


def check_cancellable(record: SessionRecord) -> None:
    """Only a task can be cancelled, and only while it has not ended."""
    if record.task is None:
        raise UsageError(f"Session {record.id} is not a task; there is nothing to cancel.", hint=None)
    if record.status in ("done", "failed", "expired"):
        raise UsageError(
            f"Session {record.id}'s task already ended ({record.status}); there is nothing to cancel.",
            hint=f"See it with: mcpcli sessions show {record.id}",
        )


def render_task(rt: Runtime, outcome: Outcome) -> int:
    """A task left running (``--detach``): its session id on stdout, to resume it with (``--json``: a document
    saying so); a task cancelled at the user's request: a line saying the cancellation was sent."""
    session = outcome.session
    assert session is not None and session.task is not None
    from mcpcli.display import short_id

    task_id = short_id(str(session.task.get("id")))
    if outcome.cancelled:
        if rt.json:
            rt.out.json({"status": "cancelled", "session_id": session.id, "task_id": session.task.get("id")})
        rt.out.note(f"Task {task_id} of session {session.id}: cancellation sent (the server decides when it stops).")
        return int(outcome.exit_code)
    if rt.json:
        rt.out.json({"status": "detached", "session_id": session.id, "task_id": session.task.get("id")})
    else:
        rt.out.note(
            f"Task {task_id} keeps running on the server. Continue it with: mcpcli resume {session.id}"
            f" (or cancel it: mcpcli resume {session.id} --cancel-task)"
        )
        rt.out.line(session.id)
    return int(outcome.exit_code)


RUNNING_TASK = ("working", "input_required")


def task_left_running(flows: list[Flow]) -> SessionRecord | None:
    """After Ctrl-C: the session of a flow whose call runs as a task the server still works on, if any."""
    for flow in flows:
        session = flow.session
        if session is None or not flow.keeper.saved or session.task is None:
            continue
        if session.status not in ("done", "failed", "expired") and session.task.get("status") in RUNNING_TASK:
            return session
    return None


def offer_task_cancel(rt: Runtime, opts: AnswerOptions, flows: list[Flow]) -> bool:
    """Ctrl-C at a terminal while a task runs: ask whether to detach (leave it running) or cancel it; True when
    the user chose to cancel (the caller then runs ``cancel_task_of``)."""
    session = task_left_running(flows)
    from mcpcli.commands.seat import at_terminal

    if session is None or opts.json or opts.no_input or not at_terminal():
        return False
    from mcpcli.terminal.inline import Terminal, detach_or_cancel

    assert session.task is not None
    return detach_or_cancel(Terminal(rt.out.err), str(session.task.get("id")))
