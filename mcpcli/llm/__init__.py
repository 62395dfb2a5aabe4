"""LLM providers for sampling: config → model choice → one completion over HTTP (OpenAI chat or Anthropic).

The library the sampler builds on; the ``llm`` and ``keys`` commands are a thin layer over it. Importing this
package imports no HTTP stack: ``httpx2`` is loaded only when a request is sent.

- ``resolve_provider(settings, name)``, ``pick_model(provider, hints)``, ``clamp_tokens(n, provider)``
- ``api_key_for(name, provider, paths)`` — key file > ``$api_key_env`` > None
- ``await complete(...) -> Completion`` — the MCP result and the reported token usage
"""

from __future__ import annotations

from mcpcli.llm.base import (
    Completion,
    LlmError,
    Model,
    check_request,
    clamp_tokens,
    hints_of,
    model_of,
    no_provider,
    pick_model,
    resolve_provider,
)
from mcpcli.llm.keys import api_key_for
from mcpcli.llm.transport import complete

__all__ = [
    "Completion",
    "LlmError",
    "Model",
    "api_key_for",
    "check_request",
    "clamp_tokens",
    "complete",
    "hints_of",
    "model_of",
    "no_provider",
    "pick_model",
    "resolve_provider",
]
