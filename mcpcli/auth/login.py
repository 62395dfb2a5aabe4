"""Signing in with OAuth 2.1: the SDK does the protocol, mcpcli provides the three things it asks for.

``OAuthClientProvider`` (an ``httpx2.Auth``) does discovery, dynamic client registration, PKCE, the token
exchange and refresh. It asks its host for token storage (``tokens.TokenVault``, adapted below), a redirect
handler (open the authorization URL in a browser — ``$BROWSER`` honoured as Python's ``webbrowser`` does — or
print it), and a callback handler (a one-shot HTTP listener on 127.0.0.1 that receives ``code``, ``state`` and
``iss`` and shows a friendly page). Not interactive (``--no-input``, no terminal): no browser, no listener —
``LoginRequired`` instead, which becomes exit 4 with the login command as the hint.
"""

from __future__ import annotations

import contextlib
import html
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from mcpcli import __version__
from mcpcli.auth.tokens import Login, TokenVault
from mcpcli.display import sanitize
from mcpcli.errors import ExitCode, McpcliError

CALLBACK_PATH = "/callback"
AuthMethod = Literal["none", "client_secret_basic", "client_secret_post"]
LOGIN_TIMEOUT = 300.0
"""Seconds to wait for the browser to come back (``MCPCLI_LOGIN_TIMEOUT`` overrides)."""


class LoginRequired(McpcliError):
    """The server wants a sign-in and nobody can do it now (``--no-input`` or no terminal)."""

    exit_code = ExitCode.SERVER


class LoginFailed(McpcliError):
    """The sign-in did not complete: refused in the browser, timed out, or the authorization server said no."""

    exit_code = ExitCode.SERVER


class _Storage:
    """The SDK's ``TokenStorage`` over one ``Login`` record, saved on every change."""

    def __init__(
        self, vault: TokenVault, login: Login, preset: OAuthClientInformationFull | None, *, fresh: bool = False
    ) -> None:
        """``preset``: the client registration configured for the server (none: dynamic registration); ``fresh``: ``auth
        login``, which ignores the stored tokens until new ones arrive."""
        self.vault = vault
        self.fresh = fresh
        """``auth login``: start without the stored tokens (they stay stored until new ones arrive)."""
        self.login = login
        self.preset = preset
        self.signing_in = False
        """Set by the redirect handler: the next tokens come from a new sign-in, not a refresh."""
        self.on_token: Callable[[str], None] | None = None
        self.keep_registrations = True
        """False when nobody can sign in now: a registration made on the way to ``LoginRequired`` is not kept."""
        self.context: Any = None
        """The provider's ``OAuthContext``: what discovery found is kept with the tokens."""

    async def get_tokens(self) -> OAuthToken | None:
        if self.fresh or not self.login.signed_in:
            return None
        return OAuthToken.model_validate(self.login.tokens)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.login.set_tokens(tokens.model_dump(mode="json", exclude_none=True), sign_in=self.signing_in)
        self.signing_in = self.fresh = False
        self._keep_discovery()
        self.vault.save(self.login)
        if self.on_token is not None:
            self.on_token(tokens.access_token)

    def _keep_discovery(self) -> None:
        context = self.context
        if context is None or context.oauth_metadata is None:
            return
        prm = context.protected_resource_metadata
        self.login.auth_server = {
            "metadata": context.oauth_metadata.model_dump(mode="json", exclude_none=True),
            "resource": prm.model_dump(mode="json", exclude_none=True) if prm is not None else None,
            "url": context.auth_server_url,
        }

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.preset is not None:
            return self.preset
        if self.login.client is None:
            return None
        return OAuthClientInformationFull.model_validate(self.login.client)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.login.client = client_info.model_dump(mode="json", exclude_none=True)
        if self.keep_registrations:
            self.vault.save(self.login)


def token_auth_method(supported: list[str] | None, *, secret: bool) -> AuthMethod:
    """How a client holding ``secret`` (or not) authenticates to an endpoint advertising ``supported`` methods.

    HTTP Basic is what every authorization server must accept from a client with a password (RFC 6749 §2.3.1,
    which calls the form fields NOT RECOMMENDED) and the default when the metadata names no methods (RFC 8414
    §2), so it is used unless the server lists ``client_secret_post`` without it.
    """
    if not secret:
        return "none"
    if supported and "client_secret_basic" not in supported and "client_secret_post" in supported:
        return "client_secret_post"
    return "client_secret_basic"


class _Provider(OAuthClientProvider):
    """The SDK's provider, told when a stored token expires (it keeps that only in memory), and authenticating a
    pre-registered confidential client the way the authorization server advertises.

    The SDK sends a client's secret as its record's ``token_endpoint_auth_method`` says; a registration response
    says it, but a client registered in advance has only the config, written before anyone read the server's
    metadata. So that record's method is chosen here, from the discovered metadata, before each token request.
    """

    def __init__(self, *args: Any, login: Login, preset: OAuthClientInformationFull | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._login = login
        self._preset = preset

    def _authenticate_as_advertised(self) -> None:
        preset = self._preset
        if preset is None or self.context.client_info is not preset:
            return
        metadata = self.context.oauth_metadata
        supported = metadata.token_endpoint_auth_methods_supported if metadata is not None else None
        preset.token_endpoint_auth_method = token_auth_method(supported, secret=bool(preset.client_secret))

    async def _exchange_token_authorization_code(self, auth_code: str, code_verifier: str) -> httpx2.Request:
        self._authenticate_as_advertised()
        return await super()._exchange_token_authorization_code(auth_code, code_verifier)

    async def _refresh_token(self) -> httpx2.Request:
        self._authenticate_as_advertised()
        return await super()._refresh_token()

    async def _initialize(self) -> None:
        """The SDK's setup, plus what the login record knows: the tokens' expiry, and the authorization server discovery
        found last time (a damaged record is ignored: discovery runs again on the next 401)."""
        await super()._initialize()
        if self.context.current_tokens is not None and self._login.expires_at is not None:
            self.context.token_expiry_time = self._login.expires_at
        found = self._login.auth_server
        if found and self.context.oauth_metadata is None:
            from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

            with contextlib.suppress(ValueError):  # damaged: discovery runs again on the next 401
                self.context.oauth_metadata = OAuthMetadata.model_validate(found["metadata"])
                if found.get("resource"):
                    self.context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                        found["resource"]
                    )
                self.context.auth_server_url = found.get("url")


class Browser:
    """The redirect and callback handlers of one sign-in."""

    def __init__(self, server: str, label: str, port: int, *, interactive: bool, open_browser: bool) -> None:
        self.server = server
        self.label = label
        self.port = port
        self.interactive = interactive
        self.open_browser = open_browser
        self.receiver: _Receiver | None = None
        self.storage: _Storage | None = None

    async def redirect(self, url: str) -> None:
        """Start a sign-in: listen for the redirect on 127.0.0.1, then open the browser at ``url`` (or print it,
        ``--no-browser``). A run that cannot open a browser raises ``LoginRequired`` with the command that signs in."""
        if not self.interactive:
            raise LoginRequired(
                f"{self.label} needs you to sign in (OAuth), and this run cannot open a browser.",
                title="Sign-in required",
                hint=f"Sign in once, then run this again: mcpcli auth login {shlex.quote(self.label)}",
            )
        if self.storage is not None:
            self.storage.signing_in = True
        self.receiver = _Receiver(self.port)
        self.receiver.start()
        shown = sanitize(url)
        if self.open_browser:
            _say(f"Opening your browser to sign in to {sanitize(self.label)}.\nIf it does not open, visit:\n  {shown}")
            import anyio

            opened = await anyio.to_thread.run_sync(open_url, url, abandon_on_cancel=True)
            if not opened:
                _say("No browser could be started; open the URL above yourself.")
        else:
            _say(f"To sign in to {sanitize(self.label)}, open this URL in a browser on this machine:\n  {shown}")

    async def callback(self) -> AuthorizationCodeResult:
        """The authorization code the browser brought back to the listener, waited for up to ``login_timeout()``
        seconds; the listener is closed however it ends. A timeout or a refusal by the authorization server is
        ``LoginFailed``."""
        import anyio

        receiver = self.receiver
        if receiver is None:  # the SDK always redirects first
            raise LoginFailed("The sign-in was not started.")
        if not receiver.done.is_set():
            _say(f"Waiting for the browser (up to {int(login_timeout())} s; Ctrl-C to stop)…")
        try:
            with anyio.fail_after(login_timeout()):
                while not receiver.done.is_set():
                    await anyio.sleep(0.05)
        except TimeoutError:
            raise LoginFailed(
                f"The browser did not come back within {int(login_timeout())} s.",
                title="Sign-in timed out",
                hint=f"Try again: mcpcli auth login {shlex.quote(self.label)} (or --no-browser to copy the URL)",
            ) from None
        finally:
            receiver.close()
        if receiver.error is not None:
            raise LoginFailed(
                f"The authorization server refused the sign-in: {sanitize(receiver.error)}.",
                title="Sign-in refused",
                hint=f"Try again: mcpcli auth login {shlex.quote(self.label)}",
            )
        assert receiver.result is not None
        return receiver.result


def login_timeout() -> float:
    try:
        return float(os.environ.get("MCPCLI_LOGIN_TIMEOUT", LOGIN_TIMEOUT))
    except ValueError:
        return LOGIN_TIMEOUT


def _say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def open_url(url: str) -> bool:
    """Open ``url`` in a browser: each ``$BROWSER`` entry in turn (as ``webbrowser`` reads it), else the default."""
    for choice in filter(None, os.environ.get("BROWSER", "").split(os.pathsep)):
        try:
            # An entry with %s is a command line; one without is a command given the URL (webbrowser's rules).
            argv = [part.replace("%s", url) for part in shlex.split(choice)] if "%s" in choice else [choice, url]
            background = argv[-1] == "&"
            if background:
                subprocess.Popen(argv[:-1], stdin=subprocess.DEVNULL, start_new_session=True)
                return True
            if subprocess.run(argv, stdin=subprocess.DEVNULL, check=False).returncode == 0:
                return True
        except (OSError, ValueError):
            continue
    if os.environ.get("BROWSER"):
        return False
    import webbrowser

    try:
        return webbrowser.open(url)
    except Exception:  # webbrowser raises various things on odd systems; the URL was printed anyway
        return False


# --- the loopback listener --------------------------------------------------------------------------------------------

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>mcpcli</title>
<style>body{{font-family:system-ui,sans-serif;max-width:32em;margin:4em auto;color:#222}}</style></head>
<body><h1>{title}</h1><p>{text}</p></body></html>"""


class _Receiver:
    """A one-shot HTTP listener on 127.0.0.1 for the authorization server's redirect."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.result: AuthorizationCodeResult | None = None
        self.error: str | None = None
        self.done = threading.Event()
        self._server: HTTPServer | None = None

    def start(self) -> None:
        """Listen on 127.0.0.1 at the port, in a daemon thread, until the first redirect to ``CALLBACK_PATH`` (then
        ``done``). A port in use is ``LoginFailed``. The redirect's query holds the code: nothing is logged."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                """The one redirect: its code (and state, issuer) or its error, kept for ``callback``, and a page
                telling the user to close the tab. Any other path, or a second redirect, gets 404."""
                parts = urlsplit(self.path)
                if parts.path != CALLBACK_PATH or receiver.done.is_set():
                    self._page(404, "Not found", "This is mcpcli's sign-in listener.")
                    return
                query = {k: v[0] for k, v in parse_qs(parts.query).items() if v}
                if "error" in query:
                    receiver.error = query.get("error_description") or query["error"]
                    self._page(400, "Sign-in failed", f"{receiver.error}. You can close this tab.")
                elif "code" in query:
                    receiver.result = AuthorizationCodeResult(
                        code=query["code"], state=query.get("state"), iss=query.get("iss")
                    )
                    self._page(200, "Signed in", "mcpcli has what it needs. You can close this tab.")
                else:
                    self._page(400, "Sign-in failed", "The redirect carried no authorization code.")
                    receiver.error = "the redirect carried no authorization code"
                receiver.done.set()

            def _page(self, status: int, title: str, text: str) -> None:
                body = PAGE.format(title=html.escape(title), text=html.escape(text)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # the query holds the code: log nothing
                pass

        try:
            self._server = HTTPServer(("127.0.0.1", self.port), Handler)
        except OSError as exc:
            raise LoginFailed(
                f"Cannot listen on 127.0.0.1:{self.port} for the sign-in: {exc.strerror}.",
                hint="Close what uses that port, or run mcpcli auth logout SERVER and sign in again.",
            ) from None
        threading.Thread(target=self._server.serve_forever, name="mcpcli-oauth-callback", daemon=True).start()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- building the provider for one server -----------------------------------------------------------------------------


def oauth_provider(
    server: str,
    label: str,
    vault: TokenVault,
    *,
    interactive: bool,
    open_browser: bool = True,
    client_id: str | None = None,
    client_secret: str | None = None,
    scope: str | None = None,
    redirect_port: int | None = None,
    client_metadata_url: str | None = None,
    on_token: Callable[[str], None] | None = None,
    fresh: bool = False,
) -> tuple[httpx2.Auth, Login]:
    """The ``httpx2.Auth`` that signs requests to ``server`` in, and the login record it reads and updates.

    ``client_metadata_url``: the Client ID Metadata Document to sign in with where the authorization server
    advertises support for one (the SDK decides, after discovery); elsewhere mcpcli registers dynamically.
    """
    login = vault.load(server)
    port = redirect_port or login.redirect_port
    if port is None or (redirect_port is None and interactive and not port_is_free(port)):
        # A dynamically registered client is bound to its redirect URI: a new port means a new registration.
        port = free_port()
        if redirect_port is None:
            login.client = None
    login.redirect_port = port
    redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
    preset = None
    if client_id is not None:
        preset = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=client_secret,
            redirect_uris=[redirect_uri],  # type: ignore[list-item]
            # Until discovery says otherwise (``_Provider._authenticate_as_advertised``): RFC 8414's default.
            token_endpoint_auth_method=token_auth_method(None, secret=bool(client_secret)),
            grant_types=["authorization_code", "refresh_token"],
            scope=scope,
        )
    metadata = OAuthClientMetadata(
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        client_name="mcpcli",
        client_uri=None,
        software_id="mcpcli",
        software_version=__version__,
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=scope,
    )
    storage = _Storage(vault, login, preset, fresh=fresh)
    storage.keep_registrations = interactive
    storage.on_token = on_token
    browser = Browser(server, label, port, interactive=interactive, open_browser=open_browser)
    browser.storage = storage
    provider = _Provider(
        server,
        metadata,
        storage,
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
        client_metadata_url=client_metadata_url,
        login=login,
        preset=preset,
    )
    storage.context = provider.context
    if on_token is not None and login.signed_in and login.tokens and not fresh:
        on_token(str(login.tokens["access_token"]))
    return provider, login


def sign_in_error(label: str, exc: BaseException) -> McpcliError | None:
    """The sign-in failure somewhere inside ``exc`` (a transport's exception group), as mcpcli's error; else None."""
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    stack, seen = [exc], set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, (LoginRequired, LoginFailed)):
            return current
        if isinstance(current, (OAuthFlowError, OAuthRegistrationError, OAuthTokenError)):
            return LoginFailed(
                f"Signing in to {label} failed: {sanitize(str(current) or type(current).__name__)}.",
                title="Sign-in failed",
                hint=f"Try again: mcpcli auth login {shlex.quote(label)} (details in the log: mcpcli paths)",
            )
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        stack.extend(linked for linked in (current.__cause__, current.__context__) if linked is not None)
    return None
