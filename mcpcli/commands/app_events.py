"""What an app run tells its person: the ``AppEvents`` a front end implements for ``commands.apps``.

The view's news (``ui/message``, model-context updates, logs, refusals, CSP violations), the URL, the launching
call's result and the run's notes go through one sink: ``CliEvents`` prints them on stderr (the result on stdout),
or with ``--json`` writes them to stdout as JSON Lines events an agent can read; the full-screen app has its own
(``tui.apprun``), showing the same lines — ``said_line`` words them for both — in its run screen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from mcpcli.display import sanitize
from mcpcli.errors import ExitCode, McpcliError

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime
    from mcpcli.engine.steps import NeedInput, Outcome

Level = Literal["note", "warning", "detail"]


class AppEvents(Protocol):
    """Where an app run says what happens (``commands.apps``): the terminal, JSON Lines, or the full-screen app."""

    def url(self, url: str, *, opened: bool, renew: Callable[[], str] | None = None) -> None:
        """The host page's one-time link (``renew`` mints another: a link is short-lived and used once)."""
        ...

    def result(self, done: Outcome) -> ExitCode:
        """The launching call's result (the view gets it too); its exit code."""
        ...

    def waiting(self, need: NeedInput) -> int:
        """The launching call waits for input nobody here gives: its session is kept; the exit code (3)."""
        ...

    def error(self, exc: McpcliError) -> None: ...

    def teardown(self, reason: str, *, answered: bool) -> None: ...

    def note(self, text: str) -> None: ...

    def warning(self, text: str) -> None: ...

    def parked(self, tool: str, need: NeedInput) -> None:
        """A view's call waits for input: it is stored (``mcpcli resume``), the view gets an error."""
        ...

    def view_call(self, tool: str, outcome: Outcome) -> None: ...

    def link(self, url: str, *, opened: bool, why: str | None) -> None:
        """A view's ``ui/open-link``, after it was asked (``why``: why it was not opened)."""
        ...

    def said(self, kind: str, params: dict[str, Any]) -> None:
        """The bridge's news: a message, a model-context update, a log line, a refusal, a CSP violation."""
        ...


def said_line(kind: str, params: Mapping[str, Any]) -> tuple[Level, str] | None:
    """The bridge's news in words, for the person (server and view text sanitized, cut for one line); None: nothing
    worth a line."""
    if kind == "message":
        return "note", f"The app says: {text_of(params.get('content'))}"
    if kind == "model-context":
        shown = text_of(params.get("content")) or sanitize(str(params.get("structuredContent") or ""))[:300]
        return "note", f"The app updated its model context: {shown}"
    if kind == "log":
        level = sanitize(str(params.get("level") or "info"))
        return "note", f"app log [{level}]: {sanitize(str(params.get('data')))[:1000]}"
    if kind == "refused":
        method, reason = sanitize(str(params.get("method"))), sanitize(str(params.get("reason")))
        return "warning", f"Refused the app's {method}: {reason}."
    if kind == "csp-violation":
        blocked = sanitize(str(params.get("blocked") or params.get("blockedURI") or "something"))
        directive = sanitize(str(params.get("directive") or params.get("violatedDirective") or "its policy"))
        return "warning", f"The app's view was blocked by its CSP: {blocked} ({directive})."
    if kind == "initialized":
        return "detail", "The app's view is up."
    return None


def text_of(content: Any) -> str:
    """The text of a content block (or a list of them), sanitized and cut for one line."""
    blocks = content if isinstance(content, list) else [content]
    texts = [str(b.get("text")) for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"]
    return sanitize(" ".join(texts))[:1000]


def teardown_line(reason: str, *, answered: bool) -> str:
    return f"The app's view was told to close ({reason}){'' if answered else '; it did not answer'}."


def parked_line(tool: str, need: NeedInput) -> str:
    return f"The app's call to {sanitize(tool)} waits for input: mcpcli resume {need.session.id}"


class CliEvents:
    """What the app does, for the person (stderr) or, with ``--json``, for a reader (stdout, JSON Lines)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        if rt.json:
            rt.json_lines = True

    def _emit(self, event: str, **fields: Any) -> None:
        self.rt.out.json_line({"event": event, **fields})

    def url(self, url: str, *, opened: bool, renew: Callable[[], str] | None = None) -> None:
        if self.rt.json:
            self._emit("app-url", url=url)
        elif opened:
            self.rt.out.note(f"Opening the app in your browser (if it does not open, visit: {url})")
        else:
            self.rt.out.note(f"Open the app in a browser on this machine: {url}")

    def result(self, done: Outcome) -> ExitCode:
        from mcpcli.commands.printed import render

        if self.rt.json:
            self.rt.out.json_line(done.result)
            return ExitCode(int(done.exit_code))
        return ExitCode(render(self.rt, "tools/call", done))

    def waiting(self, need: NeedInput) -> int:
        from mcpcli.commands.printed import needs_input

        if not self.rt.json:
            return needs_input(self.rt, need)
        from mcpcli.engine.answers import answers_template
        from mcpcli.terminal.output import pending_document

        self.rt.out.json_line(pending_document(need.session.id, need.pending, answers_template(need.pending)))
        return int(ExitCode.INPUT_REQUIRED)

    def teardown(self, reason: str, *, answered: bool) -> None:
        if self.rt.json:
            self._emit("app-teardown", reason=reason, answered=answered)
        else:
            self.rt.out.detail(teardown_line(reason, answered=answered))

    def note(self, text: str) -> None:
        if self.rt.json:
            self._emit("app-note", text=text)
        else:
            self.rt.out.note(text)

    def warning(self, text: str) -> None:
        if self.rt.json:
            self._emit("app-warning", text=text)
        else:
            self.rt.out.warning(text)

    def error(self, exc: McpcliError) -> None:
        from mcpcli.errors import error_document, print_error

        if self.rt.json:
            self.rt.out.json_line(error_document(exc))
        else:
            print_error(exc)

    def parked(self, tool: str, need: NeedInput) -> None:
        if self.rt.json:
            self._emit("app-call-waiting", tool=tool, session=need.session.id, pending=list(need.pending))
        else:
            self.rt.out.warning(parked_line(tool, need))

    def view_call(self, tool: str, outcome: Outcome) -> None:
        if self.rt.json:
            self._emit("app-tool-call", tool=tool, result=outcome.result)
        else:
            self.rt.out.detail(f"The app called {sanitize(tool)}.")

    def link(self, url: str, *, opened: bool, why: str | None) -> None:
        if self.rt.json:
            self._emit("app-open-link", url=url, opened=opened, **({"why": why} if why else {}))
        elif not opened and why != "declined":
            self.rt.out.warning(f"The app asked to open {sanitize(url)}; not opened ({why}).")

    def said(self, kind: str, params: dict[str, Any]) -> None:
        if self.rt.json:
            self._emit(f"app-{kind}", **params)
            return
        line = said_line(kind, params)
        if line is not None:
            level, text = line
            {"note": self.rt.out.note, "warning": self.rt.out.warning, "detail": self.rt.out.detail}[level](text)
