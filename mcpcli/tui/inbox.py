"""Answering a waiting flow from the app: the sessions screen's ``a`` and ``mcpcli answer ID --tui``.

The same path as ``mcpcli answer`` (``commands.inbox.answer_open``): who may answer, what a person answers, the
round's schemas, the one conditional write that one answer wins. Only the seat differs — the round's requests on a
round screen instead of the terminal's prompts. Nothing here connects to the server or resumes the flow: its owner's
run sends the answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual.binding import Binding, BindingType

from mcpcli.display import sanitize
from mcpcli.tui.round import RoundScreen

if TYPE_CHECKING:
    from textual.app import App

    from mcpcli.commands.answer import Answered
    from mcpcli.commands.runtime import AnswerOptions, Runtime
    from mcpcli.engine.answers import Presets
    from mcpcli.engine.askers import Asked
    from mcpcli.engine.steps import AnswerSource


class AnswerScreen(RoundScreen):
    """The round screen over a stored round: the same panels and Submit, but escape goes back and writes nothing —
    on a run, escape cancels the round, an answer the server hears; here nobody asked to answer for the owner."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "leave", "Back")]

    def action_leave(self) -> None:
        self.dismiss(None)  # the answer source says "you left the form": nothing is written


@dataclass
class InboxReporter:
    """``flow.Reporter`` for a round answered from the inbox: notes as notifications; nothing runs, so no progress."""

    app: App[Any]
    verbose: bool = False

    def note(self, text: str) -> None:
        self.app.notify(sanitize(text), title="mcpcli", markup=False, timeout=8)

    def detail(self, text: str) -> None:
        if self.verbose:
            self.note(text)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Never called: answering a stored round sends nothing."""


async def answer_here(
    app: App[Any],
    rt: Runtime,
    opts: AnswerOptions,
    session_id: str,
    open_url: Callable[[str], object],
) -> Answered:
    """Answer the round ``session_id`` waits on with its form (``AnswerScreen``), as ``mcpcli answer`` would; run
    in one of the app's workers (the form is awaited). Raises what ``answer_open`` raises, and ``UserStopped`` when
    the form is left."""
    from mcpcli.commands.answer import answer_open
    from mcpcli.commands.seat import Seat, Unshown
    from mcpcli.tui.source import TuiUser

    def user(asked: Asked, presets: Presets) -> AnswerSource:
        return TuiUser(app, presets, asked, rt.store, open_url, form=AnswerScreen)

    seat = Seat(reporter=InboxReporter(app, verbose=rt.g.verbose), shows=Unshown(), app_user=user, summaries=False)
    return await answer_open(rt, opts, session_id, seat)
