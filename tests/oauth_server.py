"""An OAuth-protected MCP server and its authorization server, for the tests — two real HTTP servers on 127.0.0.1.

Run: ``python tests/oauth_server.py --as-port A --mcp-port M [--token-ttl S] [--user NAME] [--client-id ID
--client-secret SECRET --redirect URI] [--no-registration]``.

- The authorization server (``http://127.0.0.1:A``) is built from the SDK's own server-side helpers
  (``create_auth_routes``: metadata, ``/authorize``, ``/token``, ``/register``, ``/revoke``) over an in-memory
  provider written here. ``/authorize`` sends the browser to a consent page (``/consent``) that signs the user
  in at once and redirects to the client's loopback ``redirect_uri`` with ``code``, ``state`` and ``iss``.
  Access tokens live ``--token-ttl`` seconds; refresh tokens rotate.
- The MCP server (``http://127.0.0.1:M/mcp``) accepts only the authorization server's tokens (the SDK's bearer
  middleware answers 401 with the protected-resource metadata URL). Tools: ``whoami`` (the principal the call
  carried) and ``provision`` (asks one question: the region; its request_state is bound to the principal by
  the SDK).
- ``--static-token T``: also accept ``T`` as an API token (principal ``robot``), for ``--bearer`` tests.
- Test hooks on the authorization server: ``GET /_test/events`` (what happened: registrations, authorizations,
  token grants, refreshes, revocations), ``POST /_test/expire`` (every access token stops working now),
  ``POST /_test/user?name=bob`` (the next sign-in is bob's).
"""

from __future__ import annotations

import argparse
import base64
import secrets
import time
from typing import Any
from urllib.parse import unquote

import anyio
import mcp_types as t
import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route


class Provider:
    """An in-memory authorization server: clients, codes, tokens, and a log of what happened."""

    def __init__(self, issuer: str, user: str, token_ttl: int) -> None:
        self.issuer = issuer
        self.user = user
        self.token_ttl = token_ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.events: list[dict[str, Any]] = []

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.events.append(
            {"event": "register", "client_id": client_info.client_id, "redirect_uris": _uris(client_info)}
        )

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        ticket = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.pending[ticket] = (client.client_id, params)
        self.events.append({"event": "authorize", "client_id": client.client_id, "scopes": params.scopes})
        return f"{self.issuer}/consent?ticket={ticket}"

    def consent(self, ticket: str) -> str:
        client_id, params = self.pending.pop(ticket)
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=self.user,
        )
        # RFC 9207: ``iss`` exactly as the metadata spells the issuer.
        iss = str(AnyHttpUrl(self.issuer))
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=iss)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[code.code]
        self.events.append({"event": "token", "grant": "authorization_code", "client_id": code.client_id})
        return self._issue(code.client_id, code.scopes, code.subject, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, token: str) -> RefreshToken | None:
        found = self.refresh.get(token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]  # rotated
        self.events.append({"event": "token", "grant": "refresh_token", "client_id": refresh_token.client_id})
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.subject, None)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.events.append({"event": "revoke", "client_id": token.client_id})
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    async def exchange_identity_assertion(self, *args: Any, **kwargs: Any) -> OAuthToken:
        raise TokenError(error="unsupported_grant_type")

    def _issue(self, client_id: str, scopes: list[str], subject: str | None, resource: str | None) -> OAuthToken:
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        expires = int(time.time()) + self.token_ttl
        claims = {"iss": self.issuer}
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, subject=subject, claims=claims
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, subject=subject)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.token_ttl,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )


def _secret(request: Request, form: Any) -> str | None:
    """The client secret a request carries: HTTP Basic (RFC 6749 §2.3.1, both parts form-encoded) or the form."""
    header = request.headers.get("authorization", "")
    if header.startswith("Basic "):
        _id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        return unquote(secret)
    value = form.get("client_secret")
    return None if value is None else str(value)


def _uris(client: OAuthClientInformationFull) -> list[str]:
    return [str(u) for u in client.redirect_uris or []]


def authorization_server(provider: Provider) -> Starlette:
    async def consent(request: Request) -> Response:
        ticket = request.query_params.get("ticket", "")
        if ticket not in provider.pending:
            return Response("unknown ticket", status_code=400)
        provider.events.append({"event": "consent", "user": provider.user})
        return RedirectResponse(provider.consent(ticket), status_code=302)

    async def events(request: Request) -> Response:
        return JSONResponse(provider.events)

    async def user(request: Request) -> Response:
        provider.user = request.query_params["name"]
        return JSONResponse({"user": provider.user})

    async def expire(request: Request) -> Response:
        for token in provider.access.values():
            token.expires_at = 0
        return JSONResponse({"expired": len(provider.access)})

    routes = create_auth_routes(
        provider=provider,  # type: ignore[arg-type]
        issuer_url=AnyHttpUrl(provider.issuer),
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]
        ),
        revocation_options=RevocationOptions(enabled=True),  # advertised; served by ``revoke`` below
    )

    async def revoke(request: Request) -> Response:
        # RFC 7009 as a public client sends it (client_id, no secret) or a confidential one (its secret in the form
        # or as HTTP Basic, as it was registered); the SDK's handler insists on the form field.
        form = await request.form()
        client = provider.clients.get(str(form.get("client_id")))
        if client is None or (client.client_secret and _secret(request, form) != client.client_secret):
            return JSONResponse({"error": "unauthorized_client"}, status_code=401)
        token = str(form.get("token"))
        found = provider.access.get(token) or provider.refresh.get(token)
        if found is not None and found.client_id == client.client_id:
            await provider.revoke_token(found)
        return Response(status_code=200)

    routes = [Route("/revoke", revoke, methods=["POST"]), *routes]
    routes += [
        Route("/consent", consent),
        Route("/_test/events", events),
        Route("/_test/user", user, methods=["POST"]),
        Route("/_test/expire", expire, methods=["POST"]),
    ]
    return Starlette(routes=routes)


class Verifier:
    """The MCP server's token check: asks the (same-process) authorization server."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    async def verify_token(self, token: str) -> AccessToken | None:
        return await self.provider.load_access_token(token)


def mcp_server(provider: Provider, url: str) -> MCPServer:
    server = MCPServer(
        "oauth-demo",
        token_verifier=Verifier(provider),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(provider.issuer),
            resource_server_url=AnyHttpUrl(url),
            validate_token_resource=False,
            required_scopes=["mcp"],
        ),
    )

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Who the call was made as."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        return f"{token.subject} via {token.client_id}" if token else "nobody"

    @server.tool()
    async def provision(name: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Asks the region, then provisions."""
        if ctx.input_responses and "region" in ctx.input_responses:
            answer = ctx.input_responses["region"]
            region = getattr(answer, "content", None) or {}
            return t.CallToolResult(content=[t.TextContent(text=f"Provisioned {name!r} in {region.get('region')}.")])
        params = t.ElicitRequestFormParams(
            message="Which region?",
            requested_schema={"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]},
        )
        return t.InputRequiredResult(input_requests={"region": t.ElicitRequest(params=params)}, request_state="r1")

    return server


async def serve(args: argparse.Namespace) -> None:
    issuer = f"http://127.0.0.1:{args.as_port}"
    url = f"http://127.0.0.1:{args.mcp_port}/mcp"
    provider = Provider(issuer, args.user, args.token_ttl)
    if args.client_id:
        provider.clients[args.client_id] = OAuthClientInformationFull(
            client_id=args.client_id,
            client_secret=args.client_secret,
            redirect_uris=[args.redirect],  # type: ignore[list-item]
            # HTTP Basic: the method RFC 6749 says every server accepts; the metadata advertises it (and post).
            token_endpoint_auth_method="client_secret_basic" if args.client_secret else "none",
            grant_types=["authorization_code", "refresh_token"],
            scope="mcp",
        )
    if args.static_token:
        provider.access[args.static_token] = AccessToken(
            token=args.static_token, client_id="static", scopes=["mcp"], subject="robot"
        )
    servers = [
        uvicorn.Server(uvicorn.Config(authorization_server(provider), "127.0.0.1", args.as_port, log_level="warning")),
        uvicorn.Server(
            uvicorn.Config(
                mcp_server(provider, url).streamable_http_app(), "127.0.0.1", args.mcp_port, log_level="warning"
            )
        ),
    ]
    async with anyio.create_task_group() as tg:
        for server in servers:
            tg.start_soon(server.serve)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--as-port", type=int, required=True)
    parser.add_argument("--mcp-port", type=int, required=True)
    parser.add_argument("--token-ttl", type=int, default=3600)
    parser.add_argument("--user", default="alice")
    parser.add_argument("--client-id")
    parser.add_argument("--client-secret")
    parser.add_argument("--redirect")
    parser.add_argument("--static-token")
    anyio.run(serve, parser.parse_args())


if __name__ == "__main__":
    main()
