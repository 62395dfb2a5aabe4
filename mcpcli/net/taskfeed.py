"""A running task's status from the server's listen stream, where the server offers it — for ``taskflow``.

The tasks extension (github.com/modelcontextprotocol/ext-tasks, ``specification/draft/tasks.md`` § "Task Status
Notifications"; schema ``schema/draft/schema.ts``: ``TaskSubscriptionNotifications``,
``TaskSubscriptionAcknowledgedNotifications``, ``TaskStatusNotification``) lets a server push a task's status: the
client puts ``taskIds: [id…]`` in a ``subscriptions/listen`` request's ``notifications`` filter; the
acknowledgement's ``notifications.taskIds`` lists the ids the server agreed to (absent: none); then each
``notifications/tasks`` carries the whole task — what ``tasks/get`` would answer at that moment, result or error
included — stamped with the subscription id (the listen request's id) in ``_meta``. A client that did not declare the
extension gets -32021; clients may go on polling.

So ``follow`` opens one such stream per followed task, only on a 2026-07-28 connection to a server whose capabilities
list the extension (otherwise nothing is sent or waited for); the driver polls as usual until the acknowledgement
names the task, then mostly waits for the stream (``tasks.streamed_delay``). A stream that is not honoured, refused,
ends or breaks just ends the feed: polling goes on as before.

The SDK's ``Client.listen`` cannot carry this: its filter model keeps only the core keys, both in the request and in
the acknowledgement. So the request is the SDK's ``send_request`` with this module's own model, under an id chosen
here (``tasks.LISTEN_ID``, applied by ``legs.FlowLegs``); and its frames are read, in receive order, by a
wrapper around the SDK dispatcher's notification intercept (installed once per client, the first time a task is
followed): frames stamped with a feed's id are taken here and go no further (the SDK would drop
``notifications/tasks`` anyway), everything else goes on to the SDK untouched. Without that intercept (another
SDK), no task is followed: polling as before.

Bounded: a feed keeps the latest update of its one task and nothing else (older ones are counted as folded), and
the driver takes at most one every ``tasks.POLL_FLOOR``; frames about other tasks, or of kinds not asked for, are
counted and dropped. What an update says is validated (``tasks.DetailedTask``) and shown like a poll's answer.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import mcp_types as t
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict

from mcpcli.net.tasks import EXTENSION, LISTEN_ID, Ack

if TYPE_CHECKING:
    from mcp import Client

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
STATUS = "notifications/tasks"

T = TypeVar("T")


class _ListenParams(t.RequestParams):
    model_config = ConfigDict(extra="allow")
    notifications: dict[str, Any]


class _Listen(t.Request[_ListenParams, Literal["subscriptions/listen"]]):
    method: Literal["subscriptions/listen"] = "subscriptions/listen"
    params: _ListenParams


class TaskFeed:
    """One listen stream asking for one task's status; fed in receive order by ``_Feeds``, read by the driver."""

    def __init__(self, task_id: str) -> None:
        self.id = f"mcpcli-tasks-{secrets.token_hex(8)}"
        self.task_id = task_id
        self.acknowledged = False
        self.honoured = False
        self.ended: str | None = None
        """Why the stream ended (not honoured, refused, closed, broke), once it did."""
        self.resync = False
        """Something may have been missed (honoured just now, or the stream ended): poll once."""
        self.folded = 0
        """Updates replaced by a later one before the driver took them."""
        self.ignored = 0
        """Frames on this stream about another task, or of a kind not asked for."""
        self.signal = anyio.Event()
        self.scope = anyio.CancelScope()
        self._latest: dict[str, Any] | None = None

    @property
    def live(self) -> bool:
        """Whether the server sends this task's status now."""
        return self.honoured and self.ended is None

    def frame(self, method: str, params: Mapping[str, Any]) -> None:
        """One frame stamped with this feed's id (synchronous, on the receive path: no awaiting)."""
        if self.ended is not None:
            return
        if method == ACKNOWLEDGED and not self.acknowledged:
            self.acknowledged = True
            honoured = params.get("notifications")
            ids = honoured.get("taskIds") if isinstance(honoured, Mapping) else None
            if isinstance(ids, list) and self.task_id in ids:
                self.honoured = self.resync = True
                self.signal.set()
            else:
                self.end("the server does not send this task's status")
            return
        if method == STATUS and self.honoured and params.get("taskId") == self.task_id:
            if self._latest is not None:
                self.folded += 1
            self._latest = {key: value for key, value in params.items() if key != "_meta"}
            self.signal.set()
            return
        self.ignored += 1

    def end(self, why: str) -> None:
        """The stream ended (or is of no use): polling goes on, at once if updates came from it."""
        if self.ended is None:
            self.ended = why
            self.resync = self.resync or self.honoured
            self.scope.cancel()
            self.signal.set()

    def take(self) -> tuple[dict[str, Any] | None, bool]:
        """The latest update not yet taken, and whether to poll once (``resync``); clears both."""
        latest, resync = self._latest, self.resync
        self._latest, self.resync = None, False
        if self.signal.is_set():
            self.signal = anyio.Event()
        return latest, resync

    def forget(self) -> None:
        """Drop an update not yet taken: a poll is about to answer for the task as it is now."""
        self._latest = None


class _Feeds:
    """The feeds open on one connection, by subscription id: wraps the SDK dispatcher's notification intercept."""

    def __init__(self, inner: Callable[[str, Mapping[str, Any] | None], bool] | None) -> None:
        self._inner = inner
        self.open: dict[str, TaskFeed] = {}

    def __call__(self, method: str, params: Mapping[str, Any] | None) -> bool:
        if self.open and isinstance(params, Mapping):
            meta = params.get("_meta")
            sub = meta.get(SUBSCRIPTION_ID) if isinstance(meta, Mapping) else None
            if isinstance(sub, str) and (feed := self.open.get(sub)) is not None:
                feed.frame(method, params)
                return True
            ended = params.get("requestId")
            if method == "notifications/cancelled" and isinstance(ended, str) and (feed := self.open.get(ended)):
                feed.end("the server ended the stream")  # stdio: how a server ends a listen stream
        return bool(self._inner(method, params)) if self._inner is not None else False


def _feeds(client: Client) -> _Feeds | None:
    """This connection's feeds, the intercept installed the first time; None where the SDK has no such seam."""
    from mcpcli.net.legs import sdk_dispatcher

    dispatcher = sdk_dispatcher(client)
    if not hasattr(dispatcher, "_on_notify_intercept"):
        return None
    current = dispatcher._on_notify_intercept
    if isinstance(current, _Feeds):
        return current
    feeds = _Feeds(current)
    dispatcher._on_notify_intercept = feeds
    return feeds


def offered(client: Client) -> bool:
    """Whether to ask at all: a 2026-07-28 connection to a server that declares the tasks extension."""
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    caps = client.server_capabilities
    return caps is not None and EXTENSION in (caps.extensions or {})


async def following(client: Client, task_id: str, body: Callable[[TaskFeed | None], Awaitable[T]]) -> T:
    """Run ``body`` (the task's driver) with a feed of the task's status, or with None where none is offered."""
    feeds = _feeds(client) if offered(client) else None
    if feeds is None:
        return await body(None)
    feed = TaskFeed(task_id)
    feeds.open[feed.id] = feed
    failure: Exception | None = None
    result: T | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_listen, client, feed)
            try:
                result = await body(feed)
            except Exception as exc:  # raised as it is, not inside a task group's exception group
                failure = exc
            finally:
                feed.end("the task is no longer followed")
    finally:
        feeds.open.pop(feed.id, None)
    if failure is not None:
        raise failure
    return result  # type: ignore[return-value]  # set: body returned


async def _listen(client: Client, feed: TaskFeed) -> None:
    """Send the listen request and wait for its end (the response comes only when the stream does)."""
    request = _Listen(params=_ListenParams(notifications={"taskIds": [feed.task_id]}))
    token = LISTEN_ID.set(feed.id)
    try:
        with feed.scope:
            await client.session.send_request(request, Ack)
            feed.end("the server closed the stream")
    except Exception as exc:  # boundary: refused (-32021), broken, closed — polling goes on whatever the shape
        feed.end(f"the stream broke ({getattr(exc, 'message', None) or type(exc).__name__})")
    finally:
        LISTEN_ID.reset(token)
