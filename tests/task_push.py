"""A 2026 task server whose tasks run by the clock and which pushes their status on ``subscriptions/listen``.

Run one: ``python tests/task_push.py --state FILE [--every S] [--honour yes|no] [--break-after N] [--silent-after N]
[--poll-ms N] [--http HOST:PORT]`` (stdio by default).

The tasks extension's "Task Status Notifications" (github.com/modelcontextprotocol/ext-tasks,
``specification/draft/tasks.md``): a client asks for ``notifications/tasks`` by putting ``taskIds: [id…]`` in the
listen request's ``notifications`` filter; the acknowledgement's ``notifications.taskIds`` lists the ids the server
agreed to; each ``notifications/tasks`` carries the whole task as ``tasks/get`` would answer it, stamped with the
subscription id. The SDK's own listen handler knows only the core filter keys, so this server replaces it.

Built on ``task_servers.TasksExtension`` (same tools, same ``--state`` file), except that a working task moves one
step on every ``--every`` seconds whether or not anyone polls (``tasks/get`` only looks, and is still counted in
the state's ``gets``). ``--honour no``: the listen is acknowledged without ``taskIds`` (and nothing pushed).
``--break-after N``: after pushing N notifications the stream fails (an error response to the listen request).
``--silent-after N``: after N the stream stays open and pushes nothing more (only a poll can see the end).
``--flood N``: right after the acknowledgement, N updates of the task as fast as the pipe takes them, each
``working`` with another status message holding a terminal escape (a hostile server); then as usual.
Pushed notifications are counted in the state's ``pushed``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field
from task_servers import (
    MISSING_CAPABILITY,
    POLL_MS,
    TASKS,
    State,
    TaskIdParams,
    TasksExtension,
    tasks_2026,
)

SUB_KEY = "io.modelcontextprotocol/subscriptionId"
TICK = 0.02


class ListenParams(t.RequestParams):
    model_config = ConfigDict(extra="allow")
    notifications: dict[str, Any] = Field(default_factory=dict)


class _Frame(BaseModel):
    """A notification with params the SDK's models would trim (``taskIds``, a whole task)."""

    method: str
    params: dict[str, Any]


class ClockTasks(TasksExtension):
    """Tasks that advance by the clock; ``tasks/get`` looks without moving them on."""

    def __init__(self, state: State, poll_ms: int, every: float) -> None:
        super().__init__(state, poll_ms)
        self.every = every

    def tick(self, entry: dict[str, Any], now: float) -> None:
        """Move a working task on by the steps due since its last one (one per ``every`` seconds)."""
        last = entry.setdefault("clock", entry["created"])
        while entry["task"]["status"] == "working" and now - last >= self.every:
            last += self.every
            self._advance(entry)
        entry["clock"] = last

    def shown(self, entry: dict[str, Any]) -> dict[str, Any]:
        """The task as ``tasks/get`` answers it (and as a notification carries it)."""
        shown = dict(entry["task"])
        if shown["status"] == "input_required":
            step = entry["script"][entry["step"]]
            shown["inputRequests"] = {step["ask"]: step["request"]}
        return shown

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        self._require(ctx)
        with self.state.change() as data:
            data["gets"] = data.get("gets", 0) + 1
            entry = self._entry(data, params.task_id)
            self.tick(entry, time.time())
            return {"resultType": "complete", **self.shown(entry)}


class Listener:
    """Serves ``subscriptions/listen`` with the tasks extension's ``taskIds`` (core keys are not honoured)."""

    def __init__(
        self, tasks: ClockTasks, honour: bool, break_after: int | None, silent_after: int | None, flood: int = 0
    ) -> None:
        self.tasks = tasks
        self.honour = honour
        self.break_after = break_after
        self.silent_after = silent_after
        self.flood = flood

    async def __call__(self, ctx: ServerRequestContext[Any, Any], params: ListenParams) -> dict[str, Any]:
        sub = ctx.request_id
        asked = [i for i in params.notifications.get("taskIds") or [] if isinstance(i, str)]
        if asked and not self.tasks._declared(ctx):
            raise MCPError(MISSING_CAPABILITY, "Missing required client capability", {"extensions": {TASKS: {}}})
        with self.tasks.state.change() as data:
            honoured = [i for i in asked if i in data["tasks"]] if self.honour else []
            data.setdefault("listens", []).append({"asked": asked, "honoured": honoured})
        meta = {SUB_KEY: sub}
        ack = {"notifications": {"taskIds": honoured} if honoured else {}, "_meta": meta}
        await ctx.session.send_notification(
            _Frame(method="notifications/subscriptions/acknowledged", params=ack),  # type: ignore[arg-type]
            related_request_id=sub,
        )
        for i in range(self.flood if honoured else 0):
            fake = {"taskId": honoured[0], "status": "working", "statusMessage": f"\x1b[2Jflood {i}", "_meta": meta}
            await ctx.session.send_notification(
                _Frame(method="notifications/tasks", params=fake),  # type: ignore[arg-type]
                related_request_id=sub,
            )
        last: dict[str, Any] = {}
        pushed = 0
        while True:
            await anyio.sleep(TICK)
            changed: list[dict[str, Any]] = []
            with self.tasks.state.change() as data:
                for task_id in honoured:
                    entry = data["tasks"][task_id]
                    self.tasks.tick(entry, time.time())
                    shown = self.tasks.shown(entry)
                    if shown != last.get(task_id):
                        last[task_id] = shown
                        changed.append(shown)
            for shown in changed:
                if self.silent_after is not None and pushed >= self.silent_after:
                    continue
                if self.break_after is not None and pushed >= self.break_after:
                    raise MCPError(t.INTERNAL_ERROR, "the task stream broke")
                await ctx.session.send_notification(
                    _Frame(method="notifications/tasks", params={**shown, "_meta": meta}),  # type: ignore[arg-type]
                    related_request_id=sub,
                )
                pushed += 1
                with self.tasks.state.change() as data:
                    data["pushed"] = data.get("pushed", 0) + 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--http")
    parser.add_argument("--every", type=float, default=0.3, help="seconds between a working task's steps")
    parser.add_argument("--poll-ms", type=int, default=POLL_MS, help="the pollIntervalMs tasks suggest")
    parser.add_argument("--honour", choices=["yes", "no"], default="yes")
    parser.add_argument("--break-after", type=int)
    parser.add_argument("--silent-after", type=int)
    parser.add_argument("--flood", type=int, default=0)
    args = parser.parse_args()
    from servers import serve

    tasks = ClockTasks(State(args.state), args.poll_ms, args.every)
    server = tasks_2026(args.state, args.poll_ms, extension=tasks)
    listener = Listener(tasks, args.honour == "yes", args.break_after, args.silent_after, args.flood)
    server._lowlevel_server.add_request_handler("subscriptions/listen", ListenParams, listener)  # type: ignore[arg-type]
    serve(server, args.http)


if __name__ == "__main__":
    main()
