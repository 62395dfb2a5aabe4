"""The steps a flow and a task flow share — the public seam between ``flow`` and ``taskflow``.

What a flow is given (``Call``, ``Limits``, a ``Reporter``, ``AnswerSource``s), what it ends with (``Outcome``, or
``NeedInput`` / ``LimitReached``), the wire helpers both use (``for_server``, ``parse_request``, ``dump``), and
``FlowSteps``: the face of a running ``Flow`` that a task flow drives (its keeper, its deadline, recording and
finishing a round). ``flow`` imports ``taskflow`` and both import this; neither reaches into the other's privates.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import mcp_types as t
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from mcpcli.display import some_of
from mcpcli.errors import Action, ExitCode, McpcliError, NextStep, ServerError, UserStopped

if TYPE_CHECKING:
    from mcp import Client

    from mcpcli.net.tasks import TaskControl
    from mcpcli.state.keeper import Keeper
    from mcpcli.state.store import RoundRecord, SessionRecord

Method = Literal["tools/call", "prompts/get", "resources/read"]


@dataclass(frozen=True)
class Call:
    """What the flow calls: the same method, name and arguments on every leg."""

    method: Method
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Question:
    """One input request of a round, as an answer source sees it."""

    key: str
    """The request key the server chose (for back-channel questions: ``elicitation-1``, ``roots-1``...)."""
    request: t.InputRequest
    """The typed request."""
    wire: dict[str, Any]
    """The request as received (JSON); stored, replayed and shown in the exit-3 document."""
    session_id: str
    server: str
    """The server target label, for display."""
    round_requests: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """Every request of this round (to tell which request a bare ``--answer FIELD=...`` means)."""
    back_channel: bool = False
    """Asked mid-call by a pre-2026 server: it cannot be deferred to a later resume."""


class AnswerSource(Protocol):
    """Something that can answer some questions: presets, replay, roots, the terminal, an LLM."""

    @property
    def interactive(self) -> bool:
        """True when answering may ask a person (such sources run only after every other source declined)."""
        ...

    async def answer(self, question: Question) -> t.InputResponse | None:
        """The answer, or None when this source cannot answer that question."""
        ...


class Explains(Protocol):
    """A source that knows, before anyone is asked, that it cannot answer a question (no LLM provider)."""

    def why_not(self, question: Question) -> McpcliError | None:
        """Why ``question`` will stay open (its hint says how to change that); None when this source may answer."""
        ...


class RoundAnswerer(Protocol):
    """An interactive source that shows a round's open questions together (the TUI's round screen).

    Optional: when an interactive source has ``answer_round``, the flow hands it every question a person
    must answer in one call, so they are submitted together, as the protocol sends them in one retry.
    """

    async def answer_round(self, questions: Sequence[Question]) -> dict[str, t.InputResponse]:
        """Answers by request key; a key left out means nobody answered it (the flow then waits, exit 3)."""
        ...


class NeedInput(McpcliError):
    """Input is required and nobody can answer it: the session is saved, exit 3."""

    exit_code = ExitCode.INPUT_REQUIRED
    default_title = "Input required"

    def __init__(
        self,
        session: SessionRecord,
        pending: dict[str, dict[str, Any]],
        *,
        deferred: bool = True,
        confirm_from: str | None = None,
    ) -> None:
        """Worded by what the flow waits for: answers for later (``deferred``), a question asked mid-call that cannot
        wait, or its owner's confirmation of another person's answers (``confirm_from``). The next step follows: answer,
        sample, visit, confirm or answer here."""
        what = some_of(list(pending), 10) or "input"
        if confirm_from is not None:
            message = (
                f"Session {session.id} was answered by {confirm_from}; its route asks you to confirm before sending."
            )
        elif deferred:
            message = f"Session {session.id} is waiting for input: {what}."
        else:
            message = f"The server asked mid-call ({what}) and nobody could answer; such a question cannot be deferred."
        action: Action = "answer" if deferred else "answer_here"
        # No --answer answers a sampling request (an LLM does) nor a URL request (the user visits the page).
        if pending and all(wire.get("method") == "sampling/createMessage" for wire in pending.values()):
            action = "sample"
        elif pending and all((wire.get("params") or {}).get("mode") == "url" for wire in pending.values()):
            action = "visit"
        if confirm_from is not None:
            action = "confirm"
        super().__init__(message, next_step=NextStep(action, session.id))
        self.session = session
        self.pending = pending
        self.deferred = deferred
        """Whether the question waits in the session (2026-07-28), or was asked mid-call and could not wait."""
        self.confirming = confirm_from is not None
        """Whether it waits for its owner to confirm another person's answers (not for an answer)."""


class Declined(UserStopped):
    """The user declined (or cancelled) a request that has no such answer: an LLM completion or the roots.

    On 2026-07-28 the server is not waiting for it (the spec's sampling and roots pages: the client need not call
    again), so the call ends here with nothing more sent; exit 5, the session kept with what was answered.
    Before 2026 the back-channel request gets the spec's error instead (``REJECTED``) and the call goes on.
    """

    default_title = "Declined"

    def __init__(self, key: str, action: str, origin: str, kind: str) -> None:
        super().__init__(
            f"{origin}: {key} asks for {kind}, which has no {action} answer to send; the call ends here, without "
            "calling the server again (it waits for nothing). Your other answers to the round are kept."
        )
        self.key = key


REJECTED = -1
"""The JSON-RPC error code a pre-2026 client answers a refused ``sampling/createMessage`` with (2025-11-25, sampling:
"User rejected sampling request")."""


def kind_of(request: t.InputRequest) -> str:
    """What a request asks for, in a few words (its key is the server's)."""
    if isinstance(request, t.CreateMessageRequest):
        return "an LLM completion (sampling)"
    if isinstance(request, t.ListRootsRequest):
        return "the client's roots"
    return "an answer to a form" if isinstance(request.params, t.ElicitRequestFormParams) else "a visit to a page"


class LimitReached(McpcliError):
    """``--max-rounds`` or ``--timeout`` was reached: exit 4, session kept."""

    exit_code = ExitCode.SERVER
    default_title = "Limit reached"


@dataclass
class Outcome:
    """A finished flow: the result and the session (None when no round needed input)."""

    result: dict[str, Any]
    session: SessionRecord | None
    exit_code: ExitCode
    detached: bool = False
    """The call became a task left running on the server (``--detach``): no result yet, the session continues it."""
    cancelled: bool = False
    """The session's task was cancelled at the user's request (``resume --cancel-task``)."""
    refused: tuple[str, ...] = ()
    """What a pre-2026 server asked mid-call and did not get (nobody could answer, or mcpcli could not use the
    answer given) before it finished anyway: the front end prints the result and warns once (``refusal``)."""

    def refusal(self) -> str | None:
        """The one warning that goes with the result when ``refused`` names anything."""
        return f"The server finished without an answer to {'; '.join(self.refused)}." if self.refused else None


@dataclass
class Limits:
    max_rounds: int = 10
    """How many input-required results one run may answer."""
    timeout: float | None = None
    """Wall-clock seconds for the whole run (network legs and back-off; a person's think time is not cut off)."""


class Reporter(Protocol):
    """What the flow tells the user along the way (stderr)."""

    def note(self, text: str) -> None: ...

    def detail(self, text: str) -> None:
        """Shown with ``-v`` only."""
        ...

    def progress(self, progress: float, total: float | None, message: str | None) -> None: ...


def dump(model: Any) -> dict[str, Any]:
    """An SDK model as wire JSON."""
    result: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


def is_stale_state(exc: MCPError) -> bool:
    """The server's fixed answer to a state it no longer accepts (expired, restarted, other key)."""
    data = exc.data if isinstance(exc.data, dict) else {}
    return exc.code == t.INVALID_PARAMS and (
        data.get("reason") == "invalid_request_state" or "requeststate" in exc.message.lower().replace(" ", "")
    )


def result_exit_code(method: str, result: Mapping[str, Any]) -> ExitCode:
    return ExitCode.TOOL_ERROR if method == "tools/call" and result.get("isError") else ExitCode.OK


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    """Validators for stored JSON, built once (a pure cache, not flow state)."""
    return TypeAdapter(kind)


def prepare_validators() -> None:
    """Build the validators a flow uses now (a process that forks flows builds them once, not in every child)."""
    for kind in (t.InputRequest, t.InputResponses):
        _adapter(kind)


def parse_request(wire: Mapping[str, Any]) -> t.InputRequest:
    """A stored request (JSON) back to its SDK model."""
    request: t.InputRequest = _adapter(t.InputRequest).validate_python(wire, by_alias=True)
    return request


def is_legacy(protocol_version: str | None) -> bool:
    """Pre-2026 servers ask over the back-channel; their flows resume by starting over."""
    return protocol_version is not None and protocol_version < "2026-07-28"


def innermost(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return (str(exc) or type(exc).__name__).splitlines()[0]


PRIVATE_META = "io.mcpcli/"
"""The ``_meta`` prefix of what mcpcli keeps in a stored answer for itself (a sampling reply's token counts)."""


def for_server(responses: Mapping[str, Any]) -> dict[str, Any]:
    """The answers as the server gets them: mcpcli's own ``_meta`` entries stay in the store, never go out."""
    sent: dict[str, Any] = {}
    for key, answer in responses.items():
        meta = answer.get("_meta") if isinstance(answer, Mapping) else None
        if isinstance(meta, Mapping) and any(str(name).startswith(PRIVATE_META) for name in meta):
            kept = {name: value for name, value in meta.items() if not str(name).startswith(PRIVATE_META)}
            answer = {k: v for k, v in answer.items() if k != "_meta"} | ({"_meta": kept} if kept else {})
        sent[key] = answer
    return sent


def typed_responses(responses: Mapping[str, Any]) -> t.InputResponses:
    typed: t.InputResponses = _adapter(t.InputResponses).validate_python(dict(responses), by_alias=True)
    return typed


class Unanswered(Protocol):
    """What a task flow reads of a flow's back-channel questions (``engine.midcall.MidCall``)."""

    failed: dict[str, dict[str, Any]]
    """Questions asked mid-call that nobody could answer, by request key."""


class FlowSteps(Protocol):
    """What a task flow (``taskflow``) uses of the ``Flow`` that drives it: its parts and the steps of a round."""

    keeper: Keeper
    client: Client | None
    reporter: Reporter
    limits: Limits
    detach: bool
    task_control: TaskControl
    deadline: float
    """When the run's ``--timeout`` runs out, on the monotonic clock (``math.inf``: never)."""

    @property
    def mid_call(self) -> Unanswered:
        """The questions a pre-2026 server asked mid-call (``engine.midcall.MidCall``)."""
        ...

    @property
    def session(self) -> SessionRecord | None: ...

    def session_record(self) -> SessionRecord:
        """The flow's session, built (not yet saved) at the first input request."""
        ...

    def event(self, kind: str, /, **fields: Any) -> None:
        """A step of the loop, told to the trace."""
        ...

    def next_step(self, action: Action = "continue") -> NextStep | None:
        """Continue the saved session (the front end words it); None when nothing was saved."""
        ...

    def take_refusal(self) -> McpcliError | None: ...

    async def fail(self, message: str) -> ServerError:
        """Keep the session waiting with ``message``; the error to raise."""
        ...

    async def timed_out(self) -> LimitReached:
        """Keep the session waiting; the ``--timeout`` error to raise."""
        ...

    async def finish(self, result: dict[str, Any], **changes: Any) -> Outcome:
        """Store the result as the session's last word; the outcome."""
        ...

    async def answer_stored(self, pending: RoundRecord) -> dict[str, Any]:
        """The answers a round saved before they were sent."""
        ...

    async def take_round(self, requests: dict[str, dict[str, Any]], state: str | None) -> dict[str, Any]:
        """Answer a round's requests (sources, then people) and record them before they are sent."""
        ...

    async def call_again(self, *, as_task: bool) -> Outcome:
        """A new attempt at the call (``as_task``: called as a task again), the stored answers replayed."""
        ...


def failed_result(result: Any) -> bool:
    """Whether a flow leg's result is a failure: a tool result marked ``isError`` (a prompt or a resource fails
    only with a JSON-RPC error)."""
    return getattr(result, "is_error", None) is True


def new_session(call: Call, **fields: Any) -> SessionRecord:
    """A new session for ``call`` (not saved yet: it is written with its first round), ``running``."""
    from datetime import UTC, datetime

    from mcpcli.state.store import SessionRecord, new_session_id

    now = datetime.now(UTC)
    return SessionRecord(
        id=new_session_id(),
        method=call.method,
        name=call.name,
        arguments=call.arguments,
        status="running",
        created=now,
        updated=now,
        **fields,
    )
