"""The demo server's sealing key: one per user, shared by every process that serves the demo.

A flow started against one demo process resumes in another only if both open the same ``request_state``; so the key
is made once (random, 256 bits, 0600 in a 0700 directory) and read by all. A file that holds no key is said so, never
silently replaced: states sealed with the old key would fail to open with no reason given.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from mcpcli.settings.config import create_once


def load_or_create_key(path: Path) -> bytes:
    """The sealing key: read it, or create it once (0600 in a 0700 directory) so every process shares it — also
    processes that start at the same moment (``create_once``): states sealed by one are opened by the others."""
    try:
        return _read_key(path)
    except FileNotFoundError:
        create_once(path, secrets.token_hex(32).encode())
    return _read_key(path)


class DamagedKey(Exception):
    """The key file is there but holds no key."""


def _read_key(path: Path) -> bytes:
    key = path.read_bytes().strip()
    if len(key) >= 32:
        return key
    raise DamagedKey(f"the key file {path} is damaged")
