"""What a front end asks for: a job. The job is the only description of a flow — the command line, the full-screen
app and ``batch`` build one, and ``commands.run`` runs it (``run_job``; ``answer_job`` for an ``AnswerJob``).

Plain frozen data, no behaviour and nothing heavy at import: a front end builds a job before anything of the SDK is
loaded, and the same job runs inline or in the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from mcpcli.engine.steps import Method


@dataclass(frozen=True)
class CallJob:
    """A flow to start: what ``call``, ``prompt`` and ``read`` send (a ``batch`` line is one too)."""

    method: Method
    name: str
    """The tool, the prompt, or the resource's URI."""
    pairs: tuple[str, ...] = ()
    """``--arg KEY=VALUE`` pairs, typed by the tool's schema."""
    args: str | None = None
    """``--args JSON|@FILE|-``."""
    arguments: dict[str, Any] | None = None
    """Already typed (the start screen's form, a ``batch`` line): sent as they are."""
    app: AppOptions | None = None
    """A tool call with its view (``call TOOL --app``, the start screen's key)."""
    detach: bool = False
    """``--detach``: a call the server runs as a task is left running; its session id is the result."""
    as_task: bool = False
    """``--task``: a 2025-11-25 tool whose task support is optional is called as a task."""


@dataclass(frozen=True)
class ResumeJob:
    """A stored flow to continue (``resume``, the sessions screen, a flow woken by an answer)."""

    session_id: str
    steal: bool = False
    """``--steal``: take the session over from a driver that is gone."""
    trust_server: bool = False
    """``--trust-server``: run the session's stored command line without asking."""
    wait: float = 0.0
    """``--wait``: seconds to wait for another driver to give the session up."""
    cancel: bool = False
    """``--cancel-task``: cancel the session's task on the server instead of continuing it."""
    app: AppOptions | None = None
    """``--app``: the tool's view reopened on its stored input, the flow continued under it."""


@dataclass(frozen=True)
class AnswerJob:
    """A waiting flow to answer apart from driving it (``mcpcli answer``; ``a`` on the app's sessions): its round's
    answers checked and stored for its owner's run to send. Nothing connects."""

    session_id: str


@dataclass(frozen=True)
class AppOptions:
    """``--app``'s companions: ``--no-browser`` (print the URL instead) and ``--for SECONDS``."""

    browser: bool = True
    seconds: float | None = None


def check_app_options(app: bool, no_browser: bool, seconds: float | None) -> AppOptions | None:
    """The options as given: ``--no-browser``/``--for`` without ``--app`` are a usage error (exit 2)."""
    if not app:
        if no_browser or seconds is not None:
            raise UsageError(
                f"{'--no-browser' if no_browser else '--for'} goes with --app.",
                hint="Add --app to open the tool's view: mcpcli call TOOL --app --no-browser",
            )
        return None
    if seconds is not None and not seconds > 0:
        raise UsageError(f"--for needs a positive number of seconds, not {seconds:g}.", hint="Give --for 60.")
    return AppOptions(browser=not no_browser, seconds=seconds)


FlowJob = CallJob | ResumeJob
"""What ``run_job`` runs: a flow started or continued."""
Job = FlowJob | AnswerJob
"""Whatever a front end asks for (``AnswerJob`` takes ``commands.answer``'s short path: no flow)."""
