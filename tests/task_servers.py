"""Task-capable MCP servers for the tests, built with the SDK's ``MCPServer`` and its extension API.

Run one: ``python tests/task_servers.py [--gen 2026] [--state FILE] [--poll-ms N] [--http HOST:PORT]`` (stdio by
default).

``--gen 2026`` (the default) serves the ``io.modelcontextprotocol/tasks`` extension (SEP-2663, the 2026-07-28
generation): a ``tools/call`` of a task tool from a client that declared the extension in its per-request
capabilities answers a ``CreateTaskResult`` (``resultType: "task"``); ``tasks/get``, ``tasks/update`` and
``tasks/cancel`` drive it. A client that did not declare it gets -32021.

Tasks advance by polls, not by clocks, so tests are deterministic: each tool's script is a list of steps, and a
``tasks/get`` moves a ``working`` task one step on. The tools:

- ``slow_ok(polls=3)``: ``working`` for ``polls`` polls (progress in the status message), then ``completed``;
- ``slow_fail``: ``working`` for one poll, then ``failed`` with a JSON-RPC error;
- ``ask_once``: asks ``confirm`` (a boolean) once, then completes saying what it got;
- ``ask_twice``: asks ``name``, then ``region`` (one request each, one after the other), then completes;
- ``stuck``: ``working`` forever — until ``tasks/cancel``, which makes it ``cancelled``;
- ``expiring``: ``working`` forever with ``ttlMs`` of 300 ms; past it, ``tasks/get`` answers -32602
  "Task has expired"; ``expiring_fails``: the same, but past it the task is ``failed`` (the spec allows both);
- ``ask_first``: ordinary MRTR before the task exists (asks ``go`` with an ``InputRequiredResult``), then a task
  that completes after one poll.

The whole state — tasks, and how many ``tasks/update`` answers each request key received — lives in ``--state``
(a JSON file, locked around each change), so a stdio server started again by a resumed client knows the task,
and a test can read the counts: ``answers_received(state)``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import secrets
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict, Field

TASKS = "io.modelcontextprotocol/tasks"
CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
MISSING_CAPABILITY = -32021
POLL_MS = 20
TTL_MS = 60_000


def _form(message: str, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    request = t.ElicitRequest(
        params=t.ElicitRequestFormParams(
            message=message, requested_schema={"type": "object", "properties": {name: schema}, "required": [name]}
        )
    )
    return request.model_dump(mode="json", by_alias=True, exclude_none=True)


def _script(tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps a task of ``tool`` goes through, one per poll of a ``working`` task."""
    if tool == "slow_ok":
        polls = int(arguments.get("polls", 3))
        steps: list[dict[str, Any]] = [{"work": f"step {i + 1} of {polls}"} for i in range(polls)]
        return [*steps, {"done": f"slow_ok finished after {polls} polls"}]
    if tool == "slow_fail":
        return [{"work": "trying"}, {"fail": "the backend refused the job"}]
    if tool == "ask_once":
        return [
            {"work": "preparing"},
            {"ask": "confirm-1", "request": _form("Go ahead?", "confirm", {"type": "boolean"})},
            {"done": "confirm={confirm-1.confirm}"},
        ]
    if tool == "ask_twice":
        return [
            {"ask": "name-1", "request": _form("Name?", "name", {"type": "string"})},
            {"work": "reserving"},
            {"ask": "region-2", "request": _form("Region?", "region", {"type": "string"})},
            {"done": "Provisioned '{name-1.name}' in {region-2.region}."},
        ]
    if tool == "ask_first":
        return [{"done": "went: {go}"}]
    return [{"work": "working" if tool == "stuck" else "waiting to expire", "forever": True}]  # stuck, expiring*


TOOLS = {"slow_ok", "slow_fail", "ask_once", "ask_twice", "stuck", "expiring", "expiring_fails", "ask_first"}


class State:
    """The server's tasks on disk (or in memory without ``--state``)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.memory: dict[str, Any] = {"tasks": {}, "updates": {}, "gets": 0}

    @contextlib.contextmanager
    def change(self) -> Iterator[dict[str, Any]]:
        if self.path is None:
            yield self.memory
            return
        self.path.touch()
        with self.path.open("r+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            text = f.read()
            data = json.loads(text) if text.strip() else {"tasks": {}, "updates": {}, "gets": 0}
            yield data
            f.seek(0)
            f.truncate()
            f.write(json.dumps(data))
            f.flush()


def answers_received(path: Path) -> dict[str, dict[str, int]]:
    """For tests: per task id, how many ``tasks/update`` answers each request key received."""
    if not path.exists():
        return {}
    with path.open() as f:
        fcntl.flock(f, fcntl.LOCK_SH)  # the server rewrites the file in place, under its exclusive lock
        text = f.read()
    data = json.loads(text) if text.strip() else {"updates": {}}
    updates: dict[str, dict[str, int]] = data["updates"]
    return updates


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _fill(template: str, answers: dict[str, Any]) -> str:
    for key, answer in answers.items():
        if isinstance(answer, dict):
            for name, value in (answer.get("content") or {}).items():
                template = template.replace("{" + f"{key}.{name}" + "}", json.dumps(value).strip('"'))
        else:
            template = template.replace("{" + key + "}", str(answer))
    return template


class TaskIdParams(t.RequestParams):
    model_config = ConfigDict(extra="allow")
    task_id: str


class UpdateParams(TaskIdParams):
    input_responses: dict[str, Any] = Field(default_factory=dict)


class TasksExtension(Extension):
    """The server side of SEP-2663 over a ``State``."""

    identifier = TASKS

    def __init__(self, state: State, poll_ms: int = POLL_MS, *, fixed_ids: bool = False, id_size: int = 0) -> None:
        self.state = state
        self.poll_ms = poll_ms
        self.fixed_ids = fixed_ids
        """``task-0001``, ``task-0002``…: for screenshots; random (unguessable, as the spec asks) otherwise."""
        self.id_size = id_size
        """Task ids padded to this many characters (a hostile server's 10 KB id); 0: as they come."""

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskIdParams, self._get),
            MethodBinding("tasks/update", UpdateParams, self._update),
            MethodBinding("tasks/cancel", TaskIdParams, self._cancel),
        ]

    @staticmethod
    def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
        meta: dict[str, Any] = dict(ctx.meta or {})
        caps = meta.get(CAPABILITIES_META)
        return isinstance(caps, dict) and TASKS in (caps.get("extensions") or {})

    def _require(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Refuse a client that did not declare the extension on this request; over HTTP, record the routing
        headers of every tasks/* request (``state["headers"]``: method, Mcp-Method, Mcp-Name, the task id)."""
        headers = getattr(ctx.request, "headers", None)
        if headers is not None and ctx.method.startswith("tasks/"):
            seen = {
                "method": ctx.method,
                "mcp-method": headers.get("mcp-method"),
                "mcp-name": headers.get("mcp-name"),
                "taskId": (ctx.params or {}).get("taskId"),
            }
            with self.state.change() as data:
                data.setdefault("headers", []).append(seen)
        if not self._declared(ctx):
            raise MCPError(
                MISSING_CAPABILITY,
                "Missing required client capability",
                {"requiredCapabilities": {"extensions": {TASKS: {}}}},
            )

    async def intercept_tool_call(
        self, params: t.CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if params.name not in TOOLS:
            return await call_next(ctx)
        self._require(ctx)
        arguments = dict(params.arguments or {})
        answers: dict[str, Any] = {}
        if params.name == "ask_first":
            given = (params.input_responses or {}).get("go")
            if given is None:
                request = _form("Start the task?", "go", {"type": "boolean"})
                return {"resultType": "input_required", "inputRequests": {"go": request}, "requestState": "s1"}
            answers["go"] = json.dumps((given.model_dump(by_alias=True).get("content") or {}).get("go"))
        task_id = secrets.token_hex(8)
        task_id += "x" * (self.id_size - len(task_id))
        if self.fixed_ids:
            with self.state.change() as data:
                task_id = f"task-{len(data['tasks']) + 1:04d}"
        now = _now()
        ttl = 300 if params.name in ("expiring", "expiring_fails") else TTL_MS
        task = {
            "taskId": task_id,
            "status": "working",
            "statusMessage": "accepted",
            "createdAt": now,
            "lastUpdatedAt": now,
            "ttlMs": ttl,
            "pollIntervalMs": self.poll_ms,
        }
        with self.state.change() as data:
            data["tasks"][task_id] = {
                "task": task,
                "script": _script(params.name, arguments),
                "step": 0,
                "answers": answers,
                "created": time.time(),
                "fail_on_expiry": params.name == "expiring_fails",
            }
            data["updates"][task_id] = {}
        return {"resultType": "task", **task}

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        self._require(ctx)
        with self.state.change() as data:
            data["gets"] = data.get("gets", 0) + 1
            data.setdefault("got_at", []).append(time.time())  # when each tasks/get came (a test counts the rate)
            entry = self._entry(data, params.task_id)
            task = entry["task"]
            if task["status"] == "working":
                self._advance(entry)
            shown = dict(entry["task"])
            step = entry["script"][entry["step"]]
            if shown["status"] == "input_required":
                shown["inputRequests"] = {step["ask"]: step["request"]}
            return {"resultType": "complete", **shown}

    def _entry(self, data: dict[str, Any], task_id: str) -> dict[str, Any]:
        entry: dict[str, Any] | None = data["tasks"].get(task_id)
        if entry is None:
            raise MCPError(t.INVALID_PARAMS, "Failed to retrieve task: Task not found")
        task = entry["task"]
        terminal = task["status"] in ("completed", "failed", "cancelled")
        if not terminal and time.time() - entry["created"] > task["ttlMs"] / 1000:
            if entry.get("fail_on_expiry"):  # the spec's other way: marked failed once the ttl ran out
                task["status"], task["statusMessage"] = "failed", "ttl elapsed"
                task["error"] = {"code": t.INTERNAL_ERROR, "message": "Task ttl elapsed"}
                return entry
            raise MCPError(t.INVALID_PARAMS, "Failed to retrieve task: Task has expired")
        return entry

    @staticmethod
    def _advance(entry: dict[str, Any]) -> None:
        """One poll of a working task: a ``work`` step shows its message and moves on (unless ``forever``);
        the others set the status they stand for."""
        task = entry["task"]
        step = entry["script"][entry["step"]]
        if "work" in step:
            task["statusMessage"] = step["work"]
            if not step.get("forever"):
                entry["step"] += 1
        elif "ask" in step:
            task["status"] = "input_required"
            task["statusMessage"] = f"waiting for {step['ask']}"
        elif "done" in step:
            task["status"] = "completed"
            task["statusMessage"] = "done"
            text = _fill(step["done"], entry["answers"])
            task["result"] = {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": False}
        elif "fail" in step:
            task["status"] = "failed"
            task["statusMessage"] = step["fail"]
            task["error"] = {"code": t.INTERNAL_ERROR, "message": step["fail"]}
        task["lastUpdatedAt"] = _now()

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateParams) -> HandlerResult:
        self._require(ctx)
        with self.state.change() as data:
            entry = self._entry(data, params.task_id)
            counts = data["updates"].setdefault(params.task_id, {})
            for key in params.input_responses:
                counts[key] = counts.get(key, 0) + 1
            step = entry["script"][entry["step"]]
            key = step.get("ask")
            if entry["task"]["status"] == "input_required" and key in params.input_responses:
                entry["answers"][key] = params.input_responses[key]
                entry["step"] += 1
                entry["task"]["status"] = "working"
                entry["task"]["statusMessage"] = f"got {key}"
                entry["task"]["lastUpdatedAt"] = _now()
        return {"resultType": "complete"}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        self._require(ctx)
        with self.state.change() as data:
            entry = self._entry(data, params.task_id)
            if entry["task"]["status"] not in ("completed", "failed", "cancelled"):
                entry["task"]["status"] = "cancelled"
                entry["task"]["statusMessage"] = "cancelled at the client's request"
                entry["task"]["lastUpdatedAt"] = _now()
        return {"resultType": "complete"}


def tasks_2026(
    state: Path | None,
    poll_ms: int = POLL_MS,
    *,
    fixed_ids: bool = False,
    id_size: int = 0,
    extension: TasksExtension | None = None,
) -> MCPServer:
    """The 2026 task server (``extension``: another ``TasksExtension`` serves the tasks, ``tests/task_push.py``)."""
    extension = extension or TasksExtension(State(state), poll_ms, fixed_ids=fixed_ids, id_size=id_size)
    server = MCPServer("tasks-2026", extensions=[extension])

    # The tools are listed (with their schemas) like any; their calls never reach these bodies: the extension's
    # interceptor answers them with a task.
    @server.tool()
    def slow_ok(polls: int = 3) -> str:
        """Completes after a few polls."""
        raise AssertionError("served by the tasks extension")

    @server.tool()
    def slow_fail() -> str:
        """Fails with a JSON-RPC error after one poll."""
        raise AssertionError("served by the tasks extension")

    @server.tool()
    def ask_once() -> str:
        """Asks one confirmation while it runs."""
        raise AssertionError("served by the tasks extension")

    @server.tool()
    def ask_twice() -> str:
        """Asks a name, then a region, while it runs."""
        raise AssertionError("served by the tasks extension")

    @server.tool()
    def stuck() -> str:
        """Works until cancelled."""
        raise AssertionError("served by the tasks extension")

    @server.tool()
    def expiring() -> str:
        """Works past its 300 ms ttl."""
        raise AssertionError("served by the tasks extension")

    @server.tool()
    def expiring_fails() -> str:
        """Works past its 300 ms ttl, then is marked failed (not forgotten)."""
        raise AssertionError("served by the tasks extension")

    @server.tool()
    def ask_first() -> str:
        """Asks before the task exists (ordinary MRTR), then runs as a task."""
        raise AssertionError("served by the tasks extension")

    @server.tool()
    def plain(ctx: Context) -> str:
        """An ordinary tool: no task."""
        return "plain result"

    return server


def _rpc(message: dict[str, Any]) -> None:
    print(json.dumps({"jsonrpc": "2.0", **message}), flush=True)


RELATED = "io.modelcontextprotocol/related-task"


def tasks_2025(state_path: Path | None, poll_ms: int) -> None:
    """The 2025-11-25 generation, as a raw stdio JSON-RPC server (the SDK's server has no way to declare
    ``capabilities.tasks`` or a tool's ``execution.taskSupport``): task-augmented ``tools/call`` (the ``task``
    param) answers ``CreateTaskResult``; ``tasks/get`` advances a working task one step; ``tasks/result`` blocks
    until the task ends, asking its questions over the back-channel meanwhile (``elicitation/create`` carrying the
    related-task ``_meta``); ``tasks/cancel``. ``plain`` is an ordinary tool; ``slow_ok`` is ``optional``, the others
    ``required`` (a call without ``task`` gets -32601, as the spec says). Answers received are counted per key in the
    state's ``updates``, as for 2026."""
    state = State(state_path)
    ext = TasksExtension(state, poll_ms)
    support = {tool: "required" for tool in TOOLS - {"ask_first", "slow_ok"}} | {"slow_ok": "optional"}
    tools = [
        {"name": name, "inputSchema": {"type": "object", "properties": {}}, "execution": {"taskSupport": level}}
        for name, level in sorted(support.items())
    ]
    tools.append({"name": "plain", "inputSchema": {"type": "object", "properties": {}}})
    waiting: dict[str, Any] = {}  # our elicitation id -> (the tasks/result request, task id, request key)

    def finish(request_id: Any, task_id: str) -> bool:
        """Answer a blocked tasks/result if its task reached the end, or ask its next question; False if neither."""
        with state.change() as data:
            entry = data["tasks"][task_id]
            while entry["task"]["status"] == "working":
                TasksExtension._advance(entry)
            task = dict(entry["task"])
            step = entry["script"][entry["step"]]
        if task["status"] == "input_required":
            ask_id = f"ask-{secrets.token_hex(4)}"
            waiting[ask_id] = (request_id, task_id, step["ask"])
            params = dict(step["request"]["params"]) | {"_meta": {RELATED: {"taskId": task_id}}}
            _rpc({"id": ask_id, "method": "elicitation/create", "params": params})
            return True
        meta = {"_meta": {RELATED: {"taskId": task_id}}}
        if task["status"] == "completed":
            _rpc({"id": request_id, "result": {**task["result"], **meta}})
        elif task["status"] == "failed":
            _rpc({"id": request_id, "error": task["error"]})
        else:
            _rpc({"id": request_id, "error": {"code": t.INVALID_PARAMS, "message": "Task was cancelled"}})
        return True

    def as_2025(task: dict[str, Any]) -> dict[str, Any]:
        shown = {k: v for k, v in task.items() if k not in ("ttlMs", "pollIntervalMs", "result", "error")}
        return shown | {"ttl": task["ttlMs"], "pollInterval": task["pollIntervalMs"]}

    for line in sys.stdin:
        message = json.loads(line)
        method, mid = message.get("method"), message.get("id")
        if method is None and mid in waiting:  # the client's answer to a task's question
            request_id, task_id, key = waiting.pop(mid)
            with state.change() as data:
                counts = data["updates"].setdefault(task_id, {})
                counts[key] = counts.get(key, 0) + 1
                entry = data["tasks"][task_id]
                if "result" in message and message["result"].get("action") == "accept":
                    entry["answers"][key] = message["result"]
                    entry["step"] += 1
                    entry["task"]["status"] = "working"
                else:
                    entry["task"]["status"] = "failed"
                    entry["task"]["error"] = {"code": t.INVALID_REQUEST, "message": f"no answer to {key}"}
            finish(request_id, task_id)
            continue
        if mid is None:
            continue
        params = message.get("params") or {}
        try:
            if method == "initialize":
                caps = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}, "cancel": {}}}
                result: Any = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": caps,
                    "serverInfo": {"name": "tasks-2025", "version": "1"},
                }
            elif method == "tools/list":
                result = {"tools": tools}
            elif method == "tools/call" and params.get("name") == "plain":
                result = {"content": [{"type": "text", "text": "plain result"}]}
            elif method == "tools/call":
                if "task" not in params and support.get(params.get("name", "")) == "required":
                    raise MCPError(t.METHOD_NOT_FOUND, "This tool requires task augmentation")
                if "task" not in params:
                    result = {"content": [{"type": "text", "text": "ran without a task"}]}
                else:
                    created = anyio.run(ext.intercept_tool_call, _Params(params), _Declared(), None)
                    assert isinstance(created, dict)
                    task = {k: v for k, v in created.items() if k != "resultType"}
                    result = {"task": as_2025(task)}
            elif method == "tasks/get":
                with state.change() as data:
                    entry = ext._entry(data, params["taskId"])
                    if entry["task"]["status"] == "working":
                        ext._advance(entry)
                    result = as_2025(entry["task"])
            elif method == "tasks/result":
                with state.change() as data:
                    ext._entry(data, params["taskId"])
                finish(mid, params["taskId"])
                continue
            elif method == "tasks/cancel":
                with state.change() as data:
                    entry = ext._entry(data, params["taskId"])
                    if entry["task"]["status"] in ("completed", "failed", "cancelled"):
                        raise MCPError(t.INVALID_PARAMS, "Task already ended")
                    entry["task"]["status"] = "cancelled"
                    result = as_2025(entry["task"])
            elif method == "ping":
                result = {}
            else:
                raise MCPError(t.METHOD_NOT_FOUND, "Method not found")
        except MCPError as exc:
            _rpc({"id": mid, "error": {"code": exc.code, "message": exc.message}})
            continue
        _rpc({"id": mid, "result": result})


class _Params:
    """Just enough of ``CallToolRequestParams`` for ``TasksExtension.intercept_tool_call``."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.name = params["name"]
        self.arguments = params.get("arguments") or {}
        self.input_responses = None


class _Declared:
    """Just enough of a request context: a client that declared the extension (the 2025 wire has none)."""

    def __init__(self) -> None:
        self.meta = {CAPABILITIES_META: {"extensions": {TASKS: {}}}}
        self.request = None
        self.method = "tools/call"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gen", choices=["2026", "2025"], default="2026")
    parser.add_argument("--state", type=Path)
    parser.add_argument("--http")
    parser.add_argument("--poll-ms", type=int, default=POLL_MS, help="the pollIntervalMs tasks suggest")
    parser.add_argument("--fixed-ids", action="store_true", help="task-0001, task-0002… (for screenshots)")
    parser.add_argument("--id-size", type=int, default=0, help="task ids padded to N characters (hostile)")
    args = parser.parse_args()
    if args.gen == "2025":
        tasks_2025(args.state, args.poll_ms)
        return
    from servers import serve

    serve(tasks_2026(args.state, args.poll_ms, fixed_ids=args.fixed_ids, id_size=args.id_size), args.http)


if __name__ == "__main__":
    main()
