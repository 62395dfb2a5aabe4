"""What a screen may ask of the app that shows it — so the screens never import the app (``tui/app``), which
imports them.

``McpcliApp`` is an ``AppHost``; a screen reaches it as ``host(self.app)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from textual.app import App

    from mcpcli.commands.jobs import CallJob, ResumeJob
    from mcpcli.commands.runtime import Runtime


class Following:
    """One of the app's watches (``McpcliApp._watched``): ``stop()`` ends it; ``ended`` is set once it has."""

    def __init__(self) -> None:
        import anyio

        self.scope = anyio.CancelScope()
        self.ended = asyncio.Event()
        self.stopping = False
        self.task: asyncio.Future[None] | None = None
        """A watch in a task of its own (``shielded``): stopped as Ctrl-C stops the CLI, by cancelling the task —
        its task groups' other tasks (an app's web host) then keep running until its cleanup is done, where the
        scope's cancellation would end them at once."""

    def stop(self) -> None:
        """Once: a second cancellation of the task would cut its cleanup short (the screen and the app both stop
        it as they close)."""
        if self.task is not None:
            if not self.stopping:
                self.task.cancel()
        else:
            self.scope.cancel()
        self.stopping = True


class Follower(Protocol):
    """A screen that shows a resource again as it changes (the run screen)."""

    following: Following | None

    def show_update(self, result: Mapping[str, Any]) -> None: ...

    def set_status(self, text: str) -> None: ...


class AppHost(Protocol):
    """The app's side of the screens: its runtime, a flow to start or answer, a resource to follow, the way out."""

    rt: Runtime

    def start_job(self, job: CallJob | ResumeJob) -> None:
        """Run the call or resume in a worker, on a run screen."""
        ...

    def answer_session(self, session_id: str) -> None:
        """Answer the round the session waits on with its form, for its owner's run to send (``mcpcli answer``)."""
        ...

    def exit_ok(self) -> None:
        """Leave the app with exit code 0 (nothing left to do)."""
        ...

    def follow_resource(self, uri: str, screen: Follower) -> None:
        """Show ``uri`` again on ``screen`` each time the server says it changed (until the screen closes)."""
        ...


def host(app: App[object]) -> AppHost:
    """The app showing a screen, as the screen may use it."""
    return cast("AppHost", app)
