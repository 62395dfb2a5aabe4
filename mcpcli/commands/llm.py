"""The bodies of ``mcpcli llm list|test`` and ``mcpcli keys set|rm``: build, run, render — no protocol here.

Results (the provider list, the test reply) go to stdout; notes go to stderr. A key is never shown: ``llm list``
says only where it would come from.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from mcpcli.errors import UsageError
from mcpcli.llm.base import model_of, resolve_provider
from mcpcli.llm.keys import api_key_for, key_source, remove_key, save_key

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime
    from mcpcli.settings.config import ProviderConfig

TEST_PROMPT = "Reply with one short sentence: are you ready?"
TEST_MAX_TOKENS = 64
"""Small, but enough for a model that spends tokens before it answers."""


def list_providers(rt: Runtime) -> int:
    """``mcpcli llm list``: every provider, its models and where its key comes from."""
    chosen = rt.settings.sampling.provider
    rows = [_describe(name, p, rt, chosen) for name, p in rt.settings.providers.items()]
    if rt.json:
        rt.out.json(rows)
        return 0
    if not rows:
        rt.out.note("No LLM providers configured. Add a [providers.NAME] table to config.toml ('mcpcli paths').")
        return 0
    from mcpcli.display import sanitize
    from mcpcli.terminal.output import write

    lines: list[str] = []
    for row in rows:
        models = ", ".join(m["name"] + (f" [{', '.join(m['tags'])}]" if m["tags"] else "") for m in row["models"])
        marker = "  (answers sampling)" if row["sampling"] else ""
        lines += [f"{row['name']}  {row['api']}  {row['base_url']}{marker}", f"  models: {models}"]
        lines += [f"  key:    {_key_cell(row)}"]
    write(sys.stdout, "".join(sanitize(line) + "\n" for line in lines))
    return 0


def _describe(name: str, provider: ProviderConfig, rt: Runtime, chosen: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "api": provider.api,
        "base_url": provider.base_url,
        "models": [{"name": m.name, "tags": list(m.tags)} for m in provider.models],
        "default_model": provider.models[0].name,
        "max_tokens_cap": provider.max_tokens_cap,
        "key": key_source(name, provider, rt.paths),
        "key_env": provider.api_key_env,
        "sampling": name == chosen or (chosen is None and len(rt.settings.providers) == 1),
    }


def _key_cell(row: dict[str, Any]) -> str:
    if row["key"] == "file":
        return "stored (mcpcli keys set)"
    if row["key"] == "env":
        return f"${row['key_env']}"
    return f"none (${row['key_env']} is unset)" if row["key_env"] else "none"


async def test_provider(rt: Runtime, name: str | None, model_name: str | None, timeout: float = 60.0) -> int:
    """``mcpcli llm test``: one real, tiny request; the model that answered and its reply."""
    from mcpcli.llm.transport import complete

    provider_name, provider = resolve_provider(rt.settings, name)
    model = model_of(provider, model_name)
    rt.out.note(f"Asking {provider_name} ({provider.api}, {provider.base_url}) with model {model.name}…")
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": TEST_PROMPT}}]}
    started = time.monotonic()
    done = await complete(
        provider_name,
        provider,
        model,
        params,
        api_key=api_key_for(provider_name, provider, rt.paths),
        max_tokens=TEST_MAX_TOKENS,
        timeout=timeout,
    )
    seconds = time.monotonic() - started
    content = done.result["content"]
    reply = content.get("text", "") if isinstance(content, dict) else ""
    if rt.json:
        rt.out.json(
            {
                "provider": provider_name,
                "model": done.result["model"],
                "reply": reply,
                "stopReason": done.result.get("stopReason"),
                "usage": {"input": done.usage_in, "output": done.usage_out},
                "seconds": round(seconds, 3),
            }
        )
        return 0
    from mcpcli.display import sanitize
    from mcpcli.terminal.output import write

    write(sys.stdout, f"model: {sanitize(str(done.result['model']))}\nreply: {sanitize(reply)}\n")
    rt.out.note(f"{seconds:.1f} s, {done.usage_in} tokens in, {done.usage_out} out.")
    if not reply.strip():
        rt.out.note(f"The reply is empty (stopReason {done.result.get('stopReason')}); the provider works.")
    return 0


def set_key(rt: Runtime, name: str) -> int:
    """``mcpcli keys set NAME``: the key from stdin (not a terminal) or a hidden prompt, into its 0600 file."""
    if name not in rt.settings.providers:
        rt.out.note(f"Note: no [providers.{name}] in the config yet; the key is kept for when there is.")
    if sys.stdin.isatty():
        import getpass

        try:
            key = getpass.getpass(f"API key for {name} (input hidden): ", stream=sys.stderr)
        except EOFError:
            raise UsageError("No key given; nothing was stored.", hint=f"mcpcli keys set {name}") from None
    else:
        key = sys.stdin.read()
    if not key.strip():
        raise UsageError(
            "No key given; nothing was stored.", hint=f"Paste it at the prompt, or: mcpcli keys set {name} < FILE"
        )
    path = save_key(rt.paths, name, key)
    rt.out.note(f"Stored the key for {name} in {path} (mode 0600).")
    return 0


def rm_key(rt: Runtime, name: str) -> int:
    """``mcpcli keys rm NAME``."""
    path = remove_key(rt.paths, name)
    rt.out.note(f"Removed {path}.")
    return 0
