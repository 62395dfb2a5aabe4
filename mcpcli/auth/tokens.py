"""Where OAuth logins are kept: one record per server URL, in a 0600 file or in the OS keyring.

A record holds the SDK's ``OAuthToken`` and ``OAuthClientInformationFull`` (tokens, and the client
registration they belong to), plus what the SDK does not keep across processes: when the access token
expires (so a later run refreshes before sending instead of waiting for a 401), the loopback port the
client registered (authorization servers compare redirect URIs exactly), and a login id that names one
sign-in — a session records it, so a resume under another sign-in can say so.

The keyring is used only when the optional ``keyring`` extra is installed and a real backend answers;
an index file (no secrets: URLs and where each record lives) lets ``auth status`` list keyring logins.
Nothing here imports ``mcp``: records are plain JSON until the SDK's models are needed.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from mcpcli.errors import ConfigError
from mcpcli.settings.config import Paths, write_private

Backend = Literal["file", "keyring"]
KEYRING_SERVICE = "mcpcli-oauth"
RECORD_VERSION = 1


@dataclass
class Login:
    """One server's stored OAuth state."""

    server: str
    """The MCP server URL the login is for (tokens are per server URL)."""
    tokens: dict[str, Any] | None = None
    """The token response as JSON (``access_token``, ``refresh_token``, ``expires_in``, ``scope``)."""
    expires_at: float | None = None
    """When the access token stops working (epoch seconds), from ``expires_in`` at the time it was issued."""
    client: dict[str, Any] | None = None
    """The client registration (dynamic, or pre-registered from the config) as JSON."""
    redirect_port: int | None = None
    """The loopback port in the registered ``redirect_uri``; reused by later logins."""
    login_id: str | None = None
    """A random id for one sign-in; kept across refreshes, new after ``auth logout`` + login."""
    logged_in: str | None = None
    """When the sign-in happened (ISO 8601, UTC)."""
    refreshed: str | None = None
    """When the access token was last refreshed (ISO 8601, UTC)."""
    auth_server: dict[str, Any] | None = None
    """What discovery found (authorization server metadata, protected-resource metadata, issuer): a later run
    refreshes at the right token endpoint without discovering again (the SDK keeps this only in memory)."""
    backend: Backend = "file"
    signed_in_now: bool = False
    """This run signed in (a browser round trip happened); not stored."""

    def to_json(self) -> dict[str, Any]:
        return {
            "version": RECORD_VERSION,
            "server": self.server,
            "tokens": self.tokens,
            "expires_at": self.expires_at,
            "client": self.client,
            "redirect_port": self.redirect_port,
            "login_id": self.login_id,
            "logged_in": self.logged_in,
            "refreshed": self.refreshed,
            "auth_server": self.auth_server,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], backend: Backend) -> Login:
        return cls(
            server=str(data["server"]),
            tokens=data.get("tokens"),
            expires_at=data.get("expires_at"),
            client=data.get("client"),
            redirect_port=data.get("redirect_port"),
            login_id=data.get("login_id"),
            logged_in=data.get("logged_in"),
            refreshed=data.get("refreshed"),
            auth_server=data.get("auth_server"),
            backend=backend,
        )

    def set_tokens(self, tokens: dict[str, Any], *, sign_in: bool) -> None:
        """Record a token response: a sign-in gets a new login id (maybe somebody else), a refresh keeps it."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        if sign_in or self.login_id is None:
            self.login_id = secrets.token_hex(6)
            self.logged_in = now
            self.signed_in_now = sign_in
        else:
            self.refreshed = now
        self.tokens = tokens
        expires_in = tokens.get("expires_in")
        self.expires_at = time.time() + int(expires_in) if expires_in is not None else None

    @property
    def signed_in(self) -> bool:
        return bool(self.tokens and self.tokens.get("access_token"))


def _key(server: str) -> str:
    return hashlib.sha256(server.encode()).hexdigest()[:32]


class TokenVault:
    """The logins of this user: read, write and forget them, wherever they live."""

    def __init__(self, paths: Paths, backend: Backend | None = None, *, wanted: str = "auto") -> None:
        self.dir = paths.token_dir
        self._backend = backend
        self._wanted = wanted.strip().lower()
        """``file``, ``keyring`` or ``auto``: what the user asked for (``MCPCLI_TOKEN_STORE``, read at the edge)."""
        if backend is None and self._wanted != "auto":
            self._backend = _choose_backend(self._wanted)  # chosen by name: say at once when it is wrong or absent

    @property
    def backend(self) -> Backend:
        """Where new logins are written; decided at the first write (importing ``keyring`` costs ~40 ms, and most
        runs only read a login)."""
        if self._backend is None:
            self._backend = _choose_backend(self._wanted)
        return self._backend

    # --- reading ---

    def load(self, server: str) -> Login:
        """The login for ``server`` (an empty one when there is none)."""
        index = self._index()
        where = index.get(server, {}).get("backend", "file")
        if where == "keyring":
            raw = _keyring_get(server)
            if raw is not None:
                return Login.from_json(_parse(raw, f"the keyring entry for {server}"), "keyring")
        path = self._file(server)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Login(server=server)
        except OSError as exc:
            raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
        return Login.from_json(_parse(text, str(path)), "file")

    def all(self) -> list[Login]:
        """Every stored login, by server URL."""
        logins: dict[str, Login] = {}
        for server, where in self._index().items():
            if isinstance(where, dict) and where.get("backend") == "keyring":  # file logins are read below, once
                logins[server] = self.load(server)
        if self.dir.is_dir():
            for path in sorted(self.dir.glob("*.json")):
                if path.name == "index.json":
                    continue
                try:
                    login = Login.from_json(_parse(path.read_text(encoding="utf-8"), str(path)), "file")
                except (OSError, ConfigError, KeyError):
                    continue
                logins.setdefault(login.server, login)
        return sorted(logins.values(), key=lambda login: login.server)

    # --- writing ---

    def save(self, login: Login) -> None:
        """Write ``login`` where this vault keeps logins (the keyring, or a 0600 file)."""
        text = json.dumps(login.to_json(), indent=2)
        if self.backend == "keyring":
            _keyring_set(login.server, text)
            self._file(login.server).unlink(missing_ok=True)
        else:
            write_private(self._file(login.server), text)
        login.backend = self.backend
        self._set_index(login.server, self.backend)

    def forget(self, server: str) -> bool:
        """Remove ``server``'s login from everywhere; whether there was one."""
        found = False
        path = self._file(server)
        if path.exists():
            path.unlink()
            found = True
        if self._index().get(server, {}).get("backend") == "keyring":
            found = _keyring_delete(server) or found
        self._set_index(server, None)
        return found

    # --- files ---

    def _file(self, server: str) -> Path:
        return self.dir / f"{_key(server)}.json"

    def _index(self) -> dict[str, dict[str, Any]]:
        path = self.dir / "index.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _set_index(self, server: str, backend: Backend | None) -> None:
        index = self._index()
        if backend is None:
            if index.pop(server, None) is None:
                return
        else:
            index[server] = {"backend": backend}
        write_private(self.dir / "index.json", json.dumps(index, indent=2))


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or "server" not in data:
        raise ConfigError(f"The stored login in {where} is damaged.", hint="Sign in again: mcpcli auth login SERVER")
    return data


# --- the optional keyring ---------------------------------------------------------------------------------------------


def _choose_backend(wanted: str) -> Backend:
    """``wanted`` (``MCPCLI_TOKEN_STORE=file|keyring``) decides; by default the keyring when it is installed and
    works."""
    if wanted == "file":
        return "file"
    if wanted not in ("auto", "keyring"):
        raise ConfigError(
            f"MCPCLI_TOKEN_STORE={wanted!r} is not a token store.", hint="Use MCPCLI_TOKEN_STORE=file or keyring."
        )
    usable = _keyring_usable()
    if wanted == "keyring" and not usable:
        raise ConfigError(
            "MCPCLI_TOKEN_STORE=keyring, but no usable keyring was found.",
            hint="Install the extra (pip install 'mcpcli[keyring]') or use MCPCLI_TOKEN_STORE=file.",
        )
    return "keyring" if usable else "file"


def _keyring_usable() -> bool:
    try:
        import keyring  # type: ignore[import-not-found,unused-ignore]  # optional extra
        from keyring.backends import fail  # type: ignore[import-not-found,unused-ignore]
    except Exception:  # not installed, or broken on this system: the file store serves
        return False
    try:
        backend = keyring.get_keyring()
        return not isinstance(backend, fail.Keyring) and float(getattr(backend, "priority", 1)) > 0
    except Exception:
        return False


def _keyring_get(server: str) -> str | None:
    import keyring

    value = keyring.get_password(KEYRING_SERVICE, server)
    return value if isinstance(value, str) else None


def _keyring_set(server: str, text: str) -> None:
    import keyring

    keyring.set_password(KEYRING_SERVICE, server, text)


def _keyring_delete(server: str) -> bool:
    import keyring

    try:
        keyring.delete_password(KEYRING_SERVICE, server)
    except Exception:  # keyring.errors.PasswordDeleteError: nothing there
        return False
    return True
