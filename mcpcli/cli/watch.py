"""``mcpcli watch``: options → ``commands.watch`` under the stop signals → exit code."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcpcli.cli.app import app, global_values, run_guarded
from mcpcli.cli.options import CONNECTION, Json, shared
from mcpcli.commands.runtime import Globals, Runtime, run_async, until_stopped


@app.command()
@shared(CONNECTION, {"json": (Json, False)})
def watch(
    ctx: typer.Context,
    uri: Annotated[
        list[str] | None,
        typer.Argument(help="Resource URIs to follow (a template's URI filled in).", metavar="URI", show_default=False),
    ] = None,
    tools: Annotated[bool, typer.Option("--tools", help="Say when the tool list changes.")] = False,
    prompts: Annotated[bool, typer.Option("--prompts", help="Say when the prompt list changes.")] = False,
    resources: Annotated[bool, typer.Option("--resources", help="Say when the resource list changes.")] = False,
    read: Annotated[
        bool,
        typer.Option(
            "--read",
            help="Read an updated resource again and show it; list a changed list again and show what came and went.",
        ),
    ] = False,
    count: Annotated[
        int | None,
        typer.Option(
            "--count", min=1, metavar="N", help="Stop (exit 0) after N changes (a coalesced line counts each)."
        ),
    ] = None,
    seconds: Annotated[
        float | None, typer.Option("--for", min=0.0, metavar="SECONDS", help="Stop (exit 0) after SECONDS.")
    ] = None,
    no_reconnect: Annotated[
        bool,
        typer.Option("--no-reconnect", help="When the stream ends or breaks, exit 4 instead of listening again."),
    ] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Show what the server changes, as it happens: one line per event (time, kind, URI), or --json lines.

    Follows the URIs given and, with --tools/--prompts/--resources, those lists (nothing named: every list).
    2026-07-28 servers are asked with subscriptions/listen, older ones with resources/subscribe and their
    list-changed notifications. What the server does not honour is said on stderr (nothing at all: exit 4).
    A stream that ends or breaks is listened to again (1 s doubling to 30 s); Ctrl-C stops (exit 130).

    \b
    Examples:
      mcpcli watch note://build-status --read
      mcpcli watch --tools --json --count 1      # wait for the tool list to change
      mcpcli watch file:///etc/app.toml --for 60 -s "python server.py"
    """
    g: Globals = ctx.obj.merged(**global_values(shared))
    json_out = bool(shared["json"]) or g.json

    def body() -> int:
        """The watch, until its count, its time or a signal ends it (``until_stopped``); one JSON line per change with
        ``--json``."""
        from mcpcli.commands.watch import WatchOptions
        from mcpcli.commands.watch import watch as watch_body

        rt = Runtime(g, json_out=json_out)
        rt.json_lines = True
        opts = WatchOptions(
            uris=tuple(uri or ()),
            tools=tools,
            prompts=prompts,
            resources=resources,
            read=read,
            count=count,
            seconds=seconds,
            reconnect=not no_reconnect,
            json=json_out,
        )

        return until_stopped(rt, lambda: run_async(lambda: watch_body(rt, opts)) or 0)

    run_guarded(body, g.debug, json=json_out, lines=True)
