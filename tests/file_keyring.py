"""A keyring backend for the tests: a JSON file (``TEST_KEYRING_FILE``) standing in for the OS keyring.

Real ``keyring`` API (``KeyringBackend``), so mcpcli's keyring path runs exactly as it would against the
macOS Keychain or the Secret Service; only the place the secret lands differs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class FileKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def _path(self) -> Path:
        return Path(os.environ["TEST_KEYRING_FILE"])

    def _load(self) -> dict[str, str]:
        try:
            data: dict[str, str] = json.loads(self._path().read_text())
        except FileNotFoundError:
            return {}
        return data

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}\n{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}\n{username}"] = password
        self._path().write_text(json.dumps(data))

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.pop(f"{service}\n{username}", None) is None:
            raise PasswordDeleteError("not found")
        self._path().write_text(json.dumps(data))
