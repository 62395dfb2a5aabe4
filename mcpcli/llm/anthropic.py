"""MCP sampling ⇄ the Anthropic Messages API (``POST {base_url}/messages``, ``anthropic-version: 2023-06-01``).

The request body is built from an allow-list of fields, so ``metadata`` (which the Messages API would accept),
``includeContext`` and anything else a server adds never reach the provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpcli.llm.base import (
    LlmError,
    Model,
    blocks,
    messages_of,
    require,
    result_content,
    stop_sequences,
    temperature,
    text_of,
    token_count,
    tool_choice_mode,
    tool_result_parts,
    tools_of,
)

if TYPE_CHECKING:
    from mcpcli.settings.config import ProviderConfig

VERSION = "2023-06-01"
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
"""The image media types the Messages API documents."""
STOP_REASONS = {
    "end_turn": "endTurn",
    "max_tokens": "maxTokens",
    "stop_sequence": "stopSequence",
    "tool_use": "toolUse",
}
"""``stop_reason`` → MCP ``stopReason``; others (``refusal``, ``pause_turn``) pass through as given."""
TOOL_CHOICE = {"auto": "auto", "required": "any", "none": "none"}


def url(provider: ProviderConfig) -> str:
    return provider.base_url + "/messages"


def headers(api_key: str | None) -> dict[str, str]:
    found = {"anthropic-version": VERSION}
    if api_key:
        found["x-api-key"] = api_key
    return found


def build(provider: ProviderConfig, model: Model, params: Mapping[str, Any], max_tokens: int) -> dict[str, Any]:
    """The request body for ``params`` (a ``CreateMessageRequestParams`` as MCP wire JSON)."""
    messages = [_message(m) for m in messages_of(params)]
    body: dict[str, Any] = {"model": model.name, "max_tokens": max_tokens, "messages": messages}
    if system := params.get("systemPrompt"):
        body["system"] = str(system)
    if (temp := temperature(params, 1.0)) is not None:
        body["temperature"] = temp
    if stops := stop_sequences(params):
        body["stop_sequences"] = stops
    if tools := tools_of(params):
        body["tools"] = [_tool(t) for t in tools]
        if (mode := tool_choice_mode(params)) is not None:
            body["tool_choice"] = {"type": TOOL_CHOICE[mode]}
    return body


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {"name": tool["name"]}
    if tool.get("description"):
        found["description"] = str(tool["description"])
    found["input_schema"] = tool.get("inputSchema") or {"type": "object", "properties": {}}
    return found


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = message["role"]
    content = [_block(b, role) for b in blocks(message.get("content"))]
    content.sort(key=lambda b: b["type"] != "tool_result")  # the API wants tool results first (a stable sort)
    if len(content) == 1 and content[0]["type"] == "text":
        return {"role": role, "content": content[0]["text"]}
    return {"role": role, "content": content}


def _block(block: Mapping[str, Any], role: str) -> dict[str, Any]:
    """One MCP content block as the Anthropic API takes it in a message of ``role``: text, an image (user), a tool use
    (assistant), a tool result (user). Anything else is an ``LlmError`` before anything is sent."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": text_of(block)}
    if kind == "image" and role == "user":
        return _image(block)
    if kind == "tool_use" and role == "assistant":
        call_id, name, arguments = require(block, "id", "name", "input")
        return {"type": "tool_use", "id": str(call_id), "name": str(name), "input": arguments}
    if kind == "tool_result" and role == "user":
        (tool_use_id,) = require(block, "toolUseId")
        found: dict[str, Any] = {"type": "tool_result", "tool_use_id": str(tool_use_id)}
        parts = [
            _image(p) if p["type"] == "image" else {"type": "text", "text": text_of(p)}
            for p in tool_result_parts(block)
        ]
        if parts:
            found["content"] = parts
        if block.get("isError") is True:
            found["is_error"] = True
        return found
    raise LlmError(f"A {role} message holds a {kind} block, which the Anthropic API does not take there.")


def _image(block: Mapping[str, Any]) -> dict[str, Any]:
    data, mime = require(block, "data", "mimeType")
    if mime not in IMAGE_TYPES:
        raise LlmError(f"The Anthropic API takes {', '.join(IMAGE_TYPES)} images, not {mime}.")
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}


def parse(data: Mapping[str, Any], *, with_tools: bool) -> tuple[dict[str, Any], int | None, int | None]:
    """A message → (MCP result without ``model``, input tokens, output tokens); ``KeyError``, ``TypeError`` or
    ``ValueError`` when it does not have the documented shape. Thinking blocks are not part of the reply."""
    parts: list[dict[str, Any]] = []
    for block in data["content"]:
        kind = block["type"]
        if kind == "text":
            parts.append({"type": "text", "text": str(block["text"])})
        elif kind == "tool_use":
            if not isinstance(block["input"], dict):
                raise ValueError("tool_use input is not an object")
            parts.append(
                {"type": "tool_use", "id": str(block["id"]), "name": str(block["name"]), "input": block["input"]}
            )
    result: dict[str, Any] = {"role": "assistant", "content": result_content(parts, with_tools=with_tools)}
    if (stop := data.get("stop_reason")) is not None:
        result["stopReason"] = STOP_REASONS.get(str(stop), str(stop))
    if isinstance(data.get("model"), str):
        result["model"] = data["model"]
    usage = data.get("usage") or {}
    counts = [
        token_count(usage.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    prompt = None if counts[0] is None else sum(c or 0 for c in counts)
    return result, prompt, token_count(usage.get("output_tokens"))
