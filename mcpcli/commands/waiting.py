"""``--wait-for-answer``: a flow that nobody here can answer parks instead of exiting 3 — announced, its session
waiting in the store with no lease held — and goes on as soon as an answer lands there (``mcpcli answer``, from any
machine that shares the store): this process then resumes it, as its owner, with the owner's credentials.

Bounded (past the time given: exit 3 with the usual document) and clean on Ctrl-C (the session kept, 130): the wait
is a store watch in a thread that looks at least once a second, and stops with the command.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from mcpcli.commands.inbox import announce, saved_sessions
from mcpcli.engine.steps import NeedInput
from mcpcli.errors import SessionError
from mcpcli.state.inbox import asked

if TYPE_CHECKING:
    from mcpcli.engine.flow import Flow
    from mcpcli.runtime import AnswerOptions, Runtime
    from mcpcli.state.store import SessionRecord, Store


async def waiting_for_answers(
    rt: Runtime, opts: AnswerOptions, flows: list[Flow], start: Callable[[], Awaitable[int]]
) -> int:
    """Run ``start`` (a flow command's body); while ``--wait-for-answer`` is given and the flow parks on a question
    nobody here answers, wait for an answer in the store and resume the flow with it."""
    from mcpcli.commands.flows import needs_input
    from mcpcli.commands.resume import run_resume

    if opts.wait_for_answer is None:
        return await start()
    deadline = time.monotonic() + opts.wait_for_answer
    fresh = True
    run = start
    while True:
        try:
            code = await run()
        except NeedInput as need:
            parked = need
        else:
            _finished(rt, flows, code)
            return code
        session = parked.session
        record = rt.store.get(session.id)
        last = rt.store.last_round(session.id)
        if fresh or record.answered_by is None:  # what a resume parked on again is no news: not announced twice
            announce(rt, "waiting", record, parked.pending, waiting_since=None if last is None else last.received)
        who = ", ".join(asked(record)) or "an answer"
        left = max(0.0, deadline - time.monotonic())
        rt.out.note(
            f"Session {record.id} waits for {who}: answer it from any shell or machine with: mcpcli answer {record.id}"
            f" (waiting up to {left:.0f} s; Ctrl-C stops, the session kept)."
        )
        woke = await until_answered(rt.store, record, deadline, fresh=fresh)
        if woke is None:
            return needs_input(rt, parked)
        if woke.answered_by is not None:
            # Announced by the answer itself (``mcpcli answer``), once: here only said.
            rt.out.note(f"Session {record.id} was answered by {woke.answered_by}: continuing.")
        fresh = False

        async def again(session_id: str = record.id) -> int:
            return await run_resume(rt, opts, flows, session_id)

        run = again


def _finished(rt: Runtime, flows: list[Flow], code: int) -> None:
    """Announce the end of a flow that waited for a person (a finish nobody waited for is no news)."""
    for record in saved_sessions(rt, flows):
        if record.status in ("done", "failed"):
            announce(rt, "done" if record.status == "done" and code in (0, 1) else "failed", record)
            return


async def until_answered(store: Store, parked: SessionRecord, deadline: float, *, fresh: bool) -> SessionRecord | None:
    """The session once it moved on from where it was parked — answered (``answered_by``), taken up or finished by
    someone else, a new round — or ``None`` at ``deadline``. A fresh park wakes also for an answer already there."""
    stop = threading.Event()

    def moved(now: SessionRecord) -> bool:
        if fresh and now.answered_by is not None:
            return True
        return (now.status, now.round, now.answered_by) != (parked.status, parked.round, parked.answered_by)

    def wait() -> SessionRecord | None:
        watch = store.watch()
        try:
            while not stop.is_set():
                try:
                    now = store.get(parked.id)
                except SessionError:
                    return None
                if moved(now):
                    return now
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                watch.wait(min(1.0, left))
            return None
        finally:
            watch.close()

    try:
        return await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
    finally:
        stop.set()
