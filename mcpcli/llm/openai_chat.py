"""MCP sampling ⇄ OpenAI Chat Completions (``POST {base_url}/chat/completions``): OpenAI, Ollama, vLLM,
llama.cpp server, LM Studio.

The request body is built from an allow-list of fields, so ``metadata``, ``includeContext`` and anything else a
server adds never reach the provider.
"""

from __future__ import annotations

import json
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

STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse", "function_call": "toolUse"}
"""``finish_reason`` → MCP ``stopReason``; others pass through as given (MCP's stopReason is open)."""


MAX_STOPS = 4
"""The most stop sequences the chat completions API takes."""


def url(provider: ProviderConfig) -> str:
    return provider.base_url + "/chat/completions"


def headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def build(provider: ProviderConfig, model: Model, params: Mapping[str, Any], max_tokens: int) -> dict[str, Any]:
    """The request body for ``params`` (a ``CreateMessageRequestParams`` as MCP wire JSON)."""
    messages: list[dict[str, Any]] = []
    if system := params.get("systemPrompt"):
        messages.append({"role": "system", "content": str(system)})
    for message in messages_of(params):
        messages.extend(_message(message))
    body: dict[str, Any] = {"model": model.name, "messages": messages, provider.max_tokens_param: max_tokens}
    if (temp := temperature(params, 2.0)) is not None:
        body["temperature"] = temp
    if stops := stop_sequences(params):
        body["stop"] = stops[:MAX_STOPS]  # advisory in MCP; more than the API takes would only be refused
    if tools := tools_of(params):
        body["tools"] = [_tool(t) for t in tools]
        if (mode := tool_choice_mode(params)) is not None:
            body["tool_choice"] = mode
    return body


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool["name"]}
    if tool.get("description"):
        function["description"] = str(tool["description"])
    function["parameters"] = tool.get("inputSchema") or {"type": "object", "properties": {}}
    return {"type": "function", "function": function}


def _message(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One MCP message → OpenAI messages: a user message's tool results become ``tool`` messages (first, as
    OpenAI wants them right after the assistant's ``tool_calls``), its other blocks one ``user`` message."""
    content = blocks(message.get("content"))
    if message["role"] == "assistant":
        return [_assistant(content)]
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in content:
        kind = block["type"]
        if kind == "tool_result":
            (tool_use_id,) = require(block, "toolUseId")
            out.append({"role": "tool", "tool_call_id": str(tool_use_id), "content": _tool_text(block)})
        elif kind == "text":
            parts.append({"type": "text", "text": text_of(block)})
        elif kind == "image":
            data, mime = require(block, "data", "mimeType")
            parts.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}})
        else:
            raise LlmError(f"A user message holds a {kind} block, which openai-chat cannot take.")
    if parts:
        only_text = len(parts) == 1 and parts[0]["type"] == "text"
        out.append({"role": "user", "content": parts[0]["text"] if only_text else parts})
    return out


def _assistant(content: list[dict[str, Any]]) -> dict[str, Any]:
    """An assistant message in openai-chat's shape: its texts as content, its tool uses as ``tool_calls`` (arguments as
    a JSON string). Any other block is an ``LlmError`` before anything is sent."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in content:
        kind = block["type"]
        if kind == "text":
            texts.append(text_of(block))
        elif kind == "tool_use":
            call_id, name, arguments = require(block, "id", "name", "input")
            function = {"name": str(name), "arguments": json.dumps(arguments, ensure_ascii=False)}
            calls.append({"id": str(call_id), "type": "function", "function": function})
        else:
            raise LlmError(f"An assistant message holds a {kind} block, which openai-chat cannot take.")
    message: dict[str, Any] = {"role": "assistant"}
    if len(texts) > 1:
        message["content"] = [{"type": "text", "text": t} for t in texts]
    else:
        message["content"] = texts[0] if texts else (None if calls else "")
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_text(block: Mapping[str, Any]) -> str:
    """OpenAI tool messages carry text only."""
    texts = []
    for part in tool_result_parts(block):
        if part["type"] != "text":
            raise LlmError("A tool result holds an image, which openai-chat tool messages cannot take.")
        texts.append(text_of(part))
    return "\n".join(texts)


def parse(data: Mapping[str, Any], *, with_tools: bool) -> tuple[dict[str, Any], int | None, int | None]:
    """A chat completion → (MCP result without ``model``, prompt tokens, completion tokens); ``KeyError``,
    ``TypeError`` or ``ValueError`` when it does not have the documented shape."""
    choice = data["choices"][0]
    message = choice["message"]
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if isinstance(content, list):  # some servers answer with content parts
        parts.extend({"type": "text", "text": str(p["text"])} for p in content if p.get("type") == "text")
    elif content:
        parts.append({"type": "text", "text": str(content)})
    elif isinstance(refusal := message.get("refusal"), str):
        parts.append({"type": "text", "text": refusal})
    for call in message.get("tool_calls") or []:
        function = call["function"]
        arguments = json.loads(function.get("arguments") or "{}")
        if not isinstance(arguments, dict):
            raise ValueError("tool call arguments are not a JSON object")
        parts.append({"type": "tool_use", "id": str(call["id"]), "name": str(function["name"]), "input": arguments})
    result: dict[str, Any] = {"role": "assistant", "content": result_content(parts, with_tools=with_tools)}
    if (finish := choice.get("finish_reason")) is not None:
        result["stopReason"] = STOP_REASONS.get(str(finish), str(finish))
    if isinstance(data.get("model"), str):
        result["model"] = data["model"]
    usage = data.get("usage") or {}
    return result, token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens"))
