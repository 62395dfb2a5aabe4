"""Secrets at rest: answers to password-like fields are stored only sealed, or not at all.

A stored answer is the JSON sent to the server. Before it is written, every
value of a secret field (``forms.FieldSpec.secret``) is replaced by a sealed
marker ``{"$sealed": TOKEN}`` — AES-256-GCM under the store key, bound to the
session, request key and field name — or, with no key, by ``{"$omitted": true}``
(then the question is asked again on resume). ``open_answers`` turns markers
back into values just before a retry is sent; it never writes anything.

The store key comes from ``MCPCLI_STORE_KEY`` (hex or any ≥ 32-byte string),
else a key file (0600, created on first use) under the config dir. Passphrase
encryption for exported bundles lives here too, so there is one crypto module.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mcpcli.errors import ConfigError, UsageError
from mcpcli.platform import open_to_others

SEALED = "$sealed"
OMITTED = "$omitted"
KEY_ENV = "MCPCLI_STORE_KEY"
_NONCE = 12


def load_store_key(key_file: Path, *, create: bool = True, environ: Mapping[str, str] | None = None) -> bytes | None:
    """The store key: ``MCPCLI_STORE_KEY``, else the key file (made once, 0600 in a 0700 dir), else None."""
    env = os.environ if environ is None else environ
    if value := env.get(KEY_ENV):
        if len(value.encode()) < 32:
            raise ConfigError(
                f"{KEY_ENV} is too short to be a key.", hint="Use 64 hex characters: openssl rand -hex 32"
            )
        return hashlib.sha256(b"mcpcli/state/store-key/v1:" + value.encode()).digest()
    try:
        try:
            raw = key_file.read_bytes().strip()
        except FileNotFoundError:
            if not create:
                return None
            from mcpcli.settings.config import create_once

            create_once(key_file, secrets.token_hex(32).encode())  # another process's, when it was first
            raw = key_file.read_bytes().strip()
    except OSError:
        return None
    if len(raw) < 32:
        raise ConfigError(
            f"The store key file {key_file} is damaged.",
            hint=f"Delete it (answers sealed with it will be asked again): rm {key_file}",
        )
    if open_to_others(key_file.stat().st_mode):
        raise ConfigError(f"The store key {key_file} can be read by other users.", hint=f"chmod 600 {key_file}")
    return hashlib.sha256(b"mcpcli/state/store-key/v1:" + raw).digest()


def secret_fields(requests: Mapping[str, Any]) -> dict[str, set[str]]:
    """Request key → the names of its password-like form fields."""
    from mcpcli import forms

    found: dict[str, set[str]] = {}
    for key, wire in requests.items():
        params = wire.get("params") if isinstance(wire, Mapping) else None
        if not isinstance(params, Mapping) or wire.get("method") != "elicitation/create":
            continue
        try:
            specs = forms.parse_schema(params.get("requestedSchema") or {})
        except forms.SchemaError:
            continue
        if names := {s.name for s in specs if s.secret}:
            found[key] = names
    return found


def _aad(session_id: str, key: str, field: str) -> bytes:
    return f"mcpcli/answer/v1\0{session_id}\0{key}\0{field}".encode()


def sealed_for(
    requests: Mapping[str, Any], answers: dict[str, Any], session_id: str, key: Callable[[], bytes | None]
) -> dict[str, Any]:
    """``answers`` to ``requests`` as the store keeps them: a secret field's value sealed (``seal_answers``). The key
    is asked for only when a request has a secret field (loading it may create it)."""
    secret = secret_fields(requests)
    if not secret:
        return answers
    return seal_answers(answers, secret, session_id, key())


def seal_answers(
    answers: Mapping[str, Any], secret_fields: Mapping[str, set[str]], session_id: str, key: bytes | None
) -> dict[str, Any]:
    """A copy of ``answers`` fit to store: secret field values sealed (or omitted when there is no key)."""
    if not secret_fields:
        return dict(answers)
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    stored: dict[str, Any] = {}
    for request_key, answer in answers.items():
        fields = secret_fields.get(request_key, set())
        content = answer.get("content") if isinstance(answer, Mapping) else None
        if not fields or not isinstance(content, Mapping):
            stored[request_key] = answer
            continue
        sealed = dict(content)
        for name in fields & set(content):
            if is_marker(content[name]):  # already sealed or omitted (e.g. re-sealing an imported bundle)
                continue
            if key is None:
                sealed[name] = {OMITTED: True}
                continue
            nonce = os.urandom(_NONCE)
            plain = _encode(content[name])
            token = nonce + AESGCM(key).encrypt(nonce, plain, _aad(session_id, request_key, name))
            sealed[name] = {SEALED: base64.urlsafe_b64encode(token).decode()}
        stored[request_key] = {**answer, "content": sealed}
    return stored


def open_answers(answers: Mapping[str, Any], session_id: str, key: bytes | None) -> tuple[dict[str, Any], set[str]]:
    """Stored answers back to what was sent; also the request keys whose secrets cannot be recovered."""
    opened: dict[str, Any] = {}
    lost: set[str] = set()
    for request_key, answer in answers.items():
        content = answer.get("content") if isinstance(answer, Mapping) else None
        if not isinstance(content, Mapping) or not any(is_marker(v) for v in content.values()):
            opened[request_key] = answer
            continue
        plain = dict(content)
        for name, value in content.items():
            if not is_marker(value):
                continue
            if SEALED in value and key is not None:
                try:
                    plain[name] = _unseal(value[SEALED], key, _aad(session_id, request_key, name))
                    continue
                except ValueError:
                    pass
            lost.add(request_key)
        opened[request_key] = {**answer, "content": plain}
    return opened, lost


def is_marker(value: Any) -> bool:
    return isinstance(value, Mapping) and (SEALED in value or OMITTED in value)


def _unseal(token: str, key: bytes, aad: bytes) -> Any:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        raw = base64.urlsafe_b64decode(token.encode())
        return _decode(AESGCM(key).decrypt(raw[:_NONCE], raw[_NONCE:], aad))
    except (InvalidTag, ValueError) as exc:
        raise ValueError("cannot unseal") from exc


def _encode(value: Any) -> bytes:
    import json

    return json.dumps(value, ensure_ascii=False).encode()


def _decode(raw: bytes) -> Any:
    import json

    return json.loads(raw)


# --- passphrase encryption for bundles ----------------------------------------------------------------------------

SCRYPT = {"n": 2**15, "r": 8, "p": 1}
"""scrypt cost: ~0.1 s and 32 MiB per derivation — slow for guessing, quick for a person."""


def encrypt_with_passphrase(plain: bytes, passphrase: str, aad: bytes) -> dict[str, Any]:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    salt = os.urandom(16)
    key = _derive(passphrase, salt, **SCRYPT)
    nonce = os.urandom(_NONCE)
    return {
        "kdf": "scrypt",
        **SCRYPT,
        "salt": base64.b64encode(salt).decode(),
        "cipher": "aes-256-gcm",
        "nonce": base64.b64encode(nonce).decode(),
        "ciphertext": base64.b64encode(AESGCM(key).encrypt(nonce, plain, aad)).decode(),
    }


def decrypt_with_passphrase(box: Mapping[str, Any], passphrase: str, aad: bytes) -> bytes:
    """The plaintext, or ``UsageError`` for a wrong passphrase or a damaged box (both look the same)."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        if box.get("kdf") != "scrypt" or box.get("cipher") != "aes-256-gcm":
            raise ValueError("unknown algorithm")
        n, r, p = int(box["n"]), int(box["r"]), int(box["p"])
        if n > 2**17 or r > 16 or p > 4:  # a hostile bundle must not make us allocate more than 256 MiB
            raise ValueError("scrypt cost out of range")
        key = _derive(passphrase, base64.b64decode(box["salt"]), n=n, r=r, p=p)
        return AESGCM(key).decrypt(base64.b64decode(box["nonce"]), base64.b64decode(box["ciphertext"]), aad)
    except (InvalidTag, ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            "Cannot decrypt the answers: wrong passphrase, or the bundle was changed.",
            hint="Check the passphrase (MCPCLI_PASSPHRASE or the prompt).",
        ) from exc


def _derive(passphrase: str, salt: bytes, *, n: int, r: int, p: int) -> bytes:
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode("utf-8"))
