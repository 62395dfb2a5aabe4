"""The person at the full-screen app, as the flow sees them: an answer source and a reporter.

``TuiUser`` is ``asking.TerminalUser``'s sibling: an interactive ``flow.AnswerSource`` that also has
``answer_round``, so the flow hands it every open question of a round at once and it answers them from
one ``RoundScreen``. It runs in the flow's worker and waits for the screen with ``push_screen_wait``.
``TuiReporter`` turns the flow's notes and the server's progress into notifications and a progress bar.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp_types as t

from mcpcli.display import sanitize
from mcpcli.engine.answers import Presets
from mcpcli.engine.askers import Asked
from mcpcli.engine.partial import why_open
from mcpcli.engine.steps import Question, kind_of
from mcpcli.errors import UsageError, UserStopped
from mcpcli.tui.round import RoundInfo, RoundScreen

if TYPE_CHECKING:
    from textual.app import App

    from mcpcli.net.tasks import TaskControl
    from mcpcli.state.store import Store
    from mcpcli.tui.run import RunScreen


ROUND_PANELS_MAX = 50
"""Requests one round screen shows; a round that asks more waits in its session for an answers file."""


@dataclass
class TuiUser:
    """Answers a round's elicitation requests (forms and URLs) on one screen; leaves other kinds to others."""

    app: App[Any]
    presets: Presets
    """Preset values pre-fill the form (they were already checked when the flow tried them)."""
    flow: Asked
    """The flow being answered (or ``mcpcli answer``'s askers): its call is shown in the round's header."""
    store: Store
    open_url: Callable[[str], object]
    form: type[RoundScreen] = RoundScreen
    """The round screen to show: a run's, or the inbox's (``tui.inbox.AnswerScreen``: a stored round, escape goes
    back and writes nothing)."""
    interactive = True
    answered_as = "tui"
    """How a round's span says it was answered (``mcpcli.telemetry``)."""

    async def answer(self, question: Question) -> t.InputResponse | None:
        """Nothing one by one: every question a person answers goes through ``answer_round``."""
        return None

    async def answer_round(self, questions: Sequence[Question]) -> dict[str, t.InputResponse]:
        """Every form and URL request of a round on one screen, answered together. Sampling and roots are left (noted on
        the screen); more than ``ROUND_PANELS_MAX`` requests wait for an answers file instead. Leaving the screen is
        ``UserStopped`` (the session is kept)."""
        shown = [q for q in questions if isinstance(q.request, t.ElicitRequest)]
        if not shown:
            return {}  # sampling and roots are for the sampler and --root; unanswered, the flow waits (exit 3)
        if len(shown) > ROUND_PANELS_MAX:
            # Each request is a panel of widgets, and laying out hundreds takes Textual minutes: the round waits
            # in its session for an answers file instead (unanswered, the flow stops with exit 3).
            sid = shown[0].session_id
            self.flow.reporter.note(
                f"This round asks {len(shown):,} questions, more than the app shows at once ({ROUND_PANELS_MAX}). "
                f"Answer them with an answers file: mcpcli resume {sid} --answers FILE "
                f"(a template: mcpcli resume {sid} --no-input --json)."
            )
            return {}
        left = [(q.key, _left_note(q, self.flow)) for q in questions if q not in shown]  # e.g. sampling, no provider
        screen = self.form(self._info(shown[0]), shown, presets=self._preset, open_url=self.open_url, left=left)
        answers = await self.app.push_screen_wait(screen)
        if answers is None:
            raise UserStopped("You left the form; the session is kept.")
        return dict(answers)

    def _preset(self, question: Question) -> dict[str, Any]:
        try:
            return self.presets.partial(question)
        except UsageError:
            return {}  # e.g. a schema the presets cannot use; the screen shows what it can

    def _info(self, question: Question) -> RoundInfo:
        try:
            record = self.store.get(question.session_id)
        except Exception:  # boundary: the header's round number is not worth failing a flow over
            record = None
        number = 0 if record is None else record.round
        call = self.flow.call
        if call is not None:
            return RoundInfo(question.server, call.method, call.name, call.arguments, number, question.session_id)
        # A stored round answered from the inbox: the flow is not driven here, its call is the session's.
        method, name, arguments = ("", "", {}) if record is None else (record.method, record.name, record.arguments)
        return RoundInfo(question.server, method, name, arguments, number, question.session_id)


def _left_note(question: Question, flow: Asked) -> str:
    """What the round screen says of a request it does not show: asked after it, or why it stays open."""
    what = kind_of(question.request)
    why = why_open(flow.sources, question)
    if why is None:
        return f"Asks for {what}: answered after this screen."
    return f"Asks for {what}: it stays open — {why.message} {why.hint or ''} Your answers here are kept.".strip()


@dataclass
class TuiReporter:
    """``flow.Reporter`` for the app: notes as notifications, progress on the run screen."""

    app: App[Any]
    screen: RunScreen
    verbose: bool = False
    started: float = field(default_factory=time.monotonic)

    def note(self, text: str) -> None:
        self.app.notify(sanitize(text), title="mcpcli", markup=False, timeout=8)

    def detail(self, text: str) -> None:
        self.screen.set_status(text)
        if self.verbose:
            self.note(text)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.screen.show_progress(progress, total, message)

    def task_status(self, task_id: str, status: str, message: str | None, control: TaskControl) -> None:
        """The call runs as a task: its status and message on the run screen, with the detach and cancel keys."""
        self.screen.show_task(task_id, status, message, control)
