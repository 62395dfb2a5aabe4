"""The command line's seat at a flow: who answers at the terminal, and what is printed of the outcome.

``terminal_seat`` is what ``call``, ``prompt``, ``read``, ``resume`` and ``answer`` hand to ``commands.run``: inline
prompts and sampling approval when a person is at the terminal, notes on stderr, and ``Printed`` — the result on
stdout (``--json``: as JSON), a flow left waiting as the exit-3 document, warnings on stderr. ``interrupted`` says
where a stopped flow can be picked up.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpcli.commands.seat import Seat, Views, at_terminal
from mcpcli.engine.answers import answers_template
from mcpcli.engine.steps import NeedInput, Outcome
from mcpcli.errors import ExitCode, print_error
from mcpcli.terminal.hints import stop_note, worded
from mcpcli.terminal.output import describe_pending, pending_document

if TYPE_CHECKING:
    from mcpcli.commands.runtime import AnswerOptions, Runtime
    from mcpcli.engine.flow import Flow
    from mcpcli.terminal.inline import Terminal


def terminal_seat(rt: Runtime, opts: AnswerOptions, *, views: Views | None = None) -> Seat:
    """The CLI's seat: inline prompts and sampling approval when a person is at the terminal, notes on stderr, the
    outcome printed. ``views``: where a tool's view is shown (``--app``)."""
    term = _terminal(rt, opts)
    approver = None
    if term is not None:
        from mcpcli.terminal.asking import TerminalApprover  # deferred: only a terminal session needs the prompts

        approver = TerminalApprover(term)
    return Seat(
        reporter=rt.out,
        shows=Printed(rt),
        terminal=term,
        approver=approver,
        views=views,
        sign_in=term is not None,
        alone=True,
    )


def _terminal(rt: Runtime, opts: AnswerOptions) -> Terminal | None:
    """The person at the terminal: stdin is one and no ``--no-input`` (``MCPCLI_ASSUME_TTY``: tests drive a pipe)."""
    if opts.no_input or not at_terminal():
        return None
    from mcpcli.terminal.inline import Terminal

    return Terminal(rt.out.err)


@dataclass(frozen=True)
class Printed:
    """``commands.run.Shows`` for the command line: stdout holds the result alone, everything else goes to stderr."""

    rt: Runtime

    def result(self, method: str, outcome: Outcome) -> int:
        return render(self.rt, method, outcome)

    def waiting(self, need: NeedInput) -> int:
        return needs_input(self.rt, need)

    def warning(self, text: str) -> None:
        self.rt.out.warning(text)

    def pages(self, pages: Sequence[Any]) -> None:
        show_required_urls(self.rt, pages)


def render(rt: Runtime, method: str, outcome: Outcome) -> int:
    """A final result on stdout (``--json``: as JSON); its exit code. A task left running (``--detach``): its
    session id on stdout (``--json``: a document saying so), to resume it with."""
    if outcome.detached or outcome.cancelled:
        from mcpcli.commands.tasks import render_task

        return render_task(rt, outcome)
    if rt.json:
        rt.out.json(outcome.result)
    else:
        rt.out.result(method, outcome.result)
    return int(outcome.exit_code)


def needs_input(rt: Runtime, need: NeedInput) -> int:
    """Nobody could answer: what the saved session waits for (``--json``: with an answers template); exit 3."""
    if rt.json:
        rt.out.json(pending_document(need.session.id, need.pending, answers_template(need.pending)))
    else:
        describe_pending(rt.out.err, need.session.id, need.pending)
    if not need.deferred or need.confirming:  # a mid-call question, an answer to confirm: say why, and how to
        print_error(worded(need))
    return int(ExitCode.INPUT_REQUIRED)


def show_required_urls(rt: Runtime, pages: Sequence[Any]) -> None:
    """The pages a -32042 error names, shown as URL-mode elicitation shows them: the whole URL, its host
    emphasised, the same warnings, non-http(s) refused. Nothing is opened: the error ended the call, so there is
    no request left to consent to; the user opens what they trust."""
    from rich.text import Text

    from mcpcli.display import safe
    from mcpcli.terminal.asking import check_url, url_text

    console = rt.out.err
    console.print(Text("The server needs you to visit a page before it can go on:", style="bold"))
    for page in pages:
        check = check_url(page.url)
        console.print(Text.assemble(("? ", "bold cyan"), safe(page.message)))
        console.print(Text.assemble("  ", safe(page.url) if check.refused else url_text(page.url)))
        for warning in check.warnings:
            console.print(Text.assemble(("  ! ", "bold yellow"), warning))


def interrupted(rt: Runtime, flows: list[Flow], what: str = "Interrupted") -> None:
    """Ctrl-C, SIGTERM or SIGHUP: every round is already committed (the flow put a running session back to
    waiting under its lease); say where the flow can be picked up, and whether a resume sends something again."""
    rt.out.stop_progress()
    say = functools.partial(rt.out.err.print, markup=False, highlight=False)
    for flow in flows:
        flow.keeper.give_back()  # normally given back already; not when a second signal cut the cleanup short
    for flow in flows:
        if (note := stop_note(flow, what)) is not None:
            say(f"\n{note}")
            return
    say(f"\n{what}; nothing was saved (the server had asked for nothing yet).")
