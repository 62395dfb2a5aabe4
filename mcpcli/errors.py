"""Errors and exit codes: the one place that maps a failure to what the user sees.

Every failure mcpcli expects is an ``McpcliError`` carrying a one-line message,
a short title and a hint (ideally the command that fixes it). The front end prints
it once, on stderr, and exits with its ``exit_code``.

The core words no command line: where the fix is an mcpcli command about a session, the
error carries a ``NextStep`` (what to do, about which session) and the front end words it
(``terminal.hints``) — so the CLI, the app and the worker say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

Action = Literal["answer", "answer_here", "sample", "visit", "continue", "continue_more_rounds", "steal", "look"]
"""What the user can do next about a session: answer what it waits for (``answer``), answer a question that
could not wait (``answer_here``), let an LLM answer the sampling requests it waits for (``sample``), say the
pages it sends you to were visited (``visit``), continue it (``continue``), with more rounds (``continue_more_rounds``),
take it over from a driver that is gone (``steal``), or look at where it stands (``look``)."""


@dataclass(frozen=True)
class NextStep:
    """What the user can do next about a session, as data; the front end words it (``terminal.hints``)."""

    action: Action
    session_id: str


class ExitCode(IntEnum):
    """The exit codes of DESIGN.md §Output and exit codes."""

    OK = 0
    TOOL_ERROR = 1
    USAGE = 2
    INPUT_REQUIRED = 3
    SERVER = 4
    STOPPED = 5
    SESSION = 6
    INTERRUPTED = 130


class McpcliError(Exception):
    """An expected failure: one line of what happened, one line of what to do."""

    exit_code: ExitCode = ExitCode.SERVER
    default_title = "Error"
    session_id: str | None = None
    """The session the failure left behind (kept, resumable), when there is one: set where it is known."""

    def __init__(
        self, message: str, *, title: str | None = None, hint: str | None = None, next_step: NextStep | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.title = title or self.default_title
        self.hint = hint
        """What to do, in words; None until a front end words ``next_step`` (``terminal.hints.worded``)."""
        self.next_step = next_step
        """What to do as data, when it is an mcpcli command about a session."""


class UsageError(McpcliError):
    """Bad options, arguments or answers; nothing was sent."""

    exit_code = ExitCode.USAGE
    default_title = "Usage error"


class InvalidAnswer(UsageError):
    """An answer given up front (``--answer``…) that its question does not accept; nothing was sent."""

    default_title = "Invalid answer"


class ConfigError(UsageError):
    """The config file or an environment variable is invalid."""

    default_title = "Config error"


class ServerError(McpcliError):
    """Connection, protocol or server failure."""

    exit_code = ExitCode.SERVER
    default_title = "Server error"
    rpc_code: int | None = None
    """The JSON-RPC error code, when the server answered the request with an error."""


class SessionError(McpcliError):
    """A session is busy, missing or ambiguous."""

    exit_code = ExitCode.SESSION
    default_title = "Session error"


class StoreError(McpcliError):
    """The session store cannot be opened or used safely."""

    exit_code = ExitCode.SERVER
    default_title = "Store error"


class UserStopped(McpcliError):
    """The user quit at one of mcpcli's own prompts (Ctrl-D / quit)."""

    exit_code = ExitCode.STOPPED
    default_title = "Stopped"


def error_document(exc: McpcliError) -> dict[str, object]:
    """The error as data for ``--json`` (DESIGN.md §Errors as data): what the stderr line says, and the exit code."""
    error: dict[str, object] = {"message": exc.message, "hint": exc.hint, "exit_code": int(exc.exit_code)}
    if exc.session_id is not None:
        error["session_id"] = exc.session_id
    return {"error": error}


def print_error(exc: McpcliError) -> None:
    """The one error printer: ``Title: message`` and a dim hint line, on stderr, server text sanitized."""
    from rich.console import Console
    from rich.text import Text

    from mcpcli.display import sanitize

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    message = exc.message
    if console.is_terminal:  # a 5 MB server error would bury the terminal; a file or a pipe gets all of it
        from mcpcli.bounds import clip

        message = clip(
            message, "all of it: run again with --json (the whole error on stdout), or send stderr to a file"
        )
    console.print(Text.assemble((f"{exc.title}: ", "bold red"), sanitize(message)))
    if exc.hint:
        console.print(Text(f"hint: {sanitize(exc.hint)}", style="dim"))
