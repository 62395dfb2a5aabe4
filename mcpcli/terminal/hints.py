"""The words for what to do next: the ``mcpcli …`` command line a ``NextStep`` stands for.

The core says what can be done about a session (``errors.NextStep``); the front ends say it, here, once —
the CLI's error line, the app's error and waiting views, and a ``--json`` error document alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from mcpcli.errors import McpcliError, NextStep

if TYPE_CHECKING:
    from mcpcli.engine.flow import Flow

E = TypeVar("E", bound=McpcliError)


def hint_for(step: NextStep) -> str:
    """The hint line for ``step``: the command that does it."""
    resume = f"mcpcli resume {step.session_id}"
    match step.action:
        case "answer":
            return f"Answer it with: {resume} --answer FIELD=VALUE (or at a terminal)"
        case "answer_here":
            return f"Run again at a terminal, or with --answer: {resume} --answer FIELD=VALUE"
        case "sample":
            return f"Let an LLM answer it: {resume} --approve-sampling always (providers: mcpcli llm list)"
        case "visit":
            return f"Once you have visited the page yourself: {resume} --accept KEY (or --decline KEY)"
        case "continue":
            return f"Continue with: {resume}"
        case "continue_more_rounds":
            return f"Continue with: {resume} --max-rounds N"
        case "steal":
            return f"Wait for it: {resume} --wait (or, if that process is gone: {resume} --steal)"
        case "look":
            return f"See where it stands: mcpcli sessions show {step.session_id}"
        case "confirm":
            return f"Confirm (or refuse) their answers at a terminal: {resume}"


def worded(exc: E) -> E:
    """``exc`` with its hint worded from its next step, unless it already has one; the same error, for chaining."""
    if exc.hint is None and exc.next_step is not None:
        exc.hint = hint_for(exc.next_step)
    return exc


def stop_note(flow: Flow, what: str) -> str | None:
    """What a stop (``what``: "Interrupted", "Hung up (SIGHUP)"…) left of ``flow``, truly, for every front end and
    signal handler: its session saved (and whether its answered round may have reached the server), or the stored
    session it was resuming left as it was; ``None`` when it has no session at all (then nothing was saved)."""
    session = flow.keeper.session
    if session is not None and flow.keeper.saved:
        if session.status == "done":
            return f"{what} after the flow finished; its result is saved (mcpcli resume {session.id} shows it)."
        if flow.in_doubt:
            return (
                f"{what}; session {session.id} saved. Its answered round may already have reached the server;"
                f" mcpcli resume {session.id} sends it again."
            )
        return f"{what}; session {session.id} saved. Resume it with: mcpcli resume {session.id}"
    if flow.keeper.adopting is not None:  # stopped before its claim: the stored session is as it was
        return (
            f"{what} before anything was sent; session {flow.keeper.adopting} is as it was."
            f" Resume it with: mcpcli resume {flow.keeper.adopting}"
        )
    return None
