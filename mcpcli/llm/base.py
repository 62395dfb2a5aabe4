"""What every provider shares: the error, the chosen model, the completion, and the checks made before a request.

Pure: no HTTP here. A sampling request arrives as MCP wire JSON (camelCase); the checks below refuse content
the chosen model cannot take before anything is sent, so a refusal never costs a request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpcli.errors import ConfigError, ExitCode, McpcliError

if TYPE_CHECKING:
    from mcpcli.settings.config import ProviderConfig, Settings


class LlmError(McpcliError):
    """A provider failed or cannot take the request: one line, never containing the key (exit 4)."""

    exit_code = ExitCode.SERVER
    default_title = "LLM error"


@dataclass(frozen=True)
class Model:
    """An allowed model of a provider, as chosen for one request."""

    name: str
    """The model id sent to the provider."""
    tags: frozenset[str] = frozenset()
    """``vision``, ``tools``: what it takes besides text."""


@dataclass(frozen=True)
class Completion:
    """What ``complete`` returns: the MCP result and the token usage the provider reported (for budgets)."""

    result: dict[str, Any]
    """A ``CreateMessageResult`` as MCP wire JSON: ``role``, ``content``, ``model`` (as the provider reported it),
    ``stopReason``. ``content`` is a list of blocks when the request offered tools, else one block."""
    usage_in: int
    """Prompt tokens, as reported (0 when the provider reports none)."""
    usage_out: int
    """Completion tokens, as reported; when the provider reports none, the ``max_tokens`` sent (an upper bound,
    so a budget is never under-counted)."""


# --- choosing ---------------------------------------------------------------------------------------------------------


def resolve_provider(settings: Settings, name: str | None) -> tuple[str, ProviderConfig]:
    """The provider called ``name``; ``None`` means ``[sampling] provider``, or the only one configured."""
    providers = settings.providers
    if not providers:
        raise no_provider()
    chosen = name or settings.sampling.provider
    if chosen is None:
        if len(providers) == 1:
            return next(iter(providers.items()))
        raise ConfigError(
            f"Several LLM providers are configured ({_names(providers)}) and none is chosen.",
            hint='Pass --llm NAME, or set provider = "NAME" under [sampling] in config.toml.',
        )
    if chosen not in providers:
        raise ConfigError(f"No LLM provider named {chosen!r}.", hint=f"Configured providers: {_names(providers)}.")
    return chosen, providers[chosen]


def no_provider() -> ConfigError:
    """What a sampling request meets when no LLM provider is configured, and how to add one."""
    return ConfigError(
        "No LLM provider is configured, so sampling requests cannot be answered.",
        hint="Add a [providers.NAME] table to config.toml ('mcpcli paths' shows where).",
    )


def _names(providers: Mapping[str, Any]) -> str:
    return ", ".join(sorted(providers))


def model_of(provider: ProviderConfig, name: str | None = None) -> Model:
    """The allowed model called ``name`` exactly (``None``: the default); a name not allowed is a config error."""
    entry = provider.models[0] if name is None else next((m for m in provider.models if m.name == name), None)
    if entry is None:
        raise ConfigError(
            f"Model {name!r} is not in the provider's allow-list.",
            hint=f"Allowed: {', '.join(m.name for m in provider.models)}.",
        )
    return Model(entry.name, frozenset(entry.tags))


def pick_model(provider: ProviderConfig, hints: Sequence[str]) -> Model:
    """The first hint (in order) that is a case-insensitive substring of an allowed name; else the default.

    A hint only ever selects among allowed models: it is never sent as a model id.
    """
    for hint in hints:
        wanted = hint.strip().casefold()
        if not wanted:
            continue
        for entry in provider.models:
            if wanted in entry.name.casefold():
                return Model(entry.name, frozenset(entry.tags))
    return model_of(provider)


def hints_of(params: Mapping[str, Any]) -> list[str]:
    """``modelPreferences.hints[].name`` of a ``CreateMessageRequestParams``, in order."""
    prefs = params.get("modelPreferences")
    hints = prefs.get("hints") if isinstance(prefs, Mapping) else None
    if not isinstance(hints, list):
        return []
    return [h["name"] for h in hints if isinstance(h, Mapping) and isinstance(h.get("name"), str)]


def clamp_tokens(requested: int, provider: ProviderConfig) -> int:
    """The server's ``maxTokens``, lowered to the provider's ``max_tokens_cap`` (and at least 1)."""
    return max(1, min(int(requested), provider.max_tokens_cap))


# --- content checks ---------------------------------------------------------------------------------------------------


def blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (MCP allows one block or a list)."""
    items = content if isinstance(content, list) else [content]
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise LlmError("The sampling request has a malformed content block.", hint=_MALFORMED_HINT)
    return items


_MALFORMED_HINT = "The server sent a sampling request mcpcli cannot read; report it to the server's authors."


def messages_of(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = params.get("messages")
    if not isinstance(messages, list) or not messages:
        raise LlmError("The sampling request has no messages.", hint=_MALFORMED_HINT)
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise LlmError("The sampling request has a message without a user or assistant role.", hint=_MALFORMED_HINT)
    return messages


def _all_blocks(params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every block of every message, including the blocks inside tool results."""
    for message in messages_of(params):
        for block in blocks(message.get("content")):
            yield block
            if block["type"] == "tool_result" and (inner := block.get("content")):
                yield from blocks(inner)


TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A tool name every provider mcpcli speaks accepts."""


def check_request(provider_name: str, model: Model, params: Mapping[str, Any]) -> None:
    """Refuse, before any request, content that ``model`` cannot take."""
    kinds = {block["type"] for block in _all_blocks(params)}
    where = f"[providers.{provider_name}]"
    if "audio" in kinds:
        raise LlmError(
            f"Model {model.name!r} cannot take audio (mcpcli forwards text and images only).",
            hint="The server asked for a completion over audio; no provider API mcpcli speaks takes it.",
        )
    if "image" in kinds and "vision" not in model.tags:
        raise LlmError(
            f"Model {model.name!r} cannot take images.",
            hint=f'Tag a vision model in {where}: models = [{{name = "…", tags = ["vision"]}}].',
        )
    uses_tools = bool(params.get("tools")) or bool(kinds & {"tool_use", "tool_result"})
    if uses_tools and "tools" not in model.tags:
        raise LlmError(
            f"Model {model.name!r} cannot use tools.",
            hint=f'Tag a model that can in {where}: models = [{{name = "…", tags = ["tools"]}}].',
        )
    if uses_tools and (bad := [str(t.get("name")) for t in tools_of(params) if not TOOL_NAME.fullmatch(t["name"])]):
        # Every provider refuses these (OpenAI: letters, digits, _ and -, 64 at most; Anthropic: the same, 128):
        # say so before anything is sent, not as the provider's 400 after the request has been billed a round trip.
        raise LlmError(
            f"The sampling request offers a tool named {bad[0]!r}, which no provider accepts "
            "(letters, digits, '_' and '-', at most 64).",
            hint=_MALFORMED_HINT,
        )
    unknown = kinds - {"text", "image", "tool_use", "tool_result", "resource", "resource_link"}
    if unknown:
        raise LlmError(f"The sampling request has content of an unknown type: {', '.join(sorted(unknown))}.")


def tool_result_parts(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A tool result's content as text and image blocks: embedded text resources become their text, a
    ``structuredContent`` with no content becomes its JSON. Other content cannot be forwarded faithfully."""
    parts: list[dict[str, Any]] = []
    for item in blocks(block.get("content") or []) if block.get("content") else []:
        kind = item["type"]
        if kind in ("text", "image"):
            parts.append(item)
        elif kind == "resource" and isinstance(res := item.get("resource"), Mapping) and "text" in res:
            parts.append({"type": "text", "text": str(res["text"])})
        else:
            raise LlmError(f"A tool result holds a {kind} block, which mcpcli cannot forward to an LLM.")
    if not parts and block.get("structuredContent") is not None:
        parts.append({"type": "text", "text": json.dumps(block["structuredContent"], ensure_ascii=False)})
    return parts


def text_of(block: Mapping[str, Any]) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise LlmError("The sampling request has a text block without text.", hint=_MALFORMED_HINT)
    return text


def require(block: Mapping[str, Any], *names: str) -> list[Any]:
    """The fields ``names`` of a block, each required."""
    missing = [n for n in names if block.get(n) is None]
    if missing:
        raise LlmError(
            f"The sampling request has a {block.get('type')} block without {', '.join(missing)}.", hint=_MALFORMED_HINT
        )
    return [block[n] for n in names]


def tools_of(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools = params.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools):
        raise LlmError("The sampling request has malformed tools.", hint=_MALFORMED_HINT)
    return tools


def tool_choice_mode(params: Mapping[str, Any]) -> str | None:
    choice = params.get("toolChoice")
    mode = choice.get("mode") if isinstance(choice, Mapping) else None
    if mode not in (None, "auto", "required", "none"):
        raise LlmError(f"The sampling request has an unknown toolChoice mode {mode!r}.", hint=_MALFORMED_HINT)
    return mode


def stop_sequences(params: Mapping[str, Any]) -> list[str]:
    stops = params.get("stopSequences") or []
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise LlmError("The sampling request has malformed stopSequences.", hint=_MALFORMED_HINT)
    return stops


def temperature(params: Mapping[str, Any], highest: float) -> float | None:
    """The requested temperature, kept within the provider's documented range (it is advisory in MCP)."""
    value = params.get("temperature")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LlmError("The sampling request has a temperature that is not a number.", hint=_MALFORMED_HINT)
    return min(max(float(value), 0.0), highest)


# --- text from providers ---------------------------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def one_line(text: str, *, secret: str | None = None, limit: int = 300) -> str:
    """Provider-sent text made fit for an error line: one line, short, and without the key should it echo it."""
    if secret:
        text = text.replace(secret, "[key]")
    text = _SPACE.sub(" ", text).strip()
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def token_count(value: Any) -> int | None:
    """A usage count as a provider reported it, or None when it is not a non-negative integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def result_content(parts: list[dict[str, Any]], *, with_tools: bool) -> dict[str, Any] | list[dict[str, Any]]:
    """The MCP result's ``content``: a list when the request offered tools, else the text as one block."""
    if with_tools:
        return parts or [{"type": "text", "text": ""}]
    return {"type": "text", "text": "".join(p["text"] for p in parts if p["type"] == "text")}
