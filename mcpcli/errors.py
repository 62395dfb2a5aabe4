"""Errors and exit codes: the one place that maps a failure to what the user sees.

Every failure mcpcli expects is an ``McpcliError`` carrying a one-line message,
a short title and a hint (ideally the command that fixes it). The front end prints
it once, on stderr, and exits with its ``exit_code``.

The core words no command line: where the fix is an mcpcli command about a session, the
error carries a ``NextStep`` (what to do, about which session) and the front end words it
(``terminal.hints``) — so the CLI, the app and the worker say the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Literal

Action = Literal[
    "answer", "answer_here", "sample", "visit", "continue", "continue_more_rounds", "steal", "look", "confirm"
]
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
    """The exit codes docs/exit-codes.md documents."""

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


UNREADABLE_RESPONSE = "mcpcli could not read the server's response (nested too deeply, or not a JSON-RPC response)"
"""The error a stdio transport ends a request with when its response cannot be read (``transports``)."""


DRESSED_RPC_ERROR = re.compile(r"MCP error (-?\d+): (.+)", re.DOTALL)
"""How the TypeScript SDK's servers hand a JSON-RPC error back as a tool result's one text (``McpError.message``)."""


def rpc_error(code: int, message: str, what: str = "The server answered with an error") -> str:
    """One line for a JSON-RPC error a request ended with: the server's words, or — for a response nobody could
    read (mcpcli's stdio transport, or the SDK's HTTP one, which quotes pydantic's whole multi-line report) —
    that, without the report."""
    if code == -32700 and (message == UNREADABLE_RESPONSE or message.startswith("Failed to parse JSON response")):
        return "mcpcli could not read the server's response: it is not a JSON-RPC response, or is nested too deeply."
    return f"{what}: {message} (code {code})."


FALLBACK_HINTS: dict[int, str] = {
    ExitCode.TOOL_ERROR: "The tool reported the error; its result says why.",
    ExitCode.USAGE: "Nothing was sent; see the command's --help.",
    ExitCode.INPUT_REQUIRED: "The session waits for answers: mcpcli sessions list --waiting",
    ExitCode.SERVER: "Run again with -v to see each message (details in the log: mcpcli paths).",
    ExitCode.STOPPED: "Run the command again when you want to go on.",
    ExitCode.SESSION: "See the stored sessions with: mcpcli sessions list",
    ExitCode.INTERRUPTED: "Run the command again when you want to go on.",
}
"""A ``--json`` error's hint when the failure has none of its own: every document has one (README: errors as
data), said by what its exit code means."""


def error_document(exc: McpcliError) -> dict[str, object]:
    """The error as data for ``--json`` (README: errors as data): what the stderr line says, and the exit code;
    the hint is always there (``FALLBACK_HINTS`` when the failure has none)."""
    hint = exc.hint or FALLBACK_HINTS.get(int(exc.exit_code), "Run again with --debug for the details.")
    error: dict[str, object] = {"message": exc.message, "hint": hint, "exit_code": int(exc.exit_code)}
    session_id = exc.session_id or (exc.next_step.session_id if exc.next_step is not None else None)
    if session_id is not None:  # the session the failure is about: kept, or the one to act on
        error["session_id"] = session_id
    return {"error": error}


def print_error(exc: McpcliError) -> None:
    """The one error printer: ``Title: message`` and a dim hint line, on stderr, server text sanitized."""
    from rich.console import Console
    from rich.text import Text

    from mcpcli.display import sanitize

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    message = exc.message
    if console.is_terminal:  # a 5 MB server error would bury the terminal; a file or a pipe gets all of it
        from mcpcli.display import clip

        message = clip(
            message, "all of it: run again with --json (the whole error on stdout), or send stderr to a file"
        )
    console.print(Text.assemble((f"{exc.title}: ", "bold red"), sanitize(message)))
    if exc.hint:
        console.print(Text(f"hint: {sanitize(exc.hint)}", style="dim"))


def invalid_shape(errors: Sequence[Mapping[str, Any]]) -> str:
    """What is wrong with a malformed server message, in one line, from pydantic's ``ValidationError.errors()``.

    The SDK validates a result against a union (a complete result or an input-required one; a request of one of
    three kinds; a content item of one of five), and pydantic reports every arm's complaints; the first is
    usually about an arm the server never meant (``content: Field required`` for an input-required result). An
    arm whose tag field (``resultType``, ``method``, ``type``, ``mode``) has the wrong value is not what the
    server meant; when every arm's tag is wrong, the tag is the problem: ``inputRequests.x.method:
    'telepathy/read' is not one of 'sampling/createMessage', 'roots/list', 'elicitation/create'``. The text
    quotes server-chosen keys and values: sanitize it before display.
    """
    found = [dict(e) for e in errors if e.get("loc") is not None]
    for error in found:  # the SDK routes results with extension claims through a tagged union: its core arm
        if error["loc"] and re.fullmatch(r"core-*", str(error["loc"][0])):
            error["loc"] = tuple(error["loc"][1:])
    return _problem(found, ()) or "its shape is not valid"


def _problem(errors: list[dict[str, Any]], at: tuple[Any, ...]) -> str:
    """The one problem worth telling from pydantic's errors under ``at``: follow the location down; where a union has
    several arms, the arm the data meant (its tag fits, and none of its own fields is missing) — or, when no tag fits,
    which tags were expected. Empty when nothing failed there."""
    depth = len(at)
    here = [e for e in errors if tuple(e["loc"][:depth]) == at]
    if not here:
        return ""
    arms = list(dict.fromkeys(e["loc"][depth] for e in here if len(e["loc"]) > depth and _is_arm(e["loc"][depth])))
    if not arms:
        first = here[0]
        if len(first["loc"]) > depth:
            return _problem(errors, (*at, first["loc"][depth]))
        where = ".".join(str(part) for part in first["loc"] if not _is_arm(part))
        said = re.sub(r" or instance of \w+", "", str(first["msg"]).removeprefix("Value error, "))
        return f"{where}: {said}" if where else said

    def tag_errors(arm: Any) -> list[dict[str, Any]]:
        return [e for e in here if e["loc"][depth : depth + 1] == (arm,) and _tag_error(e, depth + 2)]

    meant = [arm for arm in arms if not tag_errors(arm)]
    if not meant:
        wrong = [e for arm in arms for e in tag_errors(arm)]
        expected = ", ".join(dict.fromkeys(str((e.get("ctx") or {}).get("expected", "?")) for e in wrong))
        first = wrong[0]
        where = ".".join(str(part) for part in (*first["loc"][:depth], first["loc"][depth + 1]) if not _is_arm(part))
        said = "missing" if first["type"] == "missing" else f"{first.get('input')!r} is not one of {expected}"
        return f"{where}: {said}"
    # An arm missing one of its own fields is a worse guess than one that has them all (a result with no
    # ``content`` was not meant as a complete result when it can be an input-required one).
    whole = [arm for arm in meant if not any(_missing_field(e, arm, depth) for e in here)]
    return _problem(errors, (*at, (whole or meant)[0]))


def _is_arm(part: Any) -> bool:
    """A union arm's name in a pydantic location (``CallToolResult``, ``function-after[…, InputRequiredResult]``)
    rather than a field name or a key the server chose (keys are not CamelCase class names, as a rule)."""
    return isinstance(part, str) and (
        "[" in part or (part[:1].isupper() and part.isidentifier() and part != part.upper())
    )


def _missing_field(error: Mapping[str, Any], arm: Any, depth: int) -> bool:
    return error["type"] == "missing" and len(error["loc"]) == depth + 2 and error["loc"][depth] == arm


_TAGS = frozenset({"resultType", "method", "type", "mode"})


def _tag_error(error: Mapping[str, Any], length: int) -> bool:
    loc = error["loc"]
    return (
        len(loc) == length
        and loc[-1] in _TAGS
        and (error["type"] == "literal_error" or (error["type"] == "missing" and loc[-1] == "method"))
    )


def lone(exc: BaseException) -> BaseException:
    """The one exception inside ``exc``'s nested single-member groups (a task group wraps what its body raised, once
    per level), or ``exc`` itself: what a command reports. A group of several is returned as it is."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
