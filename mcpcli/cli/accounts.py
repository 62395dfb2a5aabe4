"""Credentials: LLM providers and their API keys (``llm``, ``keys``), and OAuth sign-in to servers (``auth``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from mcpcli.cli.app import (
    app,
    keys_app,
    llm_app,
    local_command,
)
from mcpcli.cli.helpfmt import Typer
from mcpcli.cli.options import (
    SESSION_OPTIONS,
    Debug,
    Json,
    Server,
    Verbose,
    shared,
)
from mcpcli.commands.runtime import Runtime, run_async, until_stopped

# --- LLM providers and their keys ------------------------------------------------------------------------------------

ProviderName = Annotated[str, typer.Argument(help="The provider: a [providers.NAME] of config.toml.", metavar="NAME")]


@llm_app.command("list")
@shared(SESSION_OPTIONS)
def llm_list(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """List providers, models and where keys come from.

    Never shows a key: only whether it is stored (mcpcli keys set) or read from an environment variable.

    Example: mcpcli llm list --json
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.llm import list_providers

        return list_providers(rt)

    local_command(ctx, shared, body)


@llm_app.command("test")
@shared(SESSION_OPTIONS)
def llm_test(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(help="The provider (default: [sampling] provider).", metavar="NAME")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", metavar="MODEL", help="An allowed model (default: the first).")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, metavar="SECONDS", help="Seconds each try may take.")
    ] = 60.0,
    *,
    shared: dict[str, Any],
) -> None:
    """Send one tiny request; print the model and its reply.

    Example: mcpcli llm test local --model llama3.2
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.llm import test_provider

        return run_async(lambda: test_provider(rt, name, model, timeout)) or 0

    local_command(ctx, shared, body)


@keys_app.command("set")
@shared({"debug": (Debug, None)})
def keys_set(ctx: typer.Context, name: ProviderName, *, shared: dict[str, Any]) -> None:
    """Store a provider's API key (hidden prompt, or stdin).

    The key goes to <config dir>/keys/llm-NAME.key (0600) and is sent only to that provider's base_url.

    Example: mcpcli keys set claude < ~/anthropic.key
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.llm import set_key

        return set_key(rt, name)

    local_command(ctx, shared, body)


@keys_app.command("rm")
@shared({"debug": (Debug, None)})
def keys_rm(ctx: typer.Context, name: ProviderName, *, shared: dict[str, Any]) -> None:
    """Delete a provider's stored API key.

    Example: mcpcli keys rm claude
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.llm import rm_key

        return rm_key(rt, name)

    local_command(ctx, shared, body)


# --- OAuth sign-in ---------------------------------------------------------------------------------------------------

auth_app = Typer(
    help=(
        "Sign in to OAuth-protected HTTP servers once; mcpcli refreshes the tokens and uses them for calls "
        "and resumes.\n\n"
        "A call to a server that answers 401 signs in by itself when you are at a terminal.\n\n"
        "Example: mcpcli auth login https://mcp.example.com/mcp"
    ),
    no_args_is_help=True,
)
app.add_typer(auth_app, name="auth")
AuthServer = Annotated[
    str | None,
    typer.Argument(help="URL or config name (default: -s / MCPCLI_SERVER / default_server).", metavar="SERVER"),
]
AUTH_OPTIONS: dict[str, tuple[Any, Any]] = {
    "server": (Server, None),
    "debug": (Debug, None),
    "verbose": (Verbose, None),
}


def _auth_command(
    ctx: typer.Context, given: str | None, values: dict[str, Any], body: Callable[[Runtime], int]
) -> None:
    local_command(ctx, {**values, "server": given or values.get("server")}, body)


@auth_app.command("login")
@shared(AUTH_OPTIONS)
def auth_login(
    ctx: typer.Context,
    given: AuthServer = None,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the sign-in URL instead of opening a browser.")
    ] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Sign in to a server with OAuth (in your browser) and keep the tokens (0600 file, or the OS keyring).

    The browser comes back to a one-shot listener on 127.0.0.1, so sign in on this machine.
    $BROWSER is honoured as Python's webbrowser reads it.

    Example: mcpcli auth login https://mcp.example.com/mcp
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.auth import login

        # SIGTERM or SIGHUP while it waits for the browser: one line and 143/129, as Ctrl-C says "Interrupted".
        return until_stopped(rt, lambda: run_async(lambda: login(rt, open_browser=not no_browser)) or 0)

    _auth_command(ctx, given, shared, body)


@auth_app.command("status")
@shared({**AUTH_OPTIONS, "json": (Json, False)})
def auth_status(ctx: typer.Context, given: AuthServer = None, *, shared: dict[str, Any]) -> None:
    """List stored OAuth logins: state, expiry, scope, client — never the tokens.

    Example: mcpcli auth status --json
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.auth import status

        return status(rt, server_given=bool(given or shared.get("server")))

    _auth_command(ctx, given, shared, body)


@auth_app.command("logout")
@shared(AUTH_OPTIONS)
def auth_logout(ctx: typer.Context, given: AuthServer = None, *, shared: dict[str, Any]) -> None:
    """Forget a server's tokens and client registration on this machine.

    Example: mcpcli auth logout https://mcp.example.com/mcp
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.auth import logout

        return until_stopped(rt, lambda: run_async(lambda: logout(rt)) or 0)

    _auth_command(ctx, given, shared, body)
