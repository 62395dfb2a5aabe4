"""Who mcpcli is to an HTTP server: a static bearer token, the user's own ``Authorization`` header, or OAuth.

One object per run (``Credentials``) decides, in this order: ``--bearer TOKEN``; the config entry's
``bearer_token_env``; an ``Authorization`` header given with ``-H`` or in the config; otherwise OAuth through
the SDK's provider (which does nothing until the server answers 401). It also names the identity a session
ran as (``identity()``) without revealing any secret: the sign-in id for OAuth, a short hash for a token.

Light at import: the SDK's OAuth code is imported only when an HTTP connection is prepared.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mcpcli.errors import ConfigError, McpcliError, ServerError
from mcpcli.settings.targets import set_header

if TYPE_CHECKING:
    from mcpcli.auth.tokens import Login
    from mcpcli.settings.config import Paths
    from mcpcli.settings.targets import Target

Kind = Literal["oauth", "bearer", "header"]


@dataclass
class Credentials:
    """How this run authenticates to an HTTP server; filled in by ``prepare``."""

    interactive: bool = False
    """Whether a sign-in may open a browser and wait for it (a person is at the terminal)."""
    open_browser: bool = True
    """``--no-browser``: print the authorization URL instead of opening it."""
    bearer: str | None = None
    """``--bearer TOKEN``: a static token that wins over everything else."""
    on_secret: Callable[[str], None] | None = None
    """Told every token this run sends (traces redact them)."""
    token_store: str = "auto"
    """Where new OAuth logins go: ``file``, ``keyring`` or ``auto`` (the edge reads ``MCPCLI_TOKEN_STORE``)."""
    fresh: bool = False
    """``auth login``: sign in again even when a login is stored."""
    kind: Kind | None = None
    login: Login | None = None
    refused: int | None = None
    """The HTTP status (401/403) of the server's last refusal, to explain a failed connection."""
    _fingerprint: str | None = field(default=None, repr=False)

    def prepare(self, target: Target, paths: Paths) -> tuple[dict[str, str], Any]:
        """The headers and the ``httpx2.Auth`` (or ``None``) for requests to ``target``."""
        headers = dict(target.headers)
        token = self.bearer
        if token is None and target.bearer_token_env:
            token = _from_env(target.bearer_token_env, target.label, "bearer token", " (or pass --bearer TOKEN)")
        if token is not None:
            token = token.strip()
            if not token or any(c in token for c in "\r\n\0 "):
                raise ConfigError("The bearer token is empty or has spaces or line breaks.", hint="Check --bearer.")
            set_header(headers, "Authorization", f"Bearer {token}")
            self._remember("bearer", token)
            return headers, None
        given = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
        if given is not None:
            self._remember("header", given.split(" ", 1)[-1])
            return headers, None
        from mcpcli.auth.login import oauth_provider
        from mcpcli.auth.tokens import TokenVault

        assert target.url is not None
        oauth = target.oauth
        secret = None
        if oauth is not None and oauth.client_secret_env:
            secret = _from_env(oauth.client_secret_env, target.label, "OAuth client secret")
        provider, login = oauth_provider(
            target.url,
            target.label,
            TokenVault(paths, wanted=self.token_store),
            interactive=self.interactive,
            open_browser=self.open_browser,
            client_id=oauth.client_id if oauth else None,
            client_secret=secret,
            scope=oauth.scope if oauth else None,
            redirect_port=oauth.redirect_port if oauth else None,
            client_metadata_url=target.client_metadata_url,
            on_token=self.on_secret,
            fresh=self.fresh,
        )
        self.kind = "oauth"
        self.login = login
        return headers, provider

    async def watch(self, response: Any) -> None:
        """An ``httpx2`` response hook: remember a refusal (the SDK reports it only as "an error response")."""
        if response.status_code in (401, 403):
            self.refused = response.status_code

    def refusal(self, label: str) -> McpcliError | None:
        """Why a connection with a static token failed, when the server refused the token."""
        if self.refused is None or self.kind not in ("bearer", "header"):
            return None
        what = "bearer token" if self.kind == "bearer" else "Authorization header"
        return ServerError(
            f"{label} refused the {what} (HTTP {self.refused}).",
            title="Not authorized",
            hint="Check --bearer, the server's bearer_token_env, or the Authorization header.",
        )

    def _remember(self, kind: Kind, secret: str) -> None:
        self.kind = kind
        self._fingerprint = hashlib.sha256(secret.encode()).hexdigest()[:12]
        if self.on_secret is not None:
            self.on_secret(secret)

    @property
    def signed_in_now(self) -> bool:
        """This run went through a browser sign-in."""
        return self.login is not None and self.login.signed_in_now

    def identity(self) -> str | None:
        """Who the run is, without secrets: ``oauth sign-in 1a2b…``, ``bearer sha256:…``; ``None`` for nobody."""
        if self.kind == "oauth":
            login = self.login
            if login is None or not login.signed_in or not login.login_id:
                return None
            return f"oauth sign-in {login.login_id} ({(login.logged_in or '?')[:10]})"
        if self.kind == "bearer":
            return f"bearer token sha256:{self._fingerprint}"
        if self.kind == "header":
            return f"Authorization header sha256:{self._fingerprint}"
        return None


def _from_env(variable: str, label: str, what: str, more: str = "") -> str:
    """A secret the config names by its environment variable; unset is a usage error saying how to set it."""
    value = os.environ.get(variable)
    if not value:
        raise ConfigError(
            f"Server {label!r} takes its {what} from ${variable}, which is not set.",
            hint=f"export {variable}=...{more}",
        )
    return value
