"""A front end's seat at a flow: everything of a flow that differs between the command line, the full-screen app
and ``batch`` — who answers (the person at the terminal, the app's forms, the sampling approver), where notes go, how
the outcome is shown (``Shows``) and where a tool's view is shown (``Views``). ``commands.run`` builds and runs a
flow for a seat; ``commands.answer`` asks a seat's person without building one.

Light on purpose: no SDK, no flow — ``mcpcli answer`` builds a seat and never imports either.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mcpcli.errors import ExitCode

if TYPE_CHECKING:
    from mcpcli.engine.answers import Presets
    from mcpcli.engine.askers import Asked
    from mcpcli.engine.steps import AnswerSource, NeedInput, Outcome, Reporter
    from mcpcli.terminal.inline import Terminal

log = logging.getLogger(__name__)


def at_terminal() -> bool:
    """Whether a person may be asked (stdin is a terminal, or a test says it is one: ``MCPCLI_ASSUME_TTY=1``)."""
    return sys.stdin.isatty() or os.environ.get("MCPCLI_ASSUME_TTY") == "1"


class Shows(Protocol):
    """How a front end shows what a flow ended with: the command line prints it, the app puts it on a screen."""

    def result(self, method: str, outcome: Outcome) -> int:
        """The final result, shown as soon as it is final (before the connection closes); its exit code."""
        ...

    def waiting(self, need: NeedInput) -> int:
        """Nobody here could answer: what the saved session waits for; the exit code (3)."""
        ...

    def warning(self, text: str) -> None:
        """A line the person should see beside the result (an ``--answer`` that met no question…)."""
        ...

    def pages(self, pages: Sequence[Any]) -> None:
        """The pages a -32042 "URL elicitation required" error names: the person opens what they trust."""
        ...


class Views(Protocol):
    """Where a front end shows a tool's view (``commands.apps.AppViews``): the body of a job that has one."""

    async def show(self, run: Any, job: Any, client: Any) -> int:
        """Run ``job`` (a ``CallJob`` or ``ResumeJob`` with an ``app``) on ``client`` under its view, ``run`` being
        the ``commands.run.Run`` it is on; the launching call's exit code. Typed loosely here: a seat is built before
        anything of a flow or the SDK is imported (``mcpcli answer`` never imports them)."""
        ...


class Unshown:
    """``Shows`` for a seat that runs no flow (``mcpcli answer`` in the app: its form is all there is)."""

    def result(self, method: str, outcome: Outcome) -> int:
        return int(outcome.exit_code)

    def waiting(self, need: NeedInput) -> int:
        return int(ExitCode.INPUT_REQUIRED)

    def warning(self, text: str) -> None:
        log.info("not shown: %s", text)

    def pages(self, pages: Sequence[Any]) -> None:
        return None


@dataclass(frozen=True)
class Seat:
    """Where the person a flow answers to sits: everything of a flow that differs between front ends.

    The inline terminal and the full-screen app differ only in what is here; the presets, the roots, the sampler,
    the store and the limits are built the same way for both (``build_flow``).
    """

    reporter: Reporter
    """The flow's notes and the server's progress: ``rt.out`` on stderr, or the app's notifications."""
    shows: Shows
    """How the outcome is shown (the result, a flow left waiting, warnings)."""
    terminal: Terminal | None = None
    """The person at the terminal, asked inline (after the presets and roots); None: nobody to ask there."""
    app_user: MakeUser | None = None
    """The app's answer source, asked last (it needs the flow itself: its call is the round's header)."""
    approver: Any = None
    """Who approves sampling requests (``asking.TerminalApprover``, the app's screen); None: the policy alone."""
    views: Views | None = None
    """Where a tool's view is shown and its news said (``--app``, the app); None: this front end shows none."""
    summaries: bool = True
    """Whether ``-v`` prints trace lines on stderr (not in the app: it owns the terminal)."""
    sign_in: bool = False
    """Whether OAuth may open a browser to sign in (a person is at the terminal); else ``mcpcli auth login``."""
    alone: bool = False
    """The flow is its process's only one and no UI shares its event loop (the CLI): its store calls, to a local
    SQLite file, run on the loop's own thread (``Keeper.inline``)."""
    always_views: bool = False
    """Every connection declares MCP Apps (the app, whose start screen can open any tool's view)."""

    def people(self, presets: Presets) -> list[AnswerSource]:
        """The person at the terminal as an answer source (its prompts pre-filled by ``presets``), when one sits
        here; the app's user needs the flow and is added by whoever builds it (``app_user``)."""
        if self.terminal is None:
            return []
        import webbrowser

        from mcpcli.terminal.asking import TerminalUser  # deferred: only a terminal session needs Rich and the prompts

        return [TerminalUser(self.terminal, presets, open_url=webbrowser.open)]


MakeUser = Callable[["Asked", "Presets"], "AnswerSource"]
"""Builds the app's answer source for a flow (it needs the flow's call for its header, the presets to pre-fill)."""
