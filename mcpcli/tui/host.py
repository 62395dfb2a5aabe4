"""What a screen may ask of the app that shows it — so the screens never import the app (``tui/app``), which
imports them.

``McpcliApp`` is an ``AppHost``; a screen reaches it as ``host(self.app)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from textual.app import App

    from mcpcli.commands.jobs import CallJob, ResumeJob
    from mcpcli.runtime import Runtime


class AppHost(Protocol):
    """The app's side of the screens: its runtime, a flow to start, the way out."""

    rt: Runtime

    def start_job(self, job: CallJob | ResumeJob) -> None:
        """Run the call or resume in a worker, on a run screen."""
        ...

    def exit_ok(self) -> None:
        """Leave the app with exit code 0 (nothing left to do)."""
        ...


def host(app: App[object]) -> AppHost:
    """The app showing a screen, as the screen may use it."""
    return cast("AppHost", app)
