"""``mcpcli worker status|start|stop|ps|restart``: the background worker that makes server commands start warm."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated

import typer

from mcpcli.cli.app import app
from mcpcli.cli.options import Json

worker_app = typer.Typer(
    help=(
        "The background worker: keeps mcpcli and the SDK loaded so server commands start warm. It starts by itself"
        " on first use (not when CI is set) and exits when idle; --no-worker or MCPCLI_WORKER=0 runs without it."
    ),
    no_args_is_help=True,
)
app.add_typer(worker_app, name="worker")


def _path() -> object:
    from mcpcli.wire import socket_path, state_dir

    return socket_path(state_dir())


def _say(text: str) -> None:
    sys.stderr.write(text + "\n")


@worker_app.command("status")
def status(json_out: Json = False) -> None:
    """Whether the worker runs: pid, version, uptime, commands served, memory, its socket; its HTTP relay (pid,
    upstream connections kept, requests served)."""
    from mcpcli.warm import ask

    path = _path()
    reply = ask(path, "status")  # type: ignore[arg-type]
    relay = _relay(reply)
    if reply is not None:
        reply["relay"] = relay
    if json_out:
        sys.stdout.write(json.dumps({"running": reply is not None, **(reply or {"socket": str(path)})}) + "\n")
        raise typer.Exit(0)
    if reply is None:
        _say(f"No worker is running (socket {path}). It starts with the next server command, or: mcpcli worker start")
        raise typer.Exit(0)
    uptime = time.time() - float(reply.get("started", time.time()))  # type: ignore[arg-type]
    sys.stdout.write(
        f"worker pid {reply['pid']} · mcpcli {reply['version']} · up {uptime:.0f} s · served {reply['served']}"
        f" · running {reply['running']} · idle timeout {reply['idle_timeout']:g} s · rss {reply['rss_kb']} KiB\n"
        f"socket {reply['socket']}\n"
    )
    if relay is None:
        sys.stdout.write("HTTP relay not running (it starts with the next server command)\n")
    else:
        sys.stdout.write(
            f"HTTP relay pid {relay['pid']} · upstream connections {relay.get('connections', '?')}"
            f" · requests served {relay.get('served', '?')} · in flight {relay.get('in_flight', '?')}\n"
        )


def _relay(reply: dict[str, object] | None) -> dict[str, object] | None:
    """The worker's HTTP relay as the worker names it, with the relay's own counters (it answers for itself: the
    worker's loop never waits on it)."""
    named = (reply or {}).get("relay")
    if not isinstance(named, dict):
        return None
    from mcpcli.net.relayed import relay_status

    return {**named, **(relay_status(str(named.get("socket"))) or {})}


@worker_app.command("start")
def start() -> None:
    """Start the worker now (it would start by itself on the next server command)."""
    from mcpcli.warm import ask, start
    from mcpcli.wire import state_dir

    path = _path()
    if ask(path, "status") is not None:  # type: ignore[arg-type]
        _say("The worker is already running.")
        return
    start(state_dir())
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if (reply := ask(path, "status")) is not None:  # type: ignore[arg-type]
            _say(f"Started the worker (pid {reply['pid']}).")
            return
        time.sleep(0.05)
    _say("The worker did not come up; see logs/worker.log (mcpcli paths).")
    raise typer.Exit(4)


@worker_app.command("stop")
def stop() -> None:
    """Stop the worker (commands it is running finish first; kept-alive servers and the HTTP relay stop with it)."""
    from mcpcli.warm import stop as stop_worker

    _say("Stopped the worker." if stop_worker(_path()) else "No worker was running.")  # type: ignore[arg-type]


@worker_app.command("ps")
def ps(json_out: Json = False) -> None:
    """The stdio servers the worker keeps alive: target, pid, uptime, calls."""
    from mcpcli.warm import ask

    reply = ask(_path(), "ps")  # type: ignore[arg-type]
    servers = list((reply or {}).get("servers") or [])  # type: ignore[call-overload]
    if json_out:
        sys.stdout.write(json.dumps(servers) + "\n")
        return
    if not servers:
        _say("No servers are kept alive." if reply is not None else "No worker is running.")
        return
    for server in servers:
        sys.stdout.write(
            f"{server['name']}\tpid {server['pid']}\tup {server['uptime']:.0f} s\tcalls {server['calls']}\n"
        )


@worker_app.command("restart")
def restart(
    name: Annotated[str | None, typer.Argument(help="A kept-alive server to restart; without it, the worker.")] = None,
) -> None:
    """Restart one kept-alive server (by name), or the whole worker."""
    from mcpcli.warm import ask
    from mcpcli.warm import start as start_worker
    from mcpcli.warm import stop as stop_worker
    from mcpcli.wire import state_dir

    path = _path()
    if name is None:
        stop_worker(path)  # type: ignore[arg-type]
        start_worker(state_dir())
        _say("Restarted the worker.")
        return
    reply = ask(path, f"restart:{name}")  # type: ignore[arg-type]
    if not reply or not reply.get("ok"):
        _say(f"No kept-alive server named {name!r} (see: mcpcli worker ps).")
        raise typer.Exit(6)
    _say(f"Restarted {name}.")
