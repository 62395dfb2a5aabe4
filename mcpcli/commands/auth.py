"""``mcpcli auth login | status | logout``: sign in to an OAuth-protected server once, see and forget logins.

Never prints a token: status shows where a login lives, its scope, client and expiry.
"""

from __future__ import annotations

import os
import shlex
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mcpcli.auth.tokens import Login, TokenVault
from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime
    from mcpcli.settings.targets import Target


def _http_target(rt: Runtime, what: str) -> Target:
    target = rt.target()
    if target.kind != "http" or target.url is None:
        raise UsageError(
            f"{target.label!r} is not an HTTP server; only HTTP servers sign in with OAuth.",
            hint=f"Pass the server's URL or an HTTP server's name: mcpcli auth {what} URL",
        )
    return target


async def login(rt: Runtime, *, open_browser: bool) -> int:
    """Sign in afresh (the stored login stays until the new one succeeds), then say as whom and until when."""
    from mcpcli.auth import Credentials
    from mcpcli.net.connection import ConnectOptions, connect
    from mcpcli.net.handshakes import server_info

    target = _http_target(rt, "login")
    if target.bearer_token_env or any(k.lower() == "authorization" for k in target.headers) or rt.g.bearer:
        raise UsageError(
            f"{target.label!r} is set up with a static token (bearer_token_env, --bearer or an Authorization header).",
            hint="Remove that to use OAuth, or keep using the token.",
        )
    creds = Credentials(interactive=True, open_browser=open_browser, fresh=True, token_store=rt.process.token_store)
    options = ConnectOptions(target, rt.paths, protocol=rt.protocol(), bounds=rt.bounds(), credentials=creds)
    async with connect(options) as client:
        server = info.name if (info := server_info(client)) is not None else target.label
    record = creds.login
    if record is None or not record.signed_in or not creds.signed_in_now:
        rt.out.note(f"{target.label} did not ask to sign in: it accepts requests without OAuth. Nothing was stored.")
        return 0
    where = "the OS keyring" if record.backend == "keyring" else str(rt.paths.token_dir)
    scope = (record.tokens or {}).get("scope")
    rt.out.note(
        f"Signed in to {target.label} ({server})"
        + (f", scope {scope}" if scope else "")
        + (f", token valid for {_span(record.expires_at - time.time())}" if record.expires_at else "")
        + f". Stored in {where}."
    )
    return 0


def status(rt: Runtime, *, server_given: bool) -> int:
    """``mcpcli auth status``: every stored OAuth login (or the given server's), never a token — read from the vault
    alone, nothing is asked of a server."""
    vault = TokenVault(rt.paths, backend="file")
    logins = vault.all()
    if server_given:
        target = _http_target(rt, "status")
        logins = [login for login in logins if login.server == target.url]
    rows = [_row(login) for login in logins]
    if rt.json:
        rt.out.json(rows)
        return 0
    table = [(r["server"], r["state"], _until(r["expires_in"]), r["scope"] or "", r["stored"]) for r in rows]
    rt.out.table(
        "OAuth logins",
        ("server", "state", "expires", "scope", "stored in"),
        table,
        "No OAuth logins. Sign in with: mcpcli auth login URL",
    )
    return 0


async def logout(rt: Runtime) -> int:
    """Revoke the tokens at the authorization server when it offers revocation (best effort), then forget them."""
    target = _http_target(rt, "logout")
    assert target.url is not None
    vault = TokenVault(rt.paths, backend="file")
    record = vault.load(target.url)
    client = record.client
    if target.oauth is not None and target.oauth.client_id:  # pre-registered: the config's, never stored
        from mcpcli.auth.login import token_auth_method

        secret = os.environ.get(target.oauth.client_secret_env) if target.oauth.client_secret_env else None
        metadata = (record.auth_server or {}).get("metadata") or {}
        method = token_auth_method(metadata.get("revocation_endpoint_auth_methods_supported"), secret=bool(secret))
        client = {"client_id": target.oauth.client_id, "client_secret": secret, "token_endpoint_auth_method": method}
    revoked = await revoke(record, client or {}) if record.signed_in else False
    if vault.forget(target.url):
        where = "revoked at the authorization server and deleted here" if revoked else "deleted here"
        rt.out.note(f"Signed out of {target.label}: its tokens were {where}, with the client registration.")
    else:
        rt.out.note(f"No login stored for {target.label}.")
    return 0


REVOKE_TIMEOUT = 5.0


async def revoke(record: Login, client: dict[str, Any]) -> bool:
    """RFC 7009: ask the authorization server to revoke the refresh and access tokens; whether it said yes.

    Never fails the logout: a server without revocation, unreachable, or refusing, leaves only the local delete.
    """
    import httpx2

    endpoint = ((record.auth_server or {}).get("metadata") or {}).get("revocation_endpoint")
    tokens = record.tokens or {}
    if not endpoint or not client.get("client_id"):
        return False
    ok = False
    from mcpcli.net.transports import direct_transport  # the CA settings and proxies of the sign-in itself

    transport = direct_transport()
    async with httpx2.AsyncClient(timeout=REVOKE_TIMEOUT, follow_redirects=False, transport=transport) as http:
        for hint in ("refresh_token", "access_token"):
            if not tokens.get(hint):
                continue
            form = {"token": tokens[hint], "token_type_hint": hint, "client_id": client["client_id"]}
            headers: dict[str, str] = {}
            if secret := client.get("client_secret"):  # authenticated as at the token endpoint
                if client.get("token_endpoint_auth_method") == "client_secret_basic":
                    headers["Authorization"] = _basic(client["client_id"], secret)
                else:
                    form["client_secret"] = secret
            try:
                response = await http.post(endpoint, data=form, headers=headers)
            except httpx2.HTTPError:
                return ok
            ok = ok or response.status_code == 200
    return ok


def _basic(client_id: str, secret: str) -> str:
    """RFC 6749 §2.3.1 client credentials: both parts form-encoded, then base64 (as the SDK sends them)."""
    import base64
    from urllib.parse import quote

    return "Basic " + base64.b64encode(f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()).decode()


def _row(login: Login) -> dict[str, Any]:
    """What ``status`` tells of one login: its state, when it expires, where it is stored and the command that
    signs in again — no token value."""
    tokens = login.tokens or {}
    left = None if login.expires_at is None else login.expires_at - time.time()
    if not login.signed_in:
        state = "registered, not signed in"
    elif left is not None and left <= 0:
        state = "expired, will refresh" if tokens.get("refresh_token") else "expired"
    else:
        state = "signed in"
    expires = None
    if login.expires_at is not None:
        expires = datetime.fromtimestamp(login.expires_at, UTC).isoformat(timespec="seconds")
    return {
        "server": login.server,
        "state": state,
        "expires": expires,
        "expires_in": None if left is None else int(left),
        "scope": tokens.get("scope"),
        "client_id": (login.client or {}).get("client_id"),
        "login_id": login.login_id,
        "logged_in": login.logged_in,
        "refreshed": login.refreshed,
        "stored": login.backend,
        "refreshable": bool(tokens.get("refresh_token")),
        "login_command": f"mcpcli auth login {shlex.quote(login.server)}",
    }


def _until(seconds: int | None) -> str:
    if seconds is None:
        return "never"
    return f"in {_span(seconds)}" if seconds > 0 else f"{_span(-seconds)} ago"


def _span(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds >= 7200:
        return f"{seconds // 3600} h"
    if seconds >= 120:
        return f"{seconds // 60} min"
    return f"{seconds} s"
