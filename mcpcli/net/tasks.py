"""Tasks: a tool call the server answers with a task handle and finishes later (the 2026-07-28 extension
``io.modelcontextprotocol/tasks``, SEP-2663).

This module owns the wire side — the client extension that declares the capability on every request and lets
``tools/call`` return a ``CreateTaskResult``, the ``tasks/get``/``tasks/update``/``tasks/cancel`` requests (with
their ``Mcp-Name`` routing header), the shapes they answer — and ``TaskState``, what a session keeps of its task:
id, status, poll position, which answers the server acknowledged. ``Flow`` drives the polling loop with it
(``mcpcli.task_loop``). The SDK is extended only through its hooks (``ClientExtension``, ``ResultClaim``).

Wire notes (the published spec, github.com/modelcontextprotocol/ext-tasks): no ``requestState`` on the tasks wire
(task input goes by ``tasks/update``, never by retrying the call); each ``inputRequests`` key is unique over the
task's life, so a key answered once is never answered again; an unknown task is -32602.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as t
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from mcpcli.state.store.base import task_problem

if TYPE_CHECKING:
    from mcp import Client

EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension's identifier: declared in every request's ``_meta`` client capabilities."""

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
"""The two generations: the extension (``tasks/update``), and the core 2025-11-25 task-augmented requests
(the ``task`` param, ``tasks/result`` blocking while the server asks over the back-channel)."""

CREATED_TASK_META = "io.mcpcli/created-task"
"""Where ``connection`` puts a 2025-11-25 ``CreateTaskResult``'s task, in a placeholder ``CallToolResult``: the
SDK checks a 2025-11-25 ``tools/call`` result against ``CallToolResult`` alone (see ``legs.FlowLegs``)."""

_TTL = AliasChoices("ttlMs", "ttl", "ttl_ms")
_POLL = AliasChoices("pollIntervalMs", "pollInterval", "poll_interval_ms")

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL = frozenset({"completed", "failed", "cancelled"})

DEFAULT_POLL = 1.0
"""Seconds between polls when the server suggests none (or a negative interval)."""
POLL_FLOOR = 0.1
"""The shortest wait between polls, whatever the server suggests (``pollIntervalMs: 0`` would be a busy loop)."""
POLL_CAP = 5.0
"""The longest: an unchanged task is polled less and less often, up to this — a server's longer interval (even
10^12 ms) too, so a task that ended is seen within it."""
POLL_GROWTH = 1.5
STREAMED_FACTOR = 10
"""While the server sends the task's status on a listen stream (``taskfeed``), polls are only a safety net against a
stream that went quiet: this many times the usual interval apart (1 s for the 100 ms floor)…"""
STREAMED_CAP = 30.0
"""…and at most this many seconds apart (a 5 s interval's 50 s would leave a silent stream unnoticed too long)."""

LISTEN_ID: ContextVar[str | None] = ContextVar("mcpcli_listen_id", default=None)
"""The JSON-RPC id a ``subscriptions/listen`` sent in this context goes out under (``legs.FlowLegs`` sets it):
the stream's frames carry it as their subscription id, so ``taskfeed`` must know it before the first frame."""


class CreateTaskResult(t.Result):
    """``resultType: "task"``: the server took the call as a task (SEP-2663 ``Result & Task``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str = "working"
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = Field(default=None, validation_alias=_TTL)
    poll_interval_ms: int | None = Field(default=None, validation_alias=_POLL)
    generation: str = MODERN


class DetailedTask(BaseModel):
    """What ``tasks/get`` answers: the task, with ``inputRequests``, ``result`` or ``error`` by status."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = Field(default=None, validation_alias=_TTL)
    poll_interval_ms: int | None = Field(default=None, validation_alias=_POLL)
    input_requests: dict[str, dict[str, Any]] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class Ack(BaseModel):
    """The empty acknowledgement of ``tasks/update`` and ``tasks/cancel``."""

    model_config = ConfigDict(extra="allow")


class _TaskParams(t.RequestParams):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    task_id: str


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any]


class _GetTask(t.Request[_TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: _TaskParams
    name_param = "taskId"  # SEP-2663: the Mcp-Name header carries the task id (routing to the task's instance)


class _UpdateTask(t.Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: _UpdateParams
    name_param = "taskId"


class _CancelTask(t.Request[_TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: _TaskParams
    name_param = "taskId"


class _TaskResult(t.Request[_TaskParams, Literal["tasks/result"]]):
    """2025-11-25 only: blocks until the task ends; the server asks its questions over the back-channel meanwhile."""

    method: Literal["tasks/result"] = "tasks/result"
    params: _TaskParams


async def _never_resolved(result: CreateTaskResult, ctx: ClaimContext) -> t.CallToolResult:
    # mcpcli asks for claimed results itself (``allow_claimed=True``) and drives the task durably.
    raise RuntimeError("mcpcli drives tasks itself")


class TasksExtension(ClientExtension):
    """Declares ``io.modelcontextprotocol/tasks`` and admits ``CreateTaskResult`` on ``tools/call``.

    The SDK advertises a claim-bearing extension only at the protocol versions where its claim is active
    (2026-07-28 and later): a legacy connection declares nothing.
    """

    identifier = EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=_never_resolved)]


async def get_task(client: Client, task_id: str) -> DetailedTask:
    return await client.session.send_request(_GetTask(params=_TaskParams(task_id=task_id)), DetailedTask)


async def update_task(client: Client, task_id: str, responses: dict[str, Any]) -> None:
    request = _UpdateTask(params=_UpdateParams(task_id=task_id, input_responses=responses))
    await client.session.send_request(request, Ack)


async def cancel_task(client: Client, task_id: str) -> None:
    await client.session.send_request(_CancelTask(params=_TaskParams(task_id=task_id)), Ack)


async def task_result(client: Client, task_id: str, timeout: float | None) -> dict[str, Any]:
    """2025-11-25: the task's final result (what ``tools/call`` would have returned), waiting for it."""
    result = await client.session.send_request(
        _TaskResult(params=_TaskParams(task_id=task_id)), Ack, request_read_timeout_seconds=timeout
    )
    return dict(result.model_extra or {})


async def call_as_task(client: Client, name: str, arguments: dict[str, Any], progress: Any) -> Any:
    """2025-11-25: ``tools/call`` with the ``task`` param; a ``CreateTaskResult`` (``generation`` 2025-11-25), or
    the plain result when the server ran it at once."""
    request = t.CallToolRequest(params=t.CallToolRequestParams(name=name, arguments=arguments, task=t.TaskMetadata()))
    result = await client.session.send_request(request, t.CallToolResult, progress_callback=progress)
    created = (result.meta or {}).get(CREATED_TASK_META)
    if isinstance(created, dict):
        return CreateTaskResult.model_validate({**created, "resultType": "task", "generation": LEGACY})
    return result


def task_support(client: Client, execution: Any, wanted: bool) -> bool:
    """2025-11-25: whether to call a tool as a task — the server declares ``tasks.requests.tools.call`` and the
    tool's ``execution.taskSupport`` is ``required``, or ``optional`` and the user asked (``--task``)."""
    if client.protocol_version != LEGACY:
        return False
    caps = client.session.server_capabilities
    tasks = caps.tasks if caps is not None else None
    if tasks is None or tasks.requests is None or tasks.requests.tools is None or tasks.requests.tools.call is None:
        return False
    support = getattr(execution, "task_support", None)
    return support == "required" or (support == "optional" and wanted)


@dataclass
class TaskState:
    """What a session keeps of its task (``SessionRecord.task``, JSON): enough to poll it again from anywhere."""

    id: str
    status: str
    generation: str = "2026-07-28"
    message: str | None = None
    created_at: str | None = None
    ttl_ms: int | None = None
    poll_ms: int | None = None
    last_updated_at: str | None = None
    polls: int = 0
    """Polls made so far (stored only with a change: the count in the store lags by the unchanged polls since)."""
    pushed: int = 0
    """Status updates taken from the server's listen stream instead of a poll (``taskfeed``)."""
    delivered: tuple[str, ...] = ()
    """Request keys whose answers the server acknowledged (``tasks/update`` returned): never sent again."""
    timeline: tuple[dict[str, Any], ...] = ()
    """Each change seen: ``{"at": ISO time, "status": …, "message": …}`` (bounded to the last 50)."""

    @classmethod
    def created(cls, result: CreateTaskResult, at: str) -> TaskState:
        state = cls(id=result.task_id, status=result.status, generation=result.generation)
        state.observe(result.status, result.status_message, result.ttl_ms, result.poll_interval_ms, at=at)
        state.created_at, state.last_updated_at = result.created_at, result.last_updated_at
        return state

    @classmethod
    def load(cls, data: dict[str, Any]) -> TaskState:
        """The stored state; ``ValueError`` saying what is wrong when it is not one (``store.base.task_problem``)."""
        if (problem := task_problem(data)) is not None:
            raise ValueError(problem)
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["delivered"] = tuple(fields.get("delivered", ()))
        fields["timeline"] = tuple(fields.get("timeline", ()))
        return cls(**fields)

    def dump(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "generation": self.generation,
            "message": self.message,
            "created_at": self.created_at,
            "ttl_ms": self.ttl_ms,
            "poll_ms": self.poll_ms,
            "last_updated_at": self.last_updated_at,
            "polls": self.polls,
            "pushed": self.pushed,
            "delivered": list(self.delivered),
            "timeline": list(self.timeline),
        }

    def observe(self, status: str, message: str | None, ttl_ms: int | None, poll_ms: int | None, *, at: str) -> bool:
        """Take in a poll's answer; True when something a person (or the store) should know changed."""
        changed = (status, message) != (self.status, self.message) or not self.timeline
        self.ttl_ms, self.poll_ms = ttl_ms, poll_ms if poll_ms is not None else self.poll_ms
        if changed:
            self.status, self.message = status, message
            entry = {"at": at, "status": status} | ({"message": message} if message else {})
            self.timeline = (*self.timeline, entry)[-50:]
        return changed

    def interval(self) -> float:
        """The server's suggested poll interval, in seconds, within ``POLL_FLOOR`` and ``POLL_CAP``."""
        if self.poll_ms is None or self.poll_ms < 0:
            return DEFAULT_POLL
        return min(max(self.poll_ms / 1000, POLL_FLOOR), POLL_CAP)


@dataclass
class TaskControl:
    """What a front end may ask of a running task between polls (the app's detach and cancel keys): the loop
    wakes from its wait when asked."""

    want: Literal["detach", "cancel"] | None = None
    woken: Any = None
    """An ``anyio.Event``, made in the flow's event loop by ``wake_event``."""

    def ask(self, want: Literal["detach", "cancel"]) -> None:
        self.want = want
        if self.woken is not None:
            self.woken.set()

    def wake_event(self) -> Any:
        import anyio

        if self.woken is None or self.woken.is_set():
            self.woken = anyio.Event()
            if self.want is not None:
                self.woken.set()
        return self.woken


def next_delay(state: TaskState, previous: float | None, changed: bool) -> float:
    """How long to wait before the next poll: the server's interval (clamped) after a change, then growing while
    nothing changes, up to ``POLL_CAP`` (never faster than the server asks)."""
    base = state.interval()
    if changed or previous is None:
        return base
    return max(base, min(previous * POLL_GROWTH, POLL_CAP))


def streamed_delay(state: TaskState) -> float:
    """How long to wait for the stream before a safety poll, while the server sends the task's status."""
    return min(state.interval() * STREAMED_FACTOR, STREAMED_CAP)


RELATED_TASK = "io.modelcontextprotocol/related-task"
"""The ``_meta`` key by which a 2025-11-25 server ties a back-channel question to its task (its id)."""


def same_question(stored: Any, asked: Mapping[str, Any]) -> bool:
    """Whether a stored request is the question asked now: identical, but for the task it is asked for — a task
    started over (its first was lost with the server) asks the same question under a new task id."""

    def untied(wire: Any) -> Any:
        meta = wire.get("params", {}).get("_meta") if isinstance(wire, Mapping) else None
        if not isinstance(meta, Mapping) or RELATED_TASK not in meta:
            return wire
        rest = {k: v for k, v in meta.items() if k != RELATED_TASK}
        params = {k: v for k, v in wire["params"].items() if k != "_meta"} | ({"_meta": rest} if rest else {})
        return {**wire, "params": params}

    return bool(stored == asked or untied(stored) == untied(asked))
