"""Inline terminal prompts: answering one elicitation form line by line on stderr.

This is the "the user" answer source of the answering order when ``--tui`` is
not given. It owns the conversation only: what a field means and which values
fit comes from ``forms``, and every server string is shown through
``display`` — the message, titles, descriptions and labels are untrusted, so
prompts are built from ``rich.text.Text`` pieces and never from markup.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal, NamedTuple

from rich.console import Console
from rich.text import Text

from mcpcli.display import safe, sanitize, short_id
from mcpcli.errors import UserStopped
from mcpcli.forms import FieldError, FieldSpec, coerce, constraint_hint, defaults, display_value

HELP = "(:decline, :cancel, :quit at any prompt; Enter keeps the default)"
CONFIRM = "Send? [Y/n/decline/cancel] "


class FormOutcome(NamedTuple):
    """What the user decided about one form; ``content`` is set only when accepted."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None


class Terminal:
    """The console and line readers the prompts use, injectable so tests need no pseudo-terminal.

    A reader raising ``EOFError`` means the user pressed Ctrl-D.
    """

    def __init__(
        self,
        console: Console,
        read_line: Callable[[str], str] | None = None,
        read_secret: Callable[[str], str] | None = None,
    ) -> None:
        self.console = console
        """Where every prompt, hint and error goes (the caller passes a stderr console)."""
        self.read_line = read_line or self._input
        """Reads one answer; gets a plain, already sanitized prompt string."""
        self.read_secret = read_secret or self._input_secret
        """Reads one answer without echoing it."""

    def _input(self, prompt: str) -> str:
        # As Text, because a str prompt would be parsed as Rich markup.
        with interruptible():
            return self.console.input(Text(prompt))

    def _input_secret(self, prompt: str) -> str:
        with interruptible():
            return self.console.input(Text(prompt), password=True)


@contextmanager
def interruptible() -> Iterator[None]:
    """Let Ctrl-C raise ``KeyboardInterrupt`` inside a blocking read — and, entered around a whole question (its
    header, its fields, its reads), anywhere in it.

    ``asyncio.run`` (3.11+) replaces the SIGINT handler with one that only
    cancels the main task; a task busy printing a form's header or blocked in ``input()`` never sees that (the
    cancellation waits for its next ``await``, after the whole form), so the question would swallow Ctrl-C. Python's
    default handler raises where the program is, and the command maps that to exit 130 with the session kept.
    Nested uses are harmless (the inner one puts back the outer one's handler).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if previous is not None:  # None: a handler not installed from Python, which cannot be put back
            signal.signal(signal.SIGINT, previous)


class _Answered(Exception):
    """The user typed ``:decline`` or ``:cancel``: the form ends with that action."""

    def __init__(self, action: Literal["decline", "cancel"]) -> None:
        super().__init__(action)
        self.action: Literal["decline", "cancel"] = action


_OMITTED = object()
"""An optional field the user left empty: it is not sent at all."""


def ask_form(
    term: Terminal,
    message: str,
    fields: Sequence[FieldSpec],
    *,
    server_label: str | None = None,
    preset: Mapping[str, Any] | None = None,
) -> FormOutcome:
    """Ask the user every field not in ``preset``, confirm, and return their decision.

    ``preset`` values (from ``--answer`` flags, already validated) are sent as
    given and not asked again, not even after "n" at the confirmation. Raises
    ``UserStopped`` on ``:quit`` or Ctrl-D.
    """
    fixed = {field.name: preset[field.name] for field in fields if preset and field.name in preset}
    to_ask = [field for field in fields if field.name not in fixed]
    _print_header(term.console, message, server_label)
    answers = defaults(to_ask)  # after "n", what was entered becomes the default
    try:
        while True:
            for field in to_ask:
                value = _ask_field(term, field, answers.get(field.name))
                if value is _OMITTED:
                    answers.pop(field.name, None)
                else:
                    answers[field.name] = value
            given = {**answers, **fixed}
            content = {field.name: given[field.name] for field in fields if field.name in given}
            if _confirm(term, fields, content):
                return FormOutcome("accept", content)
    except _Answered as answered:
        return FormOutcome(answered.action, None)


def refuse_form(term: Terminal, message: str, why: str, *, server_label: str | None = None) -> FormOutcome:
    """A form mcpcli cannot fill in (a nested object, an impossible bound...): say why, and offer what is always
    offered — decline or cancel (docs/sessions.md, Answering) — rather than end the run with the server's mistake."""
    _print_header(term.console, message, server_label, with_help=False)
    term.console.print(Text.assemble(("  This form cannot be filled in here: ", "yellow"), shown(why)))
    while True:
        reply = read_reply(term, "  [d]ecline / [c]ancel: ").strip().lower()
        if reply in ("d", "decline", ":decline"):
            return FormOutcome("decline", None)
        if reply in ("c", "cancel", ":cancel"):
            return FormOutcome("cancel", None)
        if reply == ":quit":
            raise _stopped()


def _print_header(console: Console, message: str, server_label: str | None, *, with_help: bool = True) -> None:
    if server_label:
        console.print(Text.assemble(safe(server_label), " asks:", style="bold"))
    console.print(Text(shown(message)))
    if with_help:  # the field commands (:skip, :back…); a form that cannot be filled in has only decline and cancel
        console.print(Text(HELP, style="dim"))


def _ask_field(term: Terminal, field: FieldSpec, current: Any) -> Any:
    """The field's value, ``current`` on an empty answer, or ``_OMITTED``; re-asks until the answer fits."""
    _print_field(term.console, field)
    while True:
        text = _read(term, _prompt(field, current), secret=field.secret)
        if not text.strip():
            if current is not None:
                return current
            if not field.required:
                return _OMITTED
            error = f"{field.name}: is required"
        else:
            try:
                return coerce(field, _from_numbers(field, text))
            except FieldError as exc:
                error = str(exc)
                if len(field.choices) > CHOICES_SHOWN:
                    if _print_matches(term.console, field, text):
                        continue  # a long list, filtered by what was typed: pick from the matches
                    error = f"{field.name}: none of its {len(field.choices):,} choices contains {text.strip()!r}"
        term.console.print(Text(sanitize(error), style="red"))


def _print_field(console: Console, field: FieldSpec) -> None:
    """A field's heading (title, optional, description, constraints; server text cut and made safe) and its first
    ``CHOICES_SHOWN`` choices, with how to reach the rest."""
    line = Text()
    line.append(shown(field.title, NAME_SHOWN), style="bold")
    if not field.required:
        line.append(" (optional)", style="dim")
    if field.description:
        line.append("  " + shown(field.description), style="dim")
    hint = constraint_hint(field)
    if hint:
        line.append(f"  [{hint}]", style="cyan")
    console.print(line)
    numbered = _numbered(field)
    for number, choice in enumerate(field.choices[:CHOICES_SHOWN], 1):
        _print_choice(console, number, choice, numbered)
    if (more := len(field.choices) - CHOICES_SHOWN) > 0:
        console.print(Text(f"  … and {more:,} more: type part of one to see those that match", style="dim"))


CHOICES_SHOWN = 20
"""Choices listed under a field; a longer list is filtered by what the user types instead of printed whole."""


def _print_choice(console: Console, number: int, choice: Any, numbered: bool) -> None:
    label = choice.label if choice.label == choice.value else f"{choice.label} ({choice.value})"
    bullet = f"{number})" if numbered else "-"
    console.print(Text(f"  {bullet} {shown(label, NAME_SHOWN)}"))


def _print_matches(console: Console, field: FieldSpec, text: str) -> bool:
    """List the choices whose value or label contains ``text`` (the first ``CHOICES_SHOWN``); False: none does."""
    needle = text.strip().casefold()
    found = [
        (number, choice)
        for number, choice in enumerate(field.choices, 1)
        if needle in choice.value.casefold() or needle in choice.label.casefold()
    ]
    if not needle or not found:
        return False
    numbered = _numbered(field)
    for number, choice in found[:CHOICES_SHOWN]:
        _print_choice(console, number, choice, numbered)
    rest = len(found) - CHOICES_SHOWN
    tail = f"; {rest:,} more match: type more of it" if rest > 0 else ""
    console.print(Text(f"  {len(found):,} match {text.strip()!r}{tail}", style="dim"))
    return True


def _prompt(field: FieldSpec, current: Any) -> str:
    if current is None:
        return "› "
    if field.kind == "boolean":
        shown = "y" if current else "n"
    elif field.kind == "string" and not field.secret:
        shown = current  # what Enter keeps, without the JSON quotes of the summary
    else:
        shown = display_value(field, current)
    return f"[{sanitize(str(shown))}] › "


def _numbered(field: FieldSpec) -> bool:
    """Whether choices can be picked by number: not when a value is itself a number, which would be ambiguous."""
    return not any(choice.value.isascii() and choice.value.isdigit() for choice in field.choices)


def _from_numbers(field: FieldSpec, text: str) -> Any:
    """Turn choice numbers (``2`` or ``1, 3``) into choice values; anything else goes to ``coerce`` as typed."""
    if field.kind not in ("select", "multiselect") or not _numbered(field):
        return text

    def pick(token: str) -> str:
        token = token.strip()
        if token.isascii() and token.isdigit() and 1 <= int(token) <= len(field.choices):
            return field.choices[int(token) - 1].value
        return token

    if field.kind == "select":
        return pick(text)
    if text.strip().startswith("["):
        return text  # a JSON array, parsed by coerce
    return [pick(token) for token in text.split(",") if token.strip()]


def _read(term: Terminal, prompt: str, *, secret: bool = False) -> str:
    """One line from the user, with the commands that work at every prompt handled here."""
    try:
        text = (term.read_secret if secret else term.read_line)(prompt)
    except EOFError:
        raise _stopped() from None
    command = text.strip().lower()
    if command == ":quit":
        raise _stopped()
    if command in (":decline", ":cancel"):
        raise _Answered("decline" if command == ":decline" else "cancel")
    return text


def shown(text: object, limit: int | None = None) -> str:
    """Server text at a prompt: sanitized, and cut past ``limit`` (default ``display.TERMINAL_TEXT_MAX``) — a form's
    title or description of a megabyte would bury the prompt it belongs to."""
    from mcpcli.display import TERMINAL_TEXT_MAX, clip

    return clip(sanitize(str(text)), "all of it: --no-input --json", limit or TERMINAL_TEXT_MAX)


NAME_SHOWN = 200
"""Characters of a field's title or a choice's label shown at a prompt before it is cut."""


def read_reply(term: Terminal, prompt: str) -> str:
    """One line for a question that is not a form field (a URL's consent, a sampling approval): Ctrl-D stops the
    flow there, as it does at a field (exit 5, the session kept), instead of escaping as an ``EOFError``."""
    try:
        return term.read_line(prompt)
    except EOFError:
        raise _stopped() from None


def _stopped() -> UserStopped:
    # No hint here: the caller knows the session id and adds "Resume it with: mcpcli resume <id>".
    return UserStopped("Stopped at the prompt; the session is kept.", hint=None)


def _confirm(term: Terminal, fields: Sequence[FieldSpec], content: Mapping[str, Any]) -> bool:
    """Show what will be sent and ask; True to send, False to go through the fields again."""
    summary = Text("Send: ", style="bold")
    given = [field for field in fields if field.name in content]
    for index, field in enumerate(given):
        summary.append(("" if index == 0 else " · ") + shown(field.title, NAME_SHOWN) + "=")
        summary.append(shown(display_value(field, content[field.name])), style="cyan")
    if not given:
        summary.append("(no fields)", style="dim")
    term.console.print(summary)
    while True:
        answer = _read(term, CONFIRM).strip().lower()  # :decline, :cancel and :quit are handled by _read
        if answer in ("", "y", "yes"):
            return True
        if answer in ("n", "no"):
            return False
        if answer in ("decline", "cancel"):
            raise _Answered("decline" if answer == "decline" else "cancel")
        if answer == "quit":
            raise _stopped()
        term.console.print(Text("Answer y, n, decline or cancel.", style="red"))


def confirm_command(term: Terminal, command: str, *, cwd: str | None = None, holder: str = "This session") -> bool:
    """Ask before running a stored server command line that did not come from the user (``command`` is
    sanitized by the caller). Only ``y``/``yes`` runs it; Enter, ``n`` or Ctrl-D does not."""
    term.console.print(
        Text(f"{holder} starts its server with a command that did not come from you or your config:", style="bold")
    )
    term.console.print(Text("  " + command, style="yellow"))
    if cwd:
        term.console.print(Text("  in " + sanitize(cwd), style="dim"))
    try:
        answer = term.read_line("Run it? [y/N] ").strip().lower()
    except EOFError:
        return False
    return answer in ("y", "yes")


def detach_or_cancel(term: Terminal, task_id: str) -> bool:
    """Ctrl-C while the call runs as a task on the server: True to cancel the task there, False to leave it
    running (the default: Enter, ``d``, Ctrl-D or a second Ctrl-C) for a later ``mcpcli resume``."""
    try:
        with interruptible():
            term.console.print(Text(f"Task {short_id(task_id)} is still running on the server.", style="bold"))
            answer = term.read_line("Detach (leave it running) or cancel it? [D/c] ").strip().lower()
    except (EOFError, KeyboardInterrupt):
        return False
    return answer in ("c", "cancel")
