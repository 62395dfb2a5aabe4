"""``mcpcli servers ...`` (named servers from every config), ``mcpcli paths``, and the hidden refresh of the
completion cache."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from mcpcli.cli.app import (
    app,
    local_command,
    run_guarded,
)
from mcpcli.cli.helpfmt import Typer
from mcpcli.cli.options import (
    QUIET,
    SESSION_OPTIONS,
    Json,
    shared,
)
from mcpcli.commands.runtime import Runtime

# --- servers ---------------------------------------------------------------------------------------------------------

servers_app = Typer(
    help=(
        "Named servers (-s NAME): list them, add or remove your own, import those other MCP clients know.\n\n"
        "Looked up in config.toml's mcpServers, then servers.json (managed here), then ./.mcp.json.\n\n"
        "Example: mcpcli servers import --from vscode --dry-run"
    ),
    no_args_is_help=True,
)
app.add_typer(servers_app, name="servers")
Force = Annotated[bool, typer.Option("--force", help="Replace an entry of the same name in servers.json.")]


@servers_app.command("list")
@shared(SESSION_OPTIONS)
def servers_list(ctx: typer.Context, *, shared: dict[str, Any]) -> None:
    """List the named servers: kind, target, where each is defined, and which one shadows which.

    Connects to nothing; env and header values are not shown, only their names.

    Example: mcpcli servers list --json
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.servers import list_servers

        return list_servers(rt)

    local_command(ctx, shared, body)


@servers_app.command("import")
@shared(QUIET)
def servers_import(
    ctx: typer.Context,
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="claude|vscode|cursor|FILE",
            help="Where from (default: every known place).",
            show_default=False,
        ),
    ] = None,
    name: Annotated[
        list[str] | None,
        typer.Option("--name", metavar="NAME", help="Import only this server (repeatable).", show_default=False),
    ] = None,
    force: Force = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be imported; write nothing.")] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Copy the servers Claude Desktop/Code, VS Code or Cursor know into servers.json.

    Entries are copied as written: ${env:NAME} references stay references, expanded when mcpcli connects.

    Example: mcpcli servers import --from vscode --dry-run
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.servers import import_servers

        return import_servers(rt, source, list(name or []), force=force, dry_run=dry_run)

    local_command(ctx, shared, body)


@servers_app.command("add")
@shared(QUIET)
def servers_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The name to use with -s.", metavar="NAME")],
    target: Annotated[
        list[str], typer.Argument(help="A URL, a quoted command line, or -- command args...", metavar="TARGET")
    ],
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env", "-e", metavar="K=V", help="Environment for a stdio server (repeatable).", show_default=False
        ),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option("--header", "-H", metavar="'NAME: VALUE'", help="HTTP header (repeatable).", show_default=False),
    ] = None,
    cwd: Annotated[
        str | None,
        typer.Option("--cwd", metavar="DIR", help="Working directory of a stdio server.", show_default=False),
    ] = None,
    protocol: Annotated[
        str | None,
        typer.Option(
            "--protocol",
            metavar="VERSION",
            help="auto | legacy | 2026-07-28: how to talk to it (legacy: a server that still calls back).",
            show_default=False,
        ),
    ] = None,
    force: Force = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Add a server to servers.json.

    Quote references so the shell leaves them for mcpcli to expand at connect time.

    Example: mcpcli servers add files -e ROOT='${env:HOME}' -- npx -y @modelcontextprotocol/server-filesystem /tmp
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.servers import add_server

        return add_server(
            rt, name, target, env=list(env or []), headers=list(header or []), cwd=cwd, force=force, protocol=protocol
        )

    local_command(ctx, shared, body)


@servers_app.command("remove")
@shared(QUIET)
def servers_remove(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A server of servers.json.", metavar="NAME")],
    *,
    shared: dict[str, Any],
) -> None:
    """Remove a server from servers.json (those of config.toml and ./.mcp.json are edited there).

    Example: mcpcli servers remove files
    """

    def body(rt: Runtime) -> int:
        from mcpcli.commands.servers import remove_server

        return remove_server(rt, name)

    local_command(ctx, shared, body)


@app.command()
def paths(ctx: typer.Context, json: Json = False) -> None:
    """Print where the config, the named servers, the session store, logs, tokens and caches live.

    Example: mcpcli paths --json
    """

    def body() -> int:
        """Where each place lives (the project's servers file only when there is one), as JSON or as aligned lines on
        stdout."""
        from mcpcli.settings.config import Paths
        from mcpcli.settings.servers import project_file

        p = Paths.from_env()
        project = project_file()
        where = {
            "config": str(p.config_file),
            "servers": str(p.servers_file),
            **({"project": str(project)} if project.is_file() else {}),
            "state": str(p.state_dir),
            "store": str(p.store_file),
            "logs": str(p.log_dir),
            "tokens": str(p.token_dir),
            "keys": str(p.store_key_file.parent),
            "cache": str(p.cache_dir),
        }
        if json:
            import json as j

            sys.stdout.write(j.dumps(where, indent=2) + "\n")
        else:
            sys.stdout.write("".join(f"{k:<8} {v}\n" for k, v in where.items()))
        return 0

    run_guarded(body, ctx.obj.debug, json=json or ctx.obj.json)


@app.command("_refresh-cache", hidden=True)
def refresh_cache(target: Annotated[str | None, typer.Argument(metavar="TARGET")] = None) -> None:
    """Rewrite shell completion's cached tool and prompt lists of TARGET (started by completion, prints nothing)."""
    from mcpcli.commands.cache import refresh

    raise typer.Exit(refresh(target))
