"""Driving a task to its end: poll ``tasks/get``, answer its input requests, durably — for ``Flow``.

A ``tools/call`` the server answers with a task handle (``tasks.CreateTaskResult``) is saved at once (the session
is created then, holding the lease, when no round created it yet), then polled at the server's suggested interval,
backing off while nothing changes, within the flow's ``--timeout``. The session is written only when something
changed (status or status message, an answer acknowledged), never per poll.

Input while the task runs (``input_required``) is answered by the flow's own sources, as any round: each request
is recorded as a round of the session and its answers committed before ``tasks/update`` carries them; a key the
server acknowledged is remembered (``TaskState.delivered``) and never sent again. A run that died between the
commit and the acknowledgement finds out on resume from the server itself: a key still outstanding was not
received (send the stored answers), a key no longer asked for was (send nothing).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT

from mcpcli.display import short_id
from mcpcli.engine.steps import FlowSteps, LimitReached, NeedInput, Outcome, for_server, innermost
from mcpcli.errors import ExitCode, McpcliError, NextStep, rpc_error
from mcpcli.net.tasks import (
    LEGACY,
    POLL_FLOOR,
    TERMINAL,
    CreateTaskResult,
    DetailedTask,
    TaskState,
    get_task,
    next_delay,
    streamed_delay,
    task_result,
    update_task,
)

if TYPE_CHECKING:
    from mcpcli.net.taskfeed import TaskFeed


class TaskEnded(McpcliError):
    """The task ended without a result: it failed, was cancelled, or expired on the server (exit 4, never 0)."""

    exit_code = ExitCode.SERVER
    default_title = "Task ended"


class TaskGone(Exception):
    """The server answers that it has no such task, and its ttl has not run out: it lost it (a stdio server's tasks
    end with its process; a restarted server forgets its tasks). Not an error of its own: a resume starts the call
    over, a live call says so (``start``)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why

    def said(self, state: TaskState) -> str:
        return (
            f"Task {short_id(state.id)} is not found on the server, which no longer has it (a stdio server's tasks"
            f" end with its process). The server said: {self.why}."
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def start(flow: FlowSteps, created: CreateTaskResult) -> Outcome:
    """The call became a task: save it before anything else is sent, then drive it (or leave it, ``--detach``)."""
    state = TaskState.created(created, _now())
    flow.session_record()
    await flow.keeper.save_task(state.dump())
    assert flow.session is not None
    flow.event("task", session=flow.session.id, task=state.id, status=state.status)
    _say(flow, state)
    if flow.detach:
        await flow.keeper.update(status="waiting", task=state.dump())
        return Outcome(result={}, session=flow.session, exit_code=ExitCode.OK, detached=True)
    try:
        return await _drive(flow, state)
    except TaskGone as gone:  # lost under this very run: kept waiting, so that a resume starts the call over
        message = f"{gone.said(state)} A resume starts the call over, replaying your answers."
        await flow.keeper.update(status="waiting", error=message, task=state.dump())
        raise TaskEnded(message, title="Task not found", next_step=flow.next_step()) from None


async def resume(flow: FlowSteps) -> Outcome:
    """Continue a stored task: poll it again, answer what it waits for (what an earlier run already committed
    is sent only when the server still asks for it)."""
    session = flow.session
    assert session is not None and session.task is not None
    try:
        state = TaskState.load(session.task)
    except ValueError as exc:  # written by another machine's store, or by hand
        raise await flow.fail(f"The session's task record is damaged ({exc}); it cannot be polled.") from None
    now = flow.client.protocol_version if flow.client else None
    if now != state.generation:
        raise await flow.fail(
            f"Task {short_id(state.id)} runs under protocol {state.generation}; the server now speaks {now or '?'}, "
            "which cannot poll it."
        )
    flow.reporter.note(f"Task {short_id(state.id)} was {state.status.replace('_', ' ')}; polling it again.")
    try:
        return await _drive(flow, state, first=True)
    except TaskGone as gone:
        return await _start_over(flow, state, gone)


async def _start_over(flow: FlowSteps, state: TaskState, gone: TaskGone) -> Outcome:
    """The server no longer has the session's task (a stdio server's tasks end with its process): call again, as
    for a stale ``request_state`` — a new attempt, so the stored answers are replayed, each only to the new task's
    identical question (same key, same request)."""
    flow.reporter.note(f"{gone.said(state)} Starting the call over and replaying your answers.")
    return await flow.call_again(as_task=state.generation == LEGACY)  # a 2025-11-25 task tool: as a task again


async def _drive(flow: FlowSteps, state: TaskState, *, first: bool = False) -> Outcome:
    """Follow the task to its end: by polling, and by the server's stream of its status where it offers one."""
    from mcpcli.net.taskfeed import following

    assert flow.client is not None
    return await following(flow.client, state.id, lambda feed: _follow(flow, state, feed, first))


async def _follow(flow: FlowSteps, state: TaskState, feed: TaskFeed | None, first: bool) -> Outcome:
    """The task's loop, until a result, a detach or cancel, or an error: wait (poll pace, or the status stream's
    update), poll when nothing was pushed, record what changed, deliver answers to new input requests.

    Each status change is saved before anyone is asked (durable ``input_required``); a completed task finishes the flow,
    a failed or cancelled one raises ``_ended``'s error; a 2025-11-25 task leaves for ``tasks/result`` once it stops
    working; past ``max_rounds`` rounds of input it is stored waiting and ``LimitReached`` raised.
    """
    delay: float | None = None
    changed = True
    answered_rounds = 0
    streamed = False
    while True:
        pushed: DetailedTask | None = None
        if not first:
            if feed is not None and streamed != feed.live:
                streamed = feed.live
                delay = None  # the stream began or ended: the usual pace starts again from the server's interval
                _streaming(flow, state, feed)
            delay = streamed_delay(state) if streamed else next_delay(state, delay, changed)
            pushed = await _wait(flow, delay, feed if streamed else None)
        first = False
        if (asked := await _asked(flow, state)) is not None:
            return asked
        flow.keeper.check()
        if pushed is not None:
            detailed = pushed
            state.pushed += 1
        else:
            if feed is not None:
                feed.forget()  # the poll answers for the task as it is now
            detailed = await _poll(flow, state)
            state.polls += 1
        changed = state.observe(
            detailed.status, detailed.status_message, detailed.ttl_ms, detailed.poll_interval_ms, at=_now()
        )
        state.last_updated_at = detailed.last_updated_at or state.last_updated_at
        if changed:
            _say(flow, state)
        if state.generation == LEGACY and detailed.status != "working":
            return await _result_2025(flow, state)
        if detailed.status == "completed":
            return await flow.finish(detailed.result or {}, task=state.dump())
        if detailed.status in TERMINAL:
            raise await _ended(flow, state, detailed)
        outstanding = {
            key: request
            for key, request in (detailed.input_requests or {}).items()
            if key not in state.delivered and detailed.status == "input_required"
        }
        if outstanding:
            answered_rounds += 1
            if answered_rounds > flow.limits.max_rounds:
                await flow.keeper.save_task(state.dump(), status="waiting")
                raise LimitReached(
                    f"The task still asks for input after {flow.limits.max_rounds} rounds; stopped.",
                    next_step=flow.next_step("continue_more_rounds"),
                )
            if changed:
                await flow.keeper.save_task(state.dump())  # input_required, durable before anyone is asked
            await _deliver(flow, state, outstanding)
            changed = True
        elif changed:
            await flow.keeper.save_task(state.dump())


async def _wait(flow: FlowSteps, seconds: float, feed: TaskFeed | None = None) -> DetailedTask | None:
    """The pause between polls, bounded by ``--timeout``; a front end's detach or cancel ends it at once. While the
    server streams the task's status (``feed``): the pause before a safety poll, which an update ends (returned: it
    stands for the poll), or the stream's end (None: poll now); within ``--timeout`` the stream is waited for."""
    import anyio

    if feed is None:
        if time.monotonic() + seconds > flow.deadline:
            raise await flow.timed_out()
        with anyio.move_on_after(seconds):
            await flow.task_control.wake_event().wait()
        return None
    began = time.monotonic()
    if began >= flow.deadline:
        raise await flow.timed_out()
    with anyio.move_on_after(POLL_FLOOR):  # updates are taken at most this often: a flood is folded
        await flow.task_control.wake_event().wait()
    remaining = min(seconds, flow.deadline - began) - (time.monotonic() - began)
    with anyio.move_on_after(max(remaining, 0)) as waited:
        await _either(flow.task_control.wake_event(), feed)
    latest, resync = feed.take()
    if latest is not None and (detailed := _update(latest, feed)) is not None:
        return detailed
    if waited.cancelled_caught and not resync and flow.deadline - began <= seconds:
        raise await flow.timed_out()
    return None


async def _either(woken: Any, feed: TaskFeed) -> None:
    """Until a front end asks something of the task, or the feed has news."""
    import anyio

    async with anyio.create_task_group() as tg:

        async def one(event: Any) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(one, woken)
        tg.start_soon(one, feed.signal)


def _streaming(flow: FlowSteps, state: TaskState, feed: TaskFeed) -> None:
    """The server began sending the task's status (told to the trace), or stopped (told to the user too)."""
    flow.event("task_stream", task=state.id, live=feed.live, ended=feed.ended, folded=feed.folded, ignored=feed.ignored)
    if not feed.live:
        why = short_id(feed.ended or "", 200)
        flow.reporter.note(f"The server's status stream for task {short_id(state.id)} ended ({why}); polling again.")


def _update(latest: dict[str, Any], feed: TaskFeed) -> DetailedTask | None:
    """A streamed update as ``tasks/get`` would answer it; None (a poll instead) when it is not one."""
    from pydantic import ValidationError

    try:
        detailed = DetailedTask.model_validate(latest)
    except ValidationError:
        feed.ignored += 1
        return None
    return detailed if detailed.task_id == feed.task_id else None


async def _asked(flow: FlowSteps, state: TaskState) -> Outcome | None:
    """Detach or cancel, when a front end asked for it (the app's keys); None to go on polling."""
    want = flow.task_control.want
    if want == "cancel":
        return await cancel(flow)
    if want == "detach":
        await flow.keeper.update(status="waiting", task=state.dump())
        return Outcome(result={}, session=flow.session, exit_code=ExitCode.OK, detached=True)
    return None


async def _poll(flow: FlowSteps, state: TaskState) -> DetailedTask:
    """One ``tasks/get`` within the flow's deadline. An unknown task (its ttl ran out, the server restarted) raises
    ``_unknown``'s error; any other failure becomes ``flow.fail``'s ``ServerError`` (the session kept waiting); the
    deadline raises ``timed_out``'s."""
    import anyio

    assert flow.client is not None
    remaining = flow.deadline - time.monotonic()
    try:
        with anyio.fail_after(None if remaining == float("inf") else max(remaining, 0)):
            return await get_task(flow.client, state.id)
    except TimeoutError:
        raise await flow.timed_out() from None
    except MCPError as exc:
        if exc.code == -32602:  # an unknown task: its ttl ran out, or the server no longer has it (restarted)
            raise await _unknown(flow, state, exc.message) from None
        raise await flow.fail(rpc_error(exc.code, exc.message, "The server answered tasks/get with an error")) from None
    except McpcliError:
        raise
    except Exception as exc:  # boundary: transports fail in many shapes
        raise await flow.fail(f"The connection to the server failed: {innermost(exc)}") from exc


async def _deliver(flow: FlowSteps, state: TaskState, outstanding: dict[str, dict[str, Any]]) -> None:
    """Answer the task's open requests (committed first), send them with ``tasks/update``, remember the ack."""
    found = await flow.keeper.last_round()
    last = found[0] if found else None
    if last is not None and last.requests == outstanding and last.complete:
        # Committed by an earlier run that stopped before the server acknowledged them; it still asks: not received.
        flow.reporter.note(f"Sending the answers saved in round {last.index} (the server has not received them).")
        answers = last.answers or {}
    elif last is not None and last.requests == outstanding:
        answers = await flow.answer_stored(last)
    else:
        answers = await flow.take_round(outstanding, None)
    assert flow.client is not None
    try:
        await update_task(flow.client, state.id, for_server({key: answers[key] for key in outstanding}))
    except MCPError as exc:
        if exc.code == -32602:
            raise await _unknown(flow, state, exc.message) from None
        raise await flow.fail(f"The server refused the answers (tasks/update): {exc.message}.") from None
    flow.keeper.fault("after_send")  # test-only: acknowledged, not yet remembered as such
    state.delivered = (*state.delivered, *outstanding)
    await flow.keeper.save_task(state.dump(), status="running")


async def _result_2025(flow: FlowSteps, state: TaskState) -> Outcome:
    """2025-11-25, once the task ended or waits for input: ``tasks/result`` blocks until its end while the server
    asks over the back-channel (answered by the flow's callbacks, each question recorded as a round); such a
    question cannot wait for a later resume."""
    assert flow.client is not None
    await flow.keeper.save_task(state.dump())
    remaining = flow.deadline - time.monotonic()
    failure: MCPError | None = None
    result: dict[str, Any] = {}
    try:
        result = await task_result(flow.client, state.id, None if remaining == float("inf") else max(remaining, 0.1))
    except MCPError as exc:
        failure = exc
    finally:
        if flow.mid_call.failed:
            pending = dict(flow.mid_call.failed)
            flow.mid_call.failed.clear()
            await flow.keeper.update(status="waiting", task=state.dump())
            assert flow.session is not None
            raise NeedInput(flow.session, pending, deferred=False)
        if (refused := flow.take_refusal()) is not None:
            await flow.keeper.update(status="waiting", task=state.dump())
            raise refused
    if failure is not None:
        if failure.code == -32602 and "cancel" not in failure.message.lower():
            raise await _unknown(flow, state, failure.message)
        if failure.code == REQUEST_TIMEOUT:
            raise await flow.timed_out()
        status = "cancelled" if "cancel" in failure.message.lower() else "failed"
        state.observe(status, failure.message, state.ttl_ms, state.poll_ms, at=_now())
        error = {"code": failure.code, "message": failure.message}
        raise await _ended(flow, state, DetailedTask(task_id=state.id, status=status, error=error))
    state.observe("completed", state.message, state.ttl_ms, state.poll_ms, at=_now())
    return await flow.finish(result, task=state.dump())


async def _ended(flow: FlowSteps, state: TaskState, detailed: DetailedTask) -> TaskEnded:
    """The error for a task that failed or was cancelled on the server (a failure past its ttl is expiry,
    ``_expired``): the session is stored failed, the lease given back in that write; the next step is to look at it."""
    if detailed.status == "failed":
        error = detailed.error or {}
        why = str(error.get("message") or detailed.status_message or "no reason given")
        if _past_ttl(state):  # the spec lets a server mark a task failed once its ttl ran out: that is expiry
            return await _expired(flow, state, why)
        message = f"Task {short_id(state.id)} failed on the server: {why}"
    else:
        message = f"Task {short_id(state.id)} was cancelled" + (
            f": {detailed.status_message}" if detailed.status_message else "."
        )
    await flow.keeper.update(status="failed", error=message, task=state.dump(), last=True)
    return TaskEnded(message, next_step=_look(flow))


async def _unknown(flow: FlowSteps, state: TaskState, why: str) -> TaskEnded | TaskGone:
    """The server does not know the task (-32602): expired when it says so or its ttl ran out, else lost."""
    if "expire" in why.lower() or _past_ttl(state):
        return await _expired(flow, state, why)
    return TaskGone(why)


async def _expired(flow: FlowSteps, state: TaskState, why: str) -> TaskEnded:
    state.observe("expired", why, state.ttl_ms, state.poll_ms, at=_now())
    ttl = f" (its ttl was {state.ttl_ms / 1000:g} s)" if state.ttl_ms is not None else ""
    message = f"Task {short_id(state.id)} expired on the server{ttl}; its result is lost. The server said: {why}"
    await flow.keeper.update(status="expired", error=message, task=state.dump(), last=True)
    return TaskEnded(message, title="Task expired", next_step=_look(flow))


def _past_ttl(state: TaskState) -> bool:
    """Whether the task's ttl ran out (``createdAt`` + ``ttlMs``, by this machine's clock)."""
    if state.ttl_ms is None or not state.created_at:
        return False
    try:
        created = datetime.fromisoformat(state.created_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return (datetime.now(UTC) - created).total_seconds() * 1000 > state.ttl_ms


def _look(flow: FlowSteps) -> NextStep | None:
    return flow.next_step("look")


def _say(flow: FlowSteps, state: TaskState) -> None:
    """A status change, to the user: a reporter that shows tasks (the app's run screen) gets it as data."""
    shown = getattr(flow.reporter, "task_status", None)
    if shown is not None:
        shown(short_id(state.id), state.status, state.message, flow.task_control)
        return
    message = f": {state.message}" if state.message else ""
    flow.reporter.note(f"task {short_id(state.id)} {state.status.replace('_', ' ')}{message}")


async def cancel(flow: FlowSteps) -> Outcome:
    """``resume --cancel-task``: ask the server to cancel the session's task (cooperative: it may still finish), and
    end the session — nothing of the task is polled or answered after that."""
    from mcpcli.net.tasks import cancel_task

    session = flow.session
    assert session is not None and session.task is not None and flow.client is not None
    state = TaskState.load(session.task)
    try:
        await cancel_task(flow.client, state.id)
    except MCPError as exc:
        if exc.code == -32602:
            unknown = await _unknown(flow, state, exc.message)
            if isinstance(unknown, TaskGone):  # nothing left to cancel: the session ends here, saying why
                message = f"{unknown.said(state)} Nothing is left to cancel."
                await flow.keeper.update(status="failed", error=message, task=state.dump(), last=True)
                raise TaskEnded(message, title="Task not found", next_step=_look(flow)) from None
            raise unknown from None
        raise await flow.fail(f"The server refused to cancel task {short_id(state.id)}: {exc.message}.") from None
    state.observe("cancelled", "cancelled at your request", state.ttl_ms, state.poll_ms, at=_now())
    message = f"Task {short_id(state.id)} was cancelled at your request."
    await flow.keeper.update(status="failed", error=message, task=state.dump(), last=True)
    return Outcome(result={}, session=flow.session, exit_code=ExitCode.OK, cancelled=True)
