"""Fake LLM providers: real HTTP servers on 127.0.0.1 speaking OpenAI Chat Completions and the Anthropic
Messages API — a fake with behaviour, not a mock of mcpcli's internals.

Each ``FakeProvider``:
- checks the auth header (``Authorization: Bearer KEY`` / ``x-api-key`` + ``anthropic-version``), answering 401
  in the provider's own error shape when it is wrong or missing;
- validates every request body against the provider's documented shape (required fields, roles, content block
  shapes, tool call/result pairing, no unknown top-level fields — ``metadata`` included), answering 400 and
  adding to ``violations`` when it does not fit (``serve`` fails the test at the end if any remain);
- records every request (``requests``: path, headers, body);
- replies with what was ``enqueue``-d (status, body, headers such as ``Retry-After``, a delay), else a default
  completion that echoes the requested model.

Use ``with serve("openai-chat") as fake: ...``; ``fake.base_url`` is what goes into ``[providers.NAME]``.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Api = Literal["openai-chat", "anthropic"]
DEFAULT_TEXT = "Hello from the fake."
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
ANTHROPIC_IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}


@dataclass
class Recorded:
    """One request as the fake received it."""

    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: Any
    """The parsed JSON body (``None`` when it was not JSON)."""
    raw: bytes


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    """JSON-encoded unless ``raw`` is given; ``None`` with status 200 means the default completion."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (for timeouts)."""
    raw: bytes | None = None


class FakeProvider:
    """One fake provider on 127.0.0.1; see the module docstring."""

    def __init__(self, api: Api, *, key: str | None = "sk-test-0123456789", token_param: str = "max_tokens") -> None:
        self.api = api
        self.key = key
        """The API key the fake accepts; ``None``: it takes requests without one (like Ollama)."""
        self.token_param = token_param
        """openai-chat: ``max_completion_tokens`` makes it refuse ``max_tokens``, like OpenAI's newer models."""
        self.requests: list[Recorded] = []
        self.violations: list[str] = []
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    # -- lifecycle --

    def start(self) -> FakeProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def provider(self, models: Sequence[Any] = ("fake-model",), **extra: Any) -> dict[str, Any]:
        """A ``[providers.NAME]`` table for this fake (as a dict)."""
        return {"api": self.api, "base_url": self.base_url, "models": list(models), **extra}

    # -- programming it --

    def enqueue(
        self,
        status: int = 200,
        body: Any = None,
        *,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
        raw: bytes | None = None,
    ) -> None:
        """The next request gets this reply (replies queue up, first in first out)."""
        with self._lock:
            self._queue.append(Reply(status, body, dict(headers or {}), delay, raw))

    def reply(
        self,
        text: str | None = DEFAULT_TEXT,
        *,
        model: str = "fake-model-2025-01-01",
        stop: str | None = None,
        tool_calls: Sequence[tuple[str, str, dict[str, Any]]] = (),
        usage: tuple[int, int] | None = (12, 5),
    ) -> None:
        """Enqueue a success in the provider's documented shape; ``tool_calls`` are ``(id, name, input)``."""
        if self.api == "anthropic":
            self.enqueue(200, anthropic_message(text, model=model, stop=stop, tool_uses=tool_calls, usage=usage))
        else:
            self.enqueue(200, openai_completion(text, model=model, finish=stop, tool_calls=tool_calls, usage=usage))

    def error(self, status: int, message: str, *, headers: Mapping[str, str] | None = None) -> None:
        """Enqueue an error in the provider's documented shape."""
        self.enqueue(status, self._error_body(status, message), headers=headers)

    # -- looking at what came --

    @property
    def last(self) -> Any:
        """The body of the last request."""
        assert self.requests, "the fake received no request"
        return self.requests[-1].body

    # -- serving --

    def _error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error"}.get(status, "error")
        if status == 429:
            kind = "rate_limit_error"
        if self.api == "anthropic":
            return {"type": "error", "error": {"type": kind, "message": message}}
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    def _handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self.requests.append(Recorded(method, path, headers, body, raw))
        expected = "/v1/messages" if self.api == "anthropic" else "/v1/chat/completions"
        if method != "POST" or path != expected:
            return Reply(404, self._error_body(404, f"Unknown request URL: {method} {path}."))
        if problem := self._auth_problem(headers):
            return Reply(401, self._error_body(401, problem))
        if not headers.get("content-type", "").startswith("application/json") or not isinstance(body, dict):
            problems = ["the body must be a JSON object sent as application/json"]
        elif self.api == "anthropic":
            problems = validate_anthropic(body)
        else:
            problems = validate_openai(body, self.token_param)
        if problems:
            self.violations.extend(problems)
            return Reply(400, self._error_body(400, "; ".join(problems)))
        with self._lock:
            queued = self._queue.pop(0) if self._queue else None
        reply = queued or Reply()
        if reply.status == 200 and reply.body is None and reply.raw is None:  # the default completion
            build = anthropic_message if self.api == "anthropic" else openai_completion
            assert isinstance(body, dict)
            reply.body = build(DEFAULT_TEXT, model=str(body["model"]))
        return reply

    def _auth_problem(self, headers: Mapping[str, str]) -> str | None:
        if self.api == "anthropic":
            if "anthropic-version" not in headers:
                return "anthropic-version: header is required"
            if self.key is not None and headers.get("x-api-key") != self.key:
                return "invalid x-api-key"
            return None
        if self.key is not None and headers.get("authorization") != f"Bearer {self.key}":
            return "Incorrect API key provided. You can find your API key at https://platform.openai.com/account."
        return None


def _handler(fake: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = fake._handle(self.command, self.path, headers, raw)
            if reply.delay:
                time.sleep(reply.delay)
            payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                if reply.raw is None:
                    self.send_header("content-type", "application/json")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        do_POST = _serve
        do_GET = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def serve(api: Api, **kwargs: Any) -> Iterator[FakeProvider]:
    """A started fake; stopped afterwards, failing the test if a request broke the documented shape."""
    fake = FakeProvider(api, **kwargs).start()
    try:
        yield fake
    finally:
        fake.stop()
    assert not fake.violations, f"requests that break the {api} shape: {fake.violations}"


# --- documented reply shapes ------------------------------------------------------------------------------------------


def openai_completion(
    text: str | None,
    *,
    model: str,
    finish: str | None = None,
    tool_calls: Sequence[tuple[str, str, dict[str, Any]]] = (),
    usage: tuple[int, int] | None = (12, 5),
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in tool_calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


def anthropic_message(
    text: str | None,
    *,
    model: str,
    stop: str | None = None,
    tool_uses: Sequence[tuple[str, str, dict[str, Any]]] = (),
    usage: tuple[int, int] | None = (12, 5),
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text is not None else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in tool_uses]
    body: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop or ("tool_use" if tool_uses else "end_turn"),
        "stop_sequence": None,
    }
    if usage is not None:
        body["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
    return body


# --- documented request shapes ----------------------------------------------------------------------------------------

OPENAI_FIELDS = {
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "stream",
    "n",
    "seed",
    "user",
    "response_format",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
}
"""Chat Completions body fields the fake accepts. OpenAI also has ``metadata``; mcpcli must never send it."""


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text_parts(content: Any, where: str, *, allow: Sequence[str] = ("text",)) -> list[str]:
    if isinstance(content, str):
        return []
    if not isinstance(content, list) or not content:
        return [f"{where}.content must be a string or a non-empty array of parts"]
    problems = []
    for i, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in allow:
            problems.append(f"{where}.content[{i}] must be a part of type {' or '.join(allow)}")
        elif part["type"] == "text" and (not isinstance(part.get("text"), str) or set(part) - {"type", "text"}):
            problems.append(f"{where}.content[{i}] must be {{type: text, text: string}}")
        elif part["type"] == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else None
            if not isinstance(url, str) or not re.match(
                r"(https?://|data:image/[a-z+.-]+;base64,[A-Za-z0-9+/=]+$)", url
            ):
                problems.append(f"{where}.content[{i}].image_url.url must be an http(s) URL or a base64 data URL")
            if isinstance(image, dict) and set(image) - {"url", "detail"}:
                problems.append(f"{where}.content[{i}].image_url has unknown fields")
    return problems


def validate_openai(body: Mapping[str, Any], token_param: str = "max_tokens") -> list[str]:
    """What is wrong with a Chat Completions request body (empty when nothing is)."""
    problems: list[str] = []
    if "metadata" in body:
        problems.append("metadata must not be forwarded")
    problems += [f"unknown field {k!r}" for k in sorted(set(body) - OPENAI_FIELDS - {"metadata"})]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model is required")
    if "max_tokens" in body and "max_completion_tokens" in body:
        problems.append("max_tokens and max_completion_tokens are mutually exclusive")
    if token_param == "max_completion_tokens" and "max_tokens" in body:
        problems.append(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
        )
    for name in ("max_tokens", "max_completion_tokens"):
        if name in body and (not isinstance(body[name], int) or isinstance(body[name], bool) or body[name] < 1):
            problems.append(f"{name} must be a positive integer")
    if "temperature" in body and not (_number(body["temperature"]) and 0 <= body["temperature"] <= 2):
        problems.append("temperature must be a number from 0 to 2")
    if "stop" in body:
        stop = body["stop"]
        if not (isinstance(stop, str) or (isinstance(stop, list) and 1 <= len(stop) <= 4)):
            problems.append("stop must be a string or an array of 1 to 4 strings")
        elif isinstance(stop, list) and not all(isinstance(s, str) for s in stop):
            problems.append("stop must hold strings")
    tool_names: set[str] = set()
    if "tools" in body:
        tools = body["tools"]
        if not isinstance(tools, list) or not tools:
            problems.append("tools must be a non-empty array")
            tools = []
        for i, tool in enumerate(tools):
            function = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
                problems.append(f"tools[{i}] must be {{type: function, function: {{...}}}}")
                continue
            if set(tool) - {"type", "function"} or set(function) - {"name", "description", "parameters", "strict"}:
                problems.append(f"tools[{i}] has unknown fields")
            if not isinstance(function.get("name"), str) or not _TOOL_NAME.fullmatch(function["name"]):
                problems.append(f"tools[{i}].function.name must match ^[a-zA-Z0-9_-]{{1,64}}$")
            else:
                tool_names.add(function["name"])
            params = function.get("parameters")
            if params is not None and (not isinstance(params, dict) or params.get("type") != "object"):
                problems.append(f"tools[{i}].function.parameters must be a JSON Schema object")
    if "tool_choice" in body:
        choice = body["tool_choice"]
        if "tools" not in body:
            problems.append("tool_choice is only allowed when tools are given")
        ok_dict = isinstance(choice, dict) and choice.get("type") == "function"
        if choice not in ("none", "auto", "required") and not ok_dict:
            problems.append("tool_choice must be none, auto, required or a function")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages must be a non-empty array"]
    pending: set[str] = set()
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            problems.append(f"{where}.role must be system, developer, user, assistant or tool")
            continue
        if pending and role != "tool":
            problems.append(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {sorted(pending)}"
            )
            pending = set()
        allowed = {
            "system": {"role", "content", "name"},
            "developer": {"role", "content", "name"},
            "user": {"role", "content", "name"},
            "assistant": {"role", "content", "tool_calls", "name", "refusal"},
            "tool": {"role", "content", "tool_call_id"},
        }[role]
        if set(message) - allowed:
            problems.append(f"{where} has unknown fields {sorted(set(message) - allowed)}")
        content = message.get("content")
        if role == "user":
            problems += _text_parts(content, where, allow=("text", "image_url"))
        elif role == "assistant":
            calls = message.get("tool_calls")
            if content is None and not calls:
                problems.append(f"{where}.content is required unless tool_calls is given")
            elif content is not None:
                problems += _text_parts(content, where, allow=("text", "refusal"))
            if calls is not None:
                if not isinstance(calls, list) or not calls:
                    problems.append(f"{where}.tool_calls must be a non-empty array")
                    calls = []
                for j, call in enumerate(calls):
                    function = call.get("function") if isinstance(call, dict) else None
                    if (
                        not isinstance(call, dict)
                        or call.get("type") != "function"
                        or not isinstance(call.get("id"), str)
                        or not isinstance(function, dict)
                        or not isinstance(function.get("name"), str)
                        or not isinstance(function.get("arguments"), str)
                    ):
                        problems.append(
                            f"{where}.tool_calls[{j}] must be {{id, type: function, function{{name, arguments}}}}"
                        )
                        continue
                    try:
                        json.loads(function["arguments"])
                    except ValueError:
                        problems.append(f"{where}.tool_calls[{j}].function.arguments must be a JSON string")
                    pending.add(call["id"])
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                problems.append(f"{where}.tool_call_id is required")
            elif call_id not in pending:
                problems.append(f"{where}: tool message for {call_id!r} does not answer a preceding tool call")
            else:
                pending.discard(call_id)
            problems += _text_parts(content, where)
        else:
            problems += _text_parts(content, where)
    if pending:
        problems.append(f"tool_call_ids without response messages: {sorted(pending)}")
    return problems


ANTHROPIC_FIELDS = {
    "model",
    "messages",
    "max_tokens",
    "system",
    "temperature",
    "stop_sequences",
    "tools",
    "tool_choice",
    "top_p",
    "top_k",
    "stream",
    "thinking",
    "service_tier",
}
"""Messages API body fields the fake accepts. The API also has ``metadata``; mcpcli must never send it."""


def _anthropic_block(block: Any, where: str, role: str) -> list[str]:
    kind = block.get("type") if isinstance(block, dict) else None
    fields = {
        "text": {"type", "text", "cache_control"},
        "image": {"type", "source", "cache_control"},
        "tool_use": {"type", "id", "name", "input", "cache_control"},
        "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
    }
    roles = {"text": ("user", "assistant"), "image": ("user",), "tool_use": ("assistant",), "tool_result": ("user",)}
    if kind not in fields:
        return [f"{where}.type must be text, image, tool_use or tool_result"]
    assert isinstance(block, dict)
    if role not in roles[kind]:
        return [f"{where}: a {kind} block cannot be in a {role} message"]
    problems = [f"{where} has unknown fields {sorted(set(block) - fields[kind])}"] if set(block) - fields[kind] else []
    if kind == "text" and (not isinstance(block.get("text"), str) or not block["text"]):
        problems.append(f"{where}: text content blocks must be non-empty")
    elif kind == "image":
        source = block.get("source")
        if (
            not isinstance(source, dict)
            or source.get("type") != "base64"
            or source.get("media_type") not in ANTHROPIC_IMAGE_TYPES
            or not isinstance(source.get("data"), str)
            or set(source) != {"type", "media_type", "data"}
        ):
            problems.append(f"{where}.source must be {{type: base64, media_type: image/jpeg|png|gif|webp, data}}")
    elif kind == "tool_use":
        if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
            problems.append(f"{where}: tool_use needs id and name")
        if not isinstance(block.get("input"), dict):
            problems.append(f"{where}.input must be an object")
    elif kind == "tool_result":
        if not isinstance(block.get("tool_use_id"), str):
            problems.append(f"{where}.tool_use_id is required")
        if "is_error" in block and not isinstance(block["is_error"], bool):
            problems.append(f"{where}.is_error must be a boolean")
        content = block.get("content")
        if content is not None and not isinstance(content, str):
            if not isinstance(content, list):
                problems.append(f"{where}.content must be a string or an array")
            else:
                for j, inner in enumerate(content):
                    if not isinstance(inner, dict) or inner.get("type") not in ("text", "image"):
                        problems.append(f"{where}.content[{j}] must be a text or image block")
                    else:
                        problems += _anthropic_block(inner, f"{where}.content[{j}]", "user")
    return problems


def validate_anthropic(body: Mapping[str, Any]) -> list[str]:
    """What is wrong with a Messages API request body (empty when nothing is)."""
    problems: list[str] = []
    if "metadata" in body:
        problems.append("metadata must not be forwarded")
    problems += [f"{k}: Extra inputs are not permitted" for k in sorted(set(body) - ANTHROPIC_FIELDS - {"metadata"})]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: Field required")
    tokens = body.get("max_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        problems.append("max_tokens: Field required (a positive integer)")
    if "system" in body:
        system = body["system"]
        blocks_ok = isinstance(system, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in system)
        if not isinstance(system, str) and not blocks_ok:
            problems.append("system must be a string or an array of text blocks")
    if "temperature" in body and not (_number(body["temperature"]) and 0 <= body["temperature"] <= 1):
        problems.append("temperature must be a number from 0 to 1")
    if "stop_sequences" in body:
        stops = body["stop_sequences"]
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            problems.append("stop_sequences must be an array of strings")
    if "tools" in body:
        tools = body["tools"] if isinstance(body["tools"], list) else []
        if not tools:
            problems.append("tools must be a non-empty array")
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                problems.append(f"tools[{i}].name is required")
                continue
            if not _TOOL_NAME.fullmatch(tool["name"]):
                problems.append(f"tools[{i}].name must match ^[a-zA-Z0-9_-]{{1,64}}$")
            if set(tool) - {"name", "description", "input_schema", "cache_control"}:
                problems.append(f"tools[{i}] has unknown fields")
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                problems.append(f"tools[{i}].input_schema must be a JSON Schema with type object")
    if "tool_choice" in body:
        choice = body["tool_choice"]
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind not in ("auto", "any", "tool", "none") or (kind == "tool" and not isinstance(choice.get("name"), str)):
            problems.append("tool_choice must be {type: auto|any|none} or {type: tool, name}")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages: at least one message is required"]
    previous_uses: set[str] = set()
    for i, message in enumerate(messages):
        where = f"messages.{i}"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            problems.append(f"{where}.role must be user or assistant")
            continue
        if i == 0 and role != "user":
            problems.append("messages: the first message must use the user role")
        if set(message) - {"role", "content"}:
            problems.append(f"{where} has unknown fields")
        content = message.get("content")
        if isinstance(content, str):
            if not content:
                problems.append(f"{where}.content must be non-empty")
            blocks: list[Any] = []
        elif isinstance(content, list) and content:
            blocks = content
        else:
            problems.append(f"{where}.content must be a non-empty string or array of blocks")
            blocks = []
        for j, block in enumerate(blocks):
            problems += _anthropic_block(block, f"{where}.content.{j}", role)
        kinds = [b.get("type") for b in blocks if isinstance(b, dict)]
        results = {str(b.get("tool_use_id")) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"}
        if results - previous_uses:
            problems.append(
                f"{where}: unexpected tool_use_id found in tool_result blocks: {sorted(results - previous_uses)}"
            )
        if previous_uses and (role != "user" or previous_uses - results):
            problems.append(
                f"{where}: tool_use ids were found without tool_result blocks immediately after: "
                f"{sorted(previous_uses - results)}"
            )
        if "tool_result" in kinds and kinds[: kinds.count("tool_result")] != ["tool_result"] * kinds.count(
            "tool_result"
        ):
            problems.append(f"{where}: tool_result blocks must come first in the content")
        previous_uses = {b["id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use" and "id" in b}
    return problems
