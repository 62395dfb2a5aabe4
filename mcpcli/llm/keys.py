"""API keys for LLM providers: where they come from, and the one place that writes them.

Resolution: a key stored with ``mcpcli keys set NAME`` (``<config_dir>/keys/llm-NAME.key``, 0600 in a 0700
directory) > the provider's ``api_key_env`` variable > none (fine for a local Ollama). A key is never printed,
logged, or written anywhere but its own file; only ``transport`` reads one, to send it to its provider.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from mcpcli.errors import ConfigError, UsageError
from mcpcli.platform import open_to_others
from mcpcli.settings.config import PROVIDER_NAME, private_dir, write_private

if TYPE_CHECKING:
    from mcpcli.settings.config import Paths, ProviderConfig

KeySource = Literal["file", "env"]


def key_file(paths: Paths, name: str) -> Path:
    """Where ``mcpcli keys set NAME`` keeps the key of provider ``name``."""
    if not PROVIDER_NAME.fullmatch(name):
        raise UsageError(
            f"{name!r} is not a provider name.", hint="Provider names use letters, digits, '.', '_' and '-'."
        )
    return paths.config_dir / "keys" / f"llm-{name}.key"


def key_source(name: str, provider: ProviderConfig, paths: Paths) -> KeySource | None:
    """Where the key would come from, without reading it (for ``llm list``)."""
    if key_file(paths, name).is_file():
        return "file"
    if provider.api_key_env and os.environ.get(provider.api_key_env, "").strip():
        return "env"
    return None


def api_key_for(name: str, provider: ProviderConfig, paths: Paths) -> str | None:
    """The key of provider ``name``: its key file, else ``$api_key_env``, else ``None``."""
    path = key_file(paths, name)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None:
        if open_to_others(mode):
            raise ConfigError(f"The key file {path} can be read by other users.", hint=f"chmod 600 {path}")
        key = path.read_text(encoding="utf-8").strip()
        _check(key, f"The key in {path}", name)
        return key
    if provider.api_key_env and (key := os.environ.get(provider.api_key_env, "").strip()):
        _check(key, f"The key in ${provider.api_key_env}", name)
        return key
    return None


def _check(key: str, where: str, name: str) -> None:
    """A key travels in an HTTP header: printable ASCII without spaces, or it could split the header."""
    if not key or not all(33 <= ord(c) <= 126 for c in key):
        raise ConfigError(
            f"{where} is not a valid API key (empty, or with spaces or control characters).",
            hint=f"mcpcli keys set {name}",
        )


def save_key(paths: Paths, name: str, key: str) -> Path:
    """Store ``key`` for provider ``name``: written whole to a 0600 file in a 0700 directory, then renamed."""
    key = key.strip()
    try:
        _check(key, "That", name)
    except ConfigError as exc:
        raise UsageError(exc.message, hint="Paste the key alone, on one line.") from None
    path = key_file(paths, name)
    directory = private_dir(path.parent)
    if open_to_others(directory.stat().st_mode):
        raise ConfigError(f"The keys directory {directory} can be read by other users.", hint=f"chmod 700 {directory}")
    write_private(path, key + "\n")
    return path


def remove_key(paths: Paths, name: str) -> Path:
    path = key_file(paths, name)
    try:
        path.unlink()
    except FileNotFoundError:
        raise UsageError(
            f"No key is stored for {name!r}.", hint="'mcpcli llm list' shows where each key comes from."
        ) from None
    return path
